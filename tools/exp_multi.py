#!/usr/bin/env python3
"""Seed 001's Algorithm 4 (k of d attributes per report at eps/k, scaled by d/k) against d
independent single-attribute reports at eps/d, on the shipped Aarhus citylab columns.

Usage: python tools/exp_multi.py [--reps 200] [--seed 1] [--plot FILE.png]

Exact figures (zeal.mechanism.multi.mechanism, Fractions): the worst-case per-attribute variance of one
report's estimate over the attribute's range, normalised by the range half-width squared (so it
is the figure the literature quotes on [-1, 1]), and the variance averaged over the data's
readings, in the reading's units squared. Measured: `reps` runs over all 6000 rows (one report
per row, numpy statistical mode), n * mean squared error of each attribute's mean, with a 99%
interval for it (chi-square-free: normal approximation over the runs, stated as such).
Ranges: data extremes +- 1.0, the Zeal paper's convention (humidity: its [23.5, 83.9]).
Units: light in the sensor's 0-100 scale (the data set gives no physical unit), humidity in
%RH, noise in dB, temperature in degrees C.
"""
import argparse
import os
import sys
from fractions import Fraction
from statistics import NormalDist

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))
from zeal.mechanism.multi import mechanism as multi  # noqa: E402
from zeal.mechanism.multi.mechanism import Multi, MultiEstimator, Numeric  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "host", "zeal",
                    "data", "aarhus-citylab.csv")
UNITS = {"light": "(0-100 scale)^2", "humidity": "%RH^2", "noise": "dB^2",
         "temperature": "degC^2"}
TICK_UNITS = {"light": "0-100 scale", "humidity": "%RH", "noise": "dB", "temperature": "degC"}
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)


def load():
    table = np.genfromtxt(DATA, delimiter=",", names=True)
    cols = {n: np.asarray(table[n], dtype=float) for n in table.dtype.names}
    ranges = {n: (float(v.min()) - 1.0, float(v.max()) + 1.0) for n, v in cols.items()}
    ranges["humidity"] = (23.5, 83.9)
    return cols, ranges


def attributes(names, ranges, mech="grid"):
    return [Numeric(n, *ranges[n], bits="auto" if mech == "grid" else 4, mechanism=mech)
            for n in names]


def data_variance(m, j, values):
    """Exact variance of one report's estimate, averaged over the readings (distinct values
    weighted by their counts), as a Fraction."""
    uniq, counts = np.unique(values, return_counts=True)
    total = sum(int(c) * m.variance(j, Fraction(float(x))) for x, c in zip(uniq, counts))
    return total / len(values)


