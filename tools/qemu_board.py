#!/usr/bin/env python3
"""The emulated board: MicroPython's QEMU port for MPS2-AN385 (a Cortex-M3) with Zeal's board
definition (firmware/boards/qemu: littlefs, boot.py/main.py, os.urandom, machine.reset()
rebooting, machine.unique_id, Ctrl-C), built once from a MicroPython source snapshot and
started with its UART on a local TCP port or a pseudo-terminal, which pyserial, mpremote and
every `zeal ... --port` command reach like a board's serial line.

The source is ZEAL_MICROPYTHON_SRC (or --src): a MicroPython source tree or a .tar.gz of one,
as for tools/build_micropython.py, whose cache this shares: the firmware is built under
<cache>/micropython-<snapshot>/qemu-<board hash>/ (the hash covers the board definition's
files, so an edited board is rebuilt), with mpy-cross built beside it; nothing is written
in the repository or in a given source tree. The build needs make, Debian's
gcc-arm-none-eabi and libnewlib-arm-none-eabi; running it needs qemu-system-arm (.ci/run
installs them). About a minute on 2 cores, once.

    python tools/qemu_board.py build [--src PATH]   # prints the firmware's path
    python tools/qemu_board.py run [--pty]          # prints the port; serves until Ctrl-C
    python tools/qemu_board.py conformance [--suite S] [--json FILE]
                                       # every vector on a fresh board (the tests run this
                                       # in the background: tests/board_plugin.py)

From Python (the tests' emulated board, tests/board_plugin.py):

    fw = build()                          # BuildError (one line) without source or tools
    with QemuBoard(fw) as board:          # a fresh board: empty filesystem
        board.port                        # "socket://127.0.0.1:PORT" (or "/dev/pts/N")

The board's filesystem lives in the emulated memory: it survives machine.reset() and
Ctrl-D, and is empty at every start of QEMU. Its os.urandom is not a secure generator (the
port's LCG, the same sequence at every boot): the emulated board is for tests only.
"""
import argparse
import hashlib
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_micropython import (ENV_SRC, BuildError, cache_root,  # noqa: E402
                               source_path, source_tree)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARD_DIR = os.path.join(ROOT, "firmware", "boards", "qemu")
BOARD = "ZEAL_QEMU"
MACHINE = "mps2-an385"
QEMU = "qemu-system-arm"
NO_FS_KNOB = (0x21600000, 0x2F4E4F46)  # (address, word): _boot.py then mounts nothing
APT_PACKAGES = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "qemu-system-arm")
HOW = ("set %s to a MicroPython source tree or its .tar.gz (tools/qemu_board.py builds the "
       "emulated board from it once, about a minute; it needs %s)"
       % (ENV_SRC, ", ".join(APT_PACKAGES)))


def board_hash():
    """12 hex digits of SHA-256 over the board definition's files (not its README)."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(BOARD_DIR)):
        path = os.path.join(BOARD_DIR, name)
        if name.endswith(".md") or not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            h.update(name.encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()[:12]


def firmware_path(src=None):
    """Where the emulated board's firmware of this snapshot and board is (or will be)."""
    return os.path.join(cache_root(src), "qemu-" + board_hash(), "firmware.elf")


def missing_tools():
    """The Debian packages missing for building and running the board ([] when none)."""
    missing = []
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        missing.append("gcc-arm-none-eabi")
    else:
        done = subprocess.run([gcc, "-print-file-name=libc.a"], capture_output=True, text=True)
        if not os.path.isabs(done.stdout.strip()):
            missing.append("libnewlib-arm-none-eabi")
    if shutil.which(QEMU) is None:
        missing.append("qemu-system-arm")
    if shutil.which("make") is None:
        missing.append("make")
    return missing


def _make(argv, log, what):
    with open(log, "w") as fh:
        done = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        with open(log) as fh:
            tail = fh.read()[-2000:]
        raise BuildError("building %s failed (log: %s):\n%s" % (what, log, tail))


