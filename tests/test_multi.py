"""Multi-attribute reports (seed 001, Algorithm 4 + OUE): exact privacy and variance checks,
then seeded statistical checks of the estimators (each with its false-failure rate)."""
import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from zeal.errors import ProfileError
from zeal.mechanism.multi import mechanism as multi
from zeal.mechanism.multi.mechanism import Categorical, Multi, MultiEstimator, Numeric
from zeal.mechanism.grid.profile import exp_lower_bound
from zeal.mechanism.table.mechanism import Table
from zeal.mechanism.core.words import CounterWords, ListWords

LN3 = F(10986123, 10 ** 7)   # 1.0986123 > ln 3 = 1.09861228...: e^LN3 >= 3
FALSE_FAILURE = F(1, 10 ** 6)   # per test, split evenly over its checks (union bound)


def _duchi(ratio):
    """A callable building Duchi's 2-cell table with privacy ratio `ratio` on [lo, hi]."""
    return lambda lo, hi, eps: Table(lo, hi, eps, [[ratio, 1], [1, ratio]])


# ---- Equation 12 ---------------------------------------------------------------------------------
def test_eq12_by_hand():
    # k = max{1, min{d, floor(eps/2.5)}}: eps = 1 -> floor(0.4) = 0 -> 1; 4.9 -> 1; 5 -> 2;
    # 7.5 -> 3; 100 with d = 3 -> min(3, 40) = 3
    assert multi.eq12_k(1, 3) == 1
    assert multi.eq12_k(F(49, 10), 3) == 1
    assert multi.eq12_k(5, 3) == 2
    assert multi.eq12_k(F(15, 2), 4) == 3
    assert multi.eq12_k(100, 3) == 3
    assert Multi([Numeric("a", 0, 1), Numeric("b", 0, 1)], 1).k == 1
    with pytest.raises(ProfileError):
        Multi([Numeric("a", 0, 1)], 1, k=2)
    with pytest.raises(ProfileError):
        Multi([Numeric("a", 0, 1), Numeric("a", 0, 2)], 1)


# ---- privacy, exactly ------------------------------------------------------------------------------
def test_hand_worked_report_ratio():
    # d = 3, k = 2, eps = 2 LN3, so each sampled attribute gets LN3 (e^LN3 >= 3). Attributes 0 and
    # 2 are Duchi with ratio 3 (rows (3, 1), (1, 3) on [-1, 1]), attribute 1 Duchi with ratio 2.
    # Output o = (S = {0, 2}, y = (+, +)): P(o | x) = C(3,2)^-1 P0(+|x0) P2(+|x2). At x = (1, ., 1):
    # (1/3)(3/4)(3/4) = 3/16; at x' = (-1, ., -1): (1/3)(1/4)(1/4) = 1/48; ratio 9 = 3 * 3, the
    # product of the two largest ratios. S = {0, 1} gives at most 3 * 2 = 6. So R = 9 <= e^(2 LN3).
    m = Multi([Numeric("a", -1, 1, mechanism=_duchi(3)), Numeric("b", -1, 1, mechanism=_duchi(2)),
               Numeric("c", -1, 1, mechanism=_duchi(3))], 2 * LN3, k=2)
    assert m.attribute_ratios() == [3, 2, 3]
    assert m.privacy_ratio() == 9
    cert = m.privacy_certificate()
    assert cert["each_attribute_within_its_share"] and cert["budget_sum_within_epsilon"]
    assert m.is_private()
    assert 9 <= exp_lower_bound(F(m.epsilon))
    # the same three tables with k = 1 at the full budget: one attribute per report, R = 3
    assert Multi(m.attributes, 2 * LN3, k=1).privacy_ratio() == 3
    # ratio 3 at a share of eps/2 < ln 3 breaks the budget and is refused when built
    with pytest.raises(ProfileError):
        Multi(m.attributes, 2, k=2)


