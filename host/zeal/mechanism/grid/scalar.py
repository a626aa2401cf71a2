"""The exact Zeal mechanism, scalar reference (pure Python integers and Fractions).

Each step mirrors shared_spec/mechanism.md, "Sampling", line for line; the firmware's
zealfw/mechanism.py is the integer-only twin and the vectors prove they agree.
"""
from fractions import Fraction

from .exact import ExactGrid
from ...errors import InputError
from .profile import Profile
from ..core.words import system_words
from ..core.draws import Clamp, reading, stochastic_round, uniform_below


def reading_from_raw(profile: Profile, raw: int) -> Fraction:
    if profile.calibration is None:
        raise InputError("raw readings need a profile with a calibration (cal_gain, cal_offset)")
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError("raw reading must be an integer, got %r" % (raw,))
    return profile.calibration.offset + profile.calibration.gain * raw


# ---- the mechanism ---------------------------------------------------------------------------
class ExactZeal(Clamp):
    """Zeal on the binade grid: exact sampling plus the exact analysis of `ExactGrid`."""

    def __init__(self, *, profile: Profile, words=None):
        if not isinstance(profile, Profile):
            raise TypeError("profile must be a zeal.mechanism.grid.profile.Profile")
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