def measured(m, rows, reps, rng):
    """n * mean over runs of (estimate - true mean)^2 per attribute, and a 99% half-width."""
    est = MultiEstimator(m)
    n = rows.shape[0]
    truth = rows.mean(axis=0)
    sq = np.empty((reps, m.d))
    for r in range(reps):
        idx, val = multi.sample_bulk(m, rows, rng)
        for j in range(m.d):
            sq[r, j] = (float(est.mean_exact(j, idx, val)) - truth[j]) ** 2
    z = NormalDist().inv_cdf(0.995)
    return n * sq.mean(axis=0), z * n * sq.std(axis=0, ddof=1) / np.sqrt(reps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plot", default=None, help="write a PNG figure here")
    args = ap.parse_args()
    cols, ranges = load()
    rng = np.random.default_rng(args.seed)

    # 1. exact worst-case normalised variance against epsilon, d = 3 and d = 4
    print("# worst-case per-attribute variance (largest over the d attributes), normalised "
          "(range half-width = 1), exact")
    print("| d | eps | k (Eq. 12) | Alg. 4 (grid) | split eps/d (grid) | split eps/d (best of "
          "grid, Duchi, HM, PM 4 bits) | ratio best split / Alg. 4 |")
    print("|---|---|---|---|---|---|---|")
    curves = {}
    for names in (("light", "humidity", "noise"), ("light", "humidity", "noise", "temperature")):
        d = len(names)
        for eps in EPSILONS:
            alg4 = Multi(attributes(names, ranges), eps)
            splits = {mech: Multi(attributes(names, ranges, mech), eps, k=d)
                      for mech in ("grid", "duchi", "hm", "pm")}
            h2 = [p.h ** 2 for p in alg4.parts]
            a = max(float(alg4.worst_variance_bounds(j)[1] / h2[j]) for j in range(d))
            s = {mech: max(float(sp.worst_variance_bounds(j)[0] / h2[j]) for j in range(d))
                 for mech, sp in splits.items()}
            best = min(s.values())
            curves.setdefault(d, []).append((eps, a, s["grid"], best))
            print("| %d | %g | %d | %.3f | %.3f | %.3f | %.2f |"
                  % (d, eps, alg4.k, a, s["grid"], best, best / a))

    # 2. d = 3 at eps = 1: exact variance over the data, and measured
    names = ("light", "humidity", "noise")
    rows = np.column_stack([cols[n] for n in names])
    alg4 = Multi(attributes(names, ranges), 1)
    split = Multi(attributes(names, ranges), 1, k=3)
    print("\n# d = 3, eps = 1, n = %d rows, %d runs: per-report variance of each attribute's "
          "estimate, averaged over the data" % (rows.shape[0], args.reps))
    print("| attribute | unit | Alg. 4 exact | Alg. 4 measured (99% CI) | split exact | "
          "split measured (99% CI) | ratio exact | ratio measured |")
    print("|---|---|---|---|---|---|---|---|")
    meas_a, hw_a = measured(alg4, rows, args.reps, rng)
    meas_s, hw_s = measured(split, rows, args.reps, rng)
    bars = []
    for j, n in enumerate(names):
        ea = float(data_variance(alg4, j, rows[:, j]))
        es = float(data_variance(split, j, rows[:, j]))
        bars.append((n, ea, es, meas_a[j], hw_a[j], meas_s[j], hw_s[j]))
        print("| %s | %s | %.1f | %.1f +- %.1f | %.1f | %.1f +- %.1f | %.2f | %.2f |"
              % (n, UNITS[n], ea, meas_a[j], hw_a[j], es, meas_s[j], hw_s[j], es / ea,
                 meas_s[j] / meas_a[j]))
    print("\nprivacy ratio of a whole report: Alg. 4 %.9f, split %.9f, e^eps = %.9f"
          % (float(alg4.privacy_ratio()), float(split.privacy_ratio()), np.e))

    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        for d, style in ((3, "-"), (4, "--")):
            e, a, s, b = (np.array(v) for v in zip(*curves[d]))
            ax1.plot(e, a, "o" + style, color="C0", label="Algorithm 4, k from Eq. 12 (d=%d)" % d)
            ax1.plot(e, s, "s" + style, color="C3", label="split eps/d, grid (d=%d)" % d)
            ax1.plot(e, b, "^" + style, color="C2", label="split eps/d, best mechanism (d=%d)" % d)
        ax1.set_xscale("log", base=2)
        ax1.set_xticks(list(EPSILONS))
        ax1.set_xticklabels(["%g" % e for e in EPSILONS])
        ax1.set_yscale("log")
        ax1.set_xlabel("total privacy budget epsilon per report")
        ax1.set_ylabel("worst-case variance of one report's estimate\n"
                       "(units of range half-width squared)")
        ax1.set_title("Exact worst case, Aarhus ranges")
        ax1.legend(fontsize=7)
        ax1.grid(True, which="both", alpha=0.3)
        x = np.arange(len(bars))
        ratio_exact = [b[2] / b[1] for b in bars]
        ratio_meas = [b[5] / b[3] for b in bars]
        # 99% interval of the measured ratio from the two intervals (first-order propagation)
        ratio_hw = [r * np.hypot(b[4] / b[3], b[6] / b[5]) for r, b in zip(ratio_meas, bars)]
        ax2.bar(x - 0.18, ratio_exact, 0.36, color="C0", label="exact (over the data)")
        ax2.errorbar(x + 0.18, ratio_meas, yerr=ratio_hw, fmt="o", color="k", capsize=4,
                     label="measured, %d runs x %d rows (99%% CI)" % (args.reps, rows.shape[0]))
        ax2.axhline(2, color="C3", ls=":", label="goal: 2x")
        ax2.set_xticks(x)
        ax2.set_xticklabels(["%s\n(%s)" % (b[0], TICK_UNITS[b[0]]) for b in bars])
        ax2.set_ylabel("split eps/3 over Algorithm 4\n(ratio of per-report variances)")
        ax2.set_title("d = 3, epsilon = 1, k = 1, grid profiles")
        ax2.legend(fontsize=7, loc="upper right")
        ax2.set_ylim(0, max(ratio_exact + ratio_meas) * 1.5)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=130)
        print("figure: %s" % args.plot, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
