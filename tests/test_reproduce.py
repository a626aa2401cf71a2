"""zeal reproduce (zeal.analysis.reproduce): the figures' numbers, not only their files.

- exact tools: the exact mean of doubles; the inverse CDF split into monotone pieces equals
  the paper's sampler bit for bit; `reachable` finds every output the sampler produces;
- holes: positive for the float64 sampler without Abar, zero for the exact mechanism;
- statistics (fixed seeds, thresholds from Bernstein's inequality at a stated false-failure
  rate): the exact mechanism's relative error stays inside its predicted interval at every
  grid, while the float64 sampler at the same large Abar is measurably biased;
- the quick run end to end: PNG files, the report's headline table, and its figures.
"""
import argparse
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from zeal.commands import reproduce as reproduce_command
from zeal.analysis import reproduce as rp
from zeal.mechanism.grid import exact as mgrid
from zeal.mechanism.grid.bulk import sample_offsets_fast
from zeal.mechanism.grid.estimate import Estimator
from zeal.mechanism.grid.profile import from_exponent
from zeal.paper import formulas as pf
from zeal.paper import sampler as ps

FALSE_FAILURE = 1e-6   # per statistical assertion


def bernstein_halfwidth(n, var, dev, rate=FALSE_FAILURE):
    """lambda with 2 exp(-n lambda^2 / (2 (var + dev lambda / 3))) = rate: P(|mean - mu| >=
    lambda) <= rate for n i.i.d. variables of variance var and |X - mu| <= dev."""
    big_l = math.log(2 / rate)
    b = big_l * dev / 3
    return (b + math.sqrt(b * b + 2 * n * big_l * var)) / n


def test_exact_mean_is_exact():
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.normal(0, 1, 500) * 10.0 ** rng.integers(-30, 30, 500),
                        [1e300, -1e300, 5e-324, 2.0 ** 60, 1.0]])
    assert rp.exact_mean(v) == sum(Fraction(float(x)) for x in v) / v.size


@pytest.mark.parametrize("abar", [0.0, None])
@pytest.mark.parametrize("x", [5.0, 7.25, 15.0])
def test_pieces_equal_the_paper_sampler(abar, x):
    lo, hi, eps = 5.0, 15.0, 1.0
    if abar is None:
        abar = pf.abar(lo, hi, eps, pf.e_vul(lo, hi, eps))
    pieces, _ = rp._segments(lo, hi, eps, abar, x)
    rng = np.random.default_rng(2)
    for a, b, f in pieces:
        k = np.concatenate([[a, b, a + 1, b - 1], rng.integers(a, b + 1, 2000)])
        k = k[(k >= a) & (k <= b)]
        u = k.astype(np.float64) * 2.0 ** -53
        assert np.array_equal(f(u), ps.inverse_cdf(lo, hi, eps, abar, x, u))
    # the pieces cover every k exactly once
    spans = sorted((a, b) for a, b, _ in pieces)
    assert spans[0][0] == 0 and spans[-1][1] == 2 ** 53 - 1
    assert all(spans[i][1] + 1 == spans[i + 1][0] for i in range(len(spans) - 1))


@pytest.mark.parametrize("abar", [0.0, 97.58510652577306])
def test_reachable_finds_every_sampled_output(abar):
    # an output the sampler produced is reachable by definition: no false negatives. (No
    # false positives either: a float is declared reachable only when piece(k) == y.)
    lo, hi, eps, x = 5.0, 15.0, 1.0, 9.0
    rng = np.random.default_rng(3)
    ys = np.unique(ps.sample(lo, hi, eps, abar, np.full(3000, x), rng))
    assert rp.reachable(lo, hi, eps, abar, x, ys).all()
    # and the float just beside a reachable output at Abar = 0 is often not reachable
    if abar == 0.0:
        nb = np.nextafter(ys, np.inf)
        assert not rp.reachable(lo, hi, eps, abar, x, nb).all()


def test_holes_positive_for_float_zero_for_exact():
    r = rp.holes(quick=True)
    by = {c["E"]: c["counts"] for c in r["cases"]}
    zero = by[None]
    assert zero["a_not_b"] + zero["b_not_a"] > 0          # the paper's leak, counted exactly
    assert zero["floats"] >= zero["a"] > 0
    # the exact mechanism: every cell reachable from every input, cell by cell
    e = r["exact"]
    assert e["a_not_b"] == 0 and e["b_not_a"] == 0 and e["p_lo_positive"]
    # cross-check of the cell-by-cell count with the grid's own distributions
    prof = from_exponent(5.0, 15.0, 1.0, r["e_vul"] + 40)
    g = mgrid.ExactGrid(prof)
    assert min(g.distribution(Fraction(5)).values()) > 0
    assert min(g.distribution(Fraction(15)).values()) > 0


