"""Target "board" of the conformance runner: the runner on a real board, over mpremote's
SerialTransport (the raw REPL; the firmware and the runner copied to BOARD_DIR first)."""
import hashlib
import time

from .conformance_channel import MARK, _LineChannel
from .firmware import ConformanceError, firmware_sources

BOARD_DIR = "zeal_conformance"  # on the board's filesystem, relative to its working dir

_BOARD_START = ("import sys\nsys.path.insert(0, %r)\nimport runner\nrunner.main()\n"
                % BOARD_DIR)


class BoardImpl(_LineChannel):
    """The runner on a real board, over mpremote's SerialTransport. Written against the
    installed mpremote 1.29: SerialTransport(device, baudrate), enter_raw_repl(soft_reset),
    fs_exists / fs_mkdir / fs_writefile / fs_hashfile (Transport base class),
    exec_raw_no_follow, read_until(min_bytes, ending, timeout), follow(timeout),
    exit_raw_repl, close, and the pyserial object as .serial. mpremote calls this API
    "going to change significantly", so the board target pins nothing else."""

    name = "board"
    chunk = 64  # bytes per serial write: small enough for a UART's receive buffer
    # Never block on the line for good: mpremote opens it with no read timeout and, on a pty
    # (an emulated board), reads a byte without looking first, so a board that fell silent
    # (its runner dead) would hang the host forever. With READ_TIMEOUT_S every read returns
    # (mpremote's exchanges, which expect a blocking read, fail with their own error instead
    # of hanging), the runner's lines are read only when bytes are waiting, and a board that
    # stops taking input fails the write after WRITE_TIMEOUT_S.
    READ_TIMEOUT_S = 10.0
    WRITE_TIMEOUT_S = 10.0
    LAST_WORDS_S = 2.0  # how long a dead runner's traceback is waited for

    def __init__(self, port, baudrate=115200, ready_timeout=30.0, install=True):
        super().__init__()
        self._partial = b""
        try:
            from mpremote.transport import TransportError
            from mpremote.transport_serial import SerialTransport
        except ImportError as exc:
            raise ConformanceError("board target needs mpremote (pip install mpremote): %s"
                                   % exc) from None
        self._TransportError = TransportError
        try:
            self.t = SerialTransport(port, baudrate=baudrate)
            self.t.serial.timeout = self.READ_TIMEOUT_S
            self.t.serial.write_timeout = self.WRITE_TIMEOUT_S
        except (TransportError, OSError) as exc:
            raise ConformanceError("cannot open %s: %s" % (port, exc)) from None
        try:
            self.t.enter_raw_repl(soft_reset=True)
            self._probe(port)
            if install:
                self.installed = self._install()
                if self.installed:
                    # a fresh heap for the runner: the copy's transfers leave the heap in
                    # pieces, and the largest cases need long contiguous blocks
                    self.t.enter_raw_repl(soft_reset=True)
            self.t.exec_raw_no_follow(_BOARD_START)
            self.wait_ready(ready_timeout)
        except (TransportError, OSError) as exc:  # pyserial's SerialException is an OSError
            self._abandon()
            raise ConformanceError("board on %s: %s" % (port, exc)) from None
        except ConformanceError:
            self._abandon()
            raise

    def _probe(self, port):
        """Before copying anything: can the board write a file, and has it os.urandom? (The
        runner itself needs only the first; the firmware it tests needs both.) One line
        instead of an `[Errno 19]` from the copy."""
        from .probe import PROBE_CODE, probe_message, probe_problems

        try:
            out = self.t.exec(PROBE_CODE).decode("utf-8", "replace")
        except self._TransportError as exc:
            out = str(getattr(exc, "error_output", exc))
        problems = probe_problems(out)
        if problems is None:
            tail = [line.strip() for line in out.splitlines() if line.strip()]
            raise ConformanceError("board on %s did not answer the probe: %s"
                                   % (port, tail[-1] if tail else "no output"))
        if problems:
            raise ConformanceError(probe_message(problems, "board on %s cannot run Zeal"
                                                   % port))

    def _install(self):
        """Copy firmware + runner to BOARD_DIR (skipping files whose SHA-256 already
        matches). Returns the number of files written."""
        t = self.t
        for d in (BOARD_DIR, BOARD_DIR + "/zealfw"):
            if not t.fs_exists(d):
                t.fs_mkdir(d)
        written = 0
        for rel, path in firmware_sources():
            with open(path, "rb") as fh:
                data = fh.read()
            dest = BOARD_DIR + "/" + rel
            try:
                same = (t.fs_exists(dest)
                        and t.fs_hashfile(dest, "sha256") == hashlib.sha256(data).digest())
            except Exception:  # no hashlib on the board, or an older mpremote: just copy
                same = False
            if not same:
                t.fs_writefile(dest, data)
                written += 1
        return written

    def _readline(self, timeout):
        """The next line of the runner's output; "" when none came within `timeout`; None
        when the runner is gone: the raw REPL's end-of-output mark (0x04: the program ended,
        its traceback follows) or the friendly REPL's prompt (the board rebooted), the
        board's last words noted."""
        deadline = time.monotonic() + timeout
        while True:
            cut = self._partial.find(b"\n")
            if cut >= 0:
                line, self._partial = self._partial[:cut + 1], self._partial[cut + 1:]
                if b"\x04" not in line:
                    return line.decode("utf-8", "replace")
                self._partial = line + self._partial
            if b"\x04" in self._partial or (not self._partial.startswith(MARK.encode())
                                            and self._partial.endswith(b">>> ")):
                self._died()
                return None
            if time.monotonic() >= deadline:
                return ""
            self._partial += self._read_waiting()

    def _died(self):
        # the runner's program ended: keep what the board says next (the traceback up to
        # the raw REPL's second 0x04 and ">" prompt) as its last words
        self.dead = True
        data = self._partial
        self._partial = b""
        deadline = time.monotonic() + self.LAST_WORDS_S
        while data.count(b"\x04") < 2 and not data.endswith(b">>> ") \
                and time.monotonic() < deadline:
            try:
                data += self._read_waiting()
            except ConformanceError:
                break
        self._note(data.decode("utf-8", "replace"))

    def _read_waiting(self):
        # the bytes waiting, or b"" when none came within 10 ms: never a blocking read
        ser = self.t.serial
        try:
            n = ser.in_waiting
            if not n:
                self._wait_readable(ser, 0.01)
                n = ser.in_waiting
            if n:
                return ser.read(n)
        except OSError as exc:
            raise ConformanceError("board connection lost: %s" % exc) from None
        return b""

    @staticmethod
    def _wait_readable(ser, timeout):
        """Until the line has a byte or `timeout` s pass: select() on the port where it has a
        file descriptor (a device, a pty, socket://), else a sleep."""
        import select

        try:
            fd = ser.fileno()
        except (AttributeError, OSError, ValueError, NotImplementedError):
            fd = None
        if fd is None:
            time.sleep(timeout)
            return
        try:
            select.select([fd], [], [], timeout)
        except (OSError, ValueError):  # (the port just closed: the read says so)
            time.sleep(timeout)

    def _write(self, data):
        try:
            for i in range(0, len(data), self.chunk):
                self.t.serial.write(data[i:i + self.chunk])
            self.t.serial.flush()
        except OSError as exc:
            self.dead = True
            if "timeout" in str(exc).lower():
                raise ConformanceError("the board stopped reading its input (nothing taken "
                                       "for %.0f s); last words: %s"
                                       % (self.WRITE_TIMEOUT_S, self.noise_tail() or "(none)")
                                       ) from None
            raise ConformanceError("board connection lost: %s" % exc) from None

    def _abandon(self):
        try:
            self.t.serial.write(b"\r\x03\x03")  # interrupt the runner
            self.t.exit_raw_repl()
        except Exception:
            pass
        try:
            self.t.close()
        except Exception:
            pass

    def close(self):
        if self.dead:  # nothing to say goodbye to: interrupt whatever runs, free the port
            self._abandon()
            return
        try:
            self._write(b'{"suite":"quit"}\n')
            _, err = self.t.follow(timeout=10)  # the two EOF markers of the raw REPL
            if err:
                self._note(err.decode("utf-8", "replace"))
            self.t.exit_raw_repl()
            self.t.close()
        except Exception:
            self._abandon()

