"""Wide divisors on the device: the position's long division (zealfw.mechanism.Zeal.divide)
and the Bernoulli of its fraction (bernoulli_frac) for a divisor Kd from 2^29 to 2^56, in
28-bit limbs, small ints on a 32-bit board.

A profile whose bounds are not short dyadic numbers (hi = 83.9 is exactly
83.900000000000005684..., a 53-bit mantissa) has a position divisor Kd of 50 bits or more:
a plain int of that size is a heap int on a 32-bit board (31-bit small ints), and every step
of the division would allocate. Here it is held as two 28-bit limbs (high, low), each step's
values stay below 2^30, and the arithmetic is the same long division, one bit at a time:
the same floor, the same remainder, the same words read, the same report. Imported by
zealfw.mech_setup only for a profile that needs it (other boards never hold it); its method
names are the ones zealfw.mechanism already has (every name is interned for good).
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

_L = const(28)
_M = const((1 << 28) - 1)
_ONE = const(1 << 28)


class Wide:
    """A divisor q with 2^29 <= q < 2^56, as limbs (qh, ql) = self.c, q = qh 2^28 + ql
    (qh < 2^28), and the remainder (self.hi, self.lo) of the last division, which
    `bernoulli_frac` reads. With r < q before a step, r' = 2 r + g n < 2 q + n < 3 q for
    n < 2^28 <= q: its low limb is below 2^29 + 2^28 and its high one at most 2 qh + 1,
    both below 2^30, and at most two subtractions bring r' below q again."""

    def __init__(self, q):
        self.c = (q >> _L, q & _M)
        self.hi = 0  # the last remainder's limbs
        self.lo = 0

    def divide(self, p, y, n, c, k):
        """Zeal.divide (its docstring has the argument) for this divisor, one bit of y a
        step: the report for pos = y n 2^c / q, clamped at the sampler p's steps k (its
        _steps, passed by p: no module reads another's private attributes; the
        method names are the ones Zeal already has: every name is interned for good)."""
        steps = k
        qh, ql = self.c
        rh = 0
        rl = 0
        base = 0
        at = 0
        while y >> at:
            at += 1
        while at > 0:
            at -= 1
            rl = (rl << 1) + ((y >> at) & 1) * n
            rh = (rh << 1) + (rl >> _L)
            rl &= _M
            base <<= 1
            while rh > qh or (rh == qh and rl >= ql):
                rl -= ql
                rh -= qh
                if rl < 0:
                    rl += _ONE
                    rh -= 1
                base += 1
        low = 0
        f = 0
        if c < 0:
            f = -c
            top = base >> f
            low = base - (top << f)
            base = top
        while c > 0 and base <= steps:
            rl <<= 1
            rh = (rh << 1) + (rl >> _L)
            rl &= _M
            base <<= 1
            if rh > qh or (rh == qh and rl >= ql):
                rl -= ql
                rh -= qh
                if rl < 0:
                    rl += _ONE
                    rh -= 1
                base += 1
            c -= 1
        if c > 0:  # stopped early: pos >= 2 base > steps
            base = steps + 1
        if base >= steps:  # x >= hi: pos = steps
            if base > steps or rh or rl or low:
                p.clamped += 1
            return p.finish(steps, 0, 0, 0, 1)
        self.hi = rh
        self.lo = rl
        return p.finish(base, 0, low, f, self)

    def bernoulli_frac(self, low, f, words):
        """bernoulli_frac for the fraction (low + r/q) / 2^f, r the last
        division's remainder: the digits of r/q made one bit at a time in limbs."""
        qh, ql = self.c
        rh = self.hi
        rl = self.lo
        while True:
            o = words.advance()
            b = words.block
            i = o + 7
            while i >= o:
                if f >= 8:
                    f -= 8
                    dg = (low >> f) & 0xFF
                else:
                    k = 8 - f
                    dg = 0
                    while k:
                        rl <<= 1
                        rh = (rh << 1) + (rl >> _L)
                        rl &= _M
                        dg <<= 1
                        if rh > qh or (rh == qh and rl >= ql):
                            rl -= ql
                            rh -= qh
                            if rl < 0:
                                rl += _ONE
                                rh -= 1
                            dg |= 1
                        k -= 1
                    if f:
                        dg |= (low & ((1 << f) - 1)) << (8 - f)
                        f = 0
                x = b[i]
                if x != dg:
                    return 1 if x < dg else 0
                i -= 1
            if rh == 0 and rl == 0 and (f == 0 or low & ((1 << f) - 1) == 0):
                return 0
