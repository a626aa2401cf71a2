"""Each kind's exact privacy and variance figures (kinds.of(p).privacy / .variance), checked
against hand-derived small cases and against computations written here from the profile's own
numbers (not the kind's code path).
"""
import math
from decimal import Decimal, getcontext
from fractions import Fraction as F

import pytest

from zeal.mechanism import kinds
from zeal.mechanism.grid.profile import from_bits
from zeal.mechanism.multi import profile as MP
from zeal.mechanism.multi.mechanism import Categorical, Numeric
from zeal.mechanism.shuffle import mechanism as S
from zeal.mechanism.shuffle import profile as SP
from zeal.mechanism.table import profile as TP

KEYS = {"name", "of", "worst", "worst_upper", "worst_input", "data_mean", "data_readings"}


def _exp(eps: F) -> F:
    """e^eps to 40 digits, as a Fraction, for `bound < e^eps` (the bound is a certified lower
    bound of e^eps; epsilon here is a short binary fraction, exact as a float)."""
    getcontext().prec = 40
    return F((Decimal(eps.numerator) / Decimal(eps.denominator)).exp())


def _profiles():
    grid = from_bits(0.0, 10.0, 1.0, 3)
    table = TP.build(0.0, 10.0, 1.0, "pm", 3)
    multi = MP.build([Numeric("t", 0.0, 40.0), Numeric("h", 0.0, 100.0, mechanism="duchi"),
                      Categorical("c", 3)], 2.0, k=2)
    shuffle = SP.build_from(epsilon="1", delta="1e-6", n=10000, d=2, k=4, t=1,
                            ranges=[(0.0, 10.0), (-5.0, 5.0)])
    return {"grid": grid, "table": table, "multi": multi, "shuffle": shuffle}


PROFILES = _profiles()


# ---- privacy -----------------------------------------------------------------------------------
def test_grid_privacy_ratio_from_its_window_probabilities():
    """P(j | jL) = q/Nc in the window, (1-q)/No outside (q = T/2^64): the ratio is
    (q/Nc) / ((1-q)/No), written here from the profile's N, Nc, T."""
    p = PROFILES["grid"]
    q = F(p.threshold, 2 ** 64)
    n_out = p.n_cells - p.n_window
    mine = (q / p.n_window) / ((1 - q) / n_out)
    fig = kinds.of(p).privacy(p)
    assert fig["ratio"] == mine
    assert fig["delta"] is None and fig["covers"] == "one report"
    assert fig["ratio"] <= fig["bound"] < _exp(fig["epsilon"])


def test_table_privacy_ratio_is_the_largest_column_ratio_of_its_rows():
    p = PROFILES["table"]
    rows = [[F(w, sum(r)) for w in r] for r in p.weights]
    mine = max(max(col) / min(col) for col in zip(*rows))
    fig = kinds.of(p).privacy(p)
    assert fig["ratio"] == mine <= fig["bound"] < _exp(fig["epsilon"])


def test_multi_privacy_ratio_is_the_product_of_the_k_largest_attribute_ratios():
    p = PROFILES["multi"]
    ratios = []
    for a in p.attributes:
        if kinds.is_profile(a):        # a numeric attribute: a grid or table profile
            ratios.append(kinds.of(a).privacy(a)["ratio"])
        else:
            # OUE, p = 1/2, q = 1/(r + 1), r = ratio_num / 2^32: two values differ in two
            # bits, (p/q) ((1 - q)/(1 - p)) = ((r + 1)/2) (2r/(r + 1)) = r
            ratios.append(F(a.ratio_num, 2 ** 32))
    top = sorted(ratios, reverse=True)[:p.k]
    fig = kinds.of(p).privacy(p)
    assert fig["ratio"] == math.prod(top)
    assert fig["ratio"] <= fig["bound"] < _exp(fig["epsilon"])


def test_shuffle_privacy_is_the_batch_guarantee_not_a_ratio():
    p = PROFILES["shuffle"]
    fig = kinds.of(p).privacy(p)
    assert fig["ratio"] is None and fig["bound"] is None
    assert (fig["epsilon"], fig["delta"]) == (F(p.params.epsilon), F(p.params.delta))
    assert "shuffler" in fig["covers"]


# ---- variance ----------------------------------------------------------------------------------
def test_shuffle_message_variance_small_case_by_hand():
    """k = 2, gamma = 1/4. At x = 0: y/k is 0 w.p. 3/4 + 1/12, 1/2 and 1 w.p. 1/12 each:
    E = 1/8, E[(y/k)^2] = 5/48, Var(y/k) = 17/192, Var z = 17/192 * 16/9 = 17/108.
    At x = 1/2 (xk = 1, no rounding): the uniform's variance 1/6 times 1/4 = 1/24, / (9/16)
    = 2/27. On [0, 1/2] the variance is 17/108 + x/3 - x^2 (x^2 coefficient -1): its vertex
    x = 1/6 gives 17/108 + 1/18 - 1/36 = 5/27, the worst."""
    p = S.Params(epsilon=F(1), delta=F(1, 10 ** 6), n=1000, d=2, k=2, t=1, gamma=F(1, 4),
                 regime="balle-t1")
    assert S.message_variance(p, 0) == F(17, 108)
    assert S.message_variance(p, F(1, 2)) == F(2, 27)
    assert S.message_variance(p, F(1, 4)) == F(17, 108) + F(1, 12) - F(1, 16)
    assert S.worst_message_variance(p) == (F(5, 27), F(1, 6))


