"""Exact Zeal on the binade grid, device side: integers only (shared_spec/mechanism.md §3).

The device's floats are 32-bit, so no reading is ever held as a Python float on its way to
the output: a reading enters as a float64 or float32 *bit pattern* (an int), as the bytes a
driver produced with struct.pack('<f', x), or as a raw integer count with the profile's exact
rational calibration, and is decoded to an exact rational num/den. Everything after that is
integer arithmetic (`//`, `divmod`, shifts); tests/test_firmware_static.py fails the build on
any float constant, true division, float(), math import or float struct format here.

API: `Zeal(profile, words)` with `perturb_float32(bits)`, `perturb_float64(bits)`,
`perturb_raw(count)` or `perturb(num, den)` -> k; `to_bits(k)` (the float64 pattern) and
`low(k)` (the m bits that travel). A driver that only offers a float may hand over
`struct.pack('<f', x)` and the firmware reads the pattern with `float32_bits_from_bytes`:
packing a float32 into 4 bytes is exact, and from there on no float exists. (Never route a
reading through a Python float on a 32-bit-float board and then ask for float64: the value
would already have lost its low bits.)

Word consumption is part of the contract and matches host/zeal/mechanism/grid/scalar.py bit for bit:
one word for the stochastic rounding (more only after a tie), one for the branch, one for the
uniform (more only after a rejection). Readings are rejected (ReadingError) before any word
is drawn.

Heap: the sampling path allocates (almost) nothing; nor does the generator where its SHA-256
runs as native code (zealfw.sha256_viper; with hashlib, a hash object and digest per four
words: 224 bytes on the 64-bit unix port, 192 on a 32-bit board). A word is
never made into an int: it is read in place from the digest (`CounterWords.advance()` /
`.block`), byte by byte for comparisons and for the uniform draw. Every value on the path
stays below 2^30, a small int on a 32-bit board too (31-bit small ints): a float32 reading
arrives as two 16-bit halves (`perturb_f32`), the position's long division brings down at
most as many bits a step as keep r 2^s + g Kn below 2^30, and a divisor from 2^29 on (bounds
that are not short dyadic numbers, like 83.9; a raw count's calibration) is worked in 28-bit
limbs by zealfw.wide and zealfw.wraw, loaded only for such profiles. What still makes heap
ints on 32 bits: float64 readings (a 53-bit mantissa; a test's replay, not a sensor's),
windows of 2^22 cells or more (m from about 23), divisors from 2^56 on. Each shortcut's
exactness argument is in the docstring of the function that takes it.
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

import struct

_WORD_BITS = const(64)
_WORD = const(1 << 64)
_MANT_BITS = const(52)
_F64_EXP_MAX = const(0x7FF)
_F64_BIAS = const(1075)     # 1023 + 52: value = mantissa * 2^(e - 1075)
_F32_EXP_MAX = const(0xFF)
_F32_BIAS = const(150)      # 127 + 23
_M32 = const(0xFFFFFFFF)
_CHUNK = const(8)           # long division: bits brought down per step (with divisor < 2^22)
_BIG_Q = const(22)          # from 2^22 on, bernoulli_frac divides one bit at a time
_BYTE_N = const(1 << 22)    # Uniform's byte path: every value below 256 n <= 2^30
_RAW_Q = const(61)          # a raw count's divisor below 2^61: small ints only (raw_pos)


class ReadingError(ValueError):
    """A reading that cannot be privatised. `reason`: "nan", "inf", "calibration", "type"."""

    def __init__(self, reason, msg=None):
        super().__init__(msg or reason)
        self.reason = reason


def below(b, o, c):
    """[word at b[o:o+8] < the constant whose 8 little-endian bytes are c].

    Exact: two 64-bit numbers compare as their base-256 digit strings do, most significant
    digit first (the first differing digit decides; all equal means equal, not below).
    Reads one byte of each with probability 255/256 for a uniform word.
    """
    i = o + 7
    j = 7
    while j >= 0:
        x = b[i]
        y = c[j]
        if x != y:
            return x < y
        i -= 1
        j -= 1
    return False


class Uniform:
    """UNIFORM(n) of mechanism.md on a word cursor: u = w // d, d = 2^64 // n, accepted when
    u < n; the same u and the same words as `uniform_below`, with no 64-bit integer formed.

    n < 2^22 (every window of a grid profile up to 22 bits, a table row of small weights),
    on a 32-bit board too, whose small ints have 31 bits: accept iff w < n d (u =
    floor(w/d) < n <=> w < n d), compared byte by byte with n d's bytes (`below`). Then
    v = floor(w n / 2^64) is carried up w's bytes, least significant first (c = (c + b_i n)
    >> 8; every value below 256 n <= 2^30); the bytes shifted out are those of L = w n mod
    2^64. u is v or v + 1 (w/d >= w n / 2^64 as n d <= 2^64, and w/d - w n/2^64 =
    w (2^64 - n d)/(d 2^64) < n^2/2^64 < 1 for the accepted w < n d), and with rho = 2^64 -
    n d < n, d = (2^64 - rho)/n: u = v + 1 <=> (v + 1) d <= w <=> (v + 1)(2^64 - rho) <=
    v 2^64 + L <=> 2^64 - L <= (v + 1) rho. As (v + 1) rho <= n (n - 1) < 2^44, that needs
    L > 2^64 - 2^44, so L's top two bytes 0xFF: unless both are (probability about 2^-16),
    u = v; if both are, u = w // d is computed whole (heap ints, rarely).

    n >= 2^22 (a grid of 23 bits or more, whose report is near a heap int on 32 bits anyway;
    a table's rows use zealfw.tsample's limbs): w // d by long division of three digits
    of w (small ints on 64 bits).
    """

    def __init__(self, n):
        # the constants draw reads, one tuple (a table profile swaps a row's in with one
        # assignment): (n, lim), lim the 8 little-endian bytes of n d (None when n d = 2^64:
        # every word is accepted); from 2^22 on also d
        d = _WORD // n
        lim = n * d  # <= 2^64
        b = None if lim == _WORD else struct.pack("<Q", lim)
        if n < _BYTE_N:
            self.c = (n, b)
        else:
            self.c = (n, b, d)

    def draw(self, words):
        k = self.c
        n = k[0]
        lim = k[1]
        if n >= _BYTE_N:
            d = k[2]
            while True:
                o = words.advance()
                b = words.block
                if lim is not None and not below(b, o, lim):
                    continue  # w >= n d: rejected
                # schoolbook long division of w's digits wh, wl >> 16, wl & 0xFFFF by d
                # (d <= 2^42): every partial remainder is < d, so each dividend r 2^16 +
                # digit is < 2^58 and each quotient digit after the first < 2^16 (small ints
                # on 64 bits, heap ints on 32); u = floor(w / d) exactly
                wh = b[o + 4] | (b[o + 5] << 8) | (b[o + 6] << 16) | (b[o + 7] << 24)
                wl = b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)
                q = wh // d
                t = ((wh - q * d) << 16) | (wl >> 16)
                q2 = t // d
                t = ((t - q2 * d) << 16) | (wl & 0xFFFF)
                return (((q << 16) | q2) << 16) | (t // d)
        while True:
            o = words.advance()
            b = words.block
            if lim is not None and not below(b, o, lim):
                continue  # w >= n d: rejected
            c = 0
            i = o
            e = o + 6
            while i < e:
                c = (c + b[i] * n) >> 8
                i += 1
            c += b[i] * n
            t = c & 0xFF       # byte 6 of L
            c = (c >> 8) + b[i + 1] * n
            if t == 0xFF and c & 0xFF == 0xFF:
                return struct.unpack_from("<Q", b, o)[0] // (_WORD // n)
            return c >> 8


def bernoulli_frac(r, low, f, q, words):
    """BERNOULLI for the fraction F = (low + r/q) / 2^f (0 <= r < q, 0 <= low < 2^f): 1
    exactly when U = 0.w1 w2 ... (base 2^64) is below F; the same words as `bernoulli`
    reads for the same fraction.

    F's binary expansion is low's f bits, then the expansion of r/q (r/q < 1, so adding
    it below low's last bit carries nothing). Its base-256 digits are therefore the next 8
    bits of low while 8 remain; then low's last bits topped up with the leading bits of
    r/q; then r/q's digits by long division (r = r 2^8, digit = r // q, r -= digit q).
    Eight base-256 digits make one base-2^64 digit (both are floor(F b^i) mod b), so
    comparing each word's bytes, most significant first, with these digits decides U < F at
    the first difference exactly as `bernoulli` does at the word; a tie on all eight reads
    the next word, unless nothing is left (r and the unused bits of low are 0): then F's
    expansion has ended and U >= F (`bernoulli`'s rem == 0). With q < 2^22 every r 2^8
    stays below 2^30 (a small int on a 32-bit board, whose small ints have 31 bits). With
    2^22 <= q < 2^29 the digits of r/q are made one bit at a time (r = 2 r; the bit is
    r >= q, then r -= q): the same long division in base 2, whose 8 bits are the base-256
    digit; every value stays below 2 q < 2^30. From 2^29 on q is a heap int on 32 bits
    anyway: 8 bits a step again while r 2^8 < 2^62 (q < 2^54, small on 64 bits), one bit a
    step beyond (values below 2 q, small on 64 bits while q < 2^61).
    """
    if type(q) is not int:  # a zealfw.wide.Wide divisor, which holds the remainder
        return q.bernoulli_frac(low, f, words)
    big = (q >> _BIG_Q and not q >> 29) or q >> 54
    while True:
        o = words.advance()
        b = words.block
        i = o + 7
        while i >= o:
            if f >= _CHUNK:
                f -= _CHUNK
                dg = (low >> f) & 0xFF
            else:
                n = _CHUNK - f       # bits of r/q in this digit
                if big:
                    dg = 0
                    while n:
                        r <<= 1
                        dg <<= 1
                        if r >= q:
                            r -= q
                            dg |= 1
                        n -= 1
                else:
                    r <<= n
                    dg = r // q
                    r -= dg * q
                if f:
                    dg |= (low & ((1 << f) - 1)) << (_CHUNK - f)
                    f = 0
            x = b[i]
            if x != dg:
                return 1 if x < dg else 0
            i -= 1
        if r == 0 and (f == 0 or low & ((1 << f) - 1) == 0):
            return 0


def _bits_of(n):
    # bit length (int.bit_length is missing on the unix port)
    m = 0
    while n >> m:
        m += 1
    return m


def _log2(d):
    # e with d == 2^e, or -1 when d is not a power of two
    if d <= 0 or d & (d - 1):
        return -1
    return _bits_of(d) - 1


# ---- the mechanism ---------------------------------------------------------------------------
class Zeal:
    """One profile, one word source: a zealfw.words.CounterWords (its cursor is read in
    place) or any zero-argument callable returning u64 words (a bound .next, a list's
    reader), adapted by _CallWords.

    The position pos = (x - lo) (N - Nc) / (hi - lo) is rewritten once per profile as
    pos = (x - lo) Kn 2^e / Kd with Kn, Kd odd and coprime (steps / (hi - lo) reduced, its
    powers of two collected in e): for a dyadic reading x = f 2^ex, x - lo = Y 2^m0 with
    integer Y, and pos = Y Kn 2^c / Kd, c = m0 + e: a long division of the integer Y Kn by
    Kd, bringing down c zero bits (c >= 0) or splitting off the last -c bits of Y Kn as the
    start of the fraction (c < 0). Floor and fraction are exactly those of P // Q and
    P mod Q in mechanism.md (the same rational), so stochastic rounding reads the same
    words and returns the same bit.
    """

    reports = 1  # wire reports a sampling tick (zealfw.main's loop; srand.Zeal: t)

    def __init__(self, profile, words):
        # the per-profile constants above are made by zealfw.mech_setup.init_zeal: set-up code,
        # not needed while sampling (zealfw.build frees that module)
        from .mech_setup import init_zeal

        init_zeal(self, profile, words, Uniform, _bits_of, _log2)

    def finish(self, base, r, low, f, q):
        """The report from the position's floor `base` and fraction (low + r/q) / 2^f."""
        words = self.words
        jl = base + bernoulli_frac(r, low, f, q, words)
        o = words.advance()
        tb, win, out, nc = self._fin
        if below(words.block, o, tb):   # next() < T: the window
            return jl + win.draw(words)
        u = out.draw(words)
        return u if u < jl else u + nc

    def divide(self, y, n, q, c, s1, s0):
        """The report for pos = y n 2^c / q (y, n, q > 0), clamped at steps.

        Long division of y n by q over y's binary digits: with V the value of y's digits
        brought down so far, B = floor(V n / q) and r = V n - B q; bringing down s more
        bits g gives V' = V 2^s + g, V' n = (B q + r) 2^s + g n, so B' = B 2^s +
        (r 2^s + g n) // q and r' = (r 2^s + g n) mod q, exactly, for any grouping of the
        digits (s1 per step, chosen per profile so that r 2^s1 + g n < 2^62). Then
        y n / q = B + r/q. For c >= 0, c zero bits are brought down the same way (g = 0,
        s0 at a time): pos = B + r/q, and B only grows, so once it exceeds steps with bits
        left, pos > steps. For c < 0, pos = (B + r/q) / 2^-c: floor B >> -c, fraction
        (B's low -c bits + r/q) / 2^-c, which bernoulli_frac reads.
        """
        base = 0
        r = 0
        at = 0
        while y >> at:
            at += s1
        mask = (1 << s1) - 1
        while at > 0:
            at -= s1
            r = (r << s1) + ((y >> at) & mask) * n
            dq = r // q
            r -= dq * q
            base = (base << s1) + dq
        steps = self._steps
        low = 0
        f = 0
        if c < 0:
            f = -c
            top = base >> f
            low = base - (top << f)
            base = top
        while c > 0 and base <= steps:
            s = s0 if c > s0 else c
            r <<= s
            dq = r // q
            r -= dq * q
            base = (base << s) + dq
            c -= s
        if c > 0:  # stopped early: pos >= 2 base > steps
            base = steps + 1
        if base >= steps:  # x >= hi: pos = steps
            if base > steps or r or low:
                self.clamped += 1
            return self.finish(steps, 0, 0, 0, 1)
        return self.finish(base, r, low, f, q)

    def _dyadic(self, f, e):
        # reading f 2^e; lo = lon 2^-la: x - lo = y 2^m0
        lon, la, _ = self._lo
        la = -la
        m0 = e if e < la else la
        y = (f << (e - m0)) - (lon << (la - m0))
        if y <= 0:  # x <= lo: pos = 0
            if y:
                self.clamped += 1
            return self.finish(0, 0, 0, 0, 1)
        kn, kd, ke, s1, s0, wide = self._div  # pos = (x - lo) Kn 2^ke / Kd
        if wide is not None:  # Kd in limbs (zealfw.wide): small ints on 32 bits
            return wide.divide(self, y, kn, m0 + ke, self._steps)
        return self.divide(y, kn, kd, m0 + ke, s1, s0)

    def sample(self, n, d):
        """One report as the offset j = k - k_lo in [0, N), for the reading n/d (d > 0)."""
        ld = _log2(d)
        if ld >= 0:
            return self._dyadic(n, -ld)
        # any other denominator (a raw count's calibration): divide by d lod Kd
        lon, _, lod = self._lo
        y = n * lod - lon * d
        if y <= 0:
            if y:
                self.clamped += 1
            return self.finish(0, 0, 0, 0, 1)
        # (a divisor this large is a heap int anyway: one step each, fewest operations)
        kn, kd, ke, _, _, _ = self._div
        return self.divide(y, kn, d * lod * kd, ke, 64, 64)

    def perturb(self, n, d):
        """One report as the mantissa integer k (x* = 2^E (1 + k 2^-52))."""
        return self._k_lo + self.sample(n, d)

    def perturb_float64(self, bits):
        """One report for a float64 bit pattern (an int below 2^64)."""
        if type(bits) is not int or bits < 0 or bits >= _WORD:
            raise ReadingError("type", "float64 pattern must be an int in [0, 2^64)")
        return self.perturb_f64(bits >> 32, bits & _M32)

    def perturb_f64(self, hi, lo):
        """One report for the float64 whose bit pattern is hi 2^32 + lo (two u32 halves, as
        the replay source parses them): sign and exponent are in hi alone, the 52-bit
        fraction is (hi's low 20 bits) 2^32 + lo, so the pattern itself (a heap int above
        2^62 on the unix port) is never formed. Exactly perturb_float64 of hi 2^32 + lo."""
        if (type(hi) is not int or type(lo) is not int or hi < 0 or lo < 0 or hi > _M32
                or lo > _M32):
            raise ReadingError("type", "float64 halves must be ints in [0, 2^32)")
        # sign and exponent: (hi 2^32 + lo) >> 52; the fraction
        return self.decode(hi >> 20, ((hi & 0xFFFFF) << 32) | lo, _F64_EXP_MAX, _MANT_BITS,
                           _F64_BIAS)

    def perturb_float32(self, bits):
        """One report for a float32 bit pattern (an int below 2^32)."""
        if type(bits) is not int or bits < 0 or bits > _M32:
            raise ReadingError("type", "float32 pattern must be an int in [0, 2^32)")
        return self.perturb_f32(bits >> 16, bits & 0xFFFF)

    def perturb_f32(self, hi, lo):
        """One report for the float32 whose bit pattern is hi 2^16 + lo (two 16-bit halves,
        as the sources hand them over: a pattern from 2^30 on, every reading of magnitude
        2 or more, would be a heap int on a 32-bit board): sign | 8-bit biased exponent |
        23-bit fraction, decoded to f 2^(e - 150) with small ints only. Exactly
        perturb_float32 of hi 2^16 + lo."""
        if (type(hi) is not int or type(lo) is not int or hi < 0 or lo < 0 or hi > 0xFFFF
                or lo > 0xFFFF):
            raise ReadingError("type", "float32 halves must be ints in [0, 2^16)")
        # sign and exponent: (hi 2^16 + lo) >> 23; the fraction
        return self.decode(hi >> 7, ((hi & 0x7F) << 16) | lo, _F32_EXP_MAX, 23, _F32_BIAS)

    def decode(self, t, f, m, k, d):
        """One report for the IEEE-754 pattern of sign and biased exponent t (the sign bit
        above the exponent's m), fraction f of k bits, exponent bias d: f 2^(e - d) with the
        implicit bit, small ints only. (Short parameter names: each is interned for good.)"""
        e = t & m
        if e == m:
            raise ReadingError("nan" if f else "inf")
        if e:
            f |= 1 << k
        else:
            e = 1                # subnormal (or zero): the scale of the smallest normal
        if t > m:                # the sign bit
            f = -f
        return self._k_lo + self._dyadic(f, e - d)

    def perturb_raw(self, raw):
        """One report for a raw count: the reading cal_offset + cal_gain raw, exactly."""
        if self._cal is None:
            raise ReadingError("calibration", "raw readings need cal_gain and cal_offset")
        if type(raw) is not int:
            raise ReadingError("type", "raw reading must be an int")
        return self._k_lo + self.raw_pos(raw)

    def raw_pos(self, raw):
        """The report offset for a raw count, from the per-profile reduced constants.

        pos = (x - lo) steps / (hi - lo) with x = (c0 + c1 raw) / cd is, over the common
        denominator, pos = (A + B raw) / Q with the integers of __init__ (divided by their
        common gcd: the same rational). With m = |raw| and B' = B (raw >= 0) or -B (raw < 0),
        A = ai Q + af, B' = bi Q + bf (floor division, 0 <= af, bf < Q):
            pos = ai + bi m + (af + bf m) / Q.
        bf m = t Q + r is found by long division over m's bits, one at a time: with the bits
        so far worth V, t = floor(V bf / Q) and r = V bf - t Q < Q; bringing down a bit g
        doubles V: r = 2 r (and t = 2 t), subtract Q once if r >= Q (2 r < 2 Q); then add
        g bf (< Q), subtract Q once if needed. r + af < 2 Q likewise. So
        floor(pos) = ai + bi m + t + [r + af >= Q] and frac(pos) = ((r + af) mod Q) / Q,
        exactly those of P // Q and P mod Q in mechanism.md (the same rational). Every
        value stays below 2 Q: with Q < 2^61 (_RAW_Q) no heap int is made for counts whose
        ai + bi m fits (a clamped count far outside the range may allocate); a larger Q
        gives the same numbers with heap ints. Clamping and the Bernoulli on the fraction
        are those of divide and _dyadic for the same position.
        """
        q, ai, af, bi, bf, ni, nf, wide = self._raw
        if wide is not None:  # Q in limbs (zealfw.wraw): small ints on 32 bits
            if wide is True:  # the first raw count: make them (once)
                from .wraw import WideRaw

                wide = WideRaw(q, af, bf, nf)
                self._raw = (q, ai, af, bi, bf, ni, nf, wide)
            return wide.raw_pos(self, raw, ai, bi, ni, self._steps)
        if raw >= 0:
            m = raw
        else:
            m = -raw
            bi = ni
            bf = nf
        t = 0
        r = 0
        at = 0
        while m >> at:
            at += 1
        while at:
            at -= 1
            r <<= 1
            t <<= 1
            if r >= q:
                r -= q
                t += 1
            if (m >> at) & 1:
                r += bf
                if r >= q:
                    r -= q
                    t += 1
        r += af
        if r >= q:
            r -= q
            t += 1
        base = ai + bi * m + t
        if base < 0 or (base == 0 and r == 0):  # x <= lo: pos = 0
            if base < 0:
                self.clamped += 1
            return self.finish(0, 0, 0, 0, 1)
        steps = self._steps
        if base >= steps:  # x >= hi: pos = steps
            if base > steps or r:
                self.clamped += 1
            return self.finish(steps, 0, 0, 0, 1)
        return self.finish(base, r, 0, 0, q)

    def to_bits(self, k):
        """The report's float64 bit pattern."""
        return self._high | k

    def low(self, k):
        """What travels: the low m bits of k."""
        return k & self._mask
