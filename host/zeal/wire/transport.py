"""Serial transport: a port is named by a pyserial URL (a device path such as /dev/ttyACM0 or a
pty's slave path, `socket://host:port`, `loop://`, `rfc2217://...`).

Nothing here decodes: `open_port` returns a plain `serial.Serial`-like object and
`read_chunk` returns whatever bytes have arrived (the Deframer takes arbitrary chunks).
"""
import errno
import os
import select

import serial

from ..errors import ZealError

DEFAULT_BAUD = 115200  # ignored by USB-CDC, ptys, sockets; what a UART link runs at
READ_TIMEOUT = 0.05    # short: reader threads check their stop flag this often
WRITE_TIMEOUT = 0.5    # a control line (`!hello`) the device does not take in time is dropped
MAX_CHUNK = 1 << 16
# pyserial on POSIX: each open port holds its descriptor and two pipes (abort read, abort
# write), and every read waits in select(), which cannot watch a descriptor >= FD_SETSIZE
# (1024): the port whose descriptors land above fails every read.
FDS_PER_PORT = 5
SELECT_LIMIT = 1024
FD_RESERVE = 24        # the database (file, WAL, shm, journal), stdio, imports, sockets


class PortError(ZealError):
    """A port cannot be opened or read (missing, busy, no permission, bad URL, unplugged)."""


class PortNotFound(PortError):
    """No such port (nothing plugged in, wrong path, nobody listening at the socket)."""


class PortBusy(PortError):
    """Another program has the port open exclusively (a second collector, a terminal...)."""


def missing_port(url: str) -> str:
    """The one message every command gives for a port that is not there (collect, flash,
    stop, conformance --port)."""
    return ("no port %s (is the board plugged in? `zeal devices` lists the boards attached)"
            % url)


def _known_scheme(scheme: str) -> bool:
    # pyserial's URL handlers are plugins by design: a scheme is known when one of
    # serial.protocol_handler_packages has a module protocol_<scheme>, found by name
    import importlib

    if not scheme.isidentifier():
        return False
    for package in getattr(serial, "protocol_handler_packages", ["serial.urlhandler"]):
        try:
            importlib.import_module("%s.protocol_%s" % (package, scheme.lower()))
            return True
        except ImportError:
            continue
    return False


def never_a_port(url: str):
    """Why `url` can never name a port (a directory, a regular file, an unknown URL scheme, a
    socket:// URL without HOST:PORT), or None. Such a mistake is reported at once ("cannot
    open URL: why"); a port that is merely absent may still be plugged in and is waited for
    by the collector."""
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if not _known_scheme(scheme):
            return "unknown URL scheme %r (a device path, or loop://, socket://HOST:PORT, " \
                   "rfc2217://HOST:PORT)" % scheme
        if scheme.lower() in ("socket", "rfc2217"):
            host, _, port = rest.partition("/")[0].rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                return "a %s:// URL needs HOST:PORT, e.g. %s://192.168.1.20:7000" % (
                    scheme, scheme)
        return None
    if os.path.isdir(url):
        return "a directory, not a serial port"
    if os.path.exists(url) and os.path.isfile(url):
        return "a regular file, not a serial port"
    return None


_MISSING = {errno.ENOENT, errno.ENODEV, errno.ENXIO, errno.ECONNREFUSED}
_BUSY = {errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK}


def open_port(url: str, *, baudrate: int = DEFAULT_BAUD, timeout: float = READ_TIMEOUT,
              exclusive: bool = True, write_timeout: float = WRITE_TIMEOUT):
    """Open `url` with serial.serial_for_url. `exclusive` takes pyserial's advisory lock (flock)
    on device paths, so two collectors cannot both read one line and each get half the frames.

    Note that pyserial flushes the input buffer on open: bytes sent before are lost."""
    try:
        return serial.serial_for_url(url, baudrate=baudrate, timeout=timeout,
                                     exclusive=exclusive, write_timeout=write_timeout)
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
        return PortNotFound(missing_port(url))
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


def wait_readable(port, timeout: float) -> bool:
    """Wait up to `timeout` s for `port` to have bytes to read (or for its line to be gone:
    the read then says so). False if nothing came. A port select() cannot watch (no file
    descriptor: loop://; Windows) counts as readable at once: its read waits by itself."""
    try:
        fd = port.fileno()
    except Exception:  # io.UnsupportedOperation, a closed port, no such method
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    except (OSError, ValueError):  # the read reports what is wrong
        return True
    return bool(ready)


def send_line(port, line: bytes) -> bool:
    """Write a control line (`wire.HELLO_REQUEST`, ...). False if the device did not take it
    within the port's write timeout (a stalled line: the request is dropped, not retried);
    serial.SerialException / OSError when the line is gone."""
    try:
        port.write(line)
        return True
    except serial.SerialTimeoutException:
        return False


def _open_descriptors() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return FD_RESERVE


def port_capacity() -> tuple:
    """(ports, why): how many ports one process can read at once, or (None, "") where pyserial
    does not use select() (Windows). New descriptors take the lowest free numbers, so n more
    ports stay below the select() limit while open + FDS_PER_PORT n + FD_RESERVE <= 1024 and
    within the open-file limit (RLIMIT_NOFILE; its soft value is raised towards the hard one
    when that is what stands in the way)."""
    if os.name != "posix":
        return None, ""
    limit = SELECT_LIMIT
    why = "pyserial's select() cannot watch a descriptor >= %d" % SELECT_LIMIT
    try:
        import resource
    except ImportError:
        resource = None
    if resource is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < SELECT_LIMIT:
            want = SELECT_LIMIT if hard == resource.RLIM_INFINITY else min(hard, SELECT_LIMIT)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
                soft = want
            except (ValueError, OSError):
                pass
        if soft != resource.RLIM_INFINITY and soft < SELECT_LIMIT:
            limit = soft
            why = "the open-file limit (ulimit -n) is %d" % soft
    return max(0, (limit - _open_descriptors() - FD_RESERVE) // FDS_PER_PORT), why
