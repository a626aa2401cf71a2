"""The Zeal paper's formulas in plain float64: a reference for reproducing the paper.

This is NOT the product's exact grid (zeal.mechanism.grid.profile / zeal.mechanism.grid.exact): here
every quantity is the paper's real-valued formula evaluated in IEEE-754 double precision, so
that the paper's numbers and its floating-point effects (Eq. (f)) can be reproduced.

Notation (paper, Section "Zeal"): inputs x in [lo, hi], Hbar = (hi + lo)/2, h = (hi - lo)/2,
a = e^(eps/2). Theorem numbers follow the paper (numbered within sections), with labels:
3.1 expected value (thm:privaddexpectedvalue), 3.2 variance (thm:privaddvariance),
3.3 absolute error bound (thm:boundOnProbOfError), 3.4 relative error bound
(thm:relativeBoundOnProbOfError), 3.5 choice of Abar and E_enc (thm:abarselection),
3.6 guaranteed shared bits (thm:guaranteedcommonbits), 4.1 E_vul (thm:minexpvul).
"""
import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np

MANTISSA_BITS = 52
WORD_BITS = 64
_DEC = Context(prec=60)


def _ceil_log2(x) -> int:
    """ceil(log2(x)) for a positive finite float64 (or Fraction), exactly.

    math.log2 rounds, so a value just above a power of two could come out as the power
    itself; frexp gives x = m * 2^e with m in [0.5, 1) exactly. A Fraction (the exact value
    where a float64 quotient would overflow or underflow) is placed between powers of two
    by its integers.
    """
    if isinstance(x, Fraction):
        if not x > 0:
            raise ValueError("ceil_log2 needs a positive value, got %r" % (x,))
        e = x.numerator.bit_length() - x.denominator.bit_length()
        while Fraction(2) ** e < x:
            e += 1
        while Fraction(2) ** (e - 1) >= x:
            e -= 1
        return e
    if not (x > 0 and math.isfinite(x)):
        raise ValueError("ceil_log2 needs a positive finite value, got %r" % (x,))
    m, e = math.frexp(x)
    return e - 1 if m == 0.5 else e


def _em1(eps):
    """a - 1 = e^(eps/2) - 1 without cancellation (expm1), for the fallbacks below."""
    d = math.expm1(eps / 2)
    if not d > 0:
        raise ValueError("epsilon %r is too small for float64 (e^(eps/2) - 1 is 0)" % (eps,))
    return d


def _ulp_pow2(exponent: int) -> float:
    """ULP(2^E) = 2^(E-52), Eq. (ulp)."""
    return math.ldexp(1.0, exponent - MANTISSA_BITS)


# Extreme inputs (a range near 1.8e308, epsilon near 2^-64): each formula is evaluated as the
# paper writes it; only where that overflows or divides by a rounded-away zero is it
# re-associated (halves first, the ratio before the product, expm1 for a - 1), so that every
# value float64 can hold is returned, and the usual inputs give the paper's bits unchanged.
def _scalar(x):
    return isinstance(x, (float, int)) and not isinstance(x, bool)


def hbar(lo, hi):
    """Hbar = (hi + lo)/2, the centre of the input range (Section "Zeal")."""
    m = (hi + lo) / 2
    if _scalar(m) and not math.isfinite(m):
        m = hi / 2 + lo / 2
    return m


def half_width(lo, hi):
    """h = (hi - lo)/2, the half-width of the input range (Section "Zeal")."""
    h = (hi - lo) / 2
    if _scalar(h) and not math.isfinite(h):
        h = hi / 2 - lo / 2
    return h


def c_const(lo, hi, eps):
    """C = h (a + 1)/(a - 1), a = e^(eps/2), Eq. (c): the half-width of the output range."""
    a = math.exp(eps / 2)
    h = half_width(lo, hi)
    if a - 1 > 0:
        c = h * (a + 1) / (a - 1)
        if math.isfinite(c):
            return c
    d = _em1(eps)
    return h * ((d + 2) / d)


def p_level(lo, hi, eps):
    """p = (e^eps - a)/(2 h (a + 1)), the high density level of Eq. (pdf)."""
    a = math.exp(eps / 2)
    p = (math.exp(eps) - a) / (2 * half_width(lo, hi) * (a + 1))
    if p > 0:
        return p
    d = _em1(eps)  # e^eps - a = a (a - 1)
    return ((1 + d) * d / (2 + d)) / half_width(lo, hi) / 2


