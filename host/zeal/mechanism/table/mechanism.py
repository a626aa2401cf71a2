"""Table mechanisms: the exact host-side analysis (issue 10, items 2 and 3; host only).

A table holds R+1 anchor rows over [lo, hi] (anchor x_r = lo + r*D, D = (hi-lo)/R) and N
output cells with non-negative integer weights W[r][j]; row r's law is P[r][j] = W[r][j]/S_r
(S_r the row total). A reading x (clamped to [lo, hi]) sits at pos = (x-lo)/(hi-lo)*R; with
b = floor(pos) and f = pos - b the device uses row b with probability 1-f and row b+1 with
probability f (stochastic rounding, exact Bernoulli), then draws the cell from that row. So
P(j | x) = (1-f) P[b][j] + f P[b+1][j]. Everything here is a Fraction; nothing is sampled.

API: `Table(lo, hi, epsilon, weights, *, values=None, check=True)`; `.privacy_ratio()`,
`.is_private()`, `.output_values()`, `.distribution(x)`, `.variance(x)`, `.worst_variance()`,
`.worst_input()`. Constructors: `duchi`, `pm`, `hm`. A table that breaks epsilon, or admits
no unbiased g, raises ProfileError when built (check=False builds it anyway, for inspection).

Privacy of the mixing. For a column j let m_j = min_r P[r][j] and M_j = max_r P[r][j]. For
any reading, P(j | x) = (1-f) P[b][j] + f P[b+1][j] is a convex combination of two entries of
column j, so m_j <= P(j | x) <= M_j. Hence for any two readings x, x' the ratio
P(j | x)/P(j | x') <= M_j/m_j <= privacy_ratio() (and a column with m_j = 0 < M_j makes the
ratio infinite: such a table is refused). `is_private()` compares privacy_ratio() with L, the
certified rational lower bound of e^eps (`profile.exp_lower_bound`, a Taylor partial sum of
positive terms), so ratio <= L <= e^eps: every column ratio of every mixture is <= e^eps.

Unbiasedness everywhere from the anchors. E[g(J) | x] = sum_j g(j) P(j | x)
= (1-f) E[g | x_b] + f E[g | x_{b+1}]; if E[g | x_r] = x_r at every anchor this is
(1-f) x_b + f x_{b+1} = x_b + f D = lo + pos*D = x (pos is affine in x). So the R+1 linear
equations sum_j P[r][j] g(j) = x_r are necessary and sufficient. `output_values()` solves them
in Fractions. When they have many solutions the canonical choice is the one minimising
sum_j d_j g(j)^2 with d_j = sum_r P[r][j], i.e. minimising the sum of the anchor variances
sum_r Var(g | x_r) (a weighted least-norm solution: g = D^-1 A^T lam with
(A D^-1 A^T) lam = x, solved by exact elimination; a column no row uses gets g = 0). When the
system has no solution (e.g. two equal rows at different anchors) the table is refused.

Exact worst variance. Let V_r = Var(g | x_r) = sum_j P[r][j] g(j)^2 - x_r^2. Between anchors
b and b+1, E[g^2 | x] = (1-f) E[g^2 | x_b] + f E[g^2 | x_{b+1}] (linear in f) while
x^2 = ((1-f) x_b + f x_{b+1})^2, so
    Var(x) = (1-f) V_b + f V_{b+1} + f(1-f) D^2,
a concave quadratic in f (leading coefficient -D^2). Its maximum on [0, 1] is at an
endpoint (an anchor) or at the vertex f* = 1/2 + (V_{b+1} - V_b)/(2 D^2) when 0 < f* < 1;
`worst_variance()` evaluates these R+1 anchors and at most R vertices exactly and returns the
largest. (The mixing adds f(1-f)D^2 >= 0 to the chord: the stochastic rounding costs variance
between anchors, at most D^2/4.)

Exact family members (item 3), on N cells (a device with m bits allows N <= 2^m):
- `duchi`: N = 2, R = 1. Duchi's law P(+ | x) = 1/2 + x(e-1)/(2(e+1)) (reading scaled to
  [-1, 1]) is affine in x, so the two anchor rows at lo and hi reproduce it exactly at every
  x; e^eps is irrational, so the table uses the rational ratio L_s = floor(L 2^s)/2^s <= L
  <= e^eps (s = scale_bits, default 32): rows (L_s, 1) and (1, L_s) scaled to integers, outputs
  mid -/+ h B with B = (L_s+1)/(L_s-1), h = (hi-lo)/2. Its variance is exactly Duchi's
  formula with e^eps replaced by L_s: h^2 B^2 - (x - mid)^2, worst h^2 B^2 at mid. The only
  change against the continuous formula is B(L_s)^2 - B(e^eps)^2 > 0, of relative size
  about 4 e^eps (e^eps - L_s)/(e^2eps - 1) < 2^-30 for eps >= 1/4.
- `pm`: the piecewise mechanism on N cells: a window of Nc cells with weight hi_w, the other
  N - Nc cells with weight lo_w, hi_w/lo_w = the ratio (default L_s); R = N - Nc anchors,
  row r the window at cells r..r+Nc-1 (today's window grid at small N). PM's law is not affine
  in x (the window slides), so it needs one anchor per cell shift: R = N - Nc, the number of
  positions the window takes; between two shifts the stochastic rounding gives exactly the
  cell masses of a window starting part-way through a cell. g is affine in the cell index
  (E[j | x_r] is affine in r). Nc defaults to the one with the smallest exact worst variance.
  Where discretisation changes the variance, exactly: when the cells match a continuous PM
  with parameter a (N/Nc = a + 1, ratio a^2 <= e^eps; cell width w = 2hC/N, C = (a+1)/(a-1)),
  at a reading with mixing weight f between anchors (D = (hi-lo)/(N-Nc)), on [-1, 1]:
      Var_table(x) = Var_PM(x) - w^2/12 + f(1-f) D^2 a/(a-1),
      Var_PM(x) = x^2/(a-1) + (a+3)/(3(a-1)^2)   (Wang et al.'s formula at e^(eps/2) = a).
  At anchors the cells are whole (binning each uniform piece to its centre removes its
  within-cell variance w^2/12); between anchors the table's variance is the chord of the
  anchor variances plus f(1-f)D^2, and the chord of Var_PM exceeds Var_PM by f(1-f)D^2/(a-1).
  With the full budget (ratio L_s) and a free Nc the table is no longer a binned PM; its
  variance is computed exactly by `variance` and compared with the formula in the report.
- `hm`: Wang et al.'s hybrid: with probability alpha the PM table on N-2 cells, otherwise
  Duchi's 2 cells (at the PM's anchors; Duchi's law is affine so it is exact there).
  alpha = 1 - 1/a_s (a_s the rational lower bound of e^(eps/2) at scale 2^-s) when eps > eps*
  (~0.61, the paper's threshold), else alpha = 0 and HM is Duchi. Each column belongs to one
  part, so its ratio is that part's; Var_HM(x) = alpha Var_PMtable(x) + (1-alpha) Var_D(x)
  exactly (both parts unbiased).
- `three_outputs`: Zhao et al.'s Three-Outputs as published (shared_spec/published.md) with
  the budget ratio L in place of E: 3 cells {-C, 0, C}, C = L(L+1)/((L-1)(L-P0)), anchors
  lo, mid, hi (R = 2), rows (at x = -1, 0, 1 on [-1, 1])
      [(L-P0)/(L+1), P0/L, (L-P0)/(L(L+1))],  [(1-P0)/2, P0, (1-P0)/2],  and the mirror,
  P0 the published rule's root with L for E, as a rational (a denominator <= 2^(s/3)) clamped
  to [0, L/(L+2)]: every column's ratio is exactly L (zero column: P0 vs P0/L; outer ones:
  (L-P0)/(L+1) vs (L-P0)/(L(L+1))) and the middle row lies between. Below ln 2 (P0 = 0) it
  is Duchi's two cells.
- PM-SUB, and the LP versions of Three-Outputs and N-output: built as profiles by
  zeal.mechanism.table.profile.build (PM-SUB is `pm` at Zhao et al.'s window t = e^(eps/3);
  three-outputs-lp and n-output-lp take their structure from the papers — 3 cells with
  anchors lo, mid, hi; N cells with N anchors — and their probabilities from the LP designer,
  zeal.mechanism.table.design). The published N-output is not a table profile: its anchors
  x_j = t a_j do not fall on a table's evenly spaced anchors.

The device format of a table ("zeal-table/1": integer weights, output values a_j/Q) and its
check list are zeal.mechanism.table.profile's (shared_spec/profile.md); the sampler is
zeal.mechanism.table.sampler's (shared_spec/mechanism.md section 9).
"""
import math
from fractions import Fraction

