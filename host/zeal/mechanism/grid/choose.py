"""Choosing a profile's grid: by exponent, by bits, or automatically.

`auto` picks the smallest m whose exact variance (zeal.mechanism.grid.exact) stays within
AUTO_VARIANCE_SLACK of the continuous piecewise mechanism's at every input; `build` is the
CLI's one entry point. It sits above both the profile (zeal.mechanism.grid.profile, which builds a
grid for a given E or m) and the exact analysis of a grid (zeal.mechanism.grid.exact, which reads a
profile), so that neither needs the other's module.
"""
from .exact import worst_variance_ratio
from .profile import (
    AUTO_VARIANCE_SLACK, Profile, bits_range, epsilon_at_most, from_bits, from_exponent)


def auto(lo, hi, epsilon, *, calibration=None, slack=AUTO_VARIANCE_SLACK) -> Profile:
    """Smallest m whose exact variance is <= slack x the continuous PM's at every input."""
    epsilon = epsilon_at_most(epsilon)
    m_min, m_max = bits_range(lo, hi, epsilon)
    for m in range(m_min, m_max + 1):
        prof = from_bits(lo, hi, epsilon, m, calibration=calibration)
        if prof.n_cells > 1 << 22:  # the grid is then far finer than any rounding effect
            return prof
        if worst_variance_ratio(prof)[1] <= slack:
            return prof
    return from_bits(lo, hi, epsilon, m_max, calibration=calibration)


def build(lo, hi, epsilon, *, bits="auto", exponent=None, calibration=None) -> Profile:
    """One entry point for the CLI: by exponent, by bits, or automatic."""
    if exponent is not None:
        return from_exponent(lo, hi, epsilon, exponent, calibration=calibration)
    if bits in (None, "auto"):
        return auto(lo, hi, epsilon, calibration=calibration)
    return from_bits(lo, hi, epsilon, bits, calibration=calibration)
