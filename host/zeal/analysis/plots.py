"""PNG plots of a store's reports (matplotlib, optional extra `plots`).

One pair of plots per profile:
- `histogram-<fp8>.png`: the reports per cell against the mechanism's exact output
  distribution P(j | x) at x = the calibrated mean, with the band [P_lo, P_hi] that every
  P(j | x) lies in (the e^eps guarantee). Cells are shown on the reading scale through the
  calibrated estimate x_hat(j) = lo + g (j - c0); wide grids are binned, each bin showing the
  average probability per cell.
- `running-mean-<fp8>.png`: the calibrated mean of the first n reports (arrival order) with
  its 99% Bernstein interval (Estimator.bernstein_halfwidth(n)), n on a log scale.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend change).
"""
import math
import os
from fractions import Fraction
from typing import List

import numpy as np

from ..errors import ZealError
from ..mechanism.estimate import Estimator
from ..mechanism.grid import ExactGrid
from ..mechanism.profile import Profile
from .decode import Loaded

MAX_BINS = 120
RUNNING_POINTS = 400


def _figure(width=8.0, height=4.8):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ZealError("plots need matplotlib: pip install 'zeal-mcu[plots]'") from None
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def cell_edges(n_cells: int, max_bins: int = MAX_BINS) -> np.ndarray:
    """Integer bin edges over cells 0..N (one bin per cell when N <= max_bins)."""
    if n_cells <= max_bins:
        return np.arange(n_cells + 1, dtype=np.int64)
    return np.unique(np.round(np.linspace(0, n_cells, max_bins + 1)).astype(np.int64))


def cell_probabilities(grid: ExactGrid, x, edges: np.ndarray) -> np.ndarray:
    """Average of the exact P(j | x) over the cells of each bin [edges[i], edges[i+1]).

    P(j | x) = P_lo + (P_hi - P_lo) ((1 - f) [j in window(b)] + f [j in window(b + 1)]),
    pos(x) = b + f, window(s) = [s, s + Nc) (shared_spec/mechanism.md section 3): the window
    cells of each bin are counted by interval overlap, so any N works (ExactGrid.distribution
    enumerates every cell, which only suits small grids; the tests compare the two).
    """
    pos = grid.position(Fraction(x))
    base = math.floor(pos)
    frac = float(pos - base)
    a, b = edges[:-1].astype(np.float64), edges[1:].astype(np.float64)

    def overlap(start):
        return np.clip(np.minimum(b, start + grid.nc) - np.maximum(a, start), 0, None)

    inside = (1 - frac) * overlap(base) + frac * overlap(base + 1)
    p_lo, p_hi = float(grid.p_lo), float(grid.p_hi)
    return p_lo + (p_hi - p_lo) * inside / (b - a)


def _reading(grid: ExactGrid, cells) -> np.ndarray:
    """Cell coordinate -> reading scale through the calibrated estimate (float64)."""
    return float(grid.lo) + float(grid.gain) * (np.asarray(cells, np.float64)
                                                - float(grid.intercept))


def _prepare(profile: Profile, offsets):
    """(estimator, exact grid, offsets as int64); ZealError when there is nothing to plot."""
    est = Estimator(profile)
    j = np.asarray(offsets, dtype=np.int64)
    if j.size == 0:
        raise ZealError("no reports to plot")
    return est, est.grid, j


