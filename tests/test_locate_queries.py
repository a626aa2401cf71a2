"""Range-count queries and the median (seed 003, Sections 6.2 and 6.3): the integer Haar
transform and its inverse, the wavelet baseline's sensitivity and noise, answering squares
from a summed-area table, exact true counts, the median's smooth sensitivity against its
definition, and the smooth-sensitivity baselines' noise law.

Statistical checks use fixed seeds; each states its band and the false-failure rate it would
have for a seed drawn at random."""
import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np

from zeal.analysis.locate import median, queries
from zeal.mechanism.core.words import CounterWords


# ---- the transform ---------------------------------------------------------------------------
def test_the_haar_transform_by_hand():
    """[1, 2, 3, 4]: total 10, root (1 + 2) - (3 + 4) = -4, then 1 - 2 and 3 - 4."""
    assert queries.haar_forward([1, 2, 3, 4]).tolist() == [10, -4, -1, -1]
    # 2 x 2 [[a, b], [c, d]] (rows cx): along cx [a + c, b + d], [a - c, b - d]; then along cy
    assert queries.haar2([[1, 2], [3, 4]]).tolist() == [[10, -2], [-4, 0]]
    # 4 x 4: one point at (0, 0) and two at (3, 1). H e_0 = (1, 1, 1, 0), H e_3 = (1, -1, 0,
    # -1), H e_1 = (1, 1, -1, 0); the coefficients are H e_0 (H e_0)^T + 2 H e_3 (H e_1)^T
    grid = np.zeros((4, 4), dtype=np.int64)
    grid[0, 0], grid[3, 1] = 1, 2
    assert queries.haar2(grid).tolist() == [[3, 3, -1, 0],
                                             [-1, -1, 3, 0],
                                             [1, 1, 1, 0],
                                             [-2, -2, 2, 0]]
    assert queries.ihaar2(queries.haar2(grid)).tolist() == grid.tolist()


def test_the_haar_transform_inverts_exactly_without_noise():
    rng = np.random.default_rng(11)
    for side in (1, 2, 8, 64, 512):
        a = rng.integers(0, 1000, (side, side))
        c = queries.haar2(a)
        assert c.dtype == np.int64 and c[0, 0] == a.sum()
        back = queries.ihaar2(c)
        assert np.array_equal(back, a), side            # exactly, not approximately
        v = rng.integers(-50, 50, side)
        assert np.array_equal(queries.haar_inverse(queries.haar_forward(v)), v)


def _haar_matrix(side):
    return queries.haar_forward(np.eye(side, dtype=np.int64), 0)   # column x: H e_x


def test_the_inverse_of_noisy_coefficients_is_exact():
    """Any integer coefficients (as after noise): the float inverse equals H^-1 C H^-T in
    Fractions (the rows of H are orthogonal, so H^-1 = H^T diag(1 / |row|^2))."""
    side = 8
    h = [[Fraction(int(v)) for v in row] for row in _haar_matrix(side)]
    norms = [sum(v * v for v in row) for row in h]
    hinv = [[h[a][x] / norms[a] for a in range(side)] for x in range(side)]   # hinv[x][a]
    rng = np.random.default_rng(5)
    c = rng.integers(-10 ** 6, 10 ** 6, (side, side))
    got = queries.ihaar2(c)
    for x, y in itertools.product(range(side), repeat=2):
        want = sum(hinv[x][a] * int(c[a, b]) * hinv[y][b]
                   for a in range(side) for b in range(side))
        assert Fraction(float(got[x, y])) == want


def test_the_wavelet_sensitivity_is_the_brute_force_maximum():
    """For every pair of cells (a point moved from one to the other) the L1 change of every
    coefficient but the total; its maximum is 2 (l + 1)^2 - 4, and the total never moves."""
    for levels in (1, 2, 3, 4):
        side = 1 << levels
        h = _haar_matrix(side)
        # row p: the coefficients of a single point in cell p = (x, y)
        unit = np.stack([np.outer(h[:, x], h[:, y]).ravel()
                         for x in range(side) for y in range(side)])
        worst = 0
        for p in range(side * side):
            diff = np.abs(unit[p] - unit)
            assert not diff[:, 0].any()
            worst = max(worst, int(diff[:, 1:].sum(axis=1).max()))
        assert worst == queries.privelet_sensitivity(levels) == 2 * (levels + 1) ** 2 - 4


