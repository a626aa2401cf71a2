"""Multi-attribute reports (seed 001, Algorithm 4 and its categorical extension): exact host side.

A multi-attribute profile describes d attributes of one reading tuple, each either
- numeric: its own range [lo, hi] and single-attribute mechanism at budget eps_a -- the window
  grid (`profile`/`grid`, the default) or a table (`table`: duchi, pm, hm, or any callable
  returning a `Table`), or
- categorical: a domain of c values (2 <= c <= 63), perturbed by OUE (Wang et al., optimised
  unary encoding) at eps_a,
and k, the number of attributes each report carries. A report samples k of the d attributes
uniformly without replacement, perturbs each sampled one with eps_a <= eps/k, and sends the k
(attribute index, report) pairs in ascending index order.

API: `Numeric(name, lo, hi, *, bits="auto", mechanism="grid")`, `Categorical(name, domain)`;
`Multi(attributes, epsilon, *, k=None)` with `.k`, `.privacy_ratio()`, `.is_private()`,
`.variance(j, x)`, `.worst_variance_bounds(j)`, `.split()` (the same attributes at eps/d, all
d sent: the baseline), `.canonical()`/`.fingerprint`; `sample_report(multi, row, words)`
(exact, the word contract below), `sample_bulk(multi, rows, rng)` (numpy statistical mode);
`MultiEstimator(multi).summarize(idx, val)`; `eq12_k(epsilon, d)`.

Equation 12 (k). The seed text lost its display equations; the published paper (Wang et al.,
ICDE 2019, "Collecting and analyzing multidimensional data with local differential privacy",
Eq. 12) reads
    k = max{1, min{d, floor(eps / 2.5)}},
derived (footnote 3, details in the full version) by minimising Algorithm 4's worst-case
variance with PM, and the same formula serves HM. `eq12_k` computes it exactly (eps as a
Fraction, 2.5 = 5/2). So k = 1 for every eps < 5: one attribute per report at the full budget.
`Multi.best_k()` finds the k with the smallest exact worst-case variance for the attributes at
hand, as a check on Eq. 12 (the paper's k is for continuous PM on [-1, 1]).

Privacy of the whole report (proof). Fix two tuples x, x' and an output o = (S, (y_j)_{j in S}),
S the sampled index set (|S| = k). The sampling is independent of the tuple, so
    P(o | x) = C(d, k)^-1 * prod_{j in S} P_j(y_j | x_j),
and the sampling factor cancels in the ratio:
    P(o | x) / P(o | x') = prod_{j in S} P_j(y_j | x_j) / P_j(y_j | x'_j) <= prod_{j in S} r_j,
with r_j the exact privacy ratio of attribute j's mechanism (max over its outputs and input
pairs). The bound is attained (the tuples range over a product of domains, so each factor can
be made worst at once), hence the exact privacy ratio of a report is
    R = max_{|S| = k} prod_{j in S} r_j = the product of the k largest r_j.
Each r_j <= L(eps_j) <= e^(eps_j), L the certified Taylor lower bound (`exp_lower_bound`), checked
in Fractions; and the eps_j of any k attributes sum to at most eps (checked exactly: every
eps_j <= eps/k, so the k largest sum to <= eps). Hence R <= prod L(eps_j) <= e^(sum eps_j) <= e^eps.
(Sampling does not amplify pure LDP here: the worst tuple pair differs in every attribute.)
The order of the pairs, the draw order and the count k are fixed or input-independent, so
sending them costs nothing.

OUE with exact rationals. OUE sends one bit per domain value: the true value's bit is 1 with
p = 1/2, every other bit with q = 1/(e^eps_a + 1). e^eps_a is irrational; the profile spends
the rational ratio L_s = floor(L(eps_a) 2^32)/2^32 <= L(eps_a) <= e^eps_a and uses
q = 1/(L_s + 1) = 2^32/(ratio_num + 2^32). For inputs v != v' and an output vector B only bits v
and v' differ in law; the ratio is largest for B_v = 1, B_v' = 0:
    (p/q) * ((1-q)/(1-p)) = (1-q)/q = L_s,
so r_j = L_s exactly, certified <= e^eps_a.

Variance (seed 001, Lemma 5, carried to a range [lo, hi] with mid = (lo+hi)/2, h = (hi-lo)/2).
Per report, attribute j's estimate is Z = mid + (d/k) (g(Y) - mid) 1[j in S], g the attribute
mechanism's unbiased output value. P(j in S) = k/d, so E[Z] = x, and
    Var(Z | x) = (d/k) (sigma^2(x) + (x - mid)^2) - (x - mid)^2
               = (d/k) sigma^2(x) + (d/k - 1)(x - mid)^2,
sigma^2(x) = the attribute mechanism's exact variance at eps_a (in normalised units, h = 1, this
is the paper's (d/k) sigma^2 + (d/k - 1) t^2). A categorical value v: Z_v = (d/k) 1[j in S]
(B_v - q)/(p - q); with a = 1[x_j = v] and P = q + a(p - q),
    Var(Z_v) = (d/k) (P(1-P)/(p-q)^2 + a) - a.
k = d is the baseline (every attribute at eps/d, all sent, d/k = 1): `split()`.

Estimators and intervals. The mean of attribute j over n reports is (1/n) sum_i Z_i (the
paper's, exactly unbiased whatever n); a frequency likewise with Z_v. The 99% interval is
Bernstein's inequality for independent, non-identically distributed, bounded terms:
P(|mean - true| >= lam) <= 2 exp(-n lam^2 / (2 (V + M lam / 3))), V the exact upper bound of
every report's variance (`worst_variance_bounds`) and M the bound on |Z - x|; solved for
2 exp(...) = 0.01. It holds for every n and any readings in the range (no normal approximation),
and each frequency's interval is pointwise (per value, not simultaneous over the domain).
"""
import bisect
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...errors import InputError, ProfileError
from ..grid.bulk import sample_offsets_fast
from ..grid.choose import build as build_grid
from ..core.floatbits import float64_to_bits, hex64
from ..grid.exact import ExactGrid
from ..grid.profile import Profile, epsilon_at_most, exp_lower_bound
from ..core.draws import bernoulli, uniform_below
from ..grid.scalar import ExactZeal
from ..table.mechanism import Table
from ..table import mechanism as _table

