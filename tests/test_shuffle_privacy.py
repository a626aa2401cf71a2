"""The shuffle mode's privacy claim, checked exactly (issue 17; shared_spec/shuffle.md, "The
guarantee"). The arithmetic lives in tests/shuffle_dp.py: ints and Fractions only, every
transcendental number replaced by a rational bound on the safe side. Nothing is random
(the one sampler run reads fixed words), so there is no false-failure rate.

A. Each message pool (round) is D-ary randomised response with blanket gamma, D = d (k+1).
   The adversary of the "blanket view" knows every other reading and which other messages
   were blanket: stronger than the real one, so the view's delta bounds a round's delta.
   For configurations where gamma_for succeeds (t = 1, 2, 3), the exact view delta at
   (eps_m, delta_m) is <= delta_m, and t such rounds compose (re-checked exactly) to the
   claimed (epsilon, delta). The view's formula is checked against a hand-derived case
   (D = 2, n = 3), against the view enumerated from the mechanism's definition, and against
   the real released histogram (it bounds it); its delta falls with more blanket, more
   readings and a larger epsilon, and at epsilon = 0 it is the total variation.
B. Issue 17's construction: n - 1 readings all-0, the last all-1 or all-0; the statistic
   counts released messages whose levels are all k. With the shape the product sends (read
   from its sampler: messages a reading, pairs a message) and gamma_for's gamma, the
   count's delta stays below the claim at n = 10^7; with the withdrawn linked shape (one
   message of t pairs) it is 0.0485 > 0.01 and 0.349 > 10^-6, the issue's figures.

`python tests/test_shuffle_privacy.py` prints the figures.
"""
from fractions import Fraction

import pytest

from zeal.mechanism.shuffle import mechanism as S
from zeal.mechanism.shuffle import profile as SP
from zeal.mechanism.core.words import CounterWords

import shuffle_dp as X

TWO32 = 1 << 32


def _f(x) -> Fraction:
    """The exact value of a typed number as the product stores it (float64)."""
    return Fraction(float(x))


def _delta_m(delta: Fraction, t: int) -> Fraction:
    """The delta each pool must meet (shuffle.md, proof step 4): delta for t = 1, else
    delta / (2t) (t of them, plus delta/2 for advanced composition)."""
    return delta if t == 1 else delta / (2 * t)


# ---- A. exact arithmetic sanity ------------------------------------------------------------------
def test_rational_bounds_bracket_known_constants():
    # e = 2.718281828459045235..., ln 2 = 0.693147180559945309..., e^-1 = 0.367879441171442321...
    lo, hi = X.exp_bounds(1)
    assert Fraction(2718281828459045235, 10 ** 18) <= lo < hi <= Fraction(2718281828459045236,
                                                                           10 ** 18)
    assert hi - lo < Fraction(1, 10 ** 60)
    lo, hi = X.exp_bounds(-1)
    assert Fraction(367879441171442321, 10 ** 18) <= lo < hi <= Fraction(367879441171442322,
                                                                          10 ** 18)
    assert X.exp_bounds(0) == (1, 1)
    lo, hi = X.ln_bounds(2)
    assert Fraction(693147180559945309, 10 ** 18) <= lo < hi <= Fraction(693147180559945310,
                                                                         10 ** 18)
    lo, hi = X.ln_bounds(10 ** 6)   # 13.815510557964274104...
    assert Fraction(13815510557964274104, 10 ** 18) <= lo < hi <= Fraction(
        13815510557964274105, 10 ** 18)
    # (1 - 1/N)^N -> e^-1 from below: 0.36787942 for N = 10^7, exactly bracketed
    lo, hi = X.pow_bounds(1 - Fraction(1, 10 ** 7), 10 ** 7)
    assert lo <= hi and hi - lo < Fraction(1, 10 ** 60)
    assert Fraction(36787942, 10 ** 8) < lo < Fraction(36787943, 10 ** 8)
    # a tail bound is a probability bound: 1 at the mean, tiny far above it
    assert X.binomial_tail_upper(1000, Fraction(1, 10), 100) == 1
    assert X.binomial_tail_upper(1000, Fraction(1, 10), 300) < Fraction(1, 10 ** 40)