from ...errors import ProfileError
from ..core.floatbits import as_fraction
from ..core.pfile import exp_lower_bound

# Wang et al.'s eps* (HM uses PM only above it): ln((-5 + 2 cbrt(6353 - 405 sqrt(241))
# + 2 cbrt(6353 + 405 sqrt(241)))/27); the float is ample to place the eps of a table.
_EPS_STAR = math.log((-5 + 2 * (6353 - 405 * math.sqrt(241)) ** (1 / 3)
                      + 2 * (6353 + 405 * math.sqrt(241)) ** (1 / 3)) / 27)


def _solve(m, rhs):
    """A solution of m y = rhs (square, Fractions), any one if singular; None if none."""
    n = len(m)
    a = [list(row) + [rhs[i]] for i, row in enumerate(m)]
    pivots, row = [], 0
    for col in range(n):
        p = next((i for i in range(row, n) if a[i][col] != 0), None)
        if p is None:
            continue
        a[row], a[p] = a[p], a[row]
        inv = 1 / a[row][col]
        a[row] = [v * inv for v in a[row]]
        for i in range(n):
            if i != row and a[i][col] != 0:
                k = a[i][col]
                a[i] = [v - k * w for v, w in zip(a[i], a[row])]
        pivots.append(col)
        row += 1
    if any(a[i][n] != 0 for i in range(row, n)):
        return None
    y = [Fraction(0)] * n
    for i, col in enumerate(pivots):
        y[col] = a[i][n]
    return y


