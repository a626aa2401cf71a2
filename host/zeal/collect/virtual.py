"""A virtual board: the real firmware main loop (`zealfw.main.run()`) under the MicroPython
unix port, its serial line bound to a pseudo-terminal. The host opens `VirtualDevice.port`
(the pty's slave path) with pyserial exactly as it would open /dev/ttyACM0.

    with VirtualDevice(readings, profile=prof) as dev:
        port = zeal.wire.transport.open_port(dev.port)   # open first: pyserial flushes on open
        dev.start()
        ...

Plumbing (why each piece is there):

- `os.openpty()`; the slave is put in raw mode at once, before the device writes anything:
  a pty starts in cooked mode, where ECHO, ICRNL (CR -> LF) and ONLCR would corrupt binary
  frames. The parent keeps the slave fd open for the device's life, so the path exists
  before and between host opens and the settings persist.
- The firmware's stdout is the master fd: what it writes is what the host reads on the slave.
  Its frames go to the REPL stream (config output "repl"), as on a USB-CDC board.
- The sensor is a replay: the firmware's stdin is a pipe into which a feeder thread writes
  one float64 bit pattern (16 hex digits) per line, then `!stop`. (The slave side cannot
  carry the replay: the host owns it, as it owns a board's USB line.)
- What the host writes to the port arrives on the master; a drain thread reads it line by
  line so the host never blocks on a full pty, and forwards the control lines to the firmware
  through the replay input: `!stop` (`zeal stop`: the firmware flushes, sends STATUS STOPPED
  and exits, as a board does) and `!hello` (the collector's request on opening the port: the
  firmware sends a HELLO at its next tick). A forwarded `!hello` goes in between replay lines,
  ahead of the readings not yet written to the pipe (a control line does not wait behind the
  sensor), but after those already in the pipe (up to the pipe's 64 KB: the firmware reads
  them first, so DATA arrives before the HELLO, as from a board whose host attached late).
- MQTT boards (`mqtt="mqtt://HOST:PORT"`, `mqtt_options` for the output's other keys,
  firmware/zealfw/mqtt_cfg.py): the config's output is the broker, the firmware publishes
  its frames there with umqtt.simple (fetched for the unix port by zeal.board.umqtt) over a
  real socket; the replay and `!stop` still come through stdin, the pty carries nothing.
- Live replay (`live=True`): the readings given to start() are written, then the replay
  waits for more (`feed`) until `end_replay()` writes `!stop`. With `pause()`/`resume()`
  (SIGSTOP/SIGCONT of the firmware process) a test fixes exactly what the board sent before
  and after a host attached.

Production mode by default: the firmware draws a fresh key from its seed file (boot counter
1, 2, ... over restarts in the same folder). `vector_key=` selects vector mode (a given key,
boot 0, every frame flagged VECTOR), for bit-exact tests only.
"""
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time

try:  # POSIX only: virtual boards need pseudo-terminals (VirtualDevice says so elsewhere)
    import termios
    import tty
except ImportError:
    termios = tty = None

from ..board.firmware import MICROPYTHON_MISSING, find_firmware, locate_micropython
from ..errors import ZealError
from ..mechanism import kinds

_STOP = b"!stop"
_HELLO = b"!hello"
_LINES_PER_WRITE = 64  # small writes, so a forwarded control line waits for little


class VirtualDeviceError(ZealError):
    """The virtual device cannot be set up (no MicroPython unix port, bad option)."""


def f64_line(x) -> str:
    """A reading as the replay source takes it: the float64 bit pattern, 16 hex digits."""
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def replay_line(x, categorical=()) -> str:
    """One replay line: a number as its float64 pattern (f64_line); a tuple or list (a multi
    profile's reading tuple, multi.md "Replay lines") as its fields joined by ",", each a
    float64 pattern, or the decimal integer for the attributes in `categorical` (indices);
    a str as it is (a line made elsewhere, e.g. with invalid fields)."""
    if isinstance(x, str):
        return x
    if isinstance(x, (tuple, list)):
        return ",".join(str(int(v)) if j in categorical else f64_line(v)
                        for j, v in enumerate(x))
    return f64_line(x)


def _firmware_path():
    """(MICROPYPATH, temporary folder to remove or None) for the firmware: the checkout's
    firmware/ (it holds zealfw/), or, for an installed wheel, a fresh folder with a link
    `zealfw` to the installed package; not site-packages itself, whose CPython modules must
    stay out of the board's import path."""
    folder = find_firmware()
    if os.path.isfile(os.path.join(folder, "zealfw", "__init__.py")):
        return folder, None
    tmp = tempfile.mkdtemp(prefix="zeal-fw-")
    os.symlink(folder, os.path.join(tmp, "zealfw"))
    return tmp, tmp


