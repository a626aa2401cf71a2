"""The median (seed 003, Section 6.3): the release's median against the smooth-sensitivity
mechanism of Nissim, Raskhodnikova and Smith (NRS, "Smooth sensitivity and sampling in private
data analysis", STOC 2007).

What is estimated: a 1-D median in the unit interval, as in the seed (its experiment is on
1-D data sets of 129 values in [0, 1]). For a point set the 1-D values are the release's own:
the Hilbert indices over 4^L (the release publishes the sorted indices, so its median is
the median index of the reconstruction). The median of n values is x_m, m = ceil(n / 2) (the
lower median when n is even; 1-based ranks of the sorted values). The error is |estimate -
true median| in units of the unit interval.

- The release: `publish` on the values as integers in [0, 4^L) (L = 16 for the synthetic
  set's reals, floor(x 4^L)), k from n and eps as everywhere (zeal.analysis.locate.choose),
  reconstruct, and read the m-th reconstructed value over 4^L. Pure eps-DP, exact noise.
- The baseline: the median plus noise scaled to its smooth sensitivity. With x_1 <= ... <=
  x_n in [0, L] (L the domain's top; x_i = 0 for i < 1 and L for i > n), the local
  sensitivity at distance k is A(k) = max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1}) (NRS), and
  the beta-smooth sensitivity is S*(x) = max_{k >= 0} e^{-k beta} A(k) (`smooth_sensitivity`;
  tests/test_locate_queries.py checks it against a brute-force maximum over the definition
  in exact arithmetic). Two noise laws, both continuous (numpy floats: this is only a
  baseline, and its noise is not exact as the release's is):
  * pure eps-DP (our main baseline, the release's own guarantee): median + (2 c / eps)
    S*(x) eta, eta of density proportional to 1 / (1 + |z|^4), beta = eps / 6, c = 3^(3/4)
    (`ss_pure`; the derivation is in its docstring);
  * the seed's "Laplace noise proportional to the smooth sensitivity", which is
    (eps, delta)-DP: median + (2 / eps) S*(x) Z, Z standard Laplace, beta = eps / (2 ln(2 /
    delta)), delta = 10^-6 (NRS's constants for the Laplace law, their Corollary 2.4 and
    Lemma 2.9, not re-derived here; `ss_laplace`).
"""
import math

DELTA = 1e-6
GAMMA = 4                    # the tail exponent of the pure-eps noise law
EPSILONS = ("0.5", "1", "2", "3")
PAPER_N, PAPER_EXP, PAPER_SEED = 129, 66, 2013   # the seed's data: 66 exponentials, 63 ones


def median_rank(n: int) -> int:
    """m = ceil(n / 2): the (lower) median's 1-based rank."""
    return (n + 1) // 2


def local_sensitivity_at(xs, k, top, m=None):
    """A(k) = max over 0 <= t <= k + 1 of x_{m+t} - x_{m+t-k-1} (x_i = 0 below 1, `top` above
    n) for sorted xs: the largest local sensitivity of the m-th value within k replacements."""
    n = len(xs)
    m = median_rank(n) if m is None else m

    def at(i):
        return 0 if i < 1 else (top if i > n else xs[i - 1])
    return max(at(m + t) - at(m + t - k - 1) for t in range(k + 2))


def smooth_sensitivity(xs, decay, top, m=None):
    """S* = max over k = 0..n of decay^k A(k) (decay = e^-beta in (0, 1]) for sorted xs in
    [0, top]. Works in whatever arithmetic its arguments have (Fractions in the tests); stops
    once decay^k top cannot beat the best so far (A(k) <= top)."""
    n = len(xs)
    best, weight = 0, 1
    for k in range(n + 1):
        if weight * top <= best:
            break
        best = max(best, weight * local_sensitivity_at(xs, k, top, m))
        weight = weight * decay
    return best


def pure_constants(epsilon, gamma=GAMMA):
    """(scale factor a, beta) of the pure eps-DP law: the output is median + a S*_beta(x) eta
    with eta of density h(z) proportional to 1 / (1 + |z|^gamma) (gamma > 1).

    Why it is eps-DP (NRS's sliding-and-dilation argument, with constants worked out for this
    h): for neighbours x, y and S = S*_beta (which is at least the local sensitivity, and
    S(x) <= e^beta S(y)), the density of the output at z is (1/(a S(x))) h(u), u = (z -
    med(x)) / (a S(x)). Then u_y = e^lam (u + D) with lam = ln(S(x)/S(y)), |lam| <= beta, and
    |D| = |med(x) - med(y)| / (a S(x)) <= 1/a, and the ratio of the two densities is
    [h(u)/h(u + D)] x [h(w) / (e^lam h(e^lam w))] at w = u + D.
    Sliding: |d/dz ln h| = gamma |z|^(gamma-1) / (1 + |z|^gamma) <= c = (gamma-1)^((gamma-1)/
    gamma) (its maximum, at |z|^gamma = gamma - 1), so the first factor is at most e^(c/a).
    Dilation: the log of the second factor, ln(1 + e^(gamma lam) |w|^gamma) - ln(1 + |w|^gamma)
    - lam, is at most lam (gamma - 1) when lam >= 0 (the difference of logs is at most gamma
    lam) and at most -lam when lam < 0 (it is then at most 0): at most beta (gamma - 1) for
    gamma >= 2. With a = 2 c / eps and beta = eps / (2 (gamma
    - 1)) each factor is at most e^(eps/2): the ratio is at most e^eps for every output, both
    ways. gamma = 4: c = 3^(3/4) = 2.2795, a = 4.559 / eps, beta = eps / 6; E|eta| = 2^(1/2)/2
    and E eta^2 = 1 (finite, unlike the Cauchy law's gamma = 2)."""
    eps = float(epsilon)
    c = (gamma - 1) ** ((gamma - 1) / gamma)
    return 2 * c / eps, eps / (2 * (gamma - 1))


