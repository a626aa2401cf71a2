"""The numbers behind four of the paper's figures (AbarTooBigError, probBoundOnErrorAVG,
percErrorOnAvgVaryingEps, CRandTR), float64 sampler beside the exact mechanism; holesInvCdf's
are in `reachability`."""
import math
from fractions import Fraction

import numpy as np

from ...errors import ProfileError
from ...mechanism.grid import exact as mgrid
from ...mechanism.grid.bulk import sample_offsets_fast
from ...mechanism.grid.estimate import Estimator
from ...mechanism.grid.profile import from_bits, from_exponent
from ...mechanism.grid.reports import floats_from_offsets
from ...paper import formulas as pf
from ...paper import sampler as ps
from ...text import progress_bar
from .. import datasets
from .data import (EPS, SEED, Data, _offset_totals, exact_mean, exact_run, exponents,
                   float_run, rel_errors_exact, rel_errors_float)


# ---- Fig. AbarTooBigError --------------------------------------------------------------------
def abar_too_big(quick=False, seed=SEED, log=lambda m: None) -> dict:
    lo, hi, eps, x1 = 900.0, 1100.0, EPS, 1000.0
    n_samples = 20000 if quick else 100000
    d = Data("uniform", "uniform on [900, 1100] (n = 1000)", "",
             datasets.uniform(1000, lo, hi, seed=seed), lo, hi)
    e_enc, e_vul, e_max = exponents(lo, hi, eps)
    rng = np.random.default_rng(seed + 1)
    fl = {"E": [], "abar": [], "delta_E": [], "delta_avg": [], "delta_avg_exactsum": [],
          "F": []}
    e_top = e_max + 16
    step = 3 if quick else 1
    for e in list(range(e_enc, e_top + 1, step)):
        ab = pf.abar(lo, hi, eps, e)
        s = ps.sample(lo, hi, eps, ab, np.full(n_samples, x1), rng)
        fl["E"].append(e)
        fl["abar"].append(ab)
        fl["delta_E"].append(float((exact_mean(s) - Fraction(ab) - Fraction(x1)) / Fraction(x1)))
        rep = float_run(d, eps, ab, rng)
        fl["delta_avg"].append(float(rel_errors_float(d, ab, rep)[0]))
        fl["delta_avg_exactsum"].append(float(rel_errors_float(d, ab, rep, exact=True)[0]))
        fl["F"].append(pf.f_error(lo, hi, eps, e))
    log("AbarTooBigError: float sampler, %d values of Abar" % len(fl["E"]))
    ex = {"E": [], "abar": [], "m": [], "delta_E": [], "delta_avg": [], "avg_star_bias": [],
          "sd_delta_E": []}
    for e in range(e_enc, e_max + 1, step):
        prof = from_exponent(lo, hi, eps, e)
        g = mgrid.ExactGrid(prof)
        est = Estimator(prof)
        ns = n_samples if prof.n_cells - prof.n_window <= (1 << 40) else n_samples // 20
        j = sample_offsets_fast(prof, np.full(ns, x1), rng)
        total = _offset_totals(j.reshape(1, -1))[0]
        ex["E"].append(e)
        ex["abar"].append(pf.abar(lo, hi, eps, e))
        ex["m"].append(prof.bits)
        ex["delta_E"].append(float((est.calibrated_mean(total, ns) - Fraction(x1)) / Fraction(x1)))
        ex["sd_delta_E"].append(math.sqrt(float(g.variance(Fraction(x1))) / ns) / x1)
        off = exact_run(d, prof, rng)
        ex["delta_avg"].append(float(rel_errors_exact(d, prof, off)[0]))
        # the paper's AVG* on this grid, expectation exact: E[AVG*] - x1
        ex["avg_star_bias"].append(float((est.avg_star(g.mean_offset(x1), 1) - Fraction(x1))
                                         / Fraction(x1)))
    log("AbarTooBigError: exact mechanism, E = %d..%d" % (e_enc, e_max))
    # one-sigma sampling noise of each estimate (continuous PM variance, Thm 3.2)
    sd1 = math.sqrt(float(pf.variance(lo, hi, eps, x1))) / math.sqrt(n_samples) / x1
    sd_avg = d.pm_sd(eps) / float(d.mean)
    # the density of x1* - Abar at a few Abar (bottom panel)
    dens = []
    for e in (e_enc, e_max - 4, e_max, e_max + 3):
        ab = pf.abar(lo, hi, eps, e)
        s = ps.sample(lo, hi, eps, ab, np.full(n_samples, x1), rng)
        dens.append((e, ab, np.array([float(Fraction(v) - Fraction(ab)) for v in s[:20000]])))
    return {"lo": lo, "hi": hi, "eps": eps, "x1": x1, "n_samples": n_samples, "n": d.n,
            "e_enc": e_enc, "e_vul": e_vul, "e_max": e_max, "float": fl, "exact": ex,
            "sd_delta_E": sd1, "sd_delta_avg": sd_avg, "density": dens}


