"""`zeal reproduce --location`: seed 003's Table 1 (k by n and eps), Table 2 (density l1/l2
at eps = 3 against the noisy 41 x 41 histogram), the error against k (its Fig. 15), the
densities themselves, range-count queries against the histogram and a Haar-wavelet baseline
(its Section 6.2, Fig. 24) and the median against smooth sensitivity (its Section 6.3, Figs.
25-26), on the shipped point sets; our numbers beside the paper's.

Quick: Table 1 for n <= 10,000, Table 2 on the earthquakes with 20 runs, range queries on the
earthquakes with 3 runs, the median with 200 runs (the seed's 129 values) and 50 (the
earthquakes); full: every n of Table 1, 100 runs on both point sets, range queries on every
set with 20 runs, the median with 1,000 and 200 runs."""
import os
import time

from ...errors import ZealError
from ...mechanism.core.words import CounterWords
from ...mechanism.locate.hilbert import Box
from ...mechanism.locate.publish import publish
from ..datasets import shipped_points
from . import choose, density, median, queries, reconstruct

PAPER_K = {2000: (44, 29, 20, 12), 5000: (59, 37, 27, 18), 10000: (79, 51, 36, 27),
           20000: (121, 83, 61, 41), 100000: (234, 150, 98, 73)}
EPS_K = (0.5, 1.0, 2.0, 3.0)
SETS = (("earthquakes", "earthquakes.csv", (-180.0, 180.0, -90.0, 90.0)),
        ("uber-nyc", "uber-nyc-apr14.csv.gz", (-74.5, -73.5, 40.4, 41.2)))
# A synthetic set with the character of the seed's Twitter data (people at their town: heavy
# point masses): CITIES towns uniform on the unit square, Zipf weights 1/r, CITIES_N points.
CITIES = ("cities", None, (0.0, 1.0, 0.0, 1.0))
CITIES_TOWNS, CITIES_N, CITIES_SEED = 500, 100000, 2013
PAPER_T2 = "release 1.19 / 0.20, histogram 1.38 / 0.25 (l1 / l2; Twitter, n = 183,072)"
RANGE_EPS = ("3", "1")
PAPER_RANGE = ("the release (k = 20 and 51) beats the wavelet method at every query size and "
               "the equal-width histogram for small squares; the wavelet method beats the "
               "histogram for large squares and is worst for small ones; every method's error "
               "falls again once a square covers more than half of the data (n is known)")
PAPER_MEDIAN = ("on 129 values (66 scaled exponentials and 63 ones) the release's median "
                "error grows more slowly than the smooth-sensitivity mechanism's as eps "
                "falls (Fig. 26), and is less sensitive to a larger local sensitivity "
                "(Fig. 25)")


def _cities():
    """(x, y) of the synthetic cities set (numpy; public seed)."""
    import numpy as np
    rng = np.random.default_rng(CITIES_SEED)
    tx, ty = rng.random(CITIES_TOWNS), rng.random(CITIES_TOWNS)
    w = 1.0 / np.arange(1, CITIES_TOWNS + 1)
    pick = rng.choice(CITIES_TOWNS, CITIES_N, p=w / w.sum())
    return tx[pick], ty[pick]


def _points(fname, bx):
    import numpy as np
    if fname is None:
        lon, lat = _cities()
    else:
        pts = shipped_points(fname)
        lat = np.array([float(a) for a, _ in pts])
        lon = np.array([float(b) for _, b in pts])
    return lon, lat, Box(*bx), Box(*bx, order=density.G_ORDER)


def table2(name, fname, bx, runs, seed, log):
    """{name, n, k, ours: [(l1, l2)], hist: [(l1, l2)], floor: (l1, l2), example: (base,
    ours, hist)}. The floor is the exact data, ungrouped and noiseless, through the seed's
    density along the curve: no release can be nearer the data's 2-D density than that."""
    import numpy as np
    x, y, box, b10 = _points(fname, bx)
    h = box.index(x, y)
    gx, gy = b10.cell(x, y)
    base = density.data_density(gx, gy)
    shift = np.uint64(2 * (box.order - density.G_ORDER))
    floor = density.distances(base, density.release_density((h >> shift).astype(np.int64)))
    k = choose.choose(len(h), 3.0)
    ours, hist, example = [], [], None
    for run in range(runs):
        words = CounterWords((seed * 1000 + run).to_bytes(32, "big"))
        rel = publish(h, "3", k, box, words)
        got = reconstruct.indices(rel) >> shift
        d_ours = density.release_density(got.astype(np.int64))
        d_hist = density.histogram_density(gx, gy, "3", words)
        ours.append(density.distances(base, d_ours))
        hist.append(density.distances(base, d_hist))
        if example is None:
            example = (base, d_ours, d_hist)
    log("table 2: %s, n = %d, k = %d, %d runs" % (name, len(h), k, runs))
    return {"name": name, "n": len(h), "k": k, "ours": ours, "hist": hist,
            "floor": floor, "example": example}