def test_the_wavelet_noise_has_the_stated_law():
    """64 x 64 (l = 6, sensitivity 94), eps = 2: scale 47, r = exp(-1/47), the discrete
    Laplace's variance 2r/(1 - r)^2. The 4,095 noises (recovered exactly: the noisy grid times
    4^6 is an integer grid) have that variance within 5 standard errors (the sample variance's
    standard error is about Var (5/N)^(1/2), the Laplace's kurtosis being 6): false failure
    below 1e-6 by the normal approximation. The total stays n exactly."""
    rng = np.random.default_rng(8)
    counts = rng.integers(0, 20, (64, 64))
    noisy = queries.privelet_counts(counts, "2", CounterWords(bytes([7] * 32)))
    scaled = noisy * 4 ** 6
    assert np.array_equal(scaled, np.round(scaled))
    coef = queries.haar2(np.round(scaled).astype(np.int64))     # 4^6 times the noisy ones
    assert not (coef % 4 ** 6).any()
    noise = (coef // 4 ** 6 - queries.haar2(counts)).ravel()
    assert noise[0] == 0 and noisy.sum() == counts.sum()
    r = math.exp(-1 / 47)
    var = 2 * r / (1 - r) ** 2
    got = noise[1:].astype(float)
    assert abs(got.mean()) < 5 * math.sqrt(var / got.size)
    assert abs(got.var() - var) < 5 * var * math.sqrt(5 / got.size), (got.var(), var)


def test_a_wavelet_range_answer_is_unbiased_with_the_predicted_variance():
    """16 x 16 (l = 4, sensitivity 46), eps = 1, 300 runs, one rectangle: the answer (the sum
    of the noisy cells in it) is linear in the noisy coefficients, so its variance is the
    discrete Laplace's times the sum of the squared weights w_c (w_c: the rectangle's sum of
    the inverse of the unit coefficient c). Mean within 5 standard errors (false failure below
    1e-6, normal approximation); variance within 5 of its standard errors (Var (5/300)^(1/2)
    bounds the sample variance's for a sum of Laplace terms, kurtosis at most 6; false failure
    below 1e-6 likewise)."""
    side, runs = 16, 300
    rng = np.random.default_rng(9)
    counts = rng.integers(0, 10, (side, side))
    box = (slice(3, 11), slice(5, 14))
    truth = counts[box].sum()
    weights = np.array([queries.ihaar2(np.eye(side * side)[c].reshape(side, side))[box].sum()
                        for c in range(1, side * side)])
    r = math.exp(-1 / 46)
    var = 2 * r / (1 - r) ** 2 * float((weights ** 2).sum())
    answers = np.array([queries.privelet_counts(counts, "1", CounterWords(
        run.to_bytes(32, "big")))[box].sum() for run in range(runs)])
    assert abs(answers.mean() - truth) < 5 * math.sqrt(var / runs)
    assert abs(answers.var() - var) < 5 * var * math.sqrt(5 / runs), (answers.var(), var)


def test_the_wavelet_density_is_a_density_on_the_grid():
    """The 512 x 512 noisy counts, spread over the 1024 x 1024 grid, sum to 1 (the total is
    n exactly) and are constant on each 2 x 2 block."""
    rng = np.random.default_rng(3)
    cx, cy = rng.integers(0, 512, 3000), rng.integers(0, 512, 3000)
    d = queries.privelet_density(cx, cy, "3", CounterWords(bytes(32)))
    assert d.size == 1024 * 1024 and abs(d.sum() - 1) < 1e-12
    g = d.reshape(1024, 1024)
    assert np.array_equal(g[0::2, 0::2], g[1::2, 1::2])


# ---- answering squares ---------------------------------------------------------------------
def test_a_range_answer_by_hand():
    """Masses (cx, cy): (0, 0) 1/8, (0, 1) 1/4, (1, 0) 1/2, (1, 1) 1/8 on a 4 x 4 grid; the
    rectangle [0.5, 1.5) x [0.5, 2): quarter of (0, 0), half of (0, 1), quarter of (1, 0),
    half of (1, 1): 1/32 + 1/8 + 1/8 + 1/16 = 11/32 (exact in binary)."""
    mass = np.zeros((4, 4))
    mass[0, 0], mass[0, 1], mass[1, 0], mass[1, 1] = 1 / 8, 1 / 4, 1 / 2, 1 / 8
    p = queries.prefix_table(mass.ravel(), side=4)
    assert p[4, 4] == 1 and p[1, 2] == 3 / 8
    assert queries.range_mass(p, 0.5, 0.5, 1.5, 2.0) == 11 / 32
    assert queries.range_mass(p, 0, 0, 4, 4) == 1
    assert queries.range_mass(p, 2, 2, 4, 4) == 0


def _brute_mass(grid, x0, y0, x1, y1):
    total = 0.0
    side = grid.shape[0]
    for i in range(side):
        ox = max(0.0, min(x1, i + 1) - max(x0, i))
        if ox == 0:
            continue
        for j in range(side):
            oy = max(0.0, min(y1, j + 1) - max(y0, j))
            total += grid[i, j] * ox * oy
    return total


def test_the_prefix_sum_answer_equals_a_brute_force_sum():
    rng = np.random.default_rng(21)
    side = 16
    grid = rng.random((side, side)) - 0.2          # negative cells too (the wavelet's)
    p = queries.prefix_table(grid.ravel(), side=side)
    for _ in range(300):
        x0, x1 = np.sort(rng.uniform(0, side, 2))
        y0, y1 = np.sort(rng.uniform(0, side, 2))
        if rng.random() < 0.2:                     # whole-cell and edge cases
            x0, x1 = float(int(x0)), float(side)
        got = queries.range_mass(p, x0, y0, x1, y1)
        assert abs(got - _brute_mass(grid, x0, y0, x1, y1)) < 1e-12
    # vectorised over many squares at once, as the experiment asks
    xs = rng.uniform(0, side - 3, 50)
    ys = rng.uniform(0, side - 3, 50)
    got = queries.range_mass(p, xs, ys, xs + 3, ys + 3)
    want = [_brute_mass(grid, a, b, a + 3, b + 3) for a, b in zip(xs, ys)]
    assert np.allclose(got, want, rtol=0, atol=1e-12)


def test_true_counts_equal_a_brute_force_count():
    rng = np.random.default_rng(4)
    order = 8
    cx = rng.integers(0, 1 << order, 5000)
    cy = rng.integers(0, 1 << order, 5000)
    cx[:50], cy[:50] = 0, (1 << order) - 1            # points on the box's edges
    for w in (1, 3, 64, 255, 256):
        qx, qy = queries.random_squares(w, 200, rng, order=order)
        got = queries.true_counts(cx, cy, qx, qy, w)
        want = [int(((cx >= a) & (cx < a + w) & (cy >= b) & (cy < b + w)).sum())
                for a, b in zip(qx, qy)]
        assert got.tolist() == want
        assert qx.min() >= 0 and qx.max() <= (1 << order) - w


def test_widths_are_whole_cells_at_order_16():
    assert [queries.width_cells(w) for w in queries.WIDTHS] == [
        1024, 2048, 4096, 8192, 16384, 32768, 49152]
    assert queries.width_cells("1/64") // (1 << 6) == 16    # 16 density cells


# ---- the median --------------------------------------------------------------------------------
def _median(ms):
    xs = sorted(ms)
    return xs[median.median_rank(len(xs)) - 1]


def _local_sensitivity(ys, domain):
    base = _median(ys)
    return max(abs(_median(ys[:i] + (v,) + ys[i + 1:]) - base)
               for i in range(len(ys)) for v in domain)


def _distance(a, b):
    """Replacements between two multisets of the same size."""
    return len(a) - sum((Counter(a) & Counter(b)).values())


def test_the_smooth_sensitivity_is_the_brute_force_maximum_of_its_definition():
    """S*(x) = max over every data set y of the domain of e^(-beta d(x, y)) LS(y) (NRS's
    definition; d: replacements), LS(y) the largest change of the median over one
    replacement, computed by brute force over the domain {0, ..., 4} in exact arithmetic,
    against the closed form max_k e^(-k beta) A(k). e^-beta in {0, 1/3, 1/2, 1}; n = 3, 4, 5
    (4: the lower median)."""
    domain = tuple(range(5))
    for n in (3, 4, 5):
        sets = list(itertools.combinations_with_replacement(domain, n))
        ls = {y: _local_sensitivity(y, domain) for y in sets}
        for decay in (Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)):
            for x in sets:
                brute = max(decay ** _distance(x, y) * ls[y] for y in sets)
                assert median.smooth_sensitivity(list(x), decay, 4) == brute, (n, decay, x)
            assert all(median.local_sensitivity_at(list(x), 0, 4) == ls[x] for x in sets)


