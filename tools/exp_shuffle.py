#!/usr/bin/env python3
"""Shuffle mode (seed 004): normalised MSE against n, d, t and k, beside the bounds.

Usage: python tools/exp_shuffle.py [--out exp_shuffle.png] [--repeats 10] [--json]

Normalised MSE = ||m_hat - m||^2, the squared error of the estimated mean VECTOR (coordinates
in [0, 1]), averaged over repeats (the paper's experiments and its Corollary 4.7 measure
this). It is shown two ways:
- "total": against the true mean of all n users;
- "noise": against the mean of the users that reported each coordinate (the error the paper's
  MSE accounting covers: rounding + blanket, without the coordinate-sampling error).
Bounds: `mse_bound_at_k` (the proof's bound at the k used; its noise part, and its total with
each coordinate's spread bounded by 1/4) and the paper's closed form (`paper_mse_bound`,
valid at the paper's own choice of k).

Data: d = 3 is the shipped Aarhus data (light, humidity, temperature; 6000 rows), each column
scaled to [0, 1] by its min and max; n = 1000 takes the first 1000 rows, larger n draws rows
with replacement (seeded). d = 10 and d = 100 are synthetic (the shipped data has 4 columns):
coordinate j ~ Beta(a_j, b_j) with a_j, b_j drawn once in [1, 6] (seeded).
Privacy: epsilon = 0.95, delta = 0.5, k = 3, t = 1 unless varied: the paper's own experiment
settings (its authors' code; delta = 0.5 is a weak guarantee, used to reproduce the paper).
The feasibility of the goal grid at delta = 1e-5 is printed too. Seeds fixed: the run is
reproducible. Runs in about a minute (numpy bulk randomiser).
"""
import argparse
import json
import os
import sys
import time
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))
from zeal.mechanism.shuffle import mechanism as S  # noqa: E402

EPS = Fraction(95, 100)
DELTA = Fraction(1, 2)
NS = (10 ** 3, 10 ** 4, 10 ** 5)
DS = (3, 10, 100)
TS = (1, 2, 3, 4, 5)
KS = (1, 2, 3, 4, 5, 6, 8)
SEED = 4004


def aarhus01():
    import csv
    from importlib import resources

    with resources.files("zeal").joinpath("data/aarhus-citylab.csv").open("r") as fh:
        rows = list(csv.DictReader(fh))
    cols = np.array([[float(r[c]) for c in ("light", "humidity", "temperature")] for r in rows])
    lo, hi = cols.min(axis=0), cols.max(axis=0)
    return (cols - lo) / (hi - lo)


def dataset(n, d, rng, base):
    if d == 3:
        if n <= len(base):
            return base[:n]
        return base[rng.integers(0, len(base), size=n)]
    shape = np.random.default_rng(SEED + d).uniform(1, 6, size=(2, d))
    return rng.beta(shape[0], shape[1], size=(n, d))


def measure(params, data, rng, repeats):
    a = S.Analyzer(params)
    truth = data.mean(axis=0)
    tot, noi = [], []
    for _ in range(repeats):
        pairs = S.randomise_bulk(params, data, rng)
        est = a.estimate_float(a.histogram_bulk(pairs))
        coords = pairs[..., 0]
        vals = np.take_along_axis(data, coords, axis=1)
        cnt = np.bincount(coords.ravel(), minlength=params.d)
        sampled = np.bincount(coords.ravel(), weights=vals.ravel(), minlength=params.d) / cnt
        tot.append(float(((est - truth) ** 2).sum()))
        noi.append(float(((est - sampled) ** 2).sum()))
    return float(np.mean(tot)), float(np.mean(noi))


