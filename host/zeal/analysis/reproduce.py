"""`zeal reproduce`: the Zeal paper's results regenerated, float64 sampler beside the exact one.

For both of the paper's data sets (the first 5000 Aarhus humidity readings on [23.5, 83.9]
%RH and the first 1000 Chicago taxi fares on [1, 120] USD, zeal.analysis.datasets) and the
paper's synthetic sets, every figure of the paper's "Results" (and its Abar and
floating-point sections) is computed twice: with the paper's float64 inverse-CDF sampler
(zeal.paper.sampler, parameter Abar) and with the product's exact integer mechanism
(zeal.mechanism, parameter m = bits per report, or the binade exponent E: Abar follows
from E in both, Thm 3.5). Figures are PNG; DIR/report.md puts the paper's headline claims
beside what is measured here.

Estimators. Float sampler: the paper's AVG* = mean(x*) - Abar, with the mean taken in float64
as the paper's code does ("paper's float64 mean"), and, to separate the sampler from the
aggregation, the exact mean of the same float64 reports ("exact mean"). Exact mechanism: the
calibrated mean (zeal.mechanism.grid.estimate), unbiased at every m; its exact variance comes from
zeal.mechanism.grid. Relative errors are against the exact mean of the readings clamped to
the feasible range (the mechanism's target; 4 taxi fares are 0.0 and are clamped to 1).

Figures (file names as the paper's):
- AbarTooBigError.png: delta_E(x1), delta_AVG and F against Abar (Hbar = 1000, h = 100,
  n = 1000 uniform readings, eps = 1), float sampler vs exact mechanism;
- probBoundOnErrorAVG.png: Bernstein bounds (Thms 3.3, 3.4) against the empirical
  P(|Delta_AVG| >= lambda), P(|delta_AVG| >= lambda) over repeated privatisations;
- percErrorOnAvgVaryingEps.png: mean |delta_AVG| against eps for several Abar (float) and
  several m (exact), with the exact mechanism's predicted value;
- CRandTR.png: compression ratio (GreedyGD and every codec of zeal.analysis.compress) and
  transmission ratio against |delta_AVG| and against Abar, eps = 1;
- holesInvCdf.png: float64 outputs reachable from one input and not from another
  (Hbar = 10, h = 5, eps = 1), counted exactly (see `holes`).

Randomness: numpy Generators seeded from `seed` (simulation only, never for devices).
"""
import math
import os
import sys
import time
from collections import Counter
from fractions import Fraction

import numpy as np

from ..errors import ZealError
from ..mechanism.grid import exact as mgrid
from ..mechanism.grid.bulk import sample_offsets_fast
from ..mechanism.grid.estimate import Estimator
from ..mechanism.grid.profile import exponent_range, from_bits, from_exponent
from ..mechanism.grid.reports import floats_from_offsets
from ..paper import formulas as pf
from ..paper import sampler as ps
from ..errors import ProfileError
from . import datasets
from .plots import new_figure

SEED = 20240611
EPS = 1.0
TWO53 = 1 << 53
PAPER = {"cr_before": 0.8759, "cr_after": 0.0483, "cr_gain": 0.94, "tr_gain": 0.95,
         "utility_error": 0.02}


# ---- small helpers -----------------------------------------------------------------------------
class Progress:
    """Progress lines on stderr ('zeal reproduce: ...'), with the elapsed time."""

    def __init__(self, stream=None, quiet=False):
        self.stream, self.quiet, self.t0 = stream, quiet, time.monotonic()

    def __call__(self, msg):
        if not self.quiet:
            print("zeal reproduce: [%5.1fs] %s" % (time.monotonic() - self.t0, msg),
                  file=self.stream or sys.stderr, flush=True)


