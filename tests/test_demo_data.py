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
    ("a\n1\nx\n", None, "line 3: column a is not a finite number: 'x'"),
    ("a\n1\nnan\n", None, "line 3: column a is not a finite number"),
    ("a\n", None, "column a has no values"),
    ("", None, "is empty"),
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
    (["demo", "--data", "x.csv", "--attributes"], "does not combine with --attributes"),
    (["demo", "--data", "missing.csv"], "cannot read --data missing.csv"),
])
def test_option_mistakes_are_one_line_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
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
