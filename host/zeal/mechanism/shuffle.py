"""Shuffle mode (seed 004): single-message vector summation in the shuffle model.

Scott, Cormode and Maple, "Applying the Shuffle Model of Differential Privacy to Vector
Aggregation" (BICOD 2021, arXiv 2112.05464), built on Balle, Bell, Gascon and Nissim, "The
Privacy Blanket of the Shuffle Model" (CRYPTO 2019). Proposed; not yet on the device
(shared_spec/shuffle.md is the spec this module mirrors).

Each user holds a vector x in [0, 1]^d. The local randomiser samples t of the d coordinates
without replacement, rounds each sampled value x to one of the k + 1 levels {0, 1/k, ..., 1}
by randomised rounding (level floor(xk) + Bernoulli(frac(xk)), so E[level/k] = x), and with
probability gamma (the blanket) replaces the level by a uniform one of the k + 1. The message
is the t pairs (coordinate, level). A shuffler permutes the n messages; the analyzer counts
them into a histogram and debiases: E[level/k] = (1 - gamma) x + gamma/2.

What is exact here, and what is not:
- `gamma_for` returns gamma as an exact Fraction, an UPPER bound of the paper's real-valued
  formula (logarithms bounded above in rationals, then rounded UP to a multiple of 2^-32):
  a larger blanket only adds privacy, and the analyzer debiases with the same rational, so
  the estimate stays exactly unbiased;
- `randomise` is the integer-only reference of the word contract (shared_spec/shuffle.md,
  "Word contract") on zeal.mechanism.scalar's `uniform_below` and `bernoulli`: the twin a
  device implementation must match word for word;
- `randomise_bulk` is a numpy sampler with the same distribution for experiments (floats,
  not bit-exact with the words);
- `Analyzer` debiases a histogram exactly (Fractions) or in float64 (`estimate_float`);
- `paper_mse_bound` is the paper's closed-form normalised MSE bound; `mse_bound_at_k` the
  bound its proof gives at the k actually used (before the paper optimises k), plus the
  coordinate-sampling term the paper's accounting leaves out (see its docstring);
- `delivered` is the (epsilon, delta) a batch of B messages actually gets with the gamma
  configured for n: the configured pair when B >= n, a weaker one or None when B < n.

Where the formulas come from (the seed text is a garbled two-column extraction):
- t = 1, epsilon < 1: gamma = max(14 d K log(2/delta) / ((n-1) eps^2), 27 d K / ((n-1) eps)):
  the seed's Section 4.5 says it coincides with Balle et al.'s scalar Theorem 3.1 (whose
  constants 14 and 27 are read from that paper) with the domain of d K messages; the
  authors' code (github.com/mary-python/shuffle) computes the same expression;
- any t in [1, d]: gamma = C d K log(1/delta) log(2t/delta) / ((n-1) eps^2) with C = 56 for
  epsilon < 1 and C = 2016 for 1 <= epsilon < 6 (the seed's Theorem 4.1 and its text
  "a change of constant from 56 to 2016"). Used for t = 1 with 1 <= epsilon < 6 too: the
  seed's tighter t = 1 constant for that range is unreadable, and Theorem 4.1 covers t = 1.
  With these constants the 1 <= epsilon < 6 formula never beats the epsilon < 1 one taken
  at epsilon' = 1 - 2^-20 (whose guarantee implies the weaker one): `gamma_exact_upper`
  takes the smaller, so epsilon >= 1 buys no accuracy over epsilon just below 1;
- K: the paper's formulas take k as the size of the randomised-response domain. Our levels
  are {0, ..., k}, K = k + 1 values (the output domain of the paper's Algorithm 2 and of
  the authors' code), so K = k + 1 is substituted: gamma grows with K, the safe direction;
- the MSE bound: the seed's Theorem 4.6 (general t) and Section 4.5 (t = 1) as the authors'
  code evaluates them.
"""
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import InputError
from .scalar import bernoulli, uniform_below

