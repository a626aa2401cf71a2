"""Throughput of decoding stored payloads (zeal.analysis.decode.decode_values) vs a numpy copy.

    python tools/bench_decode.py                 # 10^6 reports in frames of 64, m = 4, 16, 52
    python tools/bench_decode.py -n 200000 --bits 3 13 31 --count 255

For each m: rows shaped as Store.frames() returns them (device, boot, seq, fingerprint,
count, payload, arrival), payloads packed by the reference encoder zeal.wire.pack_reports
from uniform offsets. Best of R runs of `decode_values(profile, rows)` (payloads -> float64
doubles, every report checked against the grid), and best of R runs of `out.copy()` of the
float64 output (same size), timed in the same process, alternately. The ratio is copy time /
decode time: 1.0 would mean decoding costs no more than copying its result once.
Goal: ratio >= 0.2. The decoded doubles are checked against zeal.wire.unpack_reports frame by
frame before timing.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))

from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal import wire  # noqa: E402
from zeal.mechanism.grid import reports  # noqa: E402
from zeal.analysis.analyze import decode_values  # noqa: E402

LO, HI, EPS = 23.5, 83.9, 1.0


def make_rows(prof, n, count, rng):
    """Frames of `count` reports (the last one shorter) with uniform offsets, as stored."""
    j = rng.integers(0, prof.n_cells, n, dtype=np.int64)
    lows = (j + (prof.k_lo - prof.wire_base)).tolist()
    rows = []
    for seq, start in enumerate(range(0, n, count)):
        chunk = lows[start:start + count]
        rows.append((b"\x01" * 8, 1, seq & 0xFFFF, prof.fingerprint, len(chunk),
                     wire.pack_reports(chunk, prof.bits), 0.0))
    return rows


def verify(prof, rows, values):
    want = np.concatenate([reports.floats_from_offsets(
        prof, reports.offsets_from_low(prof, wire.unpack_reports(r[5], r[4], prof.bits)))
        for r in rows])
    if not np.array_equal(values.view(np.uint64), want.view(np.uint64)):
        raise SystemExit("decode_values disagrees with wire.unpack_reports (m = %d)" % prof.bits)


def measure(prof, rows, repeats):
    t_dec = t_copy = float("inf")
    out = decode_values(prof, rows)
    for _ in range(repeats):  # alternate, so both see the same machine state
        t0 = time.perf_counter()
        out = decode_values(prof, rows)
        t_dec = min(t_dec, time.perf_counter() - t0)
        t0 = time.perf_counter()
        out.copy()
        t_copy = min(t_copy, time.perf_counter() - t0)
    return t_dec, t_copy, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="reports (default 1e6)")
    ap.add_argument("--count", type=int, default=64, help="reports per frame (default 64)")
    ap.add_argument("--bits", type=int, nargs="+", default=[4, 16, 52],
                    help="bits per report (default 4 16 52)")
    ap.add_argument("--repeats", type=int, default=15, help="best of this many (default 15)")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv)
    if not 1 <= args.count <= wire.MAX_COUNT:
        ap.error("--count must be in 1..%d" % wire.MAX_COUNT)

    rng = np.random.default_rng(args.seed)
    print("n = %d reports in frames of %d; best of %d" % (args.n, args.count, args.repeats))
    print("%4s %8s %12s %12s %14s %8s" % ("m", "frames", "decode ms", "copy ms",
                                          "Mreports/s", "ratio"))
    worst = float("inf")
    for bits in args.bits:
        prof = P.from_bits(LO, HI, EPS, bits)
        rows = make_rows(prof, args.n, args.count, rng)
        t_dec, t_copy, out = measure(prof, rows, args.repeats)
        verify(prof, rows, out)
        ratio = t_copy / t_dec
        worst = min(worst, ratio)
        print("%4d %8d %12.3f %12.3f %14.1f %8.3f" % (bits, len(rows), t_dec * 1e3,
                                                      t_copy * 1e3, args.n / t_dec / 1e6,
                                                      ratio))
    print("goal: ratio >= 0.2 -> %s" % ("met" if worst >= 0.2 else "NOT met (worst %.3f)"
                                        % worst))


if __name__ == "__main__":
    main()
