"""`zeal demo` (zeal.demo): it names its devices, shows each device's true mean beside its
estimate, explains AVG*, the wire cost and what eps protects, and its document is `zeal
analyze`'s with the demo's additions (one layout for both).

One seeded run (vector-mode keys derived from the seed, so it is reproducible) serves every
test; every expected figure is recomputed here from the data set, the store or the exact grid,
never copied from the demo's output.
"""
import contextlib
import io
import json
from fractions import Fraction

import numpy as np
import pytest

from zeal import demo
from zeal.analysis import analyze as A
from zeal.analysis import plots
from zeal.analysis.datasets import aarhus
from zeal.collect.store import open_existing
from zeal.mechanism.grid import choose
from zeal.mechanism.grid.estimate import Estimator
from zeal.mechanism.grid.exact import ExactGrid

COUNT, DEVICES, EPSILON, SEED = 3000, 3, 2.0, 11


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        doc = demo.run_demo(db=db, count=COUNT, devices=DEVICES, epsilon=EPSILON, seed=SEED,
                            paper=True)  # the text with the paper's AVG* line too
    return db, doc, out.getvalue(), err.getvalue()


def readings():
    return [float(t) for t in aarhus("humidity", COUNT)]


def slices():
    xs, share = readings(), -(-COUNT // DEVICES)
    return [xs[i:i + share] for i in range(0, COUNT, share)]


def test_devices_are_named_and_show_their_true_means(run):
    _, doc, out, err = run
    names = ["demo-%03d" % i for i in range(DEVICES)]
    assert [d["name"] for d in doc["devices"]] == names
    assert [d["device"] for d in doc["devices"]] == [n.encode().hex() for n in names]
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for d, part in zip(doc["devices"], slices()):
        true = float(sum(Fraction(x) for x in part) / len(part))
        assert d["true_mean"] == true and d["readings"] == len(part) == d["n"]
        # the device's row shows its estimate and its own true mean side by side
        assert "%.6f" % d["mean_calibrated"] in lines[d["name"]]
        assert "%.6f" % true in lines[d["name"]]
        assert d["name"] in err                          # progress names the boards too
    means = [d["true_mean"] for d in doc["devices"]]
    assert len(set(means)) == DEVICES                    # the slices differ
    total = float(sum(Fraction(x) for x in readings()) / COUNT)
    assert doc["overall"]["true_mean"] == total and "%.6f" % total in lines["overall"]


def test_one_layout_with_analyze(run):
    """The demo's document has every key of `zeal analyze`'s, at the top, overall and per
    device, with the same values; the demo only adds."""
    db, doc, _, _ = run
    with open_existing(db, readonly=True) as store:
        plain = A.analyze(store, include_vector=True)    # seeded run: test-mode frames
    assert set(plain) <= set(doc)
    assert set(plain["overall"]) <= set(doc["overall"])
    assert len(plain["devices"]) == len(doc["devices"])
    for mine, theirs in zip(doc["devices"], plain["devices"]):
        assert set(theirs) <= set(mine)
        assert {k: mine[k] for k in theirs} == theirs
    assert {k: doc["overall"][k] for k in plain["overall"]} == plain["overall"]
    assert doc["profiles"] == plain["profiles"]
    assert set(doc["overall"]) - set(plain["overall"]) == {"true_mean", "readings"}
    assert set(doc["devices"][0]) - set(plain["devices"][0]) == {"true_mean", "readings"}
    json.dumps(doc, allow_nan=False)                     # plain JSON


def test_avg_star_is_labelled_and_its_bias_is_the_exact_one(run):
    _, doc, out, _ = run
    a = doc["demo"]["avg_star"]
    prof = choose.build(23.5, 83.9, EPSILON, bits="auto")
    assert doc["overall"]["fingerprint"] == prof.fingerprint
    # E[AVG*] from the exact mixture of the reports' distribution (zeal.analysis.plots)
    grid = ExactGrid(prof)
    mix = plots.mixture_probabilities(grid, readings(), np.arange(grid.n + 1), exact=True)
    mean_j = sum(j * p for j, p in enumerate(mix))
    expected = Estimator(prof).avg_star(mean_j * COUNT, COUNT)
    assert a["expected_for_these_readings"] == float(expected)
    true = sum(Fraction(x) for x in readings()) / COUNT
    assert a["bias"] == float(expected - true) and abs(a["bias"]) > 1
    assert a["value"] == doc["overall"]["avg_star"]
    line = next(x for x in out.splitlines() if x.startswith("AVG*"))
    assert "the Zeal paper's estimator" in line and "%d-cell grid" % prof.n_cells in line


def test_wire_line_is_measured_from_the_stream(run):
    db, doc, out, _ = run
    w = doc["demo"]["wire"]
    with open_existing(db, readonly=True) as store:
        read = store.link_bytes()
    n = doc["overall"]["n"]
    assert w["bytes_read"] == read and w["bits_per_report"] == 8 * read / n
    assert w["report_bits"] == doc["overall"]["bits"]
    assert w["hello_status_bits_per_report"] == \
        w["bits_per_report"] - doc["overall"]["data_bits_per_report"] > 0
    line = next(x for x in out.splitlines() if x.startswith("wire:"))
    assert ("%.2f bits per report" % w["bits_per_report"]) in line
    assert "vs 64 for a raw double" in line and "HELLO/STATUS" in line


def test_privacy_lines_say_what_eps_protects_and_how_it_adds_up(run):
    _, doc, out, _ = run
    p = doc["demo"]["privacy"]
    assert p["epsilon"] == EPSILON and p["protects"] == "one reading"
    assert p["readings_per_day"] == 24 * 60 and p["epsilon_per_board_day"] == 24 * 60 * EPSILON
    text = out[out.index("privacy:"):]
    assert "protects ONE reading" in text and "sequential composition" in text
    assert "eps = %g for one board's day" % (24 * 60 * EPSILON) in text
    prof_ratio = float(ExactGrid(choose.build(23.5, 83.9, EPSILON, bits="auto")).privacy_ratio)
    assert p["ratio_bound"] == prof_ratio <= np.exp(EPSILON)


def test_the_paper_s_estimator_is_shown_only_when_asked(tmp_path, capsys):
    """Plain words by default (issue 22): the text speaks of the estimate; AVG*, Abar and
    E[j | x] only with --paper, each said what it is."""
    from zeal import cli

    assert cli.main(["demo", "--count", "200", "--devices", "1"]) == 0
    plain = capsys.readouterr().out
    assert "AVG*" not in plain and "Abar" not in plain and "E[j" not in plain
    assert "private estimate of the mean" in plain and "estimate" in plain.splitlines()[0]
    assert cli.main(["demo", "--count", "200", "--devices", "1", "--paper"]) == 0
    paper = capsys.readouterr().out
    line = next(x for x in paper.splitlines() if x.startswith("AVG*"))
    assert "the Zeal paper's estimator: the mean of the perturbed doubles" in line


def test_analyze_table_names_devices(run):
    db, _, _, _ = run
    with open_existing(db, readonly=True) as store:
        doc = A.analyze(store, include_vector=True)
    table = A.format_table(doc)
    for i in range(DEVICES):
        assert ("\ndemo-%03d " % i) in table
    assert "AVG*" not in table and "a raw double: 64" in table   # plain words by default
    assert "the Zeal paper's estimator" in A.format_table(doc, paper=True)


def test_bad_arguments_are_one_line_errors(tmp_path):
    from zeal.errors import ZealError
    with pytest.raises(ZealError, match="--count must be at least"):
        demo.run_demo(count=2, devices=3, progress=False)
    with pytest.raises(ZealError, match="--devices must be 1 to 16"):
        demo.run_demo(count=100, devices=17, progress=False)
    (tmp_path / "x.db").write_bytes(b"")
    with pytest.raises(ZealError, match="exists"):
        demo.run_demo(db=str(tmp_path / "x.db"), progress=False)
