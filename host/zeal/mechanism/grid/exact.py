"""Exact properties of a profile's integer mechanism (no sampling).

Offsets j = k - k_lo run over 0..N-1. For a reading x the window starts at jL, which is
floor(pos) or floor(pos)+1 with pos = (x - lo)/(hi - lo) * (N - Nc). With q = T/2^64:

    P(j | jL) = q/Nc        if jL <= j < jL + Nc      (P_hi)
              = (1-q)/No    otherwise                 (P_lo)

Every probability is a Fraction here; shared_spec/mechanism.md derives each formula.
"""
import math
from fractions import Fraction

import numpy as np

from .profile import WORD, Profile


def _sum1(a, n):
    """sum of the n consecutive integers starting at a"""
    return n * a + Fraction(n * (n - 1), 2)


def _sum2(a, n):
    """sum of squares of the n consecutive integers starting at a"""
    return n * a * a + a * n * (n - 1) + Fraction((n - 1) * n * (2 * n - 1), 6)


class ExactGrid:
    """Exact distribution, privacy ratio, mean map and variance of a profile's mechanism."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.n = profile.n_cells
        self.nc = profile.n_window
        self.no = profile.n_outside
        self.q = Fraction(profile.threshold, WORD)
        self.p_hi = self.q / self.nc
        self.p_lo = (1 - self.q) / self.no
        self.lo = Fraction(profile.lo)
        self.hi = Fraction(profile.hi)
        # E[j | jL] = slope * jL + intercept   (slope = q - (1-q) Nc/No)
        self.slope = self.q - (1 - self.q) * self.nc / self.no
        self.intercept = (self.q * Fraction(self.nc - 1, 2)
                          + (1 - self.q) * (_sum1(0, self.n) - _sum1(0, self.nc)) / self.no)
        self.gain = (self.hi - self.lo) / (self.slope * (self.n - self.nc))

    # ---- privacy ---------------------------------------------------------------------------
    @property
    def privacy_ratio(self) -> Fraction:
        """max over inputs and outputs of P(j|x)/P(j|x'): every P lies in [P_lo, P_hi]."""
        return self.p_hi / self.p_lo

    # ---- input side ------------------------------------------------------------------------
    def clamp(self, x: Fraction) -> Fraction:
        return min(max(x, self.lo), self.hi)

    def position(self, x: Fraction) -> Fraction:
        x = self.clamp(Fraction(x))
        return (x - self.lo) * (self.n - self.nc) / (self.hi - self.lo)

    # ---- conditional on the window start -----------------------------------------------------
    def window_moments(self, jl: int) -> tuple:
        """(E[j | jL], E[j^2 | jL]) exactly."""
        s1w, s2w = _sum1(jl, self.nc), _sum2(jl, self.nc)
        s1o, s2o = _sum1(0, self.n) - s1w, _sum2(0, self.n) - s2w
        m1 = self.q * s1w / self.nc + (1 - self.q) * s1o / self.no
        m2 = self.q * s2w / self.nc + (1 - self.q) * s2o / self.no
        return m1, m2

    def distribution(self, x) -> dict:
        """P(j | x) for every offset j (small grids; used by tests)."""
        pos = self.position(x)
        base = math.floor(pos)
        frac = pos - base
        probs = {j: Fraction(0) for j in range(self.n)}
        for jl, weight in ((base, 1 - frac), (base + 1, frac)):
            if weight == 0:
                continue
            for j in range(self.n):
                inside = jl <= j < jl + self.nc
                probs[j] += weight * (self.p_hi if inside else self.p_lo)
        return probs

    # ---- moments given the reading ----------------------------------------------------------
    def mean_offset(self, x) -> Fraction:
        """E[j | x] = slope * pos + intercept (stochastic rounding keeps E[jL] = pos)."""
        return self.slope * self.position(x) + self.intercept

    def offset_variance(self, x) -> Fraction:
        pos = self.position(x)
        base = math.floor(pos)
        frac = pos - base
        m2 = Fraction(0)
        for jl, weight in ((base, 1 - frac), (base + 1, frac)):
            if weight:
                m2 += weight * self.window_moments(jl)[1]
        return m2 - self.mean_offset(x) ** 2

    # ---- the calibrated estimator -------------------------------------------------------------
    def estimate(self, j) -> Fraction:
        """Unbiased estimate of x from one offset: E[estimate(j) | x] = x exactly."""
        return self.lo + self.gain * (j - self.intercept)

    def variance(self, x) -> Fraction:
        """Var[estimate(j) | x]."""
        return self.gain ** 2 * self.offset_variance(x)

    def worst_variance(self) -> tuple:
        """(max over [lo, hi] of self.variance(x), a reading x reaching it), exactly.

        With anchors at window starts jL = 0..N' (N' = N - Nc, pos = b + f), the offset
        variance is Var(pos) = (1-f) V_b + f V_{b+1} + f(1-f) s^2 (V_jL = Var(j | jL), s = the
        mean map's slope; the mixing adds f(1-f) s^2 as for tables). V_jL = Q(jL) for a convex
        quadratic Q (max_window_variance), and the chord of Q exceeds Q by a f(1-f) (a >= 0
        its leading coefficient), so Var(b + f) = Q(b + f) + (a + s^2) f(1-f). For a fixed f,
        b + f lies in [f, N'-1+f], and a convex Q is largest at an end of it: the maximum over
        all readings is reached on the first or the last segment. On each, Var is a concave
        quadratic in f, so its maximum is at f = 0, f = 1 or the vertex
        f* = 1/2 + (V_{b+1} - V_b)/(2 s^2); these (at most six) readings are evaluated with
        `variance`, exactly, whatever N is (N reaches 2^52).
        """
        span = self.n - self.nc                   # N'
        s2 = self.slope ** 2

        def v(jl):
            m1, m2 = self.window_moments(jl)
            return m2 - m1 * m1

        width = (self.hi - self.lo) / span
        best = None
        for b in sorted({0, span - 1}):
            vb, vb1 = v(b), v(b + 1)
            fs = [Fraction(0), Fraction(1)]
            f_star = Fraction(1, 2) + (vb1 - vb) / (2 * s2)
            if 0 < f_star < 1:
                fs.append(f_star)
            for f in fs:
                x = self.lo + (b + f) * width
                val = self.variance(x)
                if best is None or val > best[0]:
                    best = (val, x)
        return best

    def estimate_range(self) -> tuple:
        return self.estimate(0), self.estimate(self.n - 1)


# ---- comparison with the continuous piecewise mechanism ---------------------------------------
def pm_variance(profile: Profile, x):
    """Var of the continuous PM at x (paper Thm 3.2, Eq. variance), float64."""
    a = math.exp(profile.epsilon / 2)
    h = (profile.hi - profile.lo) / 2
    t = (np.asarray(x, dtype=float) - (profile.hi + profile.lo) / 2) / h
    return h * h * (t * t / (a - 1) + (a + 3) / (3 * (a - 1) ** 2))


def _window_variance_table(g: ExactGrid, jl=None) -> np.ndarray:
    """Var(j | jL) in float64, in coordinates centred on the grid, for jL = 0..N-Nc or for
    the window starts `jl` given."""
    n, nc, no, q = g.n, g.nc, g.no, float(g.q)
    starts = np.arange(0, n - nc + 1, dtype=float) if jl is None else np.asarray(jl, float)
    a = starts - (n - 1) / 2.0
    s1w = nc * a + nc * (nc - 1) / 2.0
    s2w = nc * a * a + a * nc * (nc - 1) + (nc - 1) * nc * (2 * nc - 1) / 6.0
    s2all = n * (n * n - 1) / 12.0
    m1 = q * s1w / nc - (1 - q) * s1w / no
    m2 = q * s2w / nc + (1 - q) * (s2all - s2w) / no
    return m2 - m1 * m1


def max_window_variance(g: ExactGrid) -> float:
    """max over jL of Var(j | jL), without the O(N) table (N reaches 2^52).

    Var(j | jL) is a convex quadratic in jL: with d = P_hi - P_lo, E[j | jL] and E[j^2 | jL]
    are d S1(jL, Nc) and d S2(jL, Nc) plus constants, so the jL^2 coefficient is
    d Nc - d^2 Nc^2 = d Nc (1 - s) >= 0, as s = Nc d <= q <= 1. Its maximum over
    0 <= jL <= N - Nc is at an end.
    """
    return float(_window_variance_table(g, [0, g.n - g.nc]).max())


def worst_variance_ratio(profile: Profile) -> tuple:
    """(min, max) over all inputs of Var_exact(x) / Var_PM(x).

    On each unit step of pos the exact variance is a concave quadratic in the fractional
    part f and the PM variance a convex one; the ratio's extremes are at f in {0, 1} or at the
    roots of a quadratic (derivation in shared_spec/mechanism.md). Evaluated in float64.
    """
    g = ExactGrid(profile)
    w = _window_variance_table(g)
    # The ratio does not depend on the reading scale: work in units of h = (hi - lo)/2, so
    # that ranges near the ends of float64 (1e-300 wide, 1e300 wide) neither under- nor
    # overflow. Then x runs over [-1, 1] in `steps` steps.
    steps = g.n - g.nc
    s, gain = float(g.slope), float(g.gain / ((g.hi - g.lo) / 2))
    delta = 2.0 / steps
    a_exp = math.exp(profile.epsilon / 2)
    am1 = a_exp - 1
    if am1 < 1e-3:  # small epsilon: a - 1 by expm1, not by cancellation (0 below 2.2e-16)
        am1 = math.expm1(profile.epsilon / 2)
        a_exp = 1 + am1
    pa = 1 / am1
    pb = (a_exp + 3) / (3 * am1 ** 2)
    u0 = -1.0 + np.arange(steps) * delta
    g2 = gain * gain
    alpha = g2 * w[:-1]
    beta = g2 * (w[1:] - w[:-1] + s * s)
    gamma = np.full(steps, g2 * s * s)
    dl = pa * u0 * u0 + pb
    ze = 2 * pa * delta * u0
    et = np.full(steps, pa * delta * delta)

    def ratio(f):
        return (alpha + beta * f - gamma * f * f) / (dl + ze * f + et * f * f)

    cands = [ratio(np.zeros(steps)), ratio(np.ones(steps))]
    c2 = -(beta * et + gamma * ze)
    c1 = -2 * (gamma * dl + alpha * et)
    c0 = beta * dl - alpha * ze
    with np.errstate(divide="ignore", invalid="ignore"):
        # Stable quadratic roots: c2 is often ~0 (symmetric steps), where the textbook
        # formula divides by rounding noise; qq/c2 and c0/qq stay accurate.
        disc = np.sqrt(np.maximum(c1 * c1 - 4 * c2 * c0, 0))
        qq = -0.5 * (c1 + np.where(c1 >= 0, 1.0, -1.0) * disc)
        roots = [qq / c2, c0 / qq]
    for r in roots:
        ok = np.isfinite(r) & (r > 0) & (r < 1)
        f = np.where(ok, r, 0.0)
        vals = ratio(f)
        cands.append(np.where(ok, vals, cands[0]))
    stack = np.vstack(cands)
    return float(stack.min()), float(stack.max())
