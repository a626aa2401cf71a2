"""Shuffle mode (seed 004): vector summation in the shuffle model, with a guarantee this
product proves for what it sends (shared_spec/shuffle.md).

Scott, Cormode and Maple, "Applying the Shuffle Model of Differential Privacy to Vector
Aggregation" (BICOD 2021, arXiv 2112.05464), built on Balle, Bell, Gascon and Nissim, "The
Privacy Blanket of the Shuffle Model" (CRYPTO 2019).

Each reading is a vector x in [0, 1]^d. The local randomiser sends t MESSAGES, each one
(coordinate, level) pair: the coordinate uniform on [0, d) (independently per message: with
replacement), the level the randomised rounding of x_c to {0, ..., k} (floor(xk) +
Bernoulli(frac(xk)), so E[level/k] = x), replaced with probability gamma (the blanket) by a
uniform one of the k + 1. A shuffler permutes all messages; the analyzer counts them into a
histogram and debiases: E[level/k] = (1 - gamma) x + gamma/2.

Why single-pair messages (and not the seed's t pairs in one message): released together,
the t pairs of one message are hidden only by a blanket of probability gamma^t (every pair
random at once), not gamma; the seed's Theorem 4.1 treats them as separate messages. Here
they ARE separate messages, independent given the reading, so each sits in its own
blanket and the t of them compose (shuffle.md, "The guarantee"; tests/test_shuffle_privacy.py
checks it exactly on small cases and shows the old linked rule failing).

What is exact here:
- `gamma_for` returns gamma (a multiple of 2^-32) and the message epsilon that make the
  integer rule `shuffle_rule.refusal` (the device's check, the same steps) pass: Balle et
  al.'s Theorem 3.1 at (message epsilon, delta_m) for each message's pool, composed over t;
- `randomise` is the integer-only reference of the word contract on zeal.mechanism.grid.scalar's
  `uniform_below` and `bernoulli`: the twin a device implementation must match word for word;
- `randomise_bulk` is a numpy sampler with the same distribution for experiments;
- `Analyzer` debiases a histogram exactly (Fractions) or in float64 (`estimate_float`);
- `mse_bound_at_k` bounds the normalised MSE at the k used; `paper_mse_bound` is the
  paper's closed form (a reference figure);
- `delivered` is the (epsilon, delta) a batch of B messages actually gets.
"""
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...errors import InputError
from . import rule as R
from ..core.floatbits import as_fraction, bits_to_float64, float64_to_bits
from ..core.draws import bernoulli, uniform_below

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


def _count(name, value, low=1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ShuffleError("%s must be an integer >= %d, got %r" % (name, low, value))
    return int(value)


# ---- parameters and gamma ----------------------------------------------------------------------
@dataclass(frozen=True)
class Params:
    """A shuffle-mode configuration: privacy (epsilon, delta) for n readings of d-dimensional
    vectors, k + 1 levels, t messages (one (coordinate, level) pair each) a reading; `gamma`
    and `epsilon_message` (each message's epsilon in its pool) from `gamma_for`."""

    epsilon: Fraction
    delta: Fraction
    n: int
    d: int
    k: int
    t: int
    gamma: Fraction
    regime: str  # how the messages compose: "balle-t1" (t = 1), "basic" or "advanced"
    epsilon_message: Fraction = None

    @property
    def epsilon_formula(self) -> Fraction:
        """The epsilon the blanket theorem was evaluated at (the message's)."""
        return self.epsilon_message

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
        """One message is one pair (shuffle.md, "Messages"): a reading sends t of them."""
        return self.pair_bits

    def refusal(self):
        """The integer rule (shuffle_rule.refusal) on these numbers: None or a reason."""
        return R.refusal(_pair(self.epsilon), _pair(self.delta), _pair(self.epsilon_message),
                         self.n, self.d, self.k, self.t, _pair(self.gamma))


def _pair(x: Fraction) -> tuple:
    return x.numerator, x.denominator


def _check_common(epsilon, delta, n, d, k, t):
    eps = as_fraction(epsilon, "epsilon", ShuffleError)
    dlt = as_fraction(delta, "delta", ShuffleError)
    n = _count("n", n, 2)
    d = _count("d", d)
    k = _count("k", k)
    t = _count("t", t)
    if not 0 < eps < EPS_MAX:
        raise ShuffleError("epsilon must be in (0, %d), got %s" % (EPS_MAX, float(eps)))
    if not 0 < dlt < 1:
        raise ShuffleError("delta must be in (0, 1), got %s" % float(dlt))
    if t > d:
        raise ShuffleError("t (%d messages per reading) cannot exceed d (%d)" % (t, d))
    return eps, dlt, n, d, k, t


def f64_at_most(x: Fraction) -> Fraction:
    """The largest float64 <= x (x > 0, below the float64 range's top), exactly."""
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, 0.0)
    return Fraction(f)


