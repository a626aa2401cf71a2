"""Conformance runner: the firmware's side of the cross-implementation vector tests.

Runs under MicroPython (unix port or a board's raw REPL) and under CPython. Reads one JSON
request per line on stdin, writes one JSON response per line on stdout:

    request   {"suite": S, "id": ID, "case": {...}, "profile": {...profile doc, optional},
               "items": {FIELD: COUNT, ...optional}}
    response  {"id": ID, "ok": true, "result": ...}  or  {"id": ID, "ok": false, "error": R}

Every line this program writes starts with "@@", and the first is @@{"ready": 1, ...}, so a
harness skips boot noise and can never mistake a traceback (MicroPython >= 1.27 prints
those to stdout) for a result. {"suite": "quit"} or end of input stops the loop.

Streaming (a board's heap holds no whole case: the largest request is 30 KB as one line,
the largest reply as large). A case's long lists do not travel in its request line:
  - "items": {FIELD: N} says the case's FIELD is a list of N items the runner pulls one at a
    time, in order, when the suite reads it: it writes @@{"id": ID, "more": FIELD} and reads
    the next item as one JSON line (so the host never writes more than one item ahead, and
    a UART's small receive buffer cannot overflow while the runner computes). The handler
    sees an Items object: iterate it once, or take len().
  - a result whose value for some key is a generator is streamed: each item it yields is
    written as @@{"id": ID, "item": ...} as soon as it is made, then the final reply
    carries the rest of the result and "items": KEY (the host puts the items back under
    KEY). A generator that raises Refused(reason) turns the reply into an error; items sent
    before it are dropped by the host. A Text value (a long string) goes the same way in
    pieces, @@{"id": ID, "part": str}, and "text": KEY (the host joins them).
A request line the heap cannot hold is answered {"id": null, "ok": false, "error":
"internal:MemoryError"} after its remaining bytes are skipped; the runner goes on.

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

# The suites' firmware modules are imported by the suite that needs them (and freed when the
# next suite starts, _unload): the runner itself holds only the zealfw package.

_MARK = "@@"


def emit(obj):
    sys.stdout.write(_MARK + json.dumps(obj) + "\n")
    flush = getattr(sys.stdout, "flush", None)
    if flush is not None:
        flush()


class Refused(Exception):
    """Raised by a streamed result's generator: the case's answer is (False, reason)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class Items:
    """A request's list field whose items are pulled from the host one at a time (see the
    module doc): iterate it once, in order; len() is the count the request announced."""

    def __init__(self, rid, field, count):
        self._rid = rid
        self._field = field
        self._count = count
        self._taken = 0

    def __len__(self):
        return self._count

    def __iter__(self):
        while self._taken < self._count:
            yield self.next()

    def next(self):
        if self._taken >= self._count:
            raise IndexError("no more items")
        self._taken += 1
        emit({"id": self._rid, "more": self._field})
        line = sys.stdin.readline()
        if not line:
            raise EOFError("input ended inside a streamed request")
        return json.loads(line)


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
    from zealfw.words import CounterWords

    case = req["case"]
    gen = CounterWords(unhexlify(case["key"]))
    return True, ["%016x" % gen.next() for _ in range(case["n"])]


def _profiles(req):
    from zealfw import profile as _prof

    try:
        p = _prof.from_doc(req["profile"])
    except _prof.ProfileError as exc:
        return False, exc.reason
    return True, {"canonical": p.canonical.decode(), "fingerprint": p.fingerprint}


def _decode(p, item):
    from zealfw import mechanism as _mech
    from zealfw import reference as _ref

    if "float64" in item:
        return _ref.decode_float64(int(item["float64"], 16))
    if "float32" in item:
        return _ref.decode_float32(int(item["float32"], 16))
    if "float32_le" in item:  # the 4 bytes of struct.pack('<f', x), as hex
        return _ref.decode_float32(_ref.float32_bits_from_bytes(unhexlify(item["float32_le"])))
    if "raw" in item:
        return _ref.decode_raw(p, item["raw"])
    raise _mech.ReadingError("type", "unknown input kind")


def _mechanism(req):
    from zealfw import mechanism as _mech
    from zealfw import profile as _prof
    from zealfw.words import CounterWords

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
    res = {"clamped": 0}

    def outputs():  # streamed (see the module doc)
        for xn, xd in readings:
            before = source.used()
            k = z.perturb(xn, xd)
            yield {"k": k, "bits": "%016x" % z.to_bits(k), "low": z.low(k),
                   "words_used": source.used() - before}
        res["clamped"] = z.clamped
    res["outputs"] = outputs()
    return True, res


_SUITES = {"generator": _generator, "profiles": _profiles, "mechanism": _mechanism}


_KEEP = None  # the modules loaded with the runner itself (set by main)


