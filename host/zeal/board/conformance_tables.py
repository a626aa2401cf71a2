"""The "tables" conformance suite (shared_spec/vectors/tables.json): table profiles
("zeal-table/1") and the table sampler through every implementation.

Cases of kind "profile" send the exact file text; a device loads it with its dispatching
loader (zealfw.profile.loads: the sniff rule, then zealfw.tprofile) and answers the
fingerprint, anchors, cells and bits, or the reason code of the table check list. Cases of
kind "sample" send the named profile's file text, the inputs (float64 / float32 bit patterns
as hex, raw counts) and a generator key or an explicit word list; the answer per input is
the cell j and the words consumed, then the clamped count. The expected values stay here.
The firmware side is firmware/conformance/conformance_tables.py; `handle` below is the host
side (zeal.mechanism.table_profile and table_sampler) for target "cpython".
"""
import json
import os

from .firmware import ROOT

VECTORS = os.path.join(ROOT, "shared_spec", "vectors", "tables.json")
_FILES = {}


def _profile_file(name):
    if not _FILES:
        with open(VECTORS) as fh:
            for case in json.load(fh)["cases"]:
                if case["kind"] == "profile":
                    _FILES[case["id"]] = case["file"]
    return _FILES[name]


def request(case):
    """The inputs of a case (never its expected answers)."""
    if case["kind"] == "profile":
        return {"kind": "profile", "file": case["file"]}
    req = {"kind": "sample", "file": _profile_file(case["profile"]), "inputs": case["inputs"]}
    for key in ("key", "words"):
        if key in case:
            req[key] = case[key]
    return req


def check(case, resp):
    """(passed, detail) for one reply (resp: the runner's reply dict)."""
    if case["result"] != "valid":
        if resp.get("ok"):
            return False, "accepted a must-reject case (reason %s)" % case["reason"]
        got = resp.get("error")
        if got == case["reason"]:
            return True, "rejected: %s" % got
        return False, "rejected with %r, vector says %r" % (got, case["reason"])
    if not resp.get("ok"):
        return False, "error %r" % resp.get("error")
    got = resp["result"]
    if case["kind"] == "profile":
        want = {k: case[k] for k in ("fingerprint", "anchors", "cells", "bits")}
        have = {k: got.get(k) for k in want}
        if have != want:
            return False, "got %r, want %r" % (have, want)
        return True, "fingerprint, anchors, cells, bits"
    outs = got.get("outputs", [])
    if len(outs) != len(case["expected"]):
        return False, "%d outputs for %d inputs" % (len(outs), len(case["expected"]))
    for i, (g, w) in enumerate(zip(outs, case["expected"])):
        for field in ("j", "words_used"):
            if g.get(field) != w[field]:
                return False, "input %d: %s %r, want %r" % (i, field, g.get(field), w[field])
    if got.get("clamped") != case["clamped"]:
        return False, "clamped %r, want %r" % (got.get("clamped"), case["clamped"])
    return True, "%d cells bit-exact" % len(outs)


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import InputError, ProfileError
    from ..mechanism import table_profile as TP
    from ..mechanism.scalar import (reading_from_float32_bits, reading_from_float64_bits,
                                    reading_from_raw)
    from ..mechanism.table_sampler import TableSampler
    from ..mechanism.words import CounterWords, ListWords, Recorder
    from ..mechanism import profile as P

    case = req.get("case", req)
    try:
        prof = P.loads(case["file"].encode("ascii", "surrogateescape"))
    except ProfileError as exc:
        return False, getattr(exc, "reason", None) or "unclassified:%s" % exc
    if case["kind"] == "profile":
        if not isinstance(prof, TP.TableProfile):
            return False, "not a table profile"
        return True, {"fingerprint": prof.fingerprint, "anchors": prof.anchors,
                      "cells": prof.n_cells, "bits": prof.bits,
                      "canonical": prof.canonical_bytes().decode()}
    try:
        xs = []
        for item in case["inputs"]:
            if "float64" in item:
                xs.append(reading_from_float64_bits(int(item["float64"], 16)))
            elif "float32" in item:
                xs.append(reading_from_float32_bits(int(item["float32"], 16)))
            else:
                xs.append(reading_from_raw(prof, item["raw"]))
    except InputError as exc:
        return False, getattr(exc, "reason", None) or "unclassified:%s" % exc
    source = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
              else ListWords(int(w, 16) for w in case.get("words", ())))
    sampler = TableSampler(prof, source)
    outs = []
    for x in xs:
        rec = Recorder(source)
        outs.append({"j": sampler.sample_exact(x, rec), "words_used": len(rec.used)})
    return True, {"outputs": outs, "clamped": sampler.clamped}
