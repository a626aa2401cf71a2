"""The later published mean mechanisms, as published: REFERENCES in float64 (numpy), for
comparison only, like zeal.mechanism.references (whose conventions they follow: inputs in
[-1, 1], unbiased, `sample(x, rng)`, `variance(x)`, `worst_variance()`).

Definitions: MECHANISMS.md of the project's design notes, restated in shared_spec/published.md.
E = e^eps throughout.

- `ThreeOutputs` (Zhao et al., IEEE IoT-J 2021): outputs {-C, 0, C}, C = E(E+1)/((E-1)(E-P0)),
  with the published P0 (`three_outputs_p0`): 0 below ln 2 (Duchi), the root in
  [0, E/(E+2)] of -2P^3 + (E^2+4E+5)P^2 + (E^3+4E^2-7E)P - 2E^3 + 4E^2 up to
  ln((3 + sqrt 65)/2), E/(E+2) above. The root is found by bisection (a trigonometric closed
  form circulates with a sign error).
- `NOutput` (Baek & Chung): outputs +-a_1 < ... < +-a_n (and 0 when N = 2n + 1 is odd);
  p = (1 - p0)/(E + 2n - 1), t = (E - 1) p, a_n = 1/t, anchors x_j = t a_j; at x_j the output a_j
  has probability E p, the zero output p0, every other output p; at x = 0 the zero output has
  E p0 and +-a_1 have (1 - 2(n-1)p - E p0)/2 each; linear between anchors, mirrored for
  x < 0. Unbiased at every anchor, hence everywhere; every probability of a +-a output lies in
  [p, E p] and the zero output's in [p0, E p0] (given p0 <= p), so the ratio is at most E.
  `best_noutput(eps, n_outputs)` searches its free values (a_1..a_{n-1}, p0).
- `Mixture`: one mechanism with probability w, another otherwise (each unbiased, so the
  variance is the weighted sum). `hm_tp(eps)`: PM-SUB and Three-Outputs, the weight that
  minimises the worst case; `hm_np(eps)`: PM-SUB and the best N-output over N, outputs and
  weight.

Worst cases are exact maxima of piecewise quadratics: every mechanism here gives its variance
on [0, 1] (all are symmetric) as `pieces()`, [(x_lo, x_hi, (c0, c1, c2))] with Var(x) =
c0 + c1 x + c2 x^2 on [x_lo, x_hi]; a mixture adds the pieces on the union of the breakpoints.
"""
from __future__ import annotations

import functools
import math
from typing import List, Sequence, Tuple

import numpy as np

from ..errors import ZealError
from .references import Duchi, Piecewise, PMSub, Reference, _epsilon

Piece = Tuple[float, float, Tuple[float, float, float]]

__all__ = ["ThreeOutputs", "NOutput", "Mixture", "three_outputs_p0", "best_noutput",
           "hm_tp", "hm_np", "pieces_of", "worst_of_pieces", "N_MAX"]

N_MAX = 8   # the largest N best_noutput searches by default (the optimum is far below it)


# ---- piecewise quadratics -------------------------------------------------------------------
def _poly_max(lo: float, hi: float, c) -> float:
    c0, c1, c2 = c
    f = lambda x: c0 + c1 * x + c2 * x * x  # noqa: E731
    best = max(f(lo), f(hi))
    if c2 < 0:
        v = -c1 / (2 * c2)
        if lo < v < hi:
            best = max(best, f(v))
    return best


def worst_of_pieces(pieces: Sequence[Piece]) -> float:
    """The maximum over [0, 1] of a variance given by its pieces."""
    return max(_poly_max(lo, hi, c) for lo, hi, c in pieces)


def pieces_of(mech) -> List[Piece]:
    """The variance pieces of a mechanism on [0, 1] (module doc)."""
    if hasattr(mech, "pieces"):
        return mech.pieces()
    if isinstance(mech, Piecewise):
        t, d = mech.t, mech.d
        return [(0.0, 1.0, (mech.s * ((t + 1) ** 3 + d) / (3 * t * t * d * d), 0.0,
                            (t + 1) / d))]
    if isinstance(mech, Duchi):
        return [(0.0, 1.0, (mech.b ** 2, 0.0, -1.0))]
    raise ZealError("no variance pieces for %r" % (mech,))


def _variance_from_pieces(pieces, x):
    a = np.abs(np.asarray(x, dtype=float))
    out = np.zeros_like(a)
    for lo, hi, (c0, c1, c2) in pieces:
        on = (a >= lo) & (a <= hi)
        out = np.where(on, c0 + c1 * a + c2 * a * a, out)
    return out


