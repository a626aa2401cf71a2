"""The designer: an optimal table mechanism from a linear program, rounded to exact integers.

`design(lo, hi, epsilon, bits)` returns a `Table` (zeal.mechanism.table.mechanism) with R+1 anchor rows
(default 65) and N = 2^bits output cells whose worst-case variance over [lo, hi] (or the
variance averaged over a data set) is as small as the steps below can make it, and which passes
the table's exact checks: every column ratio at most the certified lower bound L of e^eps, and
an exactly unbiased output value g(j) at every anchor. `solve(...)` returns the same table with
the figures of the search (`Design`). Measured against the proven floor (shared_spec/floor.md;
tools/bench_design.py): 4 bits +0.18 / +0.27 / +0.28 / +0.51 / +3.6 % at eps = 0.25 / 0.5 /
1 / 2 / 4, 6 bits +0.10 / +0.07 / +0.07 / +0.15 / +1.3 % (a 6-bit design in 17-19 s).

Work on the normalised range [-1, 1] (x = mid + half*u); a variance in the reading's units is
half^2 times the normalised one. Anchors u_r = -1 + r*h, h = 2/R.

The program, for fixed outputs g_j (by default evenly spaced, g_j = -C + 2Cj/(N-1)):

    variables  P[r][j] >= 0 (row r's law), m_j >= 0 (column floor), z (the worst variance)
    sum_j P[r][j] = 1,  sum_j P[r][j] g_j = u_r                 (a law, unbiased at u_r)
    m_j <= P[r][j] <= E' m_j                                    (eps-LDP: column ratio <= E')
    minimise z  subject to  Var(u) <= z for every u in [-1, 1]  ("worst"), or
    minimise    sum_i Var(u_i) / n over the data                ("data").

E' = L (1 - MARGIN) leaves room for the rounding below. The m_j form needs 2(R+1)N rows
instead of the (R+1)^2 N pairwise ratios; the two are equivalent (take m_j = min_r P[r][j]).

The mixing between anchors. A reading u = u_r + t h (t in [0, 1]) reports row r+1 with
probability t and row r otherwise, so its law is (1-t) P_r + t P_{r+1}: the mean is
(1-t) u_r + t u_{r+1} = u (unbiased by linearity) and the second moment is the same mixture
of the rows' second moments M_r = sum_j P[r][j] g_j^2. Hence, with V_r = M_r - u_r^2,

    Var(u) = (1-t) V_r + t V_{r+1} + t (1-t) h^2,

a concave quadratic in t (the -u^2 term; linear in the unknowns P for each fixed t). It peaks
at t* = 1/2 + (V_{r+1} - V_r) / (2 h^2) (clipped to [0, 1]) and exceeds the larger anchor
variance by at most h^2/4. "Var(u) <= z for all t" is an infinite family of linear
constraints (1-t) M_r + t M_{r+1} - z <= u(t)^2; the program starts from t in
{0, 1/8, ..., 1} on every interval and adds the cut at t* of every interval whose peak still
exceeds z (cutting planes; the value reported is the true peak of the float solution, and the
exact figure is the table's `worst_variance()`). The "data" objective is linear already: a
reading at u = u_r + t h weighs M_r by (1-t) and M_{r+1} by t.

The steps.
1. A coarse program (at most SEARCH_ANCHORS = 17 anchors, nine cuts an interval) places the
   outputs' half-width C: a grid of 25 points over [C_duchi, 2 C_duchi], C_duchi =
   (e^eps+1)/(e^eps-1) (Duchi's output; below it no unbiased law exists at the range's ends),
   then golden section around the best grid point (the value is not unimodal in C).
2. Free output positions (`refine`, by default for 8 to 16 cells and the worst case): a
   pattern search on the coarse program moves each of the symmetric outputs in turn (`_refine`).
   The optimum often parks outputs near 0 and leaves others unused; at 4 bits it takes
   eps = 1 from +0.31 % to +0.28 % over the floor, eps = 0.25 from +0.32 % to +0.18 %. Free
   (or `warp`ed) outputs become integers a_j over WARP_Q = 2^16; even ones keep the cell
   index as their integer coordinate (C a multiple of 1/1024).
3. The fine program (all anchors) is solved once at those outputs.
4. Two levels (`_two_level`): each anchor row is re-solved alone for the least second moment
   within its column bounds [m_j, E' m_j]; a vertex, so every cell of the row sits at one of
   its two levels but at most two (the staircase of the optimal mechanisms). No variance rises.
5. Exact rounding (`_round_levels`): levels lo_j = round(m_j T), hi_j = round(E' m_j T) with
   one total T for every row (a multiple of every anchor's moment denominator, near 2^32);
   the two residuals of each row (the total, and the mean that makes the row unbiased at its
   anchor) are fixed exactly on two or three cells whose value gaps allow it (Bezout), every
   entry kept within [bot_j, top_j], top_j <= L bot_j, around [lo_j, hi_j], so that every
   column's ratio is at most L by construction, preferring the repair that leaves the fewest
   cells off their levels. A column
   whose floor rounds to 0 is 0 in every row (never reported).
The result has, per row, a run of cells at their upper level and at most a few cells
elsewhere: what the compact profile (zeal-table/2, zeal.mechanism.table.compact) stores, so
that 65 anchors fit a profile at every cell count. Deterministic: the same inputs give the
same programs, the same HiGHS paths and the same integers.

Needs scipy (the `design` extra: pip install 'zeal-mcu[design]'); imported when used.
"""
import math
import time
from dataclasses import dataclass
from fractions import Fraction