FORMAT = "zeal-multi/1"
EQ12_DIVISOR = Fraction(5, 2)
OUE_SCALE_BITS = 32
MAX_DOMAIN = 63      # a categorical report is a c-bit vector; c <= 63 keeps it in an int64
CONFIDENCE = Fraction(99, 100)
EXACT_STEPS = 4096   # grids with at most this many window positions get the exact worst variance


def eq12_k(epsilon, d: int) -> int:
    """Seed 001's Eq. 12: k = max{1, min{d, floor(eps/2.5)}}, exactly."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ProfileError("d must be a positive integer, got %r" % (d,))
    return max(1, min(d, math.floor(Fraction(epsilon) / EQ12_DIVISOR)))


def oue_ratio(epsilon) -> Fraction:
    """L_s = floor(L(eps) 2^32)/2^32 <= L(eps) <= e^eps: the OUE ratio (1-q)/q spent."""
    lb = exp_lower_bound(Fraction(epsilon))
    return Fraction(math.floor(lb * (1 << OUE_SCALE_BITS)), 1 << OUE_SCALE_BITS)


def uniform_below_wide(n: int, words) -> int:
    """Uniform integer in [0, n) for any n >= 1: `uniform_below` when n <= 2^64, else w words
    (w = ceil(bit_length(n)/64)) read as one integer W < 2^(64w), first word most significant,
    and the same rejection: with q = floor(2^(64w)/n), u = floor(W/q) takes each value below n
    for exactly q values of W, so accepting u < n is exact (rejection probability < 1/2)."""
    if n <= 1 << 64:
        return uniform_below(n, words)
    width = -(-n.bit_length() // 64)
    q = (1 << (64 * width)) // n
    while True:
        big = 0
        for _ in range(width):
            big = (big << 64) | words()
        u = big // q
        if u < n:
            return u


def _no_words():
    raise RuntimeError("multi: the attribute samplers take their words from the caller")


# ---- attribute descriptions ---------------------------------------------------------------------
@dataclass(frozen=True)
class Numeric:
    """A numeric attribute. mechanism: "grid" (the window grid at `bits`, "auto" by default),
    "duchi", "pm", "hm" (exact tables on 2^bits cells), or a callable (lo, hi, eps) -> Table."""

    name: str
    lo: float
    hi: float
    bits: object = "auto"
    mechanism: object = "grid"

    kind = "numeric"


@dataclass(frozen=True)
class Categorical:
    """A categorical attribute: its domain (c distinct strings), perturbed by OUE."""

    name: str
    domain: tuple
    ratio_num: int = None   # L_s * 2^32 spent; None: floor(L(eps_a) 2^32), the largest allowed

    kind = "categorical"


# ---- one attribute's exact mechanism at its share of the budget --------------------------------
class _NumericPart:
    def __init__(self, attr: Numeric, eps: Fraction):
        self.attr = attr
        self.lo, self.hi = Fraction(attr.lo), Fraction(attr.hi)
        self.mid, self.h = (self.lo + self.hi) / 2, (self.hi - self.lo) / 2
        mech = attr.mechanism
        if isinstance(mech, Profile) or mech == "grid":
            # the profile stores the largest float64 <= eps (epsilon_at_most): eps_a <= eps;
            # a given grid profile (multi_profile's attribute files) is taken as it is
            prof = mech if isinstance(mech, Profile) else build_grid(
                attr.lo, attr.hi, epsilon_at_most(eps), bits=attr.bits)
            if Fraction(prof.epsilon) > eps:
                raise ProfileError("attribute %s: the grid's epsilon %r is above its share %s"
                                   % (attr.name, prof.epsilon, eps))
            self.profile, self.grid, self.table = prof, ExactGrid(prof), None
            self._zeal = ExactZeal(profile=prof, words=_no_words)
            self.epsilon = Fraction(prof.epsilon)
            self.ratio = self.grid.privacy_ratio
            self.cells = prof.n_cells
        else:
            if getattr(mech, "kind", None) == "table":   # a TableProfile: its exact Table
                tab = mech.table
            elif callable(mech):
                tab = mech(self.lo, self.hi, eps)
            elif mech in ("duchi", "pm", "hm"):
                cells = 1 << (4 if attr.bits in (None, "auto") else int(attr.bits))
                tab = (_table.duchi(self.lo, self.hi, eps) if mech == "duchi"
                       else getattr(_table, mech)(self.lo, self.hi, eps, cells=cells))
            else:
                raise ProfileError("attribute %s: unknown mechanism %r (grid, duchi, pm, hm or a "
                                   "callable returning a Table)" % (attr.name, mech))
            if not isinstance(tab, Table) or tab.epsilon > eps:
                raise ProfileError("attribute %s: the mechanism must be a Table at epsilon <= %s"
                                   % (attr.name, eps))
            self.profile, self.grid, self.table = None, None, tab
            self.epsilon = tab.epsilon
            self.ratio = tab.privacy_ratio()
            self.values = tab.output_values()
            self.cells = tab.cells
            self._cum = [list(itertools.accumulate(row)) for row in tab.weights]
            self._rowsum = [cum[-1] for cum in self._cum]
            # float64 cumulative laws, for the statistical-mode sampler only
            self._cum_float = [np.cumsum([float(p) for p in row]) for row in tab.probs]

    # exact analysis
    def value(self, y) -> Fraction:
        return self.grid.estimate(y) if self.table is None else self.values[y]

    def variance(self, x) -> Fraction:
        return (self.grid.variance(Fraction(x)) if self.table is None
                else self.table.variance(Fraction(x)))

    def variance_upper(self) -> Fraction:
        """An exact upper bound of max_x sigma^2(x). Grid: Var(j | x) is the chord of the
        window variances V(jL) plus f(1-f) slope^2 (stochastic rounding), and V is convex in jL
        (grid.max_window_variance), so max V(0), V(N-Nc) plus slope^2/4 bounds it; table: exact."""
        if self.table is not None:
            return self.table.worst_variance()
        g = self.grid
        ends = []
        for jl in (0, g.n - g.nc):
            m1, m2 = g.window_moments(jl)
            ends.append(m2 - m1 * m1)
        return g.gain ** 2 * (max(ends) + g.slope ** 2 / 4)

    def anchors(self):
        """(readings x_r, variances V_r, step D) at the anchors, or None when there are more
        than EXACT_STEPS of them. Between anchors r and r+1 (f in [0, 1]) both kinds have
        sigma^2 = (1-f) V_r + f V_{r+1} + f(1-f) D^2: a table by table.py's derivation; a grid
        with anchors at the window starts jL = r (Var(j | x) = chord + f(1-f) slope^2, times
        gain^2, and gain * slope = D = (hi - lo)/(N - Nc))."""
        if self.table is not None:
            tab = self.table
            return ([tab.anchor(r) for r in range(tab.anchors + 1)],
                    [tab.anchor_variance(r) for r in range(tab.anchors + 1)], tab.step)
        g = self.grid
        steps = g.n - g.nc
        if steps > EXACT_STEPS:
            return None
        step = (self.hi - self.lo) / steps
        vs = []
        for r in range(steps + 1):
            m1, m2 = g.window_moments(r)
            vs.append(g.gain ** 2 * (m2 - m1 * m1))
        return [self.lo + r * step for r in range(steps + 1)], vs, step

    def dev_max(self) -> Fraction:
        """max over outputs of |g(y) - mid|."""
        if self.table is None:
            a, b = self.grid.estimate_range()
            return max(abs(a - self.mid), abs(b - self.mid))
        return max(abs(v - self.mid) for v in self.values)

    # sampling
    def sample_exact(self, x: Fraction, words) -> int:
        if self.table is None:
            return self._zeal.sample_offset(x, words)
        tab = self.table
        _, b, f = tab._place(x)
        row = b + bernoulli(f.numerator, f.denominator, words)
        u = uniform_below_wide(self._rowsum[row], words)
        return bisect.bisect_right(self._cum[row], u)

    def sample_bulk(self, x: np.ndarray, rng) -> np.ndarray:
        if self.table is None:
            return sample_offsets_fast(self.profile, x, rng)
        # STATISTICAL MODE, float64: the row choice compares a float uniform with the float
        # fraction f, the cell draw a float uniform with the row's float64 cumulative law (the
        # integer weights can exceed 64 bits); exact in law up to float64 rounding.
        # x - lo <= hi - lo is finite (pfile.parameters refuses a wider range), but times R
        # it may not be: a wide range's both sides are scaled by 2^-e (exact), e the binary
        # exponent of hi - lo
        tab = self.table
        span = float(self.hi - self.lo)
        scale = math.ldexp(1.0, -max(math.frexp(span)[1], 0))
        pos = ((np.clip(x, float(self.lo), float(self.hi)) - float(self.lo)) * scale) \
            * tab.anchors / (span * scale)
        b = np.minimum(np.floor(pos).astype(np.int64), tab.anchors - 1)
        row = b + (rng.random(x.shape) < pos - b)
        out = np.empty(x.shape, dtype=np.int64)
        for r in np.unique(row):
            sel = row == r
            cum = self._cum_float[r]
            u = rng.random(int(sel.sum())) * cum[-1]
            out[sel] = np.minimum(np.searchsorted(cum, u, side="right"), tab.cells - 1)
        return out

    def canonical(self) -> dict:
        if self.table is None:
            doc = dict(self.profile.canonical())
            doc["fingerprint"] = self.profile.fingerprint
            return {"kind": "grid", "name": self.attr.name, "profile": doc}
        tab = self.table
        return {"kind": "table", "name": self.attr.name, "lo": str(tab.lo), "hi": str(tab.hi),
                "epsilon": str(tab.epsilon), "weights": [[str(w) for w in row] for row in
                                                         tab.weights],
                "values": [str(v) for v in self.values]}


class _CategoricalPart:
    def __init__(self, attr: Categorical, eps: Fraction):
        dom = tuple(attr.domain)
        if not 2 <= len(dom) <= MAX_DOMAIN or len(set(dom)) != len(dom):
            raise ProfileError("attribute %s: a categorical domain needs 2 to %d distinct values"
                               % (attr.name, MAX_DOMAIN))
        self.attr, self.domain, self.epsilon = attr, dom, eps
        self.ratio = oue_ratio(eps)
        if attr.ratio_num is not None:
            if not 1 << OUE_SCALE_BITS < attr.ratio_num <= self.ratio * (1 << OUE_SCALE_BITS):
                raise ProfileError("attribute %s: ratio_num must be in (2^32, L(eps_a) 2^32]"
                                   % attr.name)
            self.ratio = Fraction(attr.ratio_num, 1 << OUE_SCALE_BITS)
        if not self.ratio > 1:
            raise ProfileError("attribute %s: epsilon %s is too small for OUE at 2^-%d"
                               % (attr.name, eps, OUE_SCALE_BITS))
        self.p = Fraction(1, 2)
        self.q = 1 / (self.ratio + 1)
        self.q_num, self.q_den = self.q.numerator, self.q.denominator
        self.cells = len(dom)

    def index(self, value) -> int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
                and 0 <= value < len(self.domain):
            return int(value)
        try:
            return self.domain.index(value)
        except ValueError:
            raise InputError("attribute %s: %r is not in its domain" % (self.attr.name, value)) \
                from None

    def bit_variance(self, a: int) -> Fraction:
        """P(1-P)/(p-q)^2 for the bit of a value with indicator a."""
        prob = self.q + a * (self.p - self.q)
        return prob * (1 - prob) / (self.p - self.q) ** 2

    def sample_exact(self, value, words) -> int:
        v = self.index(value)
        out = 0
        for i in range(len(self.domain)):
            bit = bernoulli(1, 2, words) if i == v else bernoulli(self.q_num, self.q_den, words)
            out |= bit << i
        return out

    def sample_bulk(self, values: np.ndarray, rng) -> np.ndarray:
        # exact in law given uniform integers: p = 1/2 and q = q_num/q_den by integer comparison
        n, c = values.shape[0], len(self.domain)
        bits = rng.integers(0, self.q_den, size=(n, c)) < self.q_num
        own = rng.integers(0, 2, size=n).astype(bool)
        bits[np.arange(n), values] = own
        return (bits.astype(np.int64) << np.arange(c, dtype=np.int64)).sum(axis=1)

    def canonical(self) -> dict:
        # the share as an exact rational string; the ratio L_s as its numerator over 2^32
        scaled = self.ratio * (1 << OUE_SCALE_BITS)
        return {"kind": "oue", "name": self.attr.name, "domain": list(self.domain),
                "epsilon": str(self.epsilon), "ratio_num": int(scaled),
                "ratio_scale_bits": OUE_SCALE_BITS}


# ---- the multi-attribute profile ----------------------------------------------------------------
class Multi:
    """d attributes, k sampled per report, each at eps_a = (largest float64 <= eps)/k or below."""

    def __init__(self, attributes, epsilon, *, k=None):
        attrs = list(attributes)
        if not attrs:
            raise ProfileError("a multi-attribute profile needs at least one attribute")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            raise ProfileError("attribute names must be distinct")
        self.attributes = attrs
        self.d = len(attrs)
        self.epsilon = Fraction(epsilon_at_most(epsilon))
        if not self.epsilon > 0:
            raise ProfileError("epsilon must be positive")
        self.k = eq12_k(self.epsilon, self.d) if k is None else k
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= self.d:
            raise ProfileError("k must be an integer in [1, d = %d], got %r" % (self.d, k))
        share = self.epsilon / self.k
        self.parts = [(_NumericPart if a.kind == "numeric" else _CategoricalPart)(a, share)
                      for a in attrs]
        self.scale = Fraction(self.d, self.k)     # d/k

    # ---- privacy -------------------------------------------------------------------------------
    def attribute_ratios(self) -> list:
        return [p.ratio for p in self.parts]

    def privacy_ratio(self) -> Fraction:
        """The exact privacy ratio of a whole report: the product of the k largest r_j."""
        out = Fraction(1)
        for r in sorted(self.attribute_ratios(), reverse=True)[:self.k]:
            out *= r
        return out

    def privacy_certificate(self) -> dict:
        """The proof's checks, each exact: r_j <= L(eps_j) for every j, and the k largest eps_j
        sum to <= eps; the product bound prod L(eps_j) over the k worst is returned too."""
        per = [(p.ratio, exp_lower_bound(p.epsilon), p.epsilon) for p in self.parts]
        ok_each = all(r is not None and r <= lb for r, lb, _ in per)
        top_eps = sum(sorted((e for _, _, e in per), reverse=True)[:self.k])
        bound = Fraction(1)
        for lb in sorted((lb for _, lb, _ in per), reverse=True)[:self.k]:
            bound *= lb
        return {"each_attribute_within_its_share": ok_each, "budget_sum": top_eps,
                "budget_sum_within_epsilon": top_eps <= self.epsilon,
                "product_bound": bound}

    def is_private(self) -> bool:
        c = self.privacy_certificate()
        return (c["each_attribute_within_its_share"] and c["budget_sum_within_epsilon"]
                and self.privacy_ratio() <= c["product_bound"])

    # ---- variance ------------------------------------------------------------------------------
    def _numeric(self, j):
        part = self.parts[j]
        if not isinstance(part, _NumericPart):
            raise ProfileError("attribute %s is categorical" % part.attr.name)
        return part

    def variance(self, j: int, x) -> Fraction:
        """Var of one report's estimate of attribute j at reading x (numeric) or, for a
        categorical attribute, of value x's indicator estimate given the attribute's value is
        x (x is a pair (value, true value) there: Var(Z_value | true value))."""
        part = self.parts[j]
        if isinstance(part, _NumericPart):
            x = min(max(Fraction(x), part.lo), part.hi)
            t2 = (x - part.mid) ** 2
            return self.scale * (part.variance(x) + t2) - t2
        value, truth = x
        a = int(part.index(value) == part.index(truth))
        return self.scale * (part.bit_variance(a) + a) - a

    def worst_variance_bounds(self, j: int) -> tuple:
        """(lower, upper) of max over readings of `variance(j, x)`, exact Fractions; equal when
        the maximum is computed exactly (always for tables, categorical attributes and grids of
        at most EXACT_STEPS window positions).

        Exact maximum: between anchors r and r+1, with s = d/k and x = x_r + f D,
            Var(f) = s ((1-f) V_r + f V_{r+1} + f(1-f) D^2) + (s - 1)(x_r + f D - mid)^2,
        a quadratic in f with leading coefficient -s D^2 + (s - 1) D^2 = -D^2 < 0: concave, so
        its maximum on [0, 1] is at an anchor or at the vertex
            f* = (s (V_{r+1} - V_r + D^2) + 2 (s - 1)(x_r - mid) D) / (2 D^2) if in (0, 1).
        Otherwise: lower = the largest of the variances at lo, mid and hi; upper =
        s max sigma^2 + (s - 1) h^2 (`variance_upper`)."""
        part = self.parts[j]
        if isinstance(part, _NumericPart):
            anchors = part.anchors()
            s = self.scale
            if anchors is not None:
                xs, vs, step = anchors
                best = max(s * v + (s - 1) * (x - part.mid) ** 2 for x, v in zip(xs, vs))
                d2 = step * step
                for r in range(len(xs) - 1):
                    f = (s * (vs[r + 1] - vs[r] + d2) + 2 * (s - 1) * (xs[r] - part.mid) * step) \
                        / (2 * d2)
                    if 0 < f < 1:
                        t = xs[r] + f * step - part.mid
                        val = (s * ((1 - f) * vs[r] + f * vs[r + 1] + f * (1 - f) * d2)
                               + (s - 1) * t * t)
                        best = max(best, val)
                return best, best
            lower = max(self.variance(j, x) for x in (part.lo, part.mid, part.hi))
            upper = s * part.variance_upper() + (s - 1) * part.h ** 2
            return lower, upper
        exact = max(self.scale * (part.bit_variance(a) + a) - a for a in (0, 1))
        return exact, exact

    def deviation_bound(self, j: int) -> Fraction:
        """M with |Z - x| <= M for every report and reading (Bernstein's range)."""
        part = self.parts[j]
        if isinstance(part, _NumericPart):
            return self.scale * part.dev_max() + part.h
        return self.scale * max(1 - part.q, part.q) / (part.p - part.q) + 1

    def split(self) -> "Multi":
        """The baseline: the same attributes, every one at eps/d, all d sent (k = d)."""
        return Multi(self.attributes, self.epsilon, k=self.d)

    def best_k(self) -> int:
        """The k with the smallest worst (upper-bound) variance summed over the attributes."""
        def cost(k):
            m = Multi(self.attributes, self.epsilon, k=k)
            return sum(m.worst_variance_bounds(j)[1] / (m.parts[j].h ** 2 if
                       isinstance(m.parts[j], _NumericPart) else 1) for j in range(self.d))
        return min(range(1, self.d + 1), key=cost)

    # ---- the canonical form ----------------------------------------------------------------------
    @property
    def index_bits(self) -> int:
        return (self.d - 1).bit_length()   # ceil(log2 d); 0 for d = 1

    def report_bits(self) -> int:
        """Payload bits of one report at its worst: k (index + widest attribute report)."""
        widths = sorted((p.cells if isinstance(p, _CategoricalPart)
                         else (p.cells - 1).bit_length() for p in self.parts), reverse=True)
        return sum(self.index_bits + w for w in widths[:self.k])

    def canonical(self) -> dict:
        return {"format": FORMAT, "epsilon": hex64(float64_to_bits(float(self.epsilon))),
                "k": self.k, "attributes": [p.canonical() for p in self.parts]}

    def canonical_bytes(self) -> bytes:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True).encode("ascii")

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.canonical_bytes()).hexdigest()


