"""The exact discrete Laplace sampler (zeal.mechanism.core.dlaplace) against its law.

Exact: a sampler is run on every sequence of draw outcomes (a tree: a Bernoulli(num/den) draw
has two branches of probabilities num/den and 1 - num/den, a uniform draw n branches of 1/n),
depth-first, in Fractions, until the probability left unexplored is small. Each output's
explored probability P_seen must then satisfy P_seen <= P(z) <= P_seen + left. Bernoulli(exp(
-gamma)) against exp(-gamma) bracketed by its alternating series (left < 2^-12); the discrete
Laplace algorithm on those draws, with exp(-1/t) stood in by the rational 1/2 so that its law
is rational (left < 2^-9: the rejection loops make the tree wide; the scales are small ones
that cover every step -- U's rejection (t = 2), the floor and the refused -0 (s = 2)). Statistical: a
seeded run of 20,000 draws at a large scale, its variance against 2r/(1-r)^2 (false-failure
rate below 1e-6: a 5-sigma band).
"""
import math
from fractions import Fraction

import pytest

from zeal.mechanism.core import dlaplace as DL
from zeal.mechanism.core.words import CounterWords


class _Need(Exception):
    def __init__(self, branches):
        self.branches = branches


class _Replay:
    """Draws that replay a list of outcomes and stop (with the next draw's branches) past it."""

    def __init__(self, outcomes):
        self.outcomes = outcomes
        self.i = 0

    def _next(self, branches):
        if self.i == len(self.outcomes):
            raise _Need(branches)
        v = self.outcomes[self.i]
        self.i += 1
        return v

    def bern(self, num, den):
        if num <= 0:
            return 0
        if num >= den:
            return 1
        return self._next([(1, Fraction(num, den)), (0, 1 - Fraction(num, den))])

    def uniform(self, n):
        return self._next([(v, Fraction(1, n)) for v in range(n)])


def _enumerate(run, left_max=Fraction(1, 1 << 12)):
    """{output: explored probability}, and the probability left unexplored (every branch
    below left_max / 4096 is left)."""
    seen, left = {}, Fraction(0)
    stack = [([], Fraction(1))]
    while stack:
        prefix, p = stack.pop()
        if p < left_max / 4096:
            left += p
            continue
        try:
            out = run(_Replay(prefix))
        except _Need as need:
            for v, q in need.branches:
                stack.append((prefix + [v], p * q))
            continue
        seen[out] = seen.get(out, 0) + p
    return seen, left


def _exp_bounds(x: Fraction, terms=40):
    """(lo, hi) with lo <= exp(-x) <= hi for 0 <= x <= 4: partial sums of the alternating
    series, whose terms shrink from k > x on."""
    total, term, sums = Fraction(0), Fraction(1), []
    for k in range(terms):
        total += term
        sums.append(total)
        term = term * (-x) / (k + 1)
    last, prev = sums[-1], sums[-2]
    return min(last, prev), max(last, prev)


def test_bernoulli_exp_is_exact_by_enumeration():
    for num, den in ((0, 1), (1, 3), (1, 1), (3, 2), (5, 2)):
        seen, left = _enumerate(lambda d: DL.bernoulli_exp(num, den, d))
        lo, hi = _exp_bounds(Fraction(num, den))
        assert left < Fraction(1, 1 << 12)
        assert seen.get(1, 0) <= hi and seen.get(1, 0) + left >= lo, (num, den)
        assert seen.get(0, 0) <= 1 - lo and seen.get(0, 0) + left >= 1 - hi


@pytest.mark.parametrize("t, s", [(1, 1), (1, 2), (2, 1)])
def test_discrete_laplace_is_exact_by_enumeration(t, s, monkeypatch):
    """Algorithm 2 on exact Bernoulli(exp(-gamma)) draws (checked above) outputs
    Lap_Z(t/s). Enumerated with every exp(-u/t) draw a rational w^u (w = 1/2: the same
    algebra, exp(-1/t) replaced by w, and a tree whose mass decays fast): the law must then be
    exactly P(z) = (1 - rho)/(1 + rho) rho^|z| with rho = w^s, to within the mass left."""
    w = Fraction(1, 2)

    def bern_w(num, den, d):
        # exp(-num/den) with exp(-1/t) := w: the calls are (u, t) and (1, 1) = exp(-1)
        power = num if den == t else num * t
        p = w ** power
        return d.bern(p.numerator, p.denominator)

    monkeypatch.setattr(DL, "bernoulli_exp", bern_w)
    seen, left = _enumerate(lambda d: DL.discrete_laplace(t, s, d),
                            left_max=Fraction(1, 1 << 10))
    assert left < Fraction(1, 1 << 9)
    rho = w ** s
    for z in range(-8, 9):
        law = (1 - rho) / (1 + rho) * rho ** abs(z)
        got = seen.get(z, 0)
        assert got <= law <= got + left, (t, s, z, float(got), float(law))


def test_seeded_variance_at_a_large_scale():
    """scale 40/3: Var = 2r/(1-r)^2, r = exp(-3/40). 20,000 draws: the sample variance's
    standard error is about sqrt((m4 - var^2)/n); a 5-sigma band."""
    d = DL.Draws(CounterWords(bytes(range(32))))
    n = 20000
    xs = [DL.discrete_laplace(40, 3, d) for _ in range(n)]
    r = math.exp(-3 / 40)
    var = 2 * r / (1 - r) ** 2
    mean = sum(xs) / n
    got = sum((x - mean) ** 2 for x in xs) / (n - 1)
    m4 = sum((x - mean) ** 4 for x in xs) / n
    se = math.sqrt((m4 - got * got) / n)
    assert abs(got - var) < 5 * se, (got, var, se)
    assert abs(mean) < 5 * math.sqrt(var / n)


def test_draws_above_two_to_the_64():
    d = DL.Draws(CounterWords(bytes(32)))
    n = (1 << 80) + 12345
    xs = [d.uniform(n) for _ in range(2000)]
    assert all(0 <= x < n for x in xs)
    # the top 4 bits of a uniform on [0, ~2^80) are near uniform on 0..15 (chi-square, 15
    # degrees of freedom, below 45: false failure about 1e-4)
    counts = [0] * 16
    for x in xs:
        counts[x * 16 // n] += 1
    chi = sum((c - 125) ** 2 / 125 for c in counts)
    assert chi < 45


def test_bad_parameters():
    with pytest.raises(ValueError):
        DL.discrete_laplace(0, 1, DL.Draws(CounterWords(bytes(32))))
    with pytest.raises(ValueError):
        DL.scale_parts("-1")
    assert DL.scale_parts("2.5") == (5, 2)
