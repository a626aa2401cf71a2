"""The compact encoding of a table's weights, "zeal-table/2" (shared_spec/profile.md).

A dense table profile ("zeal-table/1") spells out all (R+1) N weights, so it holds at most
320 of them: 64 cells leave room for 5 anchors, too few for a good design. The designer's
tables have the shape of the optimal mechanisms instead (zeal.mechanism.table.design): every
entry of column j is one of two levels, lo_j or hi_j, the hi cells of a row form one run of
cells, and at most a few entries per row sit elsewhere. "zeal-table/2" stores exactly that:

    levels  per cell j: lo_j then hi_j, 8 lowercase hex digits each (16 N digits)
    rows    per anchor row r = 0..R: a_r, b_r, k_r (2 hex digits each), then k_r exceptions,
            each a cell c (2 hex digits) and its weight (8 hex digits), cells ascending
    W[r][j] = the exception's weight if row r lists j; else hi_j if a_r <= j < b_r; else lo_j

with a_r <= b_r <= N and k_r <= EXCEPTIONS_MAX. The canonical encoding (`encode`): lo_j the
column's least entry, hi_j its most frequent entry above lo_j (the smallest of equals), and
per row the run that leaves the fewest exceptions. Nothing else changes: the expanded weights are
checked exactly as a dense table's (privacy: every column ratio <= L; unbiased at every
anchor), plus one rule: every row has the same total (value). The levels are an encoding,
not a claim: the checks run on the expanded W.

API: `encode(weights) -> (levels, rows)` (the canonical encoding, or ProfileError when the
table has unequal row totals or a row needs more than EXCEPTIONS_MAX exceptions);
`decode(levels, rows, n_rows, n) -> weights` (ProfileError, reason "value", on a malformed
string); `EXCEPTIONS_MAX`.
"""
from collections import Counter

from ..core import pfile as P

EXCEPTIONS_MAX = 4
_fail = P._fail


def _levels(weights, n):
    """lo_j = the column's least entry; hi_j = its most frequent entry above lo_j (the
    smallest of the most frequent; lo_j when there is none)."""
    lo, hi = [], []
    for j in range(n):
        col = [row[j] for row in weights]
        low = min(col)
        count = Counter(x for x in col if x > low)
        lo.append(low)
        hi.append(min(count, key=lambda x: (-count[x], x)) if count else low)
    return lo, hi


def _row(row, lo, hi):
    """(a, b, exceptions) of one row: the run a..b-1 of hi cells that leaves the fewest
    exceptions (the first such run: smallest a, then b; the empty run is (0, 0)), and every
    cell whose weight the rule does not give."""
    n = len(row)
    # a run gains, per cell inside it, [not at lo] - [not at hi]: the best run is the
    # largest sum of a stretch of gains (nothing gained: the empty run)
    gain = [(row[j] != lo[j]) - (row[j] != hi[j]) for j in range(n)]
    best, a, b = 0, 0, 0
    for i in range(n):
        total = 0
        for k in range(i, n):
            total += gain[k]
            if total > best:
                best, a, b = total, i, k + 1
    out = [(j, row[j]) for j in range(n)
           if row[j] != (hi[j] if a <= j < b else lo[j])]
    return a, b, out


def encode(weights) -> tuple:
    """(levels, rows): the canonical "zeal-table/2" strings of a table's weights."""
    n = len(weights[0])
    totals = {sum(row) for row in weights}
    if len(totals) != 1:
        raise P.ProfileError("a compact table profile needs every row to have the same total")
    lo, hi = _levels(weights, n)
    parts = []
    for r, row in enumerate(weights):
        a, b, out = _row(row, lo, hi)
        if len(out) > EXCEPTIONS_MAX:
            raise P.ProfileError("table row %d has %d entries off its two levels; a compact "
                                 "profile holds at most %d" % (r, len(out), EXCEPTIONS_MAX))
        parts.append("%02x%02x%02x" % (a, b, len(out)))
        parts.extend("%02x%08x" % (j, w) for j, w in out)
    levels = "".join("%08x%08x" % (x, y) for x, y in zip(lo, hi))
    return levels, "".join(parts)


def decode(levels: str, rows: str, n_rows: int, n: int) -> list:
    """The (n_rows x n) weights a "zeal-table/2" profile's strings spell (the device's
    reading, in the same order: levels' length, then each row's record)."""
    if len(levels) != 16 * n:
        raise _fail("value", "table profile: levels must be %d hex digits (16 per cell)"
                    % (16 * n))
    lo = [int(levels[16 * j:16 * j + 8], 16) for j in range(n)]
    hi = [int(levels[16 * j + 8:16 * j + 16], 16) for j in range(n)]
    out, i, size = [], 0, len(rows)
    for _ in range(n_rows):
        if i + 6 > size:
            raise _fail("value", "table profile: rows ends inside a row's record")
        a, b, k = (int(rows[i + 2 * t:i + 2 * t + 2], 16) for t in range(3))
        i += 6
        if not a <= b <= n:
            raise _fail("value", "table profile: a row's run of hi cells is not inside the "
                        "cells")
        if k > EXCEPTIONS_MAX:
            raise _fail("value", "table profile: a row lists more than %d exceptions"
                        % EXCEPTIONS_MAX)
        if i + 10 * k > size:
            raise _fail("value", "table profile: rows ends inside a row's exceptions")
        row = [hi[j] if a <= j < b else lo[j] for j in range(n)]
        last = -1
        for _ in range(k):
            c, w = int(rows[i:i + 2], 16), int(rows[i + 2:i + 10], 16)
            i += 10
            if not last < c < n:
                raise _fail("value", "table profile: a row's exception cells must ascend "
                            "and lie inside the cells")
            last = c
            row[c] = w
        out.append(row)
    if i != size:
        raise _fail("value", "table profile: rows holds more than its %d records" % n_rows)
    return out