# ---- Fig. probBoundOnErrorAVG ----------------------------------------------------------------
def prob_bound(d: Data, quick=False, seed=SEED, log=lambda m: None) -> dict:
    eps = EPS
    trials = 200 if quick else 2000
    e_enc, e_vul, e_max = exponents(d.lo, d.hi, eps)
    ab = pf.abar(d.lo, d.hi, eps, e_vul)
    prof = _auto_profile(d, eps)
    rng = np.random.default_rng(seed + 2)
    fl_err = []
    for s in range(0, trials, 100):
        t = min(100, trials - s)
        fl_err.append(rel_errors_float(d, ab, float_run(d, eps, ab, rng, t)))
    fl_err = np.concatenate(fl_err)
    ex_err = []
    for s in range(0, trials, 100):
        t = min(100, trials - s)
        ex_err.append(rel_errors_exact(d, prof, exact_run(d, prof, rng, t)))
    ex_err = np.concatenate(ex_err)
    mean = float(d.mean)
    # lambda grids (absolute, in the data's unit) up to where the paper's bound is ~1e-3
    c, h = pf.c_const(d.lo, d.hi, eps), pf.half_width(d.lo, d.hi)
    lam_max = 6 * d.pm_sd(eps)
    lam = np.linspace(0, lam_max, 200)
    paper_abs = pf.bound_abs(d.lo, d.hi, eps, d.x, lam)
    # exact mechanism: Bernstein with its exact variances and its deviation bound, two-sided
    g = mgrid.ExactGrid(prof)
    var_sum = float(sum(cnt * g.variance(x) for x, cnt in d.counts.items()))
    m_dev = Estimator(prof).dev_bound
    t = d.n * lam
    exact_abs = np.minimum(1.0, 2 * np.exp(-(t * t / 2) / (var_sum + m_dev * t / 3)))
    emp_fl = np.array([(np.abs(fl_err) * mean >= l).mean() for l in lam])
    emp_ex = np.array([(np.abs(ex_err) * mean >= l).mean() for l in lam])
    log("probBoundOnErrorAVG: %s, %d privatisations per sampler" % (d.name, trials))
    return {"data": d.name, "label": d.label, "unit": d.unit, "mean": mean, "trials": trials,
            "abar": ab, "E": e_vul, "m": prof.bits, "lam": lam, "paper_abs": paper_abs,
            "paper_abs_two_sided": np.minimum(1.0, 2 * paper_abs),
            "exact_abs": exact_abs, "emp_float": emp_fl, "emp_exact": emp_ex,
            "float_err": fl_err, "exact_err": ex_err, "C": c, "h": h}


def _auto_profile(d: Data, eps):
    from ...mechanism.grid.choose import build
    return build(d.lo, d.hi, eps, bits="auto")


