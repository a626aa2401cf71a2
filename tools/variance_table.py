#!/usr/bin/env python3
"""Worst pointwise variance ratio (exact grid / continuous PM) for each epsilon and m.

Usage: python tools/variance_table.py [--range LO HI] [--bits 2 8]
Each cell is max over all inputs x in [lo, hi] of Var_exact(x) / Var_PM(x)
(zeal.mechanism.grid.worst_variance_ratio: exact per-step extremes, evaluated in float64).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "host"))
from zeal.mechanism.grid import choose, profile  # noqa: E402
from zeal.mechanism.grid.exact import worst_variance_ratio  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--range", nargs=2, type=float, default=(23.5, 83.9), metavar=("LO", "HI"))
    ap.add_argument("--epsilon", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0])
    ap.add_argument("--bits", nargs=2, type=int, default=(2, 8), metavar=("FROM", "TO"))
    args = ap.parse_args()
    lo, hi = args.range
    bits = range(args.bits[0], args.bits[1] + 1)
    print("| eps \\ m | " + " | ".join(str(m) for m in bits) + " | auto |")
    print("|---" * (len(bits) + 2) + "|")
    for eps in args.epsilon:
        cells = ["%.4f" % worst_variance_ratio(profile.from_bits(lo, hi, eps, m))[1]
                 for m in bits]
        print("| %g | %s | %d |" % (eps, " | ".join(cells), choose.auto(lo, hi, eps).bits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
