# Replayed readings as a Zeal source (sensor kind "replay"; see sources.py): one reading per
# line, from the serial input or from a file on the board.
from .sources import SourceError, line_is

try:
    from micropython import const
except ImportError:  # CPython: the transcript tests run the loop there too

    def const(x):
        return x

_LINE_MAX = const(40)  # = sources.LINE_MAX, inlined
_KIND_RAW = const(0)   # = sources.KIND_RAW, KIND_F32, KIND_F64
_KIND_F32 = const(1)
_KIND_F64 = const(2)


def _hex(buf, i, end):
    """The value of the hex digits at buf[i:end] (either case), or -1 if one is not a hex
    digit. Four digits make a small int on any port; eight are below 2^32, a small int on
    the unix port (62-bit small ints), on a 32-bit board a heap int from 2^30 on."""
    v = 0
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            c -= 48
        elif 97 <= c <= 102:
            c -= 87
        elif 65 <= c <= 70:
            c -= 55
        else:
            return -1
        v = (v << 4) | c
        i += 1
    return v


def parse_line(buf, start, end, src):
    """Parse buf[start:end] (spaces already trimmed) into src.kind and the value: 16 hex
    digits a float64 pattern (returned as its high 32 bits, the low 32 bits in src.lo: two
    8-digit halves, so no 64-bit int is made), 8 a float32 pattern (its high 16 bits, the
    low 16 in src.lo: no int from 2^30 on, a heap int on a 32-bit board), else a decimal
    integer (raw count, optional sign). Raises SourceError on anything else. In place: no
    slice."""
    n = end - start
    if n == 8 or n == 16:  # two halves of n/2 digits
        hi = _hex(buf, start, start + (n >> 1))
        lo = _hex(buf, start + (n >> 1), end)
        if hi >= 0 and lo >= 0:
            src.kind = _KIND_F32 if n == 8 else _KIND_F64
            src.lo = lo
            return hi
    neg = False
    i = start
    if i < end and (buf[i] == 45 or buf[i] == 43):  # - +
        neg = buf[i] == 45
        i += 1
    if i == end:
        raise SourceError("bad replay line")
    v = 0
    while i < end:
        c = buf[i]
        if c < 48 or c > 57:
            raise SourceError("bad replay line")
        v = v * 10 + (c - 48)
        i += 1
    src.kind = _KIND_RAW
    return -v if neg else v


class Source:
    """Readings one per line, from the serial input or from a file on the board: 16 hex
    digits (a float64 bit pattern), 8 hex digits (float32) or a decimal integer (raw count).
    Every line is a tick: a blank one (nothing, or spaces and tabs) is a SourceError like a
    bad one, so a missing reading still makes its report and its position does not show.
    A line ends at LF (CR is ignored anywhere); at the end of the input only a line holding
    a byte counts, so the LF that ends a file's last line makes no extra tick. On the serial
    input the control lines are read here too: `!stop` ends the replay, `!hello` asks for a
    HELLO (`hello_requested`); a file ends at its end. A line longer than LINE_MAX is a bad
    line (SourceError): it is never cut and parsed. ASCII only, so a replay never contains
    Ctrl-C (0x03)."""

    def __init__(self, stream, path=None):
        self._file = None
        if path is not None:
            self._file = open(path, "rb")
            stream = self._file
        self._rd = stream.readinto  # bound once: a bound method per line would be garbage
        self._line = bytearray(_LINE_MAX)
        self._one = bytearray(1)
        self.kind = _KIND_RAW
        self.lo = 0
        self.stopped = False
        self.hello_requested = False
        self.from_file = path is not None

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _readline(self):
        """Bytes of the next line in _line: their count, -1 at the end of the input,
        LINE_MAX + 1 if the line was longer than the buffer (the rest is skipped)."""
        n = 0
        one = self._one
        rd = self._rd
        line = self._line
        while True:
            got = rd(one)
            if not got:
                return -1 if n == 0 else n
            c = one[0]
            if c == 10:  # \n
                return n
            if c == 13:
                continue
            if n < _LINE_MAX:
                line[n] = c
            n = n + 1 if n <= _LINE_MAX else n  # LINE_MAX + 1: overlong, keep skipping

    def read(self):
        line = self._line
        while True:
            n = self._readline()
            if n < 0:
                self.stopped = True
                self.close()
                return None
            if n > _LINE_MAX:
                raise SourceError("replay line longer than %d bytes" % _LINE_MAX)
            start = 0
            while start < n and (line[start] == 32 or line[start] == 9):
                start += 1
            while n > start and (line[n - 1] == 32 or line[n - 1] == 9):
                n -= 1
            if n == start:
                raise SourceError("blank replay line")
            if not self.from_file and line[start] == 33:  # "!": a control line
                if start == 0 and line_is(self._line, n, b"!stop"):
                    self.stopped = True
                    return None
                if start == 0 and line_is(self._line, n, b"!hello"):
                    self.hello_requested = True
                    continue
            return parse_line(line, start, n, self)
