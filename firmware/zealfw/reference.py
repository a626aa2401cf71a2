"""Readings decoded to exact rationals, the reference forms of the random primitives (on a
callable word source) and the wire protocol's named constants, device side: used by the
conformance runner and tests, never by the sampling loop or the start (every global name a
loaded module defines is interned, and kept, for good): they import it. Integers only (the
AST float ban covers this module too).
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

from .mechanism import ReadingError

# ---- wire protocol 2 (shared_spec/wire_format.md), as zealfw.wire/wire_setup inline them ----
FLAG_VECTOR = const(0x10)
FLAG_DEBUG = const(0x20)
MAX_BODY = const(1662)  # DATA header (4) + ceil(255 reports * 52 bits / 8)
FIRMWARE = (0, 1, 0)
STATUS_OK = const(0)
STATUS_NO_PROFILE = const(1)
STATUS_BAD_PROFILE = const(2)
STATUS_SENSOR = const(3)   # debug build only
STATUS_STOPPED = const(4)
STATUS_CONFIG = const(5)
STATUS_CRASH = const(6)
STATUS_HELD = const(7)

_WORD_BITS = const(64)
_WORD = const(1 << 64)
_MANT_BITS = const(52)
_F64_EXP_MAX = const(0x7FF)
_F64_BIAS = const(1075)     # 1023 + 52: value = mantissa * 2^(e - 1075)
_F32_EXP_MAX = const(0xFF)
_F32_BIAS = const(150)      # 127 + 23


def _dyadic(f, e):
    # f * 2^e as (num, den)
    if e >= 0:
        return f << e, 1
    return f, 1 << -e


def _ieee_parts(bits, width, mant_bits, exp_max, bias):
    # one binary interchange format: sign | biased exponent | fraction -> (f, e), value f*2^e
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
    return f, e - bias


def _decode_ieee(bits, width, mant_bits, exp_max, bias):
    f, e = _ieee_parts(bits, width, mant_bits, exp_max, bias)
    return _dyadic(f, e)


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


# ---- exact random primitives (reference forms, on a callable word source) ----------------------
def bernoulli(num, den, words):
    """1 with probability num/den (0 <= num < den), else 0, exactly (mechanism.md BERNOULLI).

    Compares U = 0.w1 w2 w3 ... (base 2^64) with num/den digit by digit; always reads at
    least one word, even when num == 0. A tie on a word (probability 2^-64) reads the next
    one, so the result is 1 exactly when U < num/den, whose probability is num/den. Zeal
    uses `bernoulli_frac`, the same comparison in base 2^8.
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


def uniform_below(n, words):
    """Uniform integer in [0, n), 1 <= n <= 2^64, by rejection (mechanism.md UNIFORM).

    d = 2^64 // n; a word w gives u = w // d, accepted when u < n: each u < n has exactly d
    preimage words, so the accepted u is exactly uniform. Zeal uses `Uniform`, which
    computes the same u from the word's halves.
    """
    d = _WORD // n
    while True:
        u = words() // d
        if u < n:
            return u
