"""PNG plots of a store's reports (matplotlib, optional extra `plots`).

One pair of plots per profile:
- `histogram-<fp8>.png`: the fraction of reports per cell, cells shown on the reading scale
  through the calibrated estimate x_hat(j) = lo + g (j - c0) (wide grids are binned, each bin
  showing the average per cell).
  - With the true readings known (`readings`: the demo, a replay), against the exact
    expected histogram for those readings: the MIXTURE (1/n) sum_i P(j | x_i) over the
    readings behind the reports (`mixture_probabilities`), with a 99% band for the observed
    fractions (Bernstein per bin, union over the bins).
  - Without them, no curve pretends to be expected: reports from many different readings
    follow a mixture that cannot be computed without those readings. What holds for any
    readings is drawn instead: every cell's probability, hence every mixture's, lies in
    [P_lo, P_hi] (the e^eps guarantee).
- `running-mean-<fp8>.png`: the calibrated mean of the first n reports (arrival order), with
  two 99% Bernstein intervals, each labelled for what it is: per n (holds at each n
  separately) and time-uniform (holds at every n at once: a union bound over n with
  delta_n = 0.01 / (n (n + 1))); and, with the true readings known, the true mean of the
  same n readings.

Table profiles (zeal-table/1) get the same pair: the histogram has one bar per cell j (the
cell's estimate g_j on the top axis), against the exact mixture (1/n) sum_i P(j | x_i) of
the table's law when the readings are known, else against each cell's range
[min_r P[r][j], max_r P[r][j]] (every mixture's probability lies there); the running mean
averages the cells' g_j. Titles say "table profile".

Axes carry units: the reading's unit when given (`unit`), "reports", "probability".
Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend change).
"""
import math
import os
from collections import Counter
from fractions import Fraction
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..errors import ZealError
from ..mechanism.grid.estimate import Estimator
from ..mechanism.grid.exact import ExactGrid
from ..mechanism.grid.profile import Profile
from ..wire.codec import device_name
from ..mechanism import kinds
from .decode import ROW_BOOT, ROW_COUNT, ROW_DEVICE, ROW_SEQ, Loaded, PayloadReader, frame_counts

MAX_BINS = 120
RUNNING_POINTS = 400
CONFIDENCE = 0.99
_CHUNK = 2048  # distinct readings per block of the float mixture (bounds its memory)


