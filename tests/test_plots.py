"""The plots (zeal.analysis.plots): the exact mixture the histogram is compared with, the bands
drawn around it, the alignment of true readings with stored reports, device names, and the PNG
files themselves.

Exact tests (Fractions) apart from one statistical test: the seeded demo's histogram against
the mixture over its true readings, at a stated false-failure rate with its threshold derived
in code (Bernstein per bin, union bound over the bins).
"""
import contextlib
import io
import math
import os
from fractions import Fraction

import numpy as np
import pytest

from zeal.analysis import plots
from zeal.analysis.datasets import HUMIDITY_RANGE, aarhus
from zeal.analysis.decode import Loaded
from zeal.collect.store import Store, open_existing
from zeal.errors import ZealError
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.exact import ExactGrid

from test_analyze import DEV_A, DEV_B, fill

HUMIDITY = HUMIDITY_RANGE
PNG = b"\x89PNG\r\n\x1a\n"
# readings with repeats, both ends of the range, values outside it (clamped) and a spread
READINGS = ([Fraction(23.5)] * 3 + [Fraction("35.58")] * 5 + [Fraction("50.25"),
            Fraction(83.9), Fraction(200), Fraction(-7)] + [Fraction(float(t)) for t in
                                                            aarhus("humidity", 40)])


def exact_average(grid, readings):
    """(1/n) sum_i P(j | x_i) for every cell, straight from ExactGrid.distribution."""
    out = [Fraction(0)] * grid.n
    for x in readings:
        for j, p in grid.distribution(x).items():
            out[j] += p
    return [p / len(readings) for p in out]


# ---- the mixture -------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [2, 3, 4, 6])
def test_mixture_is_the_average_of_the_exact_distributions(bits):
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, bits))
    want = exact_average(grid, READINGS)
    got = plots.mixture_probabilities(grid, READINGS, np.arange(grid.n + 1), exact=True)
    assert got == want                                     # exact, cell by cell
    assert sum(got) == 1
    floats = plots.mixture_probabilities(grid, READINGS, np.arange(grid.n + 1))
    assert np.allclose(floats, [float(p) for p in want], rtol=1e-12, atol=0)


@pytest.mark.parametrize("bits", [3, 4, 8])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_mixture_mean_is_the_mean_map_over_the_readings(bits, eps):
    """sum_j j M(j) = (1/n) sum_i E[j | x_i], ExactGrid's affine mean map, exactly."""
    grid = ExactGrid(P.from_bits(*HUMIDITY, eps, bits))
    mix = plots.mixture_probabilities(grid, READINGS, np.arange(grid.n + 1), exact=True)
    mean = sum(j * p for j, p in enumerate(mix))
    assert mean == sum(grid.mean_offset(x) for x in READINGS) / len(READINGS)
    # hence the calibrated estimate of the mixture's mean is the readings' clamped mean
    clamped = sum(grid.clamp(x) for x in READINGS) / len(READINGS)
    assert grid.estimate(mean) == clamped


def test_binned_mixture_averages_its_cells():
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 8))
    cells = plots.mixture_probabilities(grid, READINGS, np.arange(grid.n + 1), exact=True)
    edges = [0, 1, 7, 100, grid.n - 3, grid.n]
    binned = plots.mixture_probabilities(grid, READINGS, edges, exact=True)
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        assert binned[i] == sum(cells[a:b]) / (b - a)
    wide = P.from_bits(*HUMIDITY, 1.0, 40)                 # 2^40 cells: overlap, no table
    g40 = ExactGrid(wide)
    e40 = plots.cell_edges(wide.n_cells)
    m40 = plots.mixture_probabilities(g40, READINGS, e40, exact=True)
    widths = np.diff(e40)
    assert sum(p * int(w) for p, w in zip(m40, widths)) == 1


