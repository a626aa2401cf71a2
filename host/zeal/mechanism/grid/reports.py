"""Reports on the wire and in files: the mantissa integer k and its three spellings.

    bits  - the 64-bit pattern of x* = 2^E (1 + k 2^-52), 16 hex digits
    low   - k mod 2^m, the m bits a device transmits
    float - the double x* itself
Decoding checks that a report belongs to the profile's grid: anything else is a
ReportError, never a silently wrong sample.
"""
from fractions import Fraction

import numpy as np

from ...errors import ReportError
from ..core.floatbits import bits_to_float64, float64_to_bits
from .profile import MANTISSA_BITS, Profile

_MANT_MASK = (1 << MANTISSA_BITS) - 1


def to_bits(profile: Profile, k: int) -> int:
    return ((profile.exponent + 1023) << MANTISSA_BITS) | k


def to_low(profile: Profile, k: int) -> int:
    return k & ((1 << profile.bits) - 1)


def to_value(profile: Profile, k: int) -> Fraction:
    return Fraction(2) ** profile.exponent * (1 + Fraction(k, 1 << MANTISSA_BITS))


def _check_k(profile: Profile, k: int, what) -> int:
    if not profile.k_lo <= k <= profile.k_hi:
        raise ReportError("%s is outside the profile's grid (offset %d of %d cells)"
                          % (what, k - profile.k_lo, profile.n_cells))
    return k


def from_bits(profile: Profile, bits: int) -> int:
    if bits >> MANTISSA_BITS != profile.exponent + 1023:
        raise ReportError("report 0x%016x has sign/exponent of another profile" % bits)
    return _check_k(profile, bits & _MANT_MASK, "report 0x%016x" % bits)


def from_low(profile: Profile, low: int) -> int:
    if not 0 <= low < 1 << profile.bits:
        raise ReportError("low bits %d do not fit in %d bits" % (low, profile.bits))
    return _check_k(profile, profile.wire_base + low, "low bits %d" % low)


def from_float(profile: Profile, value: float) -> int:
    return from_bits(profile, float64_to_bits(value))


def parse_line(profile: Profile, text: str) -> int:
    """One line of `zeal perturb` output in any of its three forms -> k."""
    t = text.strip()
    try:
        if len(t) == 16 and all(c in "0123456789abcdefABCDEF" for c in t):
            try:
                return from_bits(profile, int(t, 16))
            except ReportError:
                if not t.isdigit():  # at m >= 50 a low value can have 16 decimal digits
                    raise
        if t.isdigit():
            return from_low(profile, int(t))
        return from_float(profile, float(t))
    except ValueError:
        raise ReportError("not a report: %r" % t[:40]) from None


def offsets_from_low(profile: Profile, low: np.ndarray) -> np.ndarray:
    """Vectorised: transmitted m-bit values -> offsets j = k - k_lo (int64)."""
    j = np.asarray(low, dtype=np.int64) + (profile.wire_base - profile.k_lo)
    bad = (j < 0) | (j >= profile.n_cells)
    if bad.any():
        raise ReportError("%d report(s) outside the profile's grid" % int(bad.sum()))
    return j


def floats_from_offsets(profile: Profile, j: np.ndarray) -> np.ndarray:
    """Offsets -> the float64 reports x*, bit-exact (built from bit patterns, no arithmetic)."""
    j = np.asarray(j)
    # offsets are never negative: their int64 bits are their uint64 value (a view, no copy)
    j = j.view(np.uint64) if j.dtype == np.int64 else j.astype(np.uint64)
    bits = np.uint64(to_bits(profile, profile.k_lo)) + j
    return bits.view(np.float64)


def value_of_bits(bits: int) -> float:
    return bits_to_float64(bits)
