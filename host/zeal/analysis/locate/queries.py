"""Range-count queries (seed 003, Section 6.2): the release against the noisy equal-width
histogram and a Haar-wavelet baseline (Privelet: Xiao, Wang and Gehrke).

A query is an axis-aligned square of side y (a fraction of the box's side) anywhere in the
box; its answer from a density is n times the density's mass over the square, and its error
|true count - answer|. Every density here is a G x G grid of masses (zeal.analysis.locate
.density, G = 1024, row-major by (cx, cy)), taken as constant on each cell: the mass over
[X0, X1) x [Y0, Y1) (in cell units, not necessarily whole) is read from the summed-area table
P[i, j] = sum of the cells (< i, < j) by bilinear interpolation, which is exact for such a
density (`range_mass`).

Our choices where the seed is loose:
- the squares' corners lie on the order-16 grid (2^16 steps a side, the grid the release
  itself sees; 64 steps per density cell): uniform over the positions that keep the square in
  the box, from a fixed public seed; the true count is the number of points whose order-16
  cells lie in the square (`true_counts`, exact);
- the wavelet baseline is on a 512 x 512 grid, as in the seed; its total coefficient is n
  exactly (the seed: "the DC component ... is set to be exactly n"), every other coefficient
  gets discrete Laplace noise (`privelet_counts`); negative cells are kept (the answers stay
  unbiased: a range answer is a linear function of the noisy coefficients).

The Haar transform here is the unnormalised integer one: along one axis of length N = 2^l a
vector v becomes (its total, then for each node of the dyadic tree, coarse to fine, the sum
of its left half minus the sum of its right half); 2-D is that along axis 0, then axis 1 (the
"standard" decomposition, which Privelet uses for several dimensions). Privelet's normalised
coefficient of a node with m leaves is this difference over m (the total over N), and its
weight W is m (N); its noise Lap(lambda / W) on the normalised coefficient is Lap(lambda) on
ours: Privelet's weights are exactly the same noise on every unnormalised coefficient.
"""
from fractions import Fraction

from ...mechanism.core.dlaplace import Draws, discrete_laplace, scale_parts
from ...mechanism.locate.publish import exact_epsilon
from . import density

WAVELET_ORDER = 9                      # 512 x 512, the seed's
QUERY_ORDER = 16                       # the squares' corners: the order-16 grid
QUERIES = 1000                         # squares per width, the seed's
WIDTHS = ("1/64", "1/32", "1/16", "1/8", "1/4", "1/2", "3/4")   # of the box's side


# ---- the integer Haar transform ----------------------------------------------------------------
def haar_forward(a, axis=0):
    """The unnormalised Haar transform of integer array `a` along `axis` (length 2^l): index 0
    the total, then the nodes' (left sum - right sum), the root first, each level left to
    right. Integers in, integers (int64) out."""
    import numpy as np
    v = np.moveaxis(np.asarray(a, dtype=np.int64), axis, 0)
    n = v.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError("the Haar transform needs a length 2^l, got %d" % n)
    levels = []
    while v.shape[0] > 1:
        left, right = v[0::2], v[1::2]
        levels.append(left - right)
        v = left + right
    out = np.concatenate([v] + levels[::-1], axis=0)
    return np.moveaxis(out, 0, axis)


def haar_inverse(c, axis=0):
    """The inverse of `haar_forward` along `axis`, in float64: each step (S + d)/2, (S - d)/2
    halves dyadic rationals, exact while they fit 53 bits (integer coefficients of magnitude
    below 2^(53 - l) in a length 2^l: always so here)."""
    import numpy as np
    c = np.moveaxis(np.asarray(c, dtype=np.float64), axis, 0)
    n = c.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError("the Haar transform needs a length 2^l, got %d" % n)
    s, pos, width = c[:1], 1, 1
    while pos < n:
        d = c[pos:pos + width]
        nxt = np.empty((2 * width,) + c.shape[1:])
        nxt[0::2] = (s + d) / 2
        nxt[1::2] = (s - d) / 2
        s, pos, width = nxt, pos + width, 2 * width
    return np.moveaxis(s, 0, axis)


def haar2(a):
    """The 2-D (standard) transform: along axis 0, then along axis 1."""
    return haar_forward(haar_forward(a, 0), 1)


