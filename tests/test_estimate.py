"""Estimators: exact sums at n = 10^7, AVG* exact vs naive float64, intervals (exact tests)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal.mechanism.grid.estimate import Estimator, exact_sum

from conftest import HUMIDITY


def test_exact_sum_survives_int64_overflow():
    big = np.full(10_000, 2 ** 52 - 1, dtype=np.int64)   # int64 sum would overflow
    assert exact_sum(big) == 10_000 * (2 ** 52 - 1)
    assert exact_sum(np.array([], dtype=np.int64)) == 0


def test_avg_star_exact_at_ten_million_reports():
    prof = P.from_bits(*HUMIDITY, 1.0, 4)              # E = 56: Abar ~ 1.4e17
    est = Estimator(prof)
    n = 10 ** 7
    j = np.zeros(n, dtype=np.int64)
    j[: n // 3] = prof.n_cells - 1
    j[n // 3: n // 2] = 7
    total = exact_sum(j)
    assert total == (n // 3) * (prof.n_cells - 1) + (n // 2 - n // 3) * 7
    # Independent route: mean of the exact doubles x* minus the exact Abar of the paper.
    cont = prof.continuous
    abar = (Fraction(2) ** (prof.exponent + 1) - 2 * prof.ulp
            - Fraction(cont.hbar) - Fraction(cont.c))
    counts = {prof.n_cells - 1: n // 3, 7: n // 2 - n // 3, 0: n - n // 2}
    mean_x = sum(c * reports.to_value(prof, prof.k_lo + jj) for jj, c in counts.items()) / n
    assert est.avg_star(total, n) == mean_x - abar
    # The naive float64 version: one ulp of a double near Abar is 32, so it is far off.
    naive = est.avg_star_naive(j)
    assert abs(naive - float(mean_x - abar)) > 1.0


def test_calibrated_mean_inverts_the_mean_map():
    prof = P.from_bits(*HUMIDITY, 2.0, 3)
    est = Estimator(prof)
    g = est.grid
    for x in (Fraction(30), Fraction(50), Fraction("80.25")):
        m = g.mean_offset(x)                              # E[j|x], a Fraction
        assert est.calibrated_mean(m.numerator, m.denominator) == x


def test_bernstein_halfwidth_solves_its_equation():
    est = Estimator(P.from_bits(*HUMIDITY, 1.0, 8))
    for n in (10, 5000, 10 ** 6):
        lam = est.bernstein_halfwidth(n)
        tail = 2 * math.exp(-n * lam ** 2 / (2 * (est.var_bound + est.dev_bound * lam / 3)))
        assert math.isclose(tail, 0.01, rel_tol=1e-9)


def test_bernstein_ingredients_bound_the_exact_values():
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    est = Estimator(prof)
    g = est.grid
    for i in range(0, 61):
        x = g.lo + (g.hi - g.lo) * Fraction(i, 60)
        assert float(g.variance(x)) <= est.var_bound * (1 + 1e-12)
        assert all(abs(float(g.estimate(j) - x)) <= est.dev_bound * (1 + 1e-12)
                   for j in range(prof.n_cells))


def test_summary_keys_and_empty_input():
    est = Estimator(P.from_bits(*HUMIDITY, 1.0, 4))
    doc = est.summarize(np.array([3, 4, 5])).as_dict()
    assert {"n", "mean_calibrated", "avg_star", "ci99"} <= set(doc)
    assert doc["ci99"][0] < doc["mean_calibrated"] < doc["ci99"][1]
    with pytest.raises(ValueError):
        est.summarize(np.array([], dtype=np.int64))