def _plot_densities(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    g = density.G
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")
    titles = ("the data (Voronoi cells)", "the release, eps = 3, k = %d" % r["k"],
              "noisy 41 x 41 histogram, eps = 3")
    floor = 1e-9
    for ax, grid, title in zip(axes, r["example"], titles):
        img = np.log10(np.maximum(np.asarray(grid).reshape(g, g).T * g * g, floor * g * g))
        im = ax.imshow(img, origin="lower", cmap="magma", vmin=-1, vmax=4,
                       extent=(0, 1, 0, 1))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("x (fraction of the box)")
    axes[0].set_ylabel("y (fraction of the box)")
    cb = fig.colorbar(im, ax=axes, shrink=0.85)
    cb.set_label("log10 density (fraction of the points per unit box area)")
    fig.suptitle("%s (n = %d): density on a 1024 x 1024 grid" % (r["name"], r["n"]))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_error_vs_k(rows, n, eps, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ks = [r[0] for r in rows]
    ax.plot(ks, [r[1] for r in rows], "o-", ms=3, label="model: k/(4n) + ungrouped error")
    ax.plot(ks, [r[2] for r in rows], "s-", ms=3, label="direct simulation")
    ax.axvline(51, color="grey", ls=":", label="the paper's k (Table 1)")
    ax.set_xscale("log")
    ax.set_xlabel("group size k")
    ax.set_ylabel("normalised error (fraction of the curve)")
    ax.set_title("equally spaced data, n = %d, eps = %g" % (n, eps))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def range_section(results) -> list:
    """The report's lines for the range-count queries."""
    ws = results[0]["widths"]
    lines = ["## Range-count queries (the paper's Section 6.2, Fig. 24)", "",
             "Paper (Twitter locations; its text gives no eps for this figure, and 51 is "
             "its Table 1's k for n = 10,000 at eps = 1; a plot, no numbers): %s."
             % PAPER_RANGE, "",
             "Mean absolute error (points) of %d random squares per side, averaged over the "
             "runs; the side is a fraction of the box's side." % queries.QUERIES, "",
             "| data | eps | answer from | runs | " + " | ".join("y = %s" % w for w in ws)
             + " |", "|---|---|---|---|" + "---|" * len(ws)]
    for r in results:
        lines.append("| %s | | mean true count | | %s |" % (
            r["name"], " | ".join("%.1f" % t for t in r["truth_mean"])))
        for eps, by in r["by_eps"].items():
            for m, lab in (("release", "the release (k = %d)" % by["k"]),
                           ("histogram", "noisy 41 x 41 histogram"),
                           ("wavelet", "Privelet, 512 x 512")):
                lines.append("| %s | %s | %s | %d | %s |" % (
                    r["name"], eps, lab, by[m].shape[0],
                    " | ".join("%.1f" % e for e in by[m].mean(axis=0))))
    lines += ["", "Ours, side by side (where one mean error is below the other):", ""]
    for r in results:
        for eps, by in r["by_eps"].items():
            mean = {m: by[m].mean(axis=0) for m in ("release", "histogram", "wavelet")}

            def where(a, b):
                got = [w for w, u, v in zip(ws, mean[a], mean[b]) if u < v]
                return "at y = " + ", ".join(got) if got else "at no y"
            lines.append("- %s, eps = %s: the release beats the wavelet %s and the histogram "
                         "%s; the wavelet beats the histogram %s." % (
                             r["name"], eps, where("release", "wavelet"),
                             where("release", "histogram"), where("wavelet", "histogram")))
    lines += ["", "Each density answers a square with n times its mass there (a summed-area "
              "table, bilinear inside a cell: exact for a density constant on each of the "
              "1024 x 1024 cells); the squares' corners lie on the order-16 grid (the one the "
              "release sees), uniform over the box from a fixed seed, and the true count is "
              "the points' (their order-16 cells). The release: the seed's density along the "
              "curve of the reconstructed points (the one of Table 2). The histogram: Table "
              "2's (noise 2/eps, negatives set to 0, renormalised). Privelet (Xiao, Wang and "
              "Gehrke): the 2-D Haar transform (unnormalised: node sums and left-minus-right "
              "differences, which makes Privelet's weighted noise one scale for all) of the "
              "512 x 512 counts, the total kept at n exactly as in the seed, exact discrete "
              "Laplace noise of scale %d/eps on the other 512^2 - 1 coefficients (their L1 "
              "sensitivity to one replaced point is 2 (l + 1)^2 - 4 = %d for l = 9 levels: "
              "queries.privelet_sensitivity), the inverse transform, negative cells kept. "
              "All three are eps-DP for one point (replacement), with exact noise. The "
              "release's density gives each distinct reconstructed index its share of the "
              "mass spread along the curve up to the midpoints to its neighbours, which "
              "smears sparse data over large areas (its group of k points is one index): "
              "the likely reason it loses to the histogram here, the true counts being of "
              "points."
              % (queries.privelet_sensitivity(queries.WAVELET_ORDER),
                 queries.privelet_sensitivity(queries.WAVELET_ORDER)), ""]
    return lines


def median_section(results) -> list:
    """The report's lines for the median."""
    pa, pb = median.pure_constants(1.0)
    lines = ["## The median (the paper's Section 6.3, Figs. 25-26)", "",
             "Paper (a plot, no numbers): %s." % PAPER_MEDIAN, "",
             "Mean |estimate - true median| over the runs, in units of the unit interval "
             "(the 1-D values: the seed's own 129 values, or a point set's Hilbert indices "
             "over 4^16, the values the release publishes). LS: the local sensitivity of the "
             "median; S*: the smooth sensitivity each baseline scales its noise to.", "",
             "| data | n | true median | LS | eps | k | runs | the release | smooth sens., "
             "pure eps | smooth sens., Laplace (eps, 1e-6) | S* (pure) | S* (Laplace) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = []
    for r in results:
        below = [row["eps"] for row in r["rows"]
                 if row["release"] < min(row["pure"], row["laplace"])]
        summary.append("- %s: the release's error is below both baselines' at %s." % (
            r["name"], "eps = " + ", ".join(below) if below else "no eps"))
        for row in r["rows"]:
            lines.append("| %s | %d | %.6f | %.3g | %s | %d | %d | %.3g | %.3g | %.3g | "
                         "%.3g | %.3g |" % (
                             r["name"], r["n"], r["median"], r["ls"], row["eps"], row["k"],
                             r["runs"], row["release"], row["pure"], row["laplace"],
                             row["s_pure"], row["s_laplace"]))
    lines += ["", "Ours:", ""] + summary
    lines += ["", "The release: publish the values (integers in [0, 4^16)), k from n and eps "
              "as in Table 1, reconstruct, take the median (rank ceil(n/2)) of the "
              "reconstruction; pure eps-DP, exact noise. The baselines (Nissim, "
              "Raskhodnikova and Smith): the median plus noise scaled to its beta-smooth "
              "sensitivity S* = max_k e^(-k beta) max_{0<=t<=k+1} (x_(m+t) - x_(m+t-k-1)) "
              "(x_i = 0 below rank 1, the domain's top above rank n), the output clamped to "
              "the domain. Pure eps-DP: + (%.3f/eps) S* eta, eta of density proportional to "
              "1/(1 + z^4), beta = eps/%d (median.pure_constants derives both). "
              "(eps, delta)-DP, the seed's \"Laplace noise proportional to the smooth "
              "sensitivity\": + (2/eps) S* Z, Z standard Laplace, beta = eps/(2 ln(2/delta)), "
              "delta = 10^-6 (a weaker guarantee than the release's). Both baselines' noise "
              "is continuous (numpy floats), not exact: they are baselines only. The seed's "
              "129 values are ours drawn the seed's way (66 exponentials divided by their "
              "largest, 63 ones; seed %d): the release's error there depends on where the "
              "median's rank falls in its group of k (a group straddling the exponentials' "
              "top and the ones is averaged), hence its uneven course with eps. On the "
              "point sets the indices near the median are dense (a tiny LS), so the smooth "
              "sensitivity is tiny too, while the release's median is the fitted mean of "
              "the group of k indices holding it."
              % (pa, round(1 / pb), median.PAPER_SEED), ""]
    return lines


def run(out_dir, quick=False, seed=3, log=print) -> list:
    """Write table1.md, table2.md (in report_location.md), the figures; return the files."""
    from ..plots import require_matplotlib
    import numpy as np
    require_matplotlib("zeal reproduce --location")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise ZealError("cannot create %s: %s" % (out_dir, exc.strerror or exc)) from None
    t0 = time.monotonic()
    ns = [n for n in PAPER_K if not quick or n <= 10000]
    t1 = ["| n | " + " | ".join("eps = %g (paper / model / direct)" % e for e in EPS_K) + " |",
          "|---|" + "---|" * len(EPS_K)]
    for n in ns:
        cells = ["%d / %d / %d" % (pk, choose.choose(n, e, "model"), choose.choose(n, e))
                 for e, pk in zip(EPS_K, PAPER_K[n])]
        t1.append("| %d | %s |" % (n, " | ".join(cells)))
        log("table 1: n = %d" % n)
    runs = 20 if quick else 100
    sets = (SETS[:1] if quick else SETS) + (CITIES,)
    t2 = [table2(name, fname, bx, runs, seed, log) for name, fname, bx in sets]
    files = [_plot_error_vs_k(choose.table(10000, 1.0), 10000, 1.0,
                              os.path.join(out_dir, "locationErrorVsK.png"))]
    for r in t2:
        files.append(_plot_densities(r, os.path.join(out_dir, "locationDensity-%s.png"
                                                      % r["name"])))
    range_runs = 3 if quick else 20
    rq = []
    for name, fname, bx in (SETS[:1] if quick else SETS + (CITIES,)):
        x, y, box, _ = _points(fname, bx)
        rq.append(queries.experiment(name, x, y, box, RANGE_EPS, range_runs, seed,
                                     choose.choose, log=log))
    files.append(queries.plot(rq, os.path.join(out_dir, "locationRangeQueries.png")))
    med = [median.experiment("paper-129", median.paper_set(), 1.0, 200 if quick else 1000,
                             seed, choose.choose, log=log)]
    for name, fname, bx in (SETS[:1] if quick else SETS):
        x, y, box, _ = _points(fname, bx)
        vals = [float(v) / box.cells for v in np.sort(box.index(x, y))]
        med.append(median.experiment(name, vals, (box.cells - 1) / box.cells,
                                     50 if quick else 200, seed, choose.choose, log=log))
    lines = ["# Location publishing (seed 003): our numbers beside the paper's", "",
             "%s run, %.0f s. Privacy: central eps-DP, one point, replacement neighbours; "
             "exact discrete Laplace noise (shared_spec/locate.md)." % (
                 "Quick" if quick else "Full", time.monotonic() - t0), "",
             "## Table 1: the group size k", "", *t1, "",
             "## Table 2: density at eps = 3 against the noisy 41 x 41 histogram", "",
             "Paper: %s." % PAPER_T2, "",
             "| data | n | k | runs | release l1 | release l2 | histogram l1 | histogram l2 | "
             "floor l1 | floor l2 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in t2:
        o, h = np.array(r["ours"]), np.array(r["hist"])
        lines.append("| %s | %d | %d | %d | %.3f ± %.3f | %.2f ± %.2f | %.3f ± %.3f | "
                     "%.2f ± %.2f | %.3f | %.2f |" % (
                         r["name"], r["n"], r["k"], len(o), o[:, 0].mean(), o[:, 0].std(),
                         o[:, 1].mean(), o[:, 1].std(), h[:, 0].mean(), h[:, 0].std(),
                         h[:, 1].mean(), h[:, 1].std(), r["floor"][0], r["floor"][1]))
    lines += ["", "Means ± standard deviations over the runs; l1 = ∫|f − g|, l2 = "
              "(∫(f − g)²)^½ over the unit square (densities per unit box area). The floor is "
              "the exact data, ungrouped and without noise, through the seed's density along "
              "the curve: the nearest any release can come. `cities` is synthetic (%d towns "
              "uniform on the square, Zipf weights 1/rank, %d points, seed %d): heavy point "
              "masses, the character of the seed's Twitter locations. On the shipped real "
              "point sets the histogram's density is nearer the data's than the release's, "
              "so the paper's Table 2 result is not reproduced there; on the cities set it "
              "is (README, Publishing locations)." % (CITIES_TOWNS, CITIES_N, CITIES_SEED),
              ""]
    lines += range_section(rq) + median_section(med)
    report = os.path.join(out_dir, "report_location.md")
    with open(report, "w") as fh:
        fh.write("\n".join(lines))
    return files + [report]
