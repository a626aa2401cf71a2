"""REFERENCE mechanisms of the literature, in float64 with numpy — for comparison only.

Nothing here runs on the device, nothing here is exact, and nothing here is used to privatise
a reading in Zeal: these are the textbook samplers and variance formulas of the seed papers
and their successors, so that the exact device mechanisms can be set beside them under the
same epsilon. The random source is always injected (`sample(x, rng)` takes a
`numpy.random.Generator`); tests seed it, nobody else should.

Every mechanism works on inputs in [-1, 1] and is an unbiased estimator of its input
(E[Y | x] = x); `Scaled(mech, lo=, hi=)` carries one to [lo, hi] by the affine map.
API of every object: keyword-only validated parameters (`epsilon > 0`), `name`,
`sample(x, rng) -> np.ndarray` (vectorised over x), `variance(x)` (the closed form, float or
array), `worst_variance()` (max over [-1, 1], float).

Built (seed 001 = Wang et al., "Collecting and Analyzing Multidimensional Data with LDP"):
- `Laplace`: x + Lap(2/eps), variance 8/eps^2.
- `SCDF`, `Staircase`: x + n, n from seed 001's piecewise-constant density with sensitivity 2:
  density a(m) on [-m, m] and a(m) e^{-k eps} on m + 2(k-1) < |n| <= m + 2k (k = 1, 2, ...);
  SCDF: m = 2(1 - e^-eps - eps e^-eps)/(eps - eps e^-eps), a = eps/4;
  Staircase: m = 2/(1 + e^{eps/2}), a = (1 - e^-eps)/(2m + 4e^-eps - 2m e^-eps).
  (Both normalise: 2am + 4a e^-eps/(1 - e^-eps) = 1.) Variance: `_step_noise_second_moment`.
- `Duchi`: one bit, outputs +-B, B = (e^eps + 1)/(e^eps - 1), P[+B | x] = 1/2 + x/(2B);
  variance B^2 - x^2.
- `PM` (seed 001, Algorithm 2): `Piecewise` with t = e^{eps/2}; variance
  x^2/(e^{eps/2} - 1) + (e^{eps/2} + 3)/(3 (e^{eps/2} - 1)^2).
- `HM`: PM with probability alpha, Duchi otherwise; alpha = 1 - e^{-eps/2} for eps > eps*,
  alpha = 0 for eps <= eps* (seed 001 Eq. 7), eps* = ln((-5 + 2 cbrt(6353 - 405 sqrt 241)
  + 2 cbrt(6353 + 405 sqrt 241))/27) ~ 0.61 (Eq. 6). With that alpha the x^2 terms cancel:
  the variance is flat in x.
- `PMSub` (Zhao et al., IEEE IoT-J 2020, "PM-SUB"): `Piecewise` with t = e^{eps/3}.

`Piecewise(epsilon=, t=)` is the window family both PM and PM-SUB belong to: with
D = e^eps - 1, s = e^eps + t, the output lies in [-A, A], A = s(t + 1)/(t D); it is uniform on
the window [L, R] = [s(xt - 1)/(t D), s(xt + 1)/(t D)] with probability e^eps/s and uniform on
the rest of [-A, A] otherwise, so the density is e^eps p0 on the window and
p0 = t D/(2 s^2) outside (ratio exactly e^eps). Variance
(t + 1) x^2/D + s((t + 1)^3 + D)/(3 t^2 D^2); at t = e^{eps/2} this is PM's formula.

- `PTT` (seed 002's I-PTT, eta = 19/10 by default) and `PMOpt` (PM-OPT): the window family
  at t = eta - 1 and at the t of least worst case (the root of t^4 + 2E t^3 - 2E t - E^2).
  The seed's text lost its equations; the reading here (k = (eta - 1) a) is the one the
  authors' figures agree with (I-PTT: 5.43146 at eps = 1), and under it the seed's Theorem 9
  holds only for eps > 1.4506 (shared_spec/published.md).

Three-Outputs, N-output, HM-TP and HM-NP: zeal.mechanism.published.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError, ZealError

__all__ = [
    "Reference", "Laplace", "SCDF", "Staircase", "Duchi", "Piecewise", "PM", "PMSub", "HM",
    "Scaled", "hm_epsilon_star", "all_references", "PTT", "PMOpt", "pm_opt_t",
]


def _epsilon(epsilon) -> float:
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise ZealError(f"epsilon must be a number, got {epsilon!r}") from None
    if not (math.isfinite(e) and e > 0):
        raise ZealError(f"epsilon must be finite and > 0, got {epsilon!r}")
    return e


def _inputs(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(a)):
        raise InputError("reference mechanisms need finite inputs")
    if np.any(np.abs(a) > 1.0):
        raise InputError("reference mechanisms take inputs in [-1, 1] (use Scaled for [lo, hi])")
    return a


def _out(v, x):
    """A float for a scalar x, an array otherwise."""
    return float(v) if np.ndim(x) == 0 else np.asarray(v, dtype=float)


class Reference:
    """Base: a float reference mechanism on [-1, 1]. Subclasses set `name` and implement
    `_sample(x, rng)` and `_variance(x)` on validated arrays; `_worst()` the max over [-1, 1]."""

    name = "reference"
    epsilon: float

    def sample(self, x, rng: np.random.Generator) -> np.ndarray:
        if not isinstance(rng, np.random.Generator):
            raise ZealError("sample needs a numpy.random.Generator (inject it; seed only in tests)")
        a = _inputs(x)
        return np.asarray(self._sample(np.atleast_1d(a), rng), dtype=float).reshape(a.shape)

    def variance(self, x):
        a = _inputs(x)
        return _out(np.broadcast_to(self._variance(a), a.shape), x)

    def worst_variance(self) -> float:
        return float(self._worst())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r})"


class Laplace(Reference):
    """x + Lap(2/eps): the sensitivity of [-1, 1] is 2. Variance 2 b^2 = 8/eps^2."""

    name = "laplace"

    def __init__(self, *, epsilon):
        self.epsilon = _epsilon(epsilon)
        self.scale = 2.0 / self.epsilon

    def _sample(self, x, rng):
        return x + rng.laplace(0.0, self.scale, size=x.shape)

    def _variance(self, x):
        return np.full(x.shape, 8.0 / self.epsilon ** 2)

    def _worst(self):
        return 8.0 / self.epsilon ** 2


def _step_noise_second_moment(m: float, a: float, eps: float) -> float:
    """E[n^2] for seed 001's step density (a on [-m, m], a e^{-k eps} on the k-th step of
    width 2 on each side), in closed form. With b = e^-eps and the k-th step's midpoint
    u_k = m - 1 + 2k: ((u+1)^3 - (u-1)^3)/3 = 2u^2 + 2/3, so
    E[n^2] = 2a [m^3/3 + sum_k b^k (2 u_k^2 + 2/3)], and with c = m - 1,
    sum b^k = b/(1-b), sum k b^k = b/(1-b)^2, sum k^2 b^k = b(1+b)/(1-b)^3."""
    b = math.exp(-eps)
    s0 = b / (1 - b)
    s1 = b / (1 - b) ** 2
    s2 = b * (1 + b) / (1 - b) ** 3
    c = m - 1.0
    return 2 * a * (m ** 3 / 3 + 2 * (c * c * s0 + 4 * c * s1 + 4 * s2) + 2.0 / 3.0 * s0)


class _StepNoise(Reference):
    """x + n with n from the piecewise-constant step density (see the module docstring).
    Sampling: with probability 2am, n is uniform on [-m, m]; otherwise the step k >= 1 has
    probability proportional to e^{-k eps} (a geometric law, success 1 - e^-eps), n is uniform
    on (m + 2(k-1), m + 2k] with a fair sign."""

    m: float
    a: float

    def _sample(self, x, rng):
        n = x.shape
        centre = rng.random(n) < 2 * self.a * self.m
        k = rng.geometric(1.0 - math.exp(-self.epsilon), size=n)
        u = rng.random(n)
        tail = self.m + 2.0 * (k - 1) + 2.0 * (1.0 - u)  # in (m + 2(k-1), m + 2k]
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        noise = np.where(centre, self.m * (2.0 * rng.random(n) - 1.0), sign * tail)
        return x + noise

    def _variance(self, x):
        return np.full(x.shape, self._worst())

    def _worst(self):
        return _step_noise_second_moment(self.m, self.a, self.epsilon)


class SCDF(_StepNoise):
    """Soria-Comas & Domingo-Ferrer's noise as seed 001 parameterises it."""

    name = "scdf"

    def __init__(self, *, epsilon):
        e = self.epsilon = _epsilon(epsilon)
        self.m = 2 * (1 - math.exp(-e) - e * math.exp(-e)) / (e - e * math.exp(-e))
        self.a = e / 4


