# Multi-attribute conformance on the device: handle(request) -> (ok, result | reason).
#
# A request is a case of shared_spec/vectors/multi.json as zeal.board.conformance_multi
# builds it: the header's text and the attribute files by index, then kind "profile" (the
# checks), "sample" (replay lines through the device's tuple source and zealfw.msample.Zeal,
# as zealfw.main's loop feeds them) or "payload" (reports packed by zealfw.msample.Sender).
# Lines and reports arrive, and a sample's outputs leave, one at a time (runner.py's
# streaming): a case never holds its lines or its outputs in memory together.
from binascii import hexlify, unhexlify
from io import BytesIO

from zealfw import forget, mprofile
from zealfw import msample
from zealfw import profile
from zealfw.src_tuple import Source
from zealfw.words import CounterWords
from runner import ListWords as _ListWords  # loaded before any suite module
from runner import Text as _Text


class _Fields:
    pass


class _LineStream:
    """The replay lines of a case as the tuple source reads a file (readinto), each ended
    by a newline; a line is taken from `lines` (the runner's streamed Items) only when the
    source reaches it, so one line is in memory at a time."""

    def __init__(self, lines):
        self._it = iter(lines)
        self._cur = b""
        self._pos = 0

    def readinto(self, buf):
        n = 0
        while n < len(buf):
            if self._pos >= len(self._cur):
                self._cur = b""
                try:
                    line = next(self._it)
                except StopIteration:
                    break
                self._cur = line.encode() + b"\n"
                line = None
                self._pos = 0
            buf[n] = self._cur[self._pos]
            self._pos += 1
            n += 1
        return n


def _load(request):
    header = request["header"].encode()
    attrs = request.get("attributes", {})

    def fetch(i):
        t = attrs.get(str(i))
        return None if t is None else t.encode()
    try:
        if header.find(b"zeal-multi/1", 0, 503) >= 0:
            return mprofile.loads(header, fetch)
        profile.loads(header)
        return None
    finally:
        # the table loader (imported for a table attribute) is not needed once the profile
        # is loaded: freed, as the device frees its loaders, so that the next request line
        # finds the heap the sampler left (the d = 16 cases' lines are up to 7 KB)
        forget("tprofile")


def _widths(fields):
    return [a[0] if len(a) == 2 else a[7] for a in fields[3]]


def _invalid(fields, src):
    # values the sampler replaces (every one, sampled or not): the host's `replaced`
    n = 0
    attrs = fields[3]
    for j in range(fields[0]):
        a = attrs[j]
        kind = src.kinds[j]
        v = src.vals[j]
        if len(a) == 2:
            ok = kind == 0 and 0 <= v < a[0]
        elif kind == 2:
            ok = (v >> 20) & 0x7FF != 0x7FF
        elif kind == 1:  # a float32 pattern's high 16 bits (its low 16 in src.los)
            ok = (v >> 7) & 0xFF != 0xFF
        else:
            ok = kind == 0 and a[8] is not None
        if not ok:
            n += 1
    return n


def handle(request):
    try:
        fields = _load(request)
    except profile.ProfileError as exc:
        return False, exc.reason
    if fields is None:
        return False, "not a multi profile"
    d, k, ib, attrs, bits, fp = fields
    if request["kind"] == "profile":
        batch = 13264 // bits
        return True, {"fingerprint": fp, "d": d, "k": k, "index_bits": ib,
                      "value_bits": _widths(fields), "max_report_bits": bits,
                      "max_batch": 255 if batch > 255 else (batch if batch > 1 else 1)}
    f = _Fields()
    f.fields = fields
    if request["kind"] == "payload":
        reports = request["reports"]
        s = msample.Sender(BytesIO(), bits, batch=255, fingerprint=fp)
        z = _Fields()
        z._ib = ib
        z._w = _widths(fields)
        for rep in reports:
            z.sel = bytearray([p[0] for p in rep])
            z.val = [p[1] for p in rep]
            s.add(z)
        n = (s._bitpos + 7) // 8
        body = s._body
        s = z = None

        def pieces():  # hex in 128-byte pieces (runner.Text): no 2 n-byte string at once
            for i in range(4, 4 + n, 128):
                yield hexlify(body[i:(i + 128 if i + 128 < 4 + n else 4 + n)]).decode()
        return True, {"payload": _Text(pieces())}
    if "key" in request:
        source = CounterWords(unhexlify(request["key"]))
    else:
        source = _ListWords([int(w, 16) for w in request.get("words", ())])
    z = msample.Zeal(f, source)
    cats = [a[0] if len(a) == 2 else 0 for a in attrs]
    lines = request["lines"]
    n = len(lines)
    src = Source(d, None, _LineStream(lines), None, cats)
    res = {"replaced": 0, "clamped": 0}

    def outputs():  # streamed by the runner: a line pulled, its report sent, the next
        for r in range(n):
            src.read()
            res["replaced"] += _invalid(fields, src)
            before = source.used()
            z.perturb_raw(src)
            yield {"report": [[z.sel[i], z.val[i]] for i in range(k)],
                   "words_used": source.used() - before}
        res["clamped"] = z.clamped
    res["outputs"] = outputs()
    return True, res