# ---- samplers -----------------------------------------------------------------------------------
def sample_subset(d: int, k: int, words) -> list:
    """k of range(d) uniformly without replacement, ascending: a partial Fisher-Yates shuffle,
    position i swapped with i + uniform_below(d - i) for i < k (each ordered k-prefix has
    probability prod 1/(d - i), so each k-set has k!/(d(d-1)...(d-k+1)) = 1/C(d, k))."""
    perm = list(range(d))
    for i in range(k):
        r = i + uniform_below(d - i, words)
        perm[i], perm[r] = perm[r], perm[i]
    return sorted(perm[:k])


def sample_report(multi: Multi, row, words) -> list:
    """One report, exactly (integers and Fractions only): [(index, value)] for the k sampled
    attributes in ascending index order. Word contract: the subset draw first, then each
    sampled attribute's own sampler in ascending index order (grid: mechanism.md's sampler;
    table: one Bernoulli for the row, one `uniform_below_wide` of the row total; OUE: one
    Bernoulli per domain value in value order, 1/2 for the true value's bit, q for the
    others)."""
    if len(row) != multi.d:
        raise InputError("a reading tuple needs %d values, got %d" % (multi.d, len(row)))
    out = []
    for j in sample_subset(multi.d, multi.k, words):
        part = multi.parts[j]
        value = row[j] if isinstance(part, _CategoricalPart) else Fraction(row[j])
        out.append((j, part.sample_exact(value, words)))
    return out