class Staircase(_StepNoise):
    """Geng et al.'s staircase noise with sensitivity 2 (gamma = 1/(1 + e^{eps/2})), as seed
    001 parameterises it."""

    name = "staircase"

    def __init__(self, *, epsilon):
        e = self.epsilon = _epsilon(epsilon)
        b = math.exp(-e)
        self.m = 2 / (1 + math.exp(e / 2))
        self.a = (1 - b) / (2 * self.m + 4 * b - 2 * self.m * b)


class Duchi(Reference):
    """Duchi et al.'s one-bit mechanism: +-B, P[+B | x] = 1/2 + x/(2B). Unbiased since
    E = B(2P - 1) = x; variance B^2 - x^2; LDP since P[+B | 1]/P[+B | -1] = (B+1)/(B-1) = e^eps."""

    name = "duchi"

    def __init__(self, *, epsilon):
        self.epsilon = _epsilon(epsilon)
        self.b = (math.exp(self.epsilon) + 1) / (math.exp(self.epsilon) - 1)
        self.cells = 2   # a finite output set: one bit

    def _sample(self, x, rng):
        up = rng.random(x.shape) < 0.5 + x / (2 * self.b)
        return np.where(up, self.b, -self.b)

    def _variance(self, x):
        return self.b ** 2 - x * x

    def _worst(self):
        return self.b ** 2