# ---- Three-Outputs ----------------------------------------------------------------------------
def three_outputs_p0(epsilon: float) -> float:
    """The published P0 = P(0 | x = 0) of Three-Outputs (module doc)."""
    eps = _epsilon(epsilon)
    e = math.exp(eps)
    if eps < math.log(2):
        return 0.0
    top = e / (e + 2)
    if eps > math.log((3 + math.sqrt(65)) / 2):
        return top

    def g(p):
        return (-2 * p ** 3 + (e * e + 4 * e + 5) * p * p + (e ** 3 + 4 * e * e - 7 * e) * p
                - 2 * e ** 3 + 4 * e * e)

    lo, hi = 0.0, top
    glo = g(lo)
    if glo * g(hi) > 0:  # no sign change: the end nearer a root (the cubic's values are tiny)
        return lo if abs(glo) < abs(g(hi)) else hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if (g(mid) > 0) == (glo > 0):
            lo, glo = mid, g(mid)
        else:
            hi = mid
    return (lo + hi) / 2


class ThreeOutputs(Reference):
    """Zhao et al.'s Three-Outputs with P0 (default: the published `three_outputs_p0`)."""

    name = "three-outputs"

    def __init__(self, *, epsilon, p0=None):
        self.epsilon = _epsilon(epsilon)
        e = self.e = math.exp(self.epsilon)
        p0 = three_outputs_p0(self.epsilon) if p0 is None else float(p0)
        if not 0.0 <= p0 <= e / (e + 2) + 1e-15:
            raise ZealError("P0 must be in [0, E/(E+2)], got %r" % p0)
        self.p0 = p0
        self.c = e * (e + 1) / ((e - 1) * (e - p0))
        self.cells = 3

    def probabilities(self, x):
        """(P(C | x), P(0 | x), P(-C | x)) for x (arrays)."""
        e, p0 = self.e, self.p0
        a = np.abs(np.asarray(x, dtype=float))
        up = (1 - p0) / 2 + ((e - p0) / (e + 1) - (1 - p0) / 2) * a
        zero = p0 * (1 - (1 - 1 / e) * a)
        down = 1 - up - zero
        pos = np.asarray(x, dtype=float) >= 0
        return np.where(pos, up, down), zero, np.where(pos, down, up)

    def _sample(self, x, rng):
        up, zero, _ = self.probabilities(x)
        u = rng.random(x.shape)
        return np.where(u < up, self.c, np.where(u < up + zero, 0.0, -self.c))

    def pieces(self):
        c2 = self.c * self.c
        return [(0.0, 1.0, (c2 * (1 - self.p0), c2 * self.p0 * (1 - 1 / self.e), -1.0))]

    def _variance(self, x):
        return _variance_from_pieces(self.pieces(), x)

    def _worst(self):
        return worst_of_pieces(self.pieces())

    def __repr__(self):
        return "ThreeOutputs(epsilon=%r, p0=%r)" % (self.epsilon, self.p0)