def exact_mean(values) -> Fraction:
    """The exact mean of float64 values (every double is a dyadic rational; summed as
    integers scaled to the smallest exponent present, no rounding)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("no values")
    if not np.all(np.isfinite(v)):
        raise ValueError("non-finite value")
    mant, expo = np.frexp(v)                     # v = mant * 2^expo, |mant| in [0.5, 1)
    ints = (mant * float(TWO53)).astype(np.int64)  # exact: 53-bit integers
    expo = expo.astype(np.int64) - 53
    total = Fraction(0)
    for e in np.unique(expo).tolist():
        sel = ints[expo == e]
        # chunks of 512 integers below 2^53 cannot overflow int64
        s = sum(int(sel[i:i + 512].sum(dtype=np.int64)) for i in range(0, sel.size, 512))
        total += Fraction(s) * (Fraction(2) ** e)
    return total / v.size


def _offset_totals(offsets: np.ndarray) -> list:
    """Exact integer row sums of a (trials, n) int64 array of offsets (< 2^52)."""
    hi = (offsets >> 26).sum(axis=1, dtype=np.int64)
    lo = (offsets & ((1 << 26) - 1)).sum(axis=1, dtype=np.int64)
    return [(int(a) << 26) + int(b) for a, b in zip(hi.tolist(), lo.tolist())]


class Data:
    """A data set as the reproduction uses it: text readings, range, exact target mean."""

    def __init__(self, name, label, unit, texts, lo, hi):
        self.name, self.label, self.unit = name, label, unit
        self.texts, self.lo, self.hi = texts, float(lo), float(hi)
        self.n = len(texts)
        self.below, self.above = datasets.out_of_range(texts, lo, hi)
        self.raw_mean = sum(Fraction(t) for t in texts) / self.n
        self.mean = datasets.clamped_mean(texts, lo, hi)          # exact target
        self.x = np.clip(np.array([float(t) for t in texts]), self.lo, self.hi)
        self.counts = Counter(min(max(Fraction(t), Fraction(self.lo)), Fraction(self.hi))
                              for t in texts)

    def pm_sd(self, eps) -> float:
        """1-sigma of the continuous mechanism's average, Thm 3.2 (sum of variances / n^2)."""
        return math.sqrt(float(np.sum(pf.variance(self.lo, self.hi, eps, self.x)))) / self.n

    def exact_sd(self, profile) -> float:
        """1-sigma of the exact mechanism's calibrated mean (exact variance per reading)."""
        g = mgrid.ExactGrid(profile)
        var = sum(c * g.variance(x) for x, c in self.counts.items())
        return math.sqrt(float(var)) / self.n


def paper_datasets():
    hum = Data("humidity", "Aarhus humidity (n = 5000)", "%RH",
               datasets.aarhus("humidity", 5000), *datasets.HUMIDITY_RANGE)
    taxi = Data("taxi", "Chicago taxi fares (n = 1000)", "USD",
                datasets.chicago_fares(1000), *datasets.TAXI_RANGE)
    return [hum, taxi]


def float_run(d: Data, eps, abar, rng, trials=1):
    """(trials, n) float64 reports of the paper's sampler for the data set."""
    x = np.broadcast_to(d.x, (trials, d.n))
    return ps.sample(d.lo, d.hi, eps, abar, x, rng)


def exact_run(d: Data, profile, rng, trials=1):
    """(trials, n) offsets of the exact mechanism for the data set."""
    x = np.tile(d.x, trials)
    return sample_offsets_fast(profile, x, rng).reshape(trials, d.n)


def rel_errors_exact(d: Data, profile, offsets) -> np.ndarray:
    """delta_AVG of the calibrated mean for each row of offsets, exactly then as float."""
    est = Estimator(profile)
    return np.array([float((est.calibrated_mean(t, d.n) - d.mean) / d.mean)
                     for t in _offset_totals(offsets)])


def rel_errors_float(d: Data, abar, reports, exact=False) -> np.ndarray:
    """delta_AVG of AVG* = mean(x*) - Abar per row: float64 mean (paper) or exact mean."""
    if exact:
        return np.array([float((exact_mean(r) - Fraction(abar) - d.mean) / d.mean)
                         for r in reports])
    avg = reports.mean(axis=1) - abar
    return (avg - float(d.mean)) / float(d.mean)


def exponents(lo, hi, eps):
    """(E_enc, E_vul, E_max): the paper's two lower limits (Thms 3.5, 4.1) and the largest E
    with an exact grid of at least two cells."""
    from ..mechanism.grid.profile import Continuous
    e_min, e_max = exponent_range(Continuous.of(lo, hi, eps))
    return pf.e_enc(lo, hi, eps), pf.e_vul(lo, hi, eps), e_max


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
    from ..mechanism.grid.choose import build
    return build(d.lo, d.hi, eps, bits="auto")


