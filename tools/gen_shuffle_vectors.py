#!/usr/bin/env python3
"""Write shared_spec/vectors/shuffle.json (shuffle profiles and the randomiser) from the host
reference (zeal.mechanism.shuffle_profile, zeal.mechanism.shuffle).

Cases:
- kind "profile": "file" is the exact file text. Valid ones give the canonical bytes, the
  fingerprint, bits (one message = one wire report) and gamma; invalid ones the reason code
  of the shuffle check list (shared_spec/shuffle.md) and host_only (true: the device need not
  refuse it; only the "privacy" check is the host's).
- kind "randomise": "profile" names a valid profile case; its inputs (reading tuples, each a
  list of float64 bit patterns as 16 hex digits, one per coordinate; a list of the wrong
  length makes every coordinate invalid) run in order through one generator ("key", 32 bytes
  hex; shared_spec/generator.md) or an explicit word list ("words"); expected per input: the
  message (the integer wire report), its (coordinate, level) pairs and the words consumed.
Hand-derived cases are checked against the reference while generating: if it disagrees,
nothing is written.
Usage: python tools/gen_shuffle_vectors.py [--check]   (--check: exit 1 if the file is stale)
"""
import argparse
import hashlib
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal.errors import ProfileError  # noqa: E402
from zeal.mechanism import pfile  # noqa: E402
from zeal.mechanism import shuffle as S  # noqa: E402
from zeal.mechanism import shuffle_profile as SP  # noqa: E402
from zeal.mechanism.floatbits import float64_to_bits  # noqa: E402
from zeal.mechanism.words import CounterWords, ListWords, Recorder  # noqa: E402

OUT = os.path.join(ROOT, "shared_spec", "vectors", "shuffle.json")
VERSION = 1
W = 1 << 64
NAN = "7ff8000000000000"
POS_INF = "7ff0000000000000"
NEG_INF = "fff0000000000000"


def key_for(label: str) -> bytes:
    return hashlib.sha256(b"zeal-vector-key:" + label.encode()).digest()


def f64(x: float) -> str:
    return "%016x" % float64_to_bits(x)


def unf64(text: str) -> float:
    import struct
    return struct.unpack("<d", struct.pack("<Q", int(text, 16)))[0]


def file_text(doc) -> str:
    return json.dumps(doc, sort_keys=True, indent=1) + "\n"


def rehashed(doc):
    """doc with the fingerprint of its own canonical bytes (a tampered file that passes the
    fingerprint check, so that the intended later check fires)."""
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    return dict(doc, fingerprint=hashlib.sha256(pfile.canonical_json(core)).hexdigest())


def verdict(text):
    """(result, reason, profile or None) of the host's loader."""
    try:
        return "valid", None, SP.loads(text)
    except ProfileError as exc:
        return "invalid", getattr(exc, "reason", None), None


# ---- profiles -------------------------------------------------------------------------------
AARHUS = [(0.0, 1000.0), (0.0, 100.0), (-20.0, 40.0)]  # light (lx), humidity (%), temp (C)


def profile_set() -> dict:
    out = {}
    out["s-aarhus"] = SP.build_from(epsilon="0.9", delta="1e-6", n=100000, d=3, k=3, t=1,
                                    ranges=AARHUS)
    out["s-d1-k1"] = SP.build_from(epsilon="0.5", delta="1e-5", n=20000, d=1, k=1, t=1)
    out["s-d10-t2"] = SP.build_from(epsilon="0.5", delta="1e-6", n=10 ** 8, d=10, k=3, t=2,
                                    ranges=[(-1.0 * c, 2.0 ** c) for c in range(10)])
    out["s-d64-k15"] = SP.build_from(epsilon="0.99", delta="1e-7", n=10 ** 9, d=64, k=15,
                                     t=1, ranges=[(c - 32.0, c + 0.5) for c in range(64)])
    out["s-d64-t5"] = SP.build_from(epsilon="0.75", delta="1e-6", n=10 ** 12, d=64, k=15,
                                    t=5)
    out["s-eps2"] = SP.build_from(epsilon="2", delta="1e-6", n=10 ** 6, d=5, k=2, t=1,
                                  ranges=[(0.0, 3.3)] * 5)
    out["s-hand"] = SP.build_from(epsilon="0.9", delta="1e-6", n=100000, d=3, k=3, t=1,
                                  ranges=[(0.0, 3.0)] * 3)
    return out


