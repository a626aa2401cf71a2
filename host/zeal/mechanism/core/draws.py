"""Exact random draws and readings shared by every kind's sampler (pure Python integers and
Fractions): uniform integers and Bernoulli trials on 64-bit words, stochastic rounding, the
clamp, and readings as exact rationals. Each mirrors shared_spec/mechanism.md, "Sampling".
"""
from fractions import Fraction

from ...errors import InputError
from .floatbits import bits_to_float32, bits_to_float64, exact

WORD_BITS = 64
WORD = 1 << WORD_BITS


# ---- exact random primitives ----------------------------------------------------------------
def uniform_below(n: int, words) -> int:
    """Uniform integer in [0, n), 1 <= n <= 2^64, by rejection on 64-bit words.

    With q = floor(2^64 / n), u = floor(w / q) takes each value in [0, n) for exactly q words
    w, so accepting u < n is exact. Rejection needs w >= q*n: probability < n / 2^64.
    """
    q = WORD // n
    while True:
        u = words() // q
        if u < n:
            return u


def bernoulli(num: int, den: int, words) -> int:
    """1 with probability num/den (0 <= num < den), else 0, exactly.

    Compares a uniform real U = 0.w1 w2 w3... (64 bits per word) with num/den digit by
    digit in base 2^64; a tie on a digit (probability 2^-64) reads the next word.
    """
    rem = num
    while True:
        digit, rem = divmod(rem << WORD_BITS, den)
        w = words()
        if w != digit:
            return 1 if w < digit else 0
        if rem == 0:
            return 0  # U >= num/den from here on (U == num/den has probability 0)


def stochastic_round(pos: Fraction, words) -> int:
    """floor(pos) + BERNOULLI(frac(pos)): the position's stochastic rounding (mechanism.md
    SAMPLE, shared by the grid and the table sampler). Always reads at least one word."""
    base, rem = divmod(pos.numerator, pos.denominator)
    return base + bernoulli(rem, pos.denominator, words)


class Clamp:
    """Clamping to [lo, hi], counted: finite readings outside the range become lo or hi."""

    def __init__(self, lo: Fraction, hi: Fraction):
        self._lo, self._hi = lo, hi
        self.clamped = 0

    def clamp(self, x: Fraction) -> Fraction:
        if x < self._lo:
            self.clamped += 1
            return self._lo
        if x > self._hi:
            self.clamped += 1
            return self._hi
        return x

    def position(self, x: Fraction, steps: int) -> Fraction:
        """pos = (clamp(x) - lo) * steps / (hi - lo), an exact rational in [0, steps]."""
        return (self.clamp(x) - self._lo) * steps / (self._hi - self._lo)


# ---- readings as exact rationals -------------------------------------------------------------
def reading_from_float64_bits(bits: int) -> Fraction:
    return exact(bits_to_float64(bits))


def reading_from_float32_bits(bits: int) -> Fraction:
    return exact(bits_to_float32(bits))


def reading(value) -> Fraction:
    """Any exact-able Python value: float, int or Fraction."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise InputError("reading must be a number, got %r" % (value,))
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return exact(value)
    raise InputError("reading must be a number, got %r" % (value,))
