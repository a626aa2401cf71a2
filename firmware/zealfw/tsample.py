"""The table sampler on the device (shared_spec/mechanism.md, the table mechanism): integers
only, word for word the host reference (host/zeal/mechanism/table_sampler.py).

A reading x is placed at pos = (x - lo) R / (hi - lo), clamped to [0, R]; the row is
r = floor(pos) + BERNOULLI(frac(pos)); the cell is the smallest j with
W[r][0] + ... + W[r][j] > u, u = UNIFORM(S_r). The report is j (m bits on the wire, no
offset; no branch word). The position, the clamping, the stochastic rounding and every
reading kind (float64/float32 patterns, raw counts with calibration, exact rationals) are
zealfw.mechanism.Zeal's with steps = R, reused by subclassing: only `_finish` (what follows
the position) differs. UNIFORM is mechanism's _Uniform: one instance whose constants are
replaced by row r's before each draw.

Heap: the weights stay one bytes object (4 big-endian bytes per weight, read in place); the
constants of UNIFORM(S_r) are made at start, one tuple of six small ints a row, not R+1
objects (an object with its attribute table costs ~180 bytes on the unix port).
A report allocates only what the generator and the position allocate for the grid; the
cell scan adds and compares small ints. Few names (each is interned for good, see
zealfw.tprofile): the class is `Zeal`, a zealfw.mechanism.Zeal for table profiles.
"""
from . import mechanism


class Zeal(mechanism.Zeal):
    """One table profile, one word source. `profile`: zealfw.profile.numbers' fields as
    zealfw.build lays them out: n_cells - n_window = R (the position's steps) and table =
    (weights, N, [S_r]). perturb_* and sample return the cell j (k_lo = 0); low(j) = j."""

    def __init__(self, profile, words):
        # the position's constants as for the grid, by zealfw.exact (freed by zealfw.main
        # after); the grid's _fin it also makes is replaced below
        from .exact import init_zeal

        init_zeal(self, profile, words)
        w, n, sums = profile.table
        # per row the constants of _Uniform(S_r): (S_r, small, lh, ll, dh, dl); a tuple a
        # row (small blocks: a long list would need one large contiguous block)
        rows = []
        for s in sums:
            u = mechanism._Uniform(s)
            rows.append((s, u.small, u.lh, u.ll, u.dh, u.dl))
        self._fin = (w, n, rows, u)  # _finish's: weights, N, the rows' constants, a UNIFORM

    def _finish(self, base, r, low, f, q):
        """The cell from the position's floor `base` and fraction (low + r/q) / 2^f."""
        words = self.words
        row = base + mechanism._bernoulli_frac(r, low, f, q, words)
        w, n, rows, u = self._fin
        # UNIFORM(S_row): the row's constants into the one _Uniform (no allocation: every
        # attribute exists; unpacking a tuple allocates nothing); d, read only when not
        # small, is dh 2^32 + dl (<= 2^34 there)
        u.n, u.small, u.lh, u.ll, dh, dl = rows[row]
        if u.small:
            u.dh = dh
            u.dl = dl
        else:
            u.d = (dh << 32) | dl
        s = u.draw(words)
        o = (row * n) << 2
        i = 0
        j = 0
        while True:
            i += (w[o] << 24) | (w[o + 1] << 16) | (w[o + 2] << 8) | w[o + 3]
            if i > s:
                return j
            j += 1
            o += 4
