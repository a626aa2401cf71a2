"""The paper's formulas (zeal.paper) against values derived by hand.

Humidity profile of the paper's Results: lo = 23.5, hi = 83.9, eps = 1.
    Hbar = 53.7, h = 30.2, a = e^0.5 = 1.6487212707
    C = h (a+1)/(a-1) = 30.2 * 2.6487212707 / 0.6487212707 = 123.30624258...
    2C = 246.61 lies in (128, 256]               -> E_enc = 8
    p = (e - a)/(2h(a+1)) = 1.0695605922 / 159.98276475 = 0.0066854736
    e/p = 406.59, log2 = 8.667, -1 + 8.667 -> 8   -> E_vul = max(8, 8) = 8
    Abar(8) = 512 - 2*2^-44 - 53.7 - 123.30624258 = 334.99375741477...
    gamma(8)  = 12 + 8  - ceil(log2(246.61 + 3*2^-44)) = 20 - 8 = 12, TR = 1 - 12/64 = 0.8125
    gamma(57) = 12 + 57 - ceil(log2(246.61 + 3*2^5))   = 69 - 9 = 60, TR = 1 - 60/64 = 0.0625

Small case: lo = 0, hi = 2, eps = 2 ln 3, so a = 3, Hbar = 1, h = 1.
    C = 1 * 4/2 = 2,  p = (9 - 3)/(2 * 1 * 4) = 0.75,  low level p/e^eps = 0.75/9
    VAR(x) = 1 * (t^2/2 + 6/(3*4)) = t^2/2 + 1/2:  VAR(Hbar) = 0.5,  VAR(lo) = VAR(hi) = 1
    E_enc = ceil(log2 4) = 2;  E_vul = max(ceil(-1 + log2(9/0.75)), 2) = max(ceil(2.585), 2) = 3
    Abar(3) = 16 - 2*2^-49 - 1 - 2 = 13 - 2^-48
    gamma(3) = 12 + 3 - ceil(log2(4 + 3*2^-49)) = 15 - 3 = 12
"""
import math
from decimal import Decimal

import numpy as np
import pytest

from zeal.paper import formulas as P

HUM = (23.5, 83.9, 1.0)
SMALL = (0.0, 2.0, 2 * math.log(3))


def test_humidity_exponents():
    assert P.e_enc(*HUM) == 8
    assert P.e_vul(*HUM) == 8


def test_humidity_abar():
    ref = 334.99375741477
    assert abs(P.abar(*HUM, 8) - ref) <= 1e-9 * ref
    exact = P.abar_exact(*HUM, 8)
    assert isinstance(exact, Decimal)
    assert abs(float(exact) - ref) <= 1e-9 * ref
    # the float64 evaluation only loses the last bits: within a few ULP(2^8) = 2^-44
    assert abs(Decimal(P.abar(*HUM, 8)) - exact) <= 4 * Decimal(2) ** -44


@pytest.mark.parametrize("E, gamma, tr", [(8, 12, 0.8125), (57, 60, 0.0625)])
def test_humidity_gamma_and_transmission_ratio(E, gamma, tr):
    assert P.gamma_min(*HUM, E) == gamma
    assert P.transmission_ratio(P.gamma_min(*HUM, E)) == tr


def test_small_case_constants():
    assert P.hbar(0.0, 2.0) == 1.0 and P.half_width(0.0, 2.0) == 1.0
    assert P.c_const(*SMALL) == pytest.approx(2.0, rel=1e-14)
    assert P.p_level(*SMALL) == pytest.approx(0.75, rel=1e-14)
    # float64 gives 2C = 3.9999999999999991, just below 4: the exact answer 2 either way
    assert P.e_enc(*SMALL) == 2
    assert P.e_vul(*SMALL) == 3
    assert P.abar(*SMALL, 3) == pytest.approx(13 - 2.0 ** -48, abs=1e-14)
    assert P.gamma_min(*SMALL, 3) == 12


def test_small_case_variance():
    assert P.variance(*SMALL, 1.0) == pytest.approx(0.5, rel=1e-14)
    v = P.variance(*SMALL, np.array([0.0, 1.0, 2.0]))
    assert v.shape == (3,)
    np.testing.assert_allclose(v, [1.0, 0.5, 1.0], rtol=1e-14)


def _pdf_moments(lo, hi, eps, abar, x):
    """Mean and variance of Eq. (pdf) computed as a mixture of three uniforms (exactly,
    independently of Thms 3.1/3.2): segment [s, e] with mass m contributes
    m (s+e)/2 to E[y] and m (s^2 + s e + e^2)/3 to E[y^2]."""
    hb, h, c, p = P.hbar(lo, hi), P.half_width(lo, hi), P.c_const(lo, hi, eps), P.p_level(lo, hi, eps)
    q = p / math.exp(eps)
    left = (c + h) / 2 * (x - hb) / h - (c - h) / 2 + hb + abar
    right = left + c - h
    segs = [(hb - c + abar, left, q), (left, right, p), (right, hb + c + abar, q)]
    mass = sum(d * (e - s) for s, e, d in segs)
    m1 = sum(d * (e - s) * (s + e) / 2 for s, e, d in segs)
    m2 = sum(d * (e - s) * (s * s + s * e + e * e) / 3 for s, e, d in segs)
    return mass, m1, m2 - m1 * m1


