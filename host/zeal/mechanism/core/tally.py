"""A running, exact summary of one profile's offsets j (the integer label of each report), so
that an analysis reads a store page by page in memory that does not grow with n.

What it keeps is what the estimators need, exactly: n, the sums of j and of j^2 (Python
integers: no overflow at any n), the count of each label while every label is below
COUNTS_MAX (a table's cells; a grid of up to 8 bits), and the float64 sum the estimator
chose to add (the grid's naive AVG*: the figure that shows how a float sum fails, so it is
a float sum on purpose). `add` takes one chunk; `merge` adds another tally."""
import numpy as np

COUNTS_MAX = 1 << 8    # labels from here on: moments only (a table has at most 64 cells; a
                       # count array per device of a 16-bit grid would be 512 KB)
_HALF = 1 << 31        # j below it: j * j fits int64
_LIMB = (1 << 21) - 1


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

    def add(self, j, floats=None, own: bool = False) -> "Tally":
        """Add a chunk of offsets j (and their doubles; own: the floats array may be
        overwritten)."""
        j = np.asarray(j, dtype=np.int64).ravel()
        if j.size == 0:
            return self
        if int(j.min()) < 0:
            raise ValueError("an offset is negative")
        top = int(j.max())
        self.n += int(j.size)
        self.s1 += _exact_sum(j)
        if top < _HALF and top * top * j.size < (1 << 63):  # one pass, no overflow
            self.s2 += int(np.dot(j, j))
        elif top < _HALF:
            self.s2 += _exact_sum(j * j)
        else:  # j = a 2^42 + b 2^21 + c, limbs below 2^21: every product below 2^42
            a, b, c = j >> 42, (j >> 21) & _LIMB, j & _LIMB
            self.s2 += ((_exact_sum(a * a) << 84) + (_exact_sum(a * b) << 64)
                        + ((2 * _exact_sum(a * c) + _exact_sum(b * b)) << 42)
                        + (_exact_sum(b * c) << 22) + _exact_sum(c * c))
        if self.counts is not None:
            if top >= COUNTS_MAX:
                self.counts = None
            else:
                c = np.bincount(j, minlength=self.counts.size)
                c[:self.counts.size] += self.counts
                self.counts = c
        if floats is not None:
            f = np.asarray(floats, dtype=np.float64) if own else \
                np.array(floats, dtype=np.float64)
            self.naive = _seq_sum(f, self.naive)
        return self

    def copy_of(self, other: "Tally") -> "Tally":
        """Become a copy of other (the same reports in the same order)."""
        self.n, self.s1, self.s2, self.naive = other.n, other.s1, other.s2, other.naive
        self.counts = None if other.counts is None else other.counts.copy()
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


def _seq_sum(floats, start: float) -> float:
    """start + x0 + x1 + ..., added one after the other in float64 (floats is overwritten)."""
    if floats.size == 0:
        return start
    with np.errstate(over="ignore", invalid="ignore"):
        floats[0] += start
        np.add.accumulate(floats, out=floats)
    return float(floats[-1])


def add_split(tallies: list, labels, j, floats=None) -> None:
    """tallies[k].add(j[labels == k], floats[labels == k]) for every label k present, each in
    j's order: one stable sort and whole-array sums instead of a pass per label.

    Exact: the sums are int64 per page of labels only while a page's j^2 sums fit
    (j < 2^22 and at most 2^18 reports a call; else each label is added alone). The naive
    float sums stay strictly sequential per label (Tally's docstring)."""
    j = np.asarray(j, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if j.size == 0:
        return
    if int(j.min()) < 0:
        raise ValueError("an offset is negative")
    order = np.argsort(labels, kind="stable")
    ls, js = labels[order], j[order]
    keys, starts = np.unique(ls, return_index=True)
    ends = np.append(starts[1:], ls.size)
    fs = None if floats is None else np.asarray(floats, dtype=np.float64)[order]
    top = int(js.max())
    if top >= (1 << 22) or js.size > (1 << 18):
        for k, a, b in zip(keys.tolist(), starts.tolist(), ends.tolist()):
            tallies[k].add(js[a:b], None if fs is None else fs[a:b])
        return
    n = ends - starts
    s1 = np.add.reduceat(js, starts)
    s2 = np.add.reduceat(js * js, starts)
    cells = None
    if top < COUNTS_MAX:
        width = top + 1
        cells = np.bincount(np.repeat(np.arange(keys.size), n) * width + js,
                            minlength=keys.size * width).reshape(keys.size, width)
    for i, (k, a, b) in enumerate(zip(keys.tolist(), starts.tolist(), ends.tolist())):
        t = tallies[k]
        t.n += int(n[i])
        t.s1 += int(s1[i])
        t.s2 += int(s2[i])
        if t.counts is not None:
            if cells is None:
                t.counts = None
            else:
                c = cells[i]
                if t.counts.size < c.size:
                    c = c.copy()
                    c[:t.counts.size] += t.counts
                    t.counts = c
                else:
                    t.counts[:c.size] += c
        if fs is not None:
            t.naive = _seq_sum(fs[a:b], t.naive)
