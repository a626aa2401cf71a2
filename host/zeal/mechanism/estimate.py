"""Estimators of the mean from reports (offsets j = k - k_lo).

- the calibrated mean: inverts the exact affine map E[j | x] = slope * pos(x) + intercept, so
  it is unbiased for every m, even on grids of two or three cells;
- the paper's AVG* = mean(x*) - Abar, computed exactly from the integer offsets:
  x* - Abar = H + C + (j - (N - 1)) * ulp, so AVG* = H + C + (mean(j) - (N - 1)) * ulp;
- the same AVG* in naive float64 (sum of doubles near Abar), kept to show how it fails;
- 99% intervals: Bernstein (valid for every n) and the normal approximation.
Derivations: shared_spec/mechanism.md, "Estimators".

Table profiles (kind "table", zeal.mechanism.table_profile): `TableEstimator`. A report is a
cell j with output value g_j = lo + (hi - lo) a_j / Q (the profile's `values` a_j and
`value_den` Q), unbiased at every reading, so the calibrated mean of n reports is, exactly,
    lo + (hi - lo) * (sum_i a_{j_i}) / (n Q);
the Bernstein interval uses the table's exact worst variance over [lo, hi] and the range of
g_j - x (max(g_max - lo, hi - g_min)); the normal approximation the sample variance of the
g_j. AVG* (the paper's estimator) is a window-grid notion: None for tables.
`zeal.mechanism.kinds.of(profile).estimator(profile, confidence)` returns the right one.
"""
import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Optional

import numpy as np

from .grid import ExactGrid, max_window_variance
from .profile import Profile


def exact_sum(values) -> int:
    """Exact integer sum of non-negative int64 offsets, whatever n (chunks never overflow)."""
    arr = np.asarray(values, dtype=np.int64).ravel()
    if arr.size == 0:
        return 0
    top = int(arr.max())
    chunk = max(1, (1 << 62) // max(top, 1))
    return sum(int(arr[i:i + chunk].sum(dtype=np.int64)) for i in range(0, arr.size, chunk))


def abar_float(profile: Profile) -> float:
    """Abar as the paper computes it in float64 (Thm 3.5, Eq. alignds)."""
    e = profile.exponent
    cont = profile.continuous
    return 2.0 ** (e + 1) - 2 * 2.0 ** (e - 52) - float(cont.hbar) - float(cont.c)


@dataclass(frozen=True)
class Summary:
    n: int
    mean_calibrated: float
    avg_star: Optional[float]         # None for table profiles (a window-grid notion)
    avg_star_naive: Optional[float]
    ci99: tuple           # Bernstein, holds for every n
    ci99_clt: tuple       # normal approximation with the sample variance

    def as_dict(self) -> dict:
        return {"n": self.n, "mean_calibrated": self.mean_calibrated,
                "avg_star": self.avg_star, "avg_star_naive_float64": self.avg_star_naive,
                "ci99": list(self.ci99), "ci99_clt": list(self.ci99_clt)}


class Estimator:
    """Everything the host computes from a batch of offsets under one profile."""

    kind = "grid"

    def __init__(self, profile: Profile, confidence: float = 0.99):
        if not 0 < confidence < 1:
            raise ValueError("confidence must be in (0, 1)")
        self.profile = profile
        self.grid = ExactGrid(profile)
        self.confidence = confidence
        g = self.grid
        # Bernstein ingredients, fixed by the profile: worst-case variance and range of
        # (estimate - x). Var(j | x) <= max_jL Var(j | jL) + slope^2 / 4 (rounding term).
        w_max = max_window_variance(g)  # O(1): the table has N - Nc + 1 entries
        try:
            self.var_bound = float(g.gain) ** 2 * (w_max + float(g.slope) ** 2 / 4)
        except OverflowError:  # ranges beyond ~1e150: the bound is past float64, not an error
            self.var_bound = math.inf
        e_lo, e_hi = g.estimate_range()
        try:
            self.dev_bound = float(max(e_hi - g.lo, g.hi - e_lo))
        except OverflowError:
            self.dev_bound = math.inf

    # -- point estimates ------------------------------------------------------------------------
    def calibrated_mean(self, total: int, n: int) -> Fraction:
        return self.grid.estimate(Fraction(total, n))

    def mean_of(self, offsets) -> Fraction:
        """The calibrated mean of these offsets, exactly."""
        j = np.asarray(offsets, dtype=np.int64).ravel()
        return self.calibrated_mean(exact_sum(j), int(j.size))

    def avg_star_of(self, offsets) -> Fraction:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        return self.avg_star(exact_sum(j), int(j.size))

    def avg_star(self, total: int, n: int) -> Fraction:
        p, cont = self.profile, self.profile.continuous
        base = Fraction(cont.hbar) + Fraction(cont.c)
        return base + (Fraction(total, n) - (p.n_cells - 1)) * p.ulp

    def avg_star_naive(self, offsets: np.ndarray) -> float:
        from .reports import floats_from_offsets
        # near the top of float64 the naive sum overflows to inf: that is the figure (it shows
        # how the naive estimator fails), not a warning for stderr
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.mean(floats_from_offsets(self.profile, offsets))) \
                - abar_float(self.profile)

    # -- intervals ---------------------------------------------------------------------------------
    def bernstein_halfwidth(self, n: int) -> float:
        """lambda with 2 exp(-n lambda^2 / (2 (var + M lambda / 3))) = 1 - confidence."""
        big_l = math.log(2 / (1 - self.confidence))
        b = big_l * self.dev_bound / 3
        return (b + math.sqrt(b * b + 2 * n * big_l * self.var_bound)) / n

    def clt_halfwidth(self, offsets: np.ndarray) -> float:
        n = offsets.size
        if n < 2:
            return math.inf
        d = offsets.astype(np.float64) - float(np.round(offsets.mean()))
        var_j = (float(np.dot(d, d)) - float(d.sum()) ** 2 / n) / (n - 1)
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        return z * abs(float(self.grid.gain)) * math.sqrt(max(var_j, 0.0) / n)

    def summarize(self, offsets) -> Summary:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        n = int(j.size)
        if n == 0:
            raise ValueError("no reports to aggregate")
        total = exact_sum(j)
        mean = float(self.calibrated_mean(total, n))
        bw, cw = self.bernstein_halfwidth(n), self.clt_halfwidth(j)
        return Summary(n=n, mean_calibrated=mean, avg_star=float(self.avg_star(total, n)),
                       avg_star_naive=self.avg_star_naive(j),
                       ci99=(mean - bw, mean + bw), ci99_clt=(mean - cw, mean + cw))


