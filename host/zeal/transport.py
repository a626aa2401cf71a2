"""Serial transport: a port is named by a pyserial URL (a device path such as /dev/ttyACM0 or a
pty's slave path, `socket://host:port`, `loop://`, `rfc2217://...`).

Nothing here decodes: `open_port` returns a plain `serial.Serial`-like object and
`read_chunk` returns whatever bytes have arrived (the Deframer takes arbitrary chunks).
"""
import errno

import serial

from .errors import ZealError

DEFAULT_BAUD = 115200  # ignored by USB-CDC, ptys, sockets; what a UART link runs at
READ_TIMEOUT = 0.05    # short: reader threads check their stop flag this often
MAX_CHUNK = 1 << 16


class PortError(ZealError):
    """A port cannot be opened or read (missing, busy, no permission, bad URL, unplugged)."""


class PortNotFound(PortError):
    """No such port (nothing plugged in, wrong path, nobody listening at the socket)."""


class PortBusy(PortError):
    """Another program has the port open exclusively (a second collector, a terminal...)."""


_MISSING = {errno.ENOENT, errno.ENODEV, errno.ENXIO, errno.ECONNREFUSED}
_BUSY = {errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK}


def open_port(url: str, *, baudrate: int = DEFAULT_BAUD, timeout: float = READ_TIMEOUT,
              exclusive: bool = True):
    """Open `url` with serial.serial_for_url. `exclusive` takes pyserial's advisory lock (flock)
    on device paths, so two collectors cannot both read one line and each get half the frames.

    Note that pyserial flushes the input buffer on open: bytes sent before are lost."""
    try:
        return serial.serial_for_url(url, baudrate=baudrate, timeout=timeout,
                                     exclusive=exclusive)
    except ValueError as exc:  # unknown URL scheme or bad parameters
        raise PortError("cannot open %s: %s" % (url, exc)) from None
    except (serial.SerialException, OSError) as exc:
        raise _classify(url, exc) from None


def _classify(url: str, exc: Exception) -> PortError:
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code in _BUSY or "exclusively lock" in text:
        return PortBusy("port %s is busy (another program has it open)" % url)
    if code in _MISSING or "No such file" in text or "refused" in text:
        return PortNotFound("no port %s (is the device plugged in?)" % url)
    if code == errno.EACCES or "ermission denied" in text:
        return PortError("no permission to open %s (on Linux: add yourself to the "
                         "'dialout' group)" % url)
    return PortError("cannot open %s: %s" % (url, text))


def read_chunk(port) -> bytes:
    """Bytes from `port`: those waiting, or those arriving within its timeout (b"" if none).

    When the port counts its waiting bytes (device paths, ptys, loop://) and has several,
    they are returned at once. Otherwise (an idle line, or socket://, whose in_waiting only
    says 0 or 1) the read gathers up to MAX_CHUNK bytes for at most the timeout: one call
    per burst, not one per byte. Raises serial.SerialException / OSError when the line is
    gone (a pty whose master closed, an unplugged USB adapter, a closed socket)."""
    waiting = port.in_waiting
    return port.read(min(waiting, MAX_CHUNK) if waiting > 1 else MAX_CHUNK)
