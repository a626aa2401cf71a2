"""The Hilbert index of a grid cell on the board (issue 24), integers only: the classic
xy -> d walk (quadrant by quadrant, rotating the lower quadrants), which is the curve of the
host's numpy-hilbert-curve (hilbert.encode(.., 2, L) with x the first coordinate):
tests/test_nmea.py checks every cell of small grids against it. Hand-written: the board has no
library for it.

cell(num, den, lo, hi, order): the integer cell floor((v - lo) / (hi - lo) 2^L) of an exact
value v = num/den (lo < hi exact (num, den) too, every den > 0), clamped to [0, 2^L - 1].
"""


def index(x, y, order):
    """d in [0, 4^order) of the cell (x, y), 0 <= x, y < 2^order."""
    n = 1 << order
    d = 0
    s = n >> 1
    while s:
        rx = 1 if x & s else 0
        ry = 1 if y & s else 0
        d += s * s * ((3 * rx) ^ ry)
        if ry == 0:
            if rx == 1:
                x = n - 1 - x
                y = n - 1 - y
            x, y = y, x
        s >>= 1
    return d


def cell(num, den, lo, hi, order):
    """floor((num/den - lo) / (hi - lo) 2^order), clamped; lo, hi are (num, den)."""
    ln, ld = lo
    hn, hd = hi
    # (v - lo) / (hi - lo) = (num ld - ln den) hd / ((hn ld - ln hd) den)
    top = (num * ld - ln * den) * hd << order
    bot = (hn * ld - ln * hd) * den
    c = top // bot
    last = (1 << order) - 1
    return 0 if c < 0 else (last if c > last else c)
