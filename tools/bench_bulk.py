"""Throughput of the bulk sampler (statistical mode) against raw word generation.

    python tools/bench_bulk.py               # the table: auto profile, bits 8 and 16
    python tools/bench_bulk.py --sweep       # the same rows for several chunk sizes

For each profile: best of R runs of `sample_offsets_fast` on n humidity-like readings
(uniform in [23.5, 83.9]), and best of R runs of `rng.bit_generator.random_raw(3 n)`, the
words those n reports consume, timed in the same process, alternately. The ratio is
reports/s of the sampler over (words/s / 3): 1.0 would mean the sampler costs nothing
beyond drawing its words. Goal: ratio >= 0.3.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))

from zeal.mechanism.grid import bulk  # noqa: E402
from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.grid import choose  # noqa: E402

LO, HI, EPS = 23.5, 83.9, 1.0


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(prof, x, rng, repeats, chunk):
    n = x.shape[0]
    stats = {}
    t_raw = t_bulk = float("inf")
    for _ in range(repeats):  # alternate, so both see the same machine state
        t_raw = min(t_raw, best_of(lambda: rng.bit_generator.random_raw(3 * n), 1))
        run_stats = {}
        t_bulk = min(t_bulk, best_of(
            lambda: bulk.sample_offsets_fast(prof, x, rng, chunk=chunk, stats=run_stats), 1))
        for k, v in run_stats.items():
            stats[k] = stats.get(k, 0) + v
    return t_bulk, t_raw, stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2_000_000, help="reports per run (default 2e6)")
    ap.add_argument("--repeats", type=int, default=5, help="best of this many (default 5)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--sweep", action="store_true", help="also try several chunk sizes")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    x = rng.uniform(LO, HI, args.n)
    profiles = [("auto", choose.auto(LO, HI, EPS)), ("8", P.from_bits(LO, HI, EPS, 8)),
                ("16", P.from_bits(LO, HI, EPS, 16))]
    chunks = [bulk.CHUNK] if not args.sweep else [1 << k for k in (11, 12, 13, 14, 15, 16, 17)]

    print("bulk sampler, statistical mode: n = %d humidity readings in [%g, %g], eps = %g, "
          "best of %d" % (args.n, LO, HI, EPS, args.repeats))
    print("numpy %s, bit generator %s" % (np.__version__, type(rng.bit_generator).__name__))
    head = ("bits", "N", "Nc", "chunk", "bulk ms", "reports/s", "raw 3n ms", "words/s",
            "ratio", "fallback")
    fmt = "%-8s %10s %8s %7s %9s %11s %10s %11s %7s %9s"
    print(fmt % head)
    worst = float("inf")
    for label, prof in profiles:
        for chunk in chunks:
            t_bulk, t_raw, stats = measure(prof, x, rng, args.repeats, chunk)
            ratio = t_raw / t_bulk
            worst = min(worst, ratio)
            name = "%s (%d)" % (label, prof.bits) if label == "auto" else label
            print(fmt % (name, prof.n_cells, prof.n_window, chunk, "%.1f" % (t_bulk * 1e3),
                         "%.3g" % (args.n / t_bulk), "%.1f" % (t_raw * 1e3),
                         "%.3g" % (3 * args.n / t_raw), "%.2f" % ratio,
                         "%d/%d" % (stats.get("fallback", 0), args.n * args.repeats)))
    print("worst ratio %.2f (goal >= 0.30)" % worst)
    return 0 if worst >= 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
