# Sensor sources. `read()` returns one reading's value, an int, and sets `.kind`:
#   KIND_RAW  - a raw count, turned into a reading by the profile's exact calibration
#   KIND_F32  - a float32 bit pattern (what struct.pack('<f', x) gives)
#   KIND_F64  - a float64 bit pattern
# or None when the source is exhausted (replay). A reading is never handed on as a float:
# on ESP32/RP2040 floats are 32-bit, and the bit pattern is the exact value. A reading that
# could not be taken raises SourceError; the main loop then replaces it by the profile's
# public value (it still makes its report: every sampling tick yields exactly one).
#
# Per reading nothing is allocated here but the reading's own int (a big int for a float64
# pattern): no (kind, value) tuple, the replay line is read byte by byte into a buffer made
# once (`readinto`, not `read(1)`, which makes a bytes object per byte) and parsed in place.
#
# Sensor specs (zeal_config.json "sensor"):
#   {"kind": "adc", "pin": 26 [, "atten": 3]}   machine.ADC on a pin, read_u16()
#   {"kind": "adc", "channel": 4}               machine.ADC(channel): RP2040 channel 4 is the
#   {"kind": "rp2040_temp"}                     internal temperature sensor (same as above)
#   {"kind": "callable", "module": M, "function": F}
#   {"kind": "replay"}                          lines on the serial input
#   {"kind": "replay", "file": "zeal_replay.txt"}  lines from a file on the board
try:
    from micropython import const
except ImportError:  # CPython: the transcript tests run the loop there too

    def const(x):
        return x

KIND_RAW = const(0)
KIND_F32 = const(1)
KIND_F64 = const(2)

STOP_LINE = b"!stop"
HELLO_LINE = b"!hello"
LINE_MAX = const(40)  # a longer replay line is a bad line, never cut and parsed
_RP2040_TEMP = const(4)


class SourceError(Exception):
    """A reading could not be taken; the loop replaces it by the public value."""


class ADCSource:
    """machine.ADC on a pin or an ADC channel; `read_u16()` gives 0..65535 on every port.

    The profile's calibration maps the count to the reading, e.g. 3.3 V full scale on a
    16-bit count: cal_gain "33/655350", cal_offset "0". RP2040 channel 4 is the internal
    temperature sensor (T = 27 - (V - 0.706) / 0.001721 with V = 3.3 * count / 65535; the
    ready profile example is in the README)."""

    kind = KIND_RAW

    def __init__(self, pin=None, atten=None, channel=None):
        import machine

        if channel is not None:
            self._adc = machine.ADC(channel)
        elif isinstance(pin, int):
            self._adc = machine.ADC(machine.Pin(pin))
        else:
            self._adc = machine.ADC(pin)
        if atten is not None and hasattr(self._adc, "atten"):
            self._adc.atten(atten)  # ESP32: input range; RP2040 has none

    def read(self):
        return self._adc.read_u16()


class CallableSource:
    """Any callable, e.g. an I2C driver's read: an int is a raw count, a float is packed to
    its float32 bit pattern (exact on boards, whose floats are float32); anything else (a
    bool, None, a string) and any exception the driver raises is a SourceError."""

    def __init__(self, fn):
        import struct

        self._fn = fn
        self._buf = bytearray(4)
        self._pack = struct.pack_into
        self.kind = KIND_RAW

    def read(self):
        try:
            value = self._fn()
        except Exception as exc:  # a driver's I/O error must not stop the loop
            raise SourceError(str(exc))
        if isinstance(value, bool):
            raise SourceError("sensor returned bool")
        if isinstance(value, int):
            self.kind = KIND_RAW
            return value
        if isinstance(value, float):
            b = self._buf
            self._pack("<f", b, 0, value)
            self.kind = KIND_F32
            return b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)
        raise SourceError("sensor returned %s" % type(value).__name__)