def laplace_constants(epsilon, delta=DELTA):
    """(scale factor, beta) of the (eps, delta) Laplace law (NRS): 2/eps, eps/(2 ln(2/delta))."""
    eps = float(epsilon)
    return 2 / eps, eps / (2 * math.log(2 / delta))


def sample_quartic(rng, size):
    """Draws of eta, density (2^(1/2)/pi) / (1 + z^4), by rejection from the standard Cauchy
    law: (1 + z^2) / (1 + z^4) <= M = (1 + 2^(1/2)) / 2 (at z^2 = 2^(1/2) - 1), so a Cauchy
    draw z is kept with probability (1 + z^2) / (M (1 + z^4)). numpy floats (continuous)."""
    import numpy as np
    bound = (1 + math.sqrt(2)) / 2
    out = np.empty(0)
    while out.size < size:
        z = rng.standard_cauchy(2 * (size - out.size) + 8)
        keep = rng.random(z.size) * bound * (1 + z ** 4) < 1 + z ** 2
        out = np.concatenate([out, z[keep]])
    return out[:size]


def ss_pure(xs, epsilon, top, rng, runs):
    """`runs` outputs of the pure eps-DP smooth-sensitivity median (floats, clamped to [0,
    top]: free post-processing that only helps the baseline), and S*."""
    import numpy as np
    a, beta = pure_constants(epsilon)
    s = smooth_sensitivity(xs, math.exp(-beta), top)
    out = xs[median_rank(len(xs)) - 1] + a * s * sample_quartic(rng, runs)
    return np.clip(out, 0.0, top), s


def ss_laplace(xs, epsilon, top, rng, runs, delta=DELTA):
    """`runs` outputs of the (eps, delta) Laplace smooth-sensitivity median (floats, clamped
    to [0, top]), and S*."""
    import numpy as np
    a, beta = laplace_constants(epsilon, delta)
    s = smooth_sensitivity(xs, math.exp(-beta), top)
    out = xs[median_rank(len(xs)) - 1] + a * s * rng.laplace(0.0, 1.0, runs)
    return np.clip(out, 0.0, top), s


def release_median(ints, epsilon, k, box, words):
    """The m-th reconstructed value of the release of integer values `ints` (in [0, 4^L)),
    over 4^L (a float in [0, 1))."""
    from ...mechanism.locate.publish import publish
    from . import reconstruct
    rel = publish(ints, epsilon, k, box, words)
    got = reconstruct.indices(rel)
    return float(got[median_rank(len(ints)) - 1]) / box.cells


def paper_set(seed=PAPER_SEED):
    """The seed's data for its median experiment, as we read it: 66 exponential draws scaled
    to the unit interval (divided by their largest), and 63 ones; sorted floats."""
    import numpy as np
    e = np.random.default_rng(seed).exponential(1.0, PAPER_EXP)
    return sorted([float(v) for v in e / e.max()] + [1.0] * (PAPER_N - PAPER_EXP))


def _words(seed, name, eps, run):
    import hashlib

    from ...mechanism.core.words import CounterWords
    key = hashlib.sha256(("zeal-locate-median|%d|%s|%s|%d" % (seed, name, eps, run))
                         .encode()).digest()
    return CounterWords(key)


def experiment(name, values, top, runs, seed, k_of, log=print, epsilons=EPSILONS):
    """The median's mean absolute error over `runs` for the release and both baselines.

    values: sorted floats in [0, top] (top <= 1, the domain's top for the smooth sensitivity),
    on the unit interval. Returns {name, n, median, ls (the local sensitivity A(0)), rows: [
    {eps, k, release, pure, laplace (mean abs errors), s_pure, s_laplace}]}."""
    import numpy as np

    from ...mechanism.locate.hilbert import Box
    box = Box(0.0, 1.0, 0.0, 1.0)                    # order 16: 4^16 steps of the interval
    cells = box.cells
    ints = [min(cells - 1, int(math.floor(v * cells))) for v in values]
    n = len(values)
    med = values[median_rank(n) - 1]
    rng = np.random.default_rng(seed)
    rows = []
    for eps in epsilons:
        k = k_of(n, float(eps))
        ours = [abs(release_median(ints, eps, k, box, _words(seed, name, eps, run)) - med)
                for run in range(runs)]
        pure, s_pure = ss_pure(values, eps, top, rng, runs)
        lap, s_lap = ss_laplace(values, eps, top, rng, runs)
        rows.append({"eps": eps, "k": k, "release": float(np.mean(ours)),
                     "pure": float(np.mean(np.abs(pure - med))),
                     "laplace": float(np.mean(np.abs(lap - med))),
                     "s_pure": float(s_pure), "s_laplace": float(s_lap)})
    log("median: %s, n = %d, %d runs" % (name, n, runs))
    return {"name": name, "n": n, "median": med, "runs": runs,
            "ls": float(local_sensitivity_at(values, 0, top)), "rows": rows}