@pytest.mark.parametrize("k, gamma", [(3, F(1, 5)), (5, F(2, 7)), (1, F(1, 2))])
def test_shuffle_message_variance_against_the_enumerated_law(k, gamma):
    """The randomiser's law of y enumerated (blanket uniform over 0..k, else randomised
    rounding), the estimate z = (y/k - gamma/2)/(1 - gamma) unbiased, its variance exact; the
    worst is at least every grid value and is reached at its reported input."""
    p = S.Params(epsilon=F(1), delta=F(1, 10 ** 6), n=1000, d=1, k=k, t=1, gamma=gamma,
                 regime="balle-t1")

    def enumerated(x):
        law = {y: gamma / (k + 1) for y in range(k + 1)}
        base = math.floor(x * k)
        frac = x * k - base
        law[base] += (1 - gamma) * (1 - frac)
        if frac:
            law[base + 1] += (1 - gamma) * frac
        z = {y: (F(y, k) - gamma / 2) / (1 - gamma) for y in law}
        mean = sum(law[y] * z[y] for y in law)
        assert mean == x
        return sum(law[y] * (z[y] - mean) ** 2 for y in law)

    grid = [F(i, 60 * k) for i in range(60 * k + 1)]
    for x in grid:
        assert S.message_variance(p, x) == enumerated(x)
    worst, at = S.worst_message_variance(p)
    assert worst == enumerated(at)
    assert all(enumerated(x) <= worst for x in grid)


@pytest.mark.parametrize("kind", ["grid", "table"])
def test_scalar_kinds_worst_variance_is_reached_and_bounds_the_range(kind):
    p = PROFILES[kind]
    (entry,) = kinds.of(p).variance(p)
    assert set(entry) == KEYS and entry["worst"] == entry["worst_upper"]
    mech = p.table if kind == "table" else None
    if mech is None:
        from zeal.mechanism.grid.exact import ExactGrid
        mech = ExactGrid(p)
    lo, hi = F(p.lo), F(p.hi)
    xs = [lo + (hi - lo) * F(i, 400) for i in range(401)]
    assert max(mech.variance(x) for x in xs) <= entry["worst"] == mech.variance(
        entry["worst_input"])


@pytest.mark.parametrize("kind", ["grid", "table"])
def test_scalar_kinds_data_variance_clamps_like_the_device(kind):
    """Readings outside [lo, hi] count as lo and hi (the device clamps first)."""
    p = PROFILES[kind]
    k = kinds.of(p)
    lo, hi = F(p.lo), F(p.hi)
    inside = k.variance(p, [lo, hi, (lo + hi) / 2])[0]
    outside = k.variance(p, [lo - 5, hi + 1000, (lo + hi) / 2])[0]
    assert outside["data_mean"] == inside["data_mean"] and outside["data_readings"] == 3
    at_lo = k.variance(p, [lo])[0]["data_mean"]
    at_hi = k.variance(p, [hi])[0]["data_mean"]
    assert k.variance(p, [lo, hi])[0]["data_mean"] == (at_lo + at_hi) / 2
    assert k.variance(p)[0]["data_mean"] is None
    # one reading, at the worst input: the data figure is the worst variance itself
    worst = k.variance(p)[0]
    assert k.variance(p, [worst["worst_input"]])[0]["data_mean"] == worst["worst"]


def test_multi_variance_per_attribute():
    p = PROFILES["multi"]
    m = p.multi()
    out = kinds.of(p).variance(p, [(10.0, 50.0, 0), (20.0, 150.0, 2)])
    assert [e["name"] for e in out] == list(p.names)
    for j, e in enumerate(out):
        assert set(e) == KEYS
        assert e["worst"] <= e["worst_upper"]
        assert (e["worst"], e["worst_upper"]) == m.worst_variance_bounds(j)
    # the numeric attribute t: readings 10 and 20 inside its range, each variance exact
    assert out[0]["data_mean"] == (m.variance(0, F(10)) + m.variance(0, F(20))) / 2
    # h: 150 clamps to 100
    assert out[1]["data_mean"] == (m.variance(1, F(50)) + m.variance(1, F(100))) / 2
    assert out[2]["data_mean"] is None      # categorical: no data figure


def test_shuffle_variance_per_coordinate_in_its_units():
    p = PROFILES["shuffle"]
    worst, at = S.worst_message_variance(p.params)
    out = kinds.of(p).variance(p, [(2.5, 0.0), (20.0, -5.0)])
    assert [e["name"] for e in out] == ["coordinate 0", "coordinate 1"]
    (lo0, hi0), (lo1, hi1) = [(F(a), F(b)) for a, b in p.ranges]
    assert out[0]["worst"] == (hi0 - lo0) ** 2 * worst
    assert out[0]["worst_input"] == lo0 + (hi0 - lo0) * at
    assert out[0]["data_mean"] == 100 * (S.message_variance(p.params, F(1, 4))
                                         + S.message_variance(p.params, 1)) / 2
    assert out[1]["data_mean"] == 100 * (S.message_variance(p.params, F(1, 2))
                                         + S.message_variance(p.params, 0)) / 2