def profile_cases(profiles) -> list:
    cases = []
    for pid, prof in profiles.items():
        cases.append({"id": pid, "kind": "profile", "comment": "valid shuffle profile (%s)"
                      % prof.params.regime, "result": "valid", "file": prof.to_json(),
                      "canonical": prof.canonical_bytes().decode(),
                      "fingerprint": prof.fingerprint, "bits": prof.bits,
                      "gamma": "%d/%d" % (prof.gamma_num, prof.gamma_den)})
    base = json.loads(profiles["s-aarhus"].to_json())
    rh = rehashed

    def add(cid, comment, expect, text, host_only=False):
        result, reason, _ = verdict(text)
        want = ("valid", None) if expect == "valid" else ("invalid", expect)
        if (result, reason) != want:
            raise SystemExit("gen_shuffle_vectors: %s: the reference says %s/%s, expected %s"
                             % (cid, result, reason, expect))
        case = {"id": cid, "kind": "profile", "comment": comment, "result": result,
                "file": text if isinstance(text, str) else text.decode("latin-1")}
        if result == "invalid":
            case["reason"] = reason
            case["host_only"] = host_only
        cases.append(case)

    def bad(cid, comment, reason, doc, host_only=False):
        add(cid, comment, reason, file_text(doc), host_only)

    g2 = rh(dict(base, gamma_num=2 * base["gamma_num"], gamma_den=2 * base["gamma_den"]))
    add("s-unreduced-gamma", "gamma_num/gamma_den not in lowest terms (2g/2d): valid, the "
        "value is what counts (BERNOULLI(2g, 2d) = BERNOULLI(g, d) word for word)", "valid",
        file_text(g2))
    unreduced = SP.loads(file_text(g2))     # a valid case carries what every valid one does
    cases[-1].update(canonical=unreduced.canonical_bytes().decode(),
                     fingerprint=unreduced.fingerprint, bits=unreduced.bits)
    add("s-size", "a valid file padded with spaces to MAX_SHUFFLE_FILE + 1 bytes", "size",
        file_text(base)[:-1] + " " * (SP.MAX_SHUFFLE_FILE - len(file_text(base)) + 1) + "\n")
    add("s-json-trailing-comma", "a trailing comma", "json",
        file_text(base).replace('"t": 1\n}', '"t": 1,\n}'))
    add("s-json-escape", "a backslash escape in a string", "json",
        file_text(base).replace("zeal-shuffle/1", "zeal-shuffle\\/1"))
    add("s-type-float", "n as a JSON float", "type",
        file_text(base).replace('"n": 100000', '"n": 100000.0'))
    add("s-type-array", "ranges as an array", "type",
        file_text(dict(base, ranges=[1, 2])))
    bad("s-format", "format zeal-shuffle/2: refused by the format check (by the sniff rule "
        "it is not a shuffle file, and the grid loader refuses its format as well)", "format",
        rh(dict(base, format="zeal-shuffle/2")))
    bad("s-missing", "no gamma_den", "missing",
        {k: v for k, v in base.items() if k != "gamma_den"})
    bad("s-unknown", "an extra key cal_gain (shuffle profiles have no calibration)", "unknown",
        rh(dict(base, cal_gain="1/2")))
    bad("s-type-int", "levels as a string", "type", rh(dict(base, levels="3")))
    bad("s-type-hex-upper", "epsilon in upper-case hex", "type",
        rh(dict(base, epsilon="0x" + base["epsilon"][2:].upper())))
    bad("s-type-delta-short", "delta with 15 hex digits", "type",
        rh(dict(base, delta=base["delta"][:-1])))
    bad("s-type-fingerprint", "fingerprint in upper case", "type",
        dict(base, fingerprint=base["fingerprint"].upper()))
    bad("s-type-ranges-char", "ranges with an upper-case hex digit", "type",
        rh(dict(base, ranges=base["ranges"].replace("0x0000", "0x000A", 1))))
    bad("s-fingerprint", "n edited, fingerprint kept", "fingerprint", dict(base, n=200000))
    rng = [f64(v) for lo_hi in AARHUS for v in lo_hi]

    def rng_text(parts):
        return ".".join("0x" + p for p in parts)

    value_cases = [
        ("s-eps-zero", "epsilon 0", dict(epsilon="0x" + f64(0.0))),
        ("s-eps-six", "epsilon 6 (the paper's formulas need epsilon < 6)",
         dict(epsilon="0x" + f64(6.0))),
        ("s-eps-nan", "epsilon NaN", dict(epsilon="0x" + NAN)),
        ("s-eps-negative", "epsilon -0.9", dict(epsilon="0x" + f64(-0.9))),
        ("s-delta-zero", "delta 0", dict(delta="0x" + f64(0.0))),
        ("s-delta-one", "delta 1", dict(delta="0x" + f64(1.0))),
        ("s-delta-inf", "delta +inf", dict(delta="0x" + POS_INF)),
        ("s-d-zero", "d 0", dict(d=0, ranges="")),
        ("s-d-65", "d 65 (ranges of d 3: d is checked first)", dict(d=65)),
        ("s-levels-zero", "levels 0", dict(levels=0)),
        ("s-levels-16", "levels 16", dict(levels=16)),
        ("s-t-zero", "t 0", dict(t=0)),
        ("s-t-above-d", "t 4 for d 3", dict(t=4)),
        ("s-n-one", "n 1", dict(n=1)),
        ("s-n-2-63", "n 2^63", dict(n=1 << 63)),
        ("s-gamma-zero", "gamma_num 0", dict(gamma_num=0)),
        ("s-gamma-one", "gamma_num = gamma_den (gamma 1: no reading is ever read)",
         dict(gamma_num=base["gamma_den"])),
        ("s-gamma-above", "gamma_num > gamma_den", dict(gamma_num=base["gamma_den"] + 1)),
        ("s-gamma-den-2-63", "gamma_den 2^63", dict(gamma_num=1, gamma_den=1 << 63)),
        ("s-gamma-negative", "gamma_num -1", dict(gamma_num=-1)),
        ("s-ranges-short", "5 patterns for d 3", dict(ranges=rng_text(rng[:5]))),
        ("s-ranges-long", "7 patterns for d 3", dict(ranges=rng_text(rng + rng[:1]))),
        ("s-ranges-pattern", "a pattern of 15 hex digits",
         dict(ranges=rng_text(rng[:5] + [rng[5][:-1]]))),
        ("s-ranges-noprefix", "a pattern without 0x (18 characters)",
         dict(ranges=".".join(["0x" + p for p in rng[:5]] + ["00" + rng[5]]))),
        ("s-ranges-empty-part", "an empty pattern between two dots",
         dict(ranges=rng_text(rng[:3]) + "..0x" + rng[4] + ".0x" + rng[5])),
        ("s-ranges-nan", "lo_1 NaN", dict(ranges=rng_text(rng[:2] + [NAN] + rng[3:]))),
        ("s-ranges-inf", "hi_2 +inf", dict(ranges=rng_text(rng[:5] + [POS_INF]))),
        ("s-ranges-ninf", "lo_0 -inf", dict(ranges=rng_text([NEG_INF] + rng[1:]))),
        ("s-ranges-equal", "lo_1 = hi_1", dict(ranges=rng_text(rng[:2] + [rng[3]] + rng[3:]))),
        ("s-ranges-swapped", "lo_2 > hi_2",
         dict(ranges=rng_text(rng[:4] + [rng[5], rng[4]]))),
    ]
    for cid, comment, change in value_cases:
        bad(cid, comment, "value", rh(dict(base, **change)))
    big = json.loads(profiles["s-d64-t5"].to_json())
    bad("s-derived-bits", "d 64, levels 15, t 6: a message of 6 * (6 + 4) = 60 bits > 52",
        "derived", rh(dict(big, t=6)))
    bad("s-privacy-levels", "levels 15, t 3 (3 * (2 + 4) = 18 bits: fits): the device "
        "accepts it; the host refuses it, the stored gamma was built for levels 3, t 1",
        "privacy", rh(dict(base, levels=15, t=3)), host_only=True)
    bad("s-privacy-gamma", "gamma_num - 1: below the gamma gamma_for gives (host only; the "
        "device cannot evaluate logarithms)", "privacy",
        rh(dict(base, gamma_num=base["gamma_num"] - 1)), host_only=True)
    bad("s-privacy-n", "n 1000: gamma_for has no gamma < 1 (host only)", "privacy",
        rh(dict(base, n=1000)), host_only=True)
    bad("s-privacy-epsilon", "epsilon 0.5 with the gamma built for 0.9 (host only)",
        "privacy", rh(dict(base, epsilon="0x" + f64(0.5))), host_only=True)
    return cases