def _unload():
    """Free the modules the previous suite loaded (its conformance_<S> and the zealfw modules
    it imported): the runner then holds one suite's code at a time, as a board's heap must
    (only their interned names stay)."""
    if _KEEP is None:
        return
    import zealfw

    for name in list(sys.modules):
        if name not in _KEEP:
            del sys.modules[name]
            if name.startswith("zealfw."):
                try:
                    delattr(zealfw, name[7:])
                except AttributeError:
                    pass
    gc.collect()


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


class Text:
    """A result value streamed as the pieces of one string (`pieces`: an iterable of str),
    e.g. a long hex payload: no block as long as the whole string is ever needed."""

    def __init__(self, pieces):
        self.pieces = pieces


def _gen():
    yield


_GENERATOR = type(_gen())


def _reply(rid, ok, res):
    """Write the answer; a result holding a generator (or a Text) streams it first."""
    if not ok:
        emit({"id": rid, "ok": False, "error": res})
        return
    key = None
    if type(res) is dict:
        for k in res:
            if type(res[k]) is _GENERATOR or type(res[k]) is Text:
                key = k
                break
    if key is None:
        emit({"id": rid, "ok": True, "result": res})
        return
    value = res.pop(key)
    kind = "item"
    if type(value) is Text:
        kind = "part"
        value = value.pieces
    try:
        for item in value:
            emit({"id": rid, kind: item})
            item = None
    except Refused as exc:
        emit({"id": rid, "ok": False, "error": exc.reason})
        return
    emit({"id": rid, "ok": True, "result": res, ("items" if kind == "item" else "text"): key})


def _skip_line():
    # the rest of a request line the heap could not hold, a byte at a time
    read = getattr(sys.stdin, "read", None)
    while read is not None:
        c = read(1)
        if not c or c == "\n":
            return


def _request(readline):
    """The next request (a dict), None at the end of input, or False after a line that
    could not be read or parsed (already answered)."""
    try:
        line = readline()
    except MemoryError as exc:
        line = None
        gc.collect()
        emit({"id": None, "ok": False, "error": "internal:MemoryError:%s" % exc})
        _skip_line()
        return False
    if not line:
        return None
    if len(line) < 8 and not line.strip():  # a blank line (no strip() copy of a long one)
        return False
    try:
        req = json.loads(line)
    except MemoryError as exc:
        req = line = None
        gc.collect()
        emit({"id": None, "ok": False, "error": "internal:MemoryError:%s" % exc})
        return False
    except ValueError:
        req = None
    if type(req) is not dict:
        emit({"id": None, "ok": False, "error": "request"})
        return False
    return req


def main():
    global _KEEP
    _KEEP = set(sys.modules)
    emit({"ready": 1, "impl": sys.implementation.name, "firmware": list(VERSION),
          "stream": 1})
    readline = sys.stdin.readline
    suite = None
    while True:
        gc.collect()  # small heaps: start every request from a compacted heap
        req = _request(readline)
        if req is None:
            break
        if req is False:
            continue
        if req.get("suite") == "quit":
            emit({"bye": 1})
            break
        if req.get("suite") != suite:
            suite = req.get("suite")
            _unload()
        _serve(req)
        req = None


def _where(exc):
    """' at File "...", line N, in f': the innermost frame of exc's traceback (MicroPython's
    print_exception), or "" where there is none."""
    try:
        import io

        buf = io.StringIO()
        sys.print_exception(exc, buf)
        lines = [ln.strip() for ln in buf.getvalue().splitlines() if ln.strip().startswith("File")]
        return " at " + lines[-1] if lines else ""
    except Exception:  # CPython (no print_exception), or no heap left even now
        return ""


def _serve(req):
    # one request, answered; a function of its own, so that nothing of the case (its
    # profile text, its sampler) stays referenced from main's frame while the next request
    # is read
    rid = req.get("id")
    items = req.pop("items", None)
    if type(items) is dict:
        case = req.get("case")
        if type(case) is not dict:
            case = req["case"] = {}
        for field in items:
            case[field] = Items(rid, field, items[field])
        case = None
    items = None
    try:
        ok, res = handle(req)
        req = None
        _reply(rid, ok, res)
    except MemoryError as exc:
        req = res = None
        gc.collect()
        emit({"id": rid, "ok": False, "error": "internal:MemoryError:%s%s" % (exc, _where(exc))})
    except Exception as exc:  # report, keep serving the next request
        req = res = None
        emit({"id": rid, "ok": False, "error": "internal:%s:%s" % (type(exc).__name__, exc)})


if __name__ == "__main__":
    # run as a script: the suite modules import this file as "runner" (Refused, Text,
    # ListWords), so the loop runs from that one copy of its classes
    import runner

    runner.main()