def ihaar2(c):
    """The inverse of `haar2` (float64)."""
    return haar_inverse(haar_inverse(c, 1), 0)


def privelet_sensitivity(levels: int) -> int:
    """The L1 sensitivity of the 2-D transform's coefficients other than the total, on a
    2^l x 2^l count grid (l = levels >= 1), when one point is replaced (one cell -1, another +1).

    Let H be the 1-D transform's matrix: H e_x has exactly l + 1 nonzero entries, each +-1 (the
    total, and the one node per level whose subtree holds leaf x), and the total's and the
    root's are nonzero for every x. Moving a point from cell (x, y) to (x', y') changes the
    coefficients by u v^T - u' v'^T (u = H e_x, v = H e_y, u' = H e_x', v' = H e_y'): at most 1
    + 1 in each entry of the two supports, 2 (l + 1)^2 in all by the triangle inequality. The
    four entries (total or root) x (total or root) lie in both supports; there the change is
    (0, v_r - v'_r, u_r - u'_r, u_r v_r - u'_r v'_r) with every u, v = +-1: it sums to 0 or 4
    in absolute value (never the triangle's 8); the total's entry, always 0, is the one left
    out here (it is published as n exactly). So the sensitivity is at most 2 (l + 1)^2 - 4, and
    it is reached (x, x' in different halves, y, y' too: the supports then share only those
    four entries). For l = 9 (512 x 512): 196. tests/test_locate_queries.py checks it against
    a brute-force maximum over every pair of cells for l = 1, 2, 3, 4. Discrete Laplace noise
    of scale 196/eps on each of those 512^2 - 1 integer coefficients is then eps-DP: the loss
    at any output is (|s - c'|_1 - |s - c|_1) / scale <= |c - c'|_1 / scale <= eps. Privelet
    states 2 (1 + l)^2 / eps (its generalised sensitivity (1 + l)^2, twice for a replaced
    point); the 4 saved is 2%."""
    if levels < 1:
        raise ValueError("the wavelet grid needs at least 2 x 2 cells")
    return 2 * (levels + 1) ** 2 - 4


def privelet_counts(counts, epsilon, words):
    """The noisy N x N count grid (float64) of the wavelet baseline: transform, discrete
    Laplace noise of scale privelet_sensitivity(l)/eps on every coefficient but the total (kept
    exact: n is public), inverse transform. `words`: the noise's word source."""
    import numpy as np
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.shape[0]
    if counts.shape != (n, n) or n < 2 or n & (n - 1):
        raise ValueError("the wavelet baseline needs a 2^l x 2^l grid")
    levels = n.bit_length() - 1
    t, s = scale_parts(Fraction(privelet_sensitivity(levels)) / exact_epsilon(epsilon))
    d = Draws(words)
    coef = haar2(counts)
    noise = np.array([discrete_laplace(t, s, d) for _ in range(n * n - 1)], dtype=np.int64)
    flat = coef.reshape(-1)
    flat[1:] += noise
    return ihaar2(flat.reshape(n, n))


def privelet_density(cx, cy, epsilon, words, order=WAVELET_ORDER):
    """Masses per density grid cell (length G*G, row-major (cx, cy)) of the wavelet baseline on
    the 2^order grid; cx, cy: the points' cells at that order. Each wavelet cell's noisy count
    is spread evenly over its density cells and divided by n (the masses sum to 1 exactly,
    some may be negative)."""
    import numpy as np
    side = 1 << order
    if side > density.G:
        raise ValueError("the wavelet grid must not be finer than the density grid")
    cx = np.asarray(cx, dtype=np.int64)
    cy = np.asarray(cy, dtype=np.int64)
    counts = np.bincount(cx * side + cy, minlength=side * side).reshape(side, side)
    noisy = privelet_counts(counts, epsilon, words)
    f = density.G // side
    fine = np.repeat(np.repeat(noisy, f, axis=0), f, axis=1) / (f * f)
    return (fine / cx.size).reshape(-1)


