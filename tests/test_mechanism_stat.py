"""Statistical tests: the calibrated mean is unbiased on real samples.

Every threshold comes from Bernstein's inequality with the exact variance at x (valid at any
n, no normal approximation) and a per-check error rate chosen so that the whole file fails
falsely with probability at most 1e-6. Seeds are fixed, so a run is reproducible.
"""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.exact import ExactGrid
from zeal.mechanism.grid.bulk import sample_offsets_fast
from zeal.mechanism.grid.estimate import Estimator
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords

from conftest import BITS, EPSILONS, HUMIDITY

pytestmark = pytest.mark.statistical

FILE_FALSE_FAILURE = 1e-6
XS = (23.5, 35.58, 53.7, 83.9)
MEAN_CHECKS = len(EPSILONS) * len(BITS) * len(XS)
CELL_CHECKS = 2 * 15 * 3                       # scalar test below: 2 profiles, <= 15 cells, 3 xs
DELTA = FILE_FALSE_FAILURE / (MEAN_CHECKS + CELL_CHECKS)


def bernstein_threshold(n, var, bound, delta):
    """lambda with 2 exp(-n lambda^2 / (2 (var + bound lambda / 3))) = delta."""
    ell = math.log(2 / delta)
    b = ell * bound / 3
    return (b + math.sqrt(b * b + 2 * n * ell * var)) / n


@pytest.mark.parametrize("eps, bits", list(itertools.product(EPSILONS, BITS)))
def test_calibrated_mean_is_unbiased(eps, bits):
    prof = P.from_bits(*HUMIDITY, eps, bits)
    est = Estimator(prof)
    g = est.grid
    rng = np.random.Generator(np.random.PCG64(1000 * bits + int(eps * 10)))
    n = 200_000
    for x in XS:
        j = sample_offsets_fast(prof, np.full(n, x), rng)
        mean = est.calibrated_mean(int(j.sum()), n)
        lam = bernstein_threshold(n, float(g.variance(Fraction(x))), est.dev_bound, DELTA)
        assert abs(float(mean - Fraction(x))) <= lam, (x, float(mean), lam)


def test_the_mean_check_has_power():
    """The same check rejects the paper's AVG* on a coarse grid, where it is biased."""
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    est = Estimator(prof)
    n = 200_000
    x = 35.58
    j = sample_offsets_fast(prof, np.full(n, x), np.random.Generator(np.random.PCG64(5)))
    lam = bernstein_threshold(n, float(est.grid.variance(Fraction(x))), est.dev_bound, DELTA)
    assert abs(float(est.avg_star(int(j.sum()), n)) - x) > 10 * lam


@pytest.mark.parametrize("bits", [3, 4])
def test_scalar_sampler_cell_frequencies(bits):
    """The scalar reference's output frequencies match the exact distribution, cell by cell
    (Bernstein on each indicator: variance p(1-p), range 1)."""
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    grid = ExactGrid(prof)
    mech = ExactZeal(profile=prof, words=CounterWords(bytes([bits]) * 32))
    n = 30_000
    for x in (Fraction(23.5), Fraction("35.58"), Fraction("61.3")):
        counts = np.bincount([mech.sample_offset(x) for _ in range(n)], minlength=prof.n_cells)
        for j, p in grid.distribution(x).items():
            p = float(p)
            lam = bernstein_threshold(n, p * (1 - p), 1.0, DELTA)
            assert abs(counts[j] / n - p) <= lam, (float(x), j, counts[j] / n, p)
