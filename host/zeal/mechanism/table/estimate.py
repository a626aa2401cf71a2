"""The estimator of a table profile (zeal.mechanism.table.profile), `TableEstimator`.

A report is a cell j with output value g_j = lo + (hi - lo) a_j / Q (the profile's `values`
a_j and `value_den` Q), unbiased at every reading, so the calibrated mean of n reports is, exactly,
    lo + (hi - lo) * (sum_i a_{j_i}) / (n Q);
the Bernstein interval uses the table's exact worst variance over [lo, hi] and the range of
g_j - x (max(g_max - lo, hi - g_min)); the normal approximation the sample variance of the
g_j. AVG* (the paper's estimator) is a window-grid notion: None for tables.
`zeal.mechanism.kinds.of(profile).estimator(profile, confidence)` returns the right one.
"""
import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from ..core.summary import Summary
from ..core.tally import Tally, TallySet


class TableEstimator:
    """The estimator of a table profile (module docstring): the same interface as
    `Estimator` where it applies (summarize, mean_of, bernstein_halfwidth, clt_halfwidth,
    var_bound, dev_bound), AVG* None."""

    grid = None
    needs_counts = True    # a report's value is looked up by its cell (core.tally's counts)

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
        if j.size < 2:
            return math.inf
        return self._clt_counts(self._counts(j), int(j.size))

    # -- from a running tally (zeal.mechanism.core.tally): what a streamed analysis uses ------------
    def add_to(self, t: Tally, offsets, counts=None) -> Tally:
        """Add one chunk of offsets to t (ValueError if a report is outside the cells)."""
        j = np.asarray(offsets, dtype=np.int64).ravel()
        self._counts(j)  # the range check
        return t.add(j)

    def add_frames(self, tallies: TallySet, frame_label, counts, offsets,
                   total: Tally = None) -> None:
        """Add a page of frames to the labels' tallies (TallySet.add_frames)."""
        j = np.asarray(offsets, dtype=np.int64).ravel()
        if j.size and (int(j.min()) < 0 or int(j.max()) >= self.n_cells):
            raise ValueError("a report is outside the table's %d cells" % self.n_cells)
        tallies.add_frames(frame_label, counts, j, None, total)

    def _tally_counts(self, t: Tally) -> np.ndarray:
        c = np.zeros(self.n_cells, dtype=np.int64)
        c[:t.counts.size] += t.counts
        return c

    def mean_of_tally(self, t: Tally) -> Fraction:
        counts = self._tally_counts(t)
        total = sum(int(c) * a for c, a in zip(counts.tolist(), self.values) if c)
        return self.calibrated_mean_total(total, t.n)

    def avg_star_of_tally(self, t):
        return None

    def avg_star_naive_tally(self, t):
        return None

    def clt_halfwidth_tally(self, t: Tally) -> float:
        if t.n < 2:
            return math.inf
        return self._clt_counts(self._tally_counts(t), t.n)

    def _clt_counts(self, counts, n: int) -> float:
        counts = np.asarray(counts).astype(np.float64)
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