# ---- Fig. percErrorOnAvgVaryingEps -----------------------------------------------------------
def error_vs_eps(d: Data, quick=False, seed=SEED, log=lambda m: None) -> dict:
    epss = [0.5, 1.0, 4.0] if quick else [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    trials = 20 if quick else 100
    rng = np.random.default_rng(seed + 3)
    # float sampler: Abar = 0, the paper's E_vul, and two larger exponents (E_enc + 30, + 50)
    fl_keys = ["0", "E_vul", "E_enc+30", "E_enc+50"]
    fl = {k: [] for k in fl_keys}
    fl_abar = {k: [] for k in fl_keys}
    ms = [2, 4, 8, 16]
    ex = {m: [] for m in ms}
    ex_pred = {m: [] for m in ms}
    pm_pred = []
    for eps in epss:
        e_enc, e_vul, e_max = exponents(d.lo, d.hi, eps)
        for k in fl_keys:
            e = {"0": None, "E_vul": e_vul, "E_enc+30": e_enc + 30, "E_enc+50": e_enc + 50}[k]
            ab = 0.0 if e is None else pf.abar(d.lo, d.hi, eps, e)
            err = rel_errors_float(d, ab, float_run(d, eps, ab, rng, trials))
            fl[k].append(float(np.mean(np.abs(err))))
            fl_abar[k].append(ab)
        for m in ms:
            try:
                prof = from_bits(d.lo, d.hi, eps, m)
            except ProfileError:
                ex[m].append(math.nan)
                ex_pred[m].append(math.nan)
                continue
            err = rel_errors_exact(d, prof, exact_run(d, prof, rng, trials))
            ex[m].append(float(np.mean(np.abs(err))))
            ex_pred[m].append(math.sqrt(2 / math.pi) * d.exact_sd(prof) / float(d.mean))
        pm_pred.append(math.sqrt(2 / math.pi) * d.pm_sd(eps) / float(d.mean))
        log("percErrorOnAvgVaryingEps: %s, eps = %g" % (d.name, eps))
    return {"data": d.name, "label": d.label, "eps": epss, "trials": trials, "float": fl,
            "float_abar": fl_abar, "exact": ex, "exact_pred": ex_pred, "pm_pred": pm_pred}


# ---- Fig. CRandTR ----------------------------------------------------------------------------
def _codecs(log):
    try:
        from .compress import codecs
        found = codecs()
    except Exception as exc:  # the registry is optional here; say what is missing
        log("CRandTR: codec registry unavailable (%s)" % type(exc).__name__)
        return {}
    return found


def _entropy(profile, d):
    try:
        from .compress.entropy import entropy_bits_per_report
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
    for e in range(e_enc, e_max + 1, step):
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
    log("CRandTR: %s exact mechanism, m = %d..%d" % (d.name, min(ex["m"]), max(ex["m"])))
    return {"data": d.name, "label": d.label, "n": d.n, "float": fl, "exact": ex, "runs": runs,
            "mean": float(d.mean),
            "e_enc": e_enc, "e_vul": e_vul, "e_max": e_max,
            "pm_sd": d.pm_sd(eps) / float(d.mean),
            "F": {e: pf.f_error(d.lo, d.hi, eps, e) for e in pts if e is not None},
            "codecs": sorted(found)}


# ---- Fig. holesInvCdf: reachable float64 outputs, counted exactly ----------------------------
def _segments(lo, hi, eps, abar, x):
    """The inverse CDF of zeal.paper.sampler split into its three monotone pieces, with the
    k-ranges (u = k 2^-53) on which inverse_cdf uses each. Same float64 operations, same
    order as `inverse_cdf`, so piece(k) == inverse_cdf(k 2^-53) bit for bit on its range."""
    hb, h = pf.hbar(lo, hi), pf.half_width(lo, hi)
    c, p = pf.c_const(lo, hi, eps), pf.p_level(lo, hi, eps)
    q = p / math.exp(eps)
    x_min, x_max = hb - c + abar, hb + c + abar
    left = (c + h) / 2 * ((x - hb) / h) - (c - h) / 2 + hb + abar
    right = left + c - h
    f_left = q * (left - x_min)
    f_right = f_left + p * (right - left)

    def first_k(f):  # smallest k with k 2^-53 >= f (u < f  <=>  k < f 2^53, exact product)
        return min(TWO53, max(0, math.ceil(Fraction(f) * TWO53)))

    k1, k2 = first_k(f_left), first_k(f_right)
    k2 = max(k1, k2)

    def clip(y):
        return np.clip(y, x_min, x_max)

    pieces = [
        (0, k1 - 1, lambda u: clip(x_min + u / q)),
        (k1, k2 - 1, lambda u: clip(left + (u - f_left) / p)),
        (k2, TWO53 - 1, lambda u: clip(right + (u - f_right) / q)),
    ]
    return [(a, b, f) for a, b, f in pieces if a <= b], (x_min, x_max)


def reachable(lo, hi, eps, abar, x, ys: np.ndarray) -> np.ndarray:
    """For each float64 in ys: can CDF^-1(u) for the input x equal it, for some u among the
    2^53 values numpy's random() produces (k 2^-53, k = 0..2^53-1)? Decided exactly: each
    piece is a composition of correctly rounded monotone operations, hence non-decreasing in
    k; bisection finds the smallest k of the piece with piece(k) >= y, and y is reachable iff
    that value equals y. No sampling, no tolerance."""
    ys = np.asarray(ys, dtype=np.float64)
    hit = np.zeros(ys.shape, dtype=bool)
    for a, b, f in _segments(lo, hi, eps, abar, x)[0]:
        lo_k = np.full(ys.shape, a, dtype=np.int64)
        hi_k = np.full(ys.shape, b + 1, dtype=np.int64)   # answer in [a, b + 1]
        while True:
            open_ = lo_k < hi_k
            if not open_.any():
                break
            mid = (lo_k + hi_k) // 2
            val = f(mid.astype(np.float64) * 2.0 ** -53)
            go_right = open_ & (val < ys)
            lo_k = np.where(go_right, mid + 1, lo_k)
            hi_k = np.where(open_ & ~go_right, mid, hi_k)
        inside = lo_k <= b
        k = np.minimum(lo_k, b)
        hit |= inside & (f(k.astype(np.float64) * 2.0 ** -53) == ys)
    return hit


def float_window(center: float, count: int) -> np.ndarray:
    """`count` consecutive float64 values starting near `center`, ascending, one sign."""
    c = np.float64(center)
    bits = np.abs(c).view(np.int64)
    if c >= 0:
        start = max(bits - count // 2, 0)
        return (start + np.arange(count, dtype=np.int64)).view(np.float64)
    start = bits + count // 2
    return -((start - np.arange(count, dtype=np.int64)).view(np.float64))


def holes(quick=False, log=lambda m: None) -> dict:
    """Exact counts of float64 outputs reachable from one input and not from the other.

    What is counted: for inputs xa = lo and xb = hi (the two that differ most), for each Abar,
    every float64 in a set of windows of W consecutive float64 values is tested by
    `reachable` (exact, over all 2^53 uniforms). The windows: around 9 evenly spaced points
    of [x*_min, x*_max] and around each input's breakpoints L(x), R(x). Counts are exact
    within the windows; they are not extrapolated to the whole range (that holds ~2^62 floats
    when Abar = 0). Exact mechanism: every offset j of the grid has P(j | x) >= P_lo > 0 for
    every x (zeal.mechanism.grid.exact), so the count is 0 on the whole grid; it is also counted
    cell by cell from the exact distributions on a small grid (m = 8).
    """
    lo, hi, eps = 5.0, 15.0, EPS
    w = 1024 if quick else 8192
    e_enc, e_vul, e_max = exponents(lo, hi, eps)
    xa, xb = lo, hi
    cases = [("Abar = 0", 0.0, None), ("E = E_vul = %d" % e_vul, pf.abar(lo, hi, eps, e_vul),
                                       e_vul),
             ("E = E_vul + 4 = %d" % (e_vul + 4), pf.abar(lo, hi, eps, e_vul + 4), e_vul + 4)]
    out = []
    for label, ab, e in cases:
        (pa, (x_min, x_max)) = _segments(lo, hi, eps, ab, xa)
        centers = list(np.linspace(x_min, x_max, 11)[1:-1])
        for x in (xa, xb):
            segs = _segments(lo, hi, eps, ab, x)[0]
            for a, _, f in segs[1:]:
                centers.append(float(f(np.float64(a) * 2.0 ** -53)))
        totals = {"floats": 0, "a": 0, "b": 0, "a_not_b": 0, "b_not_a": 0}
        zoom = None
        for i, cen in enumerate(centers):
            ys = float_window(cen, w)
            ys = ys[(ys >= x_min) & (ys <= x_max)]
            ra = reachable(lo, hi, eps, ab, xa, ys)
            rb = reachable(lo, hi, eps, ab, xb, ys)
            totals["floats"] += ys.size
            totals["a"] += int(ra.sum())
            totals["b"] += int(rb.sum())
            totals["a_not_b"] += int((ra & ~rb).sum())
            totals["b_not_a"] += int((rb & ~ra).sum())
            if zoom is None or (int((ra ^ rb).sum()) > zoom[3] and i >= 9):
                zoom = (ys[:64], ra[:64], rb[:64], int((ra ^ rb).sum()))
        out.append({"label": label, "abar": ab, "E": e, "windows": len(centers), "W": w,
                    "counts": totals, "zoom": zoom, "x_min": x_min, "x_max": x_max})
        log("holesInvCdf: %s: %d of %d floats differ" % (label, totals["a_not_b"]
                                                         + totals["b_not_a"], totals["floats"]))
    # exact mechanism: cell by cell on m = 8, and P_lo > 0 on the profile at E_vul
    prof = from_bits(lo, hi, eps, 8)
    g = mgrid.ExactGrid(prof)
    da, db = g.distribution(Fraction(xa)), g.distribution(Fraction(xb))
    a_not_b = sum(1 for j in range(g.n) if da[j] > 0 and db[j] == 0)
    b_not_a = sum(1 for j in range(g.n) if db[j] > 0 and da[j] == 0)
    big = mgrid.ExactGrid(from_exponent(lo, hi, eps, e_vul))
    exact = {"m": prof.bits, "cells": g.n, "a_not_b": a_not_b, "b_not_a": b_not_a,
             "p_lo_positive": bool(g.p_lo > 0 and big.p_lo > 0),
             "cells_at_E_vul": big.n, "ratio": float(g.privacy_ratio)}
    # Thm 4.1's condition ULP(u) * (e^eps / p) <= ULP(x*) at each E, with its margin
    slope = math.exp(eps) / pf.p_level(lo, hi, eps)
    return {"lo": lo, "hi": hi, "eps": eps, "xa": xa, "xb": xb, "cases": out, "exact": exact,
            "e_enc": e_enc, "e_vul": e_vul, "thm41_margin": {
                e: (2.0 ** (e - 52)) / (2.0 ** -53 * slope) for e in (e_vul, e_vul + 4)}}


# ---- figures -------------------------------------------------------------------------------
def _fig(w, h):
    return new_figure(w, h, who="zeal reproduce and its figures")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path)
    return path


def _pos(a, floor=1e-7):
    return np.maximum(np.abs(np.asarray(a, dtype=float)), floor)


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
            ax.plot(eps, 100 * _pos(v), styles[k], color=c, ms=4, label="float64, " + names[k])
        for c, mk, (m, v) in zip(blues, "xDP*", r["exact"].items()):
            ax.plot(eps, 100 * _pos(v), "--", marker=mk, color=c, ms=5,
                    label="exact, m = %d" % m)
        ax.plot(eps, 100 * np.array(r["pm_pred"]), "k:", label="continuous PM, predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps)
        ax.set_xticklabels(["%g" % e for e in eps])
        ax.minorticks_off()
        ax.set_xlabel(r"$\epsilon$ (log scale)")
        ax.set_ylabel(r"mean $|\delta_{AVG}|$ (%%), %d runs" % r["trials"])
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
        for name in sorted(set(fl["cr"]) | set(ex["cr"]), key=lambda n: n != "greedygd"):
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
            bx.plot(100 * _pos(fl["delta"]), fl["cr"][g], "o-", ms=3, color=col, alpha=0.6,
                    label="CR greedygd, float64")
            bx.plot(100 * _pos(ex["delta"]), ex["cr"][g], "s--", ms=3, color=col,
                    label="CR greedygd, exact")
        bx.plot(100 * _pos(fl["delta"]), fl["tr"], "o-", ms=3, color="k", mfc="none",
                lw=0.8, label="TR, float64")
        bx.plot(100 * _pos(ex["delta"]), ex["tr"], "s--", ms=3, color="k", lw=0.8,
                label="TR, exact")
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
        ax.set_title("%s\n%d windows, exact: %d of %d floats\nreachable from one input only"
                     % (c["label"], c["windows"], k["a_not_b"] + k["b_not_a"], k["floats"]),
                     fontsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


# ---- the report ------------------------------------------------------------------------------
def _pct(x):
    return "%.3g %%" % (100 * x) if x == x else "n/a"


def headline(cr: dict) -> dict:
    """The paper's headline quantities measured on one CRandTR sweep.

    'Green' (the paper: Abar for which |delta_AVG| stays as at Abar = 0) is defined here from
    predictions, not from noisy runs: float64 sampler, ULP(x*) = 2^(E-52) (the size of every
    rounding the sampler makes near Abar) <= 0.1 x the predicted 1-sigma error of the
    average (continuous mechanism); exact mechanism, the calibrated mean's exact 1-sigma
    within 5 % of the continuous mechanism's. The best green point is the one with the
    smallest GreedyGD CR (or the smallest TR when GreedyGD is absent).
    """
    fl, ex = cr["float"], cr["exact"]
    sd = cr["pm_sd"]
    sd_abs = sd * cr["mean"]
    green_f = [i for i, e in enumerate(fl["E"]) if e is None or 2.0 ** (e - 52) <= 0.1 * sd_abs]
    green_e = [i for i, s in enumerate(ex["sd"]) if s <= 1.05 * sd]
    key = "greedygd"

    def best(idx, side):
        if key in side["cr"]:
            return min(idx, key=lambda i: side["cr"][key][i])
        return min(idx, key=lambda i: side["tr"][i])

    bf, be = best(green_f, fl), best(green_e, ex)
    out = {"green_float_abar_max": max(fl["abar"][i] for i in green_f),
           "float_best": {"abar": fl["abar"][bf], "E": fl["E"][bf], "tr": fl["tr"][bf],
                          "delta": fl["delta"][bf],
                          "cr": {k: v[bf] for k, v in fl["cr"].items()}},
           "float_zero": {"tr": fl["tr"][0], "delta": fl["delta"][0],
                          "cr": {k: v[0] for k, v in fl["cr"].items()}},
           "exact_best": {"abar": ex["abar"][be], "E": ex["E"][be], "m": ex["m"][be],
                          "tr": ex["tr"][be], "delta": ex["delta"][be], "sd": ex["sd"][be],
                          "entropy": ex["entropy"][be],
                          "cr": {k: v[be] for k, v in ex["cr"].items()}},
           "exact_smallest_m": {"m": ex["m"][-1], "sd": ex["sd"][-1], "tr": ex["tr"][-1],
                                "delta": ex["delta"][-1],
                                "cr": {k: v[-1] for k, v in ex["cr"].items()}},
           "pm_sd": sd}
    return out


def write_report(path, res, quick, seconds):
    ab, pb, ev, cr, ho = (res[k] for k in ("abar", "prob", "eps", "cr", "holes"))
    L = []
    add = L.append
    add("# The Zeal paper's results, regenerated (`zeal reproduce%s`)" % (" --quick" if quick
                                                                          else ""))
    add("")
    add("Float64 sampler = the paper's inverse-CDF sampler (`zeal.paper.sampler`, reference only: "
        "it leaks). Exact = the product's integer mechanism (`zeal.mechanism`), calibrated mean. "
        "eps = 1 unless stated. Seed %d; %s run, %.0f s. Relative errors are against the exact "
        "mean of the readings clamped to the feasible range." % (SEED, "quick" if quick
                                                                  else "full", seconds))
    add("")
    add("## Data")
    add("")
    add("| data set | n | feasible range | raw mean | clamped mean (target) | below / above range |")
    add("|---|---|---|---|---|---|")
    for d in res["data"]:
        add("| %s | %d | [%g, %g] %s | %.6f | %.6f | %d / %d |" % (
            d.label.split(" (")[0], d.n, d.lo, d.hi, d.unit, float(d.raw_mean), float(d.mean),
            d.below, d.above))
    add("")
    add("The taxi fares are a 1000-row public sample (TFX example data), a stand-in for the "
        "paper's city data: same n and range, not the same fares. Its 0.0 fares are kept and "
        "clamped to 1 by both samplers.")
    add("")
    add("## Headline claims beside this implementation")
    add("")
    add("Green area (the paper: Abar that leave |delta_AVG| as at Abar = 0), defined here from "
        "predictions: float64, ULP(x*) = 2^(E-52) <= 0.1 x the predicted 1-sigma error of the "
        "average; exact, the calibrated mean's exact 1-sigma within 5 % of the continuous mechanism's. "
        "CR = stored bits / (64 n), from one privatisation per point; TR = transmitted bits / 64.")
    add("")
    add("| claim (paper) | data | float64 sampler, measured | exact mechanism, measured |")
    add("|---|---|---|---|")
    for c in cr:
        h = c["headline"]
        fz, fb, eb = h["float_zero"], h["float_best"], h["exact_best"]
        g = "greedygd"
        fcr0, fcr1 = fz["cr"].get(g, math.nan), fb["cr"].get(g, math.nan)
        ecr = eb["cr"].get(g, math.nan)
        add("| GreedyGD CR 0.8759 -> 0.0483 | %s | %.4f (Abar = 0) -> %.4f (Abar = %.3g, E = %s) "
            "| %.4f (m = %d) |" % (c["data"], fcr0, fcr1, fb["abar"], fb["E"], ecr, eb["m"]))
        add("| up to 94 %% better CR | %s | %s | %s (vs float Abar = 0) |" % (
            c["data"], _pct(1 - fcr1 / fcr0), _pct(1 - ecr / fcr0)))
        add("| up to 95 %% better TR | %s | %s (TR %.4f) | %s (TR = m/64 = %.4f) |" % (
            c["data"], _pct(1 - fb["tr"]), fb["tr"], _pct(1 - eb["tr"]), eb["tr"]))
        r = next(v for v in ev if v["data"] == c["data"])
        i1 = r["eps"].index(1.0)
        add("| utility error within 2 %% | %s | mean abs. error over %d runs, Abar(E_vul): %s; "
            "Abar = 0: %s | m = %s: %s (continuous PM predicted %s) |" % (
                c["data"], r["trials"], _pct(r["float"]["E_vul"][i1]), _pct(r["float"]["0"][i1]),
                "/".join(str(m) for m in r["exact"]),
                " / ".join(_pct(v[i1]) for v in r["exact"].values()), _pct(r["pm_pred"][i1])))
        sm = h["exact_smallest_m"]
        add("| (exact, coarsest grid) | %s | - | m = %d: GreedyGD CR %.4f, TR %.4f, 1-sigma %s |"
            % (c["data"], sm["m"], sm["cr"].get(g, math.nan), sm["tr"], _pct(sm["sd"])))
    add("")
    add("Every codec at the best green point (CR):")
    add("")
    names = sorted(set().union(*[set(c["headline"]["exact_best"]["cr"]) for c in cr]))
    add("| data | sampler | " + " | ".join(names) + " | entropy bound / 64 |")
    add("|---|---|" + "---|" * (len(names) + 1))
    for c in cr:
        h = c["headline"]
        for side, key in (("float64 (Abar = 0)", "float_zero"), ("float64 (best green)",
                                                                 "float_best"),
                          ("exact (best green)", "exact_best")):
            row = [("%.4f" % h[key]["cr"][n]) if n in h[key]["cr"] else "-" for n in names]
            ent = h[key].get("entropy", math.nan)
            add("| %s | %s | %s | %s |" % (c["data"], side, " | ".join(row),
                                           "%.4f" % ent if ent == ent else "-"))
    if not names:
        add("(no codec registry available in this installation: CR not measured)")
    add("")
    add("### Where the figures differ from the paper's, and why")
    add("")
    add("- CR depends on how many mantissa bits vary. The float64 sampler at the largest green "
        "Abar still varies in about 64 x TR bits; the exact mechanism's reports vary in m bits "
        "and are compressed to near their entropy. A coarse grid changes the exact variance (the "
        "coarsest-grid row gives it); the green definition above decides which m count.")
    add("- The paper's 'within 2 %' is the 1-sigma-scale error at n and eps of its runs; it "
        "depends on the data set (relative error scales with range / mean: the taxi fares' mean "
        "is small against their range [1, 120], so their relative error is far larger).")
    add("- The float64 sampler's error with a very large Abar is a bias, not noise: "
        "`AbarTooBigError.png` shows it reaching 100 %%; the exact mechanism has no grid beyond "
        "E = %d for that profile and refuses it (ProfileError) instead of breaking." % ab["e_max"])
    add("- The taxi data here are a stand-in sample (see Data), so its CR and errors are not "
        "expected to equal the paper's.")
    add("")
    add("## AbarTooBigError")
    add("")
    add("![AbarTooBigError](AbarTooBigError.png)")
    add("")
    fl, ex = ab["float"], ab["exact"]
    worst_ex = max(abs(v) for v in ex["delta_E"])
    worst_z = max(abs(v) / sd for v, sd in zip(ex["delta_E"], ex["sd_delta_E"]))
    first_bad = next((a for a, v in zip(fl["abar"], fl["delta_E"])
                      if abs(v) > 5 * ab["sd_delta_E"]), None)
    add("Hbar = 1000, h = 100, n = 1000 uniform readings, eps = 1, x1 = 1000, %d samples per "
        "point. Float64 sampler: |delta_E(x1)| first exceeds 5 sigma of its sampling noise "
        "(%s) at Abar = %s; it reaches %s at the largest Abar. Exact mechanism (E = %d..%d, "
        "m = %d..%d): the largest |delta_E(x1)| is %s, and the largest in units of its own "
        "1-sigma (exact variance; 1/20 of the samples where N - Nc > 2^40) is %.2f: noise only, "
        "its expectation is x1 exactly; beyond E = %d there is no grid of two cells and the "
        "profile is refused."
        % (ab["n_samples"], _pct(ab["sd_delta_E"]), "%.3g" % first_bad if first_bad else "none",
           _pct(abs(fl["delta_E"][-1])), ex["E"][0], ex["E"][-1], max(ex["m"]), min(ex["m"]),
           _pct(worst_ex), worst_z, ab["e_max"]))
    add("")
    add("## probBoundOnErrorAVG")
    add("")
    add("![probBoundOnErrorAVG](probBoundOnErrorAVG.png)")
    add("")
    for r in pb:
        i = int(np.argmin(np.abs(r["paper_abs"] - 0.05)))
        add("- %s: %d privatisations each. Float64 at Abar(E_vul) = %.4g; exact at m = %d. At "
            "lambda = %.4g %s the paper's bound is %.3f, the exact mechanism's Bernstein bound "
            "(two-sided, exact variances) %.3f; empirical P: float64 %.3f, exact %.3f."
            % (r["label"], r["trials"], r["abar"], r["m"], r["lam"][i], r["unit"],
               r["paper_abs"][i], r["exact_abs"][i], r["emp_float"][i], r["emp_exact"][i]))
    add("")
    add("The paper prints the one-sided Bernstein tail for the two-sided event |Delta| >= "
        "lambda; the dotted curve is the standard two-sided bound (x2). Thm 3.4 is evaluated as "
        "Thm 3.3 at lambda |mean| (the paper's S_DS is a factor n too large: "
        "`zeal.paper.formulas.bound_rel`).")
    add("")
    add("## percErrorOnAvgVaryingEps")
    add("")
    add("![percErrorOnAvgVaryingEps](percErrorOnAvgVaryingEps.png)")
    add("")
    for r in ev:
        i1 = r["eps"].index(1.0)
        add("- %s, eps = 1, mean |delta_AVG| over %d runs: float64 %s; exact %s; continuous "
            "mechanism predicted %s." % (
                r["label"], r["trials"],
                ", ".join("%s: %s" % (k, _pct(v[i1])) for k, v in r["float"].items()),
                ", ".join("m = %d: %s (predicted %s)" % (m, _pct(v[i1]), _pct(r["exact_pred"][m]
                                                                               [i1]))
                          for m, v in r["exact"].items()), _pct(r["pm_pred"][i1])))
    add("")
    add("## CRandTR")
    add("")
    add("![CRandTR](CRandTR.png)")
    add("")
    add("Codecs: %s. Codecs that need a profile (the known-prefix packer, the entropy coder) "
        "apply to the exact mechanism's reports only." % (", ".join(cr[0]["codecs"]) or "none"))
    add("")
    add("## holesInvCdf")
    add("")
    add("![holesInvCdf](holesInvCdf.png)")
    add("")
    add("Hbar = 10, h = 5, eps = 1, inputs x = %g and x = %g. What is counted: every float64 in "
        "%d windows of %d consecutive float64 values (around 9 evenly spaced points of the output "
        "range and around the inputs' breakpoints L(x), R(x)) is tested for reachability over "
        "all 2^53 uniforms numpy's random() can return, exactly (bisection on each monotone "
        "piece of the inverse CDF: no sampling). Counts are exact within the windows, not "
        "extrapolated." % (ho["xa"], ho["xb"], ho["cases"][0]["windows"], ho["cases"][0]["W"]))
    add("")
    add("| Abar | floats tested | reachable from x=%g | from x=%g | from %g only | from %g only |"
        % (ho["xa"], ho["xb"], ho["xa"], ho["xb"]))
    add("|---|---|---|---|---|---|")
    for c in ho["cases"]:
        k = c["counts"]
        add("| %s (%.6g) | %d | %d | %d | %d | %d |" % (c["label"], c["abar"], k["floats"],
                                                        k["a"], k["b"], k["a_not_b"],
                                                        k["b_not_a"]))
    e = ho["exact"]
    add("")
    add("Exact mechanism: on the m = %d grid (%d cells) the exact distributions give %d cells "
        "reachable from x = %g only and %d from x = %g only; P(j | x) >= P_lo > 0 for every "
        "cell and input (%s), so the count is 0 on every grid, including the %d-cell grid at "
        "E_vul. Thm 4.1's margin ULP(x*) / (2^-53 e^eps / p) at E_vul is %.3f."
        % (e["m"], e["cells"], e["a_not_b"], ho["xa"], e["b_not_a"], ho["xb"],
           "true" if e["p_lo_positive"] else "FALSE", e["cells_at_E_vul"],
           ho["thm41_margin"][ho["e_vul"]]))
    add("")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(L))
    return path


# ---- driver ----------------------------------------------------------------------------------
def reproduce(out_dir, quick=False, seed=SEED, stream=None, quiet=False) -> dict:
    """Compute every figure, write DIR/*.png and DIR/report.md; return the numbers."""
    log = Progress(stream, quiet)
    t0 = time.monotonic()
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise ZealError("cannot create %s: %s" % (out_dir, exc.strerror or exc)) from None
    data = paper_datasets()
    for d in data:
        log("data: %s, n = %d, %d below / %d above [%g, %g]" % (d.name, d.n, d.below, d.above,
                                                                d.lo, d.hi))
    res = {"data": data}
    res["abar"] = abar_too_big(quick, seed, log)
    res["prob"] = [prob_bound(d, quick, seed, log) for d in data]
    res["eps"] = [error_vs_eps(d, quick, seed, log) for d in data]
    res["holes"] = holes(quick, log)
    res["cr"] = [cr_tr(d, quick, seed, log) for d in data]   # last: needs the codec registry
    for c in res["cr"]:
        c["headline"] = headline(c)
    figs = [plot_abar_too_big(res["abar"], os.path.join(out_dir, "AbarTooBigError.png")),
            plot_prob_bound(res["prob"], os.path.join(out_dir, "probBoundOnErrorAVG.png")),
            plot_error_vs_eps(res["eps"], os.path.join(out_dir, "percErrorOnAvgVaryingEps.png")),
            plot_cr_tr(res["cr"], os.path.join(out_dir, "CRandTR.png")),
            plot_holes(res["holes"], os.path.join(out_dir, "holesInvCdf.png"))]
    log("figures: %s" % ", ".join(os.path.basename(f) for f in figs))
    report = write_report(os.path.join(out_dir, "report.md"), res, quick,
                          time.monotonic() - t0)
    log("report: %s" % report)
    res["files"] = figs + [report]
    return res


def cmd_reproduce(args) -> int:
    res = reproduce(args.out, quick=args.quick, seed=args.seed)
    for f in res["files"]:
        print(f)
    return 0