def e_enc(lo, hi, eps):
    """E_enc = ceil(log2(2C)), Thm 3.5: the smallest binade [2^E, 2^(E+1)) holding 2C."""
    c = c_const(lo, hi, eps)
    if math.isfinite(2 * c):
        return _ceil_log2(2 * c)
    return _ceil_log2(c) + 1  # doubling is exact: only the overflow is avoided


def e_vul(lo, hi, eps):
    """E_vul = max(ceil(-1 + log2(e^eps / p)), E_enc), Thm 4.1, Eq. (minexpvul).

    ceil(-1 + y) = ceil(y) - 1 for real y, which lets _ceil_log2 stay exact.
    """
    p = p_level(lo, hi, eps)
    ratio = math.exp(eps) / p if p > 0 else math.inf
    if not math.isfinite(ratio):  # p underflowed, or e^eps / p overflows: exactly
        d = Fraction(_em1(eps))
        h = Fraction(half_width(lo, hi))
        ratio = Fraction(math.exp(eps)) * 2 * h * (2 + d) / ((1 + d) * d)
    return max(_ceil_log2(ratio) - 1, e_enc(lo, hi, eps))


def _check_exponent(lo, hi, eps, exponent):
    # Thm 3.5 requires E >= E_enc; 2^(E+1) must stay a finite float64.
    low = e_enc(lo, hi, eps)
    if not (isinstance(exponent, (int, np.integer)) and low <= exponent <= 1022):
        raise ValueError("exponent E must be an integer in [E_enc=%d, 1022], got %r"
                         % (low, exponent))


def abar(lo, hi, eps, E):
    """Abar = 2^(E+1) - 2 ULP(2^E) - Hbar - C, Thm 3.5, Eq. (alignds), in float64.

    Evaluated left to right in double precision as the paper's code would: the first two
    terms are exact (the second float below 2^(E+1)); the subtractions of Hbar and C round.
    """
    _check_exponent(lo, hi, eps, E)
    return (math.ldexp(1.0, E + 1) - 2 * _ulp_pow2(E)) - hbar(lo, hi) - c_const(lo, hi, eps)


def abar_exact(lo, hi, eps, E):
    """Abar of Eq. (alignds) as a Decimal to 60 significant digits.

    lo, hi and eps are taken as the exact values of their float64s (Decimal(float) is exact);
    e^(eps/2) and every operation are correctly rounded to 60 digits.
    """
    _check_exponent(lo, hi, eps, E)
    d = _DEC
    lo_d, hi_d = Decimal(lo), Decimal(hi)
    hb = d.divide(d.add(hi_d, lo_d), 2)
    h = d.divide(d.subtract(hi_d, lo_d), 2)
    a = d.exp(d.divide(Decimal(eps), 2))
    c = d.divide(d.multiply(h, d.add(a, 1)), d.subtract(a, 1))
    top = d.subtract(d.power(2, E + 1), d.multiply(2, d.power(2, E - MANTISSA_BITS)))
    return d.subtract(d.subtract(top, hb), c)


def gamma_min(lo, hi, eps, E):
    """gamma_min = 1 + 11 + E - ceil(log2(2C + 3 ULP(2^E))), Thm 3.6, Eq. (transmissionsaving).

    Sign bit + 11 exponent bits + the mantissa bits that never change when Abar follows
    Eq. (alignds) with this E.
    """
    _check_exponent(lo, hi, eps, E)
    width = 2 * c_const(lo, hi, eps) + 3 * _ulp_pow2(E)
    if not math.isfinite(width):  # halve it: exact, and the same rounding one binade down
        return 1 + 11 + E - (_ceil_log2(c_const(lo, hi, eps) + 1.5 * _ulp_pow2(E)) + 1)
    return 1 + 11 + E - _ceil_log2(width)


def transmission_ratio(gamma):
    """TR = 1 - gamma/64, Eq. (tr): the fraction of a 64-bit sample still transmitted."""
    return 1 - gamma / WORD_BITS


