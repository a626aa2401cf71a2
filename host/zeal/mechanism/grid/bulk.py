"""Bulk sampling with numpy, bit-exact with the scalar reference `ExactZeal.sample_offset`.

Row i of a batch is one report. It reads the words of its own stream in the scalar order
(shared_spec/mechanism.md, "Sampling"): words[i, 0] for the stochastic rounding, words[i, 1]
for the branch, words[i, 2] for the uniform; `more_words(i)` continues that stream in the
rare rows that need more than three words (a rounding tie or a uniform rejection).

Every row either goes through a float64 fast path whose answer is certified equal to the
scalar one (proof below), or is recomputed by the scalar reference itself with the same
word stream. The two never disagree; the fast path only decides rows it can prove.

Why the fast path is exact
--------------------------
Notation: u = 2^-53 (unit roundoff), S = N - Nc (= No), pos = (x - lo) S / (hi - lo) exact,
x already clamped to [lo, hi] (np.clip is exact), so 0 <= pos <= S. Let w = words[i, 0] and
U = w / 2^64 in [0, 1).

1. What the scalar rounding returns. `bernoulli(rem, den)` has rem/den = frac = pos - base,
   base = floor(pos), and compares w with digit = floor(frac 2^64):
     - frac - U >= 2^-64  <=> frac 2^64 >= w + 1 <=> digit > w  -> 1 (one word read)
     - frac - U <  0      <=> frac 2^64 < w      => digit < w  -> 0 (one word read)
     - otherwise w == digit: the tie, which may read more words.
   With Y = pos - U + 1 = base + 1 + (frac - U), and frac - U in (-1, 1): in the first case
   Y is in [base + 1 + 2^-64, base + 2), in the second in (base, base + 1); both give
   jL = floor(Y) after exactly one word. The tie is Y in [base + 1, base + 1 + 2^-64).
   So: if Y is NOT within [m, m + 2^-64] for any integer m, jL = floor(Y) and one word was
   read. (This covers pos an exact integer, x == lo and x == hi: no special case.)

2. What the fast path computes (fl = round-to-nearest double):
     span = fl(hi - lo), K = fl(S / span)        (S < 2^52 is exact as a double)
     d = fl(x - lo), p = fl(d K)                  p ~ pos
     t = w >> 11 (integer < 2^53), ut = t 2^-53   exact; U - ut in [0, 2^-53)
     a = fl(p - ut), z = fl(a + (1 - E))          z ~ Y - E
     f = floor(z), g = fl(z - f)                  jL = f when certified
   with E = (S + 1) 2^-48 (a double, exact) and the test "certified iff g <= 1 - 2E"
   (1 - E and 1 - 2E are exact too: E < 2^-7 and 2E is a multiple of 2^-47).
   p >= 0 and ut < 1 give a >= -1 and z >= -E. For z >= 0, g = z - f exactly; for z < 0
   (f = -1), z - f >= 1 - E and rounding is monotone, so g >= 1 - E: never certified.
   Error: each of d, K, span and p carries relative error <= u unless p underflows, when its
   absolute error is <= 2^-1075; hence |p - pos| <= (4u + 7u^2) pos + 2^-1075
   <= 4.01 u S + 2^-1075. The last two roundings add <= u (S + 1)(1 + 5u) and
   <= u (S + 2)(1 + 5u), and |ut - U| < u. Altogether
     |z - (Y - E)| <= u (6.1 S + 4.1) =: B,   while E = 32 u (S + 1) >= 5 B.
   If certified, z >= 0 and z is in [f, f + 1 - 2E], so Y is in [f + E - B, f + 1 - E + B],
   which lies inside (f + 2^-64, f + 1) because E - B >= 25 u > 2^-64. By step 1, the scalar reading
   of this row's first word gives jL = floor(Y) = f, and it read exactly one word; as
   Y is in (pos, pos + 1], f is in [0, S] and the float-to-int64 conversion of f is exact.
   (Uncertified rows get a meaningless jL here and are overwritten by the scalar path.)
   The "generous per-element bound pos 2^-49" of the design is replaced by one bound for the
   whole profile, E = (S + 1) 2^-48 >= 2 max(pos) 2^-49, and the floor test on pos and the
   comparison test on frac are merged into the single test on Y above: fewer passes, and
   no fallback at x == lo, x == hi or integer pos.

3. The branch and the uniform need no float: the branch is w1 < T on uint64, exactly the
   scalar test, and u = w2 // q with q = 2^64 // n is computed by numpy's integer division
   (Nc == 1 or No == 1 means q = 2^64, which does not fit: u = 0 then, as in the scalar code,
   where w // 2^64 = 0 < 1 never rejects). A row is accepted only if w2 < min(q n) over the
   two branches, so neither uniform rejects and each reads exactly one word. The offset is
   jL + u_c in the window, else u_o if u_o < jL else u_o + Nc: the scalar formulas.

Rows not certified in step 2, or with w2 >= min(q n), are recomputed by `ExactZeal` with the
stream words[i, 0], words[i, 1], words[i, 2], more_words(i)(), ... (the scalar path reads the
same words in the same order). Expected share of such rows: about 2E + n/2^64, i.e.
(S + 1) 2^-47 -- 5e-10 at S = 2^16, 0.8 % at S = 2^40.

Limits: the fast path needs S <= 2^40 (FAST_PATH_MAX_STEPS; beyond, the bound E grows to
the point where most rows fall back anyway) and a normal, finite K and span (ranges between
about 2^-1000 and 2^1000 wide). Profiles outside those limits are served entirely by the
exact scalar path: correct, but at scalar speed (tens of microseconds per row).
"""
from fractions import Fraction

