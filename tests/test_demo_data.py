"""`zeal demo --data FILE` (zeal.demo.data): your own readings through the same virtual boards,
collector, store and analysis (issue 22). The expected figures are recomputed here from the
file written by the test, never copied from the demo's output."""
import json
from fractions import Fraction

import pytest

from zeal import cli
from zeal.demo import data as D
from zeal.errors import ZealError

# 120 temperatures in degC, 0.25 apart in a sawtooth (exact in binary: the true mean is exact)
TEMPS = [18.0 + 0.25 * (i % 29) for i in range(120)]


def _write(path, text):
    path.write_text(text)
    return str(path)


def _mean(xs):
    return float(sum(Fraction(x) for x in xs) / len(xs))


def test_the_column_is_read_with_or_without_a_header(tmp_path):
    with_header = _write(tmp_path / "a.csv", "time,temp_c\n" + "".join(
        "%d,%r\n" % (i, x) for i, x in enumerate(TEMPS)))
    assert D.read_column(with_header, "temp_c") == ("temp_c", TEMPS)
    bare = _write(tmp_path / "b.csv", "".join("%r\n" % x for x in TEMPS))
    assert D.read_column(bare, None) == ("1", TEMPS)
    two = _write(tmp_path / "c.csv", "".join("%d,%r\n" % (i, x) for i, x in enumerate(TEMPS)))
    assert D.read_column(two, "2") == ("2", TEMPS)


@pytest.mark.parametrize("text, column, message", [
    ("a,b\n1,2\n", None, "has 2 columns (a, b): choose one with --column"),
    ("a,b\n1,2\n", "c", "has no column 'c'"),
    ("a\n1\nx\n", None, "line 3: column 'a' is not a finite number: 'x'"),
    ("a\n1\nnan\n", None, "line 3: column 'a' is not a finite number"),
    ("a\n", None, "column 'a' has no values"),
    ("", None, "empty file"),
])
def test_a_bad_file_is_one_line_naming_the_problem(tmp_path, text, column, message):
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(ZealError) as info:
        D.from_file(path, column)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_range_is_the_data_s_unless_given_and_says_so(tmp_path):
    path = _write(tmp_path / "t.csv", "t\n" + "".join("%r\n" % x for x in TEMPS))
    d = D.from_file(path)
    assert (d.lo, d.hi, d.range_from_data, d.outside) == (min(TEMPS), max(TEMPS), True, 0)
    d = D.from_file(path, value_range=(19.0, 22.0), unit="degC")
    assert (d.lo, d.hi, d.range_from_data, d.unit) == (19.0, 22.0, False, "degC")
    assert d.outside == sum(1 for x in TEMPS if not 19.0 <= x <= 22.0) > 0
    with pytest.raises(ZealError):
        D.from_file(path, value_range=(5.0, 5.0))
    flat = _write(tmp_path / "flat.csv", "t\n3\n3\n3\n")
    with pytest.raises(ZealError) as info:
        D.from_file(flat)
    assert "--range" in str(info.value)


@pytest.mark.parametrize("argv, message", [
    (["demo", "--column", "t"], "--column: only with --data FILE"),
    (["demo", "--data", "x.csv", "--mqtt"], "replays the shipped data only"),
    (["demo", "--data", "w.csv", "--column", "a", "--column", "b"], "--column is given 2 times"),
    (["demo", "--data", "w.csv", "--attributes", "--range", "0", "1"],
     "--range is given 1 times for 2 columns (a, b)"),
    (["demo", "--data", "w.csv", "--shuffle", "--unit", "C", "--unit", "D", "--unit", "E"],
     "--unit is given 3 times for 2 columns"),
    (["demo", "--data", "w.csv", "--attributes", "--bits", "3"], "--mechanism and --bits are"),
    (["demo", "--data", "missing.csv"], "cannot read --data missing.csv"),
])
def test_option_mistakes_are_one_line_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "w.csv", "a,b\n1,2\n3,4\n5,6\n7,8\n")
    assert cli.main(argv) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_your_readings_through_the_command(tmp_path, capsys):
    """The file's column through the virtual boards: every reading stored, the true mean the
    file's, the unit and the range in the document."""
    path = _write(tmp_path / "room.csv", "time,temp_c\n" + "".join(
        "%d,%r\n" % (i, x) for i, x in enumerate(TEMPS)))
    argv = ["demo", "--data", path, "--column", "temp_c", "--range", "15", "30", "--unit",
            "degC", "--devices", "2", "--json"]
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    o, d = doc["overall"], doc["demo"]
    assert o["n"] == o["readings"] == len(TEMPS)
    assert o["true_mean"] == _mean(TEMPS)
    assert d["unit"] == "degC" and d["range"] == [15.0, 30.0] and not d["range_from_data"]
    assert d["dataset"].endswith("column temp_c, %d readings" % len(TEMPS))


