"""The per-profile set-up of zealfw.mechanism.Zeal (callable word sources are adapted by
zealfw.callwords, imported only for them): run once, at construction, and freed by zealfw.build after. Integers only, like
mechanism.py (the AST float ban covers this module too).
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

import struct

_MANT_BITS = const(52)


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a



def init_zeal(self, profile, words, Uniform, _bits_of, _log2):
    """Zeal.__init__ (see zealfw.mechanism.Zeal): the per-profile constants. The sampling
    helpers come from zealfw.mechanism, the caller: this set-up module imports nothing of
    the sampling path, which imports it."""
    if not hasattr(words, "advance"):  # a callable (zealfw.callwords, imported only then)
        from .callwords import CallWords

        words = CallWords(getattr(words, "next", words))
    self.words = words
    lon, lod = profile.lo
    hin, hid = profile.hi
    steps = profile.n_cells - profile.n_window
    # pos = (x - lo) * steps / (hi - lo), x = xn/xd:
    #     = (xn*lod - lon*xd) * hid * steps / (xd * (hin*lod - lon*hid))
    self._steps = steps
    b = hin * lod - lon * hid  # > 0: the profile checked lo < hi
    # steps / (hi - lo) = steps * (hid * lod) / b  ->  Kn 2^e / Kd
    e = _log2(hid * lod)   # both powers of two (decoded float64s)
    dn = b
    while not dn & 1:
        dn >>= 1
        e -= 1
    kn = steps
    while not kn & 1:
        kn >>= 1
        e += 1
    g = _gcd(kn, dn)
    kn //= g
    kd = dn // g
    self._lo = (lon, _log2(lod), lod)  # lo = lon / lod = lon 2^-la
    # bits brought down per long-division step, keeping r 2^s + g Kn below 2^30: a small
    # int on a 32-bit board too (31-bit small ints); r < Kd, g < 2^s. A Kd from 2^29 on
    # (bounds that are not short dyadic numbers, e.g. hi = 83.9) is a heap int on 32 bits
    # anyway: then as many bits a step as 64-bit small ints allow, for the fewest steps.
    top = 61 if kd >> 29 else 29
    s1 = top - _bits_of(kd if kd > kn else kn)
    s0 = top + 1 - _bits_of(kd)
    # Constants read together are kept together, as tuples (_lo, _div, _fin, _raw): an
    # instance's attributes live in a hash table that grows one step per attribute, each
    # step a new block while the old one is alive, and this is made at the start's fullest
    # heap. With at most 12 attributes the table stays at 192 bytes (at 13 it takes a
    # 272-byte block, at 18 a 368-byte one). Unpacking a tuple allocates nothing.
    # a Kd from 2^29 to 2^56 with Kn < 2^28: the division in 28-bit limbs (zealfw.wide)
    wide = None
    if kd >> 29 and not kd >> 56 and not kn >> 28:
        from .wide import Wide

        wide = Wide(kd)
    self._div = (kn, kd, e, s1 if s1 > 0 else 1, s0 if s0 > 0 else 1, wide)
    # finish's: T as 8 little-endian bytes, UNIFORM(Nc), UNIFORM(N - Nc), Nc
    self._fin = (struct.pack("<Q", profile.threshold), Uniform(profile.n_window),
                 Uniform(steps), profile.n_window)
    self._k_lo = profile.k_lo
    self._high = (profile.exponent + 1023) << _MANT_BITS
    self._mask = (1 << profile.bits) - 1
    self._cal = cal = profile.cal
    if cal is not None:
        # raw counts (see raw_pos): pos = (A + B raw) / Q, reduced, with
        # A = (c0 lod - lon cd) steps hid, B = c1 lod steps hid, Q = cd b; then
        # A = ai Q + af and +-B = bi Q + bf (0 <= af, bf < Q) for raw >= 0 / raw < 0, as
        # _raw = (Q, ai, af, bi, bf for raw >= 0, bi, bf for raw < 0, the limbs: None, True
        # or their zealfw.wraw.WideRaw)
        c0, c1, cd = cal
        ra = (c0 * lod - lon * cd) * steps * hid
        rb = c1 * lod * steps * hid
        q = cd * b
        g = _gcd(_gcd(ra if ra >= 0 else -ra, rb if rb >= 0 else -rb), q)
        ra //= g
        rb //= g
        q //= g
        # a Q from 2^29 on: the remainders in 28-bit limbs (zealfw.wraw), made at the first
        # raw count (True until then: a board whose readings are floats never holds them)
        self._raw = (q, ra // q, ra % q, rb // q, rb % q, (-rb) // q, (-rb) % q,
                     True if q >> 29 else None)
    self.clamped = 0  # finite readings outside [lo, hi], counted