def test_the_smooth_sensitivity_stops_early_and_agrees_with_the_full_maximum():
    rng = np.random.default_rng(2)
    xs = sorted(rng.random(301).tolist())
    for beta in (0.05, 0.5, 2.0):
        full = max(math.exp(-k * beta) * median.local_sensitivity_at(xs, k, 1.0)
                   for k in range(302))
        got = median.smooth_sensitivity(xs, math.exp(-beta), 1.0)
        assert abs(got - full) <= 1e-12 * full      # decay^k against e^(-k beta): rounding


def test_the_pure_noise_law_gives_eps_dp_on_small_neighbours():
    """The pure baseline's output density (1/(a S(x))) h((z - med(x)) / (a S(x))), h(z) =
    (2^(1/2)/pi) / (1 + z^4), a and beta from pure_constants: for every pair of neighbouring
    data sets of 5 values of {0, 1/4, ..., 1} the log ratio of the two densities stays within
    eps over a grid of outputs out to 10^6 (the derivation's bound; far out the ratio tends to
    (S(x)/S(y))^3, up to e^(eps/2)), and the sliding constant 3^(3/4) is the maximum of
    |d/dz ln h|."""
    z = np.linspace(0, 10, 200001)
    assert abs(np.max(4 * z ** 3 / (1 + z ** 4)) - 3 ** 0.75) < 1e-8
    domain = [Fraction(i, 4) for i in range(5)]
    far = np.geomspace(1e-3, 1e6, 400)
    outs = np.concatenate([-far, np.linspace(-3, 4, 2801), 1 + far])
    for eps in (0.5, 1.0, 3.0):
        a, beta = median.pure_constants(eps)
        decay = math.exp(-beta)
        cache = {}

        def law(x):
            if x not in cache:
                s = median.smooth_sensitivity([float(v) for v in x], decay, 1.0)
                scale = a * s
                u = (outs - float(_median(x))) / scale
                cache[x] = np.log(math.sqrt(2) / math.pi / scale) - np.log1p(u ** 4)
            return cache[x]
        worst = 0.0
        for x in itertools.combinations_with_replacement(domain, 5):
            for i, v in itertools.product(range(5), domain):
                y = tuple(sorted(x[:i] + (v,) + x[i + 1:]))
                worst = max(worst, float(np.max(np.abs(law(x) - law(y)))))
        assert worst <= eps + 1e-9, (eps, worst)
        assert worst > 0.4 * eps      # the bound is not vacuous here