class Table:
    """Exact privacy ratio, unbiased output values and variance of a table mechanism."""

    def __init__(self, lo, hi, epsilon, weights, *, values=None, check=True):
        self.lo, self.hi = as_fraction(lo, "lo"), as_fraction(hi, "hi")
        self.epsilon = as_fraction(epsilon, "epsilon")
        if not self.lo < self.hi:
            raise ProfileError("range is empty: lo (%s) must be below hi (%s)"
                               % (self.lo, self.hi))
        if not self.epsilon > 0:
            raise ProfileError("epsilon must be positive, got %s" % self.epsilon)
        rows = [list(r) for r in weights]
        if len(rows) < 2:
            raise ProfileError("a table needs at least 2 anchor rows, got %d" % len(rows))
        n = len(rows[0])
        if n < 2:
            raise ProfileError("a table needs at least 2 output cells, got %d" % n)
        for r, row in enumerate(rows):
            if len(row) != n:
                raise ProfileError("table row %d has %d cells, row 0 has %d" % (r, len(row), n))
            if any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in row):
                raise ProfileError("table row %d: weights must be non-negative integers" % r)
            if sum(row) == 0:
                raise ProfileError("table row %d has total weight 0" % r)
        self.weights = rows
        self.anchors = len(rows) - 1          # R
        self.cells = n                        # N
        self.step = (self.hi - self.lo) / self.anchors   # D
        self.probs = [[Fraction(w, sum(row)) for w in row] for row in rows]
        self._given = (None if values is None
                       else [as_fraction(v, "output value") for v in values])
        if self._given is not None and len(self._given) != n:
            raise ProfileError("%d output values for %d cells" % (len(self._given), n))
        self._values = None
        if check:
            self.check()

    def anchor(self, r) -> Fraction:
        return self.lo + r * self.step

    # ---- privacy ----------------------------------------------------------------------------
    def privacy_ratio(self):
        """max over columns of max_r P[r][j] / min_r P[r][j]; None (infinite) when a column
        holds both a zero and a non-zero; 1 when no column varies."""
        worst = Fraction(1)
        for j in range(self.cells):
            col = [row[j] for row in self.probs]
            hi, lo = max(col), min(col)
            if hi == 0:
                continue
            if lo == 0:
                return None
            worst = max(worst, hi / lo)
        return worst

    def is_private(self) -> bool:
        ratio = self.privacy_ratio()
        return ratio is not None and ratio <= exp_lower_bound(self.epsilon)

    def check(self):
        """Refuse (ProfileError) a table that breaks epsilon or admits no unbiased g."""
        ratio = self.privacy_ratio()
        if ratio is None:
            raise ProfileError("table breaks epsilon: a column is zero in one row and not in "
                               "another (infinite privacy ratio)")
        if not ratio <= exp_lower_bound(self.epsilon):
            raise ProfileError("table breaks epsilon: privacy ratio %.6g exceeds e^%s = %.6g"
                               % (ratio, self.epsilon, math.exp(self.epsilon)))
        self.output_values()

    # ---- the estimator ----------------------------------------------------------------------
    def output_values(self) -> list:
        """g(j) with sum_j P[r][j] g(j) = x_r at every anchor (see the module docstring for
        the canonical choice); ProfileError when no such g exists."""
        if self._values is not None:
            return list(self._values)
        xs = [self.anchor(r) for r in range(self.anchors + 1)]
        if self._given is not None:
            g = self._given
        else:
            used = [j for j in range(self.cells) if any(row[j] for row in self.probs)]
            d = {j: sum(row[j] for row in self.probs) for j in used}
            k = self.anchors + 1
            m = [[sum(self.probs[r][j] * self.probs[s][j] / d[j] for j in used)
                  for s in range(k)] for r in range(k)]
            lam = _solve(m, xs)
            if lam is None:
                raise ProfileError("table admits no unbiased output values: the anchor rows "
                                   "cannot reproduce the anchors' readings")
            g = [Fraction(0)] * self.cells
            for j in used:
                g[j] = sum(self.probs[r][j] * lam[r] for r in range(k)) / d[j]
        for r, x in enumerate(xs):
            mean = sum(p * v for p, v in zip(self.probs[r], g))
            if mean != x:
                raise ProfileError("table output values are biased at anchor %d: mean %s, "
                                   "reading %s" % (r, mean, x))
        self._values = list(g)
        return list(g)

    # ---- input side -------------------------------------------------------------------------
    def _place(self, x) -> tuple:
        x = min(max(as_fraction(x, "reading"), self.lo), self.hi)
        pos = (x - self.lo) * self.anchors / (self.hi - self.lo)
        b = math.floor(pos)
        if b == self.anchors:
            b -= 1
        return x, b, pos - b

    def distribution(self, x) -> list:
        """P(j | x) for every cell, the stochastic rounding included."""
        _, b, f = self._place(x)
        return [(1 - f) * p + f * q for p, q in zip(self.probs[b], self.probs[b + 1])]

    def anchor_variance(self, r) -> Fraction:
        g = self.output_values()
        return sum(p * v * v for p, v in zip(self.probs[r], g)) - self.anchor(r) ** 2

    def variance(self, x) -> Fraction:
        """Var(g(J) | x) = (1-f) V_b + f V_{b+1} + f(1-f) D^2, exactly."""
        _, b, f = self._place(x)
        return ((1 - f) * self.anchor_variance(b) + f * self.anchor_variance(b + 1)
                + f * (1 - f) * self.step ** 2)

    def _candidates(self):
        v = [self.anchor_variance(r) for r in range(self.anchors + 1)]
        d2 = self.step ** 2
        for r in range(self.anchors + 1):
            yield v[r], self.anchor(r)
        for b in range(self.anchors):
            f = Fraction(1, 2) + (v[b + 1] - v[b]) / (2 * d2)
            if 0 < f < 1:
                yield (1 - f) * v[b] + f * v[b + 1] + f * (1 - f) * d2, self.anchor(b) + f * self.step

    def worst_variance(self) -> Fraction:
        """max over [lo, hi] of variance(x), exactly (anchors and per-segment vertices)."""
        return max(c[0] for c in self._candidates())

    def worst_input(self) -> Fraction:
        """The smallest reading where worst_variance() is reached."""
        best = self.worst_variance()
        return min(x for v, x in self._candidates() if v == best)