def _brute_force_ratio(m):
    """max over outputs and tuple pairs of P(o | x)/P(o | x'), by enumerating every subset,
    every output and every extreme input (the anchors of a table: between anchors the law is a
    mixture of two anchor rows, so each output's probability lies between theirs; every value of
    a categorical attribute). Independent of Multi.privacy_ratio."""
    laws = []   # per attribute: {input: {output: probability}}
    for part in m.parts:
        if isinstance(part, multi._CategoricalPart):
            c = len(part.domain)
            law = {}
            for v in range(c):
                out = {}
                for bits in itertools.product((0, 1), repeat=c):
                    p = F(1)
                    for i, b in enumerate(bits):
                        pr = part.p if i == v else part.q
                        p *= pr if b else 1 - pr
                    out[bits] = p
                law[v] = out
        else:
            tab = part.table
            law = {r: dict(enumerate(tab.probs[r])) for r in range(tab.anchors + 1)}
        laws.append(law)
    best = F(0)
    for subset in itertools.combinations(range(m.d), m.k):
        # the ratio factorises over the subset; enumerate jointly anyway (small cases)
        inputs = [list(laws[j]) for j in subset]
        outputs = [list(next(iter(laws[j].values()))) for j in subset]
        for ys in itertools.product(*outputs):
            probs = []
            for xs in itertools.product(*inputs):
                p = F(1, math.comb(m.d, m.k))
                for j, x, y in zip(subset, xs, ys):
                    p *= laws[j][x][y]
                probs.append(p)
            if min(probs) > 0:
                best = max(best, max(probs) / min(probs))
    return best


def test_report_ratio_equals_brute_force_with_oue():
    atts = [Numeric("t", 0, 10, mechanism="duchi"), Categorical("state", ("off", "idle", "on")),
            Numeric("h", 20, 80, mechanism=_duchi(2)), Categorical("door", ("shut", "open"))]
    for k in (1, 2, 3):
        m = Multi(atts, 3, k=k)
        assert m.privacy_ratio() == _brute_force_ratio(m)
        assert m.is_private()
        assert m.privacy_ratio() <= exp_lower_bound(F(m.epsilon))


def test_oue_probabilities_are_certified():
    for eps in (F(1, 3), F(1), F(5, 2), F(7)):
        part = multi._CategoricalPart(Categorical("c", ("a", "b")), eps)
        assert part.p == F(1, 2)
        ratio = part.p * (1 - part.q) / ((1 - part.p) * part.q)
        assert ratio == part.ratio <= exp_lower_bound(eps)
        # and it is close to e^eps from below: the rational loses less than 2^-31 relative
        assert ratio * (1 + F(1, 2 ** 31)) > exp_lower_bound(eps)


def test_grid_shares_stay_within_the_budget():
    atts = [Numeric("light", -1, 99.92), Numeric("humidity", 23.5, 83.9),
            Categorical("state", ("a", "b", "c"))]
    for eps, k in ((1, 1), (F(6), 2), (F(9), 3)):
        m = Multi(atts, eps, k=k)
        for part in m.parts:
            assert part.epsilon <= F(m.epsilon) / k
            assert part.ratio <= exp_lower_bound(part.epsilon)
        assert m.is_private()


def test_canonical_form_and_fingerprint():
    atts = [Numeric("light", -1, 99.92), Categorical("state", ("a", "b"))]
    a, b = Multi(atts, 1), Multi(atts, 1)
    assert a.canonical_bytes() == b.canonical_bytes() and a.fingerprint == b.fingerprint
    assert Multi(atts, 1, k=2).fingerprint != a.fingerprint
    assert Multi(atts, 2).fingerprint != a.fingerprint
    doc = a.canonical()
    assert doc["format"] == "zeal-multi/1" and doc["k"] == 1
    assert [x["kind"] for x in doc["attributes"]] == ["grid", "oue"]
    assert a.index_bits == 1 and Multi(atts * 1 + [Numeric("x", 0, 1)], 1).index_bits == 2


# ---- variance, exactly ------------------------------------------------------------------------------
def test_hand_worked_variance():
    # Duchi at ratio 3 on [-1, 1]: g = (-2, 2), sigma^2(x) = 4 - x^2 (test_table's hand case).
    # d = 3, k = 1: Var = 3 (sigma^2 + x^2) - x^2 = 12 - x^2: 12 at 0, 11 at +-1, worst 12.
    m = Multi([Numeric(n, -1, 1, mechanism=_duchi(3)) for n in "abc"], LN3, k=1)
    assert m.variance(0, 0) == 12 and m.variance(0, 1) == 11 and m.variance(1, F(1, 2)) == F(47, 4)
    assert m.worst_variance_bounds(0) == (12, 12)
    # k = d = 3 at eps = 3 LN3 is the split baseline: Var = sigma^2 = 4 - x^2
    s = Multi(m.attributes, 3 * LN3, k=3)
    assert s.variance(0, F(1, 2)) == F(15, 4) and s.worst_variance_bounds(0) == (4, 4)


