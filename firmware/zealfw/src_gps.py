# A GPS module as a Zeal source (sensor kind "gps"; see sources.py; issue 24): NMEA 0183
# sentences, one per line, from the module's UART or replayed from the serial input or a file.
#
#   {"kind": "gps", "box": [LON_LO, LON_HI, LAT_LO, LAT_HI], "order": L,
#    "sentence": "GGA" | "RMC",                       (default GGA)
#    "uart": {"id": N, "baudrate": 9600, "rx": PIN, "tx": PIN}   a real module, or
#    "file": NAME                                      sentences from a file on the board,
#    neither                                           sentences on the serial input}
#
# The box's bounds are exact decimal strings ("-0.5", "51.25"), public (they are in the
# config), parsed to exact rationals; L is 1..16. A reading is the Hilbert index
# h in [0, 4^L) of the fix's grid cell: x = longitude in [LON_LO, LON_HI], y = latitude in
# [LAT_LO, LAT_HI], each cut into 2^L cells, a point outside clamped to the edge cells
# (zealfw.hilbert; the host's zeal.mechanism.locate.hilbert.Box and its curve). It is handed
# over as a raw count (KIND_RAW): the profile is one over [0, 4^L - 1] with the identity
# calibration (zeal profile --range 0 4^L-1 --cal-gain 1 --cal-offset 0 ...).
#
# Ticks: one per sentence of the chosen type ("$" + a two-letter talker + GGA/RMC + ","),
# whatever it holds: a fix is a reading; no fix (GGA quality 0, RMC status V, empty
# coordinates), a bad checksum or field, or a line of that type longer than LINE_MAX is a
# SourceError (the invalid-reading rule: the tick still makes its report, from the public
# value). Every other line (GSV, GSA, VTG, ..., blank lines, lines that are no sentence) is
# skipped: no tick. A module sends the chosen type on its own schedule (1 Hz, fix or not),
# so the ticks, and when frames leave, do not depend on where the board is; how many other
# sentences there are (GSV's satellites in view) does not show. With the UART, a read that
# has waited WAIT_MS without a sentence of the chosen type is a SourceError too (a silent
# or unplugged module): the loop keeps ticking, so the watchdog is fed and "!stop" is read.
# Set period_ms to 0: the module's sentences are the clock.
#
# Lines end at LF; CR is ignored anywhere. Replayed from the serial input, the control lines
# "!stop" and "!hello" are read here as in zealfw.src_replay; from a file or the UART, the
# loop watches the serial input for them (zealfw.control).
#
# Allocation per sentence: the line is read byte by byte into a buffer made once; a line of
# another type is recognised in place and allocates nothing. A sentence of the chosen type is
# copied once to bytes (nmea.fix takes bytes), and nmea.fix then allocates its working
# objects: the stripped line, the field list and its ~15 field slices, the coordinate
# slices and their ints, the result tuples. zealfw.hilbert's cell makes a few big ints (the
# exact products, shifted by L), index none but small ints (h < 2^32: a heap int on a 32-bit
# board only from 2^30 on, i.e. at L = 16). About a hundred short-lived objects a second,
# at 1 Hz: nothing that grows.
from .hilbert import cell, index
from .nmea import fix
from .sources import SourceError, line_is

try:
    from micropython import const
except ImportError:  # CPython: the tests run the source and the loop there too

    def const(x):
        return x

_LINE_MAX = const(96)   # bytes of a line (NMEA's maximum is 82 with CR LF): longer is bad
_KIND_RAW = const(0)    # = sources.KIND_RAW, inlined
_ORDER_MAX = const(16)  # 4^16 - 1 < 2^32
_WAIT_MS = const(2500)  # UART: a read gives up (SourceError) after this long without one
_BAUD = const(9600)     # what GPS modules send at
_DEC_MAX = const(20)    # characters of a box bound


def _decimal(text):
    """An exact decimal string -- an optional sign, digits, optionally "." and digits -- as
    (num, den); ValueError otherwise."""
    if not isinstance(text, str) or not 0 < len(text) <= _DEC_MAX:
        raise ValueError("gps box bounds must be decimal strings like \"-0.5\"")
    neg = text[0] == "-"
    s = text[1:] if text[0] in "+-" else text
    dot = s.find(".")
    whole = s if dot < 0 else s[:dot]
    frac = "" if dot < 0 else s[dot + 1:]
    digits = whole + frac
    if not whole or (dot >= 0 and not frac):
        raise ValueError("gps box bound %s is not a decimal" % text)
    for c in digits:
        if c < "0" or c > "9":
            raise ValueError("gps box bound %s is not a decimal" % text)
    num = int(digits)
    return (-num if neg else num), 10 ** len(frac)


def _int(spec, key, lo, hi, default=None):
    v = spec.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise ValueError("gps %s must be an integer in [%d, %d]" % (key, lo, hi))
    return v


def _pin(spec, key):
    v = spec.get(key)
    if v is None or (isinstance(v, str) and v) or (isinstance(v, int)
                                                   and not isinstance(v, bool) and v >= 0):
        return v
    raise ValueError("gps uart %s must be a pin number or name" % key)