# ---- answering squares -------------------------------------------------------------------
def prefix_table(mass, side=None):
    """The summed-area table of a side x side grid of masses (row-major (cx, cy)): P[i, j] =
    the sum of the cells with cx < i, cy < j; shape (side + 1, side + 1)."""
    import numpy as np
    side = side or density.G
    grid = np.asarray(mass, dtype=np.float64).reshape(side, side)
    p = np.zeros((side + 1, side + 1))
    p[1:, 1:] = grid.cumsum(axis=0).cumsum(axis=1)
    return p


def _corner(p, x, y):
    """The mass below and left of (x, y) (cell units, 0 <= x, y <= side): bilinear in P."""
    import numpy as np
    side = p.shape[0] - 1
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    i = np.clip(np.floor(x).astype(np.int64), 0, side - 1)
    j = np.clip(np.floor(y).astype(np.int64), 0, side - 1)
    a, b = x - i, y - j
    return ((1 - a) * (1 - b) * p[i, j] + a * (1 - b) * p[i + 1, j]
            + (1 - a) * b * p[i, j + 1] + a * b * p[i + 1, j + 1])


def range_mass(p, x0, y0, x1, y1):
    """The mass over [x0, x1) x [y0, y1) (cell units, arrays) of the grid of table `p`, the
    density being constant on each cell: F(X, Y), the mass below and left of (X, Y), is
    P[i, j] + a (P[i+1, j] - P[i, j]) + b (P[i, j+1] - P[i, j]) + a b m_ij for X = i + a,
    Y = j + b (the partial column, the partial row, the partial cell m_ij = its mass), which is
    the bilinear interpolation of P; the square's mass is F(x1, y1) - F(x0, y1) - F(x1, y0) +
    F(x0, y0)."""
    return (_corner(p, x1, y1) - _corner(p, x0, y1) - _corner(p, x1, y0)
            + _corner(p, x0, y0))


def width_cells(width, order=QUERY_ORDER) -> int:
    """A width (a fraction, e.g. "1/8") in order-`order` cells (a whole number of them)."""
    w = Fraction(width) * (1 << order)
    if w.denominator != 1 or not 0 < w <= 1 << order:
        raise ValueError("width %s is not a whole number of cells at order %d" % (width, order))
    return int(w)


def random_squares(w, count, rng, order=QUERY_ORDER):
    """`count` squares of side w cells: their lower-left corners (x0, y0), uniform integers in
    [0, 2^order - w] (numpy int64), from numpy Generator `rng` (public randomness)."""
    top = (1 << order) - w
    return (rng.integers(0, top + 1, count, dtype="int64"),
            rng.integers(0, top + 1, count, dtype="int64"))


def true_counts(cx, cy, x0, y0, w):
    """The number of points (cells cx, cy) in each square [x0, x0 + w) x [y0, y0 + w), exactly:
    the squares' edges compress the axes to a few thousand slots, the points are counted per
    slot pair, and a 2-D cumulative sum gives every dominance count #(cx < a, cy < b)."""
    import numpy as np
    cx = np.asarray(cx, dtype=np.int64)
    cy = np.asarray(cy, dtype=np.int64)
    x0 = np.asarray(x0, dtype=np.int64)
    y0 = np.asarray(y0, dtype=np.int64)
    xs = np.unique(np.concatenate([x0, x0 + w]))
    ys = np.unique(np.concatenate([y0, y0 + w]))
    # a point's slot: how many edges lie at or below it; cx < xs[t]  <=>  slot <= t
    bx = np.searchsorted(xs, cx, side="right")
    by = np.searchsorted(ys, cy, side="right")
    grid = np.bincount(bx * (ys.size + 1) + by, minlength=(xs.size + 1) * (ys.size + 1))
    dom = grid.reshape(xs.size + 1, ys.size + 1).cumsum(axis=0).cumsum(axis=1)

    def below(a, b):       # #(cx < a, cy < b) for edges a in xs, b in ys
        return dom[np.searchsorted(xs, a), np.searchsorted(ys, b)]
    return below(x0 + w, y0 + w) - below(x0, y0 + w) - below(x0 + w, y0) + below(x0, y0)


# ---- the experiment ----------------------------------------------------------------------------
def _words(seed, name, eps, run):
    import hashlib

    from ...mechanism.core.words import CounterWords
    key = hashlib.sha256(("zeal-locate-range|%d|%s|%s|%d" % (seed, name, eps, run))
                         .encode()).digest()
    return CounterWords(key)


