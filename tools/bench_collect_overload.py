#!/usr/bin/env python3
"""`zeal collect` under sustained full-rate input on many serial lines (issue 18, finding 1).

    python tools/bench_collect_overload.py                 # 190 ports, 20 s
    python tools/bench_collect_overload.py --ports 64 --seconds 10 --json

Each port is a pty; one feeder thread in this process writes to all of them, as fast as each
line takes it, frames made by the host's reference encoder (the wire vectors pin it to the
firmware's bytes): one device per port, DATA frames of --batch reports at m = --bits, a
HELLO every 16 frames, as the firmware. The collector is the real `zeal collect --json`
(a subprocess, SQLite). After --seconds of input the feeder finishes the frame it is
writing, sends STATUS STOPPED on every port, and the collector ends (--until-stopped) once
everything it read is committed.

Measured per run:
  reports/s         reports committed while the input ran (sampled from the database when
                    the feeder stops) / --seconds
  committed/read    frames committed when the feeder stopped / frames written by then: the
                    rest is in the ptys' kernel buffers and the collector's bounded queue
  tail              seconds from the end of the input to the collector's exit (every frame
                    read committed; before the fix: minutes of backlog at 190 ports)
  latency p99/max   the collector's own commit latency: from a frame's reading to the commit
                    that stored it (summary keys commit_latency_p99_s / _max_s)
  commit gap max    the longest time the committed frame count stood still while the feeder
                    was writing (sampled every 0.1 s from the database)
  peak memory       the collector process's VmHWM (peak resident set)
  reader wait       seconds the collector's readers waited for room in its queue (the
                    back-pressure: while waiting they read nothing and the lines held the data)

Baseline, measured in the same run: ONE port at full rate through the same collector. The
ratios are the many-port figure over the one-port figure (reports/s: how much of one line's
rate the host sustains in all; latency and memory: what the many ports cost).

One run on the 2-core development VM (190 ports, 20 s, batch 32, m = 8): 742 k reports/s
committed during the input (0.85 of one port's 869 k), commit latency p99 0.19 s (1.11 x;
max 0.25 s), no 0.1 s sample without a commit longer than 0.25 s, peak memory 72 MB (1.35 x
54 MB), 0 frames lost; 86 % of what was written committed by the end of the input (the rest
was in the ptys' buffers: a 3.5 s tail). The collector before issue 18's fix, same run:
9 k reports/s committed during the input at 190 ports, 17.9 s without a commit, 330 MB.
"""
import argparse
import fcntl
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal import wire  # noqa: E402
from zeal.errors import ZealError  # noqa: E402
from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.grid import reports  # noqa: E402
from zeal.collect.virtual import Pty  # noqa: E402

LO, HI, EPS = 23.5, 83.9, 1.0
PIECE = 64  # frames a write


def pieces(prof, index, batch):
    """Endless (bytes, frames) writes of one device: HELLO every 16 frames, then DATA."""
    fp = bytes.fromhex(prof.fingerprint)[:8]
    dev = b"ovl%05d" % index
    nonce = index.to_bytes(8, "big")
    sess = wire.session_bytes(dev, fp, 1, nonce)
    lows = [reports.to_low(prof, prof.k_lo + (index * 7 + j) % prof.n_cells)
            for j in range(batch)]
    seq = 0
    while True:
        out = []
        for _ in range(PIECE):
            if seq % 16 == 0:
                out.append(wire.encode_hello(device_id=dev, fingerprint=fp, boot=1,
                                             bits=prof.bits, batch=batch, nonce=nonce,
                                             next_seq=seq))
            out.append(wire.encode_data(seq=seq, bits=prof.bits, session=sess,
                                        reports=lows[seq % batch:] + lows[:seq % batch]))
            seq += 1
        yield b"".join(out), PIECE


class Feeder(threading.Thread):
    """One thread writing to every pty (non-blocking, select on the masters) until `stop`;
    then it ends the piece each line is in and sends STATUS STOPPED. `written`: frames
    written completely so far."""

    def __init__(self, lines, prof, batch):
        super().__init__(daemon=True)
        self.lines = lines
        self.gens = [pieces(prof, i, batch) for i in range(len(lines))]
        self.stop = threading.Event()
        self.written = 0
        self.stopped_at = None
        for line in lines:
            fcntl.fcntl(line.master, fcntl.F_SETFL,
                        fcntl.fcntl(line.master, fcntl.F_GETFL) | os.O_NONBLOCK)

    def run(self):
        stopped = wire.encode_status(code=4, ticks=0, message="stopped")
        fds = [line.master for line in self.lines]
        pending = {fd: [memoryview(b""), 0, False] for fd in fds}  # view, frames, final
        open_fds = set(fds)
        gen = dict(zip(fds, self.gens))
        while open_fds:
            _, ready, _ = select.select([], list(open_fds), [], 0.1)
            for fd in ready:
                state = pending[fd]
                if not state[0]:
                    if state[2]:
                        open_fds.discard(fd)
                        continue
                    if self.stop.is_set():
                        if self.stopped_at is None:
                            self.stopped_at = time.monotonic()
                        state[0], state[1], state[2] = memoryview(stopped), 0, True
                    else:
                        data, n = next(gen[fd])
                        state[0], state[1] = memoryview(data), n
                try:
                    state[0] = state[0][os.write(fd, state[0]):]
                except BlockingIOError:
                    continue
                if not state[0]:
                    self.written += state[1]