def require_matplotlib(who="plots"):
    """The one-line error when matplotlib is missing, named after `who` needs it: asked
    before any work that ends in a figure (a long computation must not end in it)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ZealError("%s need matplotlib: pip install 'zeal-mcu[plots]'" % who) from None
    return Figure, FigureCanvasAgg


def new_figure(width=8.0, height=6.4, *, who="plots"):
    """A matplotlib Figure on the Agg canvas (no display needed); `who` names what needs
    matplotlib in the one-line error when it is missing."""
    Figure, FigureCanvasAgg = require_matplotlib(who)
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
    return mixture_probabilities(grid, [Fraction(x)], edges)


def _positions(grid: ExactGrid, readings) -> tuple:
    """The distinct readings as (count, b, f) with pos(x) = b + f exactly (f a Fraction)."""
    out = []
    for x, count in Counter(Fraction(x) for x in readings).items():
        pos = grid.position(x)
        base = math.floor(pos)
        out.append((count, base, pos - base))
    return out


def mixture_probabilities(grid: ExactGrid, readings: Sequence, edges, *, exact: bool = False):
    """The exact expected histogram of reports from these readings, per cell of each bin.

    n reports, report i made from reading x_i, are independent with P(report i = j) =
    P(j | x_i); the expected fraction of reports in cell j is therefore the mixture
    M(j) = (1/n) sum_i P(j | x_i), not P(j | x) at any single x (not even the mean: P(j | x)
    is not affine in x across window starts). Per bin [a, b) this returns
    (1/(b - a)) sum_{a <= j < b} M(j)
      = P_lo + (P_hi - P_lo) (1/(n (b - a))) sum_x c_x ((1 - f_x) ov(b_x) + f_x ov(b_x + 1)),
    c_x the number of readings equal to x (equal readings are grouped, so the cost is per
    distinct reading), ov(s) the overlap of [a, b) with the window [s, s + Nc).

    exact=True returns a list of Fractions (the tests compare it with ExactGrid.distribution
    and with the exact mean map); otherwise float64 with numpy.
    """
    groups = _positions(grid, readings)
    n = sum(c for c, _, _ in groups)
    if n == 0:
        raise ZealError("no readings for the mixture")
    edges = [int(e) for e in edges]
    d = grid.p_hi - grid.p_lo
    if exact:
        out = []
        for a, b in zip(edges[:-1], edges[1:]):
            def ov(s):
                return max(0, min(b, s + grid.nc) - max(a, s))
            inside = sum(c * ((1 - f) * ov(s) + f * ov(s + 1)) for c, s, f in groups)
            out.append(grid.p_lo + d * Fraction(inside) / (n * (b - a)))
        return out
    a = np.asarray(edges[:-1], dtype=np.float64)
    b = np.asarray(edges[1:], dtype=np.float64)
    inside = np.zeros(a.size)
    for i in range(0, len(groups), _CHUNK):
        part = groups[i:i + _CHUNK]
        c = np.array([g[0] for g in part], dtype=np.float64)[:, None]
        s = np.array([g[1] for g in part], dtype=np.float64)[:, None]
        f = np.array([float(g[2]) for g in part], dtype=np.float64)[:, None]

        def ov(start):
            return np.clip(np.minimum(b, start + grid.nc) - np.maximum(a, start), 0, None)

        inside += (c * ((1 - f) * ov(s) + f * ov(s + 1))).sum(axis=0)
    return float(grid.p_lo) + float(d) * inside / (n * (b - a))


def bernstein_halfwidth(n: int, var: float, bound: float, delta: float) -> float:
    """lambda with 2 exp(-n lambda^2 / (2 (var + bound lambda / 3))) = delta: a mean of n
    independent terms, each within `bound` of its expectation, with average variance `var`,
    is within lambda of its expectation with probability >= 1 - delta (Bernstein)."""
    ell = math.log(2 / delta)
    c = ell * bound / 3
    return (c + math.sqrt(c * c + 2 * n * ell * var)) / n


def band_halfwidths(expected_per_cell, widths, n: int, delta: float) -> np.ndarray:
    """Per bin, lambda such that every bin's observed fraction per cell is within lambda of
    its expectation at once with probability >= 1 - delta.

    The count in a bin of w cells is a sum of n independent indicators with probabilities
    p_i (mean p = w M); their total variance sum p_i (1 - p_i) <= n p (1 - p) (concavity),
    each within 1 of its mean: Bernstein at delta / bins for each bin, a union bound over
    the bins, then divided by w (per cell)."""
    widths = np.asarray(widths, dtype=np.float64)
    p = np.clip(np.asarray(expected_per_cell, dtype=np.float64) * widths, 0.0, 1.0)
    per_bin = delta / len(widths)
    return np.array([bernstein_halfwidth(n, q * (1 - q), 1.0, per_bin) for q in p]) / widths


def _any_readings_halfwidths(widths, p_lo, p_hi, n, delta) -> np.ndarray:
    """band_halfwidths for bins whose expected probability per cell is unknown but in
    [p_lo, p_hi]: the variance p (1 - p) of a bin's mass p is taken at its largest there."""
    widths = np.asarray(widths, dtype=np.float64)
    lo, hi = p_lo * widths, np.minimum(p_hi * widths, 1.0)
    worst = np.clip(0.5, lo, hi)  # p (1 - p) peaks at 1/2
    per_bin = delta / len(widths)
    return np.array([bernstein_halfwidth(n, q * (1 - q), 1.0, per_bin) for q in worst]) / widths