# ---- N-output ------------------------------------------------------------------------------------
class NOutput(Reference):
    """Baek & Chung's N-output mechanism (module doc). `inner`: a_1 < ... < a_{n-1} (the
    outputs below a_n = 1/t, which is fixed); `p0`: the zero output's probability away from
    0 (odd N only; 0 for even N), at most p."""

    name = "n-output"

    def __init__(self, *, epsilon, n_outputs, inner=(), p0=0.0):
        self.epsilon = _epsilon(epsilon)
        e = self.e = math.exp(self.epsilon)
        if isinstance(n_outputs, bool) or not isinstance(n_outputs, int) or n_outputs < 2:
            raise ZealError("N must be an integer >= 2, got %r" % (n_outputs,))
        self.n_outputs = n_outputs
        n = self.n = n_outputs // 2
        odd = n_outputs % 2 == 1
        p0 = float(p0) if odd else 0.0
        if len(inner) != n - 1:
            raise ZealError("N = %d takes %d inner outputs, got %d" % (n_outputs, n - 1,
                                                                        len(inner)))
        self.p = (1 - p0) / (e + 2 * n - 1)
        if not 0.0 <= p0 <= self.p * (1 + 1e-12):
            raise ZealError("p0 must be in [0, 1/(E + N - 1)], got %r" % p0)
        self.p0 = p0
        self.t = (e - 1) * self.p
        a = [float(v) for v in inner] + [1 / self.t]
        if any(not (0 < a[i] < a[i + 1]) for i in range(n - 1)) or a[0] <= 0:
            raise ZealError("inner outputs must increase from above 0 to below 1/t = %g"
                            % (1 / self.t))
        self.a = np.array(a)
        self.values = np.concatenate([-self.a[::-1], [0.0] if odd else [], self.a])
        self.cells = len(self.values)
        # probability rows at the anchors 0 = x_0 < x_1 < ... < x_n = 1
        self.anchors = np.concatenate([[0.0], self.t * self.a])
        self.anchors[-1] = 1.0  # t a_n = 1 exactly (float rounding aside)
        if not np.all(np.diff(self.anchors) > 0):
            raise ZealError("the outputs are too close together to tell their anchors apart")
        k = len(self.values)
        rows = np.full((n + 1, k), self.p)
        mid = n  # index of the zero output (odd) or of a_1 (even: values[n] = a_1)
        if odd:
            rows[:, mid] = p0
            rows[0, mid] = e * p0
            first_pos, first_neg = mid + 1, mid - 1
        else:
            first_pos, first_neg = n, n - 1
        q0 = (1 - 2 * (n - 1) * self.p - e * p0) / 2
        rows[0, first_pos] = rows[0, first_neg] = q0
        for j in range(1, n + 1):
            rows[j, first_pos + j - 1] = e * self.p
        self.rows = rows

    def probabilities(self, x):
        """P(values | x): an array of shape x.shape + (N,)."""
        x = np.asarray(x, dtype=float)
        a = np.abs(x)
        seg = np.clip(np.searchsorted(self.anchors, a, side="right") - 1, 0, self.n - 1)
        lo, hi = self.anchors[seg], self.anchors[seg + 1]
        w = ((a - lo) / (hi - lo))[..., None]
        probs = (1 - w) * self.rows[seg] + w * self.rows[seg + 1]
        return np.where((x < 0)[..., None], probs[..., ::-1], probs)

    def _sample(self, x, rng):
        cum = np.cumsum(self.probabilities(x), axis=-1)
        u = rng.random(x.shape)[..., None]
        idx = np.minimum((u >= cum).sum(axis=-1), len(self.values) - 1)
        return self.values[idx]

    def pieces(self):
        sq = self.values ** 2
        s = self.rows @ sq           # E[Y^2 | x_j] at the anchors
        out = []
        for j in range(self.n):
            x0, x1 = self.anchors[j], self.anchors[j + 1]
            m = (s[j + 1] - s[j]) / (x1 - x0)
            out.append((float(x0), float(x1), (float(s[j] - m * x0), float(m), -1.0)))
        return out

    def _variance(self, x):
        return _variance_from_pieces(self.pieces(), x)

    def _worst(self):
        return worst_of_pieces(self.pieces())

    def __repr__(self):
        return "NOutput(epsilon=%r, n_outputs=%d, inner=%r, p0=%r)" % (
            self.epsilon, self.n_outputs, list(self.a[:-1]), self.p0)


# ---- mixtures ------------------------------------------------------------------------------------
class Mixture(Reference):
    """`first` with probability `weight`, `second` otherwise (both unbiased: the variance
    is the weighted sum of theirs)."""

    def __init__(self, first, second, weight, *, name="mixture"):
        self.first, self.second, self.weight = first, second, float(weight)
        if not 0.0 <= self.weight <= 1.0:
            raise ZealError("the weight must be in [0, 1], got %r" % weight)
        self.epsilon = first.epsilon
        self.name = name

    def _sample(self, x, rng):
        pick = rng.random(x.shape) < self.weight
        return np.where(pick, self.first._sample(x, rng), self.second._sample(x, rng))

    def pieces(self):
        return mix_pieces(pieces_of(self.first), pieces_of(self.second), self.weight)

    def _variance(self, x):
        return _variance_from_pieces(self.pieces(), x)

    def _worst(self):
        return worst_of_pieces(self.pieces())

    def __repr__(self):
        return "Mixture(%r, %r, weight=%r)" % (self.first, self.second, self.weight)


def mix_pieces(a, b, w) -> List[Piece]:
    """w A + (1 - w) B on the union of their breakpoints."""
    cuts = sorted({0.0, 1.0} | {p[0] for p in a} | {p[1] for p in a} | {p[0] for p in b}
                  | {p[1] for p in b})
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        mid = (lo + hi) / 2
        ca = next(c for l0, h0, c in a if l0 <= mid <= h0)
        cb = next(c for l0, h0, c in b if l0 <= mid <= h0)
        out.append((lo, hi, tuple(w * u + (1 - w) * v for u, v in zip(ca, cb))))
    return out


def _best_weight(a, b) -> Tuple[float, float]:
    """(weight, worst) minimising the worst case of w A + (1 - w) B over w in [0, 1]: convex
    in w (a maximum of functions affine in w), so a golden-section search finds it."""
    pa, pb = pieces_of(a), pieces_of(b)
    f = lambda w: worst_of_pieces(mix_pieces(pa, pb, w))  # noqa: E731
    lo, hi = 0.0, 1.0
    g = (math.sqrt(5) - 1) / 2
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(100):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    w = (lo + hi) / 2
    best = min((f(0.0), 0.0), (f(1.0), 1.0), (f(w), w))
    return best[1], best[0]


