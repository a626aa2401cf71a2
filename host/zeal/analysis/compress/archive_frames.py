"""The archive's frame table (compress.archive): each column as arithmetic runs [first, step,
length], so that a regular collection (seq + 1 a frame, one batch size) costs a few numbers."""
from array import array
from typing import List, Sequence

import numpy as np

from .archive_format import ArchiveError


def runs(values: Sequence[int]) -> List[List[int]]:
    """[[first, step, length], ...] covering `values` in order (greedy: a run extends while
    the step holds). Exact inverse: `unruns`. Linear: the differences are taken once, and
    each position knows where its block of equal differences ends."""
    v = np.asarray(values, dtype=np.int64)
    n = v.size
    d = np.diff(v)
    if d.size:
        ends = np.append(np.flatnonzero(d[1:] != d[:-1]), d.size - 1)
        end = np.repeat(ends, np.diff(ends, prepend=-1))   # end[j]: last j' with d[j..j'] equal
    out = []
    i = 0
    while i < n:
        if i + 1 == n:
            out.append([int(v[i]), 0, 1])
            break
        length = int(end[i]) - i + 2
        out.append([int(v[i]), int(d[i]), length])
        i += length
    return out


class Runs:
    """A column's runs kept compactly (three 8-byte integers a run, not a list of Python
    integers): iterates as runs() lists them, [first, step, length] each; `json_chunks()`
    gives its JSON text (json.dumps's, no spaces) a piece at a time."""

    def __init__(self, flat: array):
        self._flat = flat

    def __len__(self) -> int:
        return len(self._flat) // 3

    def __iter__(self):
        f = self._flat
        for i in range(0, len(f), 3):
            yield [f[i], f[i + 1], f[i + 2]]

    def tolist(self) -> List[List[int]]:
        return list(self)

    def json_chunks(self, per: int = 4096):
        f = self._flat
        if not f:
            yield "[]"
            return
        for at in range(0, len(f), 3 * per):
            piece = f[at:at + 3 * per]
            yield ("[" if at == 0 else ",") + ",".join(
                "[%d,%d,%d]" % (piece[i], piece[i + 1], piece[i + 2])
                for i in range(0, len(piece), 3))
        yield "]"


class RunsBuilder:
    """`runs` of a column given a piece at a time (`add(values)`), so that the column itself
    need not be held: `done()` is runs(all the values, in order), exactly, as `Runs`. The open
    run (the last, which the next piece may extend) is carried as its first value, step and
    length, and its last two values (or its one)."""

    def __init__(self):
        self._closed = array("q")
        self._open = None      # [first, step, length] of the run the next values may extend
        self._tail = []        # its last two values (one while it has one)

    def add(self, values) -> None:
        v = np.asarray(values, dtype=np.int64)
        if not v.size:
            return
        head = self._tail
        got = runs(np.concatenate([np.array(head, dtype=np.int64), v]))
        if self._open is not None:   # the first run continues the open one (same start)
            first, _, length = self._open
            got[0] = [first, got[0][1], length - len(head) + got[0][2]]
        for run in got[:-1]:
            self._closed.extend(run)
        self._open = got[-1]
        both = v[-2:].tolist() if v.size > 1 else self._tail[-1:] + v.tolist()
        self._tail = both[-min(2, self._open[2]):]

    def done(self) -> Runs:
        flat = array("q", self._closed)
        if self._open is not None:
            flat.extend(self._open)
        return Runs(flat)


def unruns(spec, what: str) -> np.ndarray:
    """Exact inverse of `runs` (vectorised; int64 arithmetic wraps, and a run whose ends fit
    int64 has every value exact)."""
    try:
        arr = np.array(spec, dtype=np.int64).reshape(-1, 3)
    except (TypeError, ValueError, OverflowError):
        raise ArchiveError("manifest: frame column %s is damaged" % what) from None
    first, step, k = arr[:, 0], arr[:, 1], arr[:, 2]
    if arr.size and int(k.min()) < 1:
        raise ArchiveError("manifest: frame column %s is damaged" % what)
    n = int(k.sum())
    within = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    with np.errstate(over="ignore"):
        return np.repeat(first, k) + np.repeat(step, k) * within