def point(n, d, k, t, rng, base, repeats, delta=DELTA):
    try:
        p = S.gamma_for(epsilon=EPS, delta=delta, n=n, d=d, k=k, t=t)
    except S.ShuffleError as exc:
        return {"n": n, "d": d, "k": k, "t": t, "refused": str(exc)}
    total, noise = measure(p, dataset(n, d, rng, base), rng, repeats)
    b = S.mse_bound_at_k(p)
    return {"n": n, "d": d, "k": k, "t": t, "gamma": float(p.gamma), "regime": p.regime,
            "mse_total": total, "mse_noise": noise, "bound_noise": b["noise"],
            "bound_total": b["total"], "paper_bound": S.paper_mse_bound(p)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="exp_shuffle.png", help="PNG to write")
    ap.add_argument("--repeats", type=int, default=10, help="repeats per point (default 10)")
    ap.add_argument("--json", action="store_true", help="print the points as JSON")
    ap.add_argument("--k-scan", action="store_true",
                    help="only: per (n, d) cell, the k with the smallest measured MSE against "
                         "the paper's closed form, which assumes the paper's optimised k")
    args = ap.parse_args()
    start = time.monotonic()
    rng = np.random.default_rng(SEED)
    base = aarhus01()
    if args.k_scan:
        return k_scan(rng, base, args.repeats)
    grid = [point(n, d, 3, 1, rng, base, args.repeats) for d in DS for n in NS]
    by_t = [point(10 ** 5, 100, 3, t, rng, base, args.repeats) for t in TS]
    by_k = [point(10 ** 5, 100, k, 1, rng, base, args.repeats) for k in KS]
    strict = [(n, d, S.gamma_for(epsilon=EPS, delta=Fraction(1, 10 ** 5), n=n, d=d, k=3, t=1)
               if _feasible(n, d) else None) for d in DS for n in NS]
    print("took %.0f s" % (time.monotonic() - start), file=sys.stderr)

    if args.json:
        print(json.dumps({"grid": grid, "by_t": by_t, "by_k": by_k}, indent=1))
    else:
        print("epsilon = %.2f, delta = %g, k = 3, t = 1; normalised MSE = squared error of the "
              "mean vector (coordinates in [0, 1]), mean of %d repeats"
              % (EPS, DELTA, args.repeats))
        print("| d | n | gamma | MSE total | MSE noise | bound at k (noise / total) | "
              "paper bound | noise <= paper | total <= paper |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in grid:
            if "refused" in r:
                print("| %d | %d | refused: gamma >= 1 | | | | | | |" % (r["d"], r["n"]))
                continue
            print("| %d | %d | %.4f | %.3g | %.3g | %.3g / %.3g | %.3g | %s | %s |" % (
                r["d"], r["n"], r["gamma"], r["mse_total"], r["mse_noise"], r["bound_noise"],
                r["bound_total"], r["paper_bound"], _yes(r["mse_noise"] <= r["paper_bound"]),
                _yes(r["mse_total"] <= r["paper_bound"])))
        for name, rows, key in (("t (d = 100, n = 1e5, k = 3)", by_t, "t"),
                                ("k (d = 100, n = 1e5, t = 1)", by_k, "k")):
            print("\nby %s:" % name)
            for r in rows:
                if "refused" in r:
                    print("  %s = %d: refused (gamma >= 1)" % (key, r[key]))
                else:
                    print("  %s = %d: gamma %.3f, MSE total %.4g, noise %.4g, bound at k %.4g"
                          % (key, r[key], r["gamma"], r["mse_total"], r["mse_noise"],
                             r["bound_total"]))
        print("\nat delta = 1e-5 (epsilon 0.95, k = 3, t = 1) gamma < 1 exists for: "
              + ", ".join("(n=%d, d=%d): gamma %.3f" % (n, d, p.gamma)
                          for n, d, p in strict if p is not None)
              + "; refused elsewhere")
    plot(grid, by_t, by_k, args.out, args.repeats)
    print("figure: %s" % args.out, file=sys.stderr)
    return 0


SCAN_KS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)


def k_scan(rng, base, repeats) -> int:
    """The paper's closed form (paper_mse_bound) holds at ITS choice of k, which balances the
    rounding and blanket terms; the seed's formula for that k is unreadable, so scan k and
    compare the best measured noise MSE (the paper's quantity) with the bound there."""
    print("epsilon = %.2f, delta = %g, t = 1; noise MSE = squared error against the mean of "
          "the sampled coordinates (the paper's quantity), mean of %d repeats"
          % (EPS, DELTA, repeats))
    print("| d | n | best k | noise MSE at best k | paper bound at that k | within | k within "
          "the bound |")
    print("|---|---|---|---|---|---|---|")
    for d in DS:
        for n in NS:
            rows = [r for r in (point(n, d, k, 1, rng, base, repeats) for k in SCAN_KS)
                    if "refused" not in r]
            if not rows:
                print("| %d | %d | refused: no gamma < 1 at any k | | | | |" % (d, n))
                continue
            best = min(rows, key=lambda r: r["mse_noise"])
            ok = [r["k"] for r in rows if r["mse_noise"] <= r["paper_bound"]]
            print("| %d | %d | %d | %.3g | %.3g | %s | %s |"
                  % (d, n, best["k"], best["mse_noise"], best["paper_bound"],
                     _yes(best["mse_noise"] <= best["paper_bound"]),
                     " ".join(map(str, ok)) or "none"))
    return 0