GAMMA_BITS = 32  # gamma is rounded up to a multiple of 2^-GAMMA_BITS
EPS_MAX = 6      # the paper's range: epsilon < 6
_LN_TERMS = 40   # atanh series terms: tail < 3^-81 relative


class ShuffleError(InputError):
    """A parameter set outside the paper's range, or a malformed message or histogram."""


# ---- exact logarithm bounds --------------------------------------------------------------------
def _atanh_sum(z: Fraction, terms: int) -> Fraction:
    """sum_{i < terms} z^(2i+1) / (2i+1), a lower bound of atanh(z) for 0 <= z < 1."""
    total, power, z2 = Fraction(0), z, z * z
    for i in range(terms):
        total += power / (2 * i + 1)
        power *= z2
    return total


def _atanh_bounds(z: Fraction, terms: int = _LN_TERMS):
    """(lower, upper) rationals around atanh(z), 0 <= z <= 1/3: the series' tail after
    `terms` terms is at most z^(2 terms + 1) / ((2 terms + 1)(1 - z^2))."""
    low = _atanh_sum(z, terms)
    tail = z ** (2 * terms + 1) / ((2 * terms + 1) * (1 - z * z))
    return low, low + tail


def ln_bounds(x) -> tuple:
    """(lower, upper) Fractions around the natural log of a rational x >= 1, exactly.

    x = 2^m y with 1 <= y < 2, so ln x = m ln 2 + ln y; ln 2 = 2 atanh(1/3) and
    ln y = 2 atanh((y - 1)/(y + 1)) with (y - 1)/(y + 1) < 1/3: both series converge at least
    as fast as 9^-i, and their tails are bounded above, so both bounds are rigorous."""
    x = Fraction(x)
    if x < 1:
        raise ValueError("ln_bounds takes x >= 1")
    m = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** m > x:
        m -= 1
    y = x / Fraction(2) ** m
    l2_lo, l2_hi = _atanh_bounds(Fraction(1, 3))
    ly_lo, ly_hi = _atanh_bounds((y - 1) / (y + 1))
    return 2 * (m * l2_lo + ly_lo), 2 * (m * l2_hi + ly_hi)


def _ln_up(x) -> Fraction:
    return ln_bounds(x)[1]