from ...errors import ProfileError
from ..core.floatbits import as_fraction
from ..core.pfile import exp_lower_bound

MARGIN = 1e-4           # E' = L (1 - MARGIN): room for rounding to integers of size ~ 2^32
C_DENOMINATOR = 1024    # the output half-width C is a multiple of 1/1024
TOTAL = 1 << 32         # row totals T are the multiple of the moment denominators nearest below
BITS_MAX = 8
DEFAULT_ANCHORS = 65    # R = 64 intervals (a table profile's most)
SEARCH_ANCHORS = 17     # the coarse program of the C and output-position searches
REFINE_CELLS_MIN = 8    # free output positions (`_refine`) from 8 to 16 cells by default
REFINE_CELLS_MAX = 16
_REFINE_EVALS = 160     # programs the position search may solve
_GRID_POINTS = 25
_GOLDEN_STEPS = 12
_CUT_ROUNDS = 12
_FINE_ROUNDS = 4        # cut rounds of the designs' programs (the exact figure is the table's)
_T0 = tuple(i / 8 for i in range(9))


@dataclass(frozen=True)
class Design:
    """A designed table and how it was found."""
    table: object           # zeal.mechanism.table.Table
    half_width: Fraction    # C: normalised outputs g_j = -C + 2Cj/(N-1)
    lp_value: float         # the program's optimum at C (normalised units)
    seconds: float          # wall time of the search, the final solve and the repair
    zeroed: tuple           # cells fixed to zero (never reported)


def _scipy():
    try:
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix, csr_matrix, vstack
    except ImportError:
        raise ProfileError("the designer needs scipy: pip install 'zeal-mcu[design]'") from None
    return linprog, coo_matrix, csr_matrix, vstack


def need_scipy() -> None:
    """Raise the one-line ProfileError if scipy (the `design` extra) is missing."""
    _scipy()


def _norm_data(data, lo, hi):
    import numpy as np
    u = np.asarray(list(data), dtype=float)
    if u.size == 0 or not np.all(np.isfinite(u)):
        raise ProfileError("the data must be a non-empty list of finite readings")
    # lo/2 + hi/2: the same float64 as (lo + hi)/2, which overflows for a range near 1.8e308
    mid, half = float(lo) / 2 + float(hi) / 2, (float(hi) - float(lo)) / 2
    return np.clip((u - mid) / half, -1.0, 1.0)


