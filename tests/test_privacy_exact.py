"""Exact privacy, reachability, unbiasedness and variance of the integer mechanism.

No sampling here: every probability is a Fraction (zeal.analysis.ExactGrid), and the
distribution-based checks recompute means and variances from P(j | x) directly.
"""
import itertools
import math
from decimal import Context, Decimal
from fractions import Fraction

import pytest

from zeal import profile as P
from zeal.analysis import ExactGrid, pm_variance, worst_variance_ratio

from conftest import BITS, EPSILONS, HUMIDITY

CASES = list(itertools.product(EPSILONS, BITS))


def certified_exp_lower(eps: float) -> Fraction:
    """e^eps from a correctly rounded 50-digit Decimal, minus a margin above its error."""
    return Fraction(Context(prec=50).exp(Decimal(eps))) - Fraction(1, 10 ** 40)


def inputs(prof):
    lo, hi = Fraction(prof.lo), Fraction(prof.hi)
    span = hi - lo
    return [lo, hi, (lo + hi) / 2, lo + span / 3, lo + span * Fraction(7, 9),
            Fraction("35.58"), lo + span / (prof.n_cells - prof.n_window)]


@pytest.mark.parametrize("eps, bits", CASES)
def test_privacy_ratio_is_at_most_e_eps(eps, bits):
    grid = ExactGrid(P.from_bits(*HUMIDITY, eps, bits))
    assert grid.p_hi > 0 and grid.p_lo > 0          # every output cell is reachable
    assert 1 < grid.privacy_ratio <= certified_exp_lower(eps)


@pytest.mark.parametrize("eps, bits", [c for c in CASES if c[1] <= 4])
def test_distribution_pairs_exhaustively(eps, bits):
    """Small grids: for every pair of inputs and every cell, P(j|x) <= e^eps P(j|x')."""
    prof = P.from_bits(*HUMIDITY, eps, bits)
    grid = ExactGrid(prof)
    bound = certified_exp_lower(eps)
    dists = [grid.distribution(x) for x in inputs(prof)]
    for d in dists:
        assert sum(d.values()) == 1
        assert all(grid.p_lo <= p <= grid.p_hi for p in d.values())
    for d1, d2 in itertools.product(dists, repeat=2):
        assert all(d1[j] <= bound * d2[j] for j in d1)


@pytest.mark.parametrize("eps, bits", [c for c in CASES if c[1] <= 8])
def test_calibrated_estimate_is_exactly_unbiased(eps, bits):
    prof = P.from_bits(*HUMIDITY, eps, bits)
    grid = ExactGrid(prof)
    for x in inputs(prof):
        d = grid.distribution(x)
        mean = sum(p * grid.estimate(j) for j, p in d.items())
        assert mean == x
        second = sum(p * (grid.estimate(j) - x) ** 2 for j, p in d.items())
        assert second == grid.variance(x)


def test_out_of_range_inputs_are_clamped():
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 4))
    assert grid.distribution(Fraction(-1000)) == grid.distribution(grid.lo)
    assert grid.distribution(Fraction(1000)) == grid.distribution(grid.hi)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("bits", [8, 16])
def test_variance_within_one_percent_of_pm(eps, bits):
    low, high = worst_variance_ratio(P.from_bits(*HUMIDITY, eps, bits))
    assert 0.99 <= low <= high <= 1.01


@pytest.mark.parametrize("eps, bits", [(1.0, 3), (2.0, 4), (4.0, 5), (1.0, 6)])
def test_worst_ratio_bounds_a_dense_exact_scan(eps, bits):
    """The analytic per-step extremes enclose the exact ratio at many exact inputs."""
    prof = P.from_bits(*HUMIDITY, eps, bits)
    grid = ExactGrid(prof)
    low, high = worst_variance_ratio(prof)
    steps = prof.n_cells - prof.n_window
    span = grid.hi - grid.lo
    seen = []
    for i in range(steps * 40 + 1):
        x = grid.lo + span * Fraction(i, steps * 40)
        seen.append(float(grid.variance(x)) / float(pm_variance(prof, float(x))))
    assert low - 1e-9 <= min(seen) and max(seen) <= high + 1e-9
    assert max(seen) > high - 2e-3 and min(seen) < low + 2e-3   # and the extremes are tight


def test_two_cells_is_duchis_mechanism():
    """m=2 at eps=1 gives N=2: a randomised response on {lo side, hi side}."""
    prof = P.from_bits(*HUMIDITY, 1.0, 2)
    grid = ExactGrid(prof)
    assert (prof.n_cells, prof.n_window) == (2, 1)
    q = Fraction(prof.threshold, 2 ** 64)
    assert grid.distribution(grid.lo) == {0: q, 1: 1 - q}
    assert grid.distribution(grid.hi) == {0: 1 - q, 1: q}
    assert math.isclose(float(q / (1 - q)), math.e, rel_tol=1e-15)