# ---- A. the blanket view: hand-derived case, brute force, properties -----------------------------
def _hand_delta_n3_d2(g: Fraction, E: Fraction) -> Fraction:
    """D = 2 (values a, b), n = 3 (two others), blanket g, ratio E >= 1, by hand.

    B ~ Binomial(2, g) others are blanket; s = B + 1 messages in the view H = (h_a, h_b).
    P(H | a) = P(B = s-1) 2^-(s-1) C(s, h_a)/s ((1-g) h_a + g s/2); P(H | b) swaps h_a, h_b:

      s = 1, P(B=0) = (1-g)^2:  H = (1,0): a: (1-g)^2 (1 - g/2)     b: (1-g)^2 g/2
                                H = (0,1): a: (1-g)^2 g/2           b: (1-g)^2 (1 - g/2)
      s = 2, P(B=1) = 2g(1-g):  H = (2,0): a: g(1-g)/2 (2 - g)      b: g(1-g)/2 g
                                H = (1,1): a = b = g(1-g)
                                H = (0,2): a: g(1-g)/2 g            b: g(1-g)/2 (2 - g)
      s = 3, P(B=2) = g^2:      H = (3,0): a: g^2 (2-g)/8           b: g^3/8
                                H = (2,1): a: g^2/4 (2 - g/2)       b: g^2/4 (1 + g/2)
                                (1,2) and (0,3): the mirror images
    (each s sums to P(B = s-1) under a: e.g. s = 3: g^2/8 (2 - g + g) + g^2/4 3 = g^2).
    With E >= 1 only (1,0), (2,0), (3,0) and (2,1) can have P(H|a) > E P(H|b):

      delta = (1-g)^2 (1 - (1+E) g/2)_+ + (g(1-g)/2 + g^2/8) (2 - (1+E) g)_+
              + g^2/4 (2 - E - (1+E) g/2)_+
            = (2 - (1+E) g)_+ ((1-g)/2 + g^2/8) + g^2/4 (2 - E - (1+E) g/2)_+.

    E = 1 (epsilon 0): (1-g)^2 + (1-g) g^2/2, the total variation; g = 1/2, E = 2: 9/64."""
    zero = Fraction(0)
    return (max(zero, 2 - (1 + E) * g) * ((1 - g) / 2 + g * g / 8)
            + g * g / 4 * max(zero, 2 - E - (1 + E) * g / 2))


def test_blanket_view_hand_derived_case():
    assert X.blanket_delta(3, 2, Fraction(1, 2), 2) == Fraction(9, 64)
    assert X.blanket_delta(3, 2, Fraction(1, 2), 1) == Fraction(5, 16)
    for g in (Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(9, 10)):
        assert X.blanket_delta(3, 2, g, 1) == (1 - g) ** 2 + (1 - g) * g * g / 2
        # E = 3/2 at g = 1/4 makes the last term positive (2 - 3/2 - 5/16 > 0)
        for E in (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2), Fraction(27, 10)):
            assert X.blanket_delta(3, 2, g, E) == _hand_delta_n3_d2(g, E)
    g, E = Fraction(1, 4), Fraction(3, 2)
    assert 2 - E - (1 + E) * g / 2 > 0       # the (2,1) view counts there