def build(src=None, quiet=False, jobs=None):
    """The path of the emulated board's firmware.elf built from `src` (ZEAL_MICROPYTHON_SRC);
    built now if missing. BuildError (one line) without source or tools, or when make fails."""
    out = firmware_path(src)
    if os.path.isfile(out):
        return out
    missing = missing_tools()
    if missing:
        raise BuildError("building the emulated board needs %s (Debian: apt-get install %s)"
                         % (", ".join(missing), " ".join(missing)))
    tree = source_tree(src)
    cache = cache_root(src)
    jobs = "-j%d" % (jobs or os.cpu_count() or 1)
    t0 = time.monotonic()
    if not quiet:
        print("building the emulated board (QEMU MPS2-AN385, about a minute) ...",
              file=sys.stderr)
    mpy_cross = os.path.join(cache, "build-mpy-cross", "mpy-cross")
    if not os.access(mpy_cross, os.X_OK):
        _make(["make", "-C", os.path.join(tree, "mpy-cross"), jobs,
               "BUILD=" + os.path.dirname(mpy_cross)],
              os.path.join(cache, "build-mpy-cross.log"), "mpy-cross")
    final = os.path.dirname(out)
    tmp = tempfile.mkdtemp(prefix="qemu-build-", dir=cache)
    try:
        _make(["make", "-C", os.path.join(tree, "ports", "qemu"), jobs, "BOARD=" + BOARD,
               "BOARD_DIR=" + BOARD_DIR, "BUILD=" + tmp, "MICROPY_MPYCROSS=" + mpy_cross],
              os.path.join(cache, "build-qemu.log"), "the emulated board")
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isfile(out):  # not another process's finished build: a failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not quiet:
        print("built %s in %.0f s" % (out, time.monotonic() - t0), file=sys.stderr)
    return out


def _die_with_parent():
    """In the child, before QEMU starts: on Linux, be sent SIGTERM when the process that
    started it (its thread) dies, even by SIGKILL: no QEMU outlives a killed test run."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Relay:
    """The board's UART as the host's programs reach it: a local TCP port whose one client at
    a time is relayed to QEMU's serial port, to which the relay stays connected.

    Why: pyserial's socket:// opens its TCP connection without TCP_NODELAY, so a small write
    (mpremote's end-of-code 0x04 after the code, the harness's 64-byte chunks) waits for the
    ACK of the one before, and QEMU's end of the connection delays its ACKs (40 ms on Linux):
    about 50 ms lost on every raw-REPL exchange, three or more per file mpremote copies or
    hashes. The relay acknowledges at once (TCP_QUICKACK after every read) and writes without
    delay (TCP_NODELAY) both ways; bytes pass unchanged.

    What the board's port does is kept: what the board sends while no program has the port
    open is dropped (a UART with nobody listening; QEMU's server socket, wait=off, does the
    same); one program at a time has it (the next one's connection waits until the current
    one closes); bytes a program wrote before closing still reach the board; and the port
    closes when QEMU ends. A side that does not read is not read for either (QEMU then holds
    the board's output, as with a program that does not read its port)."""

    BUFFER = 1 << 16  # bytes held for a side that does not read, before its source waits

    def __init__(self, qemu_port):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.upstream = socket.create_connection(("127.0.0.1", qemu_port), timeout=5)
        self.upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False
        # set once the board has booted (its REPL's prompt came): mpremote's Ctrl-C arriving
        # during the boot interrupts _boot.py and has left the emulated board mute
        self.booted = threading.Event()
        self._boot_tail = b""
        self._thread = threading.Thread(target=self._run, name="qemu-uart-relay", daemon=True)
        self._thread.start()

    @staticmethod
    def _quick_ack(sock):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, "TCP_QUICKACK", 12), 1)
        except OSError:
            pass

    def _run(self):
        up, listener = self.upstream, self.listener
        for s in (up, listener, self._wake_r):
            s.setblocking(False)
        client = None
        to_board = bytearray()   # from the client, for QEMU
        to_client = bytearray()  # from QEMU, for the client
        sel = selectors.DefaultSelector()
        try:
            while not self._stopping:
                want = {self._wake_r: selectors.EVENT_READ}
                if len(to_client) < self.BUFFER:
                    want[up] = selectors.EVENT_READ
                if to_board:
                    want[up] = want.get(up, 0) | selectors.EVENT_WRITE
                if client is None:
                    if not to_board:  # what a closed client wrote goes first
                        want[listener] = selectors.EVENT_READ
                else:
                    ev = selectors.EVENT_READ if len(to_board) < self.BUFFER else 0
                    if to_client:
                        ev |= selectors.EVENT_WRITE
                    if ev:
                        want[client] = ev
                for s, ev in want.items():
                    sel.register(s, ev)
                try:
                    ready = sel.select(None if self.booted.is_set() else 0.25)
                finally:
                    for s in want:
                        sel.unregister(s)
                if not ready and not self.booted.is_set():
                    # its banner may have gone out before QEMU took this connection: a CR
                    # (kept in the UART's buffer while it boots) has the REPL prompt again
                    to_board += b"\r"
                    continue
                for key, ev in ready:
                    s = key.fileobj
                    if s is self._wake_r:
                        continue
                    if s is listener:
                        try:
                            client, _ = listener.accept()
                        except OSError:
                            continue
                        client.setblocking(False)
                        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self._quick_ack(client)
                        to_client.clear()
                        continue
                    if s is up:
                        if ev & selectors.EVENT_READ:
                            try:
                                data = up.recv(65536)
                            except (BlockingIOError, InterruptedError):
                                data = None
                            if data == b"":
                                return  # QEMU ended: the port closes
                            if data and not self.booted.is_set():
                                self._boot_tail = (self._boot_tail + data)[-64:]
                                if b">>> " in self._boot_tail:
                                    self.booted.set()
                            if data and client is not None:
                                to_client += data
                        if ev & selectors.EVENT_WRITE and to_board:
                            try:
                                del to_board[:up.send(to_board)]
                            except (BlockingIOError, InterruptedError):
                                pass
                        continue
                    if s is client:
                        gone = False
                        if ev & selectors.EVENT_READ:
                            try:
                                data = client.recv(65536)
                                self._quick_ack(client)
                            except (BlockingIOError, InterruptedError):
                                data = None
                            except OSError:
                                data = b""
                            if data == b"":
                                gone = True
                            elif data:
                                to_board += data
                        if not gone and ev & selectors.EVENT_WRITE and to_client:
                            try:
                                del to_client[:client.send(to_client)]
                            except (BlockingIOError, InterruptedError):
                                pass
                            except OSError:
                                gone = True
                        if gone:
                            client.close()
                            client = None
                            to_client.clear()
        except OSError:
            pass  # QEMU's side failed: the port closes
        finally:
            sel.close()
            if client is not None:
                client.close()
            for s in (listener, up):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self):
        self._stopping = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout=5)
        for s in (self._wake_r, self._wake_w, self.listener, self.upstream):
            try:
                s.close()
            except OSError:
                pass


