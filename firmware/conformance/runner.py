"""Conformance runner: the firmware's side of the cross-implementation vector tests.

Runs under MicroPython (unix port or a board's raw REPL) and under CPython. Reads one JSON
request per line on stdin, writes one JSON response per line on stdout:

    request   {"suite": S, "id": ID, "case": {...}, "profile": {...profile doc, optional}}
    response  {"id": ID, "ok": true, "result": ...}  or  {"id": ID, "ok": false, "error": R}

Every line this program writes starts with "@@", and the first is @@{"ready": 1, ...}, so a
harness skips boot noise and can never mistake a traceback (MicroPython >= 1.27 prints
those to stdout) for a result. {"suite": "quit"} or end of input stops the loop.

Suites (the case holds inputs only; the harness keeps the expected values):
  generator  case {"key": hex, "n": N}               -> ["%016x" word, ...]
  profiles   profile doc in "profile"                -> {"canonical": str, "fingerprint": hex}
                                                        or error = ProfileError reason
  mechanism  case {"inputs": [...], "key": hex | "words": [hex, ...]}, profile doc
             -> {"outputs": [{"k", "bits", "low", "words_used"}], "clamped": n}
                or error = "nan" / "inf" / "calibration" / "type" / "profile:<reason>"
  other S    dispatched to module conformance_<S>: handle(request) -> (ok, result_or_reason),
             the request with the case's fields also copied to its top level

This is vector mode: generator keys come from the request. It is a test program and never
part of the sampling loop.
"""
import gc
import sys
import json
from binascii import unhexlify

from zealfw import VERSION
from zealfw import mechanism as _mech
from zealfw import profile as _prof
from zealfw.words import CounterWords

_MARK = "@@"


def emit(obj):
    sys.stdout.write(_MARK + json.dumps(obj) + "\n")
    flush = getattr(sys.stdout, "flush", None)
    if flush is not None:
        flush()


class ListWords:
    """Words from an explicit list (crafted vectors); raises IndexError when exhausted."""

    def __init__(self, words):
        self.words = words
        self.index = 0

    def __call__(self):
        w = self.words[self.index]
        self.index += 1
        return w

    def used(self):
        return self.index


def _generator(req):
    case = req["case"]
    gen = CounterWords(unhexlify(case["key"]))
    return True, ["%016x" % gen.next() for _ in range(case["n"])]


def _profiles(req):
    try:
        p = _prof.from_doc(req["profile"])
    except _prof.ProfileError as exc:
        return False, exc.reason
    return True, {"canonical": p.canonical.decode(), "fingerprint": p.fingerprint}


def _decode(p, item):
    if "float64" in item:
        return _mech.decode_float64(int(item["float64"], 16))
    if "float32" in item:
        return _mech.decode_float32(int(item["float32"], 16))
    if "float32_le" in item:  # the 4 bytes of struct.pack('<f', x), as hex
        return _mech.decode_float32(_mech.float32_bits_from_bytes(unhexlify(item["float32_le"])))
    if "raw" in item:
        return _mech.decode_raw(p, item["raw"])
    raise _mech.ReadingError("type", "unknown input kind")


def _mechanism(req):
    try:
        p = _prof.from_doc(req["profile"])
    except _prof.ProfileError as exc:
        return False, "profile:" + exc.reason
    case = req["case"]
    try:  # every input is decoded before any word is drawn
        readings = [_decode(p, item) for item in case["inputs"]]
    except _mech.ReadingError as exc:
        return False, exc.reason
    if "key" in case:
        source = CounterWords(unhexlify(case["key"]))
        draw = source.next
    else:
        source = ListWords([int(w, 16) for w in case.get("words", ())])
        draw = source
    z = _mech.Zeal(p, draw)
    out = []
    for xn, xd in readings:
        before = source.used()
        k = z.perturb(xn, xd)
        out.append({"k": k, "bits": "%016x" % z.to_bits(k), "low": z.low(k),
                    "words_used": source.used() - before})
    return True, {"outputs": out, "clamped": z.clamped}


_SUITES = {"generator": _generator, "profiles": _profiles, "mechanism": _mechanism}


def handle(req):
    suite = req.get("suite")
    fn = _SUITES.get(suite)
    if fn is not None:
        return fn(req)
    if type(suite) is not str or not suite.isalpha():
        return False, "unknown_suite"
    try:
        mod = __import__("conformance_" + suite)
    except ImportError:
        return False, "unknown_suite"
    # Extension handlers get the case's fields at top level (conformance_wire reads "op"
    # and "fields") as well as the envelope's suite, id and case.
    sub = {}
    case = req.get("case")
    if type(case) is dict:
        for key in case:
            sub[key] = case[key]
    for key in req:
        sub[key] = req[key]
    return mod.handle(sub)


def main():
    emit({"ready": 1, "impl": sys.implementation.name, "firmware": list(VERSION)})
    readline = sys.stdin.readline
    while True:
        gc.collect()  # small heaps: start every request from a compacted heap
        line = readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            emit({"id": None, "ok": False, "error": "request"})
            continue
        if type(req) is not dict:
            emit({"id": None, "ok": False, "error": "request"})
            continue
        if req.get("suite") == "quit":
            emit({"bye": 1})
            break
        rid = req.get("id")
        line = None
        try:
            ok, res = handle(req)
        except MemoryError:
            ok, res = False, "internal:MemoryError"
        except Exception as exc:  # report, keep serving the next request
            ok, res = False, "internal:%s:%s" % (type(exc).__name__, exc)
        if ok:
            emit({"id": rid, "ok": True, "result": res})
        else:
            emit({"id": rid, "ok": False, "error": res})


if __name__ == "__main__":
    main()