@pytest.mark.parametrize("prof", [HUM, SMALL, (5.0, 15.0, 0.3)])
@pytest.mark.parametrize("frac", [0.0, 0.2, 0.5, 0.93, 1.0])
def test_theorems_3_1_and_3_2_against_the_pdf(prof, frac):
    lo, hi, eps = prof
    x = lo + frac * (hi - lo)
    mass, mean, var = _pdf_moments(lo, hi, eps, 0.0, x)
    assert mass == pytest.approx(1.0, rel=1e-12)
    assert mean == pytest.approx(x, abs=1e-9 * (hi - lo))          # Thm 3.1 with Abar = 0
    assert var == pytest.approx(P.variance(lo, hi, eps, x), rel=1e-9)  # Thm 3.2


def test_bound_abs_small_numbers():
    # xs = [0, 2]: sum VAR = 1 + 1 = 2, n = 2, lam = 1 -> n lam = 2, C + h = 3
    # exponent = -(2^2/2) / (2 + 3*2/3) = -2/4 = -1/2
    xs = np.array([0.0, 2.0])
    assert P.bound_abs(*SMALL, xs, 1.0) == pytest.approx(math.exp(-0.5), rel=1e-13)
    assert P.bound_abs(*SMALL, xs, 1.0, two_sided=True) == pytest.approx(2 * math.exp(-0.5), rel=1e-13)
    # xs = [1, 1]: sum VAR = 1, lam = 0.75 -> n lam = 1.5: -(1.125) / (1 + 1.5) = -0.45
    assert P.bound_abs(*SMALL, [1.0, 1.0], 0.75) == pytest.approx(math.exp(-0.45), rel=1e-13)
    assert P.bound_abs(*SMALL, xs, 0.0) == 1.0


def test_bound_abs_is_the_direct_formula():
    lo, hi, eps = HUM
    xs = np.linspace(lo, hi, 7)
    lam = 3.0
    n = xs.size
    s = sum(P.variance(lo, hi, eps, float(x)) for x in xs)
    m = P.c_const(lo, hi, eps) + P.half_width(lo, hi)
    direct = math.exp(-0.5 * (n * lam) ** 2 / (s + m * n * lam / 3))
    assert P.bound_abs(lo, hi, eps, xs, lam) == pytest.approx(direct, rel=1e-13)


@pytest.mark.parametrize("xs", [[0.5, 1.5, 1.0, 2.0], [0.0, 2.0], [0.1, 0.1, 0.3]])
def test_bound_rel_is_bound_abs_at_lam_times_mean(xs):
    mean = abs(float(np.mean(xs)))
    for lam in (0.01, 0.2, 1.0):
        assert P.bound_rel(*SMALL, xs, lam) == pytest.approx(P.bound_abs(*SMALL, xs, lam * mean), rel=1e-13)
        assert P.bound_rel(*SMALL, xs, lam, two_sided=True) == pytest.approx(
            2 * P.bound_abs(*SMALL, xs, lam * mean), rel=1e-13)


def test_bound_rel_is_not_the_printed_formula():
    # The printed Thm 3.4 puts n * S_DS * lam where n * lam belongs: with xs = [0, 2]
    # (S_DS = 2, mean 1) and lam = 1 the printed exponent is -(4^2/2)/(2 + 3*4/3) = -4/3,
    # the correct one (event |sum V| >= lam * S_DS = 2) is -1/2.
    xs = [0.0, 2.0]
    assert P.bound_rel(*SMALL, xs, 1.0) == pytest.approx(math.exp(-0.5), rel=1e-13)
    assert P.bound_rel(*SMALL, xs, 1.0) != pytest.approx(math.exp(-4 / 3), rel=1e-3)
    with pytest.raises(ValueError):
        P.bound_rel(*SMALL, [-1.0, 1.0], 0.1)


def test_f_error_small_for_moderate_abar():
    # For E >= E_enc, x*_min and Abar are within a factor 2 of each other, so x*_min - Abar
    # is exact (Sterbenz) and Delta is only the rounding of Hbar -+ C + Abar: at most
    # ULP(2^E)/2 = 2^(E-53) in absolute value.
    lo, hi, eps = HUM
    hb, c = P.hbar(lo, hi), P.c_const(lo, hi, eps)
    for E in range(8, 60):
        bound = 2.0 ** (E - 53) * (1 / abs(hb - c) + 1 / abs(hb + c)) / 2
        assert abs(P.f_error(lo, hi, eps, E)) <= bound * (1 + 1e-12)
    assert abs(P.f_error(lo, hi, eps, 8)) < 1e-15


def test_f_error_saturates_for_huge_abar():
    # Abar ~ 1e20: ULP(Abar) = 2^14 dwarfs Hbar +- C, so x* rounds to Abar itself and
    # each Delta equals the value it should have kept: F = 1, the 100% error of Eq. (destructiveAbar).
    for E in (66, 70, 200):
        assert P.abar(*HUM, E) >= 1e20
        assert P.f_error(*HUM, E) == 1.0
    assert abs(P.f_error(*HUM, 60)) > 0.1  # already large before 1e20 (Abar(60) ~ 2.3e18)


def test_exponent_must_allow_the_enclosure():
    with pytest.raises(ValueError):
        P.abar(*HUM, 7)
    with pytest.raises(ValueError):
        P.gamma_min(*HUM, 1023)


def test_summary():
    s = P.summary(*HUM, 8)
    assert (s["e_enc"], s["e_vul"], s["gamma_min"], s["transmission_ratio"]) == (8, 8, 12, 0.8125)
    assert s["abar"] == P.abar(*HUM, 8) and s["abar_exact"] == P.abar_exact(*HUM, 8)
    assert s["C"] == P.c_const(*HUM) and s["p"] == P.p_level(*HUM)
