"""The PNG figures, one function per figure, drawn from the numbers of `experiments` and
`reachability` (file names as the paper's)."""
import math

import numpy as np

from ...paper import formulas as pf
from ..plots import new_figure


def _fig(w, h):
    return new_figure(w, h, who="zeal reproduce and its figures")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path)
    return path


def _pos(a, floor=1e-7):
    return np.maximum(np.abs(np.asarray(a, dtype=float)), floor)


def _bars(means, ses):
    """Error bars (in %) of 1.96 standard errors, the lower one kept above zero (log axes)."""
    m = 100 * _pos(means)
    half = 196 * np.nan_to_num(np.asarray(ses, dtype=float))
    return np.vstack([np.minimum(half, 0.95 * m), half])


def plot_abar_too_big(r, path):
    fig = _fig(8.0, 9.0)
    ax1, ax2, ax3 = fig.add_subplot(3, 1, 1), fig.add_subplot(3, 1, 2), fig.add_subplot(3, 1, 3)
    fl, ex = r["float"], r["exact"]
    red = pf.abar(r["lo"], r["hi"], r["eps"], r["e_max"])
    for ax in (ax1, ax2):
        ax.axvspan(red, max(fl["abar"]) * 2, color="tab:red", alpha=0.08)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
    ax1.plot(fl["abar"], 100 * _pos(fl["delta_E"]), "o-", ms=3, color="tab:red",
             label="float64 sampler (paper), %d samples" % r["n_samples"])
    ax1.plot(ex["abar"], 100 * _pos(ex["delta_E"]), "s-", ms=3, color="tab:blue",
             label="exact mechanism, calibrated mean")
    ax1.plot(ex["abar"], 100 * _pos(ex["avg_star_bias"], 1e-9), ":", color="tab:cyan",
             label="exact mechanism, AVG* without calibration: exact bias")
    ax1.plot(fl["abar"], 100 * _pos(fl["F"]), "--", color="k", label=r"$\mathcal{F}$ (Eq. f)")
    ax1.axhline(100 * r["sd_delta_E"], color="grey", lw=0.8,
                label=r"1$\sigma$ sampling noise")
    ax1.set_ylabel(r"$|\delta_{E}(x_1)|$ (%)")
    ax1.set_title(r"$\bar{E}$ = 1000, h = 100, $\epsilon$ = 1, $x_1$ = 1000; red: no exact "
                  "grid (binade exponent E > %d)" % r["e_max"], fontsize=9)
    ax1.set_ylim(1e-8, 1e7)
    ax1.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    ax2.plot(fl["abar"], 100 * _pos(fl["delta_avg"]), "o-", ms=3, color="tab:red",
             label="float64 sampler, paper's float64 mean")
    ax2.plot(fl["abar"], 100 * _pos(fl["delta_avg_exactsum"]), "x:", ms=3, color="tab:orange",
             label="float64 sampler, exact mean of its reports")
    ax2.plot(ex["abar"], 100 * _pos(ex["delta_avg"]), "s-", ms=3, color="tab:blue",
             label="exact mechanism, calibrated mean")
    ax2.plot(fl["abar"], 100 * _pos(fl["F"]), "--", color="k", label=r"$\mathcal{F}$")
    ax2.axhline(100 * r["sd_delta_avg"], color="grey", lw=0.8,
                label=r"1$\sigma$ of $\delta_{AVG}$ (n = %d)" % r["n"])
    ax2.set_ylabel(r"$|\delta_{AVG}|$ (%)")
    ax2.set_xlabel(r"$\bar{A}$ (log scale)")
    ax2.set_ylim(1e-6, 1e12)
    ax2.legend(fontsize=7, loc="upper left", ncol=2, framealpha=0.9)
    for e, ab, v in r["density"]:
        ax3.hist(v, bins=120, density=True, histtype="step",
                 label=r"$\bar{A}$ = %.2g (E = %d)" % (ab, e))
    ax3.set_xlabel(r"$x_1^* - \bar{A}$ (float64 sampler, exact difference)")
    ax3.set_ylabel("density (1/unit)")
    ax3.set_yscale("log")
    ax3.legend(fontsize=7)
    return _save(fig, path)


