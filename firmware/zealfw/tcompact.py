"""The compact table version, "zeal-table/2", on the device: its records' shape and checks 12
and 13 on its rows (shared_spec/profile.md). A module of its own, imported by zealfw.tprofile
only for a compact file: a dense table's load does not carry this code on a board's heap.
Integers only (the AST float ban covers this module).
"""
from binascii import unhexlify

from .pfile import ProfileError, exp_lower_bound
from .trows import expand, word as _w


def records(levels, rows, nr, n):
    """A compact table's (levels, records, row offsets) from its two strings, the records'
    shape checked (profile.md, value): a <= b <= N, k <= 4, cells ascending inside N, nothing
    left over."""
    if len(levels) != n << 4:
        raise ProfileError("value", "levels must hold 16 N hex digits")
    if len(rows) & 1:
        raise ProfileError("value", "rows ends inside a record")
    lv = unhexlify(levels)
    rb = unhexlify(rows)
    offs = bytearray(nr << 1)   # row r's record at offs[2r] << 8 | offs[2r + 1]
    o = 0
    end = len(rb)
    r = 0
    while r < nr:
        if o + 3 > end:
            raise ProfileError("value", "rows ends inside a record")
        k = rb[o + 2]
        if rb[o] > rb[o + 1] or rb[o + 1] > n or k > 4 or o + 3 + 5 * k > end:
            raise ProfileError("value", "a row's record is out of bounds")
        offs[r << 1] = o >> 8
        offs[(r << 1) + 1] = o & 0xFF
        r += 1
        c = -1
        o += 3
        while k:
            if rb[o] <= c or rb[o] >= n:
                raise ProfileError("value", "a row's exception cells must ascend inside N")
            c = rb[o]
            o += 5
            k -= 1
    if o != end:
        raise ProfileError("value", "rows holds more than R + 1 records")
    return lv, rb, offs


def checks(w, n, rr, a, q, s, eps, row):
    """Checks 12 and 13 on a compact table (every row total s), in one pass over the rows
    (each written out by zealfw.trows): per column the least and largest entry, all zero or
    max <= L min in integers (the totals are equal); R sum_j W[r][j] a_j == r s Q at every
    anchor, refused after the privacy checks."""
    lv, rb, offs = w
    lo = [-1] * n
    hi = [0] * n
    biased = False
    for r in range(rr + 1):
        expand(lv, rb, (offs[r << 1] << 8) | offs[(r << 1) + 1], n, row)
        t = 0
        for j in range(n):
            v = _w(row, j)
            if lo[j] < 0 or v < lo[j]:
                lo[j] = v
            if v > hi[j]:
                hi[j] = v
            t += v * a[j]
        if rr * t != r * s * q:
            biased = True  # refused after the privacy checks (the list's order)
    ls, ld = exp_lower_bound(eps[0], eps[1])
    for j in range(n):
        if hi[j] and not lo[j]:
            raise ProfileError("privacy", "a column is zero in one row and not in another")
        if hi[j] * ld > ls * lo[j]:
            raise ProfileError("privacy", "a column ratio exceeds the certified bound of "
                                          "e^epsilon")
    if biased:
        raise ProfileError("unbiased", "the output values are biased at an anchor")