def _report_estimate_law(m, j, x):
    """{Z: probability} of one report's estimate of numeric attribute j at reading x,
    enumerated: carried with probability k/d (then Z = mid + (d/k)(g(y) - mid) with the
    table's law), else Z = mid."""
    part = m.parts[j]
    carried = F(m.k, m.d)
    law = {part.mid: 1 - carried}
    for y, p in enumerate(part.table.distribution(x)):
        z = part.mid + m.scale * (part.values[y] - part.mid)
        law[z] = law.get(z, 0) + carried * p
    return law


def test_variance_matches_enumeration():
    atts = [Numeric("t", -40, 85, bits=3, mechanism="hm"), Numeric("h", 0, 100, mechanism="duchi"),
            Categorical("s", ("a", "b", "c")), Numeric("p", 900, 1100, bits=3, mechanism="pm")]
    for k in (1, 2, 4):
        m = Multi(atts, 4, k=k)
        for j in (0, 1, 3):
            part = m.parts[j]
            for x in (part.lo, part.mid, part.lo + (part.hi - part.lo) * F(2, 7), part.hi):
                law = _report_estimate_law(m, j, x)
                mean = sum(z * p for z, p in law.items())
                assert mean == x                                   # unbiased, exactly
                assert sum((z - x) ** 2 * p for z, p in law.items()) == m.variance(j, x)
        # categorical value v's indicator estimate Z = (d/k) 1[carried] (B - q)/(p - q)
        part = m.parts[2]
        for truth in range(3):
            for v in range(3):
                a = int(v == truth)
                pb = part.q + a * (part.p - part.q)
                zs = {0: 1 - F(m.k, m.d),
                      m.scale * (1 - part.q) / (part.p - part.q): F(m.k, m.d) * pb,
                      m.scale * -part.q / (part.p - part.q): F(m.k, m.d) * (1 - pb)}
                assert sum(z * p for z, p in zs.items()) == a
                assert sum((z - a) ** 2 * p for z, p in zs.items()) == m.variance(2, (v, truth))


def test_worst_variance_is_the_maximum():
    # the exact maximum is attained (at some reading) and no reading on a fine grid exceeds it
    atts = [Numeric("light", -1, 99.92), Numeric("t", -40, 85, bits=3, mechanism="hm"),
            Numeric("h", 0, 100, mechanism="duchi")]
    m = Multi(atts, 1)
    for j, part in enumerate(m.parts):
        lower, upper = m.worst_variance_bounds(j)
        assert lower == upper
        xs = [part.lo + (part.hi - part.lo) * F(i, 499) for i in range(500)]
        assert max(m.variance(j, x) for x in xs) <= upper
        assert upper <= part.variance_upper() * m.scale + (m.scale - 1) * part.h ** 2


# ---- the goal: d = 3, eps = 1 ---------------------------------------------------------------
AARHUS_RANGES = {"light": (-1.0, 99.92), "humidity": (23.5, 83.9), "noise": (49.0, 101.0),
                 "temperature": (-41.0, 37.45)}


def test_goal_two_times_lower_than_splitting_exact():
    # Algorithm 4 (k from Eq. 12 = 1, the default grid at eps = 1) against every attribute at
    # eps/3, all sent, with the best of the grid, Duchi, HM and PM (4 bits) at eps/3: the exact
    # worst-case per-attribute variance must be at least 2x lower.
    names = ("light", "humidity", "noise")
    alg4 = Multi([Numeric(n, *AARHUS_RANGES[n]) for n in names], 1)
    assert alg4.k == 1 and alg4.is_private()
    for mech in ("grid", "duchi", "hm", "pm"):
        split = Multi([Numeric(n, *AARHUS_RANGES[n], bits="auto" if mech == "grid" else 4,
                               mechanism=mech) for n in names], 1, k=3)
        assert split.is_private()
        for j in range(3):
            assert 2 * alg4.worst_variance_bounds(j)[1] <= split.worst_variance_bounds(j)[0]


# ---- samplers ----------------------------------------------------------------------------------------
def test_exact_subset_by_hand():
    # uniform_below(n, w) = w // floor(2^64/n) when below n. d = 3, k = 2:
    # words (0, 0): i = 0 swaps 0 with 0, i = 1 swaps 1 with 1: S = {0, 1};
    # words (2^64 - 2, 0): floor(2^64/3) = (2^64 - 1)/3, so 2^64 - 2 gives u = 2: i = 0 takes
    # r = 2 (perm 2,1,0), i = 1 keeps 1: S = {1, 2}. 2^64 - 1 gives u = 3: rejected, next word.
    assert multi.sample_subset(3, 2, ListWords([0, 0])) == [0, 1]
    assert multi.sample_subset(3, 2, ListWords([2 ** 64 - 2, 0])) == [1, 2]
    assert multi.sample_subset(3, 2, ListWords([2 ** 64 - 1, 2 ** 64 - 2, 0])) == [1, 2]
    assert multi.sample_subset(3, 3, ListWords([0, 0, 0])) == [0, 1, 2]