def sample_bulk(multi: Multi, rows, rng: np.random.Generator) -> tuple:
    """STATISTICAL MODE (numpy Generator, never for devices): (idx, val), two (n, k) int64
    arrays, idx ascending in each row. rows: (n, d) array, categorical columns as value indices.
    The subset is a uniform k-set (argsort of random 63-bit keys: a tie has probability
    below d^2 2^-64 per row and then favours the lower index); grid and OUE draws are exact in
    law given uniform words; table rows use a float comparison (see _NumericPart)."""
    rows = np.asarray(rows)
    n = rows.shape[0]
    keys = rng.integers(0, 1 << 63, size=(n, multi.d), dtype=np.int64)
    idx = np.sort(np.argsort(keys, axis=1, kind="stable")[:, :multi.k], axis=1)
    val = np.empty((n, multi.k), dtype=np.int64)
    for j, part in enumerate(multi.parts):
        sel = idx == j
        users = np.nonzero(sel.any(axis=1))[0]
        if users.size == 0:
            continue
        col = rows[users, j]
        if isinstance(part, _CategoricalPart):
            drawn = part.sample_bulk(col.astype(np.int64), rng)
        else:
            drawn = part.sample_bulk(col.astype(np.float64), rng)
        val[sel] = drawn  # sel is True once per user in users, in row order
    return idx, val