@pytest.mark.parametrize("n, D", [(2, 2), (3, 2), (4, 3), (5, 4), (6, 2), (4, 5)])
def test_blanket_view_formula_matches_the_mechanism(n, D):
    """The closed form (shuffle_dp.blanket_delta) equals the view enumerated from the
    mechanism's definition, at several ratios; at E = 1 both are the total variation; and the
    view's delta bounds the delta of the real released histogram of the pool."""
    for g in (Fraction(1, 5), Fraction(1, 2), Fraction(7, 8)):
        pa = X.blanket_view_brute(n, D, g, 0)
        pb = X.blanket_view_brute(n, D, g, 1)
        assert sum(pa.values()) == 1 and sum(pb.values()) == 1
        for E in (Fraction(1), Fraction(5, 4), Fraction(2), X.exp_bounds(1)[0]):
            assert X.blanket_delta(n, D, g, E) == X.hockey_stick(pa, pb, E)
        assert X.blanket_delta(n, D, g, 1) == X.total_variation(pa, pb)
        others = [(7 * i + 3) % D for i in range(n - 1)]
        ra = X.round_brute(n, D, g, 0, others)
        rb = X.round_brute(n, D, g, 1, others)
        for E in (Fraction(1), Fraction(5, 4), Fraction(2)):
            assert X.hockey_stick(ra, rb, E) <= X.blanket_delta(n, D, g, E)


def test_blanket_view_more_blanket_more_readings_larger_epsilon_less_delta():
    E = X.exp_bounds(Fraction(1, 2))[0]
    gammas = [Fraction(i, 10) for i in range(1, 9)]
    ds = [X.blanket_delta(40, 3, g, E) for g in gammas]
    assert all(a > b for a, b in zip(ds, ds[1:])) and ds[-1] > 0
    assert X.blanket_delta(40, 3, 1, E) == 0 and X.blanket_delta(40, 3, 0, E) > ds[0]
    # more readings (the (n+1)-view is the n-view plus an independent message)
    ns = [X.blanket_delta(n, 4, Fraction(1, 3), E) for n in (10, 20, 40, 80)]
    assert all(a > b for a, b in zip(ns, ns[1:]))
    # a larger epsilon (a larger ratio E)
    es = [X.blanket_delta(60, 2, Fraction(1, 4), X.exp_bounds(e)[0])
          for e in (0, Fraction(1, 4), Fraction(1, 2), 1)]
    assert all(a > b for a, b in zip(es, es[1:]))


# ---- A. the claim, configuration by configuration -----------------------------------------------
# (epsilon, delta, d, k, t, n): gamma_for succeeds at each; n about twice the smallest n
# (gamma about 1/2: the view's delta is positive, so the comparison is not 0 <= delta_m), and
# a few at the smallest n (gamma near 1), among them the one advanced-composition case that
# is cheap (n = 2906: there the view's delta is 0 exactly, X <= 0 for every view).
A_CONFIGS = [
    (1.0, 0.5, 1, 1, 1, 56),
    (1.0, 0.5, 1, 1, 1, 112),
    (0.5, 0.01, 1, 1, 1, 1190),
    (0.7, 0.1, 1, 2, 1, 516),
    (5.0, 0.001, 1, 2, 1, 642),       # epsilon > 1: eps_m = 1 (the blanket theorem's range)
    (2.0, 0.5, 2, 1, 2, 314),
    (2.0, 0.01, 2, 1, 2, 752),
    (1.4, 0.1, 2, 1, 2, 1004),
    (2.0, 0.5, 2, 3, 2, 624),         # k = 3: D = 8
    (3.0, 0.5, 3, 1, 3, 268),
    (3.0, 0.5, 3, 1, 3, 536),
    (3.0, 0.01, 3, 1, 3, 1194),
    (2.1, 0.5, 3, 1, 3, 1092),
    (0.8, 0.99, 3, 1, 3, 2906),       # advanced composition
]


def pool_figures(eps, delta, d, k, t, n):
    """gamma_for's numbers and the exact view delta (an upper bound: e^eps_m bounded below)."""
    eps, delta = _f(eps), _f(delta)
    p = S.gamma_for(epsilon=eps, delta=delta, n=n, d=d, k=k, t=t)
    D = d * (k + 1)
    dm = _delta_m(delta, t)
    view = X.blanket_delta(n, D, p.gamma, X.exp_bounds(p.epsilon_message)[0])
    return p, D, dm, view