def hm_tp(epsilon) -> Mixture:
    """HM-TP: PM-SUB with the weight that minimises the worst case, Three-Outputs (published
    P0) otherwise."""
    pm, to = PMSub(epsilon=epsilon), ThreeOutputs(epsilon=epsilon)
    w, _ = _best_weight(pm, to)
    return Mixture(pm, to, w, name="hm-tp")


def _noutput_from(params, epsilon, n_outputs) -> NOutput:
    """An N-output mechanism from unconstrained parameters: the gaps between the outputs
    (softmax shares of a_n) and, for odd N, p0 = p_max sigmoid(last)."""
    e = math.exp(epsilon)
    n = n_outputs // 2
    odd = n_outputs % 2 == 1
    params = list(params)
    p0 = 0.0
    if odd:
        s = params.pop()
        p0 = (1 / (e + 2 * n)) / (1 + math.exp(-s))
    p = (1 - p0) / (e + 2 * n - 1)
    top = 1 / ((e - 1) * p)
    shares = np.exp(np.array(params + [0.0]))
    shares = np.cumsum(shares / shares.sum())[:-1]
    return NOutput(epsilon=epsilon, n_outputs=n_outputs, inner=list(top * shares), p0=p0)


def best_noutput(epsilon, n_outputs, *, partner=None) -> Tuple[NOutput, float, float]:
    """(mechanism, weight, worst): the N-output mechanism whose worst case -- alone, or
    mixed with `partner` at the best weight -- is least (Nelder-Mead from several starts
    over its free values; the weight by `_best_weight`). Weight 1 when alone."""
    from scipy.optimize import minimize

    eps = _epsilon(epsilon)
    n = n_outputs // 2
    dims = (n - 1) + (n_outputs % 2)

    def worst(params):
        try:
            mech = _noutput_from(params, eps, n_outputs)
        except (ZealError, FloatingPointError, OverflowError):
            return float("inf")
        if partner is None:
            return mech.worst_variance()
        return _best_weight(mech, partner)[1]

    if dims == 0:
        starts = [np.zeros(0)]
    else:
        rng = np.random.default_rng(n_outputs)
        starts = [np.zeros(dims)] + [rng.normal(0, 1.5, dims) for _ in range(5)]
    best = None
    for x0 in starts:
        if dims == 0:
            got = (x0, worst(x0))
        else:
            r = minimize(worst, x0, method="Nelder-Mead",
                         options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 4000})
            got = (r.x, r.fun)
        if best is None or got[1] < best[1]:
            best = got
    mech = _noutput_from(best[0], eps, n_outputs)
    w = 1.0 if partner is None else _best_weight(mech, partner)[0]
    return mech, w, best[1]


@functools.lru_cache(maxsize=64)
def _alone(epsilon: float, n_outputs: int) -> NOutput:
    return best_noutput(epsilon, n_outputs)[0]


def noutput_best_n(epsilon, n_max: int = N_MAX) -> NOutput:
    """The N-output mechanism of least worst case over N = 2..n_max (each N's outputs chosen
    for its own worst case)."""
    eps = _epsilon(epsilon)
    return min((_alone(eps, k) for k in range(2, n_max + 1)), key=lambda m: m.worst_variance())


def hm_np(epsilon, n_max: int = N_MAX, joint: bool = False) -> Mixture:
    """HM-NP as published: for each N the N-output mechanism chosen for its own worst case
    (`best_noutput`), mixed with PM-SUB at the weight that minimises the mixture's worst case;
    the best N. (This is what reproduces Baek & Chung's figures: at eps = 4 their N = 4,
    outputs +-0.39476, +-1.07463, weight 0.301887.) joint=True chooses the outputs for the
    mixture instead, which does better at large eps (0.152181 against 0.153826 at eps = 4,
    with N = 5): not the published mechanism, named "hm-np-joint"."""
    eps = _epsilon(epsilon)
    pm = PMSub(epsilon=eps)
    if joint:
        mech, w, _ = min((best_noutput(eps, k, partner=pm) for k in range(2, n_max + 1)),
                         key=lambda got: got[2])
        return Mixture(mech, pm, w, name="hm-np-joint")
    got = []
    for k in range(2, n_max + 1):
        mech = _alone(eps, k)
        w, worst = _best_weight(mech, pm)
        got.append((worst, k, mech, w))
    _, _, mech, w = min(got, key=lambda g: (g[0], g[1]))
    return Mixture(mech, pm, w, name="hm-np")
