#!/usr/bin/env python3
"""Write shared_spec/vectors/{generator,profiles,mechanism,tables,multi}.json from the CPython reference.

Hand-derived cases (see shared_spec/mechanism.md and tests/test_mechanism.py) are checked
against the reference while generating: if the reference disagrees, nothing is written.
Usage: python tools/gen_vectors.py [--check]   (--check: exit 1 if the files are stale)
"""
import argparse
import hashlib
import json
import os
import struct
import sys
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism import kinds
from zeal.mechanism.grid import reports  # noqa: E402
from zeal.errors import InputError  # noqa: E402
from zeal.mechanism.core.floatbits import float64_to_bits  # noqa: E402
from zeal.mechanism.core.draws import (  # noqa: E402
    reading_from_float32_bits, reading_from_float64_bits)
from zeal.mechanism.grid.scalar import ExactZeal, reading_from_raw  # noqa: E402
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder  # noqa: E402
from zeal.mechanism.table import mechanism as TB  # noqa: E402
from zeal.mechanism.table import profile as TP  # noqa: E402
from zeal.mechanism.table.sampler import TableSampler  # noqa: E402
from zeal.mechanism.multi import profile as MP  # noqa: E402
from zeal.mechanism.multi.mechanism import Categorical, Numeric  # noqa: E402
from zeal.mechanism.kinds import loads as loads_any  # noqa: E402

OUT = os.path.join(ROOT, "shared_spec", "vectors")
VERSION = 1
W = 1 << 64


def key_for(label: str) -> bytes:
    return hashlib.sha256(b"zeal-vector-key:" + label.encode()).digest()


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def rehashed(doc):
    """doc with the fingerprint of its own canonical bytes (a tampered file that passes the
    fingerprint check, so that the intended later check fires)."""
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    return dict(doc, fingerprint=hashlib.sha256(canon).hexdigest())


def d64(x):
    return {"float64": "%016x" % float64_to_bits(x)}


def d32(x):
    return {"float32": "%08x" % f32(x)}


def sample_case(cid, comment, pid, inputs, outs, clamped, key=None, words=None, **extra):
    """A sampler vector: inputs run in order through one generator (key) or word list."""
    case = dict({"id": cid}, **extra)
    case.update({"comment": comment, "result": "valid", "profile": pid, "inputs": inputs,
                 "expected": outs, "clamped": clamped})
    if key is not None:
        case["key"] = key.hex()
    else:
        case["words"] = ["%016x" % w for w in words]
    return case


# ---- generator -------------------------------------------------------------------------------
def generator_vectors() -> dict:
    cases = []
    for label, key in (("zero key", bytes(32)), ("counting key", bytes(range(32))),
                       ("derived key", key_for("generator"))):
        cases.append({"id": "gen-%d" % len(cases), "comment": label + ": first 10 words "
                      "(crosses into the third block)", "result": "valid", "key": key.hex(),
                      "words": ["%016x" % w for w in CounterWords(key).take(10)]})
    return {"schema": "zeal-vectors/generator", "version": VERSION, "count": len(cases),
            "notes": "SHA-256 counter mode of generator.md; words as 16 hex digits.",
            "cases": cases}


# ---- profiles --------------------------------------------------------------------------------
def profile_set() -> dict:
    out = {"hand": P.from_bits(20.0, 80.0, 1.0, 4)}
    for eps in (0.5, 1.0, 2.0, 4.0):
        for m in (2, 3, 4, 8, 16):
            out["hum-e%g-m%d" % (eps, m)] = P.from_bits(23.5, 83.9, eps, m)
    out["hum-e1-m52"] = P.from_bits(23.5, 83.9, 1.0, 52)
    out["adc-e1-m8"] = P.from_bits(0.0, 3.3, 1.0, 8,
                                   calibration=P.Calibration(Fraction(33, 40950), Fraction(0)))
    out["neg-e2-m12"] = P.from_bits(-40.0, 125.0, 2.0, 12)
    return out


def profile_vectors(profiles: dict) -> dict:
    cases = []
    for pid, prof in profiles.items():
        cases.append({"id": pid, "comment": "valid profile", "result": "valid",
                      "profile": json.loads(prof.to_json()),
                      "canonical": prof.canonical_bytes().decode()})
    base = json.loads(profiles["hum-e1-m4"].to_json())

    def bad(cid, comment, reason, doc, host_only=False):
        cases.append({"id": cid, "comment": comment, "result": "invalid", "reason": reason,
                      "host_only": host_only, "profile": doc})

    bad("bad-fingerprint", "fingerprint of another profile", "fingerprint",
        dict(base, fingerprint=json.loads(profiles["hum-e1-m8"].to_json())["fingerprint"]))
    bad("bad-threshold", "threshold edited, fingerprint kept", "fingerprint",
        dict(base, threshold=base["threshold"] + 1))
    bad("bad-format", "unknown format version", "format", dict(base, format="zeal-profile/9"))
    bad("missing-key", "no n_window", "missing",
        {k: v for k, v in base.items() if k != "n_window"})
    bad("float-value", "epsilon as a JSON float", "type", dict(base, epsilon=1.0))
    # tampered profiles with recomputed fingerprints: each is refused by the check named in
    # its reason (shared_spec/profile.md, the profile-check list), on the device as well
    bad("rehashed-threshold", "threshold + 1, fingerprint recomputed: P_hi/P_lo would exceed "
        "L; the device re-derives T", "derived", rehashed(dict(base, threshold=base["threshold"]
                                                              + 1)))
    bad("rehashed-bits", "bits 5 for a grid of 15 cells", "derived",
        rehashed(dict(base, bits=5)))
    bad("rehashed-window-zero", "n_window 0: no window cell", "value",
        rehashed(dict(base, n_window=0)))
    bad("rehashed-window-all", "n_window = n_cells: no outside cell", "value",
        rehashed(dict(base, n_window=base["n_cells"])))
    bad("rehashed-threshold-zero", "threshold 0: P_hi = 0", "value",
        rehashed(dict(base, threshold=0)))
    bad("rehashed-epsilon-nan", "epsilon NaN", "value",
        rehashed(dict(base, epsilon="0x7ff8000000000000")))
    bad("rehashed-lo-above-hi", "lo and hi swapped", "value",
        rehashed(dict(base, lo=base["hi"], hi=base["lo"])))
    bad("rehashed-exponent", "exponent 1024: not a finite double", "value",
        rehashed(dict(base, exponent=1024)))
    eps = 1e-6
    n, nc = 4502511373889014, 1
    t = P.threshold(n, nc, Fraction(eps))
    bad("privacy-eps-1e-6", "issue 7: eps = 1e-6, N = 4502511373889014, Nc = 1, T = the "
        "certified threshold (4096); P_lo/P_hi = 1501199875790165/1500837124629671, a loss of "
        "241.67 eps: refused because T*No <= (2^64 - T)*Nc", "privacy",
        rehashed(dict(base, epsilon="0x%016x" % float64_to_bits(eps), exponent=0,
                      bits=n.bit_length(), n_cells=n, n_window=nc, threshold=t)))
    bad("privacy-equal", "eps = 2^-1074 (L = 1), N = 2, Nc = 1, T = 2^63: P_hi == P_lo, the "
        "slope is 0", "privacy", rehashed(dict(base, epsilon="0x0000000000000001", bits=2,
                                               n_cells=2, n_window=1, threshold=1 << 63)))
    bad("upper-hex-hi", "hi in upper-case hex, fingerprint over it: not canonical", "type",
        rehashed(dict(base, hi="0x" + base["hi"][2:].upper())))
    # (a profile whose N, Nc or E are consistent integers but not the host's grid is refused
    # by the host only -- check 17 of profile.md; tests/test_profile_agreement.py has such
    # files and checks they are private. No vector: every case here binds the device.)
    return {"schema": "zeal-vectors/profiles", "version": VERSION, "count": len(cases),
            "notes": "Valid profiles with their canonical bytes; must-reject profiles with "
                     "the reason code of the profile-check list (shared_spec/profile.md). "
                     "host_only: a device need not detect it (N, Nc, E: utility, not privacy).",
            "cases": cases}