class Source:
    """NMEA fixes as Hilbert indices, from the device config's "sensor" object (see the
    module); ValueError for a bad config (the start's STATUS CONFIG), OSError for a file
    that cannot be opened, ImportError or AttributeError without machine.UART."""

    def __init__(self, spec, stream=None):
        for key in spec:
            if key not in ("kind", "box", "order", "sentence", "uart", "file"):
                raise ValueError("unknown gps sensor key %s" % key)
        box = spec.get("box")
        if not isinstance(box, list) or len(box) != 4:
            raise ValueError("gps box must be [lon_lo, lon_hi, lat_lo, lat_hi]")
        b = [_decimal(t) for t in box]
        for lo, hi in ((b[0], b[1]), (b[2], b[3])):
            if lo[0] * hi[1] >= hi[0] * lo[1]:
                raise ValueError("gps box needs lon_lo < lon_hi and lat_lo < lat_hi")
        self._x0, self._x1, self._y0, self._y1 = b
        self._order = _int(spec, "order", 1, _ORDER_MAX)
        kind = spec.get("sentence", "GGA")
        if kind not in ("GGA", "RMC"):
            raise ValueError("gps sentence must be GGA or RMC")
        self._type = kind.encode()
        path = spec.get("file")
        uart = spec.get("uart")
        if path is not None and (not isinstance(path, str) or not path):
            raise ValueError("gps file must be a file name")
        if uart is not None and path is not None:
            raise ValueError("gps takes a uart or a file, not both")
        self._file = None
        self._clock = None  # with a UART: wire's ticks_ms, ticks_diff and sleep_ms
        self._t0 = 0
        self._n = 0        # bytes of the line so far (kept when a UART read gives up)
        if uart is not None:
            if not isinstance(uart, dict):
                raise ValueError("gps uart must be an object {\"id\": N, ...}")
            for key in uart:
                if key not in ("id", "baudrate", "rx", "tx"):
                    raise ValueError("unknown gps uart key %s" % key)
            uid = _int(uart, "id", 0, 0xFF)
            args = {"baudrate": _int(uart, "baudrate", 1, 0x3FFFFFFF, _BAUD)}
            pins = (_pin(uart, "rx"), _pin(uart, "tx"))  # checked before machine is needed
            import machine

            if pins[0] is not None:
                args["rx"] = machine.Pin(pins[0])
            if pins[1] is not None:
                args["tx"] = machine.Pin(pins[1])
            stream = machine.UART(uid, **args)
            from .wire import sleep_ms, ticks_diff, ticks_ms

            self._clock = ticks_ms
            self._since = ticks_diff
            self._nap = sleep_ms
        elif path is not None:
            self._file = open(path, "rb")
            stream = self._file
        elif stream is None:
            raise ValueError("gps replay needs an input stream")
        self._rd = stream.readinto  # bound once
        self._line = bytearray(_LINE_MAX)
        self._view = memoryview(self._line)
        self._one = bytearray(1)
        self.kind = _KIND_RAW
        self.lo = 0
        self.stopped = False
        self.hello_requested = False
        # False: this source reads the serial input and its control lines itself (as
        # zealfw.src_replay); True for a file or the UART: zealfw.build watches the input
        self.from_file = uart is not None or path is not None

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _readline(self):
        """Bytes of the next line in _line: their count (LINE_MAX + 1 for a longer line, the
        rest skipped), -1 at the end of the input, -2 when a UART read has waited WAIT_MS."""
        n = self._n
        one = self._one
        rd = self._rd
        line = self._line
        while True:
            got = rd(one)
            if not got:
                if self._clock is None:  # the end of a replay
                    self._n = 0
                    return -1 if n == 0 else n
                if self._since(self._clock(), self._t0) >= _WAIT_MS:
                    self._n = n  # the line goes on at the next read
                    return -2
                self._nap(1)  # nothing in the UART's buffer yet
                continue
            c = one[0]
            if c == 10:  # \n
                self._n = 0
                return n
            if c == 13:
                continue
            if n < _LINE_MAX:
                line[n] = c
            n = n + 1 if n <= _LINE_MAX else n

    def read(self):
        line = self._line
        t = self._type
        if self._clock is not None:
            self._t0 = self._clock()
        while True:
            n = self._readline()
            if n == -1:
                self.stopped = True
                self.close()
                return None
            if n == -2:
                raise SourceError("no GPS sentence")
            if not self.from_file and n and line[0] == 33:  # "!": a control line
                if line_is(line, n, b"!stop"):
                    self.stopped = True
                    return None
                if line_is(line, n, b"!hello"):
                    self.hello_requested = True
                    continue
            # the chosen type, in place: "$", a two-letter talker, the type, ","
            if (n < 7 or line[0] != 36 or line[3] != t[0] or line[4] != t[1]
                    or line[5] != t[2] or line[6] != 44):
                continue  # another type, or no sentence: no tick
            if n > _LINE_MAX:
                raise SourceError("NMEA line longer than %d bytes" % _LINE_MAX)
            got = fix(bytes(self._view[:n]))  # SourceError: no fix, bad checksum or field
            if got is None:  # (not for a line of the chosen type)
                continue
            lat, lon = got
            o = self._order
            self.kind = _KIND_RAW
            return index(cell(lon[0], lon[1], self._x0, self._x1, o),
                         cell(lat[0], lat[1], self._y0, self._y1, o), o)