def test_mixture_differs_from_the_single_input_curve():
    """What the old plot drew (P(j | x = mean)) is not what spread readings produce."""
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 4))
    xs = [Fraction(23.5), Fraction(83.9)]
    mix = plots.mixture_probabilities(grid, xs, np.arange(grid.n + 1), exact=True)
    single = grid.distribution(sum(xs) / 2)
    assert max(abs(mix[j] - single[j]) for j in range(grid.n)) >= (grid.p_hi - grid.p_lo) / 2


def test_cell_probabilities_are_the_one_reading_mixture():
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 3))
    for x in (Fraction(23.5), Fraction("61.3"), Fraction(83.9)):
        got = plots.cell_probabilities(grid, x, np.arange(grid.n + 1))
        assert np.allclose(got, [float(grid.distribution(x)[j]) for j in range(grid.n)],
                           rtol=1e-12, atol=0)


def test_mixture_needs_readings():
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 3))
    with pytest.raises(ZealError, match="no readings"):
        plots.mixture_probabilities(grid, [], np.arange(grid.n + 1))


# ---- bands -------------------------------------------------------------------------------------
def test_bernstein_halfwidth_solves_its_equation():
    for n, var, bound, delta in ((100, 0.2, 1.0, 0.01), (5000, 0.09, 1.0, 1e-8)):
        lam = plots.bernstein_halfwidth(n, var, bound, delta)
        assert math.isclose(2 * math.exp(-n * lam * lam / (2 * (var + bound * lam / 3))),
                            delta, rel_tol=1e-9)


def test_band_for_any_readings_covers_every_possible_mixture():
    """The no-readings band uses the largest p(1-p) over [P_lo, P_hi]: never narrower than
    the band of any actual mixture."""
    grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, 4))
    widths = np.ones(grid.n)
    any_band = plots._any_readings_halfwidths(widths, float(grid.p_lo), float(grid.p_hi),
                                              1000, 0.01)
    for xs in ([Fraction(23.5)], READINGS, [Fraction(50)] * 3):
        mix = plots.mixture_probabilities(grid, xs, np.arange(grid.n + 1))
        assert np.all(plots.band_halfwidths(mix, widths, 1000, 0.01) <= any_band + 1e-15)


# ---- readings behind the reports ---------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    st = Store(str(tmp_path / "zeal.db"))
    yield st
    st.close()


