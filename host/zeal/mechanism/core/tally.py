"""A running, exact summary of one profile's offsets j (the integer label of each report), so
that an analysis reads a store page by page in memory that does not grow with n.

What it keeps is what the estimators need, exactly: n, the sums of j and of j^2 (Python
integers: no overflow at any n), the count of each label while every label is below
COUNTS_MAX (a table's cells; kept only when asked for), and a float64 sum the estimator
chooses: the grid's naive AVG* (the figure that shows how float64 arithmetic on the paper's
doubles fails, so a float sum on purpose). It is made of the frames' float64 sums, each
frame's doubles summed by numpy at once, and those sums added one after the other in arrival
order: the same however the reports are cut into pages, since a frame is never cut. `add`
takes one chunk of whole frames, in order; `TallySet` many labels (devices) at once."""
import numpy as np

COUNTS_MAX = 1 << 8    # labels from here on: moments only (a table has at most 64 cells; a
                       # count array per device of a 16-bit grid would be 512 KB)
_HALF = 1 << 31        # j below it: j * j fits int64
_LIMB = (1 << 21) - 1
ROUNDS_MAX = 32        # TallySet: a label with more frames in a page is summed on its own


def _exact_sum(a) -> int:
    """Exact sum of non-negative int64 values below 2^62, whatever the count."""
    if a.size == 0:
        return 0
    top = int(a.max())
    step = max(1, (1 << 62) // max(top, 1))
    return sum(int(a[i:i + step].sum(dtype=np.int64)) for i in range(0, a.size, step))


class Tally:
    __slots__ = ("n", "s1", "s2", "counts", "naive")

    def __init__(self, counts: bool = True):
        """counts=False: no cell counts (an estimator that needs only the sums)."""
        self.n = 0
        self.s1 = 0
        self.s2 = 0
        # None once a label reached COUNTS_MAX, or when not asked for
        self.counts = np.zeros(0, dtype=np.int64) if counts else None
        self.naive = 0.0

    def add(self, j, floats=None, own: bool = False) -> "Tally":
        """Add a chunk of whole frames' offsets j; floats: the frames' float64 sums, in order
        (own: that array may be overwritten)."""
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


class TallySet:
    """Tallies of many labels (a profile's devices) kept as arrays, added a page of frames
    at a time: the same figures as one Tally per label (tally(k) gives it), without a Python
    step per label per page (1,000 devices x 1,500 pages at 10^8 reports).

    add_frames(frame_label, counts, j, floats): frame i has counts[i] reports, label
    frame_label[i]; j holds the reports frame after frame. Exact: n per label in int64;
    the sums of j and j^2 in Python integers (object arrays), each page's part in int64 while
    it fits (j^2 times the page's reports below 2^63; else label by label through
    Tally.add).
    The naive float sums add each label's frame sums (floats, one per frame) one after the
    other, in arrival order: in rounds, the r-th frame of every label at once."""

    def __init__(self, counts: bool = True):
        self.size = 0
        self.n = np.zeros(0, dtype=np.int64)
        self.s1 = np.zeros(0, dtype=object)
        self.s2 = np.zeros(0, dtype=object)
        self.naive = np.zeros(0, dtype=np.float64)
        # None once a label reached COUNTS_MAX, or when not asked for (as Tally's)
        self.counts = np.zeros((0, 0), dtype=np.int64) if counts else None

    def _grow(self, size: int) -> None:
        if size <= self.size:
            return
        extra = size - self.size
        self.n = np.concatenate([self.n, np.zeros(extra, dtype=np.int64)])
        self.s1 = np.concatenate([self.s1, np.zeros(extra, dtype=object)])
        self.s2 = np.concatenate([self.s2, np.zeros(extra, dtype=object)])
        self.naive = np.concatenate([self.naive, np.zeros(extra)])
        if self.counts is not None:
            self.counts = np.vstack([self.counts, np.zeros((extra, self.counts.shape[1]),
                                                           dtype=np.int64)])
        self.size = size

    def _cells(self, width: int) -> None:
        if self.counts is not None and self.counts.shape[1] < width:
            more = np.zeros((self.size, width - self.counts.shape[1]), dtype=np.int64)
            self.counts = np.hstack([self.counts, more])

    def add_frames(self, frame_label, counts, j, floats=None, total=None) -> None:
        """floats: the frames' float64 sums (one per frame); total: a Tally of all the
        labels' reports (in this order) to add the page to as well, from the same sums
        (floats is then overwritten)."""
        frame_label = np.asarray(frame_label, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        if j.size == 0:
            return
        self._grow(int(frame_label.max()) + 1)
        if int(j.min()) < 0:
            raise ValueError("an offset is negative")
        top = int(j.max())
        if top >= _HALF or top * top * j.size >= (1 << 63):  # a page's int64 sums could wrap
            self._slow(frame_label, counts, j, floats)
            if total is not None:
                total.add(j, floats, own=True)
            return
        starts = np.cumsum(counts) - counts
        order = np.argsort(frame_label, kind="stable")       # frames, not reports
        lab = frame_label[order]
        keys, first = np.unique(lab, return_index=True)
        per_frame1 = np.add.reduceat(j, starts)[order]
        per_frame2 = np.add.reduceat(j * j, starts)[order]
        self.n[keys] += np.add.reduceat(counts[order], first)
        s1 = np.add.reduceat(per_frame1, first)
        s2 = np.add.reduceat(per_frame2, first)
        self.s1[keys] += s1.astype(object)
        self.s2[keys] += s2.astype(object)
        cells = None
        if self.counts is not None:
            if top >= COUNTS_MAX:
                self.counts = None
            else:
                self._cells(top + 1)
                w = self.counts.shape[1]
                cells = np.bincount(np.repeat(frame_label, counts) * w + j,
                                    minlength=self.size * w).reshape(self.size, w)
                self.counts += cells
        if floats is not None:
            floats = np.asarray(floats, np.float64)
            self._naive(frame_label, order, lab, first, floats)
        if total is not None:   # the same page, whole: from the labels' sums
            total.n += int(j.size)
            total.s1 += sum(int(v) for v in s1.tolist())
            total.s2 += sum(int(v) for v in s2.tolist())
            if total.counts is not None:
                if top >= COUNTS_MAX:
                    total.counts = None
                else:
                    c = (cells.sum(axis=0) if cells is not None
                         else np.bincount(j, minlength=top + 1))
                    if total.counts.size < c.size:
                        c = c.copy()
                        c[:total.counts.size] += total.counts
                        total.counts = c
                    else:
                        total.counts[:c.size] += c
            if floats is not None:
                total.naive = _seq_sum(floats, total.naive)

    def _naive(self, frame_label, order, lab, first, fsum) -> None:
        """Add each label's frame sums fsum (one per frame) to its running sum, in order."""
        sizes = np.diff(np.append(first, order.size))
        rank = np.empty(order.size, dtype=np.int64)   # a frame's rank among its label's
        rank[order] = np.arange(order.size) - np.repeat(first, sizes)
        heavy = lab[first[sizes > ROUNDS_MAX]]
        if heavy.size:   # a label with many frames here: its own sequential pass
            for k in heavy.tolist():
                self.naive[k] = _seq_sum(fsum[frame_label == k], float(self.naive[k]))
            rank[np.isin(frame_label, heavy)] = -1
        with np.errstate(over="ignore", invalid="ignore"):
            for r in range(int(rank.max()) + 1):
                sel = np.flatnonzero(rank == r)               # one frame per label, at most
                labs = frame_label[sel]
                self.naive[labs] = self.naive[labs] + fsum[sel]

    def _slow(self, frame_label, counts, j, floats) -> None:
        """Label by label through Tally.add (wide offsets or a large page)."""
        labels = np.repeat(frame_label, counts)
        order = np.argsort(labels, kind="stable")
        keys, first = np.unique(labels[order], return_index=True)
        bounds = np.append(first, labels.size)
        for i, k in enumerate(keys.tolist()):
            mask = order[bounds[i]:bounds[i + 1]]       # label k's reports, in order
            t = Tally()
            t.n, t.s1, t.s2, t.naive = int(self.n[k]), int(self.s1[k]), int(self.s2[k]), \
                float(self.naive[k])
            t.counts = None if self.counts is None else self.counts[k].copy()
            t.add(j[mask], None if floats is None else floats[frame_label == k])
            self.n[k], self.s1[k], self.s2[k], self.naive[k] = t.n, t.s1, t.s2, t.naive
            if t.counts is None:
                self.counts = None
            elif self.counts is not None:
                self._cells(t.counts.size)
                self.counts[k, :t.counts.size] = t.counts

    def set_from(self, k: int, t: Tally) -> None:
        """Label k's tally becomes t's (the same reports in the same order)."""
        self._grow(k + 1)
        self.n[k], self.s1[k], self.s2[k], self.naive[k] = t.n, t.s1, t.s2, t.naive
        if t.counts is None:
            self.counts = None
        elif self.counts is not None:
            self._cells(t.counts.size)
            self.counts[k] = 0
            self.counts[k, :t.counts.size] = t.counts

    def tally(self, k: int) -> Tally:
        t = Tally()
        t.n, t.s1, t.s2, t.naive = int(self.n[k]), int(self.s1[k]), int(self.s2[k]), \
            float(self.naive[k])
        t.counts = None if self.counts is None else self.counts[k].copy()
        return t