@pytest.mark.statistical
@pytest.mark.parametrize("mechanism", ["grid", "pm"])
def test_the_estimate_of_your_readings_covers_their_mean(tmp_path, mechanism):
    """Seeded boards (vector-mode keys from seed 5: reproducible), a grid and a table profile:
    the 99 % interval holds the file's true mean (false-failure rate at most 1 % per
    mechanism over seeds; this seed is fixed, so the test is deterministic)."""
    from zeal.demo import run_demo

    path = _write(tmp_path / "room.csv", "temp_c\n" + "".join("%r\n" % x for x in TEMPS))
    data = D.from_file(path, value_range=(15.0, 30.0), unit="degC")
    doc = run_demo(data=data, devices=2, progress=False, seed=5, mechanism=mechanism)
    lo, hi = doc["overall"]["ci99"]
    assert doc["overall"]["n"] == len(TEMPS)
    assert lo <= _mean(TEMPS) <= hi


# ---- a tuple a tick: --attributes and --shuffle ----------------------------------------------
# 3,000 rows of a room: temperature (degC) and humidity (%RH), exact in binary
ROOM = [(18.0 + 0.25 * (i % 29), 40.0 + 0.5 * (i % 53)) for i in range(3000)]


def _room(tmp_path):
    return _write(tmp_path / "room.csv", "temp_c,humidity\n" + "".join(
        "%r,%r\n" % r for r in ROOM))


def test_tuples_are_read_per_column_with_their_ranges(tmp_path):
    path = _room(tmp_path)
    t = D.tuples_from_file(path, ranges=[(15.0, 30.0), (0.0, 100.0)], units=["degC", "%RH"])
    assert (t.names, t.rows, t.units) == (("temp_c", "humidity"), ROOM, ["degC", "%RH"])
    assert (t.ranges, t.range_from_data, t.outside) == ([(15.0, 30.0), (0.0, 100.0)], False, 0)
    t = D.tuples_from_file(path, ["humidity"], count=10)
    assert t.rows == [(h,) for _, h in ROOM[:10]] and t.range_from_data
    assert t.ranges == [(min(h for _, h in ROOM[:10]), max(h for _, h in ROOM[:10]))]
    t = D.tuples_from_file(path, ranges=[(19.0, 22.0), (0.0, 100.0)])
    assert t.outside == sum(1 for x, _ in ROOM if not 19.0 <= x <= 22.0) > 0


def test_attribute_names_from_columns():
    from zeal.demo.attributes import attribute_names

    assert attribute_names(["temp_c", "rel. humidity", "a" * 20]) == (
        "temp-c", "rel--humidity", "a" * 16)
    with pytest.raises(ZealError):
        attribute_names(["a_b", "a.b"])


def _within(estimate, interval, truth, slack=1.5):
    half = (interval[1] - interval[0]) / 2
    return abs(estimate - truth) <= slack * half


@pytest.mark.statistical
def test_your_tuples_through_the_multi_attribute_boards(tmp_path, capsys):
    """`zeal demo --attributes --data FILE`: every row stored through the virtual boards, each
    attribute's true mean the file's, and its estimate within 1.5 times the 99 % Bernstein
    half-width of it (the boards draw fresh keys; about 5 standard deviations: a false failure
    about once in a million runs)."""
    path = _room(tmp_path)
    assert cli.main(["demo", "--attributes", "--data", path, "--range", "15", "30", "--range",
                     "0", "100", "--unit", "degC", "--unit", "%RH", "--devices", "2",
                     "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["overall"]["n"] == len(ROOM) and doc["demo"]["boards"] == "virtual"
    assert not doc["demo"]["range_from_data"]
    attrs = {a["name"]: a for a in doc["attributes"]}
    assert set(attrs) == {"temp-c", "humidity"}
    for j, (name, unit) in enumerate((("temp-c", "degC"), ("humidity", "%RH"))):
        truth = _mean([r[j] for r in ROOM])
        assert attrs[name]["true_mean"] == truth and attrs[name]["unit"] == unit
        assert _within(attrs[name]["mean_calibrated"], attrs[name]["ci99"], truth), attrs[name]


@pytest.mark.statistical
def test_your_tuples_through_the_shuffler(tmp_path, capsys):
    """`zeal demo --shuffle --data FILE`: d = the file's 2 columns, the batch every row, each
    coordinate's estimate within 4 times the root of the MSE bound (in [0, 1]) of the file's
    true mean (the bound is on the expected squared error of the whole vector: by Markov a
    miss has probability below 1/16 per run at worst, far less in fact: the expected MSE is
    a third of the bound here and the error near Gaussian, about 7 standard deviations)."""
    path = _room(tmp_path)
    assert cli.main(["demo", "--shuffle", "--data", path, "--range", "15", "30", "--range",
                     "0", "100", "--devices", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in doc["coordinates"]] == ["temp_c", "humidity"]
    assert doc["shuffle"]["messages"] == len(ROOM) and doc["identities_stored"] == 0
    for j, c in enumerate(doc["coordinates"]):
        assert c["true_mean"] == _mean([r[j] for r in ROOM])
        assert abs(c["estimate01"] - c["true_mean01"]) <= 4 * doc["mse_bound"] ** 0.5, c
