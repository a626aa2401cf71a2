"""Table mechanisms: exact privacy ratio, unbiased output values and variance (Fractions)."""
import math
from fractions import Fraction as F

import pytest

from zeal.errors import ProfileError
from zeal.mechanism.table import mechanism as table
from zeal.mechanism.grid.profile import exp_lower_bound
from zeal.mechanism.table.mechanism import Table

LN3 = F(10986123, 10 ** 7)   # ln 3 = 1.09861228...: exp_lower_bound(LN3) >= 3 (checked below)


def test_hand_worked_duchi_at_ln3():
    # Duchi at e^eps = 3 on [-1, 1]: P(+ | 1) = 3/4, P(+ | -1) = 1/4, so rows (cells -, +)
    # x=-1: (3, 1), x=1: (1, 3). Unbiased at the anchors: 3/4 g- + 1/4 g+ = -1 and
    # 1/4 g- + 3/4 g+ = 1 give g+ - g- = 4 and g+ + g- = 0, g = (-2, 2).
    # E[g^2] = 4 at every x; E[g | x] = x; Var = 4 - x^2: 4 at 0, 15/4 at 1/2, 3 at +-1.
    assert exp_lower_bound(LN3) >= 3
    t = Table(-1, 1, LN3, [[3, 1], [1, 3]])
    assert t.privacy_ratio() == 3
    assert t.is_private()
    assert t.output_values() == [-2, 2]
    for x, v in ((0, 4), (F(1, 2), F(15, 4)), (1, 3), (-1, 3), (F(-1, 3), F(35, 9)), (5, 3)):
        assert t.variance(x) == v
    assert t.worst_variance() == 4
    assert t.worst_input() == 0


def test_table_breaking_epsilon_refused():
    with pytest.raises(ProfileError, match="breaks epsilon"):
        Table(-1, 1, 1, [[3, 1], [1, 3]])         # ratio 3 > e^1
    with pytest.raises(ProfileError, match="breaks epsilon"):
        Table(-1, 1, 4, [[1, 0], [1, 1]])         # a zero beside a non-zero
    t = Table(-1, 1, 1, [[3, 1], [1, 3]], check=False)
    assert t.privacy_ratio() == 3 and not t.is_private()


def test_table_without_unbiased_values_refused():
    # equal rows at different anchors: the mean cannot follow x
    with pytest.raises(ProfileError, match="no unbiased"):
        Table(-1, 1, 1, [[1, 2, 1], [1, 2, 1]])
    # given values that are biased are refused too
    with pytest.raises(ProfileError, match="biased"):
        Table(-1, 1, LN3, [[3, 1], [1, 3]], values=[-1, 1])


def _check_unbiased_and_variance(t, xs):
    g = t.output_values()
    for x in xs:
        p = t.distribution(x)
        assert sum(p) == 1
        mean = sum(a * b for a, b in zip(p, g))
        assert mean == min(max(F(x), t.lo), t.hi)
        assert t.variance(x) == sum(a * b * b for a, b in zip(p, g)) - mean ** 2


def test_unbiased_at_non_anchor_readings_exactly():
    xs = [F(k, 37) for k in range(-37, 38, 5)] + [F(1, 3), F(-7, 11)]
    # a 3-anchor table whose canonical g is solved (not given)
    t = Table(-1, 1, 2, [[5, 3, 1, 1], [2, 3, 3, 2], [1, 1, 3, 5]])
    assert t.is_private()
    _check_unbiased_and_variance(t, xs)
    _check_unbiased_and_variance(table.pm(-1, 1, 1, cells=8), xs)
    _check_unbiased_and_variance(table.hm(-1, 1, 2, cells=10), xs)


def test_worst_variance_is_the_max_over_a_fine_grid():
    t = Table(-1, 1, 2, [[5, 3, 1, 1], [2, 3, 3, 2], [1, 1, 3, 5]])
    grid = max(t.variance(F(k, 600)) for k in range(-600, 601))
    assert t.worst_variance() >= grid
    assert t.variance(t.worst_input()) == t.worst_variance()


@pytest.mark.parametrize("eps", ["0.25", "1", "4"])
def test_duchi_matches_its_formula_at_the_rational_ratio(eps):
    t = table.duchi(-1, 1, eps)
    ell = table.budget_ratio(eps)
    assert ell <= exp_lower_bound(F(eps))
    b = (ell + 1) / (ell - 1)
    for x in (-1, F(-1, 3), 0, F(2, 7), 1):
        assert t.variance(x) == b * b - F(x) ** 2
    assert t.worst_variance() == b * b
    e = math.exp(float(F(eps)))
    cont = ((e + 1) / (e - 1)) ** 2
    assert 0 <= float(b * b) - cont <= 2.0 ** -28 * cont


def test_duchi_on_a_shifted_range():
    t = table.duchi(10, 30, 1)
    ell = table.budget_ratio(1)
    b = (ell + 1) / (ell - 1)
    assert t.variance(F(25)) == 100 * b * b - 25


def test_pm_matched_cells_follow_the_binned_formula():
    # N = 12 cells, window Nc = 4: a = N/Nc - 1 = 2, ratio a^2 = 4 <= e^2; C = 3, w = 1/2,
    # anchor spacing D = 2/(N - Nc) = 1/4.
    a, n, nc = F(2), 12, 4
    t = table.pm(-1, 1, 2, cells=n, window=nc, ratio=a * a)
    w, d = 2 * ((a + 1) / (a - 1)) / n, F(2, n - nc)
    assert t.output_values()[0] == -(a + 1) / (a - 1) + w / 2   # cell centres

    def var_pm(x):
        return x * x / (a - 1) + (a + 3) / (3 * (a - 1) ** 2)

    for k in range(-40, 41, 3):
        x = F(k, 40)
        pos = (x + 1) / d
        f = pos - math.floor(pos)
        assert t.variance(x) == var_pm(x) - w * w / 12 + f * (1 - f) * d * d * a / (a - 1)
    worst = t.worst_variance()
    assert var_pm(1) - w * w / 12 <= worst <= var_pm(1) - w * w / 12 + d * d * a / (4 * (a - 1))


def test_hm_is_the_alpha_mixture_of_its_parts():
    t = table.hm(-1, 1, 2, cells=16)
    assert t.is_private() and t.cells == 16 and 0 < t.alpha < 1
    for x in (F(-1), F(-2, 9), F(0), F(1, 5), F(1)):
        assert t.variance(x) == (t.alpha * t.pm_part.variance(x)
                                 + (1 - t.alpha) * t.duchi_part.variance(x))
    assert table.hm(-1, 1, "0.5", cells=16).cells == 2   # eps <= eps*: Duchi


def test_every_family_member_is_private_with_integer_weights():
    for eps in ("0.25", "0.5", "1", "2", "4"):
        for t in (table.duchi(-1, 1, eps), table.pm(-1, 1, eps, cells=16),
                  table.hm(-1, 1, eps, cells=16)):
            assert t.is_private() and t.cells <= 16
            assert all(isinstance(w, int) for row in t.weights for w in row)