def _largest_f64(ok, lo: Fraction, hi: Fraction) -> Fraction:
    """The largest float64 in [lo, hi] where the monotone predicate `ok` holds (ok(lo) true,
    ok true below any point where it holds): bisection on the bit patterns, which order
    positive float64s as the numbers do."""
    if ok(hi):
        return hi
    a, b = float64_to_bits(float(lo)), float64_to_bits(float(hi))
    while b - a > 1:
        mid = (a + b) // 2
        if ok(Fraction(bits_to_float64(mid))):
            a = mid
        else:
            b = mid
    return Fraction(bits_to_float64(a))


def message_epsilon(eps: Fraction, dlt: Fraction, t: int):
    """(eps_m, regime): the largest float64 eps_m <= 1 whose t messages compose to (epsilon,
    delta) under shuffle_rule.composes: t = 1, eps_m = epsilon (capped at 1: the blanket
    theorem's range); else the larger of basic (epsilon / t) and advanced composition
    (monotone in eps_m above epsilon / t, so a bisection finds it)."""
    if t == 1:
        return f64_at_most(min(eps, Fraction(1))), "balle-t1"
    basic = f64_at_most(min(eps / t, Fraction(1)))
    best = _largest_f64(lambda e0: R.composes(_pair(eps), _pair(dlt), _pair(e0), t),
                        basic, Fraction(1))
    return best, ("basic" if best == basic else "advanced")


def _gamma_real(eps_m, dlt, n, d, k, t) -> Fraction:
    """Balle et al.'s blanket at (eps_m, delta_m) with the logarithm bounded above."""
    dm = dlt if t == 1 else dlt / (2 * t)
    big_d = d * (k + 1)
    lin = Fraction(27 * big_d) / ((n - 1) * eps_m)
    sq = 14 * big_d * _ln_up(2 / dm) / ((n - 1) * eps_m * eps_m)
    return max(lin, sq)