def variance(lo, hi, eps, x):
    """VAR(x*) = h^2 (t^2/(a - 1) + (a + 3)/(3 (a - 1)^2)), t = (x - Hbar)/h, Thm 3.2.

    x may be a scalar or a numpy array (the result has its shape). Independent of Abar.
    """
    h = half_width(lo, hi)
    a = math.exp(eps / 2)
    t = (np.asarray(x, dtype=np.float64) - hbar(lo, hi)) / h
    return h * h * (t * t / (a - 1) + (a + 3) / (3 * (a - 1) ** 2))


def bound_abs(lo, hi, eps, xs, lam, two_sided=False):
    """Thm 3.3, Eq. (boundOnProbOfError): P(|Delta_AVG| >= lam) <=
    exp(-(n lam)^2 / 2 / (sum_i VAR(x_i*) + (C + h) n lam / 3)).

    Bernstein's inequality for V_i = x_i* - Abar - x_i (mean 0, |V_i| <= C + h). The paper
    prints the one-sided tail; the event |sum V_i| >= n lam is two-sided and the standard
    two-sided Bernstein bound carries a factor 2, which the paper omits. two_sided=False
    (default) returns the paper's expression, two_sided=True multiplies it by 2 (the result
    may then exceed 1, i.e. be vacuous).
    """
    xs = np.asarray(xs, dtype=np.float64)
    n = xs.size
    t = n * np.asarray(lam, dtype=np.float64)
    m = c_const(lo, hi, eps) + half_width(lo, hi)
    bound = np.exp(-(t * t / 2) / (np.sum(variance(lo, hi, eps, xs)) + m * t / 3))
    return 2 * bound if two_sided else bound


def bound_rel(lo, hi, eps, xs, lam, two_sided=False):
    """Thm 3.4, Eq. (boundOnRelativeProbOfError): bound on P(|delta_AVG| >= lam).

    delta_AVG = Delta_AVG / AVG(DS), so |delta_AVG| >= lam  <=>  |sum V_i| >= lam |S_DS|
    = n (lam |mean(DS)|): this is Thm 3.3 evaluated at lam |mean(DS)|, which is what we
    return. Typo in the paper: Eq. (boundOnRelativeProbOfError) writes n S_DS lam where S_DS
    is the SUM of the data, i.e. n^2 mean lam, a factor n too large (and without |.|);
    that would understate the probability. The same factor 2 caveat as bound_abs applies.
    """
    mean = float(np.mean(np.asarray(xs, dtype=np.float64)))
    if mean == 0:
        raise ValueError("the relative error is undefined when AVG(DS) = 0")
    return bound_abs(lo, hi, eps, xs, np.asarray(lam) * abs(mean), two_sided=two_sided)


def f_error(lo, hi, eps, E):
    """F of Eq. (f), the paper's estimate of the error caused by a too large Abar.

    With Abar = abar(...) in float64 and every operation rounded to float64:
        x*_min = fl(fl(Hbar - C) + Abar),   Delta_min = (Hbar - C) - fl(x*_min - Abar),
        x*_max = fl(fl(Hbar + C) + Abar),   Delta_max = (Hbar + C) - fl(x*_max - Abar),
        F = (Delta_min/(Hbar - C) + Delta_max/(Hbar + C)) / 2.
    F ~ 0 while ULP(Abar) is small against C; F -> 1 once Abar swallows Hbar +- C entirely.
    """
    ab = abar(lo, hi, eps, E)
    hb, c = hbar(lo, hi), c_const(lo, hi, eps)
    total = 0.0
    for end in (hb - c, hb + c):
        delta = end - ((end + ab) - ab)
        total += delta / end
    return total / 2


def summary(lo, hi, eps, E):
    """All of the paper's quantities for one profile (lo, hi, eps, E) as a dict."""
    gamma = gamma_min(lo, hi, eps, E)
    return {
        "lo": lo, "hi": hi, "eps": eps, "E": E,
        "hbar": hbar(lo, hi),
        "h": half_width(lo, hi),
        "a": math.exp(eps / 2),
        "C": c_const(lo, hi, eps),
        "p": p_level(lo, hi, eps),
        "e_enc": e_enc(lo, hi, eps),
        "e_vul": e_vul(lo, hi, eps),
        "abar": abar(lo, hi, eps, E),
        "abar_exact": abar_exact(lo, hi, eps, E),
        "gamma_min": gamma,
        "transmission_ratio": transmission_ratio(gamma),
        "f_error": f_error(lo, hi, eps, E),
    }