# ---- estimators ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttributeSummary:
    name: str
    kind: str
    n: int                 # reports
    carried: int           # reports that carried this attribute
    mean: float = None     # numeric: the calibrated mean, reading units (None: past float64)
    ci99: tuple = None     # numeric: Bernstein 99% interval (an end past float64: None)
    frequencies: dict = None   # categorical: {value: (estimate, (lo, hi))}, Bernstein 99%

    def as_dict(self) -> dict:
        doc = {"name": self.name, "kind": self.kind, "n": self.n, "carried": self.carried}
        if self.kind == "numeric":
            doc.update(mean_calibrated=self.mean, ci99=list(self.ci99))
        else:
            doc["frequencies"] = {v: {"estimate": e, "ci99": list(ci)}
                                  for v, (e, ci) in self.frequencies.items()}
        return doc


def _log2_floor(x: Fraction) -> int:
    """floor(log2 x) for a positive rational, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def bernstein_halfwidth(n: int, var: Fraction, dev: Fraction, confidence=CONFIDENCE) -> float:
    """lam with 2 exp(-n lam^2 / (2 (V + M lam/3))) = 1 - confidence (float64); math.inf
    when lam itself is beyond float64.

    V and M are exact and may be past float64 (V is about (hi - lo)^2: a range 1e154 wide
    overflows it). lam is homogeneous (V -> s^2 V, M -> s M gives lam -> s lam), so it is
    computed on V / 4^e and M / 2^e, e the binary exponent of max(M, sqrt V), and multiplied by
    2^e at the end: power-of-two scalings are exact, so the result is the float64 formula's
    wherever that neither overflows nor underflows, and finite wherever lam fits in a
    float64."""
    var, dev = Fraction(var), Fraction(dev)
    big_l = math.log(2 / (1 - float(confidence)))
    if var <= 0 and dev <= 0:
        return 0.0
    e = max(_log2_floor(dev) if dev > 0 else -10 ** 9,
            (_log2_floor(var) // 2) if var > 0 else -10 ** 9)
    v = float(var / Fraction(4) ** e) if e >= 0 else float(var * Fraction(4) ** -e)
    m = float(dev / Fraction(2) ** e) if e >= 0 else float(dev * Fraction(2) ** -e)
    b = big_l * m / 3
    scaled = (b + math.sqrt(b * b + 2 * n * big_l * v)) / n
    try:
        return math.ldexp(scaled, e)
    except OverflowError:
        return math.inf


def float_or_none(value):
    """float(value), or None where float64 cannot hold it (JSON has no inf or NaN)."""
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


class MultiEstimator:
    """Per-attribute means (numeric) and frequencies (categorical) from (idx, val) arrays."""

    def __init__(self, multi: Multi):
        self.multi = multi
        self.var = [multi.worst_variance_bounds(j)[1] for j in range(multi.d)]
        self.dev = [multi.deviation_bound(j) for j in range(multi.d)]

    def mean_exact(self, j: int, idx, val) -> Fraction:
        """mid + (d/k)/n * sum over carriers of (g(y) - mid), exactly."""
        m, part = self.multi, self.multi.parts[j]
        n = idx.shape[0]
        ys = val[idx == j]
        if part.table is None:
            g = part.grid    # g(y) = lo + gain (y - intercept): affine, sum it exactly
            total = sum(int(v) for v in ys)
            sum_g = len(ys) * g.lo + g.gain * (total - len(ys) * g.intercept)
        else:
            counts = np.bincount(ys, minlength=part.cells)
            sum_g = sum(int(c) * v for c, v in zip(counts, part.values))
        return part.mid + m.scale * (sum_g - len(ys) * part.mid) / n

    def frequencies_exact(self, j: int, idx, val) -> list:
        """[(d/k)/n * sum over carriers of (B_v - q)/(p - q)] for each value v, exactly."""
        m, part = self.multi, self.multi.parts[j]
        n = idx.shape[0]
        ys = val[idx == j]
        out = []
        for v in range(part.cells):
            ones = int(((ys >> v) & 1).sum())
            out.append(m.scale * (ones - len(ys) * part.q) / ((part.p - part.q) * n))
        return out

    def summarize(self, idx, val) -> list:
        idx, val = np.asarray(idx, dtype=np.int64), np.asarray(val, dtype=np.int64)
        n = idx.shape[0]
        if n == 0:
            raise ValueError("no reports to aggregate")
        out = []
        for j, part in enumerate(self.multi.parts):
            hw = bernstein_halfwidth(n, self.var[j], self.dev[j])
            carried = int((idx == j).sum())
            if isinstance(part, _NumericPart):
                # None where float64 cannot hold the figure: a mean past +-1.8e308 (a range
                # near the top of float64), an interval end past it (a half-width that is)
                mean = float_or_none(self.mean_exact(j, idx, val))
                ci = ((None, None) if mean is None
                      else (float_or_none(mean - hw), float_or_none(mean + hw)))
                out.append(AttributeSummary(part.attr.name, "numeric", n, carried, mean=mean,
                                            ci99=ci))
            else:
                freqs = {v: (float(f), (float(f) - hw, float(f) + hw))
                         for v, f in zip(part.domain, self.frequencies_exact(j, idx, val))}
                out.append(AttributeSummary(part.attr.name, "categorical", n, carried,
                                            frequencies=freqs))
        return out