def _round_up(value: Fraction, bits: int = GAMMA_BITS) -> Fraction:
    scale = 1 << bits
    return Fraction(-((-value.numerator * scale) // value.denominator), scale)


def _sqrt_up(value: Fraction, bits: int = 40) -> Fraction:
    """An upper bound of sqrt(value), a multiple of 2^-bits."""
    scale = 1 << bits
    target = value * scale * scale
    root = math.isqrt(-(-target.numerator // target.denominator))
    if root * root * target.denominator < target.numerator:
        root += 1
    return Fraction(root, scale)


def _exact(name, value) -> Fraction:
    if isinstance(value, bool):
        raise ShuffleError("%s must be a number, got %r" % (name, value))
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ShuffleError("%s must be finite, got %r" % (name, value))
            return Fraction(value)
        return Fraction(value)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ShuffleError("%s must be a number, got %r" % (name, value)) from None


def _count(name, value, low=1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ShuffleError("%s must be an integer >= %d, got %r" % (name, low, value))
    return int(value)


# ---- parameters and gamma ----------------------------------------------------------------------
@dataclass(frozen=True)
class Params:
    """A shuffle-mode configuration: privacy (epsilon, delta) for n users of d-dimensional
    vectors, k + 1 levels, t coordinates per message; `gamma` from `gamma_for`."""

    epsilon: Fraction
    delta: Fraction
    n: int
    d: int
    k: int
    t: int
    gamma: Fraction
    regime: str  # which formula set gamma: "balle-t1" or "theorem-4.1"
    epsilon_formula: Fraction = None  # the epsilon that formula was evaluated at (<= epsilon)

    @property
    def levels(self) -> int:
        return self.k + 1

    @property
    def coord_bits(self) -> int:
        return (self.d - 1).bit_length()

    @property
    def level_bits(self) -> int:
        return self.k.bit_length()  # ceil(log2(k + 1))

    @property
    def pair_bits(self) -> int:
        return self.coord_bits + self.level_bits

    @property
    def message_bits(self) -> int:
        return self.t * self.pair_bits


def _check_common(epsilon, delta, n, d, k, t):
    eps = _exact("epsilon", epsilon)
    dlt = _exact("delta", delta)
    n = _count("n", n, 2)
    d = _count("d", d)
    k = _count("k", k)
    t = _count("t", t)
    if not 0 < eps < EPS_MAX:
        raise ShuffleError("epsilon must be in (0, %d) for the paper's formulas, got %s"
                           % (EPS_MAX, float(eps)))
    if not 0 < dlt < 1:
        raise ShuffleError("delta must be in (0, 1), got %s" % float(dlt))
    if t > d:
        raise ShuffleError("t (%d coordinates per message) cannot exceed d (%d)" % (t, d))
    return eps, dlt, n, d, k, t


EPS_BELOW_1 = 1 - Fraction(1, 1 << 20)  # the epsilon < 1 formulas' stand-in for epsilon >= 1


def _gamma_formula(eps, dlt, n, d, big_k, t):
    if t == 1 and eps < 1:
        a = 14 * d * big_k * _ln_up(2 / dlt) / ((n - 1) * eps * eps)
        b = Fraction(27 * d * big_k) / ((n - 1) * eps)
        return max(a, b), "balle-t1"
    c = 56 if eps < 1 else 2016
    g = (c * d * big_k * _ln_up(1 / dlt) * _ln_up(2 * t / dlt)) / ((n - 1) * eps * eps)
    return g, "theorem-4.1"


def gamma_exact_upper(epsilon, delta, n, d, k, t):
    """(gamma upper bound before rounding, regime, epsilon the formula was evaluated at): the
    paper's formula with every logarithm replaced by a rational upper bound (module
    docstring: which formula when).

    For 1 <= epsilon < 6 the formula's constant 2016 is 36 times the epsilon < 1 one's (56),
    so the epsilon < 1 formula at epsilon' = 1 - 2^-20 always asks for less blanket (it
    would take epsilon >= 6 to reverse that) and its (epsilon', delta) guarantee implies
    (epsilon, delta): the smaller of the two gammas is used, and the regime says which."""
    eps, dlt, n, d, k, t = _check_common(epsilon, delta, n, d, k, t)
    g, regime = _gamma_formula(eps, dlt, n, d, k + 1, t)
    if eps < 1:
        return g, regime, eps
    g_below, regime_below = _gamma_formula(EPS_BELOW_1, dlt, n, d, k + 1, t)
    if g_below < g:
        return g_below, regime_below, EPS_BELOW_1
    return g, regime, eps


def gamma_for(*, epsilon, delta, n, d, k, t=1) -> Params:
    """The configuration with its blanket probability gamma (exact, rounded UP to a multiple
    of 2^-32, so the (epsilon, delta) guarantee holds). ShuffleError (one line) when the
    parameters are outside the paper's range, gamma >= 1 included (n too small)."""
    eps, dlt, n, d, k, t = _check_common(epsilon, delta, n, d, k, t)
    g, regime, eps_formula = gamma_exact_upper(eps, dlt, n, d, k, t)
    g = _round_up(g)
    if g >= 1:
        raise ShuffleError(
            "no blanket probability below 1 exists for epsilon=%g, delta=%g, n=%d, d=%d, k=%d, "
            "t=%d (the formula gives gamma=%.3g): more users or a larger epsilon is needed"
            % (float(eps), float(dlt), n, d, k, t, float(g)))
    return Params(epsilon=eps, delta=dlt, n=n, d=d, k=k, t=t, gamma=g, regime=regime,
                  epsilon_formula=eps_formula)


def delivered(params: Params, batch: int):
    """The (epsilon, delta) a shuffled batch of `batch` messages gets when every message was
    randomised with `params.gamma`, or None when the paper's formulas give no guarantee.

    batch >= params.n: the configured pair (gamma only has to grow as n shrinks). batch < n:
    the smallest epsilon' (same delta, an upper bound, multiple of 2^-40) for which the
    formula's gamma at n = batch is at most params.gamma: first in the t = 1, epsilon < 1
    regime, then Theorem 4.1's (epsilon < 1, then 1 <= epsilon < 6); None when none fits.
    Never below the configured epsilon (the formulas can certify less for a batch smaller
    than n only when the configured epsilon was >= 1, where gamma_for used a slack formula;
    claiming more than was asked for helps nobody)."""
    batch = _count("batch", batch)
    p = params
    if batch >= p.n:
        return p.epsilon, p.delta
    if batch < 2:
        return None
    m = batch - 1
    big_k = p.levels
    g = p.gamma
    if p.t == 1:
        need_sq = 14 * p.d * big_k * _ln_up(2 / p.delta) / (m * g)
        need_lin = Fraction(27 * p.d * big_k) / (m * g)
        eps = max(_sqrt_up(need_sq), need_lin)
        if eps < 1:
            return max(eps, p.epsilon), p.delta
    core = p.d * big_k * _ln_up(1 / p.delta) * _ln_up(2 * p.t / p.delta) / (m * g)
    eps = _sqrt_up(56 * core)
    if eps < 1:
        return max(eps, p.epsilon), p.delta
    eps = max(_sqrt_up(2016 * core), Fraction(1))
    if eps < EPS_MAX:
        return max(eps, p.epsilon), p.delta
    return None


# ---- messages ----------------------------------------------------------------------------------
def encode_message(params: Params, pairs) -> int:
    """t (coordinate, level) pairs -> one integer of params.message_bits bits: pair l at bit
    l * pair_bits, its coordinate in the low coord_bits, its level above."""
    p = params
    pairs = list(pairs)
    if len(pairs) != p.t:
        raise ShuffleError("a message holds %d pairs, got %d" % (p.t, len(pairs)))
    out = 0
    for i, (c, y) in enumerate(pairs):
        if not 0 <= c < p.d or not 0 <= y <= p.k:
            raise ShuffleError("pair (%r, %r) outside d=%d, k=%d" % (c, y, p.d, p.k))
        out |= (int(c) | int(y) << p.coord_bits) << (i * p.pair_bits)
    return out


def decode_message(params: Params, message: int) -> list:
    """The inverse of `encode_message`; ShuffleError for a message no randomiser sends."""
    p = params
    if isinstance(message, bool) or not isinstance(message, (int, np.integer)):
        raise ShuffleError("a message is an integer, got %r" % (message,))
    message = int(message)
    if not 0 <= message < 1 << p.message_bits:
        raise ShuffleError("message %d does not fit %d bits" % (message, p.message_bits))
    pairs, seen = [], set()
    mask_c, mask_y = (1 << p.coord_bits) - 1, (1 << p.level_bits) - 1
    for i in range(p.t):
        pair = message >> (i * p.pair_bits)
        c, y = pair & mask_c, (pair >> p.coord_bits) & mask_y
        if c >= p.d or y > p.k or c in seen:
            raise ShuffleError("message %d: pair %d = (%d, %d) is not a valid pair" % (
                message, i, c, y))
        seen.add(c)
        pairs.append((c, y))
    return pairs


# ---- the local randomiser: exact reference of the word contract -------------------------------
def sample_coordinates(d: int, t: int, words) -> list:
    """t distinct coordinates of [0, d), uniformly, by a partial Fisher-Yates shuffle:
    for l = 0..t-1, u = UNIFORM(d - l) (uniform_below), swap a[l] and a[l + u], take a[l]
    (a starts as 0..d-1). Each ordered t-tuple of distinct coordinates has probability
    1 / (d (d-1) ... (d-t+1)): step l picks uniformly among the d - l not yet taken."""
    a = {}  # sparse array: a[i] == i unless stored (a device may keep a bytearray instead)
    out = []
    for l in range(t):
        u = uniform_below(d - l, words)
        j = l + u
        al, aj = a.get(l, l), a.get(j, j)
        a[l], a[j] = aj, al
        out.append(aj)
    return out


def round_level(x: Fraction, k: int, words) -> int:
    """Randomised rounding of x in [0, 1] to a level of {0, ..., k}: with xk = b + r/q
    (0 <= r < q), b + BERNOULLI(r, q). E[level] = xk exactly. Always one bernoulli call
    (r = 0 included: it reads one word and returns 0), so the word count does not depend on
    the reading."""
    pos = x * k
    base, rem = divmod(pos.numerator, pos.denominator)
    return base + bernoulli(rem, pos.denominator, words)


def _reading(value) -> Fraction:
    if isinstance(value, bool):
        raise ShuffleError("a coordinate must be a number in [0, 1], got %r" % (value,))
    if isinstance(value, float) and not math.isfinite(value):
        raise ShuffleError("a coordinate must be a finite number in [0, 1], got %r" % value)
    try:
        x = Fraction(value)
    except (TypeError, ValueError):
        raise ShuffleError("a coordinate must be a number in [0, 1], got %r" % (value,)) from None
    if not 0 <= x <= 1:
        raise ShuffleError("a coordinate must lie in [0, 1], got %s" % float(x))
    return x


def randomise(params: Params, vector, words) -> list:
    """One user's message as t (coordinate, level) pairs, integer-only (the word contract):

      1. coordinates c_0..c_{t-1} = sample_coordinates(d, t)           (t uniform_below calls)
      2. for l = 0..t-1, in order:
           blanket = BERNOULLI(gamma.numerator, gamma.denominator)
           if blanket: level = UNIFORM(k + 1)                 (the reading is not looked at)
           else:       level = round_level(x[c_l], k)
    Readings are exact rationals in [0, 1] (ShuffleError otherwise); only the t sampled
    coordinates are read."""
    p = params
    vector = list(vector)
    if len(vector) != p.d:
        raise ShuffleError("a vector of %d coordinates for d=%d" % (len(vector), p.d))
    coords = sample_coordinates(p.d, p.t, words)
    g_num, g_den = p.gamma.numerator, p.gamma.denominator
    pairs = []
    for c in coords:
        if bernoulli(g_num, g_den, words):
            level = uniform_below(p.k + 1, words)
        else:
            level = round_level(_reading(vector[c]), p.k, words)
        pairs.append((c, level))
    return pairs


def randomise_bulk(params: Params, data, rng) -> np.ndarray:
    """n messages at once (numpy, float64): `data` is an (n, d) array in [0, 1]; returns an
    (n, t, 2) int64 array of (coordinate, level) pairs. Same distribution as `randomise`
    (not bit-exact: the coins come from the numpy Generator `rng`)."""
    p = params
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != p.d:
        raise ShuffleError("data must be an (n, %d) array, got shape %s" % (p.d, x.shape))
    if not np.all((x >= 0) & (x <= 1)):
        raise ShuffleError("every coordinate must lie in [0, 1]")
    n = x.shape[0]
    if p.t == 1:
        coords = rng.integers(0, p.d, size=(n, 1))
    else:
        coords = np.argpartition(rng.random((n, p.d)), p.t - 1, axis=1)[:, :p.t]
    vals = np.take_along_axis(x, coords, axis=1) * p.k
    base = np.floor(vals)
    level = base + (rng.random(vals.shape) < vals - base)
    blanket = rng.random(vals.shape) < float(p.gamma)
    level = np.where(blanket, rng.integers(0, p.k + 1, size=vals.shape), level)
    return np.stack([coords, level.astype(np.int64)], axis=-1)


# ---- the analyzer -------------------------------------------------------------------------------
class Analyzer:
    """Histogram of shuffled messages -> debiased per-coordinate means and sums.

    counts[j][y] = the number of pairs (j, y) among the messages. For coordinate j with
    c_j = sum_y counts[j][y] pairs and level total s_j = sum_y y counts[j][y]:
        mean_j = (s_j / (k c_j) - gamma/2) / (1 - gamma)
    Unbiased given the users that reported j: each pair has E[y/k] = (1 - gamma) x + gamma/2
    exactly (randomised rounding is exact, the blanket level is uniform on {0..k} with mean
    k/2), and those users are a uniformly random subset of the n (every user samples its
    coordinates the same way, independently of its data), so E[mean_j] = the mean of
    coordinate j over all n users. sum_j = n mean_j. A coordinate no message reported has
    no estimate (None / NaN)."""

    def __init__(self, params: Params):
        self.params = params

    def histogram(self, messages) -> np.ndarray:
        """Messages (integers, `encode_message`) -> a (d, k+1) int64 count array."""
        p = self.params
        h = np.zeros((p.d, p.levels), dtype=np.int64)
        for m in messages:
            for c, y in decode_message(p, m):
                h[c, y] += 1
        return h

    def histogram_bulk(self, pairs) -> np.ndarray:
        """(n, t, 2) pairs from `randomise_bulk` -> the (d, k+1) count array."""
        p = self.params
        flat = np.asarray(pairs).reshape(-1, 2)
        idx = flat[:, 0] * p.levels + flat[:, 1]
        return np.bincount(idx, minlength=p.d * p.levels).reshape(p.d, p.levels)

    def _check(self, counts):
        p = self.params
        h = np.asarray(counts)
        if h.shape != (p.d, p.levels) or (h < 0).any():
            raise ShuffleError("a histogram is a (%d, %d) array of counts" % (p.d, p.levels))
        return h

    def estimate(self, counts) -> list:
        """Exact per-coordinate means (Fractions; None for a coordinate never reported)."""
        p = self.params
        h = self._check(counts)
        g = p.gamma
        out = []
        for j in range(p.d):
            c = int(h[j].sum())
            if c == 0:
                out.append(None)
                continue
            s = sum(y * int(h[j, y]) for y in range(p.levels))
            out.append((Fraction(s, p.k * c) - g / 2) / (1 - g))
        return out

    def sums(self, counts, n_users: int) -> list:
        """Exact per-coordinate sums over n_users users: n_users * mean_j."""
        return [None if m is None else n_users * m for m in self.estimate(counts)]

    def estimate_float(self, counts) -> np.ndarray:
        """float64 per-coordinate means (NaN for a coordinate never reported)."""
        p = self.params
        h = self._check(counts).astype(np.float64)
        c = h.sum(axis=1)
        s = h @ np.arange(p.levels, dtype=np.float64)
        g = float(p.gamma)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (s / (p.k * c) - g / 2) / (1 - g)

    def pair_variance(self, x) -> Fraction:
        """Exact variance of one debiased pair, (y/k - gamma/2)/(1 - gamma), for a reading x:
        with f = frac(xk), Var[y/k] = gamma(1-gamma)(x^2 - x) + (1-gamma) f(1-f)/k^2
        + gamma (2k+1)/(6k) - gamma^2/4 (E[(y/k)^2] of a uniform level is (2k+1)/(6k))."""
        p = self.params
        x = _reading(x)
        g, k = p.gamma, p.k
        f = x * k - (x * k).numerator // (x * k).denominator
        var = g * (1 - g) * (x * x - x) + (1 - g) * f * (1 - f) / (k * k) \
            + g * Fraction(2 * k + 1, 6 * k) - g * g / 4
        return var / ((1 - g) ** 2)

    def pair_variance_max(self) -> Fraction:
        """An upper bound of `pair_variance` over x in [0, 1]: x^2 - x <= 0 and
        f(1 - f) <= 1/4 give ((1-gamma)/(4k^2) + gamma(2k+1)/(6k) - gamma^2/4)/(1-gamma)^2."""
        p = self.params
        g, k = p.gamma, p.k
        var = (1 - g) / (4 * k * k) + g * Fraction(2 * k + 1, 6 * k) - g * g / 4
        return var / ((1 - g) ** 2)


# ---- MSE bounds ---------------------------------------------------------------------------------
def _inverse_count_moments(n: int, p: float):
    """For c ~ Binomial(n, p): (E[1/c | c >= 1], P[c = 0]), summed in float64 over the pmf
    (log-space, terms below 1e-300 dropped)."""
    if p >= 1:
        return 1.0 / n, 0.0
    c = np.arange(1, n + 1, dtype=np.float64)
    lg = np.array([math.lgamma(n + 1)]) - np.array([math.lgamma(v + 1) for v in c]) \
        - np.array([math.lgamma(n - v + 1) for v in c])
    logpmf = lg + c * math.log(p) + (n - c) * math.log1p(-p)
    pmf = np.exp(logpmf)
    p0 = math.exp(n * math.log1p(-p))
    return float((pmf / c).sum() / (1 - p0)), p0


def mse_bound_at_k(params: Params, *, spread=0.25):
    """Bound on the normalised MSE E||mean_hat - mean||^2 of `Analyzer.estimate` at the
    configured k, as a dict of float64 terms (conditional on every coordinate reported):

      noise    = d * V * E[1/c | c >= 1]           (randomised rounding + blanket)
      sampling = d * spread * E[(n - c)/((n - 1) c) | c >= 1]   (which users reported j)
      total    = noise + sampling
    with c ~ Binomial(n, t/d) the pairs on one coordinate, V = `pair_variance_max`, spread an
    upper bound of each coordinate's population variance (1/4 for any data in [0, 1]).
    The paper's MSE compares the estimate with the sampled coordinates themselves (its
    "noise" term); the sampling term is what comparing with the true mean adds, a
    finite-population variance: sigma^2 (n - c)/(c (n - 1)) for a uniform subset of size c."""
    p = params
    inv, p0 = _inverse_count_moments(p.n, p.t / p.d)
    v = float(Analyzer(p).pair_variance_max())
    noise = p.d * v * inv
    sampling = p.d * spread * (p.n * inv - 1) / (p.n - 1)
    return {"noise": noise, "sampling": sampling, "total": noise + sampling,
            "p_unreported": p0}


def paper_mse_bound(params: Params) -> float:
    """The paper's closed-form normalised MSE bound (float64), as its authors' code
    evaluates it: t = 1, epsilon < 1 (Section 4.5):
        d^(8/3) / ((1-gamma)^2 n^(5/3))
            * max(98^(1/3) log^(2/3)(2/delta) / eps^(4/3), 18 / (4 eps)^(2/3)),
    otherwise (Theorem 4.6, with c = 14 for epsilon < 1 and 504 for 1 <= epsilon < 6: half
    the seed's constant 28 / 1008, itself half of Theorem 4.1's 56 / 2016):
        2 t d^(8/3) (c log(1/delta) log(2t/delta))^(2/3) / ((1-gamma)^2 n^(5/3) eps^(4/3)).
    It holds at the paper's own choice of k (which balances the rounding and blanket terms);
    at another k, `mse_bound_at_k` is the bound."""
    p = params
    eps, dlt, n, d, t = float(p.epsilon_formula), float(p.delta), p.n, p.d, p.t
    g = float(p.gamma)
    scale = d ** (8 / 3) / ((1 - g) ** 2 * n ** (5 / 3))
    if p.regime == "balle-t1":
        a = 98 ** (1 / 3) * math.log(2 / dlt) ** (2 / 3) / eps ** (4 / 3)
        b = 18 / (4 * eps) ** (2 / 3)
        return scale * max(a, b)
    c = 14 if eps < 1 else 504
    return scale * 2 * t * (c * math.log(1 / dlt) * math.log(2 * t / dlt)) ** (2 / 3) \
        / eps ** (4 / 3)