@pytest.mark.parametrize("eps, delta, d, k, t, n", A_CONFIGS)
def test_each_pool_meets_its_share_and_the_pools_compose(eps, delta, d, k, t, n):
    p, D, dm, view = pool_figures(eps, delta, d, k, t, n)
    assert p.refusal() is None
    em = p.epsilon_message
    assert 0 < em <= 1
    # one pool: the exact delta of the blanket view at eps_m is within delta_m
    assert view <= dm, "pool delta %.3g > delta_m %.3g" % (view, dm)
    # Balle et al.'s two inequalities hold at the stored numbers (independent of the rule's
    # integer steps): gamma (n-1) eps_m >= 27 D, gamma (n-1) eps_m^2 >= 14 D ln(2/delta_m)
    assert p.gamma * (n - 1) * em >= 27 * D
    assert X.exp_bounds(p.gamma * (n - 1) * em * em / (14 * D))[0] >= 2 / dm
    # t pools on independent words compose to the claim, re-checked exactly
    how = X.composes(p.epsilon, p.delta, em, dm, t)
    assert how is not None
    if t == 1:
        assert em <= p.epsilon
    else:
        assert how == p.regime          # the regime the product says it used is a valid one


def test_configurations_cover_t_1_2_3_and_both_compositions():
    regimes = {(t, S.gamma_for(epsilon=_f(e), delta=_f(dl), n=n, d=d, k=k, t=t).regime)
               for e, dl, d, k, t, n in A_CONFIGS}
    assert {(1, "balle-t1"), (2, "basic"), (3, "basic"), (3, "advanced")} <= regimes
    # the smallest-n rows are the smallest n (one fewer reading and gamma_for refuses)
    for e, dl, d, k, t, n in [(1.0, 0.5, 1, 1, 1, 56), (3.0, 0.5, 3, 1, 3, 268),
                              (0.8, 0.99, 3, 1, 3, 2906)]:
        assert S.smallest_n(_f(e), _f(dl), d, k, t) == n


def test_the_exact_check_fails_with_too_little_blanket():
    """The check has teeth: the same configuration with gamma / 8 is refused by it (the
    exact view delta exceeds delta_m; it does below gamma x 0.129), and with gamma / 16 in
    another (below gamma x 0.066). Halving gamma is not enough anywhere in A_CONFIGS: Balle
    et al.'s constants leave the stored gamma 7.5 to 85 times above what the exact view
    needs at these n (the view's delta at gamma / 2 is at most 2.2e-4 of delta_m)."""
    p, D, dm, _ = pool_figures(5.0, 0.001, 1, 2, 1, 642)
    E = X.exp_bounds(p.epsilon_message)[0]
    assert X.blanket_delta(642, D, p.gamma / 8, E) > dm
    p, D, dm, _ = pool_figures(1.4, 0.1, 2, 1, 2, 1004)
    E = X.exp_bounds(p.epsilon_message)[0]
    assert X.blanket_delta(1004, D, p.gamma / 16, E) > dm
    # and the product's rule refuses far earlier: gamma / 2 fails its integer steps
    half = S.Params(**dict(p.__dict__, gamma=p.gamma / 2))
    assert half.refusal() is not None


# ---- B. the construction of issue 17 ------------------------------------------------------------
N_BIG = 10 ** 7
# (epsilon, delta, d, k, t, the withdrawn rule's gamma, the lower bound)
B_CONFIGS = [
    (0.99, 0.01, 2, 3, 2, Fraction(5416843, TWO32), Fraction(485, 10 ** 4)),
    (0.5, 1e-6, 8, 3, 8, Fraction(705539717, TWO32), Fraction(349, 10 ** 3)),
]


