"""The table sampler on the device (shared_spec/mechanism.md, the table mechanism): integers
only, word for word the host reference (host/zeal/mechanism/table/sampler.py).

A reading x is placed at pos = (x - lo) R / (hi - lo), clamped to [0, R]; the row is
r = floor(pos) + BERNOULLI(frac(pos)); the cell is the smallest j with
W[r][0] + ... + W[r][j] > u, u = UNIFORM(S_r). The report is j (m bits on the wire, no
offset; no branch word). The position, the clamping, the stochastic rounding and every
reading kind (float64/float32 patterns, raw counts with calibration, exact rationals) are
zealfw.mechanism.Zeal's with steps = R, reused by subclassing: only `finish` (what follows
the position) differs. UNIFORM is mechanism's Uniform: one instance whose constants are
replaced by row r's before each draw.

Heap: the weights stay one bytes object (4 big-endian bytes per weight, read in place); the
constants of UNIFORM(S_r) are made at start, one tuple a row, not R+1 objects (an object
with its attribute table costs ~180 bytes on the unix port). A designer's row sums are near
2^32: a heap int on a 32-bit board (31-bit small ints), so such a row's UNIFORM is drawn in
28-bit limbs (_WideUniform) and the cell scan adds the weights by 16-bit halves. A report
allocates only what the generator and the position allocate for the grid. Few names (each is
interned for good, see zealfw.tprofile): the class is `Zeal`, a zealfw.mechanism.Zeal for
table profiles.
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

import struct

from . import mechanism

_M28 = const((1 << 28) - 1)  # a 28-bit limb


class Zeal(mechanism.Zeal):
    """One table profile, one word source. `profile`: zealfw.profile.numbers' fields as
    zealfw.build lays them out: n_cells - n_window = R (the position's steps) and table =
    (weights, N, [S_r]). perturb_* and sample return the cell j (k_lo = 0); low(j) = j."""

    def __init__(self, profile, words):
        # the position's constants as for the grid (zealfw.mech_setup, freed by zealfw.main
        # after); the grid's _fin it also makes is replaced below
        mechanism.Zeal.__init__(self, profile, words)
        w, n, sums = profile.table
        # per row the constants of Uniform(S_r), one tuple a row (small blocks: a long
        # list would need one large contiguous block)
        # a sum from 2^22 to 2^36 (the designer's tables: near 2^32) is drawn in limbs by
        # _WideUniform (its constants: 4 of them; Uniform's: 2 or 3), the cells'
        # sums compared in limbs
        # the list made at its size (appends move it into ever larger blocks)
        rows = [None] * len(sums)
        u = wu = None
        r = 0
        for s in sums:
            if r and s == sums[r - 1]:  # a compact table's rows share one total: one tuple
                rows[r] = rows[r - 1]
            elif s >> 22 and not s >> 36:
                wu = _WideUniform(s)
                rows[r] = wu.c
            else:
                u = mechanism.Uniform(s)
                rows[r] = u.c
            r += 1
        # a compact table (zeal-table/2): (levels, records, offsets) and one total; its drawn
        # row is written out into one buffer of N weights (zealfw.trows) and scanned as a
        # dense row
        buf = x = None
        if type(w) is tuple:
            from .trows import expand as x  # only for a compact table (a board's heap)
            buf = bytearray(n << 2)
        self._fin = (w, n, rows, u, wu, buf, x)  # finish's: weights, N, rows, UNIFORMs

    def finish(self, base, r, low, f, q):
        """The cell from the position's floor `base` and fraction (low + r/q) / 2^f."""
        words = self.words
        row = base + mechanism.bernoulli_frac(r, low, f, q, words)
        w, n, rows, u, wu, buf, x = self._fin
        # UNIFORM(S_row): the row's constants into the one Uniform or _WideUniform (no
        # allocation: the attribute exists)
        if buf is None:
            c = rows[row]
            o = (row * n) << 2
        else:
            c = rows[0]
            o = row << 1
            x(w[0], w[1], (w[2][o] << 8) | w[2][o + 1], n, buf)
            w = buf
            o = 0
        j = 0
        if len(c) == 4:  # wide: u = uh 2^16 + ul, the running sum likewise (weights by halves)
            wu.c = c
            wu.draw(words)
            uh = wu.hi
            ul = wu.lo
            ch = 0
            cl = 0
            while True:
                ch += (w[o] << 8) | w[o + 1]
                cl += (w[o + 2] << 8) | w[o + 3]
                if cl >> 16:
                    ch += 1
                    cl &= 0xFFFF
                if ch > uh or (ch == uh and cl > ul):
                    return j
                j += 1
                o += 4
        u.c = c
        s = u.draw(words)
        i = 0
        while True:
            i += (w[o] << 24) | (w[o + 1] << 16) | (w[o + 2] << 8) | w[o + 3]
            if i > s:
                return j
            j += 1
            o += 4


class _WideUniform:
    """UNIFORM(n) of mechanism.md for 2^22 <= n < 2^36 (a table row's weight sum S_r), the
    same u and the same words as `uniform_below` (u = w // d, d = 2^64 // n, accepted when
    u < n, i.e. w < n d), with u left in two 16-bit limbs (self.hi, self.lo: u is near 2^32,
    a heap int on a 32-bit board). Accepting compares w's bytes with n d's; then w is divided
    by d (d < 2^42: limbs dh < 2^14, dl) one bit at a time, most significant first, the
    remainder below d in limbs (r < 2^42 before the subtraction: rh < 2^15).
    `c` holds the row's constants (n, lim, dh, dl), swapped in per row by Zeal.finish."""

    def __init__(self, n):
        d = (1 << 64) // n
        lim = n * d
        self.c = (n, None if lim == 1 << 64 else struct.pack("<Q", lim), d >> 28, d & _M28)
        self.hi = 0  # u's limbs
        self.lo = 0

    def draw(self, words):
        n, lim, dh, dl = self.c
        while True:
            o = words.advance()
            b = words.block
            if lim is not None and not mechanism.below(b, o, lim):
                continue  # w >= n d: rejected
            rh = 0
            rl = 0
            uh = 0
            ul = 0
            i = o + 7
            while i >= o:
                x = b[i]
                k = 8
                while k:
                    k -= 1
                    rl = (rl << 1) | ((x >> k) & 1)
                    rh = (rh << 1) | (rl >> 28)
                    rl &= _M28
                    ul <<= 1
                    uh = (uh << 1) | (ul >> 16)
                    ul &= 0xFFFF
                    if rh > dh or (rh == dh and rl >= dl):
                        rl -= dl
                        rh -= dh
                        if rl < 0:
                            rl += 1 << 28
                            rh -= 1
                        ul |= 1
                i -= 1
            self.hi = uh
            self.lo = ul
            return 0
