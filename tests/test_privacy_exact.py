"""Exact privacy, reachability, unbiasedness and variance of the integer mechanism.

No sampling here: every probability is a Fraction (zeal.mechanism.grid.ExactGrid), and the
distribution-based checks recompute means and variances from P(j | x) directly.
"""
import itertools
import math
from decimal import Context, Decimal
from fractions import Fraction

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.exact import ExactGrid, pm_variance, worst_variance_ratio

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


# ---- issue 7 item 2: a profile that is not private is refused by host and device ------------
def _device_profile_module():
    import os
    import sys
    from conftest import ROOT
    firmware = os.path.join(ROOT, "firmware")
    if firmware not in sys.path:
        sys.path.insert(0, firmware)
    from zealfw import profile as FP
    return FP


def _hand_made(eps_bits, n, nc, t, bits=None, lo=0.0, hi=1.0, exponent=0):
    """A profile file built by hand, fingerprint recomputed: only the value checks can refuse it."""
    import json
    from test_profile import rehashed
    from zeal.mechanism.core.floatbits import float64_to_bits, hex64
    doc = {"format": P.FORMAT, "lo": hex64(float64_to_bits(lo)), "hi": hex64(float64_to_bits(hi)),
           "epsilon": hex64(eps_bits), "exponent": exponent,
           "bits": n.bit_length() if bits is None else bits,
           "n_cells": n, "n_window": nc, "threshold": t}
    return json.dumps(rehashed(doc))


def test_issue_profile_at_eps_1e6_loses_242_eps_and_is_refused():
    from zeal.mechanism.core.floatbits import float64_to_bits
    eps = 1e-6
    n, nc = 4502511373889014, 1
    FP = _device_profile_module()
    s, d = FP.exp_lower_bound(*Fraction(eps).as_integer_ratio())
    t = FP.threshold(n, nc, *Fraction(eps).as_integer_ratio())   # the device's own formula
    assert t == P.threshold(n, nc, Fraction(eps)) == 4096
    w = 2 ** 64
    p_hi, p_lo = Fraction(t, w) / nc, Fraction(w - t, w) / (n - nc)
    assert p_hi / p_lo <= Fraction(s, d)              # the only condition the device checked
    assert p_lo > p_hi                                # ... but the window is the rarer cell
    loss = p_lo / p_hi
    assert loss == Fraction(1501199875790165, 1500837124629671)
    assert loss > Fraction(s, d)                      # not eps-LDP: the loss exceeds e^eps
    # ln(loss)/eps = 241.670014199552497..., to 40 digits from the exact ratio
    ln = Context(prec=40).ln(Decimal(loss.numerator) / Decimal(loss.denominator))
    assert abs(ln / Decimal(eps) - Decimal("241.6700141995525")) < Decimal("1e-12")
    text = _hand_made(float64_to_bits(eps), n, nc, t)
    with pytest.raises(FP.ProfileError) as dev:
        FP.loads(text)
    assert dev.value.reason == "privacy"
    with pytest.raises(P.ProfileError) as host:
        P.loads(text)
    assert host.value.reason == "privacy"
    assert not P.is_private(n, nc, t, eps)


def test_equality_p_hi_p_lo_is_refused():
    """L = 1 (eps = 2^-1074: the Taylor sum stops at 1), N = 2, Nc = 1: T = 2^63 and
    T*No == (2^64 - T)*Nc. The slope s is 0: no information, and the estimator divides by 0.
    The old host check (>=) let it through; strict on both sides now."""
    FP = _device_profile_module()
    t = FP.threshold(2, 1, 1, 2 ** 1074)
    assert t == 2 ** 63 and t * 1 == (2 ** 64 - t) * 1
    text = _hand_made(1, 2, 1, t)
    for mod in (FP, P):
        with pytest.raises(mod.ProfileError) as info:
            mod.loads(text)
        assert info.value.reason == "privacy"


def test_every_built_profile_passes_the_device_privacy_checks():
    FP = _device_profile_module()
    for eps, bits in CASES:
        prof = P.from_bits(*HUMIDITY, eps, bits)
        dev = FP.loads(prof.to_json())
        assert (dev.n_cells, dev.n_window, dev.threshold) == (prof.n_cells, prof.n_window,
                                                             prof.threshold)
        assert P.is_private(prof.n_cells, prof.n_window, prof.threshold, prof.epsilon)


# ---- issue 7 item 3: the guarantee holds for the decimal epsilon as typed ---------------------
TYPED = ("0.05", "0.1", "0.3", "1", "2.2", "1e-6")


@pytest.mark.parametrize("typed", TYPED)
def test_privacy_ratio_is_below_e_to_the_typed_decimal(typed):
    exact = Fraction(typed)
    stored = P.epsilon_at_most(typed)
    assert Fraction(stored) <= exact                                  # rounded down
    assert math.nextafter(stored, math.inf) > exact or Fraction(stored) == exact  # the largest
    bound = P.exp_lower_bound(exact)                                  # certified, <= e^typed
    lo, hi = HUMIDITY if typed != "1e-6" else (0.0, 1.0)
    m_min, m_max = P.bits_range(lo, hi, typed)
    for bits in sorted({m_min, min(m_min + 2, m_max), 8 if m_min <= 8 <= m_max else m_max,
                        m_max}):
        prof = P.from_bits(lo, hi, typed, bits)
        assert prof.epsilon == stored
        grid = ExactGrid(prof)
        assert 1 < grid.privacy_ratio <= bound
    # the other exact forms give the same float
    assert P.epsilon_at_most(Decimal(typed)) == P.epsilon_at_most(exact) == stored


@pytest.mark.parametrize("typed", ["0.05", "0.1", "2.2"])
def test_the_nearest_float_broke_the_typed_guarantee(typed):
    """Before: the profile stored float(typed), which is above the decimal for these."""
    assert Fraction(float(typed)) > Fraction(typed)
    bound = P.exp_lower_bound(Fraction(typed))
    for bits in (2, 4, 8, 16):
        old = P.from_bits(*HUMIDITY, float(typed), bits)       # a float is taken as it is
        assert ExactGrid(old).privacy_ratio > bound             # above e^typed (certified)
        new = P.from_bits(*HUMIDITY, typed, bits)
        assert ExactGrid(new).privacy_ratio <= bound


def test_typed_epsilon_errors():
    for bad in ("abc", "nan", "inf", "-0.1", "0", "20.0000001", "1" * 101, "1e-999999999"):
        with pytest.raises(P.ProfileError, match="epsilon"):
            P.from_bits(*HUMIDITY, bad, 4)
    assert P.epsilon_at_most("20") == 20.0
    assert P.epsilon_at_most("1e-999999999") == 0.0          # refused, without a huge integer
