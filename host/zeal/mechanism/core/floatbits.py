"""Exact conversions between IEEE-754 bit patterns, Python floats and Fractions.

The mechanism never rounds a reading: every input becomes an exact rational.
"""
import math
import struct
from fractions import Fraction

from ...errors import InputError, ProfileError


def float64_to_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def bits_to_float64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def bits_to_float32(bits: int) -> float:
    # float32 -> float64 widening is exact, so the Fraction below is exact too.
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def hex64(bits: int) -> str:
    return "0x%016x" % bits


def parse_hex64(text: str) -> int:
    if not isinstance(text, str) or not text.startswith("0x") or len(text) != 18:
        raise ValueError("expected a 64-bit pattern as '0x' and 16 hex digits, got %r" % (text,))
    return int(text[2:], 16)


def exact(value: float) -> Fraction:
    """The exact rational value of a finite float; InputError for NaN and infinities."""
    if math.isnan(value):
        raise InputError("reading is NaN")
    if math.isinf(value):
        raise InputError("reading is infinite")
    return Fraction(value)


def as_fraction(value, what: str, error=ProfileError) -> Fraction:
    """A parameter as an exact rational: an int, a Fraction, a finite float (its exact value)
    or a string holding a decimal or p/q; `error` (one line naming `what`) for anything else,
    booleans included."""
    if isinstance(value, bool):
        raise error("%s must be a number, got %r" % (what, value))
    if isinstance(value, float) and not math.isfinite(value):
        raise error("%s must be finite, got %r" % (what, value))
    try:
        return Fraction(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        raise error("%s must be a number (an exact decimal or p/q), got %r"
                    % (what, value)) from None
