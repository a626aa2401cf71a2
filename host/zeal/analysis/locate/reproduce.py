"""`zeal reproduce --location`: seed 003's Table 1 (k by n and eps), Table 2 (density l1/l2
at eps = 3 against the noisy 41 x 41 histogram), the error against k (its Fig. 15) and the
densities themselves, on the shipped point sets; our numbers beside the paper's.

Quick: Table 1 for n <= 10,000, Table 2 on the earthquakes with 20 runs; full: every n of
Table 1 and 100 runs on both point sets."""
import os
import time

from ...errors import ZealError
from ...mechanism.core.words import CounterWords
from ...mechanism.locate.hilbert import Box
from ...mechanism.locate.publish import publish
from ..datasets import shipped_points
from . import choose, density, reconstruct

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
    report = os.path.join(out_dir, "report_location.md")
    with open(report, "w") as fh:
        fh.write("\n".join(lines))
    return files + [report]
