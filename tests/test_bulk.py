"""Bulk numpy sampler: bit-exact with the scalar reference, word for word (no tolerance)."""
import hashlib
import math
from fractions import Fraction

import numpy as np
import pytest

from zeal.mechanism.grid import bulk
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import choose
from zeal.mechanism.grid.exact import ExactGrid
from zeal.errors import InputError
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder

from conftest import EPSILONS, HUMIDITY

WORD = 1 << 64
LO, HI = HUMIDITY
HBAR = (LO + HI) / 2  # exact: the sum is a multiple of ulp(107.4) and halving is exact
BULK_BITS = (2, 3, 4, 8, 16, 30)
REAL_HUMIDITY = (23.5, 24.0, 31.25, 40.0, 45.3, 50.0, 53.7, 55.55, 61.27, 68.9, 72.125,
                 79.99, 83.9)


def key(tag: str, i: int) -> bytes:
    return hashlib.sha256(("%s:%d" % (tag, i)).encode()).digest()


def integer_position_inputs(profile, limit=12) -> list:
    """Doubles x in [lo, hi] whose exact pos = (x - lo) S / (hi - lo) is an integer."""
    lo, hi = Fraction(profile.lo), Fraction(profile.hi)
    span, steps = hi - lo, profile.n_cells - profile.n_window
    odd = steps
    while odd % 2 == 0:
        odd //= 2
    step = odd // math.gcd(odd, span.numerator)  # j * span / S is then dyadic
    found = []
    for j in range(0, steps + 1, step):
        x = lo + j * span / steps
        if Fraction(float(x)) == x:
            found.append(float(x))
    if len(found) > limit:  # keep both ends and an even spread
        idx = np.linspace(0, len(found) - 1, limit).round().astype(int)
        found = [found[i] for i in sorted(set(idx.tolist()))]
    return found