def _hex_digit(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


def parse_line(buf, start, end, src):
    """Parse buf[start:end] (spaces already trimmed) into src.kind and the value: 16 hex
    digits a float64 pattern, 8 a float32 pattern, else a decimal integer (raw count,
    optional sign). Raises SourceError on anything else. In place: no slice, no bytes."""
    n = end - start
    if n == 16 or n == 8:
        v = 0
        i = start
        while i < end:
            d = _hex_digit(buf[i])
            if d < 0:
                break
            v = (v << 4) | d
            i += 1
        if i == end:
            src.kind = KIND_F64 if n == 16 else KIND_F32
            return v
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
    src.kind = KIND_RAW
    return -v if neg else v


class ReplaySource:
    """Readings one per line, from the serial input or from a file on the board: 16 hex
    digits (a float64 bit pattern), 8 hex digits (float32) or a decimal integer (raw count).
    Blank lines are skipped. On the serial input the control lines are read here too:
    `!stop` ends the replay, `!hello` asks for a HELLO (`hello_requested`); a file ends at
    its end. A line longer than LINE_MAX is a bad line (SourceError): it is never cut and
    parsed. ASCII only, so a replay never contains Ctrl-C (0x03)."""

    def __init__(self, stream, path=None):
        self._file = None
        if path is not None:
            self._file = open(path, "rb")
            stream = self._file
        self._stream = stream
        self._line = bytearray(LINE_MAX)
        self._one = bytearray(1)
        self.kind = KIND_RAW
        self.stopped = False
        self.hello_requested = False
        self.from_file = path is not None

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _is(self, n, word):
        if n != len(word):
            return False
        line = self._line
        for i in range(n):
            if line[i] != word[i]:
                return False
        return True

    def _readline(self):
        """Bytes of the next line in _line: their count, -1 at the end of the input,
        LINE_MAX + 1 if the line was longer than the buffer (the rest is skipped)."""
        n = 0
        one = self._one
        rd = self._stream.readinto
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
            if n < LINE_MAX:
                line[n] = c
            n = n + 1 if n <= LINE_MAX else n  # LINE_MAX + 1: overlong, keep skipping

    def read(self):
        line = self._line
        while True:
            n = self._readline()
            if n < 0:
                self.stopped = True
                self.close()
                return None
            if n > LINE_MAX:
                raise SourceError("replay line longer than %d bytes" % LINE_MAX)
            start = 0
            while start < n and (line[start] == 32 or line[start] == 9):
                start += 1
            while n > start and (line[n - 1] == 32 or line[n - 1] == 9):
                n -= 1
            if n == start:
                continue
            if not self.from_file and line[start] == 33:  # "!": a control line
                if start == 0 and self._is(n, STOP_LINE):
                    self.stopped = True
                    return None
                if start == 0 and self._is(n, HELLO_LINE):
                    self.hello_requested = True
                    continue
            return parse_line(line, start, n, self)


def from_config(spec, stream=None):
    """Build a source from the device config's "sensor" object (checked by the caller to be
    a dict with a string "kind")."""
    kind = spec.get("kind")
    if kind == "adc":
        channel = spec.get("channel")
        if channel is not None:
            if not isinstance(channel, int) or isinstance(channel, bool) or channel < 0:
                raise ValueError("sensor channel must be a non-negative integer")
            return ADCSource(channel=channel)
        pin = spec.get("pin")
        if pin is None:
            raise ValueError("adc sensor needs a pin or a channel")
        return ADCSource(pin, spec.get("atten"))
    if kind == "rp2040_temp":
        return ADCSource(channel=_RP2040_TEMP)
    if kind == "replay":
        path = spec.get("file")
        if path is not None and not isinstance(path, str):
            raise ValueError("replay file must be a string")
        if path is None and stream is None:
            raise ValueError("replay needs an input stream")
        try:
            return ReplaySource(stream, path)
        except OSError:
            raise ValueError("replay file %s cannot be opened" % path)
    if kind == "callable":
        mod, fn = spec.get("module"), spec.get("function")
        if not isinstance(mod, str) or not isinstance(fn, str):
            raise ValueError("callable sensor needs module and function names")
        module = __import__(mod, None, None, [fn])
        return CallableSource(getattr(module, fn))
    raise ValueError("unknown sensor kind %r" % (kind,))