# ---- exact family members ----------------------------------------------------------------------
def budget_ratio(epsilon, scale_bits=32) -> Fraction:
    """floor(L 2^s)/2^s <= L <= e^eps, L the certified Taylor bound: the rational privacy
    ratio the constructors spend (small denominators keep the integer weights short)."""
    lb = exp_lower_bound(as_fraction(epsilon, "epsilon"))
    return Fraction(math.floor(lb * (1 << scale_bits)), 1 << scale_bits)


def _integer_rows(prob_rows) -> list:
    """Each row of Fractions scaled by its common denominator to integers (same law)."""
    out = []
    for row in prob_rows:
        den = math.lcm(*(p.denominator for p in row))
        ints = [int(p * den) for p in row]
        g = 0
        for w in ints:
            g = math.gcd(g, w)
        out.append([w // g for w in ints])
    return out


def _duchi_row(ratio, t) -> list:
    """Duchi's law at t in [0, 1] (t = 0 at lo): P(low) = (1-t) L/(L+1) + t/(L+1)."""
    lo_p = ((1 - t) * ratio + t) / (ratio + 1)
    return [lo_p, 1 - lo_p]


def duchi(lo, hi, epsilon, *, scale_bits=32, ratio=None) -> Table:
    """Duchi et al.'s two-output mechanism as a 2-cell table with R = 1."""
    lo, hi = as_fraction(lo, "lo"), as_fraction(hi, "hi")
    ratio = budget_ratio(epsilon, scale_bits) if ratio is None else as_fraction(ratio, "ratio")
    if not ratio > 1:
        raise ProfileError("epsilon too small for a ratio above 1 at this scale")
    h, mid = (hi - lo) / 2, (hi + lo) / 2
    b = (ratio + 1) / (ratio - 1)
    rows = _integer_rows([_duchi_row(ratio, Fraction(0)), _duchi_row(ratio, Fraction(1))])
    return Table(lo, hi, epsilon, rows, values=[mid - h * b, mid + h * b])


def _pm_rows(n, nc, ratio) -> list:
    s = nc * ratio + (n - nc)
    return [[ratio / s if r <= j < r + nc else 1 / s for j in range(n)]
            for r in range(n - nc + 1)]


def _pm_values(lo, hi, prob_rows) -> list:
    n, big_r = len(prob_rows[0]), len(prob_rows) - 1
    m0 = sum(j * p for j, p in enumerate(prob_rows[0]))
    slope = sum(j * p for j, p in enumerate(prob_rows[1])) - m0
    step = (hi - lo) / big_r
    return [lo + step * (j - m0) / slope for j in range(n)]


def pm(lo, hi, epsilon, *, cells, window=None, ratio=None, scale_bits=32) -> Table:
    """The piecewise mechanism on `cells` cells with a `window`-cell window (default: the
    window with the smallest exact worst variance), ratio hi_w/lo_w (default the budget)."""
    lo, hi = as_fraction(lo, "lo"), as_fraction(hi, "hi")
    ratio = budget_ratio(epsilon, scale_bits) if ratio is None else as_fraction(ratio, "ratio")
    if cells < 3:
        raise ProfileError("pm needs at least 3 cells, got %d" % cells)
    windows = range(1, cells - 1) if window is None else [window]
    best = None
    for nc in windows:
        if not 1 <= nc < cells:
            raise ProfileError("window must be in [1, %d), got %d" % (cells, nc))
        prob = _pm_rows(cells, nc, ratio)
        t = Table(lo, hi, epsilon, _integer_rows(prob), values=_pm_values(lo, hi, prob))
        t.window = nc
        if best is None or t.worst_variance() < best.worst_variance():
            best = t
    return best


def hm(lo, hi, epsilon, *, cells, scale_bits=32) -> Table:
    """Wang et al.'s hybrid (PM with probability alpha, Duchi otherwise) on `cells` cells:
    PM on cells-2 of them, Duchi's two outputs on the last two. alpha = 0 (Duchi alone, 2
    cells) when eps <= eps* ~ 0.61."""
    eps = as_fraction(epsilon, "epsilon")
    lo, hi = as_fraction(lo, "lo"), as_fraction(hi, "hi")
    if float(eps) <= _EPS_STAR:
        t = duchi(lo, hi, eps, scale_bits=scale_bits)
        t.alpha = Fraction(0)
        return t
    if cells < 5:
        raise ProfileError("hm needs at least 5 cells (3 for PM, 2 for Duchi), got %d" % cells)
    a = budget_ratio(eps / 2, scale_bits)
    alpha = 1 - 1 / a
    part = pm(lo, hi, eps, cells=cells - 2, scale_bits=scale_bits)
    ratio = budget_ratio(eps, scale_bits)
    big_r = part.anchors
    duchi_part = duchi(lo, hi, eps, scale_bits=scale_bits)
    rows = []
    for r in range(big_r + 1):
        d = _duchi_row(ratio, Fraction(r, big_r))
        rows.append([alpha * p for p in part.probs[r]] + [(1 - alpha) * p for p in d])
    t = Table(lo, hi, eps, _integer_rows(rows),
              values=part.output_values() + duchi_part.output_values())
    t.alpha = alpha
    t.pm_part, t.duchi_part = part, duchi_part
    return t


def three_outputs(lo, hi, epsilon, *, scale_bits=32, ratio=None) -> Table:
    """Zhao et al.'s Three-Outputs as published, exactly (module doc); Duchi's table below
    ln 2, where the published P0 is 0."""
    from ..published import three_outputs_p0

    lo, hi = as_fraction(lo, "lo"), as_fraction(hi, "hi")
    ratio = budget_ratio(epsilon, scale_bits) if ratio is None else as_fraction(ratio, "ratio")
    if not ratio > 1:
        raise ProfileError("epsilon too small for a ratio above 1 at this scale")
    big = ratio
    # a small denominator for P0 keeps the integer rows within 2^32 (with the ratio's 2^-s)
    p0 = Fraction(three_outputs_p0(math.log(big))).limit_denominator(1 << max(4, scale_bits // 3))
    p0 = min(max(p0, Fraction(0)), big / (big + 2))
    if p0 == 0:
        return duchi(lo, hi, epsilon, scale_bits=scale_bits, ratio=ratio)
    h, mid = (hi - lo) / 2, (hi + lo) / 2
    c = big * (big + 1) / ((big - 1) * (big - p0))
    edge = [(big - p0) / (big + 1), p0 / big, (big - p0) / (big * (big + 1))]
    rows = _integer_rows([edge, [(1 - p0) / 2, p0, (1 - p0) / 2], edge[::-1]])
    t = Table(lo, hi, epsilon, rows, values=[mid - h * c, mid, mid + h * c])
    t.p0 = p0
    return t
