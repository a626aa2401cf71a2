"""The paper's float64 inverse-CDF sampler (zeal.paper.sampler): a reference, not the product.

Statistical tests use a fixed seed. Each check is calibrated to a false-failure probability
ALPHA = 1e-7 with a rigorous (non-asymptotic) inequality; there are 8 checks, so a fresh seed
would fail the suite with probability <= 8e-7 <= 1e-6.
"""
import math

import numpy as np
import pytest

from zeal.paper import formulas as P
from zeal.paper.sampler import inverse_cdf, reachable_outputs, sample

HUM = (23.5, 83.9, 1.0)
TINY = (5.0, 15.0, 1.0)  # the paper's Fig. holesInvCdf: Hbar = 10, h = 5, eps = 1
ALPHA = 1e-7
N = 200_000
U_STEP = 2.0 ** -53  # rng.random() returns k * 2^-53


def bernstein_threshold(var_sum, m, alpha):
    """t with 2 exp(-(t^2/2) / (var_sum + m t/3)) = alpha: the two-sided Bernstein bound
    (Thm 3.3 with its factor 2) solved for the deviation t of a sum of n independent,
    centred variables bounded by m. A normal approximation would give z = 5.33 for 1e-7;
    Bernstein is slightly wider but holds for every n."""
    ell = math.log(2 / alpha)
    b = ell * m / 3
    return b + math.sqrt(b * b + 2 * ell * var_sum)


@pytest.mark.statistical
@pytest.mark.parametrize("E", [None, 8])  # Abar = 0 and Abar = abar(E = 8) ~ 335
@pytest.mark.parametrize("x", [23.5, 53.7, 83.9])
def test_mean_is_x_plus_abar(E, x):
    lo, hi, eps = HUM
    abar = 0.0 if E is None else P.abar(lo, hi, eps, E)
    rng = np.random.default_rng([2024, 0 if E is None else E, int(x * 10)])
    y = sample(lo, hi, eps, abar, np.full(N, x), rng)
    # Thm 3.1: E[y] = x + Abar; |y - Abar - x| <= C + h; VAR from Thm 3.2
    m = P.c_const(lo, hi, eps) + P.half_width(lo, hi)
    t = bernstein_threshold(N * P.variance(lo, hi, eps, x), m, ALPHA)
    assert abs(np.sum(y - abar - x)) <= t


@pytest.mark.statistical
@pytest.mark.parametrize("E", [None, 8])
def test_central_window_mass(E):
    # P(y in [L, R]) = p (C - h) = a/(a + 1); Hoeffding: |freq - a/(a+1)| <= sqrt(ln(2/alpha)/(2N))
    lo, hi, eps = HUM
    abar = 0.0 if E is None else P.abar(lo, hi, eps, E)
    x = 40.0
    hb, h, c = P.hbar(lo, hi), P.half_width(lo, hi), P.c_const(lo, hi, eps)
    left = (c + h) / 2 * ((x - hb) / h) - (c - h) / 2 + hb + abar
    right = left + c - h
    y = sample(lo, hi, eps, abar, np.full(N, x), np.random.default_rng([7, 0 if E is None else E]))
    a = math.exp(eps / 2)
    freq = np.mean((y >= left) & (y <= right))
    assert abs(freq - a / (a + 1)) <= math.sqrt(math.log(2 / ALPHA) / (2 * N))


@pytest.mark.parametrize("E", [None, 8, 40, 66])
def test_outputs_stay_in_range(E):
    lo, hi, eps = HUM
    abar = 0.0 if E is None else P.abar(lo, hi, eps, E)
    hb, c = P.hbar(lo, hi), P.c_const(lo, hi, eps)
    x_min, x_max = hb - c + abar, hb + c + abar
    xs = np.linspace(lo, hi, 10_001)
    y = sample(lo, hi, eps, abar, xs, np.random.default_rng(11))
    assert np.all((y >= x_min) & (y <= x_max))
    # the extreme uniforms reach the ends (u = 0 -> x*_min for every x; u -> 1 near x*_max)
    ends = np.array([0.0, 1 - U_STEP])
    for x in (lo, hb, hi):
        y0, y1 = inverse_cdf(lo, hi, eps, abar, x, ends)
        assert y0 == x_min
        assert x_max - y1 <= 1e-9 * (2 * c) + 2.0 ** (math.frexp(x_max)[1] - 52)