class TableEstimator:
    """The estimator of a table profile (module docstring): the same interface as
    `Estimator` where it applies (summarize, mean_of, bernstein_halfwidth, clt_halfwidth,
    var_bound, dev_bound), AVG* None."""

    kind = "table"
    grid = None

    def __init__(self, profile, confidence: float = 0.99):
        if not 0 < confidence < 1:
            raise ValueError("confidence must be in (0, 1)")
        self.profile = profile
        self.confidence = confidence
        self.lo, self.hi = Fraction(profile.lo), Fraction(profile.hi)
        self.values = [int(a) for a in profile.values]
        self.den = int(profile.value_den)
        self.n_cells = len(self.values)
        self.worst_variance = Fraction(profile.worst_variance())
        g = [self.output_value(j) for j in range(self.n_cells)]
        self.g_min, self.g_max = min(g), max(g)
        try:
            self.var_bound = float(self.worst_variance)
        except OverflowError:
            self.var_bound = math.inf
        try:
            self.dev_bound = float(max(self.g_max - self.lo, self.hi - self.g_min))
        except OverflowError:
            self.dev_bound = math.inf
        self._g_float = np.array([float(v) for v in g], dtype=np.float64)

    def output_value(self, j: int) -> Fraction:
        """g_j = lo + (hi - lo) a_j / Q, exactly: the unbiased estimate of one report."""
        return self.lo + (self.hi - self.lo) * Fraction(self.values[j], self.den)

    def estimate(self, j) -> Fraction:
        return self.output_value(int(j))

    def _counts(self, offsets) -> np.ndarray:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        if j.size and (int(j.min()) < 0 or int(j.max()) >= self.n_cells):
            raise ValueError("a report is outside the table's %d cells" % self.n_cells)
        return np.bincount(j, minlength=self.n_cells)

    def value_total(self, offsets) -> int:
        """sum_i a_{j_i}, exactly (Python integers)."""
        counts = self._counts(offsets)
        return sum(int(c) * a for c, a in zip(counts.tolist(), self.values) if c)

    def calibrated_mean_total(self, value_total: int, n: int) -> Fraction:
        return self.lo + (self.hi - self.lo) * Fraction(value_total, n * self.den)

    def mean_of(self, offsets) -> Fraction:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        if j.size == 0:
            raise ValueError("no reports to aggregate")
        return self.calibrated_mean_total(self.value_total(j), int(j.size))

    def avg_star_of(self, offsets):
        return None

    def avg_star_naive(self, offsets):
        return None

    def bernstein_halfwidth(self, n: int) -> float:
        big_l = math.log(2 / (1 - self.confidence))
        b = big_l * self.dev_bound / 3
        return (b + math.sqrt(b * b + 2 * n * big_l * self.var_bound)) / n

    def clt_halfwidth(self, offsets) -> float:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        n = j.size
        if n < 2:
            return math.inf
        counts = self._counts(j).astype(np.float64)
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        with np.errstate(over="ignore", invalid="ignore"):
            g = self._g_float
            centre = float(np.dot(counts, g)) / n
            d = g - centre
            var = max(float(np.dot(counts, d * d)) / (n - 1), 0.0)
            out = z * math.sqrt(var / n)
            if math.isfinite(out):
                return out
            # outputs near +-1e300: the sums overflowed (inf - inf is NaN); the same figure
            # in units of hi - lo (g_j - lo = (hi - lo) a_j / Q), scaled back at the end
            u = np.array(self.values, dtype=np.float64) / self.den
            d = u - float(np.dot(counts, u)) / n
            var = max(float(np.dot(counts, d * d)) / (n - 1), 0.0)
            return z * math.sqrt(var / n) * float(self.hi - self.lo)

    def summarize(self, offsets) -> Summary:
        j = np.asarray(offsets, dtype=np.int64).ravel()
        n = int(j.size)
        if n == 0:
            raise ValueError("no reports to aggregate")
        mean = float(self.mean_of(j))
        bw, cw = self.bernstein_halfwidth(n), self.clt_halfwidth(j)
        return Summary(n=n, mean_calibrated=mean, avg_star=None, avg_star_naive=None,
                       ci99=(mean - bw, mean + bw), ci99_clt=(mean - cw, mean + cw))

