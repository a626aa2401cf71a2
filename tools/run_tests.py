#!/usr/bin/env python3
"""`make test`: the suite as two pytest processes at once, each on its own share of the test
files, so that one process's waits (emulated boards, brokers, servers, timeouts) overlap the
other's work. A serial run keeps one of the machine's two cores idle most of the time
(measured: 16 min of CPU in a 19 min run).

    python tools/run_tests.py [--groups N] [--record] [-- PYTEST ARGS]

The files are shared out greedily by their measured seconds (tests/data/test_seconds.json;
a file not in it counts as the median), heaviest first, each to the group with the least so
far; the files in SOLO (tests that hold the collector to a pace) run alone afterwards. Every group is a whole pytest run of its files (its own fixtures, servers and emulated
boards; CI=true's no-skip rule holds in each); their outputs are printed one after the other
as they end, and the exit status is the first failing group's (0 when all pass).
`--record` runs the suite in one process with --durations=0 and writes the table again.
--groups 1 is a plain pytest run.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files whose tests hold the collector to a pace (a commit at least every second under input
# that never pauses): they run alone, after the groups, as in a serial run -- a neighbour
# process on the same two cores stretched one commit gap to 2.1 s.
SOLO = ("test_collector_load.py",)
TESTS = os.path.join(ROOT, "tests")
TABLE = os.path.join(TESTS, "data", "test_seconds.json")


def test_files():
    return sorted(f for f in os.listdir(TESTS) if f.startswith("test_") and f.endswith(".py"))


def shares(files, seconds, groups):
    """[[file]] * groups: heaviest first, each to the lightest group so far."""
    known = sorted(seconds.values())
    median = known[len(known) // 2] if known else 1.0
    out = [[] for _ in range(groups)]
    load = [0.0] * groups
    for f in sorted(files, key=lambda f: (-seconds.get(f, median), f)):
        i = load.index(min(load))
        out[i].append(f)
        load[i] += seconds.get(f, median)
    return [sorted(g) for g in out if g], load


def prebuild():
    """Build the float32 unix port and the emulated board once, before the groups start (the
    tests would build them on first use, and two groups must not both do it). Cached per
    snapshot; without a MicroPython source (ZEAL_MICROPYTHON_SRC) there is nothing to build,
    and a build that fails is left to the tests to report."""
    if not os.environ.get("ZEAL_MICROPYTHON_SRC"):
        return
    for tool, args in (("build_micropython.py", ["--quiet"]), ("qemu_board.py", ["build"])):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", tool), *args], cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def record(pytest_args):
    """Run the whole suite once with --durations=0 and write the per-file seconds."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--durations=0", *pytest_args],
                          cwd=ROOT, capture_output=True, text=True)
    sys.stdout.write(done.stdout[-3000:])
    seconds = {}
    for line in done.stdout.splitlines():
        m = re.match(r"^([0-9.]+)s (?:call|setup|teardown)\s+tests/([^:]+)::", line)
        if m:
            seconds[m.group(2)] = round(seconds.get(m.group(2), 0.0) + float(m.group(1)), 1)
    with open(TABLE, "w") as fh:
        json.dump(dict(sorted(seconds.items())), fh, indent=1)
        fh.write("\n")
    print("recorded the seconds of %d test files in %s" % (len(seconds), TABLE))
    return done.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=2, help="pytest processes at once (2)")
    ap.add_argument("--record", action="store_true", help="measure the files' seconds again")
    ap.add_argument("pytest_args", nargs="*", help="passed to every pytest (after --)")
    args = ap.parse_args(argv)
    if args.record:
        return record(args.pytest_args)
    if args.groups <= 1:
        return subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args], cwd=ROOT)
    try:
        with open(TABLE) as fh:
            seconds = json.load(fh)
    except (OSError, ValueError):
        seconds = {}
    groups, load = shares([f for f in test_files() if f not in SOLO], seconds, args.groups)
    prebuild()
    started = time.monotonic()
    runs = []
    with tempfile.TemporaryDirectory(prefix="zeal-tests-") as tmp:
        for i, files in enumerate(groups):
            log = open(os.path.join(tmp, "group%d.txt" % i), "w+")
            proc = subprocess.Popen([sys.executable, "-m", "pytest", *args.pytest_args,
                                     *[os.path.join("tests", f) for f in files]],
                                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            runs.append((i, files, log, proc))
            print("group %d: %d test files (about %.0f s measured)" % (i, len(files), load[i]),
                  flush=True)
        status = 0
        pending = list(runs)
        try:
            while pending:
                for run in list(pending):
                    i, files, log, proc = run
                    if proc.poll() is None:
                        continue
                    pending.remove(run)
                    log.seek(0)
                    print("==== group %d (%d files) ended with status %d after %.0f s ===="
                          % (i, len(files), proc.returncode, time.monotonic() - started))
                    sys.stdout.write(log.read())
                    sys.stdout.flush()
                    log.close()
                    if proc.returncode and not status:
                        status = proc.returncode
                time.sleep(0.5)
        except KeyboardInterrupt:
            for _, _, _, proc in pending:
                proc.terminate()
            for _, _, _, proc in pending:
                proc.wait()
            print("run_tests: interrupted", file=sys.stderr)
            return 130
    solo = [f for f in SOLO if f in test_files()]
    if solo:
        print("==== alone: %s ====" % ", ".join(solo), flush=True)
        code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args,
                                *[os.path.join("tests", f) for f in solo]], cwd=ROOT)
        if code and not status:
            status = code
    print("all groups done in %.0f s: %s" % (time.monotonic() - started,
                                            "passed" if not status else "FAILED"))
    return status


if __name__ == "__main__":
    sys.exit(main())