def experiment(name, x, y, box, eps_list, runs, seed, k_of, log=print, widths=WIDTHS,
               queries=QUERIES):
    """The mean absolute error of each method by width, per eps, on points (x, y) in `box`
    (the order-16 publishing box). k_of(n, eps): the release's group size.

    Returns {name, n, widths, truth_mean: [mean true count by width], by_eps: {eps: {"k": k,
    "release" / "histogram" / "wavelet": runs x widths array of mean absolute errors}}}."""
    import numpy as np

    from ...mechanism.locate.hilbert import Box
    from ...mechanism.locate.publish import publish
    from . import reconstruct
    h = box.index(x, y)
    n = len(h)
    cx16, cy16 = box.cell(x, y)
    if box.order != QUERY_ORDER:
        raise ValueError("the range experiment wants the order-16 publishing box")
    b10 = Box(box.x0, box.x1, box.y0, box.y1, order=density.G_ORDER)
    b9 = Box(box.x0, box.x1, box.y0, box.y1, order=WAVELET_ORDER)
    gx, gy = b10.cell(x, y)
    wx, wy = b9.cell(x, y)
    shift = np.uint64(2 * (box.order - density.G_ORDER))
    per = (1 << QUERY_ORDER) // density.G        # order-16 steps per density cell
    rng = np.random.default_rng(seed)
    squares, truth = [], []
    for wd in widths:
        w = width_cells(wd)
        qx, qy = random_squares(w, queries, rng)
        squares.append((qx / per, qy / per, (qx + w) / per, (qy + w) / per))
        truth.append(true_counts(cx16, cy16, qx, qy, w))
    out = {"name": name, "n": n, "widths": list(widths),
           "truth_mean": [float(t.mean()) for t in truth], "by_eps": {}}
    hs = [int(v) for v in h]
    for eps in eps_list:
        k = k_of(n, float(eps))
        errs = {"release": [], "histogram": [], "wavelet": []}
        for run in range(runs):
            words = _words(seed, name, eps, run)
            rel = publish(hs, eps, k, box, words)
            got = (reconstruct.indices(rel) >> shift).astype(np.int64)
            dens = {"release": density.release_density(got),
                    "histogram": density.histogram_density(gx, gy, eps, words),
                    "wavelet": privelet_density(wx, wy, eps, words)}
            for method, d in dens.items():
                p = prefix_table(d)
                errs[method].append([float(np.mean(np.abs(t - n * range_mass(p, *sq))))
                                     for sq, t in zip(squares, truth)])
        out["by_eps"][eps] = {"k": k, **{m: np.array(v) for m, v in errs.items()}}
        log("range queries: %s, n = %d, eps = %s, k = %d, %d runs" % (name, n, eps, k, runs))
    return out


def plot(results, path):
    """Mean absolute error against the square's side, log-log, one panel per point set."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colours = {"release": "tab:red", "histogram": "tab:blue", "wavelet": "tab:purple"}
    labels = {"release": "the release (k = %d)", "histogram": "noisy 41 x 41 histogram",
              "wavelet": "Privelet (Haar, 512 x 512)"}
    styles = ["-", "--", ":"]
    fig, axes = plt.subplots(1, len(results), figsize=(6.2 * len(results), 4.6),
                             squeeze=False, layout="constrained")
    for ax, r in zip(axes[0], results):
        ws = [float(Fraction(w)) for w in r["widths"]]
        for style, (eps, by) in zip(styles, sorted(r["by_eps"].items(),
                                                   key=lambda kv: -float(kv[0]))):
            for m in ("release", "histogram", "wavelet"):
                lab = labels[m] % by["k"] if m == "release" else labels[m]
                ax.plot(ws, by[m].mean(axis=0), style, marker="o", ms=3.5, color=colours[m],
                        label="%s, eps = %s" % (lab, eps))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ws)
        ax.set_xticklabels(r["widths"])
        ax.set_xlabel("side of the query square (fraction of the box's side)")
        ax.set_ylabel("mean absolute error (points)")
        ax.set_title("%s (n = %d): %d random squares per side" % (r["name"], r["n"], QUERIES),
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
