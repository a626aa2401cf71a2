"""pytest plugin: the --port option for hardware-in-the-loop tests.

Loaded from tests/conftest.py with `pytest_plugins = ["board_plugin"]`. Without --port every
board test reports SKIPPED (never passed).

    pytest tests/test_conformance.py --port /dev/ttyACM0
    pytest tests/test_conformance.py --port rfc2217://192.168.1.5:4000
"""
import pytest


def pytest_addoption(parser):
    group = parser.getgroup("zeal board", "hardware-in-the-loop (a MicroPython board)")
    group.addoption("--port", default=None, metavar="PORT",
                    help="serial port or pyserial URL of a MicroPython board; board tests "
                         "are skipped without it")
    group.addoption("--baud", type=int, default=115200, metavar="BAUD",
                    help="baud rate for --port (default 115200; ignored by USB-CDC)")


def board_port(config):
    """The --port value, or None (also when this plugin is not loaded)."""
    return config.getoption("--port", default=None)


@pytest.fixture(scope="session")
def board(request):
    """The board's port; skips the test when no --port was given."""
    port = board_port(request.config)
    if not port:
        pytest.skip("no board: pass --port PORT to run hardware-in-the-loop tests")
    return port
