"""The archive's frame table (compress.archive): each column as arithmetic runs [first, step,
length], so that a regular collection (seq + 1 a frame, one batch size) costs a few numbers."""
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