class Pty:
    """A pseudo-terminal in raw mode: the host opens `port` (the slave path) with pyserial,
    the owner writes the line's bytes to the master (`write`) and reads what the host sends
    (`read`). Raw at once: cooked mode (ECHO, ICRNL, ONLCR) would rewrite binary frames. The
    slave fd stays open here so the path lives, and keeps its settings, between host opens."""

    def __init__(self):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.port = os.ttyname(self.slave)
        self.closed = False

    def write(self, data) -> None:
        """All of data (blocks while the host has not read what is already buffered)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.master, view):]

    def read(self, timeout: float = 0.1) -> bytes:
        """What the host wrote, waiting at most timeout; b"" if nothing."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        return os.read(self.master, 4096) if ready else b""

    def discard_input(self) -> None:
        """Drop what the host has not read yet."""
        termios.tcflush(self.slave, termios.TCIFLUSH)

    def close(self) -> None:
        """Hang up: the host's next read fails, as when a USB serial device is unplugged."""
        if not self.closed:
            self.closed = True
            os.close(self.master)
            os.close(self.slave)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class VirtualDevice:
    """One virtual board. `readings`: numbers, each replayed as its float64; under a multi
    profile, tuples of d values (one replay line of d fields each, `replay_line`).

    profile: a zeal.mechanism.grid.profile.Profile (or its JSON text) written to the device's
             zeal_profile.json; a multi profile (multi_profile.MultiProfile) with its
             attribute files beside it (zeal_profile.<i>.json)
    vector_key: 32 bytes (or 64 hex digits) -> vector mode; None -> production mode
    period_ms: time between readings (0: as fast as the firmware goes); batch: reports/frame
    device_id: up to 8 bytes, zero-padded to 8 as the firmware does (default random: the
    unix port has no machine.unique_id)
    folder: the device's filesystem (default: a fresh temporary folder, removed on close)
    """

    def __init__(self, readings=(), *, profile, vector_key=None, period_ms: int = 0,
                 batch: int = 64, hello_every: int = 16, status_every: int = 64,
                 device_id=None, folder=None, micropython=None, live: bool = False,
                 config=None, mqtt=None, mqtt_options=None):
        if termios is None:
            raise VirtualDeviceError("virtual boards need pseudo-terminals (Linux or macOS), "
                                     "which this system does not have")
        self._mp = micropython or locate_micropython()
        if self._mp is None:
            raise VirtualDeviceError(MICROPYTHON_MISSING)
        device_id = os.urandom(8) if device_id is None else bytes(device_id)
        if not 1 <= len(device_id) <= 8:
            raise VirtualDeviceError("device_id is 1 to 8 bytes")
        self.device_id = device_id.ljust(8, b"\0")  # as in HELLO (the firmware pads so)
        if isinstance(vector_key, str):
            vector_key = bytes.fromhex(vector_key)
        if vector_key is not None and len(vector_key) != 32:
            raise VirtualDeviceError("vector_key is 32 bytes")
        self.vector_key = vector_key
        self.readings = list(readings)
        self._tmp = None
        if folder is None:
            self._tmp = tempfile.mkdtemp(prefix="zeal-vdev-")
            folder = self._tmp
        self.folder = str(folder)
        os.makedirs(self.folder, exist_ok=True)
        where = os.path.join(self.folder, "zeal_profile.json")
        self._categorical = frozenset()
        if isinstance(profile, str):
            with open(where, "w") as fh:
                fh.write(profile)
        else:  # the file, and any it refers to beside it (a multi header's attributes)
            kind = kinds.of(profile)
            kind.write(profile, where)
            self._categorical = kind.value_attributes(profile)
        cfg = {"start_delay_ms": 0, "period_ms": period_ms, "batch": batch,
               "hello_every": hello_every, "status_every": status_every}
        if vector_key is not None:
            cfg.update(vector_mode=True, vector_key=vector_key.hex())
        self.mqtt = mqtt
        if mqtt is not None:  # an MQTT board: frames to the broker, not to the pty
            cfg["output"] = dict({"kind": "mqtt", "url": mqtt}, **(mqtt_options or {}))
        cfg.update(config or {})
        self.live = live
        with open(os.path.join(self.folder, "zeal_config.json"), "w") as fh:
            json.dump(cfg, fh)

        # MICROPYPATH: a folder holding the zealfw package, from a checkout or a wheel
        self._fw_path, self._fw_tmp = _firmware_path()
        if mqtt is not None:  # umqtt.simple for the unix port (zeal.board.umqtt)
            from ..board.umqtt import umqtt_path

            self._fw_path += os.pathsep + umqtt_path()
        self._pty = Pty()  # raw before the firmware writes its first byte
        self.port = self._pty.port
        self._proc = None
        self._feeder = None
        self._stop_req = threading.Event()
        self._closing = threading.Event()
        self._stderr = None
        self.host_bytes = 0  # bytes the host wrote to the port (drained)
        self.hello_requests = 0  # `!hello` lines the host wrote
        self.hellos_forwarded = 0  # ... of them written to the running firmware's input
        self.lines_written = 0   # replay lines written to the firmware's input (this boot)
        self._pipe_lock = threading.Lock()  # feeder and drain both write the replay pipe
        self._more = []          # live mode: readings waiting for the feeder
        self._more_cv = threading.Condition()
        self._ended = False
        self._drain = threading.Thread(target=self._drain_loop, name="vdev-drain", daemon=True)
        self._drain.start()

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self, readings=None) -> "VirtualDevice":
        """Boot the firmware (again, after a previous run ended: a reboot, which advances the
        boot counter in production mode). `readings` replaces the replay if given."""
        if self._closing.is_set():
            raise VirtualDeviceError("the virtual device is closed")
        if self.running:
            raise VirtualDeviceError("the virtual device is already running")
        if readings is not None:
            self.readings = list(readings)
        self._stop_req.clear()
        with self._more_cv:
            self._more, self._ended = [], False
        self.lines_written = 0
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = open(os.path.join(self.folder, "stderr.txt"), "wb")
        # The unix port has no machine.unique_id(): the firmware then takes its id from
        # zeal_id.bin in its folder (made at random on first boot), so write this board's id.
        with open(os.path.join(self.folder, "zeal_id.bin"), "wb") as fh:
            fh.write(self.device_id)
        code = "import zealfw.main as m;m.run()"
        self._proc = subprocess.Popen(
            [self._mp, "-c", code], cwd=self.folder, stdin=subprocess.PIPE,
            stdout=self._pty.master, stderr=self._stderr, close_fds=True,
            # .frozen first, as on a board: the port's own frozen modules (ssl, for TLS)
            env=dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", self._fw_path])))
        self._feeder = threading.Thread(target=self._feed, args=(self._proc, self.readings),
                                        name="vdev-feed", daemon=True)
        self._feeder.start()
        return self

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self):
        return None if self._proc is None else self._proc.poll()

    def wait(self, timeout=None) -> int:
        """Wait for the firmware to finish its replay (it exits after STATUS STOPPED)."""
        if self._proc is None:
            raise VirtualDeviceError("the virtual device was not started")
        rc = self._proc.wait(timeout)
        self._stop_req.set()  # a live replay's feeder waits for more: the board has exited
        with self._more_cv:   # (an MQTT board stopped by its control topic)
            self._more_cv.notify()
        self._feeder.join()
        return rc

    def stop(self, timeout: float = 10.0, *, discard: bool = False):
        """Ask the firmware to stop (the `!stop` line: it flushes and sends STOPPED), then
        terminate it if it does not exit in time. Returns its exit code (None: not started).

        discard: drop what the host has not read, so a firmware blocked on a full pty (no
        host reading) can write its last frames and exit instead of waiting for `timeout`."""
        if self._proc is None:
            return None
        self._stop_req.set()
        deadline = time.monotonic() + timeout
        while self._proc.poll() is None and time.monotonic() < deadline:
            if discard:
                self._pty.discard_input()
            try:
                self._proc.wait(0.05)
            except subprocess.TimeoutExpired:
                pass
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._feeder.join()
        return self._proc.returncode

    def stderr(self) -> str:
        """What the firmware process wrote to stderr (for diagnosing a failed run)."""
        try:
            with open(os.path.join(self.folder, "stderr.txt"), "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        """Stop the firmware, close every fd, remove the temporary folder. Idempotent."""
        if self._closing.is_set():
            return
        self.stop(timeout=5.0, discard=True)
        self._closing.set()
        self._drain.join()
        if self._stderr is not None:
            self._stderr.close()
        self._pty.close()
        for tmp in (self._tmp, self._fw_tmp):
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- threads ------------------------------------------------------------------------------
    def feed(self, readings) -> None:
        """Live mode: more readings for the replay (written by the feeder thread)."""
        if not self.live:
            raise VirtualDeviceError("feed() needs live=True")
        with self._more_cv:
            self._more.extend(readings)
            self._more_cv.notify()

    def end_replay(self) -> None:
        """Live mode: the replay ends after the readings fed so far (`!stop`)."""
        with self._more_cv:
            self._ended = True
            self._more_cv.notify()

    def pause(self) -> None:
        """Freeze the firmware process (SIGSTOP): it reads and writes nothing until resume()."""
        if self.running:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.running:
            self._proc.send_signal(signal.SIGCONT)

    def _write_lines(self, pipe, readings) -> None:
        for i in range(0, len(readings), _LINES_PER_WRITE):
            if self._stop_req.is_set():
                return
            part = readings[i:i + _LINES_PER_WRITE]
            with self._pipe_lock:
                pipe.write(("\n".join(replay_line(x, self._categorical) for x in part)
                            + "\n").encode())
                pipe.flush()
            self.lines_written += len(part)

    def _feed(self, proc, readings) -> None:
        """The sensor: replay lines into the firmware's stdin, then !stop (live mode: also
        what feed() adds, until end_replay())."""
        pipe = proc.stdin
        try:
            self._write_lines(pipe, readings)
            while self.live and not self._stop_req.is_set():
                with self._more_cv:
                    while not (self._more or self._ended or self._stop_req.is_set()):
                        self._more_cv.wait(0.1)
                    more, self._more = self._more, []
                    ended = self._ended
                self._write_lines(pipe, more)
                if ended and not self._more:
                    break
            with self._pipe_lock:
                pipe.write(b"!stop\n")
                pipe.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the firmware exited (or was stopped) before reading everything
        finally:
            with self._pipe_lock:
                try:
                    pipe.close()
                except OSError:
                    pass

    def _forward_hello(self) -> None:
        """The host asked for a HELLO: put the line into the running firmware's input."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return  # not running: it sends a HELLO when it boots anyway
        with self._pipe_lock:
            try:
                proc.stdin.write(_HELLO + b"\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return  # the replay has ended (pipe closed): the firmware is stopping
        self.hellos_forwarded += 1

    def _drain_loop(self) -> None:
        """Read what the host writes, line by line; forward !stop and !hello to the firmware."""
        line = b""
        while not self._closing.is_set():
            try:
                data = self._pty.read(0.1)
            except OSError:
                return
            self.host_bytes += len(data)
            line += data
            *whole, line = line.split(b"\n")
            line = line[-64:]  # a partial line longer than any control line is noise
            for text in whole:
                text = text.strip()
                if text == _STOP:
                    self._stop_req.set()
                    with self._more_cv:
                        self._more_cv.notify()
                elif text == _HELLO:
                    self.hello_requests += 1
                    self._forward_hello()


# ---- collecting a set of virtual boards (zeal demo, zeal demo --attributes) --------------------
def start_when_open(collector, devices, failed):
    """Boot each virtual board only once the collector holds every port: pyserial flushes a
    port's input when it opens it (a board's too). A failure is appended to `failed`."""
    deadline = time.monotonic() + 30
    while not all(p.serial is not None for p in collector.ports):
        if time.monotonic() > deadline:
            failed.append("the collector did not open the ports")
            collector.stop()
            return
        time.sleep(0.01)
    for dev in devices:
        dev.start()


def collect_boards(boards, store, profiles, *, expected, keep_vector=False, progress=True,
                   say=print, timeout=120.0):
    """Collect `boards` (VirtualDevice, not started) into `store` until every board has
    stopped; print the collector's summary through `say`. ZealError (one line, with the
    boards' last stderr) unless exactly `expected` reports were stored."""
    from .collector import Collector
    from .progress import ProgressLine, summary_lines

    show = ProgressLine() if progress else None
    col = Collector([b.port for b in boards], store, profiles=profiles,
                    keep_vector=keep_vector, on_progress=show,
                    log=show.say if show is not None else say)
    failed = []
    starter = threading.Thread(target=start_when_open, args=(col, boards, failed), daemon=True)
    starter.start()
    try:
        pr = col.run(until_stopped=True, duration=timeout)
    finally:
        if show is not None:
            show.end()
    starter.join()
    if col.stopped_by is not None:  # Ctrl-C (or SIGTERM): the boards are closed by the caller
        raise KeyboardInterrupt
    if failed:
        raise ZealError(failed[0])
    for line in summary_lines(pr):
        say(line)
    if pr.reports != expected:
        errs = "; ".join(b.stderr().strip()[-200:] for b in boards if b.stderr())
        raise ZealError("stored %d of %d reports (%s)%s" % (
            pr.reports, expected, pr.reason, (": " + errs) if errs else ""))
    return pr
