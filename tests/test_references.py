"""The float reference mechanisms: closed forms at hand-checked points (exact tests), then each
sampler against its variance formula and its mean (seeded statistical tests).

Statistical tests use median-of-means, which needs no distributional assumption beyond a
bounded second moment of what is averaged: split n draws into K groups of g; by Chebyshev a
group mean is off by more than 2 sigma/sqrt(g) with probability <= 1/4; the median is off only
if at least K/2 groups are, which by Hoeffding has probability <= exp(-2K (1/4)^2) = exp(-K/8).
K is derived below so that the whole file's statistical checks fail falsely with probability
<= 1e-6 (union bound). sigma^2 for the mean test is the claimed variance; for the variance test
(the mean of (Y - x)^2) sigma^2 <= E[(Y - x)^4], bounded by M^2 Var(x) when |Y - x| <= M
(bounded outputs), 24 b^4 for Laplace(b), and the step density's fourth moment summed directly.
"""
import math

import numpy as np
import pytest

from zeal.errors import InputError, ZealError
from zeal.mechanism import references as R

EPS = (0.25, 1.0, 4.0)
XS = (-1.0, -0.3, 0.0, 0.7, 1.0)
KINDS = (R.Laplace, R.SCDF, R.Staircase, R.Duchi, R.PM, R.HM, R.PMSub)
N_CHECKS = len(EPS) * len(XS) * len(KINDS) * 2 + 1   # + the power check
FALSE_FAILURE = 1e-6
K = math.ceil(8 * math.log(N_CHECKS / FALSE_FAILURE))  # exp(-K/8) <= 1e-6 / N_CHECKS
G = 8000                                               # draws per group


def median_of_means(v: np.ndarray) -> float:
    return float(np.median(v.reshape(K, G).mean(axis=1)))


def tolerance(sigma2: float) -> float:
    return 2.0 * math.sqrt(sigma2 / G)


# -- independent moments of the step density (direct series, not the closed form) ---------

def step_moment(m, a, eps, power):
    b = math.exp(-eps)
    total = 2 * a * m ** (power + 1) / (power + 1)
    k = 1
    while True:
        term = 2 * a * b ** k * ((m + 2 * k) ** (power + 1) - (m + 2 * k - 2) ** (power + 1)) / (power + 1)
        total += term
        if b ** k < 1e-18:
            return total
        k += 1


def fourth_moment_bound(mech, x):
    if isinstance(mech, R.Laplace):
        return 24 * mech.scale ** 4
    if isinstance(mech, R.SCDF | R.Staircase):
        return step_moment(mech.m, mech.a, mech.epsilon, 4)
    if isinstance(mech, R.Duchi):
        big = mech.b
    elif isinstance(mech, R.Piecewise):
        big = mech.big_a
    else:                                   # HM: max of PM's and Duchi's outputs
        big = max(mech.pm.big_a, mech.duchi.b)
    return (big + 1) ** 2 * mech.variance(x)


# -- exact closed forms at hand-checked points -------------------------------------------

def test_duchi_closed_form_at_eps_ln3():
    # e^eps = 3: B = (3+1)/(3-1) = 2, Var(x) = 4 - x^2; at x = 0.5: 3.75; worst (x = 0): 4
    d = R.Duchi(epsilon=math.log(3))
    assert d.variance(0.5) == pytest.approx(3.75, rel=1e-12)
    assert d.worst_variance() == pytest.approx(4.0, rel=1e-12)


def test_pm_worst_at_eps_2ln2():
    # e^{eps/2} = 2: 4 e^{eps/2}/(3 (e^{eps/2}-1)^2) = 8/3, reached at x = +-1:
    # x^2/(2-1) + (2+3)/(3 (2-1)^2) = 1 + 5/3 = 8/3
    p = R.PM(epsilon=2 * math.log(2))
    assert p.worst_variance() == pytest.approx(8 / 3, rel=1e-12)
    assert p.variance(-1.0) == pytest.approx(8 / 3, rel=1e-12)
    assert p.big_a == pytest.approx(3.0, rel=1e-12)       # C = (2+1)/(2-1)


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5, 6.0])
def test_pm_worst_formula_of_seed_001(eps):
    a = math.exp(eps / 2)
    assert R.PM(epsilon=eps).worst_variance() == pytest.approx(4 * a / (3 * (a - 1) ** 2), rel=1e-12)


def test_hm_by_hand_at_eps_2ln2():
    # e^{eps/2} = 2 > e^{eps*/2}: alpha = 1 - 1/2 = 1/2. PM: x^2 + 5/3; Duchi: B = 5/3,
    # 25/9 - x^2. HM = (1/2)(x^2 + 5/3) + (1/2)(25/9 - x^2) = (15/9 + 25/9)/2 = 20/9 for all x.
    # Seed 001's worst case: (a+3)/(3a(a-1)) + (e^eps+1)^2/(a (e^eps-1)^2) = 5/6 + 25/18 = 20/9.
    h = R.HM(epsilon=2 * math.log(2))
    assert h.alpha == pytest.approx(0.5, rel=1e-12)
    for x in (-1.0, 0.0, 0.4):
        assert h.variance(x) == pytest.approx(20 / 9, rel=1e-12)
    assert h.worst_variance() == pytest.approx(20 / 9, rel=1e-12)