def test_the_quartic_noise_has_its_law():
    """eta ~ (2^(1/2)/pi) / (1 + z^4): E|eta| = 2^(1/2)/2 (Var |eta| = 1 - 1/2), P(|eta| <= 1) =
    (pi + 2 ln(1 + 2^(1/2))) / (2 pi) = 0.7806. 200,000 draws (fixed seed), each within 5
    standard errors: false failure below 1e-6 per check (normal approximation)."""
    n = 200000
    eta = median.sample_quartic(np.random.default_rng(12), n)
    assert eta.size == n
    assert abs(np.abs(eta).mean() - math.sqrt(2) / 2) < 5 * math.sqrt(0.5 / n)
    p = (math.pi + 2 * math.log(1 + math.sqrt(2))) / (2 * math.pi)
    assert abs((np.abs(eta) <= 1).mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert abs((eta > 0).mean() - 0.5) < 5 * math.sqrt(0.25 / n)


def test_the_baselines_are_centred_on_the_median_and_clamped():
    xs = median.paper_set()
    assert len(xs) == 129 and xs[-63:] == [1.0] * 63 and xs == sorted(xs)
    rng = np.random.default_rng(1)
    out, s = median.ss_pure(xs, "3", 1.0, rng, 1000)
    assert out.min() >= 0 and out.max() <= 1 and s >= median.local_sensitivity_at(xs, 0, 1.0)
    out, s2 = median.ss_laplace(xs, "3", 1.0, rng, 1000)
    assert out.min() >= 0 and out.max() <= 1 and s2 >= s    # a smaller beta: a larger S*
    assert median.laplace_constants(1.0)[1] == 1 / (2 * math.log(2e6))


def test_the_release_median_is_the_reconstructions_middle_value():
    """At eps = 100 with k = 1 on 101 equally spaced values the release's median is within 0.1
    of the true one: the noise is Laplace of scale 1/100 of the interval per value, and the
    isotonic fit at a rank is a max-min of window means, so missing by 0.1 needs a window
    mean ten scales off (a random seed: probability below 1e-3)."""
    from zeal.mechanism.locate.hilbert import Box
    box = Box(0.0, 1.0, 0.0, 1.0)
    vals = [i / 100 for i in range(101)]
    ints = [min(box.cells - 1, int(v * box.cells)) for v in vals]
    got = median.release_median(ints, "100", 1, box, CounterWords(bytes(32)))
    assert median.median_rank(101) == 51 and median.median_rank(100) == 50
    assert abs(got - 0.5) < 0.1