def test_exact_report_shape_and_words():
    atts = [Numeric("light", -1, 99.92), Numeric("t", -40, 85, bits=3, mechanism="hm"),
            Categorical("s", ("a", "b", "c"))]
    m = Multi(atts, 6, k=2)
    words = CounterWords(bytes(32))
    for _ in range(200):
        rep = multi.sample_report(m, (F(50), 20.5, "b"), words)
        idx = [j for j, _ in rep]
        assert len(rep) == 2 and idx == sorted(set(idx))
        for j, y in rep:
            assert 0 <= y < (1 << 3 if j == 2 else m.parts[j].cells)
    # the same key gives the same reports
    a = [multi.sample_report(m, (F(50), 20.5, "b"), CounterWords(bytes(32))) for _ in range(3)]
    assert a[0] == a[1] == a[2]


def _binomial_upper(n, p, rate):
    """Smallest t with P(Bin(n, p) > t) <= rate (exact tail in Fractions)."""
    p = F(p)
    tail = F(1)
    for t in range(n + 1):
        tail -= math.comb(n, t) * p ** t * (1 - p) ** (n - t)
        if tail <= rate:
            return t
    return n


def test_exact_sampler_subset_frequencies():
    # each of the C(4, 2) = 6 subsets has probability 1/6; over 1200 exact reports each count is
    # Bin(1200, 1/6). Two-sided exact binomial bounds, 12 checks, FALSE_FAILURE split evenly.
    m = Multi([Numeric(n, 0, 1, mechanism="duchi") for n in "abcd"], 4, k=2)
    words = CounterWords(bytes.fromhex("11" * 32))
    n, counts = 1200, {}
    for _ in range(n):
        key = tuple(j for j, _ in multi.sample_report(m, (0.1, 0.2, 0.3, 0.4), words))
        counts[key] = counts.get(key, 0) + 1
    rate = FALSE_FAILURE / 12
    hi = _binomial_upper(n, F(1, 6), rate)
    lo = n - _binomial_upper(n, F(5, 6), rate)   # count < lo means misses > n - lo
    assert len(counts) == 6
    for c in counts.values():
        assert lo <= c <= hi


def _rows(n, rng):
    """Synthetic tuples: a skewed numeric column, a bimodal one, a categorical one."""
    a = np.clip(rng.beta(2, 5, n) * 125 - 40, -40, 85)
    b = np.where(rng.random(n) < 0.3, 30.0, 70.0) + rng.normal(0, 5, n)
    c = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return np.column_stack([a, np.clip(b, 0, 100), c])


def test_estimators_unbiased_and_cover():
    # R repetitions of n reports on fixed tuples. (1) Coverage: Bernstein's 99% interval misses
    # with probability <= 1% whatever the data, so misses per estimate are stochastically below
    # Bin(R, 1/100). (2) Unbiasedness: the average over the R*n reports of Z - x is a mean of
    # independent terms bounded by M with variance at most the exact average variance; Bernstein
    # at confidence 1 - rate bounds it. Checks: 5 estimates x 2 kinds = 10, FALSE_FAILURE split.
    rng = np.random.default_rng(20240611)
    atts = [Numeric("t", -40, 85), Numeric("h", 0, 100, bits=3, mechanism="hm"),
            Categorical("s", ("a", "b", "c"))]
    m = Multi(atts, 2, k=1)
    est = MultiEstimator(m)
    n, reps = 400, 300
    rows = _rows(n, rng)
    truth = [rows[:, 0].mean(), rows[:, 1].mean()] + [np.mean(rows[:, 2] == v) for v in range(3)]
    rate = FALSE_FAILURE / 10
    misses = [0] * 5
    sums = [F(0)] * 5
    for _ in range(reps):
        idx, val = multi.sample_bulk(m, rows, rng)
        out = est.summarize(idx, val)
        checks = [(out[0].mean, out[0].ci99), (out[1].mean, out[1].ci99)] + \
            [out[2].frequencies[v] for v in ("a", "b", "c")]
        for i, (value, (lo, hi)) in enumerate(checks):
            misses[i] += not lo <= truth[i] <= hi
        sums[0] += est.mean_exact(0, idx, val)
        sums[1] += est.mean_exact(1, idx, val)
        for v, f in enumerate(est.frequencies_exact(2, idx, val)):
            sums[2 + v] += f
    limit = _binomial_upper(reps, F(1, 100), rate)
    assert max(misses) <= limit, (misses, limit)
    # exact average per-report variance at the data, and the range bound M
    avg_var = [sum(m.variance(j, F(float(x))) for x in rows[:, j]) / n for j in (0, 1)]
    avg_var += [sum(m.variance(2, (v, int(t))) for t in rows[:, 2]) / n for v in range(3)]
    dev = [m.deviation_bound(0), m.deviation_bound(1)] + [m.deviation_bound(2)] * 3
    for i in range(5):
        hw = multi.bernstein_halfwidth(n * reps, avg_var[i], dev[i], confidence=1 - rate)
        assert abs(float(sums[i] / reps) - truth[i]) <= hw, (i, float(sums[i] / reps), truth[i], hw)