# ---- Fig. percErrorOnAvgVaryingEps -----------------------------------------------------------
def error_vs_eps(d: Data, quick=False, seed=SEED, log=lambda m: None) -> dict:
    epss = [0.5, 1.0, 4.0] if quick else [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    trials = 20 if quick else 100
    rng = np.random.default_rng(seed + 3)
    # float sampler: Abar = 0, the paper's E_vul, and two larger exponents (E_enc + 30, + 50)
    fl_keys = ["0", "E_vul", "E_enc+30", "E_enc+50"]
    fl = {k: [] for k in fl_keys}
    fl_se = {k: [] for k in fl_keys}   # standard error of each mean over the trials
    fl_abar = {k: [] for k in fl_keys}
    ms = [2, 4, 8, 16]
    ex = {m: [] for m in ms}
    ex_se = {m: [] for m in ms}
    ex_pred = {m: [] for m in ms}
    pm_pred = []
    for eps in epss:
        e_enc, e_vul, e_max = exponents(d.lo, d.hi, eps)
        for k in fl_keys:
            e = {"0": None, "E_vul": e_vul, "E_enc+30": e_enc + 30, "E_enc+50": e_enc + 50}[k]
            ab = 0.0 if e is None else pf.abar(d.lo, d.hi, eps, e)
            err = rel_errors_float(d, ab, float_run(d, eps, ab, rng, trials))
            fl[k].append(float(np.mean(np.abs(err))))
            fl_se[k].append(_se(np.abs(err)))
            fl_abar[k].append(ab)
        for m in ms:
            try:
                prof = from_bits(d.lo, d.hi, eps, m)
            except ProfileError:
                ex[m].append(math.nan)
                ex_se[m].append(math.nan)
                ex_pred[m].append(math.nan)
                continue
            err = rel_errors_exact(d, prof, exact_run(d, prof, rng, trials))
            ex[m].append(float(np.mean(np.abs(err))))
            ex_se[m].append(_se(np.abs(err)))
            ex_pred[m].append(math.sqrt(2 / math.pi) * d.exact_sd(prof) / float(d.mean))
        pm_pred.append(math.sqrt(2 / math.pi) * d.pm_sd(eps) / float(d.mean))
        log("percErrorOnAvgVaryingEps: %s, eps = %g" % (d.name, eps))
    return {"data": d.name, "label": d.label, "eps": epss, "trials": trials, "float": fl,
            "float_se": fl_se, "float_abar": fl_abar, "exact": ex, "exact_se": ex_se,
            "exact_pred": ex_pred, "pm_pred": pm_pred}


def _se(values) -> float:
    """The standard error of the mean of `values` (NaN entries aside)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan


# ---- Fig. CRandTR ----------------------------------------------------------------------------
def _codecs(log):
    try:
        from ..compress import codecs
        found = codecs()
    except Exception as exc:  # the registry is optional here; say what is missing
        log("CRandTR: codec registry unavailable (%s)" % type(exc).__name__)
        return {}
    return found


def _entropy(profile, d):
    try:
        from ..compress.entropy import entropy_bits_per_report
    except ImportError:
        return math.nan
    return float(entropy_bits_per_report(profile, list(d.counts.elements())))


def cr_tr(d: Data, quick=False, seed=SEED, log=lambda m: None) -> dict:
    eps = EPS
    rng = np.random.default_rng(seed + 4)
    found = _codecs(log)
    e_enc, e_vul, e_max = exponents(d.lo, d.hi, eps)
    step = 4 if quick else 1
    words = 64.0 * d.n
    runs = 3 if quick else 10
    fl = {"abar": [], "E": [], "delta": [], "tr": [], "cr": {}}
    pts = [None] + list(range(e_enc, e_max + 9, step))
    for e in pts:
        ab = 0.0 if e is None else pf.abar(d.lo, d.hi, eps, e)
        reps = float_run(d, eps, ab, rng, runs)
        rep = reps[0]
        fl["abar"].append(ab)
        fl["E"].append(e)
        fl["delta"].append(float(np.mean(np.abs(rel_errors_float(d, ab, reps)))))
        fl["tr"].append(1.0 if e is None else pf.transmission_ratio(pf.gamma_min(d.lo, d.hi,
                                                                                  eps, e)))
        bits = np.ascontiguousarray(rep).view(np.uint64)
        for name, codec in found.items():
            if codec.needs_profile:
                continue
            fl["cr"].setdefault(name, []).append(len(codec.encode(bits, None)) * 8 / words)
    log("CRandTR: %s float sampler, %d values of Abar, codecs: %s"
        % (d.name, len(pts), ", ".join(found) or "none"))
    ex = {"abar": [], "E": [], "m": [], "delta": [], "tr": [], "cr": {}, "entropy": [],
          "sd": []}
    exps = range(e_enc, e_max + 1, step)
    bar = progress_bar(len(exps), "grid", "CRandTR: %s exact mechanism" % d.name)
    for e in exps:
        prof = from_exponent(d.lo, d.hi, eps, e)
        off = exact_run(d, prof, rng, runs)
        ex["abar"].append(pf.abar(d.lo, d.hi, eps, e))
        ex["E"].append(e)
        ex["m"].append(prof.bits)
        ex["delta"].append(float(np.mean(np.abs(rel_errors_exact(d, prof, off)))))
        ex["sd"].append(d.exact_sd(prof) / float(d.mean))
        ex["tr"].append(prof.bits / 64.0)
        bits = floats_from_offsets(prof, off[0]).view(np.uint64)
        for name, codec in found.items():
            ex["cr"].setdefault(name, []).append(len(codec.encode(bits, prof)) * 8 / words)
        ex["entropy"].append(_entropy(prof, d) / 64.0 if prof.bits <= 40 else math.nan)
        bar.update(1)
    bar.close()
    log("CRandTR: %s exact mechanism, m = %d..%d" % (d.name, min(ex["m"]), max(ex["m"])))
    return {"data": d.name, "label": d.label, "n": d.n, "float": fl, "exact": ex, "runs": runs,
            "mean": float(d.mean),
            "e_enc": e_enc, "e_vul": e_vul, "e_max": e_max,
            "pm_sd": d.pm_sd(eps) / float(d.mean),
            "F": {e: pf.f_error(d.lo, d.hi, eps, e) for e in pts if e is not None},
            "codecs": sorted(found)}
