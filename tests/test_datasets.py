"""zeal.analysis.datasets: shipped sets (counts, ranges, exact text), seeded synthetic sets
(reproducible, in range, their shape), and the CSV column loader's one-line errors."""
import math
from fractions import Fraction

import numpy as np
import pytest

from zeal.analysis import datasets
from zeal.errors import InputError

def test_aarhus_humidity_count_and_range():
    h = datasets.aarhus("humidity", 5000)
    assert len(h) == 5000 and all(isinstance(v, str) for v in h)
    vals = [Fraction(v) for v in h]
    lo, hi = datasets.HUMIDITY_RANGE
    # the paper's range is the data's extremes +- 1.0
    assert min(vals) - 1 == Fraction(str(lo)) and max(vals) + 1 == Fraction(str(hi))
    assert datasets.out_of_range(h, lo, hi) == (0, 0)


def test_chicago_fares_count_range_and_out_of_range_kept():
    f = datasets.chicago_fares()
    assert len(f) == datasets.TAXI_FARES_SHIPPED == 1000
    vals = [Fraction(v) for v in f]
    lo, hi = datasets.TAXI_RANGE
    below, above = datasets.out_of_range(f, lo, hi)
    assert below == sum(1 for v in vals if v < 1) and above == sum(1 for v in vals if v > 120)
    assert below > 0 and above == 0          # zero fares exist and are kept, not dropped
    raw = sum(vals) / len(vals)
    clamped = datasets.clamped_mean(f, lo, hi)
    # each zero fare becomes 1.0: the clamped mean is the raw one plus below/1000 exactly
    assert clamped == raw + Fraction(below, len(vals))
    assert datasets.chicago_fares(10) == f[:10]
    with pytest.raises(ValueError):
        datasets.chicago_fares(1001)


def test_chicago_fares_match_the_source_notes():
    # figures stated by the shared data notes for the source's first 1000 fares
    vals = [Fraction(v) for v in datasets.chicago_fares()]
    assert min(vals) == 0 and max(vals) == Fraction("50.25")
    assert sum(1 for v in vals if v == 0) == 4
    assert sum(vals) / len(vals) == Fraction("10.40119")
    assert datasets.chicago_fares(3) == ["27.05", "5.85", "16.65"]


@pytest.mark.parametrize("maker", [datasets.uniform, datasets.skewed])
def test_synthetic_seeded_in_range(maker):
    a = maker(2000, 900, 1100, seed=7)
    assert a == maker(2000, 900, 1100, seed=7)
    assert a != maker(2000, 900, 1100, seed=8)
    vals = [Fraction(v) for v in a]
    assert len(vals) == 2000 and all(900 <= v <= 1100 for v in vals)
    assert all(len(v.split(".")[1]) <= 2 for v in a if "." in v)


def test_synthetic_shapes():
    # uniform on [0, 1] has mean 1/2 and sd 1/sqrt(12); skewed Beta(1, 5) has mean 1/6.
    # n = 20000: the sample mean's sd is <= 0.29/sqrt(20000) = 0.0021; 6 sd (false-failure
    # rate below 2e-9 by the normal tail; the rounding to 4 digits adds at most 5e-5).
    n = 20000
    tol = 6 * (1 / math.sqrt(12)) / math.sqrt(n) + 5e-5
    u = np.array([float(v) for v in datasets.uniform(n, 0, 1, seed=1, digits=4)])
    s = np.array([float(v) for v in datasets.skewed(n, 0, 1, seed=1, digits=4)])
    assert abs(u.mean() - 0.5) < tol
    assert abs(s.mean() - 1 / 6) < tol
    assert np.median(s) < np.median(u)


def test_constant():
    assert datasets.constant(3, "12.5") == ["12.5"] * 3
    assert datasets.constant(2, 1000) == ["1000.0"] * 2
    with pytest.raises(ValueError):
        datasets.constant(0, 1)


def _write(tmp_path, text, name="d.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_load_csv_column(tmp_path):
    p = _write(tmp_path, "a,b\n1.5, 2\n-3,4e1\n\n5,6\n")
    assert datasets.load_csv_column(p, "a") == ["1.5", "-3", "5"]
    assert datasets.load_csv_column(p, "b") == ["2", "4e1", "6"]
    assert datasets.load_csv_column(p, "b", count=2) == ["2", "4e1"]


@pytest.mark.parametrize("text,column,words", [
    ("a,b\n1,2\n", "c", ["no column 'c'", "'a', 'b'"]),
    ("a,b\n1,2\n3,x\n", "b", ["line 3", "'x'", "not a finite number"]),
    ("a,b\n1,2\n3,\n", "b", ["line 3", "empty"]),
    ("a,b\n1,2\n3,nan\n", "b", ["line 3", "'nan'"]),
    ("a,b\n1,2\n3,1_0\n", "b", ["line 3", "'1_0'"]),
    ("", "a", ["empty file"]),
    ("a\n", "a", ["no values"]),
])
def test_load_csv_column_errors(tmp_path, text, column, words):
    p = _write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        datasets.load_csv_column(p, column)
    msg = str(exc.value)
    assert "\n" not in msg and p in msg
    for w in words:
        assert w in msg


def test_load_csv_column_unreadable(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        datasets.load_csv_column(str(tmp_path / "missing.csv"), "a")
    p = tmp_path / "bin.csv"
    p.write_bytes(b"a\n\xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        datasets.load_csv_column(str(p), "a")