class Piecewise(Reference):
    """The window family of PM and PM-SUB (module docstring): parameter t > 0."""

    name = "piecewise"

    def __init__(self, *, epsilon, t):
        self.epsilon = _epsilon(epsilon)
        t = float(t)
        if not (math.isfinite(t) and t > 0):
            raise ZealError(f"t must be finite and > 0, got {t!r}")
        self.t = t
        ee = math.exp(self.epsilon)
        self.d = ee - 1.0
        self.s = ee + t
        self.big_a = self.s * (t + 1) / (t * self.d)
        self.half = self.s / (t * self.d)            # window half-width
        self.p_window = ee / self.s                  # probability of the window
        self.p_low = t * self.d / (2 * self.s ** 2)  # density outside; inside it is e^eps times

    def window(self, x):
        """(L, R) of the window for input x."""
        c = self.s * np.asarray(x, dtype=float) / self.d
        return c - self.half, c + self.half

    def _sample(self, x, rng):
        lo, hi = self.window(x)
        inside = rng.random(x.shape) < self.p_window
        w = lo + 2 * self.half * rng.random(x.shape)
        # outside: uniform on [-A, L) U (R, A], total length 2A - 2 half
        u = (2 * self.big_a - 2 * self.half) * rng.random(x.shape)
        left = lo + self.big_a
        o = np.where(u < left, -self.big_a + u, hi + (u - left))
        return np.where(inside, w, o)

    def _variance(self, x):
        t, d = self.t, self.d
        return (t + 1) * x * x / d + self.s * ((t + 1) ** 3 + d) / (3 * t * t * d * d)

    def _worst(self):
        return self._variance(1.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, t={self.t!r})"


class PM(Piecewise):
    """Wang et al.'s Piecewise Mechanism (seed 001): t = e^{eps/2}, so A = C = (e^{eps/2}+1)/
    (e^{eps/2}-1) and the window is [(C+1)x/2 - (C-1)/2, (C+1)x/2 + (C-1)/2]."""

    name = "pm"

    def __init__(self, *, epsilon):
        e = _epsilon(epsilon)
        super().__init__(epsilon=e, t=math.exp(e / 2))

    def __repr__(self) -> str:
        return f"PM(epsilon={self.epsilon!r})"


class PMSub(Piecewise):
    """Zhao et al.'s PM-SUB: the window family at t = e^{eps/3}."""

    name = "pm-sub"

    def __init__(self, *, epsilon):
        e = _epsilon(epsilon)
        super().__init__(epsilon=e, t=math.exp(e / 3))

    def __repr__(self) -> str:
        return f"PMSub(epsilon={self.epsilon!r})"


class PTT(Piecewise):
    """Seed 002's I-PTT (Ma, Zhu, Wang): a window L(x) = kx - a, R(x) = kx + a with k fixed at
    (eta - 1) a, density e^eps q inside and q outside, normalised and unbiased -- which is
    exactly the window family at t = eta - 1 (PM is eta = 1 + e^{eps/2}). The seed's example
    eta = 19/10 is the default. Its Theorem 9 (eta = 1.9 beats Duchi at every eps) does not
    hold under this reading: it does for eps > 1.4506 only (shared_spec/published.md)."""

    name = "ptt"

    def __init__(self, *, epsilon, eta=1.9):
        e = _epsilon(epsilon)
        eta = float(eta)
        if not (math.isfinite(eta) and eta > 1):
            raise ZealError(f"eta must be finite and > 1, got {eta!r}")
        self.eta = eta
        super().__init__(epsilon=e, t=eta - 1)

    def __repr__(self) -> str:
        return f"PTT(epsilon={self.epsilon!r}, eta={self.eta!r})"