def test_inputs_outside_the_range_are_refused():
    with pytest.raises(ValueError):
        sample(*HUM, 0.0, np.array([23.4]), np.random.default_rng(0))


# ---- floating-point holes (paper Section "Floating point vulnerability") -------------------
def _cdf(lo, hi, eps, abar, x, y):
    """The float64 CDF of Eq. (pdf) at y: used only to find which uniforms land near y."""
    hb, h, c, p = P.hbar(lo, hi), P.half_width(lo, hi), P.c_const(lo, hi, eps), P.p_level(lo, hi, eps)
    q = p / math.exp(eps)
    x_min = hb - c + abar
    left = (c + h) / 2 * ((x - hb) / h) - (c - h) / 2 + hb + abar
    right = left + c - h
    if y < left:
        return q * (y - x_min)
    if y < right:
        return q * (left - x_min) + p * (y - left)
    return q * (left - x_min) + p * (right - left) + q * (y - right)


def _reachable_in(prof, abar, x, y0, y1):
    """Floats in [y0, y1] that CDF^-1 reaches for input x, over every uniform k 2^-53 that
    can land there (the u range from the CDF, widened by 256 grid steps each side)."""
    k0 = int(_cdf(*prof, abar, x, y0) / U_STEP) - 256
    k1 = int(_cdf(*prof, abar, x, y1) / U_STEP) + 256
    us = np.arange(max(k0, 0), min(k1, 2 ** 53), dtype=np.int64) * U_STEP
    out = reachable_outputs(*prof, abar, x, us)
    assert min(out) < y0 and max(out) > y1  # the u range really covers the window
    return {v for v in out if y0 <= v <= y1}


def _all_floats(y0, y1):
    """Every float64 in [y0, y1], 0 < y0 < y1 (positive floats are ordered like their bits)."""
    b = np.arange(np.float64(y0).view(np.int64), np.float64(y1).view(np.int64) + 1, dtype=np.int64)
    return set(b.view(np.float64).tolist())


@pytest.mark.parametrize("offset", [0.5, 11.0])  # y - Abar - Hbar: central/right-tail windows
def test_holes_depend_on_the_input_without_abar(offset):
    # Abar = 0, Fig. holesInvCdf first row: the reachable floats near y differ between two
    # inputs, and neither reaches all of them -- an output can rule an input out.
    y0 = 10.0 + offset
    y1 = y0 + 1e-11
    every = _all_floats(y0, y1)
    r7, r13 = (_reachable_in(TINY, 0.0, x, y0, y1) for x in (7.0, 13.0))
    assert r7 != r13
    assert r7 < every and r13 < every


@pytest.mark.parametrize("offset", [-18.0, 0.5, 11.0])
def test_no_holes_with_abar_at_e_vul_tiny_range(offset):
    # Fig. holesInvCdf second row: with Abar from E = E_vul = 6 every float in the window is
    # reached from every input (verified here on these windows, not proved).
    prof = TINY
    E = P.e_vul(*prof)
    assert E == 6
    abar = P.abar(*prof, E)
    y0 = abar + 10.0 + offset
    y1 = y0 + 1e-11
    every = _all_floats(y0, y1)
    for x in (5.0, 7.0, 9.3, 13.0, 15.0):
        assert _reachable_in(prof, abar, x, y0, y1) == every


def test_e_vul_is_not_enough_for_the_humidity_range():
    # Thm 4.1 only asks ULP(u) * e^eps/p <= ULP(x*) (here 0.79 <= 1) and ignores that
    # x*_min + u/q rounds twice: u/q is first rounded to its own grid, which is coarser than
    # the u step once u/q >= 64, and the sum then rounds ties to even, so odd output floats
    # have a single preimage that can be skipped. For the humidity range at E = E_vul = 8 the
    # window just above Abar lies in x = lo's central segment (no holes) and in x = hi's left
    # tail (holes): the input is distinguishable. One more binade (E = 9) closed every hole we
    # sampled.
    prof = HUM
    assert P.e_vul(*prof) == 8
    for E, leaks in ((8, True), (9, False)):
        abar = P.abar(*prof, E)
        y0 = abar
        y1 = y0 + 2000 * 2.0 ** (E - 52)
        every = _all_floats(y0, y1)
        r_lo, r_hi = (_reachable_in(prof, abar, x, y0, y1) for x in (23.5, 83.9))
        assert r_lo == every
        assert (r_hi != r_lo) == leaks
