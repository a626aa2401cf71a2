"""Estimators of the mean from reports (offsets j = k - k_lo).

- the calibrated mean: inverts the exact affine map E[j | x] = slope * pos(x) + intercept, so
  it is unbiased for every m, even on grids of two or three cells;
- the paper's AVG* = mean(x*) - Abar, computed exactly from the integer offsets:
  x* - Abar = H + C + (j - (N - 1)) * ulp, so AVG* = H + C + (mean(j) - (N - 1)) * ulp;
- the same AVG* in naive float64 (sum of doubles near Abar), kept to show how it fails;
- 99% intervals: Bernstein (valid for every n) and the normal approximation.
Derivations: shared_spec/mechanism.md, "Estimators".

Table profiles: zeal.mechanism.table.estimate (`TableEstimator`).
"""
import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from .exact import ExactGrid, max_window_variance
from .profile import Profile
from ..core.summary import Summary
from ..core.tally import Tally, TallySet


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


class Estimator:
    """Everything the host computes from a batch of offsets under one profile."""

    kind = "grid"
    needs_counts = False   # its figures come from the sums of j and j^2 (core.tally)

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

    # -- from a running tally (zeal.mechanism.core.tally): what a streamed analysis uses ------------
    def _frame_sums(self, j, counts) -> np.ndarray:
        """The float64 sums of the doubles x* of each frame (counts: reports a frame; None:
        one frame), each frame summed by numpy at once (the naive AVG*'s parts)."""
        from .reports import floats_from_offsets
        floats = floats_from_offsets(self.profile, j)
        if floats.size == 0:
            return floats
        with np.errstate(over="ignore", invalid="ignore"):
            if counts is None:
                return np.add.reduceat(floats, [0])
            return np.add.reduceat(floats, np.cumsum(counts) - counts)

    def add_to(self, t: Tally, offsets, counts=None) -> Tally:
        """Add whole frames' offsets (in the reports' order; counts: reports a frame, None
        for one batch) to t, with their frames' float sums for the naive AVG*."""
        j = np.asarray(offsets, dtype=np.int64).ravel()
        return t.add(j, self._frame_sums(j, counts), own=True)

    def add_frames(self, tallies: TallySet, frame_label, counts, offsets,
                   total: Tally = None) -> None:
        """Add a page of frames to the labels' tallies (TallySet.add_frames), with the
        frames' float sums for the naive sums."""
        j = np.asarray(offsets, dtype=np.int64).ravel()
        tallies.add_frames(frame_label, counts, j, self._frame_sums(j, counts), total)

    def mean_of_tally(self, t: Tally) -> Fraction:
        return self.calibrated_mean(t.s1, t.n)

    def avg_star_of_tally(self, t: Tally) -> Fraction:
        return self.avg_star(t.s1, t.n)

    def avg_star_naive_tally(self, t: Tally) -> float:
        """The naive AVG*: the float64 sum of the x* (each frame's by numpy, the frames' one
        after the other in arrival order), over n, minus the float64 Abar (a float figure on
        purpose: it shows how the naive estimator fails)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.float64(t.naive) / t.n) - abar_float(self.profile)

    def clt_halfwidth_tally(self, t: Tally) -> float:
        var = t.variance()
        if var is None:
            return math.inf
        z = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        return z * abs(float(self.grid.gain)) * math.sqrt(float(var) / t.n)

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
