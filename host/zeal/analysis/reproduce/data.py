"""The data sets as the reproduction uses them, one privatisation of them by either sampler,
and the relative errors of its average, computed exactly (the lowest layer of `reproduce`)."""
import math
from collections import Counter
from fractions import Fraction

import numpy as np

from ...mechanism.grid import exact as mgrid
from ...mechanism.grid.bulk import sample_offsets_fast
from ...mechanism.grid.estimate import Estimator
from ...mechanism.grid.profile import exponent_range
from ...paper import formulas as pf
from ...paper import sampler as ps
from .. import datasets

SEED = 20240611
EPS = 1.0
TWO53 = 1 << 53


def exact_mean(values) -> Fraction:
    """The exact mean of float64 values (every double is a dyadic rational; summed as
    integers scaled to the smallest exponent present, no rounding)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("no values")
    if not np.all(np.isfinite(v)):
        raise ValueError("non-finite value")
    mant, expo = np.frexp(v)                     # v = mant * 2^expo, |mant| in [0.5, 1)
    ints = (mant * float(TWO53)).astype(np.int64)  # exact: 53-bit integers
    expo = expo.astype(np.int64) - 53
    total = Fraction(0)
    for e in np.unique(expo).tolist():
        sel = ints[expo == e]
        # chunks of 512 integers below 2^53 cannot overflow int64
        s = sum(int(sel[i:i + 512].sum(dtype=np.int64)) for i in range(0, sel.size, 512))
        total += Fraction(s) * (Fraction(2) ** e)
    return total / v.size


def _offset_totals(offsets: np.ndarray) -> list:
    """Exact integer row sums of a (trials, n) int64 array of offsets (< 2^52)."""
    hi = (offsets >> 26).sum(axis=1, dtype=np.int64)
    lo = (offsets & ((1 << 26) - 1)).sum(axis=1, dtype=np.int64)
    return [(int(a) << 26) + int(b) for a, b in zip(hi.tolist(), lo.tolist())]


class Data:
    """A data set as the reproduction uses it: text readings, range, exact target mean."""

    def __init__(self, name, label, unit, texts, lo, hi):
        self.name, self.label, self.unit = name, label, unit
        self.texts, self.lo, self.hi = texts, float(lo), float(hi)
        self.n = len(texts)
        self.below, self.above = datasets.out_of_range(texts, lo, hi)
        self.raw_mean = sum(Fraction(t) for t in texts) / self.n
        self.mean = datasets.clamped_mean(texts, lo, hi)          # exact target
        self.x = np.clip(np.array([float(t) for t in texts]), self.lo, self.hi)
        self.counts = Counter(min(max(Fraction(t), Fraction(self.lo)), Fraction(self.hi))
                              for t in texts)

    def pm_sd(self, eps) -> float:
        """1-sigma of the continuous mechanism's average, Thm 3.2 (sum of variances / n^2)."""
        return math.sqrt(float(np.sum(pf.variance(self.lo, self.hi, eps, self.x)))) / self.n

    def exact_sd(self, profile) -> float:
        """1-sigma of the exact mechanism's calibrated mean (exact variance per reading)."""
        g = mgrid.ExactGrid(profile)
        var = sum(c * g.variance(x) for x, c in self.counts.items())
        return math.sqrt(float(var)) / self.n


def paper_datasets():
    hum = Data("humidity", "Aarhus humidity (n = 5000)", "%RH",
               datasets.aarhus("humidity", 5000), *datasets.HUMIDITY_RANGE)
    taxi = Data("taxi", "Chicago taxi fares (n = 1000)", "USD",
                datasets.chicago_fares(1000), *datasets.TAXI_RANGE)
    return [hum, taxi]


def float_run(d: Data, eps, abar, rng, trials=1):
    """(trials, n) float64 reports of the paper's sampler for the data set."""
    x = np.broadcast_to(d.x, (trials, d.n))
    return ps.sample(d.lo, d.hi, eps, abar, x, rng)


def exact_run(d: Data, profile, rng, trials=1):
    """(trials, n) offsets of the exact mechanism for the data set."""
    x = np.tile(d.x, trials)
    return sample_offsets_fast(profile, x, rng).reshape(trials, d.n)


def rel_errors_exact(d: Data, profile, offsets) -> np.ndarray:
    """delta_AVG of the calibrated mean for each row of offsets, exactly then as float."""
    est = Estimator(profile)
    return np.array([float((est.calibrated_mean(t, d.n) - d.mean) / d.mean)
                     for t in _offset_totals(offsets)])


def rel_errors_float(d: Data, abar, reports, exact=False) -> np.ndarray:
    """delta_AVG of AVG* = mean(x*) - Abar per row: float64 mean (paper) or exact mean."""
    if exact:
        return np.array([float((exact_mean(r) - Fraction(abar) - d.mean) / d.mean)
                         for r in reports])
    avg = reports.mean(axis=1) - abar
    return (avg - float(d.mean)) / float(d.mean)


def exponents(lo, hi, eps):
    """(E_enc, E_vul, E_max): the paper's two lower limits (Thms 3.5, 4.1) and the largest E
    with an exact grid of at least two cells."""
    from ...mechanism.grid.profile import Continuous
    e_min, e_max = exponent_range(Continuous.of(lo, hi, eps))
    return pf.e_enc(lo, hi, eps), pf.e_vul(lo, hi, eps), e_max
