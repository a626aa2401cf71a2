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

Word consumption is part of the contract and matches host/zeal/mechanism.py bit for bit:
one word for the stochastic rounding (more only after a tie), one for the branch, one for the
uniform (more only after a rejection). Readings are rejected (ReadingError) before any word
is drawn.
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

_WORD_BITS = const(64)
_WORD = const(1 << 64)
_MANT_BITS = const(52)
_F64_EXP_MAX = const(0x7FF)
_F64_BIAS = const(1075)     # 1023 + 52: value = mantissa * 2^(e - 1075)
_F32_EXP_MAX = const(0xFF)
_F32_BIAS = const(150)      # 127 + 23


class ReadingError(ValueError):
    """A reading that cannot be privatised. `reason`: "nan", "inf", "calibration", "type"."""

    def __init__(self, reason, msg=None):
        super().__init__(msg or reason)
        self.reason = reason


# ---- readings as exact rationals (num, den), den > 0 -----------------------------------------
def _dyadic(f, e):
    # f * 2^e as (num, den)
    if e >= 0:
        return f << e, 1
    return f, 1 << -e


def _decode_ieee(bits, width, mant_bits, exp_max, bias):
    # one binary interchange format: sign | biased exponent | fraction
    if type(bits) is not int or bits < 0 or bits >> width:
        raise ReadingError("type", "float%d pattern must be an int in [0, 2^%d)" % (width, width))
    e = (bits >> mant_bits) & exp_max
    f = bits & ((1 << mant_bits) - 1)
    if e == exp_max:
        raise ReadingError("nan" if f else "inf")
    if e:
        f |= 1 << mant_bits
    else:
        e = 1  # subnormal (or zero): same scale as the smallest normal
    if bits >> (width - 1):
        f = -f
    return _dyadic(f, e - bias)


def decode_float64(bits):
    """Exact value of a float64 bit pattern as (num, den); den is a power of two."""
    return _decode_ieee(bits, 64, _MANT_BITS, _F64_EXP_MAX, _F64_BIAS)


def decode_float32(bits):
    """Exact value of a float32 bit pattern as (num, den); den is a power of two."""
    return _decode_ieee(bits, 32, 23, _F32_EXP_MAX, _F32_BIAS)


def float32_bits_from_bytes(buf, offset=0):
    """The bit pattern of a little-endian float32 in `buf` (e.g. struct.pack('<f', x) made by
    a sensor driver) without unpacking it to a float."""
    return (buf[offset] | (buf[offset + 1] << 8) | (buf[offset + 2] << 16)
            | (buf[offset + 3] << 24))


def decode_raw(profile, raw):
    """cal_offset + cal_gain * raw for an integer count, exactly."""
    cal = profile.cal
    if cal is None:
        raise ReadingError("calibration", "raw readings need cal_gain and cal_offset")
    if type(raw) is not int:
        raise ReadingError("type", "raw reading must be an int")
    return cal[0] + cal[1] * raw, cal[2]


# ---- exact random primitives -----------------------------------------------------------------
def bernoulli(num, den, words):
    """1 with probability num/den (0 <= num < den), else 0, exactly (mechanism.md BERNOULLI).

    Compares U = 0.w1 w2 w3 ... (base 2^64) with num/den digit by digit; always reads at
    least one word, even when num == 0. The remainder is only formed after a tie
    (probability 2^-64), which saves divmod's tuple and remainder on every report.
    """
    rem = num
    while True:
        x = rem << _WORD_BITS
        digit = x // den
        w = words()
        if w != digit:
            return 1 if w < digit else 0
        rem = x - digit * den
        if rem == 0:
            return 0


def _uniform(n, d, words):
    # d = 2^64 // n: each u < n has exactly d preimage words
    while True:
        u = words() // d
        if u < n:
            return u


def uniform_below(n, words):
    """Uniform integer in [0, n), 1 <= n <= 2^64, by rejection (mechanism.md UNIFORM)."""
    return _uniform(n, _WORD // n, words)


# ---- the mechanism ---------------------------------------------------------------------------
class Zeal:
    """One profile, one word source. `words` is a zero-argument callable returning u64 words;
    given a zealfw.words.CounterWords, its bound .next is used (a plain method call is
    cheaper than an instance __call__ on MicroPython)."""

    def __init__(self, profile, words):
        self.profile = profile
        self.words = getattr(words, "next", words)
        lon, lod = profile.lo
        hin, hid = profile.hi
        steps = profile.n_cells - profile.n_window
        # pos = (x - lo) * steps / (hi - lo), x = xn/xd:
        #     = (xn*lod - lon*xd) * hid * steps / (xd * (hin*lod - lon*hid))
        self._lon = lon
        self._lod = lod
        self._steps = steps
        self._a = hid * steps
        self._b = hin * lod - lon * hid  # > 0: the profile checked lo < hi
        self._t = profile.threshold
        self._nc = profile.n_window
        self._no = steps
        self._dc = _WORD // profile.n_window
        self._do = _WORD // steps
        self._k_lo = profile.k_lo
        self._high = (profile.exponent + 1023) << _MANT_BITS
        self._mask = (1 << profile.bits) - 1
        self.clamped = 0  # finite readings outside [lo, hi], counted

    def sample(self, xn, xd):
        """One report as the offset j = k - k_lo in [0, N), for the reading xn/xd (xd > 0)."""
        t = xn * self._lod - self._lon * xd
        if t <= 0:  # x <= lo: pos = 0
            if t:
                self.clamped += 1
            base = 0
            rem = 0
            q = 1
        else:
            q = xd * self._b
            base, rem = divmod(t * self._a, q)
            if base >= self._steps:  # pos >= steps <=> x >= hi: pos = steps
                if base > self._steps or rem:
                    self.clamped += 1
                base = self._steps
                rem = 0
        words = self.words
        jl = base + bernoulli(rem, q, words)
        if words() < self._t:
            return jl + _uniform(self._nc, self._dc, words)
        u = _uniform(self._no, self._do, words)
        return u if u < jl else u + self._nc

    def perturb(self, xn, xd):
        """One report as the mantissa integer k (x* = 2^E (1 + k 2^-52))."""
        return self._k_lo + self.sample(xn, xd)

    def perturb_float64(self, bits):
        xn, xd = decode_float64(bits)
        return self._k_lo + self.sample(xn, xd)

    def perturb_float32(self, bits):
        xn, xd = decode_float32(bits)
        return self._k_lo + self.sample(xn, xd)

    def perturb_raw(self, raw):
        xn, xd = decode_raw(self.profile, raw)
        return self._k_lo + self.sample(xn, xd)

    def to_bits(self, k):
        """The report's float64 bit pattern."""
        return self._high | k

    def low(self, k):
        """What travels: the low m bits of k."""
        return k & self._mask