def test_exact_unbiased_where_float_sampler_is_biased():
    """AbarTooBigError's claim at one large Abar: Hbar = 1000, h = 100, eps = 1, x1 = 1000.

    Exact mechanism, at its coarsest grids (m = 2..4, Abar near 4.6e18): the calibrated mean of
    n samples must lie within the Bernstein half-width of x1 (exact variance, exact deviation
    bound), false-failure rate 1e-6 per grid. Float64 sampler at the same Abar: its mean
    x1* - Abar, taken exactly, must lie OUTSIDE the half-width computed with the continuous
    mechanism's variance and the widest deviation its outputs allow: a bias larger than any
    fluctuation at rate 1e-6. (Its bias at these Abar is 2-6 % of x1, far above the
    half-width of about 0.3 %: the test's power is not in doubt.)
    """
    lo, hi, eps, x1, n = 900.0, 1100.0, 1.0, 1000.0, 100000
    e_enc, e_vul, e_max = rp.exponents(lo, hi, eps)
    rng = np.random.default_rng(11)
    for e in (e_max - 2, e_max - 1, e_max):
        prof = from_exponent(lo, hi, eps, e)
        g, est = mgrid.ExactGrid(prof), Estimator(prof)
        j = sample_offsets_fast(prof, np.full(n, x1), rng)
        total = rp._offset_totals(j.reshape(1, -1))[0]
        err = abs(float(est.calibrated_mean(total, n) - Fraction(x1)))
        half = bernstein_halfwidth(n, float(g.variance(Fraction(x1))), est.dev_bound)
        assert err <= half, (e, prof.bits, err, half)
        # the float64 sampler at the same Abar
        ab = pf.abar(lo, hi, eps, e)
        s = ps.sample(lo, hi, eps, ab, np.full(n, x1), rng)
        bias = abs(float(rp.exact_mean(s) - Fraction(ab) - Fraction(x1)))
        c = pf.c_const(lo, hi, eps)
        dev = 2 * c + 2 * 2.0 ** (e - 52)   # any output of [x*_min, x*_max], rounded
        half_f = bernstein_halfwidth(n, float(pf.variance(lo, hi, eps, x1)), dev)
        assert bias > half_f, (e, bias, half_f)


def test_relative_error_on_data_inside_predicted_interval():
    """percErrorOnAvgVaryingEps for the exact mechanism: on the humidity data, 20 runs at
    m = 2, 4, 8 and eps = 1; every run's |delta_AVG| must be within the Bernstein half-width
    for n independent reports (exact per-reading variance, exact deviation bound), at a total
    false-failure rate of 1e-6 (1e-6 / 60 per run)."""
    d = rp.paper_datasets()[0]
    rng = np.random.default_rng(12)
    from zeal.mechanism.grid.profile import from_bits
    for m in (2, 4, 8):
        prof = from_bits(d.lo, d.hi, 1.0, m)
        est = Estimator(prof)
        err = rp.rel_errors_exact(d, prof, rp.exact_run(d, prof, rng, 20))
        var = (d.exact_sd(prof) * d.n) ** 2 / d.n      # mean variance per report
        half = bernstein_halfwidth(d.n, var, est.dev_bound, FALSE_FAILURE / 60)
        assert np.all(np.abs(err) * float(d.mean) <= half), (m, err, half)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    res = rp.reproduce(str(out), quick=True, quiet=True)
    return out, res


def test_quick_run_writes_figures_and_report(quick_run):
    out, res = quick_run
    names = ["AbarTooBigError.png", "probBoundOnErrorAVG.png", "percErrorOnAvgVaryingEps.png",
             "CRandTR.png", "holesInvCdf.png"]
    for name in names:
        with open(os.path.join(out, name), "rb") as fh:
            head = fh.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert w >= 600 and h >= 400
    report = (out / "report.md").read_text()
    for name in names:
        assert "(%s)" % name in report
    for claim in ("0.8759", "94 %", "95 %", "2 %"):
        assert claim in report


def test_quick_run_figures(quick_run):
    _, res = quick_run
    ab = res["abar"]
    # the float64 sampler breaks (|delta_E| -> 100 %) beyond the exact grids' last exponent
    assert abs(ab["float"]["delta_E"][-1]) > 0.5
    # TR of the exact mechanism is m/64 and the packed codec stores about m bits per report
    for c in res["cr"]:
        ex = c["exact"]
        assert ex["tr"] == [m / 64 for m in ex["m"]]
        if "packed" in ex["cr"]:
            for m, cr in zip(ex["m"], ex["cr"]["packed"]):
                assert m / 64 <= cr <= m / 64 + 0.01
        # every codec's size is at least the entropy bound (where computed)
        for name, crs in ex["cr"].items():
            for cr, ent in zip(crs, ex["entropy"]):
                if ent == ent:
                    assert cr >= ent * (1 - 1e-9), (name, cr, ent)
        h = c["headline"]
        if "greedygd" in h["float_zero"]["cr"]:
            # the paper's direction: the exact grid compresses far better than Abar = 0
            assert h["exact_best"]["cr"]["greedygd"] < 0.2 * h["float_zero"]["cr"]["greedygd"]


def test_cli_registration(tmp_path):
    parser = argparse.ArgumentParser(prog="zeal")
    sub = parser.add_subparsers(dest="cmd")
    reproduce_command.add(sub)
    args = parser.parse_args(["reproduce", "--out", str(tmp_path), "--quick"])
    assert args.func is reproduce_command.run and args.quick and args.out == str(tmp_path)
    with pytest.raises(SystemExit):
        parser.parse_args(["reproduce"])        # --out is required