def frames_in(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM frames").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def links_in(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM links").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def vm_hwm(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def one_run(n_ports, seconds, prof, batch, folder, tag):
    db = os.path.join(folder, "%s.db" % tag)
    prof_file = os.path.join(folder, "profile.json")
    with open(prof_file, "w") as f:
        f.write(prof.to_json())
    lines = [Pty() for _ in range(n_ports)]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host") + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "zeal.cli", "collect", "--db", db, "--profile", prof_file,
           "--until-stopped", "--json"]
    for line in lines:
        cmd += ["--port", line.port]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    feeder = Feeder(lines, prof, batch)
    try:
        deadline = time.monotonic() + 60
        while links_in(db) < n_ports:  # pyserial flushes the input on open: wait for all
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ZealError("the collector did not open its %d ports: %s"
                                % (n_ports, proc.stderr.read()[-500:]))
            time.sleep(0.05)
        started = time.monotonic()
        feeder.start()
        hwm, last_count, last_change, gap_max = 0, 0, started, 0.0
        while time.monotonic() < started + seconds:
            time.sleep(0.1)
            hwm = max(hwm, vm_hwm(proc.pid))
            now, n = time.monotonic(), frames_in(db)
            if n != last_count:
                gap_max = max(gap_max, now - last_change)
                last_count, last_change = n, now
        gap_max = max(gap_max, time.monotonic() - last_change)
        written = feeder.written
        committed = frames_in(db)
        feeder.stop.set()
        ended_input = time.monotonic()
        while proc.poll() is None:
            hwm = max(hwm, vm_hwm(proc.pid))
            time.sleep(0.05)
            if time.monotonic() > ended_input + 600:
                proc.send_signal(signal.SIGINT)
        tail = time.monotonic() - ended_input
        out, err = proc.communicate()
        feeder.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for line in lines:
            line.close()
    if proc.returncode != 0:
        raise ZealError("collector exited %d: %s" % (proc.returncode, err.strip()[-500:]))
    doc = json.loads(out)
    return {
        "ports": n_ports, "seconds": seconds,
        "reports_per_s": committed * batch / seconds,
        "frames_written": written, "frames_committed_at_end_of_input": committed,
        "frames_stored": doc["frames"], "lost_frames": doc["lost_frames"],
        "tail_s": tail, "commit_latency_p99_s": doc.get("commit_latency_p99_s"),
        "commit_latency_max_s": doc.get("commit_latency_max_s"),
        "commit_gap_max_s": gap_max, "peak_memory_bytes": hwm,
        "reader_wait_s": doc.get("reader_wait_s"), "queue_peak_bytes": doc.get("queue_peak_bytes"),
        "commits": doc.get("commits"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ports", type=int, default=190, help="ports of the main run (190)")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds of input (20)")
    ap.add_argument("--bits", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32, help="reports per DATA frame (32)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if args.ports < 1 or args.seconds <= 0 or not 1 <= args.batch <= 255:
        raise ZealError("--ports >= 1, --seconds > 0, --batch 1..255")
    prof = P.from_bits(LO, HI, EPS, args.bits)
    with tempfile.TemporaryDirectory() as folder:
        print("baseline: 1 port, %g s ..." % args.seconds, file=sys.stderr)
        base = one_run(1, args.seconds, prof, args.batch, folder, "base")
        print("main: %d ports, %g s ..." % (args.ports, args.seconds), file=sys.stderr)
        main_run = one_run(args.ports, args.seconds, prof, args.batch, folder, "main")
    ratios = {k: (main_run[k] / base[k] if base[k] and main_run[k] is not None else None)
              for k in ("reports_per_s", "commit_latency_p99_s", "peak_memory_bytes")}
    if args.json:
        print(json.dumps({"baseline": base, "main": main_run, "ratios": ratios}, indent=1))
        return 0
    print("stream: DATA frames of %d reports at m = %d, HELLO every 16 frames, full rate, "
          "%g s of input" % (args.batch, args.bits, args.seconds))
    rows = [("ports", "%d", "ports"), ("reports/s (committed during input)", "%.0f",
                                       "reports_per_s"),
            ("committed/written at end of input", "%.3f", None),
            ("tail after input (s)", "%.2f", "tail_s"),
            ("commit latency p99 (s)", "%.3f", "commit_latency_p99_s"),
            ("commit latency max (s)", "%.3f", "commit_latency_max_s"),
            ("commit gap max, sampled (s)", "%.2f", "commit_gap_max_s"),
            ("peak memory (MB)", "%.1f", "peak_memory_bytes"),
            ("reader wait (s)", "%.1f", "reader_wait_s"),
            ("lost frames (gaps)", "%d", "lost_frames")]
    print("%-38s %12s %12s %8s" % ("", "baseline", "main", "ratio"))
    for label, fmt, key in rows:
        vals = []
        for run in (base, main_run):
            if key is None:
                v = run["frames_committed_at_end_of_input"] / max(1, run["frames_written"])
            elif key == "peak_memory_bytes":
                v = run[key] / 1e6
            else:
                v = run[key]
            vals.append(v)
        ratio = ratios.get(key)
        shown = ["n/a" if v is None else fmt % v for v in vals]  # a collector without it
        print("%-38s %12s %12s %8s" % (label, shown[0], shown[1],
                                       "" if ratio is None else "%.2f" % ratio))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ZealError as exc:
        print("zeal: %s" % exc, file=sys.stderr)
        sys.exit(1)