class QemuBoard:
    """One emulated board: QEMU running `firmware`, its UART on `self.port` (a pyserial URL
    socket://127.0.0.1:PORT, relayed to QEMU's own TCP port by a thread of this process:
    _Relay; or with pty=True a /dev/pts/N path). A fresh board has an empty
    filesystem; with filesystem=False none is mounted (as on the stock QEMU port). stop() (or
    leaving the `with` block) ends QEMU; `returncode` is then set (a firmware that exits on a
    fatal error ends QEMU by itself: `alive` turns false)."""

    def __init__(self, firmware, pty=False, filesystem=True, start_timeout=20.0):
        self.firmware = firmware
        self.pty = pty
        self.filesystem = filesystem
        self.port = None
        self.proc = None
        self.output = []  # what QEMU itself printed (not the board's UART)
        self._relay = None  # the TCP port's relay (_Relay), not with pty
        self._start(start_timeout)

    def _argv(self, serial):
        argv = [QEMU, "-machine", MACHINE, "-nographic", "-monitor", "none", "-semihosting",
                "-serial", serial, "-kernel", self.firmware]
        if not self.filesystem:  # the word firmware/boards/qemu/_boot.py looks for
            argv += ["-device", "loader,addr=%#x,data=%#x,data-len=4" % NO_FS_KNOB]
        return argv

    def _start(self, timeout):
        for attempt in range(5):
            if self.pty:
                argv = self._argv("pty")
            else:
                tcp = _free_port()
                argv = self._argv("tcp:127.0.0.1:%d,server=on,wait=off,nodelay=on" % tcp)
            self.output = []
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
            self._reader = threading.Thread(target=self._pump, daemon=True)
            self._reader.start()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.pty:
                    m = re.search(r"char device redirected to (\S+)", "".join(self.output))
                    if m:
                        self.port = m.group(1)
                        return
                else:
                    try:
                        socket.create_connection(("127.0.0.1", tcp), timeout=1).close()
                    except OSError:
                        pass
                    else:
                        self._relay = _Relay(tcp)
                        self.port = "socket://127.0.0.1:%d" % self._relay.port
                        # handed out once booted (filesystem mounted, at its REPL), as a
                        # board plugged in a moment before
                        if self._relay.booted.wait(max(1.0, deadline - time.monotonic())):
                            return
                        said = " ".join("".join(self.output).split())[-300:]
                        self.stop()
                        raise BuildError("the emulated board did not reach its REPL within "
                                         "%.0f s (QEMU said: %s)" % (timeout, said or
                                                                    "nothing"))
                time.sleep(0.05)
            said = " ".join("".join(self.output).split())[-300:]
            self.stop()
            if not self.pty and "Address already in use" in said:
                continue  # the free port was taken meanwhile: another one
            raise BuildError("%s did not start (%s)" % (QEMU, said or "no output"))
        raise BuildError("%s found no free TCP port" % QEMU)

    def _pump(self):
        for line in iter(self.proc.stdout.readline, b""):
            self.output.append(line.decode("utf-8", "replace"))

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self):
        return None if self.proc is None else self.proc.poll()

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        self.proc.stdout.close()
        if self._relay is not None:
            self._relay.close()
            self._relay = None

    def restart(self):
        """A fresh board (empty filesystem) on a new port."""
        self.stop()
        self._start(20.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _zeal_conformance():
    host = os.path.join(ROOT, "host")
    if host not in sys.path:  # a checkout without `pip install -e`
        sys.path.insert(0, host)
    from zeal.board import conformance

    return conformance


def run_conformance(firmware, suites=None, timeout=120.0):
    """Every conformance vector of `suites` (default all) on a fresh emulated board, as
    `zeal conformance --target board --port PORT` runs them (`timeout`: seconds a case may
    take): zeal.board.conformance.run's rows (suite, id, passed, detail). ConformanceError
    when the board cannot be used at all."""
    C = _zeal_conformance()
    with QemuBoard(firmware) as board:
        return C.run("board", suites, port=board.port, timeout=timeout)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build (once) and run the emulated board: "
                                 "MicroPython's QEMU port for MPS2-AN385 with "
                                 "firmware/boards/qemu.")
    ap.add_argument("--src", help="MicroPython source tree or .tar.gz (default: $%s)" % ENV_SRC)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build the firmware (once) and print its path")
    run = sub.add_parser("run", help="start the emulated board and print its port")
    run.add_argument("--pty", action="store_true",
                     help="the UART on a pseudo-terminal (default: a local TCP port)")
    conf = sub.add_parser("conformance", help="run the conformance vectors on a fresh "
                          "emulated board (zeal conformance --target board), then end it")
    conf.add_argument("--suite", action="append", help="suite to run (repeatable; default all)")
    conf.add_argument("--timeout", type=float, default=120.0, metavar="S",
                      help="seconds a case may take (default 120)")
    conf.add_argument("--json", metavar="FILE",
                      help="write every row (suite, id, passed, detail) to FILE as JSON")
    args = ap.parse_args(argv)
    try:
        fw = build(args.src)
        if args.cmd == "build":
            print(fw)
            return 0
        if args.cmd == "conformance":
            return _conformance(fw, args)
        with QemuBoard(fw, pty=args.pty) as board:
            print(board.port, flush=True)
            print("emulated board on %s (Ctrl-C ends it)" % board.port, file=sys.stderr)
            signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
            try:
                board.proc.wait()
            except KeyboardInterrupt:
                pass
            if board.returncode not in (None, 0, -signal.SIGTERM):
                print("qemu_board: QEMU ended with status %s" % board.returncode,
                      file=sys.stderr)
    except BuildError as exc:
        if str(exc).startswith("no MicroPython source"):
            exc = BuildError("no MicroPython source: " + HOW)
        print("qemu_board: %s" % exc, file=sys.stderr)
        return 2
    return 0


def _conformance(fw, args):
    C = _zeal_conformance()
    t0 = time.monotonic()
    try:
        rows = run_conformance(fw, args.suite, args.timeout)
    except C.ConformanceError as exc:  # the board could not be used at all
        print("qemu_board: %s" % exc, file=sys.stderr)
        return 2
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "seconds": round(time.monotonic() - t0, 1)}, fh)
    else:
        print(C.format_table(rows, "emulated board", failures_only=True))
    return 1 if any(r[2] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