def plot_prob_bound(results, path):
    fig = _fig(10.0, 7.5)
    for i, r in enumerate(results):
        for jdx, rel in enumerate((False, True)):
            ax = fig.add_subplot(2, len(results), 1 + i + jdx * len(results))
            xs = r["lam"] / r["mean"] * 100 if rel else r["lam"]
            ax.plot(xs, r["paper_abs"], "k-", label="Bernstein bound, paper (Thm %s)"
                    % ("3.4" if rel else "3.3"))
            ax.plot(xs, r["paper_abs_two_sided"], "k:", label="the same, two-sided (x2)")
            ax.plot(xs, r["exact_abs"], "-", color="tab:cyan",
                    label="Bernstein, exact mechanism (m = %d)" % r["m"])
            ax.plot(xs, r["emp_float"], "-", color="tab:red",
                    label=r"empirical, float64 sampler ($\bar{A}$ = %.3g)" % r["abar"])
            ax.plot(xs, r["emp_exact"], "--", color="tab:blue",
                    label="empirical, exact mechanism")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, alpha=0.3)
            ax.set_xlabel(r"$\lambda$ (% of the mean)" if rel
                          else r"$\lambda$ (%s)" % r["unit"])
            ax.set_ylabel(r"P($|\delta_{AVG}| \geq \lambda$)" if rel
                          else r"P($|\Delta_{AVG}| \geq \lambda$)")
            ax.set_title("%s, %d runs, $\\epsilon$ = 1" % (r["label"], r["trials"]), fontsize=9)
            if i == 0 and not rel:
                ax.legend(fontsize=7)
    return _save(fig, path)


def plot_error_vs_eps(results, path):
    fig = _fig(10.0, 4.6)
    for i, r in enumerate(results):
        ax = fig.add_subplot(1, len(results), 1 + i)
        eps = r["eps"]
        styles = {"0": "o-", "E_vul": "s-", "E_enc+30": "^-", "E_enc+50": "v-"}
        names = {"0": r"$\bar{A}$ = 0", "E_vul": r"$\bar{A}(E_{vul})$",
                 "E_enc+30": r"$\bar{A}(E_{enc}+30)$", "E_enc+50": r"$\bar{A}(E_{enc}+50)$"}
        reds = ["#f4a582", "#e6550d", "#d62728", "#7f0000"]
        blues = ["#6baed6", "#2ca02c", "#1f77b4", "#08306b"]
        for c, (k, v) in zip(reds, r["float"].items()):
            ax.errorbar(eps, 100 * _pos(v), yerr=_bars(v, r["float_se"][k]), fmt=styles[k],
                        color=c, ms=4, capsize=2, elinewidth=0.8, label="float64, " + names[k])
        for c, mk, (m, v) in zip(blues, "xDP*", r["exact"].items()):
            ax.errorbar(eps, 100 * _pos(v), yerr=_bars(v, r["exact_se"][m]), fmt="--",
                        marker=mk, color=c, ms=5, capsize=2, elinewidth=0.8,
                        label="exact, m = %d" % m)
        ax.plot(eps, 100 * np.array(r["pm_pred"]), "k:", label="continuous PM, predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps)
        ax.set_xticklabels(["%g" % e for e in eps])
        ax.minorticks_off()
        ax.set_xlabel(r"$\epsilon$ (log scale)")
        ax.set_ylabel(r"mean $|\delta_{AVG}|$ (%%), %d runs; bars: $\pm$1.96 s.e."
                      % r["trials"])
        ax.set_title(r["label"], fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=6.5, ncol=2)
    return _save(fig, path)


def plot_cr_tr(results, path):
    fig = _fig(11.0, 8.4)
    colors = {}
    cyc = ["tab:purple", "tab:green", "tab:brown", "tab:olive", "tab:pink", "tab:gray",
           "tab:cyan", "gold", "navy"]
    for i, r in enumerate(results):
        ax = fig.add_subplot(2, len(results), 1 + i)
        bx = fig.add_subplot(2, len(results), 1 + i + len(results))
        fl, ex = r["float"], r["exact"]
        for name in sorted(set(fl["cr"]) | set(ex["cr"]), key=lambda n: (n != "greedygd", n)):
            col = colors.setdefault(name, cyc[len(colors) % len(cyc)])
            lw = 2.4 if name == "greedygd" else 1.0
            if name in fl["cr"]:
                ax.plot(fl["abar"], fl["cr"][name], "-", color=col, lw=lw, alpha=0.55)
            ax.plot(ex["abar"], ex["cr"][name], "--", color=col, lw=lw, label="CR " + name)
        ax.plot(fl["abar"], fl["tr"], "-", color="k", lw=1.5,
                label="TR, float64 ($\\gamma_{min}$)")
        ax.plot(ex["abar"], ex["tr"], "--", color="k", lw=1.5, label="TR, exact (m/64)")
        ax.plot(ex["abar"], ex["entropy"], ":", color="tab:red", lw=1.8,
                label="entropy bound / 64, exact")
        ax.set_xscale("symlog", linthresh=1.0)
        ticks = [0.0] + [10.0 ** k for k in range(0, 21, 4)]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["0"] + ["$10^{%d}$" % k for k in range(0, 21, 4)])
        ax.minorticks_off()
        ax.set_xlabel(r"$\bar{A}$ (symlog: 0 at the left)")
        ax.set_ylabel("CR, TR (fraction of 64 bits)")
        ax.set_title("%s, $\\epsilon$ = 1\nsolid: float64 sampler, dashed: exact mechanism"
                     % r["label"], fontsize=9)
        ax.set_ylim(0, 1.1)
        ax.grid(True, alpha=0.3)
        g = "greedygd"
        col = colors.get(g, "tab:purple")
        if g in fl["cr"]:
            # points only: one per Abar (or m), and |delta| is not in their order, so a line
            # through them zig-zags and reads as a curve that is not there
            bx.plot(100 * _pos(fl["delta"]), fl["cr"][g], "o", ms=4, color=col, alpha=0.6,
                    label="CR greedygd, float64")
            bx.plot(100 * _pos(ex["delta"]), ex["cr"][g], "s", ms=4, color=col,
                    label="CR greedygd, exact")
        bx.plot(100 * _pos(fl["delta"]), fl["tr"], "o", ms=4, color="k", mfc="none",
                label="TR, float64")
        bx.plot(100 * _pos(ex["delta"]), ex["tr"], "s", ms=4, color="k", mfc="none",
                mew=1.2, label="TR, exact")
        bx.axvline(100 * r["pm_sd"] * math.sqrt(2 / math.pi), color="grey", lw=0.8,
                   label="predicted mean $|\\delta_{AVG}|$, continuous PM")
        bx.set_xscale("log")
        bx.set_xlabel(r"mean $|\delta_{AVG}|$ (%%) over %d runs, one point per $\bar{A}$ / m"
                      % r["runs"])
        bx.set_ylabel("CR, TR (fraction of 64 bits)")
        bx.set_ylim(0, 1.1)
        bx.grid(True, alpha=0.3)
        if i == 0:
            ax.legend(fontsize=6.5, ncol=2, framealpha=0.9)
            bx.legend(fontsize=7, framealpha=0.9)
    return _save(fig, path)


