"""pytest plugin: the board tests, on a physical board (--port) or on the emulated one.

Loaded from tests/conftest.py with `pytest_plugins = ["board_plugin"]`.

    pytest tests/test_conformance.py --port /dev/ttyACM0          # a physical board
    pytest tests/test_conformance.py --port rfc2217://192.168.1.5:4000
    pytest tests/test_conformance.py                              # the emulated board

Without --port the `board` fixture is the emulated board: MicroPython's QEMU port for
MPS2-AN385 with firmware/boards/qemu (tools/qemu_board.py), built once from the MicroPython
source that ZEAL_MICROPYTHON_SRC names and started once per session, its UART on a local TCP
port (`socket://127.0.0.1:PORT`). Without that source (or without the ARM toolchain and
qemu-system-arm to build and run it) the board tests skip with one line saying what to give;
under CI=true they fail instead (CI must not pass without them).

Every conformance vector on the emulated board takes about two minutes, mostly spent waiting
on its UART. When test_conformance.py's board tests (the `board_rows` fixture) are selected
and no --port is given, they start with the session, on a second emulated board of their
own, in a subprocess (`tools/qemu_board.py conformance --json FILE`) that the other tests
overlap; `background_conformance_rows()` waits for its rows.
"""
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_addoption(parser):
    group = parser.getgroup("zeal board", "hardware-in-the-loop (a MicroPython board)")
    group.addoption("--port", default=None, metavar="PORT",
                    help="serial port or pyserial URL of a MicroPython board; without it "
                         "the board tests run on the emulated board (tools/qemu_board.py)")
    group.addoption("--baud", type=int, default=115200, metavar="BAUD",
                    help="baud rate for --port (default 115200; ignored by USB-CDC)")


def board_port(config):
    """The --port value, or None (also when this plugin is not loaded)."""
    return config.getoption("--port", default=None)


def _strict():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def qemu_tool():
    """tools/qemu_board.py as a module."""
    from conftest import tools_module

    return tools_module("qemu_board")


@functools.lru_cache(maxsize=None)
def _firmware():
    """(path, None) of the emulated board's firmware (built now if missing), or (None, why,
    skippable): skippable when what is missing is the source or the tools, not a build."""
    Q = qemu_tool()
    if Q.source_path() is None:
        return None, "emulated board: " + Q.HOW, True
    missing = Q.missing_tools()
    if missing:
        return None, ("emulated board: needs %s (Debian: apt-get install %s)"
                      % (", ".join(missing), " ".join(missing))), True
    try:
        return Q.build(), None, False
    except Q.BuildError as exc:
        return None, "emulated board: %s" % exc, False


@pytest.fixture(scope="session")
def emulated_board():
    """The emulated board (a tools/qemu_board.QemuBoard, started once per session; .port is
    its URL). No source or tools: skip in one line, or fail under CI=true."""
    path, why, skippable = _firmware()
    if path is None:
        if skippable and not _strict():
            pytest.skip(why)
        pytest.fail(why)
    board = qemu_tool().QemuBoard(path)
    try:
        yield board
    finally:
        board.stop()


@pytest.fixture(scope="session")
def board(request):
    """The board's port: --port, else the emulated board's."""
    port = board_port(request.config)
    if port:
        return port
    return request.getfixturevalue("emulated_board").port


def wait_streaming(port, timeout=30.0):
    """Hold `port` open until the board shows that it streams: a HELLO frame ("!hello", the
    collector's request for one, is sent every second in case the first went out before the
    port was open: an emulated board drops what it sends while nobody has its port). True
    once seen, False after `timeout` s. For a test that needs a streaming board, instead of
    sleeping for as long as a board might take to get there."""
    import time

    import serial

    from zeal import wire

    ser = serial.serial_for_url(port, baudrate=115200, timeout=0.1)
    try:
        deframer = wire.Deframer()
        deadline = time.monotonic() + timeout
        asked = None
        while time.monotonic() < deadline:
            if asked is None or time.monotonic() - asked >= 1.0:
                ser.write(wire.HELLO_REQUEST)
                asked = time.monotonic()
            if any(isinstance(f, wire.Hello) for f in deframer.feed(ser.read(256))):
                return True
        return False
    finally:
        ser.close()


# ---- every conformance vector on an emulated board, in the background ------------------------
_background = {}


def pytest_collection_finish(session):
    config = session.config
    if board_port(config) or config.option.collectonly:
        return
    if not any("board_rows" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    path, _, _ = _firmware()
    if path is None:
        return  # the board tests say why
    folder = tempfile.mkdtemp(prefix="zeal-board-conformance-")
    rows, log = os.path.join(folder, "rows.json"), os.path.join(folder, "log.txt")
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "qemu_board.py"),
                                 "conformance", "--json", rows], cwd=ROOT, stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=qemu_tool()._die_with_parent)
    _background.update(proc=proc, folder=folder, rows=rows, log=log)


def background_conformance_rows(timeout=1800.0):
    """The rows (suite, id, passed, detail) of the background run, once it has ended; None
    when none was started (a physical board, or no emulated board to be had)."""
    if not _background:
        return None
    proc = _background["proc"]
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if "done" not in _background:
        _background["done"] = None
        if os.path.exists(_background["rows"]):
            with open(_background["rows"]) as fh:
                _background["done"] = [tuple(r) for r in json.load(fh)["rows"]]
    if _background["done"] is None:
        with open(_background["log"], errors="replace") as fh:
            tail = " | ".join(line.strip() for line in fh.read().splitlines()[-6:])
        pytest.fail("the conformance run on the emulated board ended with status %s: %s"
                    % (proc.returncode, tail or "no output"))
    return _background["done"]


def pytest_unconfigure(config):
    proc = _background.get("proc")
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    shutil.rmtree(_background["folder"], ignore_errors=True)