def test_bulk_second_moment_matches_exact_variance():
    # The mean over N reports of (Z - x)^2 has expectation the exact average variance at the
    # readings; each term lies in [0, M^2], so Hoeffding gives |mean - E| <= M^2
    # sqrt(ln(2/rate)/(2N)). Readings come from 40 fixed values per column, so the exact average
    # is a weighted sum of 40 exact variances. 2 values of k x 2 attributes = 4 checks.
    rng = np.random.default_rng(77)
    atts = [Numeric("light", -1, 99.92), Numeric("humidity", 23.5, 83.9),
            Numeric("noise", 49, 101, bits=4, mechanism="duchi")]
    rate = float(FALSE_FAILURE) / 4
    n = 200_000
    levels = [np.linspace(a.lo, a.hi, 40) for a in atts]
    picks = rng.integers(0, 40, size=(n, 3))
    rows = np.column_stack([levels[j][picks[:, j]] for j in range(3)])
    for k in (1, 3):
        m = Multi(atts, 1, k=k)
        idx, val = multi.sample_bulk(m, rows, rng)
        for j in (0, 2):
            part = m.parts[j]
            g = np.array([float(part.value(y)) for y in range(part.cells)])
            z = np.full(n, float(part.mid))
            users, slot = np.nonzero(idx == j)
            z[users] = float(part.mid) + float(m.scale) * (g[val[users, slot]] - float(part.mid))
            measured = float(np.mean((z - rows[:, j]) ** 2))
            weights = np.bincount(picks[:, j], minlength=40)
            exact = sum(int(w) * m.variance(j, F(float(x))) for w, x in zip(weights, levels[j])) / n
            slack = float(m.deviation_bound(j)) ** 2 * math.sqrt(math.log(2 / rate) / (2 * n))
            assert abs(measured - float(exact)) <= slack, (k, j, measured, float(exact), slack)


def test_estimators_aggregate_exactly():
    # mean_exact and frequencies_exact against the per-report estimates summed directly
    # (Fractions): Z = mid + (d/k)(g(y) - mid) if carried else mid; Z_v = (d/k)(B_v - q)/(p - q)
    rng = np.random.default_rng(5)
    atts = [Numeric("t", -40, 85), Numeric("h", 0, 100, bits=3, mechanism="hm"),
            Categorical("s", ("a", "b", "c"))]
    m = Multi(atts, 7, k=2)
    rows = _rows(300, rng)
    idx, val = multi.sample_bulk(m, rows, rng)
    est = MultiEstimator(m)
    n = idx.shape[0]
    for j in (0, 1):
        part = m.parts[j]
        direct = F(0)
        for i in range(n):
            carried = [y for jj, y in zip(idx[i], val[i]) if jj == j]
            direct += part.mid + (m.scale * (part.value(int(carried[0])) - part.mid)
                                  if carried else 0)
        assert est.mean_exact(j, idx, val) == direct / n
    part = m.parts[2]
    for v in range(3):
        direct = F(0)
        for i in range(n):
            for jj, y in zip(idx[i], val[i]):
                if jj == 2:
                    direct += m.scale * (((int(y) >> v) & 1) - part.q) / (part.p - part.q)
        assert est.frequencies_exact(2, idx, val)[v] == direct / n
    out = est.summarize(idx, val)
    assert [o.carried for o in out] == [int((idx == j).sum()) for j in range(3)]
    assert sum(o.carried for o in out) == 2 * n