def pm_opt_t(epsilon) -> float:
    """PM-OPT's window shape: the positive root of t^4 + 2E t^3 - 2E t - E^2 (E = e^eps),
    the t that minimises the family's worst case (d/dt of Var(1) = 0), by bisection on
    [1, E] (the quartic is -E^2 - 2E + 1 + 2E < 0 at t = 1 and > 0 at t = E)."""
    ee = math.exp(_epsilon(epsilon))
    f = lambda t: t ** 4 + 2 * ee * t ** 3 - 2 * ee * t - ee * ee  # noqa: E731
    lo, hi = 1.0, max(ee, 1.0)
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


class PMOpt(Piecewise):
    """PM-OPT: the member of the window family (PM, PM-SUB, PTT) of least worst case."""

    name = "pm-opt"

    def __init__(self, *, epsilon):
        e = _epsilon(epsilon)
        super().__init__(epsilon=e, t=pm_opt_t(e))

    def __repr__(self) -> str:
        return f"PMOpt(epsilon={self.epsilon!r})"


def hm_epsilon_star() -> float:
    """Seed 001's Eq. 6: below this epsilon HM is Duchi's mechanism (alpha = 0)."""
    r = math.sqrt(241)
    return math.log((-5 + 2 * np.cbrt(6353 - 405 * r) + 2 * np.cbrt(6353 + 405 * r)) / 27)


class HM(Reference):
    """Wang et al.'s Hybrid Mechanism: PM with probability alpha, Duchi otherwise. Default
    alpha is seed 001's Eq. 7; an explicit alpha in [0, 1] may be given (keyword)."""

    name = "hm"

    def __init__(self, *, epsilon, alpha=None):
        self.epsilon = _epsilon(epsilon)
        if alpha is None:
            e = self.epsilon
            alpha = 1 - math.exp(-e / 2) if e > hm_epsilon_star() else 0.0
        alpha = float(alpha)
        if not (0.0 <= alpha <= 1.0):
            raise ZealError(f"alpha must be in [0, 1], got {alpha!r}")
        self.alpha = alpha
        self.pm = PM(epsilon=self.epsilon)
        self.duchi = Duchi(epsilon=self.epsilon)

    def _sample(self, x, rng):
        pick = rng.random(x.shape) < self.alpha
        return np.where(pick, self.pm._sample(x, rng), self.duchi._sample(x, rng))

    def _variance(self, x):
        # each branch is unbiased, so Var = alpha Var_P + (1 - alpha) Var_D (no between-branch term)
        return self.alpha * self.pm._variance(x) + (1 - self.alpha) * self.duchi._variance(x)

    def _worst(self):
        # a quadratic in x^2: its max over [0, 1] is at an end
        return max(self._variance(0.0), self._variance(1.0))

    def __repr__(self) -> str:
        return f"HM(epsilon={self.epsilon!r}, alpha={self.alpha!r})"


class Scaled:
    """A reference mechanism carried to inputs in [lo, hi]: x' = (x - mid)/h with
    mid = (lo + hi)/2, h = (hi - lo)/2, report mid + h Y. Unbiased for x; variance h^2 Var(x')."""

    def __init__(self, mechanism: Reference, *, lo, hi):
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ZealError(f"need finite lo < hi, got [{lo!r}, {hi!r}]")
        if not isinstance(mechanism, Reference):
            raise ZealError("Scaled wraps a reference mechanism")
        self.mechanism, self.lo, self.hi = mechanism, lo, hi
        self.mid, self.h = (lo + hi) / 2, (hi - lo) / 2
        self.epsilon = mechanism.epsilon
        self.name = mechanism.name

    def _unit(self, x):
        a = np.asarray(x, dtype=float)
        if not np.all(np.isfinite(a)):
            raise InputError("reference mechanisms need finite inputs")
        if np.any((a < self.lo) | (a > self.hi)):
            raise InputError(f"input outside [{self.lo}, {self.hi}]")
        return np.clip((a - self.mid) / self.h, -1.0, 1.0)

    def sample(self, x, rng):
        return self.mid + self.h * self.mechanism.sample(self._unit(x), rng)

    def variance(self, x):
        return _out(self.h * self.h * np.asarray(self.mechanism.variance(self._unit(x))), x)

    def worst_variance(self) -> float:
        return self.h * self.h * self.mechanism.worst_variance()


def all_references(epsilon) -> list:
    """One of each reference mechanism at this epsilon, in the order of the literature."""
    return [cls(epsilon=epsilon) for cls in (Laplace, SCDF, Staircase, Duchi, PM, HM, PMSub)]
