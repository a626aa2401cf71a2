"""The exact Zeal mechanism, scalar reference (pure Python integers and Fractions).

Each step mirrors shared_spec/mechanism.md, "Sampling", line for line; the firmware's
zealfw/mechanism.py is the integer-only twin and the vectors prove they agree.
"""
from fractions import Fraction

from .grid import ExactGrid
from ..errors import InputError
from .floatbits import bits_to_float32, bits_to_float64, exact
from .profile import Profile
from .words import system_words

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


def reading_from_raw(profile: Profile, raw: int) -> Fraction:
    if profile.calibration is None:
        raise InputError("raw readings need a profile with a calibration (cal_gain, cal_offset)")
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError("raw reading must be an integer, got %r" % (raw,))
    return profile.calibration.offset + profile.calibration.gain * raw


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


# ---- the mechanism ---------------------------------------------------------------------------
class ExactZeal(Clamp):
    """Zeal on the binade grid: exact sampling plus the exact analysis of `ExactGrid`."""

    def __init__(self, *, profile: Profile, words=None):
        if not isinstance(profile, Profile):
            raise TypeError("profile must be a zeal.mechanism.profile.Profile")
        super().__init__(Fraction(profile.lo), Fraction(profile.hi))
        self.profile = profile
        self.words = words if words is not None else system_words()
        self.grid = ExactGrid(profile)

    def sample_offset(self, x: Fraction, words=None) -> int:
        """One report as the offset j = k - k_lo in [0, N)."""
        words = words if words is not None else self.words
        p = self.profile
        jl = stochastic_round(self.position(x, p.n_cells - p.n_window), words)
        if words() < p.threshold:
            return jl + uniform_below(p.n_window, words)
        u = uniform_below(p.n_outside, words)
        return u if u < jl else u + p.n_window

    def perturb(self, value, words=None) -> int:
        """One report as the mantissa integer k of x* = 2^E (1 + k 2^-52)."""
        return self.profile.k_lo + self.sample_offset(reading(value), words)

    # exact analysis, delegated
    def privacy_ratio(self) -> Fraction:
        return self.grid.privacy_ratio

    def variance(self, value) -> Fraction:
        return self.grid.variance(reading(value))

    def bias(self, value) -> Fraction:
        """E[estimate] - x for the calibrated estimator: exactly 0 inside [lo, hi]."""
        x = reading(value)
        return self.grid.estimate(self.grid.mean_offset(x)) - self.grid.clamp(x)