def histogram(profile: Profile, offsets, path: str, *, title_extra: str = "") -> str:
    """Histogram of the reports against P(j | x = calibrated mean) and [P_lo, P_hi]."""
    est, grid, j = _prepare(profile, offsets)
    summary = est.summarize(j)
    edges = cell_edges(profile.n_cells)
    counts, _ = np.histogram(j.astype(np.float64), bins=edges.astype(np.float64))
    widths = np.diff(edges)
    observed = counts / (j.size * widths)  # fraction of reports per cell
    mech = cell_probabilities(grid, Fraction(summary.mean_calibrated), edges)
    xs = _reading(grid, edges - 0.5)  # cell j spans x_hat(j) -/+ g/2

    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    ax.stairs(observed, xs, fill=True, color="#9ecae1", label="reports (n = %d)" % j.size)
    ax.stairs(mech, xs, color="#d62728", linewidth=1.6,
              label="mechanism P(j | x = %.4g), exact" % summary.mean_calibrated)
    p_lo, p_hi = float(grid.p_lo), float(grid.p_hi)
    ax.axhspan(p_lo, p_hi, color="#2ca02c", alpha=0.10,
               label="[P_lo, P_hi]: every P(j | x) lies here (ratio %.4g <= e^%g)"
               % (p_hi / p_lo, profile.epsilon))
    ax.axhline(p_lo, color="#2ca02c", linewidth=0.8, linestyle="--")
    ax.axhline(p_hi, color="#2ca02c", linewidth=0.8, linestyle="--")
    ax.axvspan(profile.lo, profile.hi, color="0.5", alpha=0.08,
               label="reading range [%g, %g]" % (profile.lo, profile.hi))
    ax.axvline(summary.mean_calibrated, color="k", linewidth=1.0, linestyle=":",
               label="calibrated mean %.4f" % summary.mean_calibrated)
    cells = "one bar per cell" if widths.max() == 1 else "bins of ~%d cells" % int(widths.mean())
    ax.set_xlabel("report on the reading scale: calibrated estimate x_hat(j) (%s)" % cells)
    ax.set_ylabel("probability per cell")
    ax.set_ylim(0, max(float(observed.max()), p_hi) * 1.35)
    ax.set_title("Reports vs. the mechanism's output distribution\nprofile %s: m = %d bits, "
                 "N = %d cells, eps = %g%s" % (profile.fingerprint[:8], profile.bits,
                                               profile.n_cells, profile.epsilon, title_extra),
                 fontsize=10)
    ax.legend(fontsize=7.5, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def running_mean(profile: Profile, offsets, path: str, *, title_extra: str = "") -> str:
    """The calibrated mean of the first n reports vs n, with its 99% Bernstein interval."""
    est, grid, j = _prepare(profile, offsets)
    n = j.size
    # Cumulative sums in float64 around an integer centre (offsets reach 2^52 and n * 2^52
    # overflows int64); the plot needs no more than float64's 16 digits.
    centre = int(grid.intercept)
    cum = np.cumsum((j - centre).astype(np.float64))
    ns = np.unique(np.geomspace(1, n, min(n, RUNNING_POINTS)).round().astype(np.int64))
    shift = float(centre - grid.intercept)
    means = float(grid.lo) + float(grid.gain) * (cum[ns - 1] / ns + shift)
    half = np.array([est.bernstein_halfwidth(int(k)) for k in ns])
    final = est.summarize(j)

    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    ax.fill_between(ns, means - half, means + half, color="#9ecae1", alpha=0.6,
                    label="99% interval for the mean of the first n readings (Bernstein)")
    ax.plot(ns, means, color="#08519c", linewidth=1.4, label="calibrated mean of first n")
    ax.axhline(final.mean_calibrated, color="k", linewidth=0.9, linestyle=":",
               label="final: %.4f [%.4f, %.4f]" % ((final.mean_calibrated,) + final.ci99))
    ax.axhline(profile.lo, color="0.4", linewidth=0.8, linestyle="--")
    ax.axhline(profile.hi, color="0.4", linewidth=0.8, linestyle="--",
               label="reading range [%g, %g]" % (profile.lo, profile.hi))
    width = profile.hi - profile.lo
    ax.set_ylim(profile.lo - 0.5 * width, profile.hi + 0.5 * width)
    ax.set_xscale("log")
    ax.set_xlim(1, max(n, 2))
    ax.set_xlabel("number of reports n (arrival order)")
    ax.set_ylabel("estimated mean reading")
    ax.set_title("Running calibrated mean with its 99%% interval\nprofile %s: m = %d bits, "
                 "eps = %g, n = %d%s" % (profile.fingerprint[:8], profile.bits,
                                         profile.epsilon, n, title_extra), fontsize=10)
    ax.legend(fontsize=7.5, loc="upper right", framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def plot_store(store, outdir, *, include_vector: bool = False) -> List[str]:
    """Both plots for every profile with stored reports; returns the PNG paths."""
    _figure()  # a missing matplotlib fails before anything is read
    data = Loaded(store, include_vector)
    if not data.rows:
        raise ZealError("no reports stored in %s" % store.path)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise ZealError("cannot create %s: %s" % (outdir, exc.strerror or exc)) from None
    paths = []
    for fp in data.by_fp:
        prof = data.profiles[fp]
        j = data.offsets(fp)
        for name, draw in (("histogram", histogram), ("running-mean", running_mean)):
            path = os.path.join(outdir, "%s-%s.png" % (name, fp[:8]))
            try:
                paths.append(draw(prof, j, path))
            except OSError as exc:
                raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    return paths