import numpy as np

from ...errors import InputError
from .scalar import ExactZeal
from .profile import Profile, WORD

#: largest N - Nc served by the float64 fast path (see the module docstring)
FAST_PATH_MAX_STEPS = 1 << 40
#: rows per chunk: the ~10 working arrays of a chunk (256 KiB each) stay in L2 cache;
#: 2^13..2^15 measure within a few % of each other; 2^11 is ~40 % and 2^17 ~15 % slower
#: (tools/bench_bulk.py --sweep)
CHUNK = 1 << 15

_TWO_M53 = float(2.0 ** -53)
_U11 = np.uint64(11)


class _Plan:
    """Per-profile constants of the fast path (all exact integers or exact doubles)."""

    def __init__(self, profile: Profile):
        if not isinstance(profile, Profile):
            raise TypeError("profile must be a zeal.mechanism.grid.profile.Profile")
        self.profile = profile
        self.lo = float(profile.lo)
        self.hi = float(profile.hi)
        self.steps = profile.n_cells - profile.n_window  # S = No
        nc, no = profile.n_window, profile.n_outside
        self.nc = nc
        self.threshold = np.uint64(profile.threshold)
        # uniform divisors; None stands for q = 2^64 (n == 1): u = 0, never rejects
        self.q_c = np.uint64(WORD // nc) if nc > 1 else None
        self.q_o = np.uint64(WORD // no) if no > 1 else None
        # q n == 2^64 (n a power of two) never rejects either
        limits = [(WORD // n) * n for n in (nc, no) if (WORD // n) * n < WORD]
        self.reject_at = np.uint64(min(limits)) if limits else None  # w2 >= this: fallback
        span = self.hi - self.lo
        k = float(self.steps) / span if span > 0 else float("inf")
        tiny = 2.0 ** -1000
        self.fast = (self.steps <= FAST_PATH_MAX_STEPS and tiny <= span < float("inf")
                     and 2.0 ** -1022 <= k < float("inf"))
        self.k = k
        if self.fast:
            e = float(self.steps + 1) * 2.0 ** -48  # E, exact: S + 1 <= 2^40 + 1 < 2^53
            self.one_minus_e = 1.0 - e  # exact: E is a multiple of 2^-48, below 2^-7
            self.one_minus_2e = 1.0 - 2.0 * e  # exact for the same reason
        self.exact = ExactZeal(profile=profile, words=_no_words)


def _no_words():
    raise RuntimeError("bulk fallback called without a word source")  # never reached


class _Chain:
    """A word source: the row's recorded words first, then the continuation, fetched lazily."""

    def __init__(self, first, more, row):
        self.first = first
        self.index = 0
        self.more = more
        self.row = row
        self.rest = None

    def __call__(self) -> int:
        if self.index < len(self.first):
            word = self.first[self.index]
            self.index += 1
            return word
        if self.rest is None:
            if self.more is None:
                raise ValueError("row %d needs more than its 3 words (a rounding tie or a "
                                 "uniform rejection) but no more_words was given" % self.row)
            self.rest = self.more(self.row)
        return int(self.rest())


# ---- input checks --------------------------------------------------------------------------
def _readings(x) -> np.ndarray:
    """x as a contiguous 1-D float64 array holding exactly the given values."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InputError("readings must be a 1-D array, got shape %r" % (arr.shape,))
    if arr.dtype.kind == "O":
        try:
            arr = np.array(arr.tolist(), dtype=np.float64)  # Python floats are doubles
        except (TypeError, ValueError):
            raise InputError("readings must be numbers") from None
    kind = arr.dtype.kind
    if kind == "f":
        out = np.ascontiguousarray(arr, dtype=np.float64)  # float16/32 widen exactly
        if arr.dtype.itemsize > 8:  # long double: only values that are doubles
            bad = ~(np.isnan(arr) | (out.astype(arr.dtype) == arr))
            if bad.any():
                raise InputError("%d reading(s) are not exact float64 values" % int(bad.sum()))
        return out
    if kind in "iu":
        out = arr.astype(np.float64)
        bad = np.abs(out) > 2.0 ** 53
        if bad.any():
            raise InputError("%d integer reading(s) exceed 2^53 in magnitude and would be "
                             "rounded" % int(bad.sum()))
        return out
    raise InputError("readings must be a float or integer array, got dtype %s" % arr.dtype)


def _prepare(plan: _Plan, x) -> tuple:
    """(clamped readings, count of clamped readings)."""
    x = _readings(x)
    if x.size == 0:
        return x, 0
    mn, mx = x.min(), x.max()  # NaN propagates into both
    if not (np.isfinite(mn) and np.isfinite(mx)):
        bad = ~np.isfinite(x)
        n_nan = int(np.isnan(x).sum())
        n_bad = int(bad.sum())
        first = int(np.flatnonzero(bad)[0])
        raise InputError("%d reading(s) are not finite (%d NaN, %d infinite; first at index %d)"
                         % (n_bad, n_nan, n_bad - n_nan, first))
    if mn >= plan.lo and mx <= plan.hi:
        return x, 0
    clamped = int(np.count_nonzero(x < plan.lo)) + int(np.count_nonzero(x > plan.hi))
    return np.clip(x, plan.lo, plan.hi), clamped


def _words(words, n: int) -> np.ndarray:
    arr = np.asarray(words)
    if arr.dtype != np.uint64:
        if arr.dtype.kind == "O" or arr.dtype.kind == "u":
            arr = np.array(words, dtype=np.uint64)
        elif arr.dtype.kind == "i":
            if arr.size and arr.min() < 0:
                raise ValueError("words must be non-negative 64-bit integers")
            arr = arr.astype(np.uint64)
        else:
            raise ValueError("words must be a uint64 array, got dtype %s" % arr.dtype)
    if n == 0 and arr.size == 0:
        return np.empty((0, 3), dtype=np.uint64)
    if arr.shape != (n, 3):
        raise ValueError("words must have shape (%d, 3), got %r" % (n, arr.shape))
    return arr


# ---- the fast path on one chunk ----------------------------------------------------------------
class _Buffers:
    def __init__(self, size: int):
        self.f1 = np.empty(size, dtype=np.float64)
        self.f2 = np.empty(size, dtype=np.float64)
        self.i1 = np.empty(size, dtype=np.uint64)
        self.i2 = np.empty(size, dtype=np.int64)
        self.i3 = np.empty(size, dtype=np.int64)
        self.b1 = np.empty(size, dtype=bool)
        self.b2 = np.empty(size, dtype=bool)
        self.b3 = np.empty(size, dtype=bool)


def _chunk(plan: _Plan, x, w0, w1, w2, out, buf: _Buffers) -> np.ndarray:
    """Fill out[:] for the rows the fast path certifies; return the indices of the others.

    Each line is one pass over the chunk, in place; the module docstring proves it exact.
    """
    m = x.shape[0]
    f1, f2, t, jl, uo = buf.f1[:m], buf.f2[:m], buf.i1[:m], buf.i2[:m], buf.i3[:m]
    amb, br, ge = buf.b1[:m], buf.b2[:m], buf.b3[:m]
    # ---- rounding: jL = floor(Y), Y = pos - U + 1, certified away from integers ----
    np.subtract(x, plan.lo, out=f1)                     # d = x - lo
    np.multiply(f1, plan.k, out=f1)                     # p = d K
    np.right_shift(w0, _U11, out=t)                     # t = w0 >> 11 < 2^53
    np.copyto(f2, t.view(np.int64), casting="unsafe")   # exact
    np.multiply(f2, _TWO_M53, out=f2)                   # ut = t 2^-53, exact
    np.subtract(f1, f2, out=f1)                         # a = p - ut
    np.add(f1, plan.one_minus_e, out=f1)                # z = a + (1 - E)
    np.floor(f1, out=f2)                                # f = floor(z)
    np.subtract(f1, f2, out=f1)                         # g = z - f (exact if z >= 0)
    np.greater(f1, plan.one_minus_2e, out=amb)          # not certified
    np.copyto(jl, f2, casting="unsafe")                 # jL = f (exact, 0 <= f <= S)
    # ---- uniform rejection: any w2 that could reject in either branch goes to the scalar ----
    if plan.reject_at is not None:
        np.greater_equal(w2, plan.reject_at, out=br)
        np.logical_or(amb, br, out=amb)
    # ---- branch and uniforms ----
    np.less(w1, plan.threshold, out=br)                 # window iff w1 < T
    if plan.q_o is not None:
        np.floor_divide(w2, plan.q_o, out=uo.view(np.uint64))
    else:
        uo.fill(0)
    # outside: u_o + Nc [u_o >= jL]
    res = out
    np.greater_equal(uo, jl, out=ge)
    np.multiply(ge, plan.nc, out=res)
    np.add(res, uo, out=res)
    # window: jL + u_c
    if plan.q_c is not None:
        np.floor_divide(w2, plan.q_c, out=uo.view(np.uint64))
        np.add(jl, uo, out=jl)
    # select: res += br (window - outside)
    np.subtract(jl, res, out=jl)
    np.multiply(jl, br, out=jl)
    np.add(res, jl, out=res)
    if amb.any():
        return np.flatnonzero(amb)
    return None


def _exact_row(plan: _Plan, xi: float, first, more, row: int) -> int:
    source = _Chain([int(w) for w in first], more, row)
    return plan.exact.sample_offset(Fraction(float(xi)), words=source)


def _run(plan: _Plan, x: np.ndarray, fetch, more, chunk: int, stats) -> np.ndarray:
    """Shared driver: fetch(start, stop) -> (w0, w1, w2) uint64 arrays of that slice."""
    n = x.shape[0]
    out = np.empty(n, dtype=np.int64)
    fallback = 0
    if not plan.fast:
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            w0, w1, w2 = fetch(s, e)
            for r in range(e - s):
                out[s + r] = _exact_row(plan, x[s + r], (w0[r], w1[r], w2[r]), more, s + r)
        if stats is not None:
            stats["fallback"] = stats.get("fallback", 0) + n
        return out
    buf = _Buffers(min(chunk, n) if n else 1)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        w0, w1, w2 = fetch(s, e)
        rows = _chunk(plan, x[s:e], w0, w1, w2, out[s:e], buf)
        if rows is not None:
            fallback += rows.shape[0]
            for r in rows.tolist():
                out[s + r] = _exact_row(plan, x[s + r], (w0[r], w1[r], w2[r]), more, s + r)
    if stats is not None:
        stats["fallback"] = stats.get("fallback", 0) + fallback
    return out


# ---- public API -----------------------------------------------------------------------------
def sample_offsets(profile: Profile, x, words, more_words=None, *, chunk: int = CHUNK,
                   stats: dict = None) -> np.ndarray:
    """Offsets j in [0, N) for readings x, bit-exact with `ExactZeal.sample_offset`.

    x: 1-D array of readings (float16/32/64, or integers up to 2^53 in magnitude); NaN or
    infinities raise InputError naming how many; finite values outside [lo, hi] are clamped
    exactly as the scalar `clamp` does.
    words: uint64 array of shape (n, 3): row i's rounding, branch and uniform words.
    more_words: more_words(i) returns a word source (a callable like CounterWords) that
    continues row i's stream after its three words; it is called only for a row that needs
    a fourth word (rounding tie or uniform rejection, probability below (N + 1) / 2^64 per
    row). If it is None and such a row occurs, ValueError is raised.
    stats: optional dict, receives "clamped" (readings clamped) and "fallback" (rows served
    by the scalar reference).
    """
    plan = _Plan(profile)
    x, clamped = _prepare(plan, x)
    w = _words(words, x.shape[0])
    if stats is not None:
        stats["clamped"] = stats.get("clamped", 0) + clamped

    def fetch(s, e):
        return w[s:e, 0], w[s:e, 1], w[s:e, 2]

    return _run(plan, x, fetch, more_words, max(1, int(chunk)), stats)


def sample_offsets_fast(profile: Profile, x, rng: np.random.Generator, *, chunk: int = CHUNK,
                        stats: dict = None) -> np.ndarray:
    """Statistical mode: the same sampler with words from a numpy Generator.

    For simulations and benchmarks only. numpy's generators are not cryptographic and are
    never to be used on or for devices: production reports take their words from
    `zeal.mechanism.core.words.system_words()` (or the device's generator). Each row's output has exactly
    the mechanism's distribution given independent uniform words; rows that need the scalar
    fallback continue from the same generator.
    """
    plan = _Plan(profile)
    x, clamped = _prepare(plan, x)
    if stats is not None:
        stats["clamped"] = stats.get("clamped", 0) + clamped
    bitgen = rng.bit_generator

    def fetch(s, e):
        raw = bitgen.random_raw(3 * (e - s)).reshape(3, e - s)
        return raw[0], raw[1], raw[2]

    def more(_row):
        return lambda: int(bitgen.random_raw())

    return _run(plan, x, fetch, more, max(1, int(chunk)), stats)
