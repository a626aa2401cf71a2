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
"""
import functools
import os
import sys

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
    tools = os.path.join(ROOT, "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import qemu_board

    return qemu_board


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
