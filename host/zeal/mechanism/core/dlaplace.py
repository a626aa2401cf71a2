"""The discrete Laplace distribution, sampled exactly from the product's words.

Lap_Z(scale): P(Z = z) = (1 - r) / (1 + r) * r^|z| for every integer z, r = exp(-1/scale).
Adding it to an integer-valued query of L1 sensitivity D with scale = D/eps is eps-DP: for
two outputs' noise vectors differing by a vector of L1 norm at most D the probabilities differ
by a factor exp(eps/D * |shift|_1) <= e^eps (shared_spec/locate.md proves it for the location
publisher). Floating-point Laplace noise is not used anywhere: its rounding leaks (Mironov,
"On significance of the least significant bits for differential privacy", 2012).

The sampler is Canonne, Kamath and Steinke's ("The Discrete Gaussian for Differential
Privacy", 2020, Algorithms 1 and 2), written against two exact draws -- `bern(num, den)`, 1
with probability num/den, and `uniform(n)`, uniform on [0, n) -- which `Draws` takes from a
word source (zeal.mechanism.core.words) with zeal.mechanism.core.draws' rejection rules. A
scale is a rational t/s (integers); every step is integer arithmetic, so the law of the
output is exactly Lap_Z(t/s) (tests/test_dlaplace.py checks it in Fractions by enumerating the
draws). Hand-written: no well-kept library samples it from a given exact bit source.
"""
from fractions import Fraction

from .draws import WORD_BITS, bernoulli, uniform_below


class Draws:
    """The exact draws from a word source (a callable returning 64-bit words)."""

    def __init__(self, words):
        self.words = words

    def bern(self, num: int, den: int) -> int:
        if num <= 0:
            return 0
        if num >= den:
            return 1
        return bernoulli(num, den, self.words)

    def uniform(self, n: int) -> int:
        if n <= 1 << WORD_BITS:
            return uniform_below(n, self.words)
        # n above 2^64: m words make w < 2^(64 m); u = w // q (q = 2^(64 m) // n) takes each
        # value of [0, n) for exactly q values of w; u >= n is rejected
        m = -(-n.bit_length() // WORD_BITS)
        q = (1 << (WORD_BITS * m)) // n
        while True:
            w = 0
            for _ in range(m):
                w = (w << WORD_BITS) | self.words()
            u = w // q
            if u < n:
                return u


def bernoulli_exp(num: int, den: int, d) -> int:
    """1 with probability exp(-num/den) (num >= 0, den >= 1), exactly (CKS Algorithm 1): for
    gamma = num/den <= 1, Bernoulli(gamma/K) for K = 1, 2, ... until the first failure; the
    first K to fail has P(K > k) = gamma^k / k!, so P(K odd) = sum_k (-gamma)^k / k! =
    exp(-gamma). Above 1: exp(-1) once per whole unit (all must succeed), then the rest."""
    while num > den:
        if not _exp_at_most_one(1, 1, d):
            return 0
        num -= den
    return _exp_at_most_one(num, den, d)


def _exp_at_most_one(num, den, d):
    k = 1
    while d.bern(num, den * k):
        k += 1
    return k & 1


def discrete_laplace(t: int, s: int, d) -> int:
    """One draw of Lap_Z(t/s) (t, s >= 1 integers), exactly (CKS Algorithm 2): X = U + t V with
    U uniform on [0, t) kept with probability exp(-U/t) and V geometric (exp(-1)), so X is
    geometric with ratio exp(-1/t); Y = floor(X / s) is geometric with ratio exp(-s/t); a
    fair sign, and the draw (negative, 0) refused so that 0 is not counted twice."""
    if t < 1 or s < 1:
        raise ValueError("discrete_laplace needs integers t, s >= 1")
    while True:
        u = d.uniform(t)
        if not bernoulli_exp(u, t, d):
            continue
        v = 0
        while bernoulli_exp(1, 1, d):
            v += 1
        y = (u + t * v) // s
        b = d.bern(1, 2)
        if b and y == 0:
            continue
        return -y if b else y


def scale_parts(scale) -> tuple:
    """(t, s) with t/s the scale, reduced: an int, a Fraction or an exact decimal string."""
    f = Fraction(scale)
    if f <= 0:
        raise ValueError("a Laplace scale must be positive")
    return f.numerator, f.denominator
