# Any Python callable as a Zeal source (sensor kind "callable"; see sources.py).
from .sources import SourceError

try:
    from micropython import const
except ImportError:  # CPython: the transcript tests run the loop there too

    def const(x):
        return x

_KIND_RAW = const(0)  # = sources.KIND_RAW / KIND_F32
_KIND_F32 = const(1)


class Source:
    """Any callable, e.g. an I2C driver's read: an int is a raw count, a float is packed to
    its float32 bit pattern (exact on boards, whose floats are float32); anything else (a
    bool, None, a string) and any exception the driver raises is a SourceError."""

    def __init__(self, fn):
        import struct

        self._fn = fn
        self._buf = bytearray(4)
        self._pack = struct.pack_into
        self.kind = _KIND_RAW
        self.lo = 0

    def read(self):
        try:
            value = self._fn()
        except Exception as exc:  # a driver's I/O error must not stop the loop
            raise SourceError(str(exc))
        if isinstance(value, bool):
            raise SourceError("sensor returned bool")
        if isinstance(value, int):
            self.kind = _KIND_RAW
            return value
        if isinstance(value, float):
            b = self._buf
            self._pack("<f", b, 0, value)
            self.kind = _KIND_F32
            self.lo = b[0] | (b[1] << 8)  # the pattern's halves (sources.py)
            return b[2] | (b[3] << 8)
        raise SourceError("sensor returned %s" % type(value).__name__)
