# Tuple sources: a board of a multi-attribute or shuffle profile reads d values at once
# (shared_spec/multi.md and shuffle.md; the contract's "Sources and replay lines").
#   {"kind": "callable", "module": M, "function": F}  the callable returns a tuple or list
#                                                     of d values
#   {"kind": "replay"[, "file": F]}                   one line of d comma-separated fields
# read() returns the source itself (non-None) with, per value c, .kinds[c] (-1 invalid,
# 0 a raw integer, 1 a float32 or 2 a float64 pattern, each as its high half in .vals[c]
# and its low half in .los[c]) and .vals[c]; .kind is 0 (the loop hands the tuple to the
# sampler's perturb_raw). A value of the wrong type, a bad replay field: that value is
# invalid (the sampler replaces it: a numeric attribute by its midpoint, a categorical one
# by 0, a shuffle coordinate by 1/2). A tuple or line with the wrong number of values, and a
# blank line (nothing, or spaces and tabs: still a tick, so a gap's position never shows):
# every value invalid. An exception of the callable is a SourceError (the loop replaces the
# whole tuple). Lines end as in zealfw.src_replay (LF; CR ignored). Each field of a replay
# line is in the single replay syntax (zealfw.src_replay: 16 hex digits a float64 pattern,
# 8 a float32 pattern, else a decimal integer; a categorical attribute's field: digits only,
# below c); spaces around a field and spaces and tabs around the line are ignored; a line is
# at most 24 d + 8 bytes (a longer one: every value invalid).
# The host reads the same lines with zeal.mechanism.multi.profile.parse_line.
from .src_replay import parse_line
from .sources import SourceError, line_is


class Source:
    def __init__(self, d, fn=None, stream=None, path=None, cats=None):
        self._fn = fn
        self._cats = cats  # per value: c for a categorical attribute (digits only), else 0
        self.vals = [0] * d
        self.kinds = [-1] * d
        self.los = [0] * d
        self.kind = 0
        self.lo = 0
        self.stopped = False
        self.hello_requested = False
        self.from_file = fn is not None or path is not None
        self._file = None
        if fn is not None:
            import struct

            self._pack = struct.pack_into
            self._buf = bytearray(4)
        else:
            if path is not None:
                self._file = open(path, "rb")
                stream = self._file
            self._rd = stream.readinto
            self._line = bytearray(24 * d + 8)
            self._one = bytearray(1)

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _bad(self):
        kinds = self.kinds
        for c in range(len(kinds)):
            kinds[c] = -1
        self.kind = 0
        return self

    def read(self):
        if self._fn is not None:
            return self._call()
        line = self._line
        cap = len(line)
        one = self._one
        rd = self._rd
        while True:
            n = 0
            while True:
                got = rd(one)
                if not got:
                    if n == 0:
                        self.stopped = True
                        self.close()
                        return None
                    break
                c = one[0]
                if c == 10:
                    break
                if c == 13:
                    continue
                if n < cap:
                    line[n] = c
                n += 1
            if n > cap:
                return self._bad()  # too long: never cut and parsed
            s = 0
            while s < n and (line[s] == 32 or line[s] == 9):
                s += 1
            while n > s and (line[n - 1] == 32 or line[n - 1] == 9):
                n -= 1
            if s == n:  # a blank line: a tick like any other, every value invalid
                return self._bad()
            if self._file is None and line[0] == 33:  # "!": a control line
                if line_is(line, n, b"!stop"):
                    self.stopped = True
                    return None
                if line_is(line, n, b"!hello"):
                    self.hello_requested = True
                    continue
            return self._fields(line, s, n)

    def _fields(self, line, s, n):
        kinds = self.kinds
        d = len(kinds)
        commas = 0
        for i in range(s, n):
            if line[i] == 44:
                commas += 1
        if commas != d - 1:
            return self._bad()
        for c in range(d):
            e = s
            while e < n and line[e] != 44:
                e += 1
            nxt = e + 1
            while s < e and line[s] == 32:
                s += 1
            while e > s and line[e - 1] == 32:
                e -= 1
            if self._cats is not None and self._cats[c]:
                # a categorical field: a decimal integer of digits only, below c
                v = 0
                kinds[c] = 0 if s < e else -1
                while s < e:
                    ch = line[s]
                    if ch < 48 or ch > 57 or v >= 64:
                        kinds[c] = -1
                        break
                    v = v * 10 + ch - 48
                    s += 1
                self.vals[c] = v
            else:
                try:
                    self.vals[c] = parse_line(line, s, e, self)
                    kinds[c] = self.kind
                    self.los[c] = self.lo
                except SourceError:
                    kinds[c] = -1
            s = nxt
        self.kind = 0
        return self

    def _call(self):
        try:
            value = self._fn()
        except Exception as exc:  # a driver's I/O error must not stop the loop
            raise SourceError(str(exc))
        kinds = self.kinds
        d = len(kinds)
        if not isinstance(value, (tuple, list)) or len(value) != d:
            return self._bad()
        buf = self._buf
        for c in range(d):
            v = value[c]
            if isinstance(v, bool):
                kinds[c] = -1
            elif isinstance(v, int):
                kinds[c] = 0
                self.vals[c] = v
            elif isinstance(v, float):
                self._pack("<f", buf, 0, v)
                kinds[c] = 1  # the pattern's halves (zealfw.sources)
                self.vals[c] = buf[2] | (buf[3] << 8)
                self.los[c] = buf[0] | (buf[1] << 8)
            else:
                kinds[c] = -1
        self.kind = 0
        return self