def test_hm_is_duchi_below_eps_star():
    assert 0.60 < R.hm_epsilon_star() < 0.62
    h = R.HM(epsilon=0.5)
    assert h.alpha == 0.0
    assert h.worst_variance() == pytest.approx(R.Duchi(epsilon=0.5).worst_variance(), rel=1e-12)


def test_pm_sub_by_hand_at_eps_3ln2():
    # t = e^{eps/3} = 2, e^eps = 8, D = 7, s = 10: Var = 3x^2/7 + 10(27 + 7)/(3*4*49)
    # = 3x^2/7 + 85/147; worst 148/147. A = 10*3/(2*7) = 15/7.
    p = R.PMSub(epsilon=3 * math.log(2))
    assert p.variance(0.0) == pytest.approx(85 / 147, rel=1e-12)
    assert p.worst_variance() == pytest.approx(148 / 147, rel=1e-12)
    assert p.big_a == pytest.approx(15 / 7, rel=1e-12)


@pytest.mark.parametrize("eps", [0.25, 1.0, 4.0])
def test_piecewise_is_a_density_with_ratio_e_eps(eps):
    for m in (R.PM(epsilon=eps), R.PMSub(epsilon=eps), R.Piecewise(epsilon=eps, t=0.7)):
        width = 2 * m.half
        mass = math.exp(eps) * m.p_low * width + m.p_low * (2 * m.big_a - width)
        assert mass == pytest.approx(1.0, rel=1e-12)
        assert math.exp(eps) * m.p_low * width == pytest.approx(m.p_window, rel=1e-12)
        lo, hi = m.window(1.0)
        assert hi == pytest.approx(m.big_a, rel=1e-12)       # window stays inside [-A, A]
        lo, hi = m.window(-1.0)
        assert lo == pytest.approx(-m.big_a, rel=1e-12)


@pytest.mark.parametrize("eps", [0.25, 1.0, 4.0])
@pytest.mark.parametrize("kind", [R.SCDF, R.Staircase])
def test_step_density_normalised_and_variance_matches_series(eps, kind):
    s = kind(epsilon=eps)
    assert step_moment(s.m, s.a, eps, 0) == pytest.approx(1.0, rel=1e-12)
    assert s.worst_variance() == pytest.approx(step_moment(s.m, s.a, eps, 2), rel=1e-10)


def test_laplace_closed_form():
    assert R.Laplace(epsilon=0.5).worst_variance() == 32.0


def test_scaled_wrapper():
    p = R.Scaled(R.PM(epsilon=1.0), lo=10, hi=30)
    assert p.variance(30.0) == pytest.approx(100 * R.PM(epsilon=1.0).variance(1.0), rel=1e-12)
    assert p.worst_variance() == pytest.approx(100 * R.PM(epsilon=1.0).worst_variance(), rel=1e-12)
    y = p.sample(np.full(1000, 20.0), np.random.default_rng(5))
    assert y.shape == (1000,) and np.all(np.abs(y - 20) <= 10 * R.PM(epsilon=1.0).big_a)
    with pytest.raises(InputError):
        p.sample([31.0], np.random.default_rng(0))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x", None])
def test_epsilon_validated(bad):
    for kind in KINDS:
        with pytest.raises(ZealError):
            kind(epsilon=bad)


def test_keyword_only_and_inputs_validated():
    with pytest.raises(TypeError):
        R.PM(1.0)
    with pytest.raises(InputError):
        R.Duchi(epsilon=1).variance(1.5)
    with pytest.raises(InputError):
        R.Duchi(epsilon=1).sample([float("nan")], np.random.default_rng(0))
    with pytest.raises(ZealError):
        R.Duchi(epsilon=1).sample([0.0], 42)     # the generator is injected, never a bare seed


# -- statistical: sampler against formula ---------------------------------------------------

@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_sampler_mean_and_variance(kind, eps):
    mech = kind(epsilon=eps)
    rng = np.random.default_rng([20240610, KINDS.index(kind), int(eps * 100)])
    for x in XS:
        y = mech.sample(np.full(K * G, x), rng)
        var = mech.variance(x)
        assert abs(median_of_means(y) - x) <= tolerance(var), (mech.name, eps, x, "mean")
        sq = (y - x) ** 2
        got = median_of_means(sq)
        assert abs(got - var) <= tolerance(fourth_moment_bound(mech, x)), (mech.name, eps, x, got, var)


def test_the_mean_check_catches_a_bias():
    # power: the same check, fed a Duchi sampler run at x + 0.1, must fail
    mech = R.Duchi(epsilon=1.0)
    y = mech.sample(np.full(K * G, 0.1), np.random.default_rng(99))
    assert abs(median_of_means(y) - 0.0) > tolerance(mech.variance(0.0))