def _feasible(n, d):
    try:
        S.gamma_for(epsilon=EPS, delta=Fraction(1, 10 ** 5), n=n, d=d, k=3, t=1)
        return True
    except S.ShuffleError:
        return False


def _yes(flag):
    return "yes" if flag else "NO"


def plot(grid, by_t, by_k, out, repeats):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    ax = axes[0]
    colours = {3: "tab:blue", 10: "tab:orange", 100: "tab:green"}
    from matplotlib.lines import Line2D

    for d in DS:
        rows = [r for r in grid if r["d"] == d and "refused" not in r]
        if not rows:
            continue
        n = [r["n"] for r in rows]
        c = colours[d]
        ax.plot(n, [r["mse_total"] for r in rows], "o-", color=c)
        ax.plot(n, [r["mse_noise"] for r in rows], "x", color=c, ms=9)
        ax.plot(n, [r["bound_total"] for r in rows], "_--", color=c, lw=1, ms=14)
        ax.plot(n, [r["paper_bound"] for r in rows], "2:", color=c, lw=2, ms=12)
    handles = [Line2D([], [], color=colours[d], lw=3, label="d = %d" % d) for d in DS] + [
        Line2D([], [], color="k", marker="o", label="measured, vs true mean"),
        Line2D([], [], color="k", marker="x", ls="", ms=9, label="measured, vs sampled coords"),
        Line2D([], [], color="k", marker="_", ls="--", ms=14, label="bound at k=3 (total)"),
        Line2D([], [], color="k", marker="2", ls=":", lw=2, ms=12,
               label="paper's closed-form bound")]
    refused = ["(n=%d, d=%d)" % (r["n"], r["d"]) for r in grid if "refused" in r]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n, readings (t = 1: one message each)")
    ax.set_ylabel("normalised MSE, ||mean_hat - mean||^2 (coordinates in [0,1])")
    ax.set_title("(a) against n and d (k=3, t=1)\nno gamma < 1: " + ", ".join(refused),
                 fontsize=9)
    ax.legend(handles=handles, fontsize=7, loc="lower left")
    ax.grid(True, which="both", alpha=0.3)
    for ax, rows, key, title in ((axes[1], by_t, "t", "(b) against t (d=100, n=1e5, k=3)"),
                                 (axes[2], by_k, "k", "(c) against k (d=100, n=1e5, t=1)")):
        ok = [r for r in rows if "refused" not in r]
        x = [r[key] for r in ok]
        c = colours[100]
        ax.plot(x, [r["mse_total"] for r in ok], "o-", color=c, label="measured, vs true mean")
        ax.plot(x, [r["mse_noise"] for r in ok], "x", color=c, ms=9,
                label="measured, vs sampled coords")
        ax.plot(x, [r["bound_total"] for r in ok], "_--", color="k", lw=1, ms=14,
                label="bound at this %s (total)" % key)
        ax.plot(x, [r["paper_bound"] for r in ok], "2:", color="k", lw=2, ms=12,
                label="paper's closed-form bound")
        ax.set_yscale("log")
        ax.set_xlabel("t, messages (coordinates) per reading" if key == "t"
                      else "k (levels 0..k, k+1 of them)")
        ax.set_ylabel("normalised MSE")
        ax.set_xticks(x)
        gone = [str(r[key]) for r in rows if "refused" in r]
        if gone:
            title += "\nrefused by the privacy rule: %s = %s" % (key, ", ".join(gone))
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Shuffle-model vector mean (seed 004): epsilon=%.2f, delta=%g (the paper's "
                 "settings), mean of %d repeats; d=3 Aarhus (scaled), d=10/100 synthetic Beta"
                 % (EPS, DELTA, repeats), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