def histogram_data(profile: Profile, offsets, readings=None, *,
                   confidence: float = CONFIDENCE) -> dict:
    """What the histogram draws: edges (cells), widths, counts, observed (fraction of reports
    per cell), and with `readings` (the n true readings behind the n reports, any order) the
    exact expected mixture per cell and its simultaneous `confidence` band half-widths."""
    grid = Estimator(profile).grid
    j = np.asarray(offsets, dtype=np.int64)
    edges = cell_edges(profile.n_cells)
    counts, _ = np.histogram(j.astype(np.float64), bins=edges.astype(np.float64))
    widths = np.diff(edges)
    doc = {"edges": edges, "widths": widths, "counts": counts, "n": int(j.size),
           "observed": counts / (j.size * widths), "expected": None, "band": None}
    if readings is not None:
        if len(readings) != j.size:
            raise ZealError("%d readings for %d reports" % (len(readings), j.size))
        doc["expected"] = mixture_probabilities(grid, readings, edges)
        doc["band"] = band_halfwidths(doc["expected"], widths, j.size, 1 - confidence)
    return doc


def _reading(grid: ExactGrid, cells) -> np.ndarray:
    """Cell coordinate -> reading scale through the calibrated estimate (float64)."""
    return float(grid.lo) + float(grid.gain) * (np.asarray(cells, np.float64)
                                                - float(grid.intercept))


def _prepare(profile: Profile, offsets):
    """(estimator, exact grid (None for a table profile), offsets as int64); ZealError when
    there is nothing to plot."""
    est = kinds.of(profile).estimator(profile)
    j = np.asarray(offsets, dtype=np.int64)
    if j.size == 0:
        raise ZealError("no reports to plot")
    return est, est.grid, j


def _unit(unit: Optional[str]) -> str:
    return "(%s)" % unit if unit else "(the profile's scale; unit not recorded: --unit)"


def _legend(fig, ax, below=-0.13) -> None:
    """The legend under the axes (`below`: its top, in axes heights), so it hides no data."""
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, below), ncol=1,
              framealpha=0.9)
    fig.tight_layout()


def _title(profile: Profile, what: str, extra: str) -> str:
    kind = kinds.of(profile).title_note(profile)
    return ("%s\nprofile %s: range [%g, %g], eps = %g, m = %d bits, N = %d cells%s%s"
            % (what, profile.fingerprint[:8], profile.lo, profile.hi, profile.epsilon,
               profile.bits, profile.n_cells, kind, extra))


def table_mixture(profile, readings) -> np.ndarray:
    """A table profile's expected fraction of reports per cell for these readings (float64):
    (1/n) sum_i P(j | x_i), P(j | x) = (1-f) P[b][j] + f P[b+1][j] with pos(x) = b + f
    (readings clamped to [lo, hi], as the device clamps)."""
    w = np.array(profile.weights, dtype=np.float64)
    rows = w / w.sum(axis=1, keepdims=True)
    big_r = profile.anchors
    lo, hi = Fraction(profile.lo), Fraction(profile.hi)
    out = np.zeros(profile.n_cells)
    groups = Counter(Fraction(x) for x in readings)
    n = sum(groups.values())
    if n == 0:
        raise ZealError("no readings for the mixture")
    for x, c in groups.items():
        pos = (min(max(x, lo), hi) - lo) * big_r / (hi - lo)
        b = min(math.floor(pos), big_r - 1)
        f = float(pos - b)
        out += c * ((1 - f) * rows[b] + f * rows[b + 1])
    return out / n


