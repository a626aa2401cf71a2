# Table conformance on the device: handle(request) -> (ok, result | reason).
#
# A request is a case of shared_spec/vectors/tables.json as zeal.board.conformance_tables
# builds it: kind "profile" with the exact file text, or kind "sample" with the profile's
# file text, inputs ({"float64": hex} / {"float32": hex} / {"raw": int}) and a generator key
# or an explicit word list. The file goes through the device's dispatching loader
# (zealfw.profile.loads: the sniff rule, then zealfw.tprofile); the sampler is
# zealfw.tsample.Zeal built from the fields zealfw.tprofile.numbers gives the main loop. The
# inputs arrive and the outputs leave one at a time (runner.py's streaming): a reading the
# device refuses (nan, inf, ...) ends the case with its reason.
from binascii import unhexlify

from zealfw import mechanism
from zealfw import profile
from zealfw import tsample
from zealfw.words import CounterWords
from runner import ListWords as _ListWords  # loaded before any suite module
from runner import Refused as _Refused


class _Fields:
    pass


_PATH = "zconf_table.json"


def _load(request):
    """The profile of the request: its file text, or its parts written to a file and loaded
    from there by the device's bounded read (no line or string holds a long file whole)."""
    if "file" in request:
        return profile.loads(request["file"])
    with open(_PATH, "w") as fh:
        for part in request["parts"]:
            fh.write(part)
    try:
        return profile.load(_PATH)
    finally:
        import os
        os.remove(_PATH)


def handle(request):
    try:
        p = _load(request)
    except profile.ProfileError as exc:
        return False, exc.reason
    if not hasattr(p, "sums"):
        return False, "not a table profile"
    if request["kind"] == "profile":
        return True, {"fingerprint": p.fingerprint, "anchors": p.anchors, "cells": p.n_cells,
                      "bits": p.bits}
    f = _Fields()
    names = ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent", "bits", "cal",
             "fingerprint", "table")
    values = (p.lo, p.hi, p.anchors + 1, 1, 1, 0, 0, p.bits, p.cal, p.fingerprint,
              (p.weights, p.n_cells, p.sums))
    for i in range(len(names)):
        setattr(f, names[i], values[i])
    if "key" in request:
        source = CounterWords(unhexlify(request["key"]))
        draw = source
    else:
        source = _ListWords([int(w, 16) for w in request.get("words", ())])
        draw = source
    z = tsample.Zeal(f, draw)
    res = {"clamped": 0}

    def outputs():  # streamed by the runner, an input pulled per output
        try:
            for item in request["inputs"]:
                before = source.used()
                if "float64" in item:
                    j = z.perturb_float64(int(item["float64"], 16))
                elif "float32" in item:
                    j = z.perturb_float32(int(item["float32"], 16))
                else:
                    j = z.perturb_raw(item["raw"])
                yield {"j": j, "words_used": source.used() - before, "low": z.low(j)}
        except mechanism.ReadingError as exc:
            raise _Refused(exc.reason)
        res["clamped"] = z.clamped
    res["outputs"] = outputs()
    return True, res
