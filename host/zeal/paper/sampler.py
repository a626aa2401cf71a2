"""The paper's float64 inverse-CDF sampler of the shifted piecewise mechanism.

REFERENCE FOR REPRODUCING THE PAPER ONLY -- NEVER USE IT TO PRIVATISE DATA. A sampler that
computes in floating point leaks privacy: the set of float64 outputs it can reach depends on
the input, so an output that one input can never produce identifies the other
(Mironov 2012, "On significance of the least significant bits for differential privacy").
Devices use the exact integer mechanism (zeal.mechanism).

PDF, Eq. (pdf): density p/e^eps on [x*_min, L(x)), p on [L(x), R(x)], p/e^eps on
(R(x), x*_max], with
    L(x) = (C + h)/2 * (x - Hbar)/h - (C - h)/2 + Hbar + Abar,   R(x) = L(x) + C - h,
    (x*_min, x*_max) = (Hbar - C + Abar, Hbar + C + Abar).
The CDF is piecewise linear; it is inverted segment by segment on u = rng.random(), whose
values are the multiples of 2^-53 in [0, 1) (the u grid of the paper's Thm 4.1 argument).
"""
import math

import numpy as np

from .formulas import c_const, half_width, hbar, p_level


def inverse_cdf(lo, hi, eps, abar, x, u):
    """CDF^-1 of Eq. (pdf) at cumulative probability u, every step in float64.

    x and u broadcast against each other. The breakpoints x*_min, L, R are float64 values
    and the CDF is built on them, so with a large Abar the segments are the rounded ones.
    Results are clipped to [x*_min, x*_max]: the rounded segment masses need not add to 1.
    """
    x = np.asarray(x, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    if np.any((x < lo) | (x > hi)):
        raise ValueError("inputs must lie in [lo, hi] = [%r, %r]" % (lo, hi))
    hb, h = hbar(lo, hi), half_width(lo, hi)
    c, p = c_const(lo, hi, eps), p_level(lo, hi, eps)
    q = p / math.exp(eps)                         # the low density level p/e^eps
    x_min = hb - c + abar
    x_max = hb + c + abar
    left = (c + h) / 2 * ((x - hb) / h) - (c - h) / 2 + hb + abar
    right = left + c - h
    f_left = q * (left - x_min)                   # CDF at L(x)
    f_right = f_left + p * (right - left)         # CDF at R(x)
    y = np.where(u < f_left, x_min + u / q,
                 np.where(u < f_right, left + (u - f_left) / p, right + (u - f_right) / q))
    return np.clip(y, x_min, x_max)


def sample(lo, hi, eps, abar, x, rng):
    """One float64 sample x* of Eq. (pdf) per element of the array x, by inverse CDF.

    rng is a numpy Generator; u = rng.random(x.shape). Reference only (see module docstring).
    """
    x = np.asarray(x, dtype=np.float64)
    return inverse_cdf(lo, hi, eps, abar, x, rng.random(x.shape))


def reachable_outputs(lo, hi, eps, abar, x, us):
    """The set of distinct float64 outputs CDF^-1 gives for the scalar input x over the
    uniforms us; comparing it across inputs exposes the "holes" of the paper's Fig. holesInvCdf.
    """
    return set(np.unique(inverse_cdf(lo, hi, eps, abar, float(x), us)).tolist())
