# Sensor sources: each `read()` returns one reading as (kind, value) with value an int:
#   KIND_RAW  - a raw count, turned into a reading by the profile's exact calibration
#   KIND_F32  - a float32 bit pattern (what struct.pack('<f', x) gives)
#   KIND_F64  - a float64 bit pattern
# or None when the source is exhausted (replay). A reading is never handed on as a float:
# on ESP32/RP2040 floats are 32-bit, and the bit pattern is the exact value.
import struct

from micropython import const

KIND_RAW = const(0)
KIND_F32 = const(1)
KIND_F64 = const(2)

STOP_LINE = b"!stop"


class SourceError(Exception):
    """A reading could not be taken; the loop counts it and carries on."""


class ADCSource:
    """machine.ADC on a pin; `read_u16()` gives 0..65535 on every port.

    The profile's calibration maps the count to the reading, e.g. 3.3 V full scale on a
    16-bit count: cal_gain "33/655350", cal_offset "0".
    """

    def __init__(self, pin, atten=None):
        import machine

        self._adc = machine.ADC(machine.Pin(pin)) if isinstance(pin, int) else machine.ADC(pin)
        if atten is not None and hasattr(self._adc, "atten"):
            self._adc.atten(atten)  # ESP32: input range; RP2040 has none

    def read(self):
        return KIND_RAW, self._adc.read_u16()


class CallableSource:
    """Any callable, e.g. an I2C driver's read: an int is a raw count, a float is packed to
    its float32 bit pattern (exact on boards, whose floats are float32)."""

    def __init__(self, fn):
        self._fn = fn
        self._buf = bytearray(4)

    def read(self):
        try:
            value = self._fn()
        except Exception as exc:  # a driver's I/O error must not stop the loop
            raise SourceError(str(exc))
        if isinstance(value, int):
            return KIND_RAW, value
        if isinstance(value, float):
            struct.pack_into("<f", self._buf, 0, value)
            return KIND_F32, struct.unpack("<I", self._buf)[0]
        raise SourceError("sensor returned %s" % type(value).__name__)


class ReplaySource:
    """Readings sent by the host over the serial line, one per line: 16 hex digits (a
    float64 bit pattern), 8 hex digits (float32) or a decimal integer (raw count).
    The line `!stop` ends the replay. ASCII only, so it never contains Ctrl-C (0x03)."""

    def __init__(self, stream):
        self._stream = stream
        self._line = bytearray(40)
        self.stopped = False

    def _readline(self):
        n = 0
        while True:
            b = self._stream.read(1)
            if not b:
                return None if n == 0 else bytes(self._line[:n])
            c = b[0]
            if c == 10:  # \n
                return bytes(self._line[:n])
            if c == 13:
                continue
            if n < len(self._line):
                self._line[n] = c
                n += 1

    def read(self):
        while True:
            line = self._readline()
            if line is None or line == STOP_LINE:
                self.stopped = True
                return None
            line = line.strip()
            if line:
                break
        try:
            if len(line) == 16:
                return KIND_F64, int(line, 16)
            if len(line) == 8:
                return KIND_F32, int(line, 16)
            return KIND_RAW, int(line)
        except ValueError:
            raise SourceError("bad replay line")


def from_config(spec, stream=None):
    """Build a source from the device config's "sensor" object."""
    kind = spec.get("kind")
    if kind == "adc":
        return ADCSource(spec["pin"], spec.get("atten"))
    if kind == "replay":
        return ReplaySource(stream)
    if kind == "callable":
        module = __import__(spec["module"], None, None, [spec["function"]])
        return CallableSource(getattr(module, spec["function"]))
    raise ValueError("unknown sensor kind %r" % (kind,))