def plot_holes(r, path):
    fig = _fig(11.0, 5.0)
    n = len(r["cases"])
    for i, c in enumerate(r["cases"]):
        ax = fig.add_subplot(1, n, 1 + i)
        ys, ra, rb, _ = c["zoom"]
        idx = np.arange(ys.size)
        ax.plot(idx[ra], np.full(int(ra.sum()), 1.0), "o", ms=4, color="tab:blue",
                label="reachable from x = %g" % r["xa"])
        ax.plot(idx[rb], np.full(int(rb.sum()), 0.0), "o", ms=4, color="tab:red",
                label="reachable from x = %g" % r["xb"])
        diff = ra ^ rb
        ax.plot(idx[diff], np.full(int(diff.sum()), 0.5), "x", ms=6, color="k",
                label="reachable from one only")
        ax.set_ylim(-0.6, 1.9)
        ax.set_yticks([0, 0.5, 1])
        ax.set_yticklabels(["x=%g" % r["xb"], "differs", "x=%g" % r["xa"]])
        ax.set_xlabel("k-th float64 after x* = %.12g" % ys[0], fontsize=8)
        k = c["counts"]
        ax.set_title("%s, %d windows\n%d of %d floats tested\nreachable from one input only"
                     % (c["label"], c["windows"], k["a_not_b"] + k["b_not_a"], k["floats"]),
                     fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("The paper's float64 sampler: outputs reachable from one input only (holes), "
                 "counted exactly over all 2^53 uniforms; the exact mechanism has none",
                 fontsize=9)
    return _save(fig, path)
