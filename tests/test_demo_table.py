"""`zeal demo --mechanism optimal` (zeal.demo with a table profile): the designer's profile runs
on the virtual boards (the firmware's table sampler under the MicroPython unix port), the
collector stores the cells, and the analysis gives the exact table estimate with AVG* marked not
applicable; the document keeps the grid demo's layout.

One seeded run (vector-mode keys derived from the seed: reproducible) serves every test. Every
expected figure is recomputed here from the data set, the stored frames or the profile's exact
table, never copied from the demo's output.
"""
import contextlib
import io
import json
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from zeal import demo
from zeal.analysis import analyze as A
from zeal.analysis.datasets import aarhus
from zeal.analysis.decode import Loaded
from zeal.collect.store import open_existing
from zeal.errors import ZealError

COUNT, DEVICES, EPSILON, SEED, BITS = 1500, 3, 2.0, 23, 4


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        doc = demo.run_demo(db=db, count=COUNT, devices=DEVICES, epsilon=EPSILON, seed=SEED,
                            mechanism="optimal", bits=BITS, paper=True)
    return db, doc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def prof():
    """The designer is deterministic: the same inputs give the same profile."""
    return demo.build_profile(23.5, 83.9, EPSILON, "optimal", BITS)


def readings():
    return [float(t) for t in aarhus("humidity", COUNT)]


def test_the_boards_ran_the_designed_table(run, prof):
    db, doc, out, err = run
    assert doc["overall"]["fingerprint"] == prof.fingerprint
    assert doc["overall"]["kind"] == "table" and doc["overall"]["bits"] == BITS
    assert doc["overall"]["n"] == COUNT and doc["demo"]["mechanism"] == "optimal"
    assert "designed in" in err and "optimal table" in err
    with open_existing(db, readonly=True) as store:
        data = Loaded(store, include_vector=True)
        cells = data.offsets(prof.fingerprint)
    # the exact estimate from the stored cells: lo + (hi - lo) sum a_j / (n Q)
    lo, hi = Fraction(prof.lo), Fraction(prof.hi)
    want = lo + (hi - lo) * Fraction(sum(prof.values[j] for j in cells.tolist()),
                                     COUNT * prof.value_den)
    assert doc["overall"]["mean_calibrated"] == float(want)
    true = sum(Fraction(x) for x in readings()) / COUNT
    assert doc["overall"]["true_mean"] == float(true)
    # seeded, so deterministic; a fresh run would miss its 99% interval with prob. <= 1%
    low, high = doc["overall"]["ci99"]
    assert low < true < high


def test_cells_follow_the_exact_law(run, prof):
    """The counts of the cells against the exact mixture (1/n) sum_i P(j | x_i) of the table
    over the replayed readings: cells of probability zero never appear (exact), the others pass
    a chi-square test at false-failure rate 1e-4 (fixed seed: the outcome is reproducible)."""
    from scipy.stats import chi2
    db = run[0]
    with open_existing(db, readonly=True) as store:
        cells = Loaded(store, include_vector=True).offsets(prof.fingerprint)
    counts = np.bincount(cells, minlength=prof.n_cells)
    table = prof.table
    mix = [Fraction(0)] * prof.n_cells
    for x, c in Counter(readings()).items():
        for j, p in enumerate(table.distribution(Fraction(x))):
            mix[j] += c * p
    expected = [float(m) for m in mix]           # expected counts over the COUNT readings
    used = [j for j in range(prof.n_cells) if mix[j] > 0]
    assert all(counts[j] == 0 for j in range(prof.n_cells) if mix[j] == 0)
    stat = sum((counts[j] - expected[j]) ** 2 / expected[j] for j in used)
    assert stat < chi2.isf(1e-4, len(used) - 1)


def test_layout_is_the_grid_demo_s_with_avg_star_not_applicable(run, prof):
    db, doc, out, _ = run
    with open_existing(db, readonly=True) as store:
        plain = A.analyze(store, include_vector=True)
    assert set(doc["overall"]) - set(plain["overall"]) == {"true_mean", "readings"}
    assert {k: doc["overall"][k] for k in plain["overall"]} == plain["overall"]
    d = doc["demo"]
    for key in ("dataset", "unit", "range", "avg_star", "wire", "privacy"):
        assert key in d
    assert d["avg_star"]["value"] is None and d["avg_star"]["bias"] is None
    assert d["avg_star"]["expected_for_these_readings"] is None
    assert doc["overall"]["avg_star"] is None
    worst = prof.worst_variance()
    assert d["table"]["worst_variance"] == float(worst)
    assert Fraction(d["table"]["worst_variance_exact"]) == worst
    assert d["table"]["cells"] == prof.n_cells and d["table"]["anchor_rows"] == prof.anchors + 1
    ratio = prof.table.privacy_ratio()
    assert d["privacy"]["ratio_bound"] == float(ratio) <= math.exp(EPSILON)
    assert d["wire"]["report_bits"] == BITS
    json.dumps(doc, allow_nan=False)
    assert "mechanism: optimal table profile" in out
    assert "AVG* (the paper's estimator): not applicable" in out
    assert "%RH^2" in out


def test_demo_mechanism_mistakes_are_one_line_errors():
    with pytest.raises(ZealError, match="takes --bits 1 to 6"):
        demo.run_demo(mechanism="pm", bits=9, progress=False)
    from zeal.commands import build_parser
    args = build_parser().parse_args(["demo", "--mechanism", "optimal", "--bits", "3"])
    assert (args.mechanism, args.bits) == ("optimal", 3)
