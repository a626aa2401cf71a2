"""A running, exact summary of one profile's offsets j (the integer label of each report), so
that an analysis reads a store page by page in memory that does not grow with n.

What it keeps is what the estimators need, exactly: n, the sums of j and of j^2 (Python
integers: no overflow at any n), the count of each label while every label is below
COUNTS_MAX (a table's cells; a grid of up to 16 bits), and the float64 sum the estimator
chose to add (the grid's naive AVG*: the figure that shows how a float sum fails, so it is
a float sum on purpose). `add` takes one chunk; `merge` adds another tally."""
import numpy as np

COUNTS_MAX = 1 << 16   # labels from here on: moments only (no table has so many cells)
_HALF = 1 << 31        # j below it: j * j fits int64


def _exact_sum(a) -> int:
    """Exact sum of non-negative int64 values below 2^62, whatever the count."""
    if a.size == 0:
        return 0
    top = int(a.max())
    step = max(1, (1 << 62) // max(top, 1))
    return sum(int(a[i:i + step].sum(dtype=np.int64)) for i in range(0, a.size, step))


class Tally:
    __slots__ = ("n", "s1", "s2", "counts", "naive")

    def __init__(self):
        self.n = 0
        self.s1 = 0
        self.s2 = 0
        self.counts = np.zeros(0, dtype=np.int64)   # None once a label reached COUNTS_MAX
        self.naive = 0.0

    def add(self, j, floats=None) -> "Tally":
        j = np.asarray(j, dtype=np.int64).ravel()
        if j.size == 0:
            return self
        if int(j.min()) < 0:
            raise ValueError("an offset is negative")
        top = int(j.max())
        self.n += int(j.size)
        self.s1 += _exact_sum(j)
        if top < _HALF:
            self.s2 += _exact_sum(j * j)
        else:  # j = h 2^20 + l: j^2 = h^2 2^40 + 2 h l 2^20 + l^2, each part an exact sum
            h, lo = j >> 20, j & ((1 << 20) - 1)
            self.s2 += (_exact_sum(h * h) << 40) + (_exact_sum(h * lo) << 21) \
                + _exact_sum(lo * lo)
        if self.counts is not None:
            if top >= COUNTS_MAX:
                self.counts = None
            else:
                c = np.bincount(j, minlength=self.counts.size)
                c[:self.counts.size] += self.counts
                self.counts = c
        if floats is not None:
            with np.errstate(over="ignore", invalid="ignore"):  # an inf sum is the figure
                run = np.cumsum(np.concatenate(([self.naive], np.asarray(floats,
                                                                         np.float64))))
            self.naive = float(run[-1])
        return self

    @classmethod
    def of(cls, j, floats=None) -> "Tally":
        return cls().add(j, floats)

    def variance(self):
        """The sample variance of j (n - 1 denominator), exactly (a Fraction); None below 2."""
        from fractions import Fraction
        if self.n < 2:
            return None
        return Fraction(self.s2 * self.n - self.s1 * self.s1, self.n * (self.n - 1))
