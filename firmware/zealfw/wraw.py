"""A raw count's calibrated divisor in limbs, on the device: zealfw.mechanism.Zeal.raw_pos
and the Bernoulli of its fraction for a divisor Q from 2^29 on, small ints on a 32-bit board
(see zealfw.wide for the two-limb position divisor). Imported by zealfw.mech_setup only for a
calibrated profile that needs it.
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

_L = const(28)
_M = const((1 << 28) - 1)
_ONE = const(1 << 28)


class WideRaw:
    """Zeal.raw_pos for a Q from 2^29 on (its docstring has the argument), the remainders in
    limbs: the same floor t, the same remainder r, then bernoulli_frac of r/Q, the digits
    made one bit at a time (r = 2 r; the bit is r >= Q, then r -= Q).

    A raw count's position pos = (A + B raw) / Q has Q = cd b, the calibration's denominator
    times the bounds' numerator: 61 bits for an ADC at 11/13650 volts a count on [0, 3.3].
    Its remainder is held in K little-endian 28-bit limbs (a list made at start, written in
    place), K chosen so that 3 Q < 2^(28 K): every limb of 2 r + x (r, x < Q) stays below
    2^29 before its carry. Few names (each is interned for good): one helper, `add`."""

    def __init__(self, q, a, b, d):
        # Q, A mod Q, B mod Q, -B mod Q (parameter names are interned: one-letter ones,
        # which the firmware has anyway)
        k = 1
        while (3 * q) >> (_L * k):
            k += 1
        c = []
        for x in (q, a, b, d):
            limbs = [0] * k
            for i in range(k):
                limbs[i] = x & _M
                x >>= _L
            c.append(limbs)
        self.c = tuple(c)  # the limbs of Q, A mod Q, B mod Q and -B mod Q
        self.hi = [0] * k  # the remainder's limbs

    def add(self, d, x):
        """r = 2^d r + x (d 0 or 1; x a limb list or None), then r -= Q if r >= Q: 1 if it
        was, else 0 (r < Q and x < Q before: one subtraction is enough)."""
        r = self.hi
        q = self.c[0]
        n = len(r)
        c = 0
        for i in range(n):
            v = (r[i] << d) + c
            if x is not None:
                v += x[i]
            c = v >> _L
            r[i] = v & _M
        i = n - 1
        while i >= 0 and r[i] == q[i]:
            i -= 1
        if i >= 0 and r[i] < q[i]:
            return 0  # r < Q
        b = 0
        for i in range(n):
            v = r[i] - q[i] - b
            b = 0
            if v < 0:
                v += _ONE
                b = 1
            r[i] = v
        return 1

    def raw_pos(self, p, raw, ai, bi, ni, k):
        steps = k  # the sampler's steps (short parameter names: interned for good)
        _, af, bf, nf = self.c
        if raw >= 0:
            m = raw
        else:
            m = -raw
            bi = ni
            bf = nf
        r = self.hi
        for i in range(len(r)):
            r[i] = 0
        t = 0
        at = 0
        while m >> at:
            at += 1
        while at:
            at -= 1
            t = (t << 1) + self.add(1, None)
            if (m >> at) & 1:
                t += self.add(0, bf)
        t += self.add(0, af)
        zero = True
        for i in range(len(r)):  # (an index loop: iterating a list makes an iterator)
            if r[i]:
                zero = False
        base = ai + bi * m + t
        if base < 0 or (base == 0 and zero):  # x <= lo: pos = 0
            if base < 0:
                p.clamped += 1
            return p.finish(0, 0, 0, 0, 1)
        if base >= steps:  # x >= hi: pos = steps
            if base > steps or not zero:
                p.clamped += 1
            return p.finish(steps, 0, 0, 0, 1)
        return p.finish(base, 0, 0, 0, self)

    def bernoulli_frac(self, low, f, words):
        # low = 0, f = 0 here: a raw count's fraction is r/Q alone
        r = self.hi
        while True:
            o = words.advance()
            b = words.block
            i = o + 7
            while i >= o:
                dg = 0
                k = 8
                while k:
                    dg = (dg << 1) | self.add(1, None)
                    k -= 1
                x = b[i]
                if x != dg:
                    return 1 if x < dg else 0
                i -= 1
            k = len(r) - 1
            while k >= 0 and not r[k]:
                k -= 1
            if k < 0:  # r = 0: the expansion has ended, U >= F
                return 0
