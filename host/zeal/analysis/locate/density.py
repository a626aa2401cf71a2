"""Densities on a G x G grid (G = 1024, the seed's Table 2) and their distances.

Our choices where the seed is loose (it names Voronoi cells, not how they are rasterised):
- the data's own density: each grid cell goes to the nearest distinct point (2-D Voronoi
  cells, rasterised by a k-d tree, scipy), and a point's share (multiplicity / n) is spread
  evenly over its cells (a point whose cell count is 0 keeps its share in the cell holding it);
- a release's density: the same in the Hilbert order (the seed's "Voronoi diagram computed in
  the transformed one-dimensional space"): each grid cell goes to the nearest distinct
  reconstructed index at order 10;
- the equal-width histogram: B x B bins (B = 41), counts plus discrete Laplace noise of scale
  2/eps (one replaced point moves two counts by one), negatives set to 0, normalised, each bin
  spread evenly over its grid cells;
- distances between two densities f, g on the unit square (f = mass per cell times G^2):
  l1 = integral |f - g| = sum |p - q|, l2 = (integral (f - g)^2)^(1/2) = G sqrt(sum (p - q)^2).
"""
from functools import lru_cache

from ...mechanism.core.dlaplace import Draws, discrete_laplace, scale_parts
from ...mechanism.locate.publish import exact_epsilon

G_ORDER = 10
G = 1 << G_ORDER
BINS = 41


@lru_cache(maxsize=2)
def _grid_hilbert(order=G_ORDER):
    """The order-10 Hilbert index of every grid cell, row-major by (cx, cy) (numpy int64)."""
    import hilbert
    import numpy as np
    side = 1 << order
    cx, cy = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    locs = np.stack([cx.ravel(), cy.ravel()], axis=1)
    return hilbert.encode(locs, 2, order).astype(np.int64)


def _spread(owner, weights, fallback, size):
    """Per cell: its owner's weight over the owner's cell count (numpy)."""
    import numpy as np
    count = np.bincount(owner, minlength=weights.size).astype(float)
    out = np.zeros(size)
    has = count > 0
    per = np.zeros(weights.size)
    per[has] = weights[has] / count[has]
    out += per[owner]
    lost = ~has
    if lost.any():
        np.add.at(out, fallback[lost], weights[lost])
    return out / out.sum()


def data_density(cx, cy):
    """Masses per grid cell (length G*G, row-major (cx, cy)) of points in cells cx, cy
    (integers in [0, G)): 2-D Voronoi of the distinct points."""
    import numpy as np
    from scipy.spatial import cKDTree
    cells = np.asarray(cx, dtype=np.int64) * G + np.asarray(cy, dtype=np.int64)
    distinct, mult = np.unique(cells, return_counts=True)
    pts = np.stack([distinct // G, distinct % G], axis=1).astype(float)
    gx, gy = np.meshgrid(np.arange(G, dtype=float), np.arange(G, dtype=float), indexing="ij")
    _, owner = cKDTree(pts).query(np.stack([gx.ravel(), gy.ravel()], axis=1))
    return _spread(owner, mult / mult.sum(), distinct, G * G)


def release_density(h_order10):
    """Masses per grid cell of reconstructed points given as order-10 Hilbert indices: 1-D
    Voronoi along the curve."""
    import numpy as np
    grid_h = _grid_hilbert()
    distinct, mult = np.unique(np.asarray(h_order10, dtype=np.int64), return_counts=True)
    pos = np.searchsorted(distinct, grid_h)
    lo = np.clip(pos - 1, 0, distinct.size - 1)
    hi = np.clip(pos, 0, distinct.size - 1)
    owner = np.where(np.abs(grid_h - distinct[lo]) <= np.abs(distinct[hi] - grid_h), lo, hi)
    # the grid cell of each distinct index (its own cell is always its own: distance 0)
    order = np.argsort(grid_h)
    fallback = order[np.searchsorted(grid_h[order], distinct)]
    return _spread(owner, mult / mult.sum(), fallback, G * G)


def histogram_density(cx, cy, epsilon, words, bins=BINS):
    """Masses per grid cell of the noisy B x B equal-width histogram (exact noise)."""
    import numpy as np
    bx = np.asarray(cx, dtype=np.int64) * bins // G
    by = np.asarray(cy, dtype=np.int64) * bins // G
    counts = np.bincount(bx * bins + by, minlength=bins * bins)
    t, s = scale_parts(2 / exact_epsilon(epsilon))
    d = Draws(words)
    noisy = np.array([int(c) + discrete_laplace(t, s, d) for c in counts], dtype=float)
    noisy = np.maximum(noisy, 0.0)
    if noisy.sum() == 0:
        noisy[:] = 1.0
    g = np.arange(G)
    gb = (g * bins // G)
    cell_bin = (gb[:, None] * bins + gb[None, :]).ravel()
    per_bin = np.bincount(cell_bin, minlength=bins * bins).astype(float)
    mass = noisy / noisy.sum()
    return mass[cell_bin] / per_bin[cell_bin]


def distances(p, q) -> tuple:
    """(l1, l2) of two grids of masses, as densities on the unit square."""
    import numpy as np
    diff = np.asarray(p) - np.asarray(q)
    return float(np.abs(diff).sum()), float(G * np.sqrt((diff * diff).sum()))