def _old_gamma_bounds(eps, delta, n, d, k, t):
    """The withdrawn rule (zeal-shuffle/1, seed Theorem 4.1, epsilon < 1):
    56 d K ln(1/delta) ln(2t/delta) / ((n-1) eps^2), rounded UP to a multiple of 2^-32;
    returned for the lower and the upper bound of the logarithms."""
    l1, l2 = X.ln_bounds(1 / delta), X.ln_bounds(2 * t / delta)
    out = []
    for a, b in ((l1[0], l2[0]), (l1[1], l2[1])):
        g = 56 * d * (k + 1) * a * b / ((n - 1) * eps * eps)
        out.append(Fraction(-((-g.numerator * TWO32) // g.denominator), TWO32))
    return out


def _statistic(n, messages, pairs, gamma, K, eps):
    """Bounds of the count statistic's delta(eps) for a release of `messages` messages a
    reading, each of `pairs` linked pairs: q0 = (gamma/K)^pairs (an all-0 reading's message
    is all-top only if every pair is blanket at level k), q1 = (1 - gamma + gamma/K)^pairs
    (an all-1 reading's non-blanket pairs are level k: x = 1 rounds to k exactly)."""
    q0 = (gamma / K) ** pairs
    q1 = (1 - gamma + gamma / K) ** pairs
    return X.count_delta_bounds(n, messages, q0, q1, eps)


@pytest.mark.parametrize("eps, delta, d, k, t, old_gamma, figure", B_CONFIGS)
def test_linked_messages_break_the_withdrawn_rule(eps, delta, d, k, t, old_gamma, figure):
    """The demonstration: the withdrawn format (one message of t linked pairs a reading)
    with the withdrawn rule's gamma. The count's delta is at least the issue's figure, far
    above the claimed delta. (The lower bound is rigorous: e^eps bounded above, the pmf of
    the count bounded below, the terms beyond the window dropped; the upper bound shows how
    tight it is.)"""
    eps, delta = _f(eps), _f(delta)
    assert _old_gamma_bounds(eps, delta, N_BIG, d, k, t) == [old_gamma, old_gamma]
    lo, hi, _ = _statistic(N_BIG, 1, t, old_gamma, k + 1, eps)
    assert lo > delta, "%.4g" % lo
    assert figure <= lo <= hi < figure + Fraction(1, 10 ** 4 if t == 2 else 10 ** 3)
    # the shape, not only gamma: linked pairs with the NEW rule's gamma fail as well
    new_gamma = S.gamma_for(epsilon=eps, delta=delta, n=N_BIG, d=d, k=k, t=t).gamma
    lo, _, _ = _statistic(N_BIG, 1, t, new_gamma, k + 1, eps)
    assert lo > delta


def _what_the_product_sends(profile):
    """(messages a reading, pairs a message), read from the product's own sampler and
    decoder on an all-top reading. Written to read either format: the withdrawn one sent one
    message (an int) whose decoding is a list of t pairs; the current one sends a list of t
    messages, each decoding to one (c, y) pair."""
    sent = SP.ShuffleSampler(profile, CounterWords(bytes(32))).sample([1.0] * profile.d)
    messages = list(sent) if isinstance(sent, (list, tuple)) else [sent]
    sizes = set()
    for m in messages:
        dec = S.decode_message(profile.params, m)
        if isinstance(dec, tuple) and len(dec) == 2 and all(isinstance(v, int) for v in dec):
            sizes.add(1)
        else:
            sizes.add(len(list(dec)))
    assert len(sizes) == 1
    return len(messages), sizes.pop()


@pytest.mark.parametrize("eps, delta, d, k, t, old_gamma, figure", B_CONFIGS)
def test_the_product_release_passes_the_construction(eps, delta, d, k, t, old_gamma, figure):
    """The same construction on what the product sends NOW, with gamma_for's gamma: the count
    of released messages whose levels are all k (one pair a message: the count of messages
    at level k) has delta(eps) <= delta. This would fail on the withdrawn code (one message of
    t pairs, its gamma: the lower bound above)."""
    profile = SP.build_from(epsilon=eps, delta=delta, n=N_BIG, d=d, k=k, t=t)
    messages, pairs = _what_the_product_sends(profile)
    assert messages * pairs == t
    p = S.gamma_for(epsilon=_f(eps), delta=_f(delta), n=N_BIG, d=d, k=k, t=t)
    assert profile.params.gamma == p.gamma
    lo, hi, _ = _statistic(N_BIG, messages, pairs, p.gamma, k + 1, p.epsilon)
    assert lo <= hi
    assert hi <= p.delta, ("%d message(s) of %d pair(s) a reading, gamma %.6g: the count's "
                           "delta is >= %.4g, above delta %g"
                           % (messages, pairs, p.gamma, lo, p.delta))


def test_count_bounds_match_the_exact_distribution_on_a_small_case():
    """count_delta_bounds against the two laws convolved exactly (n = 200): it brackets the
    exact sum at e^eps's bounds, and the bracket is tight."""
    n, M, q0, q1, eps = 200, 2, Fraction(1, 20), Fraction(2, 3), Fraction(1, 2)
    a = X.binomial_pmf(M * (n - 1), q0)

    def law(q):
        f = X.binomial_pmf(M, q)
        out = [Fraction(0)] * (len(a) + M)
        for i, fi in enumerate(f):
            for j, aj in enumerate(a):
                out[i + j] += fi * aj
        return out

    p0, p1 = law(q0), law(q1)
    e_lo, e_hi = X.exp_bounds(eps)
    exact_hi = sum(max(Fraction(0), x - e_lo * y) for x, y in zip(p1, p0))
    exact_lo = sum(max(Fraction(0), x - e_hi * y) for x, y in zip(p1, p0))
    lo, hi, _ = X.count_delta_bounds(n, M, q0, q1, eps)
    assert lo <= exact_lo <= exact_hi <= hi
    assert hi - lo < Fraction(1, 10 ** 60) and lo > Fraction(1, 1000)


# ---- the figures ------------------------------------------------------------------------------
def _show(x: Fraction) -> str:
    if x == 0:
        return "0"
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if e < -1000:                        # below float64's range: a power of ten
        import math
        lg = e * math.log10(2) + math.log10(float(x * Fraction(2) ** -e))
        return "%.2fe%d" % (10 ** (lg - math.floor(lg)), math.floor(lg))
    return "%.4g" % float(x)


def main():
    print("A. per pool: exact blanket-view delta at (eps_m, delta_m) vs delta_m")
    print("eps delta d k t n | D regime eps_m gamma | view delta_m view/delta_m | compose")
    for cfg in A_CONFIGS:
        p, D, dm, view = pool_figures(*cfg)
        how = X.composes(p.epsilon, p.delta, p.epsilon_message, dm, cfg[4])
        print("%s | %d %s %.4g %.4f | %s %.4g %s | %s" % (
            " ".join(str(c) for c in cfg), D, p.regime, float(p.epsilon_message),
            float(p.gamma), _show(view), float(dm), _show(view / dm), how))
    print("B. count statistic at n = 10^7: [lower, upper] of its delta(eps)")
    for eps, delta, d, k, t, old_gamma, _ in B_CONFIGS:
        e, dl = _f(eps), _f(delta)
        new = S.gamma_for(epsilon=e, delta=dl, n=N_BIG, d=d, k=k, t=t).gamma
        for label, msgs, pairs, g in (("withdrawn linked, old gamma", 1, t, old_gamma),
                                      ("linked, new gamma", 1, t, new),
                                      ("product one-pair, new gamma", t, 1, new),
                                      ("one-pair, old gamma", t, 1, old_gamma)):
            lo, hi, info = _statistic(N_BIG, msgs, pairs, g, k + 1, e)
            print("eps=%g delta=%g d=%d t=%d %-28s gamma=%.6g: [%s, %s] j*=%d" % (
                eps, delta, d, t, label, float(g), _show(lo), _show(hi), info["j_star"]))


if __name__ == "__main__":
    main()