# ---- mechanism -------------------------------------------------------------------------------
def decode_input(prof, item):
    if "float64" in item:
        return reading_from_float64_bits(int(item["float64"], 16))
    if "float32" in item:
        return reading_from_float32_bits(int(item["float32"], 16))
    return reading_from_raw(prof, item["raw"])


def run_case(prof, inputs, words_source):
    mech = ExactZeal(profile=prof, words=words_source)
    outs = []
    for item in inputs:
        rec = Recorder(words_source)
        k = mech.perturb(decode_input(prof, item), rec)
        outs.append({"k": k, "bits": "%016x" % reports.to_bits(prof, k),
                     "low": reports.to_low(prof, k), "words_used": len(rec.used)})
    return outs, mech.clamped


def mechanism_vectors(profiles: dict) -> dict:
    cases = []

    def add(cid, comment, pid, inputs, key=None, words=None, expect_j=None):
        prof = profiles[pid]
        src = CounterWords(key) if key is not None else ListWords(words)
        outs, clamped = run_case(prof, inputs, src)
        if expect_j is not None:  # hand-derived: the reference must agree
            got = [o["k"] - prof.k_lo for o in outs]
            if got != expect_j:
                raise SystemExit("hand case %s: reference gives %r, hand gives %r"
                                 % (cid, got, expect_j))
        cases.append(sample_case(cid, comment, pid, inputs, outs, clamped, key, words))

    top = W - 1
    # Hand-derived (tests/test_mechanism.py explains each): lo=20, hi=80, eps=1, m=4.
    add("hand-window", "x=50: pos=4.5, U<1/2 -> jL=5; window; u=0 -> j=5", "hand",
        [d64(50.0)], words=[0, 0, 0], expect_j=[5])
    add("hand-reject", "x=50: jL=4; outside; word 2^64-1 gives u=9 >= No: rejected; u=0 -> j=0",
        "hand", [d64(50.0)], words=[top, top, top, 0], expect_j=[0])
    add("hand-skip", "x=50: jL=4; outside; u=4 >= jL skips the window -> j=10", "hand",
        [d64(50.0)], words=[top, top, 4 * (W // 9)], expect_j=[10])
    add("hand-tie", "x=50: first word equals the rounding digit 2^63; remainder 0 -> jL=4",
        "hand", [d64(50.0)], words=[1 << 63, 0, 0], expect_j=[4])
    add("hand-clamp", "x=-5 and x=99 clamp to lo and hi", "hand", [d64(-5.0), d64(99.0)],
        words=[0, top, 0, 0, top, 0], expect_j=[6, 0])

    humidity = [35.58, 23.5, 83.9, 53.7, 24.5, 82.9, 50.843918, 10.0, 100.0, -0.0]
    for pid, prof in profiles.items():
        if pid == "hand":
            continue
        if pid.startswith("adc"):
            add(pid + "-raw", "raw ADC counts through the exact calibration 33/40950",
                pid, [{"raw": r} for r in (0, 1, 2048, 4095, 5000)], key=key_for(pid))
            continue
        lo, hi = prof.lo, prof.hi
        xs = [lo, hi, (lo + hi) / 2] + ([x for x in humidity] if pid.startswith("hum") else
                                        [lo - 1, hi + 1, 0.0, 21.25, -39.99])
        add(pid + "-f64", "float64 readings incl. both ends and out-of-range (clamped)", pid,
            [d64(x) for x in xs], key=key_for(pid + "/f64"))
        add(pid + "-f32", "float32 readings (struct.pack('<f', x)) decoded exactly", pid,
            [d32(x) for x in xs], key=key_for(pid + "/f32"))

    rejects = []
    for item, reason in (({"float64": "7ff8000000000000"}, "nan"),
                         ({"float64": "7ff0000000000000"}, "inf"),
                         ({"float64": "fff0000000000000"}, "inf"),
                         ({"float32": "7fc00000"}, "nan"),
                         ({"float32": "ff800000"}, "inf")):
        try:
            decode_input(profiles["hum-e1-m4"], item)
        except InputError:
            rejects.append({"id": "reject-%d" % len(rejects), "comment": "not a number",
                            "result": "invalid", "reason": reason, "profile": "hum-e1-m4",
                            "inputs": [item]})
        else:
            raise SystemExit("reference accepted %r" % item)
    try:
        decode_input(profiles["hum-e1-m4"], {"raw": 12})
    except InputError:
        rejects.append({"id": "reject-raw-uncalibrated", "comment": "raw count, no calibration",
                        "result": "invalid", "reason": "calibration", "profile": "hum-e1-m4",
                        "inputs": [{"raw": 12}]})
    cases.extend(rejects)
    return {"schema": "zeal-vectors/mechanism", "version": VERSION, "count": len(cases),
            "notes": "Each valid case runs its inputs in order through one generator (key) or "
                     "an explicit word list; expected k, 64-bit pattern, low m bits and words "
                     "consumed. Profiles are in profiles.json (same ids). Invalid cases must "
                     "be rejected before any word is drawn.",
            "cases": cases}


# ---- table profiles and the table sampler -----------------------------------------------------
def hand_table_profile():
    """mechanism.md, "Table profiles", the hand case: [-1, 1], eps 1, R = 1, N = 2,
    W = [[2, 1], [1, 2]]: ratio 2 <= e, g = (-3, 3), a = (-1, +2), Q = 1."""
    return TP.from_table(TB.Table(-1, 1, 1, [[2, 1], [1, 2]]), epsilon=1.0)


def hand_compact_profile():
    """The hand table written compact (zeal-table/2): levels lo = (1, 1), hi = (2, 2); row 0
    the run of hi cells 0..0 ("000100"), row 1 the run 1..1 ("010200"), no exceptions."""
    return TP.from_table(TB.Table(-1, 1, 1, [[2, 1], [1, 2]]), epsilon=1.0,
                         encoding="compact")


def table_profile_set() -> dict:
    adc = P.Calibration(Fraction(33, 40950), Fraction(0))
    out = {"t-hand": hand_table_profile(),
           "t2-hand": hand_compact_profile(),
           "t-optimal-4bit": TP.build(-1.0, 1.0, 1.0, "optimal", 4),
           "t-optimal-6bit": TP.build(-40.0, 125.0, 4.0, "optimal", 6),
           "t-duchi": TP.build(20.0, 80.0, 1.0, "duchi", 1),
           "t-hm-3bit": TP.build(-40.0, 125.0, 2.0, "hm", 3),
           "t-pm-2bit": TP.build(23.5, 83.9, 0.5, "pm", 2),
           "t-three-outputs": TP.build(23.5, 83.9, 1.0, "three-outputs", 2),
           "t-optimal-3bit-adc": TP.build(0.0, 3.3, 1.0, "optimal", 3, calibration=adc)}
    hand = out["t-hand"]
    packed = out["t2-hand"].canonical()
    if (packed["levels"], packed["rows"]) != ("0000000100000002" "0000000100000002",
                                              "000100" "010200"):
        raise SystemExit("hand compact profile: reference gives %r" % (packed,))
    if (hand.values, hand.value_den, hand.worst_variance()) != ([-1, 2], 1, 9):
        raise SystemExit("hand table profile: reference gives a=%r Q=%r worst=%s; hand gives "
                         "a=[-1, 2] Q=1 worst=9" % (hand.values, hand.value_den,
                                                      hand.worst_variance()))
    return out


def _file(doc) -> str:
    return json.dumps(doc, sort_keys=True, indent=1) + "\n"


def table_profile_cases(profiles: dict) -> list:
    cases = []
    for pid, prof in profiles.items():
        cases.append({"id": pid, "kind": "profile", "comment": "valid table profile",
                      "result": "valid", "file": prof.to_json(),
                      "canonical": prof.canonical_bytes().decode(),
                      "fingerprint": prof.fingerprint, "anchors": prof.anchors,
                      "cells": prof.n_cells, "bits": prof.bits})
    hand = json.loads(profiles["t-hand"].to_json())
    base = json.loads(profiles["t-pm-2bit"].to_json())

    def bad(cid, comment, reason, doc=None, text=None):
        text = _file(doc) if text is None else text
        try:
            kinds.loads(text.encode("ascii"))
        except P.ProfileError as exc:
            if getattr(exc, "reason", None) != reason:
                raise SystemExit("table vector %s: refused for %r (%s), intended %r"
                                 % (cid, exc.reason, exc, reason))
        else:
            raise SystemExit("table vector %s: accepted, intended %r" % (cid, reason))
        cases.append({"id": cid, "kind": "profile", "comment": comment, "result": "invalid",
                      "reason": reason, "file": text})

    rh = rehashed
    good = _file(base)
    pad = TP.MAX_TABLE_FILE + 1 - len(good)
    bad("t-size", "a valid table file padded with spaces to MAX_TABLE_FILE + 1 bytes", "size",
        text=good[:-2] + " " * pad + good[-2:])
    bad("t-json-duplicate", "a duplicated key", "json",
        text=good.replace('"bits": ', '"bits": 2,\n "bits": ', 1))
    bad("t-json-escape", "a backslash escape in a string", "json",
        text=good.replace('"zeal-table/1"', '"zeal-table/1\\u0041"', 1))
    bad("t-type-float", "value_den as a JSON float", "type",
        text=good.replace('"value_den": %d' % base["value_den"],
                          '"value_den": %d.0' % base["value_den"], 1))
    bad("t-format", "format zeal-table/3; the sniff sees zeal-table/: a table file, refused "
        "by its format check", "format", rh(dict(base, format="zeal-table/3")))
    bad("t-missing", "no value_den", "missing",
        {k: v for k, v in base.items() if k != "value_den"})
    bad("t-missing-cal", "cal_gain without cal_offset", "missing", rh(dict(base, cal_gain="1")))
    bad("t-unknown", "an unknown key", "unknown", rh(dict(base, window=1)))
    bad("t-type-int", "anchors as a string", "type", rh(dict(base, anchors="2")))
    bad("t-type-hex", "hi in upper-case hex", "type",
        rh(dict(base, hi="0x" + base["hi"][2:].upper())))
    bad("t-type-fingerprint", "fingerprint of 63 hex digits", "type",
        dict(base, fingerprint=base["fingerprint"][:63]))
    bad("t-type-weights", "weights with an upper-case hex digit", "type",
        rh(dict(base, weights=base["weights"][:-1] + "A")))
    bad("t-type-values", "values with a decimal point", "type",
        rh(dict(base, values=base["values"] + ".")))
    bad("t-value-cal", "cal_gain with a decimal exponent beyond 64", "value",
        rh(dict(base, cal_gain="1e65", cal_offset="0")))
    bad("t-fingerprint", "value_den edited, fingerprint kept", "fingerprint",
        dict(base, value_den=base["value_den"] + 1))
    bad("t-value-nan", "lo NaN", "value", rh(dict(base, lo="0x7ff8000000000000")))
    bad("t-value-order", "lo and hi swapped", "value", rh(dict(base, lo=base["hi"],
                                                                hi=base["lo"])))
    bad("t-value-eps-zero", "epsilon 0", "value", rh(dict(base, epsilon="0x0000000000000000")))
    bad("t-value-eps-big", "epsilon 20.5", "value",
        rh(dict(base, epsilon="0x%016x" % float64_to_bits(20.5))))
    bad("t-value-anchors-0", "anchors 0", "value", rh(dict(base, anchors=0)))
    bad("t-value-anchors-65", "anchors 65", "value", rh(dict(base, anchors=65)))
    bad("t-value-cells-1", "cells 1", "value", rh(dict(base, cells=1)))
    bad("t-value-cells-65", "cells 65", "value", rh(dict(base, cells=65, bits=7)))
    bad("t-value-entries", "anchors 64, cells 5: (R+1)N = 325 > 320", "value",
        rh(dict(base, anchors=64, cells=5)))
    bad("t-value-weights-length", "weights one entry short", "value",
        rh(dict(base, weights=base["weights"][:-8])))
    bad("t-value-values-count", "values one integer short", "value",
        rh(dict(base, values="".join("%+d" % a for a in TP._parse_values(base["values"], base["cells"])[:-1]))))
    bad("t-value-minus-zero", "hand profile with -0 for a value", "value",
        rh(dict(hand, values="-0+2")))
    bad("t-value-leading-zero", "hand profile with +02", "value", rh(dict(hand, values="-1+02")))
    bad("t-value-unsigned", "hand profile with a value without its sign", "value",
        rh(dict(hand, values="1+2")))
    bad("t-value-big", "a value of 2^63", "value",
        rh(dict(hand, values="-1+%d" % (1 << 63))))
    bad("t-value-den-zero", "value_den 0", "value", rh(dict(hand, value_den=0)))
    bad("t-value-den-big", "value_den 2^63", "value", rh(dict(hand, value_den=1 << 63)))
    bad("t-value-row-zero", "a row of total 0", "value",
        rh(dict(hand, weights="00000002" "00000001" "00000000" "00000000")))
    bad("t-value-row-big", "a row of total 2^32 + 1", "value",
        rh(dict(hand, weights="ffffffff" "00000002" "00000001" "00000002")))
    bad("t-derived-bits", "bits 2 for 2 cells", "derived", rh(dict(hand, bits=2)))
    bad("t-privacy-zero", "a cell zero in one row only", "privacy",
        rh(dict(hand, weights="00000002" "00000001" "00000000" "00000003")))
    bad("t-privacy-ratio", "W = [[3, 1], [1, 3]]: ratio 3 > e", "privacy",
        rh(dict(hand, weights="00000003" "00000001" "00000001" "00000003")))
    bad("t-privacy-eps", "the hand table at epsilon 0.5 (ratio 2 > e^0.5)", "privacy",
        rh(dict(hand, epsilon="0x%016x" % float64_to_bits(0.5))))
    bad("t-unbiased", "hand profile with a = (-1, +3)", "unbiased", rh(dict(hand, values="-1+3")))
    compact_cases(profiles, bad)
    return cases


def compact_cases(profiles, bad):
    """Must-reject files of the compact version (zeal-table/2), one per rule it adds, on the
    hand table (levels (1, 1)/(2, 2), rows "000100" "010200") and the 4-bit design."""
    rh = rehashed
    hand = json.loads(profiles["t2-hand"].to_json())
    big = json.loads(profiles["t-optimal-4bit"].to_json())
    lv = "0000000100000002" "0000000100000002"
    bad("t2-missing", "zeal-table/2 without rows", "missing",
        rh({k: v for k, v in hand.items() if k != "rows"}))
    bad("t2-unknown", "zeal-table/2 with a weights key as well", "unknown",
        rh(dict(hand, weights="00000002" "00000001" "00000001" "00000002")))
    bad("t2-type-rows", "rows with an upper-case hex digit", "type",
        rh(dict(hand, rows="000100" "0102A0")))
    bad("t2-value-levels", "levels one cell short", "value", rh(dict(hand, levels=lv[:16])))
    bad("t2-value-rows-short", "rows ends inside row 1's record", "value",
        rh(dict(hand, rows="000100" "0102")))
    bad("t2-value-rows-odd", "rows of an odd length", "value",
        rh(dict(hand, rows="000100" "010200" "0")))
    bad("t2-value-rows-extra", "a third record for two anchors", "value",
        rh(dict(hand, rows="000100" "010200" "000000")))
    bad("t2-value-run", "a run with a > b (cells 1..0)", "value",
        rh(dict(hand, rows="010000" "010200")))
    bad("t2-value-run-cells", "a run ending past the cells (b = 3 > N = 2)", "value",
        rh(dict(hand, rows="000100" "010300")))
    bad("t2-value-exceptions", "row 0 lists 5 exceptions (at most 4)", "value",
        rh(dict(hand, rows="000105" + "0000000002" * 5 + "010200")))
    bad("t2-value-exception-order", "row 0's exception cells not ascending", "value",
        rh(dict(hand, rows="000002" "0100000001" "0000000002" "010200")))
    bad("t2-value-exception-cell", "an exception in cell 2 of 2", "value",
        rh(dict(hand, rows="000101" "0200000002" "010200")))
    bad("t2-value-totals", "row 1 total 4, row 0 total 3 (one total for all rows)", "value",
        rh(dict(hand, rows="000100" "000200")))
    bad("t2-privacy-ratio", "levels (1, 3) in both cells: W = [[3, 1], [1, 3]], ratio 3 > e",
        "privacy", rh(dict(hand, levels="0000000100000003" * 2)))
    bad("t2-privacy-exception", "levels (4, 8) in both cells; row 1 lists cell 0 = 1 and "
        "cell 1 = 11: totals 12 and 12, cell 0's ratio 8 > e", "privacy",
        rh(dict(hand, levels="0000000400000008" * 2,
                rows="000100" "010202" "0000000001" "010000000b")))
    bad("t2-value-zero-total", "cell 1 zero in row 0 only (an exception 0): totals 2 and 3",
        "value", rh(dict(hand, rows="000101" "0100000000" "010200")))
    bad("t2-privacy-zero", "row 0 = (3, 0), row 1 = (1, 2): totals equal, cell 1 zero in "
        "row 0 only (and cell 0's ratio 3 > e)", "privacy",
        rh(dict(hand, rows="000002" "0000000003" "0100000000" "010200")))
    bad("t2-unbiased", "hand compact profile with a = (-1, +3)", "unbiased",
        rh(dict(hand, values="-1+3")))
    # the 4-bit design, its first row with 1 to 3 exceptions: the first exception's weight up
    # a unit and one more cell, listed one unit below its level: totals kept, the mean at
    # that anchor moved
    rows = bytes.fromhex(big["rows"])
    levels = bytes.fromhex(big["levels"])
    recs, o = [], 0
    while o < len(rows):
        k = rows[o + 2]
        recs.append(rows[o:o + 3 + 5 * k])
        o += 3 + 5 * k
    r = next(i for i, rec in enumerate(recs) if 1 <= rec[2] <= 3)
    a, b, k = recs[r][:3]
    ex = [(recs[r][3 + 5 * i], int.from_bytes(recs[r][4 + 5 * i:8 + 5 * i], "big"))
          for i in range(k)]
    ex[0] = (ex[0][0], ex[0][1] + 1)
    other = next(j for j in range(big["cells"]) if j not in [c for c, _ in ex]
                 and int.from_bytes(levels[8 * j:8 * j + 4], "big") > 0)
    level = int.from_bytes(levels[8 * other + (4 if a <= other < b else 0):][:4], "big")
    ex = sorted(ex + [(other, level - 1)])
    recs[r] = bytes([a, b, len(ex)]) + b"".join(bytes([c]) + w.to_bytes(4, "big")
                                                for c, w in ex)
    bad("t2-unbiased-design", "the 4-bit design, its first row with 1 to 3 exceptions: one "
        "weight up a unit, another down (totals kept, that anchor biased)", "unbiased",
        rh(dict(big, rows=b"".join(recs).hex())))


def table_vectors() -> dict:
    profiles = table_profile_set()
    cases = table_profile_cases(profiles)

    def add(cid, comment, pid, inputs, key=None, words=None, expect=None):
        prof = profiles[pid]
        src = CounterWords(key) if key is not None else ListWords(words)
        sampler = TableSampler(prof, src)
        outs = []
        for item in inputs:
            rec = Recorder(src)
            j = sampler.sample_exact(decode_input(prof, item), rec)
            outs.append({"j": j, "words_used": len(rec.used)})
        if expect is not None and outs != expect:  # hand-derived: the reference must agree
            raise SystemExit("hand case %s: reference gives %r, hand gives %r"
                             % (cid, outs, expect))
        cases.append(sample_case(cid, comment, pid, inputs, outs, sampler.clamped, key, words,
                                 kind="sample"))

    top, third = W - 1, W // 3
    # hand-derived (mechanism.md, "Table profiles"): W = [[2, 1], [1, 2]] on [-1, 1]
    add("t-hand-mid", "x=0: pos=1/2, word 0 < 2^63 -> row 1; UNIFORM(3): u=0 -> j=0", "t-hand",
        [d64(0.0)], words=[0, 0], expect=[{"j": 0, "words_used": 2}])
    add("t-hand-reject", "x=0: word 2^64-1 -> row 0; u=(2^64-1)//d=3 >= 3 rejected; "
        "word d gives u=1 < 2 -> j=0", "t-hand", [d64(0.0)], words=[top, top, third],
        expect=[{"j": 0, "words_used": 3}])
    add("t-hand-row0-cell1", "x=0: row 0; word 2d gives u=2 >= 2 -> j=1", "t-hand",
        [d64(0.0)], words=[top, 2 * third], expect=[{"j": 1, "words_used": 2}])
    add("t-hand-tie", "x=0: first word equals the digit 2^63, remainder 0 -> row 0; u=0 -> j=0",
        "t-hand", [d64(0.0)], words=[1 << 63, 0], expect=[{"j": 0, "words_used": 2}])
    add("t-hand-tie-twice", "x=2^-70: pos=1/2+2^-71, first digit 2^63 tied, remainder left; "
        "second digit 2^57 > word 0 -> row 1 after two words; u=0 -> j=0", "t-hand",
        [d64(2.0 ** -70)], words=[1 << 63, 0, 0], expect=[{"j": 0, "words_used": 3}])
    add("t-hand-ends", "x=-3 and x=1: clamped -3 -> pos 0 (one rounding word, row 0); x=hi -> "
        "pos 1 -> row 1", "t-hand", [d64(-3.0), d64(1.0)], words=[0, 0, top, 0],
        expect=[{"j": 0, "words_used": 2}, {"j": 0, "words_used": 2}])
    # the same hand cases on the hand table written compact: the same reports
    add("t2-hand-mid", "t-hand-mid on the compact hand table", "t2-hand",
        [d64(0.0)], words=[0, 0], expect=[{"j": 0, "words_used": 2}])
    add("t2-hand-row0-cell1", "t-hand-row0-cell1 on the compact hand table", "t2-hand",
        [d64(0.0)], words=[top, 2 * third], expect=[{"j": 1, "words_used": 2}])
    add("t2-hand-ends", "t-hand-ends on the compact hand table", "t2-hand",
        [d64(-3.0), d64(1.0)], words=[0, 0, top, 0],
        expect=[{"j": 0, "words_used": 2}, {"j": 0, "words_used": 2}])
    for pid, prof in profiles.items():
        lo, hi = Fraction(prof.lo), Fraction(prof.hi)
        if prof.calibration is not None:
            add(pid + "-raw", "raw counts through the exact calibration, incl. out of range",
                pid, [{"raw": r} for r in (0, 1, 1241, 2048, 4095, 5000)], key=key_for(pid))
        anchors = [float(lo + (hi - lo) * r / prof.anchors) for r in range(prof.anchors + 1)]
        anchors = [a for a in anchors if Fraction(a) == lo + (hi - lo) * round(
            (Fraction(a) - lo) * prof.anchors / (hi - lo)) / prof.anchors]
        xs = ([prof.lo, prof.hi, (prof.lo + prof.hi) / 2, prof.lo - 1.0, prof.hi + 1.0,
               prof.lo + (prof.hi - prof.lo) / 3, -0.0] + anchors[:6])
        add(pid + "-f64", "float64 readings: ends, middle, out of range (clamped), anchors "
            "exactly", pid, [d64(x) for x in xs], key=key_for(pid + "/f64"))
        add(pid + "-f32", "float32 readings (struct.pack('<f', x)) decoded exactly", pid,
            [d32(x) for x in xs], key=key_for(pid + "/f32"))
    return {"schema": "zeal-vectors/tables", "version": VERSION, "count": len(cases),
            "notes": "Table profiles (zeal-table/1 dense, zeal-table/2 compact; profile.md) "
                     "and the table sampler "
                     "(mechanism.md). kind 'profile': 'file' is the exact file text; valid "
                     "ones give canonical bytes, fingerprint, anchors, cells, bits; invalid "
                     "ones the reason code of the table check list. kind 'sample': 'profile' "
                     "names a valid profile case of this file; its inputs (float64 / float32 "
                     "bit patterns as hex, or raw counts) run in order through one generator "
                     "(key, 32 bytes hex) or an explicit word list ('words', 16 hex digits "
                     "each); expected per input: the cell j (the report, also its m-bit wire "
                     "value) and the words consumed; 'clamped' counts readings outside [lo, hi].",
            "cases": cases}


# ---- multi-attribute profiles (multi.md) -------------------------------------------------------
AARHUS = (("light", -1.0, 99.92), ("humidity", 23.5, 83.9), ("noise", 49.0, 101.0),
          ("temperature", -41.0, 37.45))


def multi_profile_set() -> dict:
    hand = MP.MultiProfile(epsilon=1.0, k=1, names=["t", "s"],
                           attributes=[hand_table_profile(), MP.Oue(2, 2 << 32)])
    hand = MP.loads(hand.to_json(), lambda i, fp: hand.attributes[i].to_json())
    adc = P.Calibration(Fraction(33, 40950), Fraction(0))
    mixed = MP.build([Numeric("temp", -40.0, 85.0, bits=8),
                      Numeric("hum", 0.0, 100.0, bits=3, mechanism="hm"),
                      Categorical("state", 5), Numeric("adc", 0.0, 3.3, bits=6),
                      Categorical("door", 2)], 5.0)
    # the calibrated attribute: rebuilt with its calibration (the builder takes none)
    atts = list(mixed.attributes)
    atts[3] = P.from_bits(0.0, 3.3, atts[3].epsilon, 6, calibration=adc)
    mixed = MP.MultiProfile(epsilon=5.0, k=2, names=mixed.names, attributes=atts)
    files = {a.fingerprint: a.to_json() for a in atts if a.kind != "oue"}
    mixed = MP.loads(mixed.to_json(), lambda i, fp: files.get(fp))
    wide = [Numeric("attribute-%06d" % i, -1.0 * (i + 1), 2.0 * (i + 1), bits=2 + i % 5)
            for i in range(12)] + [Categorical("category-%07d" % i, 63) for i in range(4)]
    out = {"m-hand": hand,
           "m-aarhus": MP.build([Numeric(n, lo, hi) for n, lo, hi in AARHUS], 1.0),
           "m-mixed-k2": mixed,
           "m-d1-oue": MP.build([Categorical("state", 3)], 0.5),
           "m-d16-k16": MP.build(wide, 16.0, k=16)}
    if (out["m-mixed-k2"].k, out["m-aarhus"].k, out["m-d16-k16"].index_bits) != (2, 1, 4):
        raise SystemExit("multi profiles: Eq. 12 or the index width changed")
    return out


def _attr_files(prof) -> dict:
    return {str(i): t for i, t in prof.attribute_files().items()}


def multi_profile_cases(profiles: dict) -> list:
    cases = []
    for pid, prof in profiles.items():
        cases.append({"id": pid, "kind": "profile", "comment": "valid multi profile",
                      "result": "valid", "header": prof.to_json(),
                      "attributes": _attr_files(prof),
                      "canonical": prof.canonical_bytes().decode(),
                      "fingerprint": prof.fingerprint, "d": prof.d, "k": prof.k,
                      "index_bits": prof.index_bits,
                      "value_bits": [prof.value_bits(j) for j in range(prof.d)],
                      "max_report_bits": prof.max_report_bits(),
                      "max_batch": prof.max_batch()})
    base_prof = profiles["m-mixed-k2"]
    base = json.loads(base_prof.to_json())
    files = _attr_files(base_prof)

    def bad(cid, comment, reason, doc=None, text=None, attrs=None):
        text = MP._header_text(doc) if text is None else text
        attrs = files if attrs is None else attrs
        try:
            loads_any(text.encode("ascii"), lambda i, fp: attrs.get(str(i)))
        except P.ProfileError as exc:
            if getattr(exc, "reason", None) != reason:
                raise SystemExit("multi vector %s: refused for %r (%s), intended %r"
                                 % (cid, exc.reason, exc, reason))
        else:
            raise SystemExit("multi vector %s: accepted, intended %r" % (cid, reason))
        cases.append({"id": cid, "kind": "profile", "comment": comment, "result": "invalid",
                      "reason": reason, "header": text, "attributes": attrs})

    rh = rehashed
    good = MP._header_text(base)
    bad("m-size", "a valid header padded with spaces to MAX_MULTI_FILE + 1 bytes", "size",
        text=good[:-2] + " " * (MP.MAX_MULTI_FILE + 1 - len(good)) + good[-2:])
    bad("m-json-duplicate", "a duplicated key", "json",
        text=good.replace('"k": ', '"k": 2,\n "k": ', 1))
    bad("m-type-float", "k as a JSON float", "type", text=good.replace('"k": 2', '"k": 2.0', 1))
    bad("m-format", "format zeal-multi/2, zeal-multi/1 in an unknown key (the sniff sees a "
        "multi header): refused by its format check", "format",
        rh(dict(base, format="zeal-multi/2", comment="zeal-multi/1")))
    bad("m-missing", "no k", "missing", {k: v for k, v in base.items() if k != "k"})
    bad("m-unknown", "an unknown key", "unknown", rh(dict(base, bits=0)))
    bad("m-type-int", "d as a string", "type", rh(dict(base, d="5")))
    bad("m-type-hex", "epsilon with an upper-case prefix 0X", "type",
        rh(dict(base, epsilon="0X" + base["epsilon"][2:])))
    bad("m-type-fingerprint", "fingerprint of 63 hex digits", "type",
        dict(base, fingerprint=base["fingerprint"][:63]))
    bad("m-type-names", "a name with '_' (outside the profile character set)", "type",
        rh(dict(base, names=base["names"].replace("temp", "te_p", 1))))
    bad("m-fingerprint", "k edited, fingerprint kept", "fingerprint", dict(base, k=1))
    bad("m-value-eps-zero", "epsilon 0", "value", rh(dict(base, epsilon="0x0000000000000000")))
    bad("m-value-eps-nan", "epsilon NaN", "value", rh(dict(base, epsilon="0x7ff8000000000000")))
    bad("m-value-eps-big", "epsilon 20.5", "value",
        rh(dict(base, epsilon="0x%016x" % float64_to_bits(20.5))))
    bad("m-value-d-0", "d 0", "value", rh(dict(base, d=0)))
    bad("m-value-d-17", "d 17", "value", rh(dict(base, d=17)))
    bad("m-value-k-0", "k 0", "value", rh(dict(base, k=0)))
    bad("m-value-k-big", "k 6 > d = 5", "value", rh(dict(base, k=6)))
    bad("m-value-names-count", "4 names for d = 5", "value",
        rh(dict(base, names=base["names"].rsplit(".", 1)[0])))
    bad("m-value-names-long", "a name of 17 characters", "value",
        rh(dict(base, names=base["names"].replace("temp", "t" * 17, 1))))
    bad("m-value-names-empty", "an empty name (two dots)", "value",
        rh(dict(base, names=base["names"].replace(".", "..", 1))))
    bad("m-value-names-same", "two names alike", "value",
        rh(dict(base, names=base["names"].replace("hum", "temp", 1))))
    items = base["attrs"].split(".")
    bad("m-value-attrs-count", "4 attrs items for d = 5", "value",
        rh(dict(base, attrs=".".join(items[:4]))))
    bad("m-value-attrs-kind", "an item starting 'q'", "value",
        rh(dict(base, attrs=".".join(["q" + items[0][1:]] + items[1:]))))
    bad("m-value-attrs-upper", "a fingerprint with an upper-case hex digit", "value",
        rh(dict(base, attrs=".".join([items[0][:-1] + "A"] + items[1:]))))
    bad("m-value-attrs-short", "an OUE item one hex digit short", "value",
        rh(dict(base, attrs=".".join(items[:2] + [items[2][:-1]] + items[3:]))))
    bad("m-value-oue-c1", "a categorical attribute of 1 value", "value",
        rh(dict(base, attrs=".".join(items[:2] + ["o01" + items[2][3:]] + items[3:]))))
    bad("m-value-oue-c64", "a categorical attribute of 64 values", "value",
        rh(dict(base, attrs=".".join(items[:2] + ["o40" + items[2][3:]] + items[3:]))))
    bad("m-attr-missing", "attribute 1's file is not there", "attr1:missing",
        rh(dict(base)), attrs={k: v for k, v in files.items() if k != "1"})
    a0 = json.loads(files["0"])
    bad("m-attr-fingerprint", "attribute 0's file edited (its own fingerprint check)",
        "attr0:fingerprint", rh(dict(base)),
        attrs=dict(files, **{"0": _file(dict(a0, threshold=a0["threshold"] - 1))}))
    bad("m-attr-json", "attribute 3's file is not JSON", "attr3:json", rh(dict(base)),
        attrs=dict(files, **{"3": "not json\n"}))
    bad("m-attr-derived", "attribute 0's threshold off by one, rehashed (the grid's derived "
        "check)", "attr0:derived", rh(dict(base)),
        attrs=dict(files, **{"0": _file(rh(dict(a0, threshold=a0["threshold"] - 1)))}))
    bad("m-attr-nested", "attribute 0's file is a multi header", "attr0:format",
        rh(dict(base)), attrs=dict(files, **{"0": good}))
    other = P.from_bits(-40.0, 85.0, 1.0, 8)
    bad("m-attr-other", "attribute 0's file is a valid grid, not the one the header names",
        "attr", rh(dict(base)), attrs=dict(files, **{"0": other.to_json()}))
    # privacy: the header's epsilon lowered below k * epsilon_0 (attribute files unchanged)
    low = float(base_prof.epsilon) * (1 - 2.0 ** -40)
    bad("m-privacy-numeric", "header epsilon 5(1 - 2^-40): 2 * epsilon_0 > epsilon", "privacy",
        rh(dict(base, epsilon="0x%016x" % float64_to_bits(low))))
    limit = P.exp_lower_bound(Fraction(base_prof.epsilon) / 2) * (1 << 32)
    over = int(limit) + 1
    bad("m-privacy-oue", "OUE ratio_num = floor(L(eps/k) 2^32) + 1", "privacy",
        rh(dict(base, attrs=".".join(items[:2] + ["o05%016x" % over] + items[3:]))))
    bad("m-privacy-oue-one", "OUE ratio_num = 2^32 (ratio 1: q = 1/2 = p, no information "
        "but not > 2^32)", "privacy",
        rh(dict(base, attrs=".".join(items[:2] + ["o05%016x" % (1 << 32)] + items[3:]))))
    bad("m-privacy-k", "k raised to 3 with the same files: 3 * epsilon_0 > epsilon", "privacy",
        rh(dict(base, k=3)))
    return cases


def _multi_sample(profiles, cases, cid, comment, pid, lines, key=None, words=None,
                  expect=None):
    prof = profiles[pid]
    src = CounterWords(key) if key is not None else ListWords(words)
    sampler = MP.MultiSampler(prof, src)
    outs = []
    for line in lines:
        rec = Recorder(src)
        rep = sampler.sample(line, rec)
        outs.append({"report": [[j, y] for j, y in rep], "words_used": len(rec.used)})
    if expect is not None and outs != expect:
        raise SystemExit("hand case %s: reference gives %r, hand gives %r" % (cid, outs, expect))
    case = {"id": cid, "kind": "sample", "comment": comment, "result": "valid", "profile": pid,
            "lines": lines, "expected": outs, "replaced": sampler.replaced,
            "clamped": sampler.clamped}
    if key is not None:
        case["key"] = key.hex()
    else:
        case["words"] = ["%016x" % w for w in words]
    cases.append(case)
    return [[tuple(p) for p in o["report"]] for o in outs]


def _h(x) -> str:
    return "%016x" % float64_to_bits(x)


def multi_vectors() -> dict:
    profiles = multi_profile_set()
    cases = multi_profile_cases(profiles)
    top, half = W - 1, 1 << 63
    third = W // 3
    # hand-derived (multi.md): d = 2, k = 1; attribute 0 the hand table W = [[2,1],[1,2]] on
    # [-1, 1], attribute 1 OUE c = 2, ratio 2 (q = 1/3)
    _multi_sample(profiles, cases, "m-hand-table", "UNIFORM(2): word 0 -> u = 0, S = {0}; "
                  "table at x = 0: pos 1/2, word 0 < 2^63 -> row 1; UNIFORM(3): u = 0 -> j = 0",
                  "m-hand", ["0000000000000000,1"], words=[0, 0, 0],
                  expect=[{"report": [[0, 0]], "words_used": 3}])
    _multi_sample(profiles, cases, "m-hand-oue", "UNIFORM(2): word 2^63 -> u = 1, S = {1}; "
                  "x = 1: bit 0 BERNOULLI(2^32, 3 2^32): word 0 < 2^64/3 -> 1; bit 1 (the "
                  "true value) BERNOULLI(1, 2): word 2^64-1 -> 0; y = 1", "m-hand",
                  ["0000000000000000,1"], words=[half, 0, top],
                  expect=[{"report": [[1, 1]], "words_used": 3}])
    _multi_sample(profiles, cases, "m-hand-oue-invalid", "categorical field 2 >= c: replaced "
                  "by 0; S = {1}; bit 0 (true) word 0 -> 1; bit 1 word third+1 > 2^64/3 -> 0; "
                  "y = 1", "m-hand", ["0000000000000000,2"], words=[half, 0, third + 1],
                  expect=[{"report": [[1, 1]], "words_used": 3}])
    _multi_sample(profiles, cases, "m-hand-fields", "a line of 3 fields for d = 2: every "
                  "attribute replaced (table at its midpoint 0, OUE at 0); S = {0}, row 1, "
                  "UNIFORM(3) word 2^64-1 rejected, then 2 third -> u = 2 -> j = 1", "m-hand",
                  ["0,1,2"], words=[0, 0, top, 2 * third],
                  expect=[{"report": [[0, 1]], "words_used": 4}])
    for pid, prof in profiles.items():
        rows = []
        for r in range(12):
            fields = []
            for j, a in enumerate(prof.attributes):
                if a.kind == "oue":
                    fields.append(str(r % a.c))
                else:
                    lo, hi = a.lo, a.hi
                    fields.append(_h(lo + (hi - lo) * ((r * 7 + j) % 11) / 10))
            rows.append(",".join(fields))
        _multi_sample(profiles, cases, pid + "-lines", "replay lines inside the ranges, "
                      "ends included", pid, rows, key=key_for(pid + "/multi"))
        edge = []
        num = [j for j, a in enumerate(prof.attributes) if a.kind != "oue"]
        cat = [j for j, a in enumerate(prof.attributes) if a.kind == "oue"]

        def line(change):
            fields = [("0" if a.kind == "oue" else _h((a.lo + a.hi) / 2))
                      for a in prof.attributes]
            for j, v in change.items():
                fields[j] = v
            return ",".join(fields)

        for j in num:
            a = prof.attributes[j]
            edge += [line({j: _h(a.lo - 1.0)}), line({j: _h(a.hi + 1.0)}),
                     line({j: "7ff8000000000000"}), line({j: "7ff0000000000000"}),
                     line({j: "%08x" % f32((a.lo + a.hi) / 2)}), line({j: "12x4"}),
                     line({j: " " + _h(a.hi) + " "}), line({j: "17"})]
        for j in cat:
            a = prof.attributes[j]
            edge += [line({j: str(a.c - 1)}), line({j: str(a.c)}), line({j: "-1"}),
                     line({j: "01"}), line({j: ""})]
        edge += [line({})[:-1] + "," + "0", ",".join(["0"] * (prof.d + 1)), ""]
        _multi_sample(profiles, cases, pid + "-edges", "out of range (clamped), NaN and "
                      "infinity (replaced), float32 patterns, bad fields, raw counts (valid only "
                      "with a calibration), categorical values out of the domain, a wrong "
                      "number of fields, an empty line", pid, edge, key=key_for(pid + "/edges"))
    # payloads
    for pid, prof in profiles.items():
        src = CounterWords(key_for(pid + "/payload"))
        sampler = MP.MultiSampler(prof, src)
        reps = []
        for r in range(64):
            fields = [str(r % a.c) if a.kind == "oue" else
                      _h(a.lo + (a.hi - a.lo) * (r % 9) / 8) for a in prof.attributes]
            reps.append(sampler.sample(",".join(fields)))
        count = min(64, prof.max_batch())
        for cid, chunk in ((pid + "-payload-1", reps[:1]), (pid + "-payload", reps[:count])):
            payload = MP.pack_multi(prof, chunk)
            if MP.unpack_multi(prof, payload, len(chunk)) != [list(r) for r in chunk]:
                raise SystemExit("payload %s does not round-trip" % cid)
            cases.append({"id": cid, "kind": "payload", "comment": "%d reports" % len(chunk),
                          "result": "valid", "profile": pid, "count": len(chunk),
                          "reports": [[[j, y] for j, y in r] for r in chunk],
                          "payload": payload.hex(),
                          "bits": sum(MP.report_bits(prof, r) for r in chunk)})

    def bad_payload(cid, comment, pid, payload, count, reason):
        try:
            MP.unpack_multi(profiles[pid], payload, count)
        except MP.PayloadError as exc:
            if exc.reason != reason:
                raise SystemExit("payload %s: refused for %r, intended %r"
                                 % (cid, exc.reason, reason))
        else:
            raise SystemExit("payload %s: accepted, intended %r" % (cid, reason))
        cases.append({"id": cid, "kind": "payload", "comment": comment, "result": "invalid",
                      "profile": pid, "count": count, "payload": payload.hex(),
                      "reason": reason})

    mk = profiles["m-mixed-k2"]
    ok = MP.pack_multi(mk, [[(0, 5), (2, 17)], [(1, 7), (4, 3)]])
    bad_payload("m-payload-short", "the last byte lost", "m-mixed-k2", ok[:-1], 2, "length")
    bad_payload("m-payload-long", "one byte more than the reports use", "m-mixed-k2",
                ok + b"\0", 2, "length")
    bad_payload("m-payload-count", "count 3 for two reports", "m-mixed-k2", ok, 3, "length")
    used = sum(MP.report_bits(mk, r) for r in [[(0, 5), (2, 17)], [(1, 7), (4, 3)]])
    if used % 8:
        bad_payload("m-payload-padding", "a padding bit set", "m-mixed-k2",
                    (int.from_bytes(ok, "little") | 1 << used).to_bytes(len(ok), "little"), 2,
                    "padding")
    bad_payload("m-payload-order", "indices 3 then 0 (k = 2): not ascending", "m-mixed-k2",
                _raw_payload(mk, [(3, 0), (0, 0)]), 1, "grid")
    bad_payload("m-payload-same", "indices 2 then 2 (k = 2): not strictly ascending",
                "m-mixed-k2", _raw_payload(mk, [(2, 0), (2, 0)]), 1, "grid")
    bad_payload("m-payload-index", "index 7 >= d = 5", "m-mixed-k2",
                _raw_payload(mk, [(0, 0), (7, 0)], widths=[None, 8]), 1, "grid")
    g = mk.attributes[0]
    if g.n_cells < 1 << g.bits:
        bad_payload("m-payload-grid", "attribute 0's offset N: outside its grid", "m-mixed-k2",
                    _raw_payload(mk, [(0, g.n_cells), (1, 0)]), 1, "grid")
    return {"schema": "zeal-vectors/multi", "version": VERSION, "count": len(cases),
            "notes": "Multi-attribute profiles (zeal-multi/1, multi.md). kind 'profile': "
                     "'header' is the header file's exact text, 'attributes' the attribute "
                     "files by index (attribute i beside the header as X.<i>.json); valid ones "
                     "give canonical bytes, fingerprint, d, k, index_bits, value_bits, "
                     "max_report_bits, max_batch; invalid ones the reason of the check list "
                     "(an attribute file's own reason prefixed attr<i>:). kind 'sample': "
                     "'profile' names a valid profile case; its replay 'lines' (d comma-"
                     "separated fields) run in order through one generator (key) or a word "
                     "list; expected per line: the report as [index, value] pairs (value: the "
                     "grid offset j = k - k_lo, the table cell, or the OUE bit vector) and the "
                     "words consumed; 'replaced' counts invalid values replaced (numeric: "
                     "(lo+hi)/2, categorical: 0), 'clamped' numeric readings outside [lo, hi]. "
                     "kind 'payload': 'count' reports packed as the DATA payload (hex), or an "
                     "invalid payload with the decoder's reason (length, padding, grid).",
            "cases": cases}


def _raw_payload(prof, pairs, widths=None) -> bytes:
    """One report's fields packed as given, unchecked (invalid payload vectors); widths[i]
    overrides pair i's value width (None: its attribute's)."""
    acc, pos = 0, 0
    for i, (j, y) in enumerate(pairs):
        acc |= j << pos
        pos += prof.index_bits
        w = widths[i] if widths and widths[i] is not None else prof.attributes[j].bits
        acc |= y << pos
        pos += w
    return acc.to_bytes((pos + 7) // 8, "little")


def render() -> dict:
    profiles = profile_set()
    return {"generator.json": generator_vectors(),
            "profiles.json": profile_vectors(profiles),
            "mechanism.json": mechanism_vectors(profiles),
            "tables.json": table_vectors(),
            "multi.json": multi_vectors()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare with the files")
    args = ap.parse_args()
    stale = []
    for name, doc in render().items():
        text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
        path = os.path.join(OUT, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not args.check:
                with open(path, "w") as fh:
                    fh.write(text)
        print("%-16s %4d cases %s" % (name, doc["count"], "(changed)" if old != text else ""))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