def test_aligned_readings_follow_each_device_in_sequence_order(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    # device A's frames stored out of order (seq 1 before seq 0), B's between them
    fill(store, prof, DEV_A, [[1, 2]], first_seq=1)
    fill(store, prof, DEV_B, [[3, 4, 5]])
    fill(store, prof, DEV_A, [[6, 7, 8]], first_seq=0)
    truth = {DEV_A: [10.0, 11.0, 12.0, 13.0, 14.0], DEV_B: [20.0, 21.0, 22.0]}
    data = Loaded(store, False)
    got = plots.aligned_readings(data, truth)
    # stored order: A seq 1 (its readings 3, 4), B seq 0 (0..2), A seq 0 (0..2)
    assert got == {prof.fingerprint: [13.0, 14.0, 20.0, 21.0, 22.0, 10.0, 11.0, 12.0]}
    assert data.offsets(prof.fingerprint).tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    with pytest.raises(ZealError, match="5 reports stored for 4 readings"):
        plots.aligned_readings(data, {DEV_A: [1.0] * 4, DEV_B: truth[DEV_B]})
    with pytest.raises(ZealError, match="no readings given for device"):
        plots.aligned_readings(data, {DEV_A: truth[DEV_A]})


def test_device_names():
    assert plots.device_name(b"demo-000") == "demo-000"
    assert plots.device_name(b"ab\0\0\0\0\0\0") == "ab"          # HELLO's zero padding
    assert plots.device_name(DEV_A) == DEV_A.hex()
    assert plots.device_name(b"a\0b\0\0\0\0\0") == "6100620000000000"
    assert plots.device_name(b"\0" * 8) == "00" * 8
    assert plots.device_name(b"tab\tname") == b"tab\tname".hex()


# ---- the files ---------------------------------------------------------------------------------
def _png(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return data[:8] == PNG and len(data) > 10_000


def test_plots_with_and_without_readings(store, tmp_path):
    pytest.importorskip("matplotlib")
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 1.0, 16)
    rng = np.random.default_rng(3)
    fill(store, p4, DEV_A, [rng.integers(0, p4.n_cells, 64) for _ in range(4)])
    fill(store, p16, DEV_B, [rng.integers(0, p16.n_cells, 64) for _ in range(4)])
    plain = plots.plot_store(store, str(tmp_path / "plain"))
    truth = {DEV_A: list(rng.uniform(*HUMIDITY, 256)), DEV_B: list(rng.uniform(*HUMIDITY, 256))}
    known = plots.plot_store(store, str(tmp_path / "known"), readings=truth, unit="%RH")
    for paths in (plain, known):
        assert sorted(os.path.basename(p) for p in paths) == sorted(
            "%s-%s.png" % (kind, p.fingerprint[:8]) for kind in ("histogram", "running-mean")
            for p in (p4, p16))
        assert all(_png(p) for p in paths)
    # the drawings differ: the second has the mixture, its band and the true means
    assert all(open(a, "rb").read() != open(b, "rb").read() for a, b in zip(plain, known))


def test_histogram_data_refuses_a_reading_count_that_does_not_match():
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    with pytest.raises(ZealError, match="3 readings for 2 reports"):
        plots.histogram_data(prof, [1, 2], [30.0, 40.0, 50.0])


# ---- statistical: the demo's histogram against the mixture -----------------------------------
FALSE_FAILURE = 1e-6   # the probability that the consistency check below fails falsely
DEMO_SEED = 8


@pytest.fixture(scope="module")
def seeded_demo(tmp_path_factory):
    from zeal.demo import run_demo

    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        doc = run_demo(db=db, seed=DEMO_SEED, progress=False)
    return db, doc


def test_demo_histogram_is_consistent_with_the_mixture(seeded_demo):
    """Every cell's observed fraction of the seeded demo's reports is within the Bernstein
    band of the exact mixture over the demo's true readings, all cells at once, at a
    false-failure rate of FALSE_FAILURE; and the same check rejects the curve the old plot
    drew, P(j | x = calibrated mean), so it has power."""
    db, doc = seeded_demo
    readings = [float(t) for t in aarhus("humidity", 5000)]
    with open_existing(db, readonly=True) as store:
        data = Loaded(store, True)                        # seeded: test-mode frames
        (fp,) = data.by_fp
        prof = data.profiles[fp]
        j = data.offsets(fp)
    assert j.size == len(readings) == doc["overall"]["n"]
    h = plots.histogram_data(prof, j, readings, confidence=1 - FALSE_FAILURE)
    assert int(h["counts"].sum()) == j.size
    dev = np.abs(h["observed"] - h["expected"])
    assert np.all(dev <= h["band"]), (dev / h["band"]).max()
    grid = ExactGrid(prof)
    single = plots.cell_probabilities(grid, Fraction(doc["overall"]["mean_calibrated"]),
                                      h["edges"])
    assert np.any(np.abs(h["observed"] - single) > h["band"])


def test_demo_plots_show_the_mixture(seeded_demo, tmp_path):
    pytest.importorskip("matplotlib")
    db, _ = seeded_demo
    readings = [float(t) for t in aarhus("humidity", 5000)]
    ids = [(b"demo-%03d" % i) for i in range(4)]
    truth = dict(zip(ids, [readings[i:i + 1250] for i in range(0, 5000, 1250)]))
    with open_existing(db, readonly=True) as store:
        paths = plots.plot_store(store, str(tmp_path), include_vector=True, readings=truth,
                                 unit="%RH")
    assert len(paths) == 2 and all(_png(p) for p in paths)