class _Program:
    """The linear program for one (N, R, E', objective); `run(C)` solves it at half-width C."""

    def __init__(self, n, r, e_prime, weights=None):
        import numpy as np
        self.np = np
        self.n, self.r, self.e = n, r, e_prime
        self.u = np.linspace(-1.0, 1.0, r + 1)
        self.h = 2.0 / r
        self.np_ = (r + 1) * n
        self.weights = weights  # None: worst case; else per-anchor weights of M_r (data)
        self.shape = None       # the outputs' positions s_j in [-1, 1] (g_j = C s_j); None: even
        self.nv = self.np_ + n + (1 if weights is None else 0)
        # the ratio rows: m_j - P <= 0 and P - E' m_j <= 0
        _, coo_matrix, _, _ = _scipy()
        idx = np.arange(self.np_)
        col = self.np_ + idx % n
        cols = np.concatenate([col, col, idx, idx])
        vals = np.concatenate([np.ones(self.np_), -e_prime * np.ones(self.np_),
                               -np.ones(self.np_), np.ones(self.np_)])
        rows = np.concatenate([np.arange(self.np_), np.arange(self.np_, 2 * self.np_),
                               np.arange(self.np_), np.arange(self.np_, 2 * self.np_)])
        self.a_ratio = coo_matrix((vals, (rows, cols)), shape=(2 * self.np_, self.nv)).tocsr()

    def _cut(self, g2, r, t):
        row = self.np.zeros(self.nv)
        row[r * self.n:(r + 1) * self.n] = (1 - t) * g2
        row[(r + 1) * self.n:(r + 2) * self.n] += t * g2
        row[-1] = -1.0
        ut = self.u[r] + t * self.h
        return row, ut * ut

    def run(self, c, zero=(), rounds=_CUT_ROUNDS):
        """(objective, P) at half-width c; (inf, None) if infeasible. `zero`: cells fixed to 0.
        rounds=1 (the search) keeps the nine starting cuts per interval only: the value is then
        the true worst within h^2/256 (the sampled concave quadratic misses at most
        (1/16)^2 h^2 between cuts)."""
        np = self.np
        linprog, coo_matrix, csr_matrix, vstack = _scipy()
        n, rr = self.n, self.r
        g = np.linspace(-c, c, n) if self.shape is None else c * self.shape
        g2 = g * g
        ridx = np.repeat(np.arange(rr + 1), n)
        pidx = np.arange(self.np_)
        a_eq = coo_matrix((np.concatenate([np.ones(self.np_), np.tile(g, rr + 1)]),
                           (np.concatenate([2 * ridx, 2 * ridx + 1]),
                            np.concatenate([pidx, pidx]))),
                          shape=(2 * (rr + 1), self.nv)).tocsr()
        b_eq = np.column_stack([np.ones(rr + 1), self.u]).ravel()
        bounds = [(0, None)] * self.nv
        for j in zero:
            for r in range(rr + 1):
                bounds[r * n + j] = (0, 0)
        if self.weights is not None:
            obj = np.zeros(self.nv)
            obj[:self.np_] = np.repeat(self.weights, n) * np.tile(g2, rr + 1)
            res = linprog(obj, A_ub=self.a_ratio, b_ub=np.zeros(2 * self.np_), A_eq=a_eq,
                          b_eq=b_eq, bounds=bounds, method="highs")
            if res.status != 0:
                return math.inf, None
            return float(res.fun), res.x[:self.np_].reshape(rr + 1, n)
        obj = np.zeros(self.nv)
        obj[-1] = 1.0
        cuts, rhs = [], []
        for r in range(rr):
            for t in _T0:
                a, b = self._cut(g2, r, t)
                cuts.append(a)
                rhs.append(b)
        for i in range(rounds):
            a_ub = vstack([self.a_ratio, csr_matrix(np.array(cuts))]).tocsr()
            b_ub = np.concatenate([np.zeros(2 * self.np_), rhs])
            res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds,
                          method="highs")
            if res.status != 0:
                return math.inf, None
            p = res.x[:self.np_].reshape(rr + 1, n)
            v = p @ g2 - self.u ** 2
            z = res.x[-1]
            worst, added = 0.0, 0
            for r in range(rr):
                ts = min(1.0, max(0.0, 0.5 + (v[r + 1] - v[r]) / (2 * self.h ** 2)))
                peak = (1 - ts) * v[r] + ts * v[r + 1] + ts * (1 - ts) * self.h ** 2
                worst = max(worst, peak)
                if peak > z + 1e-12:
                    a, b = self._cut(g2, r, ts)
                    cuts.append(a)
                    rhs.append(b)
                    added += 1
            if not added or i == rounds - 1:
                break
        return (worst if rounds > 1 else float(z)), p


