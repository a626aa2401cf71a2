# The control lines "!stop" and "!hello" on the input stream, for every source but the replay
# from the input (which reads them itself). Imported by zealfw.start only when needed.
from .sources import line_is

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x

_CTL_MAX = const(8)   # control lines: "!stop", "!hello"
CTL_STOP = const(1)
CTL_HELLO = const(2)


class Control:
    """Non-blocking watch for the control lines on the input stream. No allocation while
    nothing arrives (ipoll reuses its result); a byte is read into a buffer."""

    def __init__(self, inp):
        self._inp = inp
        self._poll = None
        self._ipoll = None
        self._line = bytearray(_CTL_MAX)
        self._one = bytearray(1)
        self._n = 0
        try:
            import select

            p = select.poll()
            p.register(inp, select.POLLIN)
            self._poll = p
            self._ipoll = getattr(p, "ipoll", None)
        except Exception:  # a stream that cannot be polled: no remote stop
            self._poll = None

    def _ready(self):
        if self._ipoll is not None:
            for _ in self._ipoll(0):
                return True
            return False
        return bool(self._poll.poll(0))

    def poll(self):
        """0, or CTL_STOP / CTL_HELLO when such a line has arrived."""
        if self._poll is None:
            return 0
        one = self._one
        while self._ready():
            if not self._inp.readinto(one):  # end of input: nothing more will come
                self._poll = None
                return 0
            c = one[0]
            if c == 10 or c == 13:
                n = self._n
                self._n = 0
                if n and line_is(self._line, n, b"!stop"):
                    return CTL_STOP
                if n and line_is(self._line, n, b"!hello"):
                    return CTL_HELLO
            elif self._n < _CTL_MAX:
                self._line[self._n] = c
                self._n += 1
            else:
                self._n = _CTL_MAX + 1  # overlong: matches nothing
        return 0
