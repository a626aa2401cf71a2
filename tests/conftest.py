import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = os.path.join(ROOT, "host")
if HOST not in sys.path:  # lets the suite run from a checkout without `pip install -e`
    sys.path.insert(0, HOST)

# board_plugin: --port PORT, hardware-in-the-loop tests; pg_server: the postgres_url fixture
# (a throw-away PostgreSQL cluster); mp_unix: the mp_port fixture (each test that takes it
# runs on the PyPI unix port and on the float32 build)
pytest_plugins = ["board_plugin", "pg_server", "mp_unix"]

HUMIDITY = (23.5, 83.9)
EPSILONS = (0.5, 1.0, 2.0, 4.0)
BITS = (2, 3, 4, 8, 16)


# ---- no silent skips in CI ------------------------------------------------------------------
# Under CI (CI=true, as .ci/run sets it) a skipped test counts as not run and fails the
# session: a tool or a source that is not found (a MicroPython port, mpy-cross, the emulated
# board's MicroPython source or QEMU) cannot turn tests green by not running them. The board
# tests run on the emulated board there (tests/board_plugin.py), so none may skip either;
# outside CI, without its source, they skip in one line saying how to give one.
_unexpected_skips = []


def tools_module(name: str):
    """A script of tools/ (build_micropython, qemu_board, ...) imported as a module."""
    import importlib

    tools = os.path.join(ROOT, "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return importlib.import_module(name)


def _strict_skips() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_runtest_logreport(report):
    if report.skipped and _strict_skips():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _unexpected_skips.append("%s: %s" % (report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    if _unexpected_skips and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _unexpected_skips:
        terminalreporter.section("skips not allowed in CI (CI=true)")
        for line in _unexpected_skips:
            terminalreporter.write_line(line)