def _search(prog, eps):
    """The half-width C minimising the program: a grid, then golden section (deterministic)."""
    e = math.exp(eps)
    c_duchi = (e + 1) / (e - 1)  # below it no unbiased law exists at the range's ends
    grid = [c_duchi * (1 + i / (_GRID_POINTS - 1)) for i in range(_GRID_POINTS)]
    run = lambda c: prog.run(c, rounds=1)[0]  # noqa: E731
    vals = [run(c) for c in grid]
    i = min(range(len(grid)), key=lambda k: (vals[k], k))
    a, b = grid[max(0, i - 1)], grid[min(len(grid) - 1, i + 1)]
    best_c, best_v = grid[i], vals[i]
    phi = (math.sqrt(5) - 1) / 2
    c1, c2 = b - phi * (b - a), a + phi * (b - a)
    f1, f2 = run(c1), run(c2)
    for _ in range(_GOLDEN_STEPS):
        if f1 < f2:
            b, c2, f2 = c2, c1, f1
            c1 = b - phi * (b - a)
            f1 = run(c1)
        else:
            a, c1, f1 = c1, c2, f2
            c2 = a + phi * (b - a)
            f2 = run(c2)
    for c, f in ((c1, f1), (c2, f2)):
        if f < best_v:
            best_c, best_v = c, f
    return best_c


def _moments(rr, n, c):
    """Per anchor r, the exact target mean of the cell index: (u_r + C)(N-1)/(2C)."""
    return [(Fraction(-rr + 2 * r, rr) + c) * (n - 1) / (2 * c) for r in range(rr + 1)]