# ---- the randomiser -------------------------------------------------------------------------
def run(prof, inputs, words):
    rec = Recorder(words)
    sampler = SP.ShuffleSampler(prof, rec)
    out = []
    for item in inputs:
        readings = [unf64(p) for p in item]
        before = len(rec.used)
        pairs = sampler.pairs(readings)
        out.append({"message": S.encode_message(prof.params, pairs),
                    "pairs": [list(pr) for pr in pairs], "words_used": len(rec.used) - before})
    return out


def rand_case(cid, comment, pid, prof, inputs, *, key=None, words=None):
    source = CounterWords(key) if key is not None else ListWords(words)
    case = {"id": cid, "kind": "randomise", "comment": comment, "result": "valid",
            "profile": pid, "inputs": inputs, "expected": run(prof, inputs, source)}
    if key is not None:
        case["key"] = key.hex()
    else:
        case["words"] = ["%016x" % w for w in words]
    return case


def randomise_cases(profiles) -> list:
    cases = []
    hand = profiles["s-hand"]
    g = hand.gamma
    digit = (g.numerator << 64) // g.denominator  # the blanket's first base-2^64 digit
    q3 = W // 3
    # hand 1: c = UNIFORM(3) with word 0 -> 0; blanket word 2^64-1 > digit -> 0; reading 1.5
    # on [0, 3] -> x = 1/2, xk = 3/2: b = 1, BERNOULLI(1, 2) with word 0 < 2^63 -> 1: level 2
    w1 = [0, W - 1, 0]
    c1 = rand_case("s-hand-round", "c: UNIFORM(3) word 0 -> 0; blanket word 2^64-1 -> no; "
                   "x = 1.5 on [0, 3] -> 1/2, xk = 3/2, BERNOULLI(1, 2) word 0 -> 1: level 2; "
                   "message 0 | 2 << 2 = 8", "s-hand", hand, [[f64(1.5), f64(0.0), f64(0.0)]],
                   words=w1)
    assert c1["expected"] == [{"message": 8, "pairs": [[0, 2]], "words_used": 3}], c1
    # hand 2: c = UNIFORM(3) with word 2q -> 2; blanket word 0 < digit -> yes; UNIFORM(4) with
    # word 3 * 2^62 -> 3: level 3 (the reading, NaN here, is not read)
    w2 = [2 * q3, 0, 3 << 62]
    c2 = rand_case("s-hand-blanket", "c: UNIFORM(3) word 2q -> 2; blanket word 0 < gamma's "
                   "digit -> yes; UNIFORM(4) word 3*2^62 -> 3; message 2 | 3 << 2 = 14",
                   "s-hand", hand, [[f64(0.0), f64(0.0), NAN]], words=w2)
    assert c2["expected"] == [{"message": 14, "pairs": [[2, 3]], "words_used": 3}], c2
    # hand 3: UNIFORM(3) refuses word 3q (u = 3), takes the next, q -> 1; the blanket's word
    # equals its first base-2^64 digit: gamma = num/2^31 is dyadic, so the remainder is 0 and
    # BERNOULLI returns 0 without another word (U >= gamma); x = 3 on [0, 3] -> 1, xk = 3:
    # b = 3, BERNOULLI(0, 1) still reads one word (2^64-1 != 0 -> 0): level 3
    w3 = [3 * q3, q3, digit, W - 1]
    assert g.denominator & (g.denominator - 1) == 0 and g.denominator <= W
    c3 = rand_case("s-hand-reject-tie", "UNIFORM(3) refuses word 3q (u = 3), takes q -> 1; "
                   "the blanket's word equals gamma's first base-2^64 digit and gamma is dyadic "
                   "(remainder 0): no blanket, no further word; x = 3 on [0, 3] -> 1, xk = 3 = "
                   "3 + 0/1, BERNOULLI(0, 1) still reads one word: level 3; message "
                   "1 | 3 << 2 = 13, 4 words", "s-hand", hand,
                   [[f64(0.0), f64(3.0), f64(0.0)]], words=w3)
    assert c3["expected"] == [{"message": 13, "pairs": [[1, 3]], "words_used": 4}], c3
    # hand 4: out of range and invalid readings: -7 -> 0 (clamped), level b = 0, BERNOULLI(0,1)
    w4 = [0, W - 1, 0]
    c4 = rand_case("s-hand-clamp", "x = -7 on [0, 3] is clamped to 0: level 0 (BERNOULLI(0, 1) "
                   "reads a word and gives 0 even for word 0)", "s-hand", hand,
                   [[f64(-7.0), f64(0.0), f64(0.0)]], words=w4)
    assert c4["expected"][0]["message"] == 0, c4
    w5 = [0, W - 1, 0]
    c5 = rand_case("s-hand-nan", "x = NaN (invalid) -> 1/2: xk = 3/2, word 0 -> level 2, "
                   "message 8", "s-hand", hand, [[NAN, f64(0.0), f64(0.0)]], words=w5)
    assert c5["expected"][0]["message"] == 8, c5
    w6 = [0, W - 1, W - 1]
    c6 = rand_case("s-hand-short-tuple", "a tuple of 2 readings for d 3: every coordinate "
                   "invalid (1/2): xk = 3/2, word 2^64-1 -> level 1, message 4", "s-hand",
                   hand, [[f64(3.0), f64(3.0)]], words=w6)
    assert c6["expected"][0]["message"] == 4, c6
    cases += [c1, c2, c3, c4, c5, c6]
    # keyed: many tuples per profile through one generator
    import random
    gen = random.Random(4004)
    for pid, prof in profiles.items():
        inputs = []
        for i in range(40 if prof.d <= 10 else 8):
            tup = []
            for lo, hi in prof.ranges:
                r = gen.random()
                if r < 0.05:
                    tup.append(gen.choice([NAN, POS_INF, NEG_INF]))
                elif r < 0.12:
                    tup.append(f64(gen.choice([lo - 1.0, hi + 1.0, lo, hi, -0.0])))
                else:
                    tup.append(f64(lo + (hi - lo) * gen.random()))
            inputs.append(tup)
        cases.append(rand_case(pid + "-keyed", "%d tuples (5%% invalid, 7%% at or beyond the "
                               "range ends) through one generator" % len(inputs), pid, prof, inputs,
                               key=key_for("shuffle:" + pid)))
    return cases


def render() -> dict:
    profiles = profile_set()
    cases = profile_cases(profiles) + randomise_cases(profiles)
    for c in cases:  # every valid profile file re-read by the loader
        if c["kind"] == "profile" and c["result"] == "valid":
            assert SP.loads(c["file"]).fingerprint == json.loads(c["file"])["fingerprint"]
    return {"schema": "zeal-vectors/shuffle", "version": VERSION, "count": len(cases),
            "max_file": SP.MAX_SHUFFLE_FILE,
            "notes": __doc__.split("Cases:\n", 1)[1].split("Hand-derived")[0].strip(),
            "cases": cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare with the file")
    args = ap.parse_args()
    text = json.dumps(render(), indent=1, sort_keys=False) + "\n"
    try:
        with open(OUT) as fh:
            old = fh.read()
    except OSError:
        old = None
    if args.check:
        if old != text:
            print("shuffle.json is stale: run python tools/gen_shuffle_vectors.py",
                  file=sys.stderr)
            return 1
        print("shuffle.json up to date")
        return 0
    with open(OUT, "w") as fh:
        fh.write(text)
    print("shuffle.json %d cases%s" % (json.loads(text)["count"],
                                       " (changed)" if old != text else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
