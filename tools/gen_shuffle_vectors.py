#!/usr/bin/env python3
"""Write shared_spec/vectors/shuffle.json (shuffle profiles "zeal-shuffle/2" and the
randomiser) from the host reference (zeal.mechanism.shuffle.profile, zeal.mechanism.shuffle.mechanism,
the privacy rule zeal.mechanism.shuffle.rule).

Cases:
- kind "profile": "file" is the exact file text. Valid ones give the canonical bytes, the
  fingerprint, bits (P: one message = one wire report; a reading sends t of them), gamma
  and the regime of the composition; invalid ones the reason code of the shuffle check list
  (shared_spec/shuffle.md). Every check is the device's, the privacy rule included: a
  device must refuse every invalid file with the same reason (host_only is false in every
  case; the key is kept for readers of version 1). Files refused by the privacy rule
  ("privacy") carry "why", the host's one-line message (its step), and are TAMPERED valid
  files with their fingerprint recomputed, so that only the rule catches them: gamma one
  step of 2^-32 too small (the step written in the 2^32 denominator form), gamma halved, n
  halved, epsilon and delta relabelled smaller, message_epsilon above what composes, above
  epsilon or lowered, levels, d and t raised.
- kind "randomise": "profile" names a valid profile case; its inputs (reading tuples, each a
  list of float64 bit patterns as 16 hex digits, one per coordinate; a list of the wrong
  length makes every coordinate invalid) run in order through one generator ("key", 32 bytes
  hex; shared_spec/generator.md) or an explicit word list ("words"); expected per input: the
  t messages (the integer wire reports, message 0 first), their (coordinate, level) pairs
  and the words consumed.
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
from zeal.mechanism.core import pfile  # noqa: E402
from zeal.mechanism.shuffle import mechanism as S  # noqa: E402
from zeal.mechanism.shuffle import profile as SP  # noqa: E402
from zeal.mechanism.core.floatbits import float64_to_bits  # noqa: E402
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder  # noqa: E402

OUT = os.path.join(ROOT, "shared_spec", "vectors", "shuffle.json")
VERSION = 2
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
    """(result, reason, profile or the error's message) of the host's loader."""
    try:
        return "valid", None, SP.loads(text)
    except ProfileError as exc:
        return "invalid", getattr(exc, "reason", None), str(exc)


def next_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def step_down(doc):
    """gamma one step of 2^-32 smaller, written over 2^32 (the host writes gamma reduced,
    a multiple of 2^-32: gamma_den divides 2^32)."""
    scale = (1 << 32) // doc["gamma_den"]
    assert scale * doc["gamma_den"] == 1 << 32, doc["gamma_den"]
    return dict(doc, gamma_num=doc["gamma_num"] * scale - 1, gamma_den=1 << 32)


# ---- profiles -------------------------------------------------------------------------------
AARHUS = [(0.0, 1000.0), (0.0, 100.0), (-20.0, 40.0)]  # light (lx), humidity (%), temp (C)


def profile_set() -> dict:
    out = {}
    out["s-aarhus"] = SP.build_from(epsilon="0.9", delta="1e-6", n=100000, d=3, k=3, t=1,
                                    ranges=AARHUS)
    out["s-d1-k1"] = SP.build_from(epsilon="0.5", delta="1e-5", n=20000, d=1, k=1, t=1)
    out["s-d10-t2"] = SP.build_from(epsilon="0.5", delta="1e-6", n=10 ** 8, d=10, k=3, t=2,
                                    ranges=[(-1.0 * c, 2.0 ** c) for c in range(10)])
    out["s-d4-t3"] = SP.build_from(epsilon="1.5", delta="1e-6", n=10 ** 7, d=4, k=3, t=3,
                                   ranges=[(0.0, 10.0), (-5.0, 5.0), (0.0, 0.125), (1.0, 2.0)])
    out["s-d64-k15"] = SP.build_from(epsilon="0.99", delta="1e-7", n=10 ** 9, d=64, k=15,
                                     t=1, ranges=[(c - 32.0, c + 0.5) for c in range(64)])
    out["s-d64-t5"] = SP.build_from(epsilon="0.75", delta="1e-6", n=10 ** 12, d=64, k=15,
                                    t=5)
    out["s-d16-t16"] = SP.build_from(epsilon="1", delta="0.05", n=10 ** 9, d=16, k=3, t=16)
    out["s-eps2"] = SP.build_from(epsilon="2", delta="1e-6", n=10 ** 6, d=5, k=2, t=1,
                                  ranges=[(0.0, 3.3)] * 5)
    out["s-linear"] = SP.build_from(epsilon="0.9", delta="0.5", n=1001, d=1, k=1, t=1)
    out["s-hand"] = SP.build_from(epsilon="0.9", delta="1e-6", n=100000, d=3, k=3, t=1,
                                  ranges=[(0.0, 3.0)] * 3)
    out["s-hand-t2"] = SP.build_from(epsilon="0.9", delta="1e-6", n=10 ** 6, d=3, k=3, t=2,
                                     ranges=[(0.0, 3.0)] * 3)
    regimes = {pid: p.params.regime for pid, p in out.items()}
    assert {"balle-t1", "basic", "advanced"} == set(regimes.values()), regimes
    assert {1, 2, 3} <= {p.t for p in out.values()}
    # the worked case of shuffle.md ("The privacy rule"): the linear step binds
    assert (out["s-linear"].gamma_num << 32) // out["s-linear"].gamma_den == 257698038
    return out


def profile_cases(profiles) -> list:
    cases = []
    for pid, prof in profiles.items():
        cases.append({"id": pid, "kind": "profile", "comment": "valid shuffle profile (t = %d, "
                      "%s)" % (prof.t, prof.params.regime), "result": "valid",
                      "file": prof.to_json(), "canonical": prof.canonical_bytes().decode(),
                      "fingerprint": prof.fingerprint, "bits": prof.bits,
                      "gamma": "%d/%d" % (prof.gamma_num, prof.gamma_den),
                      "regime": prof.params.regime})
    base = json.loads(profiles["s-aarhus"].to_json())
    rh = rehashed

    def add(cid, comment, expect, text):
        result, reason, why = verdict(text)
        want = ("valid", None) if expect == "valid" else ("invalid", expect)
        if (result, reason) != want:
            raise SystemExit("gen_shuffle_vectors: %s: the reference says %s/%s, expected %s"
                             % (cid, result, reason, expect))
        case = {"id": cid, "kind": "profile", "comment": comment, "result": result,
                "file": text if isinstance(text, str) else text.decode("latin-1")}
        if result == "invalid":
            case["reason"] = reason
            case["host_only"] = False
            if reason == "privacy":
                case["why"] = why
        cases.append(case)

    def bad(cid, comment, reason, doc):
        add(cid, comment, reason, file_text(doc))

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
        file_text(base).replace("zeal-shuffle/2", "zeal-shuffle\\/2"))
    add("s-type-float", "n as a JSON float", "type",
        file_text(base).replace('"n": 100000', '"n": 100000.0'))
    add("s-type-array", "ranges as an array", "type",
        file_text(dict(base, ranges=[1, 2])))
    old = {k: v for k, v in base.items() if k != "message_epsilon"}
    bad("s-format-v1", "format zeal-shuffle/1 (the withdrawn linked messages: its gamma did "
        "not give the claimed guarantee for t >= 2), fingerprint recomputed: a shuffle file by "
        "the sniff rule, refused by the format check", "format",
        rh(dict(old, format="zeal-shuffle/1")))
    bad("s-format-v3", "format zeal-shuffle/3: a shuffle file by the sniff rule, refused by "
        "the format check", "format", rh(dict(base, format="zeal-shuffle/3")))
    bad("s-missing", "no gamma_den", "missing",
        {k: v for k, v in base.items() if k != "gamma_den"})
    bad("s-missing-message-epsilon", "no message_epsilon (a zeal-shuffle/1 file relabelled "
        "zeal-shuffle/2)", "missing", rh(dict(old)))
    bad("s-unknown", "an extra key cal_gain (shuffle profiles have no calibration)", "unknown",
        rh(dict(base, cal_gain="1/2")))
    bad("s-type-int", "levels as a string", "type", rh(dict(base, levels="3")))
    bad("s-type-hex-upper", "epsilon in upper-case hex", "type",
        rh(dict(base, epsilon="0x" + base["epsilon"][2:].upper())))
    bad("s-type-delta-short", "delta with 15 hex digits", "type",
        rh(dict(base, delta=base["delta"][:-1])))
    bad("s-type-message-epsilon", "message_epsilon as an int", "type",
        rh(dict(base, message_epsilon=1)))
    bad("s-type-message-epsilon-hex", "message_epsilon without 0x", "type",
        rh(dict(base, message_epsilon="00" + base["message_epsilon"][2:])))
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
        ("s-eps-m-zero", "message_epsilon 0", dict(message_epsilon="0x" + f64(0.0))),
        ("s-eps-m-negative-zero", "message_epsilon -0", dict(message_epsilon="0x" + f64(-0.0))),
        ("s-eps-m-above-one", "message_epsilon one float64 step above 1 (the blanket "
         "theorem's range is eps_m <= 1): a value check, before the rule",
         dict(message_epsilon="0x" + f64(next_up(1.0)))),
        ("s-eps-m-nan", "message_epsilon NaN", dict(message_epsilon="0x" + NAN)),
        ("s-eps-m-inf", "message_epsilon +inf", dict(message_epsilon="0x" + POS_INF)),
        ("s-eps-m-before-d", "message_epsilon 2 and d 0: message_epsilon is checked first",
         dict(message_epsilon="0x" + f64(2.0), d=0)),
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
    cases += tampered(profiles)
    return cases


def tampered(profiles) -> list:
    """A valid file changed in one way the privacy rule must catch, its fingerprint
    recomputed (so that only the rule refuses it), for every way gamma or its certificate can
    be wrong, and each of the rule's steps at least once."""
    doc = {pid: json.loads(p.to_json()) for pid, p in profiles.items()}
    a, lin, t2, adv = doc["s-aarhus"], doc["s-linear"], doc["s-d10-t2"], doc["s-d16-t16"]

    def pat(x):
        return "0x" + f64(x)

    def val(d, key):
        return unf64(d[key][2:])

    half_gamma = (lambda d: dict(d, gamma_num=d["gamma_num"] // 2) if d["gamma_num"] % 2 == 0
                  else dict(d, gamma_den=2 * d["gamma_den"]))
    specs = [
        ("gamma-step", "gamma one step of 2^-32 below the host's (the smallest multiple of "
         "2^-32 that passes), written over 2^32: step 4 (the square term binds)", step_down(a)),
        ("gamma-step-linear", "shuffle.md's worked case (epsilon 0.9, delta 1/2, n 1001, "
         "d = k = t = 1: gamma 257698038/2^32) one step of 2^-32 below: step 2 (the linear "
         "term binds)", step_down(lin)),
        ("gamma-step-t2", "t 2: gamma one step of 2^-32 below", step_down(t2)),
        ("gamma-step-advanced", "t 16, advanced composition: gamma one step of 2^-32 below",
         step_down(adv)),
        ("gamma-step-d64", "d 64, levels 15, t 5, n 10^12: gamma one step of 2^-32 below",
         step_down(doc["s-d64-t5"])),
        ("gamma-half", "gamma halved", half_gamma(a)),
        ("gamma-half-t2", "t 2: gamma halved", half_gamma(t2)),
        ("n-half", "n halved", dict(a, n=a["n"] // 2)),
        ("n-half-advanced", "t 16: n halved", dict(adv, n=adv["n"] // 2)),
        ("n-minus-one", "n one below the batch gamma was made for (the square term: gamma "
         "(n - 1) ... is just short)", dict(a, n=a["n"] - 1)),
        ("epsilon", "epsilon relabelled 0.5 (the gamma and message_epsilon built for 0.9): "
         "step 1, message_epsilon above epsilon", dict(a, epsilon=pat(0.5))),
        ("epsilon-step", "epsilon one float64 step below the stored one (t = 1: "
         "message_epsilon = epsilon): step 1", dict(a, epsilon=pat(math.nextafter(
             val(a, "epsilon"), 0.0)))),
        ("epsilon-t2", "t 2: epsilon one float64 step below (2 message_epsilon = epsilon by "
         "basic composition): step 3", dict(t2, epsilon=pat(math.nextafter(
             val(t2, "epsilon"), 0.0)))),
        ("epsilon-advanced", "t 16: epsilon relabelled 0.99 (message_epsilon the largest "
         "float64 advanced composition allows at 1): step 3", dict(adv, epsilon=pat(0.99))),
        ("delta", "delta relabelled 1e-7 (gamma built for 1e-6): step 4",
         dict(a, delta=pat(1e-7))),
        ("delta-advanced", "t 16: delta relabelled 0.04 (advanced composition needs "
         "ln(2/delta)): step 3", dict(adv, delta=pat(0.04))),
        ("eps-m-composes-t2", "t 2: message_epsilon one float64 step above what composes to "
         "epsilon: step 3", dict(t2, message_epsilon=pat(next_up(val(t2, "message_epsilon"))))),
        ("eps-m-composes-advanced", "t 16: message_epsilon one float64 step above what "
         "advanced composition allows: step 3",
         dict(adv, message_epsilon=pat(next_up(val(adv, "message_epsilon"))))),
        ("eps-m-composes-basic", "t 2: message_epsilon raised to epsilon (basic composition "
         "needs 2 message_epsilon <= epsilon, advanced does not help): step 3",
         dict(t2, message_epsilon=t2["epsilon"])),
        ("eps-m-above-eps", "t 1: message_epsilon one float64 step above epsilon: step 1",
         dict(a, message_epsilon=pat(next_up(val(a, "message_epsilon"))))),
        ("eps-m-above-eps-t2", "t 2: message_epsilon 0.75 above epsilon 0.5: step 1",
         dict(t2, message_epsilon=pat(0.75))),
        ("eps-m-lowered", "message_epsilon halved (gamma made for the larger one): the blanket "
         "steps", dict(a, message_epsilon=pat(val(a, "message_epsilon") / 2))),
        ("eps-m-tiny", "message_epsilon 2^-60: step 2 (gamma (n - 1) eps_m < 27 D)",
         dict(a, message_epsilon=pat(2.0 ** -60))),
        ("levels", "levels 3 -> 15 with gamma built for 3 (D = 12 -> 48)", dict(a, levels=15)),
        ("t", "t 1 -> 2 with message_epsilon = epsilon: step 3", dict(a, t=2)),
        ("levels-advanced", "t 16: levels 3 -> 4 with gamma built for 3: the blanket steps",
         dict(adv, levels=4)),
        ("d", "d 3 -> 4 (a fourth range) with gamma built for 3", dict(
            a, d=4, ranges=a["ranges"] + "." + pat(0.0) + "." + pat(1.0))),
    ]
    out = []
    for name, comment, changed in specs:
        text = file_text(rehashed(changed))
        cid = "s-privacy-" + name
        result, reason, why = verdict(text)
        if (result, reason) != ("invalid", "privacy"):
            raise SystemExit("gen_shuffle_vectors: %s: the reference says %s/%s, expected "
                             "privacy" % (cid, result, reason))
        out.append({"id": cid, "kind": "profile", "comment": "TAMPERED, fingerprint "
                    "recomputed: " + comment, "result": "invalid", "file": text,
                    "reason": "privacy", "host_only": False, "why": why})
    return out


# ---- the randomiser -------------------------------------------------------------------------
def run(prof, inputs, words):
    rec = Recorder(words)
    sampler = SP.ShuffleSampler(prof, rec)
    out = []
    for item in inputs:
        readings = [unf64(p) for p in item]
        before = len(rec.used)
        pairs = sampler.pairs(readings)
        out.append({"messages": [S.encode_message(prof.params, pr) for pr in pairs],
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
    assert c1["expected"] == [{"messages": [8], "pairs": [[0, 2]], "words_used": 3}], c1
    # hand 2: c = UNIFORM(3) with word 2q -> 2; blanket word 0 < digit -> yes; UNIFORM(4) with
    # word 3 * 2^62 -> 3: level 3 (the reading, NaN here, is not read)
    w2 = [2 * q3, 0, 3 << 62]
    c2 = rand_case("s-hand-blanket", "c: UNIFORM(3) word 2q -> 2; blanket word 0 < gamma's "
                   "digit -> yes; UNIFORM(4) word 3*2^62 -> 3; message 2 | 3 << 2 = 14",
                   "s-hand", hand, [[f64(0.0), f64(0.0), NAN]], words=w2)
    assert c2["expected"] == [{"messages": [14], "pairs": [[2, 3]], "words_used": 3}], c2
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
    assert c3["expected"] == [{"messages": [13], "pairs": [[1, 3]], "words_used": 4}], c3
    # hand 4: out of range and invalid readings: -7 -> 0 (clamped), level b = 0, BERNOULLI(0,1)
    w4 = [0, W - 1, 0]
    c4 = rand_case("s-hand-clamp", "x = -7 on [0, 3] is clamped to 0: level 0 (BERNOULLI(0, 1) "
                   "reads a word and gives 0 even for word 0)", "s-hand", hand,
                   [[f64(-7.0), f64(0.0), f64(0.0)]], words=w4)
    assert c4["expected"][0]["messages"] == [0], c4
    w5 = [0, W - 1, 0]
    c5 = rand_case("s-hand-nan", "x = NaN (invalid) -> 1/2: xk = 3/2, word 0 -> level 2, "
                   "message 8", "s-hand", hand, [[NAN, f64(0.0), f64(0.0)]], words=w5)
    assert c5["expected"][0]["messages"] == [8], c5
    w6 = [0, W - 1, W - 1]
    c6 = rand_case("s-hand-short-tuple", "a tuple of 2 readings for d 3: every coordinate "
                   "invalid (1/2): xk = 3/2, word 2^64-1 -> level 1, message 4", "s-hand",
                   hand, [[f64(3.0), f64(3.0)]], words=w6)
    assert c6["expected"][0]["messages"] == [4], c6
    cases += [c1, c2, c3, c4, c5, c6]
    # t = 2 (d = 3, k = 3, ranges [0, 3]): each message draws its own coordinate, blanket
    # and level, message 0 first; the reading is read only for the coordinates drawn
    h2 = profiles["s-hand-t2"]
    d2 = (h2.gamma.numerator << 64) // h2.gamma.denominator
    assert d2 > 0
    w7 = [0, W - 1, 0, 2 * q3, 0, 3 << 62]
    c7 = rand_case("s-hand-t2-two", "t 2: message 0 as s-hand-round (c 0, no blanket, x 1/2 "
                   "-> level 2: 8), message 1 as s-hand-blanket (c 2, blanket, UNIFORM(4) "
                   "-> 3: 14); messages [8, 14], 6 words", "s-hand-t2", h2,
                   [[f64(1.5), f64(0.0), NAN]], words=w7)
    assert c7["expected"] == [{"messages": [8, 14], "pairs": [[0, 2], [2, 3]],
                               "words_used": 6}], c7
    w8 = [q3, W - 1, 0, q3, W - 1, W - 1]
    c8 = rand_case("s-hand-t2-repeat", "t 2, with replacement: both messages draw coordinate "
                   "1 (word q); x 1/2 -> level 2 (word 0) then level 1 (word 2^64-1); "
                   "messages [1 | 2 << 2, 1 | 1 << 2] = [9, 5]", "s-hand-t2", h2,
                   [[NAN, f64(1.5), NAN]], words=w8)
    assert c8["expected"] == [{"messages": [9, 5], "pairs": [[1, 2], [1, 1]],
                               "words_used": 6}], c8
    cases += [c7, c8]
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