def _row_total(targets):
    den = math.lcm(*(f.denominator for f in targets))
    return max(1, TOTAL // den) * den


def _refine(prog, g, budget=_REFINE_EVALS):
    """Free output positions (`refine`): a pattern search over the positive half of the
    symmetric outputs g (the negative half mirrors it) on the coarse program: each position in
    turn moves out, then in, by a step d (first 2 % of the outermost), kept if the program's
    value drops; d halves after a sweep without a gain, down to 0.1 %, or after `budget`
    programs. Deterministic. Returns the better g."""
    np = prog.np
    n = len(g)
    half = n // 2
    s = np.array(g[n - half:], dtype=float)     # the positive half (the middle 0 stays)

    def full(x):
        mid = [0.0] if n % 2 else []
        return np.concatenate([-x[::-1], mid, x])

    def value(x):
        c = float(x[-1])
        prog.shape = full(x) / c
        return prog.run(c, rounds=1)[0]

    best = value(s)
    step, evals = 0.02 * s[-1], 1
    floor_step = 1e-3 * s[-1]
    while step >= floor_step and evals < budget:
        gained = False
        for k in range(half):
            for sign in (1.0, -1.0):
                x = s.copy()
                x[k] += sign * step
                if x[0] <= step / 4 or np.any(np.diff(x) <= step / 4):
                    continue
                v = value(x)
                evals += 1
                if v < best - 1e-12:
                    s, best, gained = x, v, True
                    break
                if evals >= budget:
                    break
            if evals >= budget:
                break
        if not gained:
            step /= 2
    return full(s)


def _two_level(p, g, u, e_prime):
    """Each anchor row re-solved alone: the least second moment sum_j P_j g_j^2 under the
    column bounds m_j <= P_j <= E' m_j (m_j = min_r P[r][j], the program's floors), a law,
    unbiased at u_r. A vertex of that polytope: every cell at m_j or E' m_j but at most two (the
    staircase of the optimal mechanisms). No second moment rises, so neither does the worst
    (or data) variance: Var between anchors is increasing in the anchors' variances."""
    np = __import__("numpy")
    linprog = _scipy()[0]
    m = np.maximum(p.min(axis=0), 0.0)
    bounds = [(float(m[j]), float(e_prime * m[j])) for j in range(len(g))]
    a_eq = np.vstack([np.ones(len(g)), g])
    out = p.copy()
    for r in range(p.shape[0]):
        res = linprog(g * g, A_eq=a_eq, b_eq=[1.0, u[r]], bounds=bounds, method="highs-ds")
        if res.status != 0:
            continue  # keep the program's row (it satisfies the same bounds)
        x = res.x.copy()
        for j in range(len(g)):  # snap the simplex's rounding noise onto the two levels
            if abs(x[j] - m[j]) <= 1e-9 * max(m[j], 1e-300):
                x[j] = m[j]
            elif abs(x[j] - e_prime * m[j]) <= 1e-9 * max(m[j], 1e-300):
                x[j] = e_prime * m[j]
        out[r] = x
    return out, m


def _round_levels(p, m, v, targets, total, l_bound, e_prime):
    """Integer weights on two levels per cell: lo_j = round(m_j T) and hi_j = round(E' m_j T)
    (at most cap_j = floor(L lo_j)); a cell at m_j or E' m_j gets lo_j or hi_j exactly, any
    other is rounded into [lo_j, hi_j]. Each row's two residuals (sum W = T,
    sum_j v_j W[r][j] = targets[r]) are then fixed exactly on two or three cells
    (`_solve_cells`), every entry kept in [bot_j, top_j] with top_j <= L bot_j (top_j
    halfway from hi_j to cap_j, bot_j = ceil(top_j / L) <= lo_j), so every column's ratio is
    at most L by construction; preferring the repair that leaves every lo_j its column's
    least entry, then the fewest cells off their two levels (the compact profile lists
    those: zeal.mechanism.table.compact), then the smallest."""
    n, rows = len(v), len(p)
    lo = [int(round(float(m[j]) * total)) for j in range(n)]
    cap = [math.floor(l_bound * x) for x in lo]   # no entry above: the column ratio <= L
    hi = [min(int(round(e_prime * float(m[j]) * total)), cap[j]) for j in range(n)]
    # a repair keeps every entry in [bot_j, top_j], top_j <= L bot_j: halfway from hi_j to
    # cap_j, and as far below lo_j as that allows (a row at the end of the range has all
    # its cells on their levels, and may need to move one below)
    top = [h + (c - h) // 2 for h, c in zip(hi, cap)]
    bot = [math.ceil(t / l_bound) for t in top]
    w = []
    for r in range(rows):
        row = []
        for j in range(n):
            x = float(p[r][j])
            if x == m[j]:
                row.append(lo[j])
            elif x == e_prime * m[j]:
                row.append(hi[j])
            else:
                row.append(min(max(int(round(x * total)), lo[j]), hi[j]))
        w.append(row)
    for r in range(rows):
        row = w[r]
        e0 = total - sum(row)
        e1 = targets[r] - sum(a * x for a, x in zip(v, row))
        if e0 == 0 and e1 == 0:
            continue
        off = [lo[j] < row[j] < hi[j] for j in range(n)]
        best = None
        for wide in (False, True):
            for cells in _candidates(off, wide):
                moves = _solve_cells([v[j] for j in cells], e0, e1,
                                     [(bot[j] - row[j], top[j] - row[j]) for j in cells])
                if moves is not None:
                    best = _better(best, tuple(zip(cells, moves)), row, lo, hi)
            if best is not None:
                break
        if best is None:
            raise ProfileError("the designer could not round row %d exactly; try other bits "
                               "or epsilon" % r)
        for j, x in best[1]:
            row[j] += x
    return w


def _candidates(off, wide):
    """The cell sets a row's repair tries: every pair, and every triple holding a cell
    already off its levels (a cheap move: it is listed anyway); `wide`: every triple."""
    n = len(off)
    if wide:
        for i in range(n):
            for j in range(i + 1, n):
                for k in range(j + 1, n):
                    yield (i, j, k)
        return
    for k in range(n):
        for l in range(k + 1, n):
            yield (k, l)
    for k in range(n):
        if not off[k]:
            continue
        for i in range(n):
            for j in range(i + 1, n):
                if k not in (i, j):
                    yield tuple(sorted((k, i, j)))


def _solve_cells(v, e0, e1, room):
    """Integer moves x (one per cell, values v ascending) with sum x = e0 and
    sum v x = e1, each x_c within room[c] = (low, high); the smallest such (in sum |x|) for
    two or three cells, or None. Three cells: x_1 d1 + x_2 d2 = e1 - v_0 e0 (d = gaps from
    v_0) has the integer family x_1 = x1' + t d2/g, x_2 = x2' - t d1/g when g = gcd(d1, d2)
    divides it; t is taken inside the rooms."""
    f = e1 - v[0] * e0
    if len(v) == 2:
        d = v[1] - v[0]
        if f % d:
            return None
        x = (e0 - f // d, f // d)
        return x if all(lo <= y <= hi for y, (lo, hi) in zip(x, room)) else None
    d1, d2 = v[1] - v[0], v[2] - v[0]
    g, s1, s2 = _egcd(d1, d2)
    if f % g:
        return None
    x1, x2, a, b = s1 * (f // g), s2 * (f // g), d1 // g, d2 // g
    # x_1 = x1 + t b, x_2 = x2 - t a, x_0 = e0 - x1 - x2 - t (b - a): each room bounds t
    t_lo, t_hi = -math.inf, math.inf
    for c0, slope, (lo, hi) in ((e0 - x1 - x2, a - b, room[0]), (x1, b, room[1]),
                                (x2, -a, room[2])):
        if slope == 0:
            if not lo <= c0 <= hi:
                return None
            continue
        t1, t2 = (lo - c0) / slope, (hi - c0) / slope
        t_lo, t_hi = max(t_lo, min(t1, t2)), min(t_hi, max(t1, t2))
    if t_lo > t_hi:
        return None
    best = None
    for t in {math.ceil(t_lo), math.floor(t_hi), math.ceil(-x1 / b), math.floor(-x1 / b),
              math.ceil(x2 / a), math.floor(x2 / a)}:
        if not t_lo <= t <= t_hi:
            continue
        x = (e0 - x1 - x2 - t * (b - a), x1 + t * b, x2 - t * a)
        if all(lo <= y <= hi for y, (lo, hi) in zip(x, room)) and (
                best is None or sum(map(abs, x)) < sum(map(abs, best))):
            best = x
    return best


def _egcd(a, b):
    """(g, s, t) with s a + t b = g = gcd(a, b) (a, b > 0)."""
    s0, s1, t0, t1 = 1, 0, 0, 1
    while b:
        q = a // b
        a, b = b, a - q * b
        s0, s1 = s1, s0 - q * s1
        t0, t1 = t1, t0 - q * t1
    return a, s0, t0


def _better(best, moves, row, lo, hi):
    """The better of two feasible repairs (None: none yet): fewest entries below their
    column's lo level (one moves that column's least entry), then fewest cells left off
    their two levels, then the smallest move."""
    new = below = 0
    for j, x in moves:
        if x and row[j] in (lo[j], hi[j]) and row[j] + x not in (lo[j], hi[j]):
            new += 1
        below += row[j] + x < lo[j]
    key = (below, new, sum(abs(x) for _, x in moves))
    if best is None or key < best[0]:
        return (key, moves)
    return best


WARP_Q = 1 << 16   # free output values are integers a_j over WARP_Q (on [-1, 1])


def _warp_shape(n, gamma):
    import numpy as np
    s = np.linspace(-1.0, 1.0, n)
    return np.sign(s) * np.abs(s) ** gamma


def _grid_integers(g):
    """a_j = round(g_j WARP_Q), odd-symmetric and strictly increasing (ProfileError if two
    coincide)."""
    n = len(g)
    a = [int(round(float(g[j]) * WARP_Q)) for j in range(n)]
    for j in range(n // 2):
        a[n - 1 - j] = -a[j]
    if n % 2:
        a[n // 2] = 0
    if any(a[j + 1] <= a[j] for j in range(n - 1)):
        raise ProfileError("the output grid has two equal values; try another warp")
    return a


def _solve_triple(d1, d2, f):
    """Integers (p, q) with d1 p + (d1 + d2) q = f and |q| <= d1/2, or None (gcd > 1)."""
    if math.gcd(d1, d2) != 1:
        return None
    if d1 == 1:
        return f, 0
    q = (f * pow(d1 + d2, -1, d1)) % d1
    if q > d1 // 2:
        q -= d1
    return (f - (d1 + d2) * q) // d1, q


def _data_weights(u, rr):
    """Per anchor the weight of its second moment in the data's mean variance: a reading at
    u_r + t h weighs M_r by (1-t) and M_{r+1} by t."""
    import numpy as np
    pos = (u + 1) / 2 * rr
    k = np.minimum(np.floor(pos).astype(int), rr - 1)
    t = pos - k
    weights = np.zeros(rr + 1)
    np.add.at(weights, k, 1 - t)
    np.add.at(weights, k + 1, t)
    return weights / u.size


def solve(lo, hi, epsilon, bits, *, anchors=None, objective="worst", data=None,
          cells=None, warp=None, refine=None) -> Design:
    """Design a table mechanism (see the module docstring); returns the `Design`. `cells`
    (default 2^bits, at most 2^bits) sets N; `anchors` the number of anchor rows R+1
    (default 65). `warp` gamma (default None: the even grid): the outputs at
    C sign(s)|s|^gamma for s evenly spaced on [-1, 1]. `refine` (default: N <= 16, no warp,
    the worst-case objective) frees the output positions (`_refine`). Free or warped outputs
    are integers over WARP_Q."""
    import numpy as np
    from .mechanism import Table
    t_start = time.perf_counter()
    lo_f, hi_f = as_fraction(lo, "lo"), as_fraction(hi, "hi")
    eps_f = as_fraction(epsilon, "epsilon")
    if not lo_f < hi_f:
        raise ProfileError("range is empty: lo (%s) must be below hi (%s)" % (lo, hi))
    if not 0 < eps_f <= 20:
        raise ProfileError("epsilon must be in (0, 20], got %s" % (epsilon,))
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= BITS_MAX:
        raise ProfileError("bits must be an integer in [1, %d], got %r" % (BITS_MAX, bits))
    n_anchors = DEFAULT_ANCHORS if anchors is None else anchors
    if isinstance(n_anchors, bool) or not isinstance(n_anchors, int) or not 2 <= n_anchors <= 257:
        raise ProfileError("anchors must be an integer in [2, 257], got %r" % (anchors,))
    if objective not in ("worst", "data"):
        raise ProfileError("objective must be 'worst' or 'data', got %r" % (objective,))
    if objective == "data" and data is None:
        raise ProfileError("objective 'data' needs data (a list of readings)")
    n, rr = (1 << bits) if cells is None else cells, n_anchors - 1
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 1 << bits:
        raise ProfileError("cells must be an integer in [2, 2^bits = %d], got %r"
                           % (1 << bits, cells))
    if warp is not None and not (isinstance(warp, (int, float)) and 0.3 <= warp <= 3):
        raise ProfileError("warp must be a number in [0.3, 3], got %r" % (warp,))
    if refine is None:
        refine = REFINE_CELLS_MIN <= n <= REFINE_CELLS_MAX and warp is None \
            and objective == "worst"
    l_bound = exp_lower_bound(eps_f)
    e_prime = float(l_bound) * (1 - MARGIN)
    u_data = _norm_data(data, lo_f, hi_f) if objective == "data" else None
    weights = None if u_data is None else _data_weights(u_data, rr)
    prog = _Program(n, rr, e_prime, weights)
    # the coarse program (at most SEARCH_ANCHORS anchors) places C and the free outputs; the
    # fine one is solved once there
    rs = min(rr, SEARCH_ANCHORS - 1)
    coarse = prog if rs == rr else _Program(n, rs, e_prime,
                                            None if u_data is None else _data_weights(u_data, rs))
    if warp is not None:
        coarse.shape = _warp_shape(n, float(warp))
    c_float = _search(coarse, float(eps_f))
    free = refine or warp is not None
    if free:
        shape = coarse.shape if coarse.shape is not None else np.linspace(-1.0, 1.0, n)
        g = c_float * shape
        if refine:
            g = _refine(coarse, g)
        a = _grid_integers(g)
        g = np.array(a, dtype=float) / WARP_Q
        c = Fraction(a[-1], WARP_Q)
    else:
        c = Fraction(round(c_float * C_DENOMINATOR), C_DENOMINATOR)
        g = np.linspace(-float(c), float(c), n)
    coarse.shape = prog.shape = g / float(c)
    value, p = prog.run(float(c), rounds=_FINE_ROUNDS)
    if p is None:
        raise ProfileError("the designer's program is infeasible at C = %s" % c)
    p, m = _two_level(p, g, prog.u, e_prime)
    mid, half = (lo_f + hi_f) / 2, (hi_f - lo_f) / 2
    if free:
        total = (TOTAL // (2 * rr)) * 2 * rr  # T WARP_Q u_r is an integer at every anchor
        targets = [total * WARP_Q * (-rr + 2 * r) // rr for r in range(rr + 1)]
        w = _round_levels(p, m, a, targets, total, l_bound, e_prime)
        values = [mid + half * Fraction(x, WARP_Q) for x in a]
    else:
        moments = _moments(rr, n, c)
        total = _row_total(moments)
        targets = [int(f * total) for f in moments]
        w = _round_levels(p, m, list(range(n)), targets, total, l_bound, e_prime)
        values = [mid + half * (-c + 2 * c * j / (n - 1)) for j in range(n)]
    table = Table(lo, hi, epsilon, w, values=values)
    zero = tuple(j for j in range(n) if not any(row[j] for row in w))
    return Design(table=table, half_width=c, lp_value=value,
                  seconds=time.perf_counter() - t_start, zeroed=zero)


def design(lo, hi, epsilon, bits, *, anchors=None, objective="worst", data=None, cells=None,
           warp=None, refine=None):
    """An optimal exact table mechanism (a `Table`) for [lo, hi], epsilon and `bits` bits per
    report: `objective` "worst" minimises the worst-case variance over [lo, hi], "data" the
    variance averaged over `data` (readings in the range's units; clamped into it)."""
    return solve(lo, hi, epsilon, bits, anchors=anchors, objective=objective, data=data,
                 cells=cells, warp=warp, refine=refine).table