def inputs_for(profile, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    f32 = rng.uniform(LO, HI, 20).astype(np.float32).astype(np.float64)
    lo, hi = profile.lo, profile.hi
    special = [lo, hi, np.nextafter(lo, -np.inf), np.nextafter(lo, np.inf),
               np.nextafter(hi, -np.inf), np.nextafter(hi, np.inf), lo - 10.0, hi + 10.0,
               -1e300, 1e300, 0.0, -0.0, HBAR, float(np.float32(HBAR))]
    ints = integer_position_inputs(profile)
    assert ints[0] == lo and ints[-1] == hi
    return np.concatenate([special, REAL_HUMIDITY, ints, f32, rng.uniform(LO, HI, 1000),
                           rng.uniform(LO - 5, HI + 5, 40)]).astype(np.float64)


def record(profile, xs, tag):
    """Run the scalar reference with one CounterWords per row; keep the words it read."""
    ez = ExactZeal(profile=profile)
    expected, words, rest = [], [], []
    for i, x in enumerate(xs):
        rec = Recorder(CounterWords(key(tag, i)))
        expected.append(ez.sample_offset(Fraction(float(x)), words=rec))
        assert len(rec.used) >= 3
        words.append(rec.used[:3])
        rest.append(rec.used[3:])
    return expected, np.array(words, dtype=np.uint64), rest, ez.clamped


def continuation(rest):
    return lambda i: ListWords(rest[i])


def crafted(profile, xs, rows, **kw):
    """Scalar and bulk on the same explicit word lists (each row's list is its stream)."""
    ez = ExactZeal(profile=profile)
    expected = [ez.sample_offset(Fraction(float(x)), words=ListWords(r)) for x, r in zip(xs, rows)]
    stats = {}
    got = bulk.sample_offsets(profile, np.array(xs, dtype=np.float64),
                              np.array([r[:3] for r in rows], dtype=np.uint64),
                              lambda i: ListWords(rows[i][3:]), stats=stats, **kw)
    assert got.dtype == np.int64
    assert got.tolist() == expected
    return stats


def position(profile, x) -> Fraction:
    lo, hi = Fraction(profile.lo), Fraction(profile.hi)
    x = min(max(Fraction(float(x)), lo), hi)
    return (x - lo) * (profile.n_cells - profile.n_window) / (hi - lo)


def rounding_digit(profile, x) -> int:
    pos = position(profile, x)
    return math.floor((pos - math.floor(pos)) * WORD)


# ---- exactness on recorded streams ---------------------------------------------------------
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("bits", BULK_BITS)
def test_matches_scalar_on_recorded_words(eps, bits):
    prof = P.from_bits(LO, HI, eps, bits)
    xs = inputs_for(prof, seed=bits * 10 + int(eps * 2))
    expected, words, rest, clamped = record(prof, xs, "bulk-%g-%d" % (eps, bits))
    stats = {}
    got = bulk.sample_offsets(prof, xs, words, continuation(rest), stats=stats)
    assert got.dtype == np.int64 and got.shape == xs.shape
    assert got.tolist() == expected
    assert stats["clamped"] == clamped > 0
    # the same rows through tiny chunks (many partial chunks) give the same offsets
    assert bulk.sample_offsets(prof, xs, words, continuation(rest), chunk=7).tolist() == expected


def test_auto_profile_and_float32_input():
    prof = choose.auto(LO, HI, 1.0)
    x32 = np.random.default_rng(3).uniform(LO - 1, HI + 1, 500).astype(np.float32)
    expected, words, rest, _ = record(prof, x32.astype(np.float64), "auto-f32")
    assert bulk.sample_offsets(prof, x32, words, continuation(rest)).tolist() == expected


@pytest.mark.parametrize("lo,hi,eps,bits", [(LO, HI, 1.0, 16), (20.0, 80.0, 0.5, 16),
                                           (20.0, 80.0, 1.0, 12), (-40.0, 85.0, 2.0, 6),
                                           (0.0, 100.0, 1.0, 6)])
def test_integer_positions_are_exact_and_fast(lo, hi, eps, bits):
    # pos an exact integer needs no fallback: Y = pos + 1 - U is off the integers unless w = 0
    prof = P.from_bits(lo, hi, eps, bits)
    xs = integer_position_inputs(prof, limit=400)
    assert len(xs) >= 3 and all(position(prof, x).denominator == 1 for x in xs)
    expected, words, rest, _ = record(prof, xs, "intpos-%g-%g" % (lo, bits))
    stats = {}
    assert bulk.sample_offsets(prof, xs, words, continuation(rest), stats=stats).tolist() \
        == expected
    assert stats["fallback"] == 0


# ---- crafted words forcing each fallback ---------------------------------------------------
@pytest.mark.parametrize("bits", (3, 8, 16, 30))
def test_rounding_tie_falls_back(bits):
    # w0 equal to the base-2^64 digit of frac: the scalar reads the next word as digit two
    prof = P.from_bits(LO, HI, 1.0, bits)
    xs = [x for x in (45.3, 61.27, 30.0, 77.7) if position(prof, x).denominator != 1]
    tails = ([1, 2, 3, 4, 5], [WORD - 1, 0, WORD - 1, 7, 9], [0, WORD - 1, 123, 4, 5])
    rows, xrows = [], []
    for x in xs:
        digit = rounding_digit(prof, x)
        for tail in tails:
            rows.append([digit] + tail)
            xrows.append(x)
    stats = crafted(prof, xrows, rows)
    assert stats["fallback"] == len(rows)
    with pytest.raises(ValueError, match="more_words"):
        bulk.sample_offsets(prof, xrows[:1], np.array([rows[0][:3]], dtype=np.uint64))


def test_integer_position_with_zero_word_falls_back():
    # pos integer and w0 == 0 == digit: the scalar ties, sees rem == 0 and returns 0 after one
    # word; Y = pos + 1 exactly, so the bulk path must defer.
    prof = P.from_bits(LO, HI, 1.0, 16)  # S = 39298 = 2 * 19649: H-bar among them
    xs = integer_position_inputs(prof, limit=6)  # lo and hi among them
    assert len(xs) >= 3 and all(position(prof, x).denominator == 1 for x in xs)
    rows = [[0, 5, 77], [0, WORD - 1, 12345], [0, 0, WORD // 3]] * len(xs)
    xrows = [x for x in xs for _ in range(3)]
    stats = crafted(prof, xrows, rows)
    assert stats["fallback"] == len(rows)


@pytest.mark.parametrize("eps,bits", [(1.0, 4), (1.0, 8), (0.5, 16), (4.0, 4), (2.0, 30)])
def test_uniform_rejection_falls_back(eps, bits):
    prof = P.from_bits(LO, HI, eps, bits)
    nc, no = prof.n_window, prof.n_outside
    rejecting = [n for n in (nc, no) if (WORD // n) * n < WORD]
    assert rejecting  # these profiles have a non-power-of-two count
    rows, xrows = [], []
    for x in (LO, 40.0, 61.27, HI):
        for branch in (0, WORD - 1):  # window, outside
            for n in rejecting:
                bad = (WORD // n) * n  # first rejected word
                for w2 in (bad, WORD - 1):
                    rows.append([WORD // 3, branch, w2, bad, WORD - 1, 5, 6, 7])
                    xrows.append(x)
    stats = crafted(prof, xrows, rows)
    assert stats["fallback"] == len(rows)
    # one below the smallest rejecting word stays on the fast path, exactly
    edge = min((WORD // n) * n for n in rejecting) - 1
    stats = crafted(prof, [40.0, 40.0], [[WORD // 3, 0, edge], [WORD // 3, WORD - 1, edge]])
    assert stats["fallback"] == 0


@pytest.mark.parametrize("eps", (0.5, 4.0))
@pytest.mark.parametrize("bits", (2, 4, 8, 16, 24, 30, 36, 40))
def test_words_near_the_certification_margin(eps, bits):
    # w0 at and around frac * 2^64, within and just beyond the fast path's margin E.
    prof = P.from_bits(LO, HI, eps, bits)
    steps = prof.n_cells - prof.n_window
    margin = (steps + 1) * 2.0 ** -48 * WORD
    rng = np.random.default_rng(bits)
    xs = [LO, HI, HBAR, 45.3, 61.27] + rng.uniform(LO, HI, 6).tolist()
    rows, xrows = [], []
    for x in xs:
        digit = rounding_digit(prof, x)
        offsets = [0, 1, -1, 2, -2, 2 ** 11, -(2 ** 11), 2 ** 12, -(2 ** 12)]
        for m in (0.5, 0.9, 1.0, 1.01, 1.1, 1.5, 2.0, 3.0):
            offsets += [int(margin * m), -int(margin * m)]
        for k in offsets:
            tail = [int(v) for v in rng.integers(0, WORD, 5, dtype=np.uint64)]
            rows.append([(digit + k) % WORD] + tail)
            xrows.append(x)
    stats = crafted(prof, xrows, rows)
    assert 0 < stats["fallback"] < len(rows)


def test_large_grid_goes_through_the_exact_path():
    prof = P.from_bits(LO, HI, 1.0, 52)
    assert prof.n_cells - prof.n_window > bulk.FAST_PATH_MAX_STEPS
    xs = np.array([LO, HI, 45.3, 61.27, LO - 1, HBAR])
    expected, words, rest, _ = record(prof, xs, "big")
    stats = {}
    assert bulk.sample_offsets(prof, xs, words, continuation(rest), stats=stats).tolist() \
        == expected
    assert stats["fallback"] == len(xs)


# ---- inputs --------------------------------------------------------------------------------
def test_nan_and_infinities_are_rejected_with_a_count():
    prof = choose.auto(LO, HI, 1.0)
    words = np.zeros((5, 3), dtype=np.uint64)
    with pytest.raises(InputError, match=r"^3 reading\(s\) are not finite \(1 NaN, 2 infinite"):
        bulk.sample_offsets(prof, [40.0, np.nan, np.inf, 50.0, -np.inf], words)
    with pytest.raises(InputError, match=r"^1 reading\(s\) are not finite \(1 NaN"):
        bulk.sample_offsets_fast(prof, np.array([np.nan, 40.0]), np.random.default_rng(0))
    with pytest.raises(InputError, match="1-D"):
        bulk.sample_offsets(prof, np.zeros((2, 2)), np.zeros((4, 3), dtype=np.uint64))
    with pytest.raises(ValueError, match="shape"):
        bulk.sample_offsets(prof, [40.0, 41.0], np.zeros((3, 3), dtype=np.uint64))


def test_clamping_counts_match_the_scalar():
    prof = P.from_bits(LO, HI, 1.0, 8)
    xs = np.array([LO - 1e-9, LO, HI, HI + 1e-9, -1e308, 1e308, 50.0, np.nextafter(HI, 99.0)])
    expected, words, rest, clamped = record(prof, xs, "clamp")
    assert clamped == 5
    stats = {}
    got = bulk.sample_offsets(prof, xs, words, continuation(rest), stats=stats)
    assert got.tolist() == expected and stats["clamped"] == 5
    stats = {}
    bulk.sample_offsets_fast(prof, xs, np.random.default_rng(1), stats=stats)
    assert stats["clamped"] == 5


def test_empty_batch():
    prof = choose.auto(LO, HI, 1.0)
    assert bulk.sample_offsets(prof, [], np.zeros((0, 3), dtype=np.uint64)).shape == (0,)
    assert bulk.sample_offsets_fast(prof, [], np.random.default_rng(0)).shape == (0,)


# ---- statistical mode ----------------------------------------------------------------------
def test_fast_mode_is_the_same_sampler_on_the_generator_words():
    prof = P.from_bits(LO, HI, 1.0, 16)
    xs = np.random.default_rng(9).uniform(LO - 2, HI + 2, 3000)
    got = bulk.sample_offsets_fast(prof, xs, np.random.default_rng(42))
    bitgen = np.random.default_rng(42).bit_generator
    words = bitgen.random_raw(3 * len(xs)).reshape(3, -1).T  # one chunk: rows of 3 columns
    more = lambda i: (lambda: int(bitgen.random_raw()))  # noqa: E731
    assert got.tolist() == bulk.sample_offsets(prof, xs, words, more).tolist()


@pytest.mark.statistical
def test_fast_mode_distribution():
    # chi-square with 14 degrees of freedom against the exact distribution; the Chernoff
    # bound (t/k)^(k/2) e^(-(t-k)/2) puts P(chi2_14 > 70) below 6e-8 (fixed seed anyway).
    prof = P.from_bits(LO, HI, 1.0, 4)
    x, n = 40.0, 400_000
    probs = ExactGrid(prof).distribution(Fraction(x))
    got = bulk.sample_offsets_fast(prof, np.full(n, x), np.random.default_rng(2024))
    counts = np.bincount(got, minlength=prof.n_cells)
    assert counts.shape[0] == prof.n_cells
    expected = np.array([float(probs[j]) * n for j in range(prof.n_cells)])
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 70, chi2
