"""The "tables" conformance suite (shared_spec/vectors/tables.json): table profiles
("zeal-table/1") and the table sampler through every implementation.

Cases of kind "profile" send the exact file text (a long one in parts, which the device
writes to a file and loads from there: `request`); a device loads it with its dispatching
loader (zealfw.profile.loads or .load: the sniff rule, then zealfw.tprofile) and answers the
fingerprint, anchors, cells and bits, or the reason code of the table check list. Cases of
kind "sample" send the named profile's file text, the inputs (float64 / float32 bit patterns
as hex, raw counts) and a generator key or an explicit word list; the answer per input is
the cell j and the words consumed, then the clamped count. The expected values stay here.
The firmware side is firmware/conformance/conformance_tables.py; `handle` below is the host
side (zeal.mechanism.table.profile and table_sampler) for target "cpython".
"""
import os

from ..mechanism import kinds
from .conformance_cases import (fields_differ, file_request, outputs_differ, readings, reason_of,
                                settled, word_source)
from ..contract import VECTORS as VECTORS_DIR

VECTORS = os.path.join(VECTORS_DIR, "tables.json")


PART = 512          # a profile file longer than 2 parts travels in parts of this many characters


def request(case):
    """The inputs of a case (never its expected answers). A long profile file (a compact
    table, or the must-reject one of MAX_TABLE_FILE + 1 bytes) is sent as "parts": the
    runner writes them to a file on the device and loads that (the loader's own bounded
    read), so that no request line holds the whole text."""
    req = file_request(case, VECTORS, "sample")
    text = req.get("file")
    if text is not None and len(text) > 2 * PART:
        req = dict(req)
        del req["file"]
        req["parts"] = [text[i:i + PART] for i in range(0, len(text), PART)]
    return req


def check(case, resp):
    """(passed, detail) for one reply (resp: the runner's reply dict)."""
    verdict = settled(case, resp)
    if verdict is not None:
        return verdict
    got = resp["result"]
    if case["kind"] == "profile":
        differ = fields_differ(got, case, ("fingerprint", "anchors", "cells", "bits"))
        return (False, differ) if differ else (True, "fingerprint, anchors, cells, bits")
    differ = outputs_differ(got, case, ("j", "words_used"), totals=("clamped",))
    return (False, differ) if differ else (True, "%d cells bit-exact" % len(got["outputs"]))


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import InputError, ProfileError
    from ..mechanism.table.sampler import TableSampler
    from ..mechanism.core.words import Recorder

    case = req.get("case", req)
    text = case["file"] if "file" in case else "".join(case["parts"])
    try:
        prof = kinds.loads(text.encode("ascii", "surrogateescape"))
    except ProfileError as exc:
        return False, reason_of(exc)
    if case["kind"] == "profile":
        if kinds.of(prof) is not kinds.TABLE:  # (this suite's own kind)
            return False, "not a table profile"
        return True, {"fingerprint": prof.fingerprint, "anchors": prof.anchors,
                      "cells": prof.n_cells, "bits": prof.bits,
                      "canonical": prof.canonical_bytes().decode()}
    try:
        xs = readings(prof, case["inputs"])
    except InputError as exc:
        return False, reason_of(exc)
    source = word_source(case)
    sampler = TableSampler(prof, source)
    outs = []
    for x in xs:
        rec = Recorder(source)
        outs.append({"j": sampler.sample_exact(x, rec), "words_used": len(rec.used)})
    return True, {"outputs": outs, "clamped": sampler.clamped}