def _gamma_passing(eps_m, dlt, n, d, k, t) -> Fraction:
    """The smallest multiple of 2^-32 at or above the real blanket that passes the integer
    rule's blanket steps (which round e^A down, so it may ask for a hair more)."""
    step = Fraction(1, 1 << GAMMA_BITS)
    g = _round_up(_gamma_real(eps_m, dlt, n, d, k, t))

    def ok(gm):
        pg, pm = _pair(gm), _pair(eps_m)
        return R.blanket_linear(pm, n, d, k, pg) and \
            R.blanket_square(_pair(dlt), pm, n, d, k, t, pg)

    if ok(g):
        return g
    lo, width = g, step
    while not ok(g + width):
        lo, width = g + width, width * 2
        if g + width > 2:
            return g + width  # refused below as gamma >= 1
    hi = g + width
    while hi - lo > step:  # ok(hi), not ok(lo)
        mid = lo + ((hi - lo) / step // 2) * step
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def gamma_for(*, epsilon, delta, n, d, k, t=1) -> Params:
    """The configuration with its blanket probability gamma (exact, a multiple of 2^-32) and
    message epsilon, chosen so that the integer rule (shuffle_rule.refusal, the device's
    check) proves (epsilon, delta) for the release of the n t shuffled messages
    (shared_spec/shuffle.md, "The guarantee"). ShuffleError (one line) when the parameters
    are outside the range or no gamma below 1 exists (n too small)."""
    eps, dlt, n, d, k, t = _check_common(epsilon, delta, n, d, k, t)
    eps_m, regime = message_epsilon(eps, dlt, t)
    g = _gamma_passing(eps_m, dlt, n, d, k, t)
    if g >= 1:
        raise ShuffleError(
            "no blanket probability below 1 exists for epsilon=%g, delta=%g, n=%d, d=%d, k=%d, "
            "t=%d (the rule needs gamma=%.3g): more readings n or a larger epsilon is needed"
            % (float(eps), float(dlt), n, d, k, t, float(g)))
    p = Params(epsilon=eps, delta=dlt, n=n, d=d, k=k, t=t, gamma=g, regime=regime,
               epsilon_message=eps_m)
    why = p.refusal()
    if why is not None:  # cannot happen: the steps above are the rule's; kept as a guard
        raise ShuffleError("internal: the made parameters fail the rule: %s" % why)
    return p


def smallest_n(epsilon, delta, d, k, t):
    """The smallest n for which `gamma_for` finds a gamma < 1, or None (outside the range
    whatever n). The blanket needed is C/(n - 1) for a C independent of n (both of the
    rule's blanket terms are), so n - 1 > C up to rounding; then checked with gamma_for."""
    try:
        eps, dlt, _, d, k, t = _check_common(epsilon, delta, 2, d, k, t)
    except ShuffleError:
        return None
    eps_m, _ = message_epsilon(eps, dlt, t)
    big_c = _gamma_real(eps_m, dlt, 2, d, k, t)   # C / (2 - 1) = C
    start = max(2, int(big_c) - 2)
    for n in range(start, start + 64):
        try:
            gamma_for(epsilon=eps, delta=dlt, n=n, d=d, k=k, t=t)
            return n
        except ShuffleError:
            continue
    return None


def delivered(params: Params, batch: int):
    """The (epsilon, delta) a shuffled batch of `batch` messages gets when every message was
    randomised with `params.gamma`, or None when the rule proves nothing.

    A batch of B messages holding j <= t of a reading's messages pairs each of them with
    floor(B/t) - 1 others (B >= j floor(B/t)), so the pool size is floor(B/t) readings:
    at or above n, the configured pair. Below: the smallest float64 eps_m <= 1 whose blanket
    steps pass at that pool size, composed as the rule composes (basic, or advanced with its
    terms bounded above), never below the configured epsilon."""
    batch = _count("batch", batch)
    p = params
    pool = batch // p.t
    if pool >= p.n:
        return p.epsilon, p.delta
    if pool < 2:
        return None
    pg, pd = _pair(p.gamma), _pair(p.delta)

    def fails(e0):
        pm = _pair(e0)
        return not (R.blanket_linear(pm, pool, p.d, p.k, pg)
                    and R.blanket_square(pd, pm, pool, p.d, p.k, p.t, pg))

    if fails(Fraction(1)):
        return None
    # the smallest passing eps_m: the largest failing one's successor (fails is monotone)
    tiny = Fraction(1, 1 << 60)
    if not fails(tiny):
        e0 = tiny
    else:
        e0 = _largest_f64(fails, tiny, Fraction(1))
        e0 = Fraction(math.nextafter(float(e0), 2.0))
    if p.t == 1:
        eps = e0
    else:
        u = Fraction(*R.expm1_upper(*_pair(e0)))
        adv = e0 * _sqrt_up(2 * p.t * _ln_up(2 / p.delta)) + p.t * e0 * u
        eps = min(p.t * e0, adv)
    return max(eps, p.epsilon), p.delta


# ---- messages ----------------------------------------------------------------------------------
def encode_message(params: Params, pair) -> int:
    """One (coordinate, level) pair -> the message integer of params.message_bits bits: the
    coordinate in the low coord_bits, the level above."""
    p = params
    c, y = pair
    if not 0 <= c < p.d or not 0 <= y <= p.k:
        raise ShuffleError("pair (%r, %r) outside d=%d, k=%d" % (c, y, p.d, p.k))
    return int(c) | int(y) << p.coord_bits


def decode_message(params: Params, message: int) -> tuple:
    """The inverse of `encode_message`; ShuffleError for a message no randomiser sends."""
    p = params
    if isinstance(message, bool) or not isinstance(message, (int, np.integer)):
        raise ShuffleError("a message is an integer, got %r" % (message,))
    message = int(message)
    if not 0 <= message < 1 << p.message_bits:
        raise ShuffleError("message %d does not fit %d bits" % (message, p.message_bits))
    c, y = message & ((1 << p.coord_bits) - 1), message >> p.coord_bits
    if c >= p.d or y > p.k:
        raise ShuffleError("message %d = (%d, %d) is not a valid pair" % (message, c, y))
    return c, y


# ---- the local randomiser: exact reference of the word contract -------------------------------
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
    """One reading's t messages as (coordinate, level) pairs, integer-only (the word
    contract), message by message, l = 0..t-1:

        c_l = UNIFORM(d)                                   (with replacement: independent)
        if BERNOULLI(gamma.numerator, gamma.denominator):  y_l = UNIFORM(k + 1)  (blanket)
        else:                                              y_l = round_level(x[c_l], k)
    Readings are exact rationals in [0, 1] (ShuffleError otherwise); only the sampled
    coordinates are read. Each message uses its own words only, so the t messages are
    independent given the reading: what lets their guarantee compose (shuffle.md)."""
    p = params
    vector = list(vector)
    if len(vector) != p.d:
        raise ShuffleError("a vector of %d coordinates for d=%d" % (len(vector), p.d))
    g_num, g_den = p.gamma.numerator, p.gamma.denominator
    pairs = []
    for _ in range(p.t):
        c = uniform_below(p.d, words)
        if bernoulli(g_num, g_den, words):
            level = uniform_below(p.k + 1, words)
        else:
            level = round_level(_reading(vector[c]), p.k, words)
        pairs.append((c, level))
    return pairs


def randomise_bulk(params: Params, data, rng) -> np.ndarray:
    """n readings at once (numpy, float64): `data` is an (n, d) array in [0, 1]; returns an
    (n, t, 2) int64 array of (coordinate, level) pairs, one per message. Same distribution
    as `randomise` (not bit-exact: the coins come from the numpy Generator `rng`)."""
    p = params
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != p.d:
        raise ShuffleError("data must be an (n, %d) array, got shape %s" % (p.d, x.shape))
    if not np.all((x >= 0) & (x <= 1)):
        raise ShuffleError("every coordinate must lie in [0, 1]")
    n = x.shape[0]
    coords = rng.integers(0, p.d, size=(n, p.t))
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
        """Messages (integers, `encode_message`: one pair each) -> a (d, k+1) count array."""
        p = self.params
        h = np.zeros((p.d, p.levels), dtype=np.int64)
        for m in messages:
            c, y = decode_message(p, m)
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
    """For c ~ Binomial(n, p): (E[1/c | c >= 1], P[c = 0]) in float64, summed over the pmf
    in log space on the window mean +- 12 sd (+ 50), outside which lies < 1e-30 of the mass
    (Chernoff), far below float64's resolution of the sum;
    the log pmf by the ratio pmf(c+1)/pmf(c) = (n-c)/(c+1) p/(1-p), so the cost is the
    window's width, not n (n = 10^9 readings take milliseconds)."""
    if p >= 1:
        return 1.0 / n, 0.0
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo = max(1, int(mean - 12 * sd - 50))
    hi = min(n, int(mean + 12 * sd + 50))
    c = np.arange(lo, hi + 1, dtype=np.float64)
    first = (math.lgamma(n + 1) - math.lgamma(lo + 1) - math.lgamma(n - lo + 1)
             + lo * math.log(p) + (n - lo) * math.log1p(-p))
    steps = np.log((n - c[:-1]) / (c[:-1] + 1)) + (math.log(p) - math.log1p(-p))
    logpmf = first + np.concatenate(([0.0], np.cumsum(steps)))
    pmf = np.exp(logpmf)
    p0 = math.exp(n * math.log1p(-p))
    return float((pmf / c).sum() / (1 - p0)), p0


def message_variance(params: Params, x) -> Fraction:
    """The exact variance of one message's unbiased estimate z = (y/k - gamma/2) / (1 - gamma)
    of its coordinate's normalised reading x in [0, 1] (E[z] = x). With xk = i + p (0 <= p < 1):
        E[y/k]     = (1 - gamma) x + gamma / 2
        E[(y/k)^2] = (1 - gamma) (x^2 + p (1 - p) / k^2) + gamma (2k + 1) / (6k)
    (randomised rounding: y in {i, i + 1}, mean xk, variance p(1 - p); the blanket: uniform
    over 0..k), and Var z = (E[(y/k)^2] - E[y/k]^2) / (1 - gamma)^2."""
    k, g = params.k, Fraction(params.gamma)
    x = Fraction(x)
    if not 0 <= x <= 1:
        raise ShuffleError("a normalised reading lies in [0, 1], got %s" % x)
    p = x * k - math.floor(x * k)
    mean = (1 - g) * x + g / 2
    square = (1 - g) * (x * x + p * (1 - p) / (k * k)) + g * Fraction(2 * k + 1, 6 * k)
    return (square - mean * mean) / ((1 - g) ** 2)


def worst_message_variance(params: Params) -> tuple:
    """(max over x in [0, 1] of `message_variance`, an x where it is reached), exactly. On
    each piece [i/k, (i + 1)/k] the variance is a quadratic in x: in E[(y/k)^2] the x^2 terms
    cancel ((1 - gamma) x^2 against p(1 - p)/k^2's -(1 - gamma) x^2), E[y/k]^2 brings
    -(1 - gamma)^2 x^2, so after the division its x^2 coefficient is -1: concave, and its
    maximum is at an end or at the vertex, found from three exact values of the quadratic."""
    k = params.k
    best = (Fraction(-1), None)
    for i in range(k):
        a, b = Fraction(i, k), Fraction(i + 1, k)
        m = (a + b) / 2
        fa, fm = message_variance(params, a), message_variance(params, m)
        # p(1-p) is continuous at b (it is 0 at both ends), so the piece's own formula gives
        # the value at b from the left
        fb = message_variance(params, b)
        h = (b - a) / 2
        c2 = (fa - 2 * fm + fb) / (2 * h * h)     # the quadratic's x^2 coefficient (< 0)
        c1 = (fb - fa) / (2 * h)                   # its slope at m
        candidates = [a, b]
        if c2 < 0:
            v = m - c1 / (2 * c2)
            if a < v < b:
                candidates.append(v)
        for x in candidates:
            value = message_variance(params, x)
            if value > best[0]:
                best = (value, x)
    return best


def mse_bound_at_k(params: Params, *, spread=0.25):
    """Bound on the normalised MSE E||mean_hat - mean||^2 of `Analyzer.estimate` at the
    configured k, as a dict of float64 terms (conditional on every coordinate reported):

      noise    = d * V * E[1/c | c >= 1]                   (randomised rounding + blanket)
      sampling = d * spread * E[(N - c)/((N - 1) c) | c >= 1]   (which messages hit j)
      total    = noise + sampling
    with N = n t messages, c ~ Binomial(N, 1/d) the messages on one coordinate (each picks
    its coordinate independently), V = `pair_variance_max`, spread an upper bound of each
    coordinate's population variance (1/4 for any data in [0, 1]). Given c, the messages on
    j are a uniform c-subset of the N (reading, message) slots, a population in which every
    reading appears t times (same variance): the finite-population variance
    sigma^2 (N - c)/(c (N - 1)). The paper's MSE compares the estimate with the sampled
    coordinates themselves (its "noise" term); the sampling term is what comparing with the
    true mean adds."""
    p = params
    big_n = p.n * p.t
    inv, p0 = _inverse_count_moments(big_n, 1 / p.d)
    v = float(Analyzer(p).pair_variance_max())
    noise = p.d * v * inv
    sampling = p.d * spread * (big_n * inv - 1) / (big_n - 1)
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
    It holds at the paper's own choice of k (which balances the rounding and blanket terms)
    and for the paper's analysis; it is a reference figure beside `mse_bound_at_k`, the
    bound of what this product sends. epsilon >= 1 takes the t = 1 form at 1 - 2^-20."""
    p = params
    dlt, n, d, t = float(p.delta), p.n, p.d, p.t
    eps = float(p.epsilon)
    g = float(p.gamma)
    scale = d ** (8 / 3) / ((1 - g) ** 2 * n ** (5 / 3))
    if t == 1:
        eps = min(eps, 1 - 2.0 ** -20)
        a = 98 ** (1 / 3) * math.log(2 / dlt) ** (2 / 3) / eps ** (4 / 3)
        b = 18 / (4 * eps) ** (2 / 3)
        return scale * max(a, b)
    c = 14 if eps < 1 else 504
    return scale * 2 * t * (c * math.log(1 / dlt) * math.log(2 * t / dlt)) ** (2 / 3) \
        / eps ** (4 / 3)