def table_histogram(profile, offsets, path: str, *, readings=None, unit: str = None,
                    title_extra: str = "") -> str:
    """A table profile's histogram: one bar per cell j, against the exact mixture over
    `readings` (with a simultaneous 99% Bernstein band) or each cell's range of
    probabilities over the anchors."""
    est, _, j = _prepare(profile, offsets)
    summary = est.summarize(j)
    n_cells = profile.n_cells
    counts = np.bincount(j, minlength=n_cells)
    observed = counts / j.size
    cells = np.arange(n_cells)
    w = np.array(profile.weights, dtype=np.float64)
    rows = w / w.sum(axis=1, keepdims=True)
    p_min, p_max = rows.min(axis=0), rows.max(axis=0)
    fig = new_figure()
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(cells, observed, width=0.8, color="#9ecae1", edgecolor="#2171b5", zorder=2,
           label="reports: fraction per cell (n = %d reports)" % j.size)
    top = float(max(observed.max(), p_max.max()))
    if readings is not None:
        if len(readings) != j.size:
            raise ZealError("%d readings for %d reports" % (len(readings), j.size))
        exp_ = table_mixture(profile, readings)
        band = band_halfwidths(exp_, np.ones(n_cells), j.size, 1 - CONFIDENCE)
        ax.errorbar(cells, exp_, yerr=band, fmt="_", color="#d62728", markersize=10,
                    elinewidth=1.0, zorder=4,
                    label="expected for these %d readings: exact mixture (1/n) sum P(j | x_i), "
                          "with its 99%% band (Bernstein, all %d cells at once)"
                          % (j.size, n_cells))
        top = max(top, float((exp_ + band).max()))
        what = "Reports vs. their exact expected histogram for the true readings"
    else:
        ax.vlines(cells, p_min, p_max, color="#2ca02c", linewidth=3, alpha=0.6, zorder=1,
                  label="[min_r P[r][j], max_r P[r][j]]: where each cell's probability lies "
                        "for any readings (column ratio <= e^%g)" % profile.epsilon)
        what = ("Reports per cell (true readings unknown: their expected histogram cannot be "
                "drawn)")
    g = [float(v) for v in est._g_float]
    step = max(1, n_cells // 16)
    ax.set_xticks(cells[::step])
    ax.set_xticklabels(["%d\n%.3g" % (c, g[c]) for c in cells[::step]], fontsize=7)
    ax.set_xlabel("cell j (report), and below it its estimate g_j %s; calibrated mean of "
                  "the reports %.4f %s" % (_unit(unit), summary.mean_calibrated, unit or ""))
    return _finish_cells(fig, ax, top, profile, what, title_extra, path)


def histogram(profile: Profile, offsets, path: str, *, readings=None, unit: str = None,
              title_extra: str = "") -> str:
    """Histogram of the reports against the exact mixture over `readings` (when given) or
    against the band [P_lo, P_hi] that every cell's probability lies in. A table profile:
    `table_histogram`."""
    if not kinds.of(profile).double_reports:  # cells of a table: one bar each
        return table_histogram(profile, offsets, path, readings=readings, unit=unit,
                               title_extra=title_extra)
    est, grid, j = _prepare(profile, offsets)
    summary = est.summarize(j)
    h = histogram_data(profile, j, readings)
    edges, widths, observed = h["edges"], h["widths"], h["observed"]
    xs = _reading(grid, edges - 0.5)  # cell j spans x_hat(j) -/+ g/2
    p_lo, p_hi = float(grid.p_lo), float(grid.p_hi)

    fig = new_figure()
    ax = fig.add_subplot(1, 1, 1)
    # z-order: the band (if any) below the bars, the bars see-through, the curve on top
    ax.stairs(observed, xs, fill=True, color="#9ecae1", alpha=0.55, zorder=2,
              label="reports: fraction per cell (n = %d reports)" % j.size)
    ax.stairs(observed, xs, color="#2171b5", linewidth=0.9, zorder=3)
    top = max(float(observed.max()), p_hi)
    if h["expected"] is not None:
        exp_, band = h["expected"], h["band"]
        ax.stairs(exp_ + band, xs, baseline=exp_ - band, fill=True, color="#fdd0a2",
                  alpha=0.8, zorder=1, label="99%% band for the bars if the mechanism is right "
                  "(Bernstein, all %d bins at once)" % len(widths))
        ax.stairs(exp_, xs, baseline=None, color="#d62728", linewidth=1.6, zorder=4,
                  label="expected for these %d readings: exact mixture (1/n) sum P(j | x_i)"
                  % j.size)
        top = max(top, float((exp_ + band).max()))
        true_mean = float(sum(Fraction(x) for x in readings) / len(readings))
        # wide and pale under the estimate's thin line: both stay visible where they meet
        ax.axvline(true_mean, color="#d62728", linewidth=4.0, alpha=0.35, zorder=5,
                   label="true mean of the readings %.4f %s" % (true_mean, unit or ""))
        what = "Reports vs. their exact expected histogram for the true readings"
    else:
        what = ("Reports per cell (true readings unknown: their expected histogram cannot be "
                "drawn)")
    label = ("[P_lo, P_hi]: every cell's probability, for any readings, lies here "
             "(ratio %.4g <= e^%g)" % (p_hi / p_lo, profile.epsilon))
    if h["expected"] is None:
        ax.axhspan(p_lo, p_hi, color="#2ca02c", alpha=0.10, label=label)
        # Sampling noise around that band, valid for any readings: a bin's expected fraction
        # per cell lies in [P_lo, P_hi], so its count's variance is at most n max p (1 - p)
        # over that range (Bernstein, all bins at once, as band_halfwidths).
        lam = _any_readings_halfwidths(widths, p_lo, p_hi, j.size, 1 - CONFIDENCE)
        ax.stairs(p_hi + lam, xs, baseline=None, color="#2ca02c", linewidth=0.9, linestyle=":",
                  label="[P_lo - l, P_hi + l]: where the bars lie with 99%% probability for "
                        "any readings (l: Bernstein, all %d bins at once)" % len(widths))
        ax.stairs(np.maximum(p_lo - lam, 0), xs, baseline=None, color="#2ca02c", linewidth=0.9,
                  linestyle=":")
        top = max(top, float((p_hi + lam).max()))
    else:
        ax.axhline(p_lo, color="#2ca02c", linewidth=0.8, linestyle="--", label=label)
    ax.axhline(p_lo, color="#2ca02c", linewidth=0.8, linestyle="--")
    ax.axhline(p_hi, color="#2ca02c", linewidth=0.8, linestyle="--")
    ax.axvspan(profile.lo, profile.hi, color="0.5", alpha=0.10,
               label="reading range [%g, %g] %s" % (profile.lo, profile.hi, unit or ""))
    ax.axvline(summary.mean_calibrated, color="k", linewidth=1.2, linestyle="--", zorder=6,
               label="estimate: the mean of the reports %.4f %s"
               % (summary.mean_calibrated, unit or ""))
    cells = "one bar per cell" if widths.max() == 1 else "bins of ~%d cells" % int(widths.mean())
    ax.set_xlabel("each report's own estimate %s, %s\none alone is very noisy (most lie "
                  "outside the shaded range); their mean is the estimate" % (_unit(unit), cells),
                  fontsize=8.5)
    return _finish_cells(fig, ax, top, profile, what, title_extra, path, below=-0.19)


def running_mean(profile: Profile, offsets, path: str, *, readings=None, unit: str = None,
                 title_extra: str = "") -> str:
    """The calibrated mean of the first n reports vs n, with its per-n and time-uniform 99%
    Bernstein intervals, and the true mean of the same n readings when `readings` (in the
    reports' order) are given."""
    est, grid, j = _prepare(profile, offsets)
    n = j.size
    ns = np.unique(np.geomspace(1, n, min(n, RUNNING_POINTS)).round().astype(np.int64))
    if grid is None:  # a table profile: the running mean of the cells' estimates g_j
        cum = np.cumsum(est._g_float[j])
        means = cum[ns - 1] / ns
    else:
        # Cumulative sums in float64 around an integer centre (offsets reach 2^52 and
        # n * 2^52 overflows int64); the plot needs no more than float64's 16 digits.
        centre = int(grid.intercept)
        cum = np.cumsum((j - centre).astype(np.float64))
        shift = float(centre - grid.intercept)
        means = float(grid.lo) + float(grid.gain) * (cum[ns - 1] / ns + shift)
    alpha = 1 - CONFIDENCE
    per_n = np.array([bernstein_halfwidth(int(k), est.var_bound, est.dev_bound, alpha)
                      for k in ns])
    uniform = np.array([bernstein_halfwidth(int(k), est.var_bound, est.dev_bound,
                                            alpha / (k * (k + 1.0))) for k in ns])
    final = est.summarize(j)

    fig = new_figure()
    ax = fig.add_subplot(1, 1, 1)
    ax.fill_between(ns, means - per_n, means + per_n, color="#9ecae1", alpha=0.6,
                    label="99% interval at each n separately (Bernstein)")
    ax.plot(ns, means - uniform, color="#3182bd", linewidth=0.9, linestyle="--",
            label="99% interval at every n at once (time-uniform: Bernstein, "
                  "union over n, delta_n = 0.01/(n(n+1)))")
    ax.plot(ns, means + uniform, color="#3182bd", linewidth=0.9, linestyle="--")
    ax.plot(ns, means, color="#08519c", linewidth=1.4,
            label="calibrated mean of the first n reports")
    if readings is not None:
        x = np.asarray([float(v) for v in readings], dtype=np.float64)
        if x.size != n:
            raise ZealError("%d readings for %d reports" % (x.size, n))
        true_run = np.cumsum(x - x.mean())[ns - 1] / ns + x.mean()
        ax.plot(ns, true_run, color="#d62728", linewidth=1.2,
                label="true mean of the same n readings (final %.4f %s)" % (x.mean(), unit or ""))
    ax.axhline(final.mean_calibrated, color="k", linewidth=0.9, linestyle=":",
               label="final estimate %.4f, per-n 99%% interval [%.4f, %.4f] %s"
               % ((final.mean_calibrated,) + final.ci99 + (unit or "",)))
    ax.axhline(profile.lo, color="0.4", linewidth=0.8, linestyle="-.")
    ax.axhline(profile.hi, color="0.4", linewidth=0.8, linestyle="-.",
               label="reading range [%g, %g] %s" % (profile.lo, profile.hi, unit or ""))
    width = profile.hi - profile.lo
    ax.set_ylim(profile.lo - 0.6 * width, profile.hi + 0.6 * width)
    ax.set_xscale("log")
    ax.set_xlim(1, max(n, 2))
    ax.set_xlabel("number of reports n (reports, in arrival order; log scale)")
    ax.set_ylabel("mean reading %s" % _unit(unit))
    ax.set_title(_title(profile, "Running calibrated mean of the reports with 99% intervals",
                        ", n = %d%s" % (n, title_extra)), fontsize=9.5)
    _legend(fig, ax)
    fig.savefig(path, format="png")
    return path


def aligned_readings(data: Loaded, readings: Mapping[bytes, Sequence]) -> Dict[str, list]:
    """fingerprint -> the true reading behind each of its reports, in the order of
    data.offsets(fp), from `readings`: device id (8 bytes, as in HELLO) -> that device's
    readings in the order it took them. Report k of a device, counting its stored reports in
    (boot, seq) order, is its reading k, so every report a device made must be stored: a
    ZealError says which device's counts differ."""
    want = {bytes(d).ljust(8, b"\0"): list(v) for d, v in readings.items()}
    start = {}  # (device, boot, seq) -> index of the frame's first report in the device's list
    per_dev: Dict[bytes, list] = {}
    for r in data.rows:
        per_dev.setdefault(bytes(r[ROW_DEVICE]), []).append(r)
    for dev, rows in per_dev.items():
        if dev not in want:
            raise ZealError("no readings given for device %s" % device_name(dev))
        k = 0
        for r in sorted(rows, key=lambda r: (r[ROW_BOOT], r[ROW_SEQ])):
            start[(dev, r[ROW_BOOT], r[ROW_SEQ])] = k
            k += r[ROW_COUNT]
        if k != len(want[dev]):
            raise ZealError("device %s: %d reports stored for %d readings given"
                            % (device_name(dev), k, len(want[dev])))
    out = {}
    for fp, rows in data.by_fp.items():
        seq = []
        for r in rows:
            dev = bytes(r[ROW_DEVICE])
            k = start[(dev, r[ROW_BOOT], r[ROW_SEQ])]
            seq.extend(want[dev][k:k + r[ROW_COUNT]])
        out[fp] = seq
    return out


def plot_store(store, outdir, *, include_vector: bool = False,
               readings: Optional[Mapping[bytes, Sequence]] = None,
               unit: Optional[str] = None) -> List[str]:
    """Both plots for every profile with stored reports; returns the PNG paths.

    readings: device id -> the true readings that device took, in order (the demo and a
    replay know them); the histogram then shows the exact expected mixture and the running
    mean the true mean. unit: the readings' unit, for the axes."""
    new_figure()  # a missing matplotlib fails before anything is read
    data = Loaded(store, include_vector)
    if not data.rows:
        raise ZealError("no reports stored in %s" % store.path)
    truth = aligned_readings(data, readings) if readings is not None else {}
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise ZealError("cannot create %s: %s" % (outdir, exc.strerror or exc)) from None
    paths = []
    for fp in data.by_fp:
        prof = data.profiles[fp]
        kind = kinds.of(prof)
        if not kind.distribution_plots:  # several attributes a report: a panel each
            rows = data.by_fp[fp]
            got = kind.export(prof, rows, frame_counts(rows), PayloadReader)
            path = os.path.join(outdir, "attributes-%s.png" % fp[:8])
            try:
                paths.append(attribute_means(prof, got, path, unit=unit))
            except OSError as exc:
                raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
            continue
        j = data.offsets(fp)
        for name, draw in (("histogram", histogram), ("running-mean", running_mean)):
            path = os.path.join(outdir, "%s-%s.png" % (name, fp[:8]))
            try:
                paths.append(draw(prof, j, path, readings=truth.get(fp), unit=unit))
            except OSError as exc:
                raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    return paths


def _finish_cells(fig, ax, top, profile, what, title_extra, path, below=-0.13):
    """The common end of both per-cell histograms (grid and table): y axis, title, legend,
    the file."""
    ax.set_ylabel("probability per cell (fraction of reports)")
    ax.set_ylim(0, top * 1.15)
    ax.set_title(_title(profile, what, title_extra), fontsize=9.5)
    _legend(fig, ax, below)
    fig.savefig(path, format="png")
    return path


# ---- profiles of several attributes (multi, shuffle) ------------------------------------------
MAX_PANELS = 16
Z99 = 2.5758293035489004  # the normal distribution's 99.5% quantile


def attribute_means(profile, rows, path: str, *, unit: Optional[str] = None) -> str:
    """One panel per attribute (a multi profile's attributes, a shuffle profile's
    coordinates; at most MAX_PANELS): the running mean of the rows' unbiased estimates
    (zeal.mechanism.kinds's export rows: exactly `zeal analyze`'s estimate at the last report)
    against the reports (messages) so far, with a 99% interval by the normal approximation at
    each n; a categorical attribute has a line per value (its frequency)."""
    groups = {}
    for a, name, value, est in zip(rows["attribute"].tolist(), rows["name"].tolist(),
                                   rows["value"].tolist(), rows["estimate"].tolist()):
        if a < 0:
            continue  # a message no randomiser sends: analyze leaves it out too
        groups.setdefault((a, name), {}).setdefault(value, []).append(est)
    keys = sorted(groups)[:MAX_PANELS]
    if not keys:
        raise ZealError("profile %s: no reports to plot" % profile.fingerprint[:16])
    cols = min(len(keys), 4)
    nrow = -(-len(keys) // cols)
    fig = new_figure(3.2 * cols + 0.6, 2.6 * nrow + 1.1)
    for i, (a, name) in enumerate(keys):
        ax = fig.add_subplot(nrow, cols, i + 1)
        for value, ests in sorted(groups[(a, name)].items()):
            x = np.asarray(ests, dtype=np.float64)
            n = np.arange(1, x.size + 1)
            mean = np.cumsum(x) / n
            var = np.maximum(np.cumsum(x * x) / n - mean * mean, 0.0) * n / np.maximum(n - 1, 1)
            half = Z99 * np.sqrt(var / n)
            line, = ax.plot(n, mean, lw=1.2, label=value)
            ax.fill_between(n[1:], (mean - half)[1:], (mean + half)[1:],
                            color=line.get_color(), alpha=0.18, lw=0)
        categorical = any(v != "mean" for v in groups[(a, name)])
        ax.set_title("%s (attribute %d)" % (name, a), fontsize=8.5)
        ax.set_xscale("log")
        ax.set_xlabel(kinds.of(profile).rows_per_attribute, fontsize=7.5)
        ax.set_ylabel("estimated frequency" if categorical else
                      "estimated mean%s" % (" (%s)" % unit if unit else ""), fontsize=7.5)
        ax.tick_params(labelsize=7)
        if categorical:
            ax.legend(fontsize=6.5, loc="best")
    shown = "" if len(groups) <= MAX_PANELS else " (the first %d of %d)" % (MAX_PANELS,
                                                                            len(groups))
    fig.suptitle("profile %s (%s): each attribute's running estimate%s; shaded: 99%% "
                 "interval, normal approximation at each n" % (
                     profile.fingerprint[:8], kinds.of(profile).name, shown), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
