"""The entropy bound: how few bits per report any order-0 code of these reports can average.

n reports, report i made from reading x_i, are independent with P(report i = j) = P(j | x_i)
(mechanism/grid/exact.py, `ExactGrid.distribution`). A report drawn from the data's reports at
random has the mixture distribution M(j) = (1/n) sum_i P(j | x_i), and H(M) in bits is the
bound the codecs are measured against (`entropy_bits_per_report`). It is computed from the
exact probabilities, not from a sample:

    P(j | x) = P_lo + (P_hi - P_lo) * ((1 - f) [b <= j < b + Nc] + f [b + 1 <= j < b + 1 + Nc])

with pos(x) = b + f (ExactGrid.position). So M(j) = P_lo + (P_hi - P_lo) cov(j) / n, where
cov(j) is the total weight of the windows covering j: a step function of j that changes only
at window starts s and ends s + Nc. M is constant between consecutive breakpoints, and

    H(M) = sum over segments [a, b) of (b - a) * M * log2(1 / M),

one term per segment: at most 4 per distinct reading plus one, whatever N is (N reaches
2^52, so the N-cell sum of `distribution` is never formed). Equal readings are grouped.
Each M is an exact Fraction, rounded once to float64; the terms are positive and summed by
math.fsum, so the result's relative error is below 1e-14 (a few float64 roundings per
term: M, log2, two products).

`entropy_bits_per_report_of_counts` is the plug-in figure of a sample's counts (the empirical
entropy, biased low by about (K - 1) / (2 n ln 2) bits for K occupied cells): what an
order-0 coder with a stored model of the counts achieves before paying for the model; it is
labelled "plug-in" wherever it is printed and is never called the bound.
"""
import math
from collections import Counter
from fractions import Fraction

import numpy as np

from ...errors import ZealError
from ...mechanism.grid.exact import ExactGrid


def _window_weights(grid: ExactGrid, readings) -> tuple:
    """({window start s: total weight}, n): each reading puts 1 - f on b and f on b + 1."""
    weights, n = {}, 0
    for x, count in Counter(Fraction(x) for x in readings).items():
        pos = grid.position(x)
        b = math.floor(pos)
        f = pos - b
        n += count
        for s, w in ((b, count * (1 - f)), (b + 1, count * f)):
            if w:
                weights[s] = weights.get(s, 0) + w
    return weights, n


def mixture_segments(profile, readings) -> list:
    """[(start, stop, M)] covering 0..N-1: the mixture M(j) (an exact Fraction), constant on
    each segment start <= j < stop."""
    grid = ExactGrid(profile)
    weights, n = _window_weights(grid, readings)
    if n == 0:
        raise ZealError("no readings: the entropy bound needs at least one")
    change = {}
    for s, w in weights.items():
        change[s] = change.get(s, 0) + w
        change[s + grid.nc] = change.get(s + grid.nc, 0) - w
    points = sorted(set(change) | {0, grid.n})
    d = grid.p_hi - grid.p_lo
    out, cov = [], Fraction(0)
    for a, b in zip(points[:-1], points[1:]):
        cov += change.get(a, 0)
        if b > a:
            out.append((a, b, grid.p_lo + d * cov / n))
    return out


def entropy_bits_per_report(profile, readings) -> float:
    """H of the exact report distribution given the readings, in bits per report (see the
    module docstring). `readings`: numbers or decimal strings, taken exactly (Fraction)."""
    terms = []
    for a, b, p in mixture_segments(profile, readings):
        if p:
            pf = float(p)
            terms.append((b - a) * pf * -math.log2(pf))
    return math.fsum(terms)


def entropy_bits_per_report_of_counts(counts) -> float:
    """Plug-in (empirical) entropy in bits per report of a histogram of reports: counts of
    each distinct value. Not the bound: a sample's figure, biased low."""
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    if c.size == 0:
        raise ZealError("no reports: the plug-in entropy needs at least one")
    n = math.fsum(c.tolist())
    return math.fsum((c * np.log2(n / c)).tolist()) / n


def plugin_entropy_of_bits(bits) -> float:
    """Plug-in entropy (bits per report) of the distinct values of a uint64 array."""
    _, counts = np.unique(np.asarray(bits), return_counts=True)
    return entropy_bits_per_report_of_counts(counts)
