"""Data sets: the two the Zeal paper uses (shipped, provenance in zeal/data/SOURCES.md),
seeded synthetic sets, and a loader for one column of a user's CSV.

Every reading is returned as exact decimal TEXT (e.g. "35.58"), never a float: the readings
are decimals, the exact mechanism takes them exactly, and `Fraction(text)` gives the exact
true mean a reproduction compares against. `float(text)` is what a float64 device would hold.

- `aarhus(column, count)`: the first `count` values of the Aarhus citylab data
  (humidity: the paper's first 5000, feasible range HUMIDITY_RANGE = [23.5, 83.9]);
- `chicago_fares(count)`: the first `count` (at most 1000) Chicago taxi fares, in USD, in the
  order of the shipped sample; the paper's feasible range is TAXI_RANGE = [1, 120].
  Fares OUTSIDE the range are KEPT, as they are: a device does not drop a reading, the
  mechanism clamps it to the range like any out-of-range reading (x < 1 is privatised as 1).
  Of the first 1000 fares 4 are 0.0 (below 1) and none is above 120; `out_of_range`
  counts them, and a reproduction states the count and compares its estimates with the mean
  of the CLAMPED readings (the quantity the mechanism is unbiased for), beside the raw mean;
- `uniform`, `skewed`, `constant`: seeded synthetic sets on a range, as decimals with a fixed
  number of digits (`digits`);
- `csv_columns(path, columns)`: the values of columns of a user's CSV file (a header line
  naming them, or none), as text; `load_csv_column(path, column)` one named column; a missing
  column, an empty or non-numeric value is one-line `InputError` naming the file and the line.
"""
import csv
import itertools
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from importlib import resources

import numpy as np

from ..errors import InputError

HUMIDITY_RANGE = (23.5, 83.9)  # the Zeal paper's feasible range for Aarhus humidity (%RH)
TAXI_RANGE = (1.0, 120.0)      # the Zeal paper's feasible range for Chicago taxi fares (USD)
TAXI_FARES_SHIPPED = 1000


def _shipped(name: str, column: str, count: int) -> list:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError("count must be a positive integer, got %r" % (count,))
    with resources.files("zeal").joinpath("data/" + name).open("r") as fh:
        rows = csv.DictReader(fh)
        if column not in rows.fieldnames:
            raise ValueError("no column %r (have %s)" % (column, ", ".join(rows.fieldnames)))
        out = []
        for row in rows:
            if len(out) == count:
                break
            out.append(row[column])
    if len(out) < count:
        raise ValueError("only %d rows available, asked for %d" % (len(out), count))
    return out


def shipped_points(name: str) -> list:
    """The (lat, lon) rows, as text, of a shipped point set ("earthquakes.csv",
    "uber-nyc-apr14.csv.gz": SOURCES.md)."""
    import gzip
    import io
    with resources.files("zeal").joinpath("data/" + name).open("rb") as fh:
        data = fh.read()
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    rows = csv.reader(io.StringIO(data.decode("ascii")))
    header = next(rows)
    i, j = header.index("lat"), header.index("lon")
    return [(r[i], r[j]) for r in rows if r]


def aarhus(column: str = "humidity", count: int = 5000) -> list:
    """The first `count` values of one column of the Aarhus citylab data, as text.

    Text, not floats: the readings are decimals and the mechanism takes them exactly.
    """
    return _shipped("aarhus-citylab.csv", column, count)


def chicago_fares(count: int = TAXI_FARES_SHIPPED) -> list:
    """The first `count` Chicago taxi fares (USD) as text, out-of-range fares kept (see the
    module docstring: the mechanism clamps them to TAXI_RANGE)."""
    return _shipped("chicago-taxi-fares.csv", "fare", count)


def out_of_range(readings, lo, hi) -> tuple:
    """(below, above): how many readings lie below lo and above hi, compared exactly."""
    lo, hi = Fraction(lo), Fraction(hi)
    values = [Fraction(r) for r in readings]
    return sum(1 for v in values if v < lo), sum(1 for v in values if v > hi)


def clamped_mean(readings, lo, hi) -> Fraction:
    """The exact mean of the readings clamped to [lo, hi]: what the mechanism estimates."""
    lo, hi = Fraction(lo), Fraction(hi)
    values = [min(max(Fraction(r), lo), hi) for r in readings]
    if not values:
        raise ValueError("no readings")
    return sum(values) / len(values)


# ---- seeded synthetic sets -------------------------------------------------------------------
def _as_text(values: np.ndarray, lo, hi, digits: int) -> list:
    """Values rounded to `digits` decimals, as exact decimal text inside [lo, hi]."""
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        raise ValueError("digits must be an integer in [0, 12], got %r" % (digits,))
    lo_d, hi_d = Decimal(repr(float(lo))), Decimal(repr(float(hi)))
    q = Decimal(1).scaleb(-digits)
    out = []
    for v in values.tolist():
        d = min(max(Decimal(repr(v)).quantize(q), lo_d), hi_d)
        out.append(str(d))
    return out


def _check(count, lo, hi):
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError("count must be a positive integer, got %r" % (count,))
    if not float(lo) < float(hi):
        raise ValueError("range is empty: lo (%r) must be below hi (%r)" % (lo, hi))


def uniform(count: int, lo: float, hi: float, *, seed: int, digits: int = 2) -> list:
    """`count` readings uniform on [lo, hi] (numpy default_rng(seed)), as decimal text."""
    _check(count, lo, hi)
    rng = np.random.default_rng(seed)
    return _as_text(rng.uniform(float(lo), float(hi), count), lo, hi, digits)


def skewed(count: int, lo: float, hi: float, *, seed: int, digits: int = 2,
           shape: float = 5.0) -> list:
    """`count` readings piled up near lo: lo + (hi - lo) * Beta(1, shape) (mean
    lo + (hi - lo)/(1 + shape)), seeded, as decimal text. A long right tail, like fares."""
    _check(count, lo, hi)
    rng = np.random.default_rng(seed)
    return _as_text(float(lo) + (float(hi) - float(lo)) * rng.beta(1.0, shape, count),
                    lo, hi, digits)


def constant(count: int, value) -> list:
    """`count` copies of one reading (as its exact decimal text)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError("count must be a positive integer, got %r" % (count,))
    text = str(value) if isinstance(value, (str, Decimal)) else repr(float(value))
    Fraction(text)  # a number, or ValueError
    return [text] * count


# ---- a column of a user's CSV ----------------------------------------------------------------
def _decimal(text: str) -> bool:
    """A finite decimal number ("35.58", "-4", "1.5e3"; not "nan", "inf" or "1_0")."""
    try:
        return "_" not in text and Decimal(text).is_finite()
    except InvalidOperation:
        return False


def csv_columns(path, columns=None, *, header: bool = True, count: int = None,
                name: str = None) -> tuple:
    """(names, rows): the values of `columns` of the CSV file `path`, each row a tuple of
    decimal text (surrounding spaces dropped; blank lines skipped).

    header: True, the first line names the columns; None, it does when it is not all
    numbers, else the columns are named 1, 2, ... . columns: the names wanted, in order;
    None: every column (a file of one column needs no name). `count` keeps the first
    `count` rows. `name`: how errors call the file (default its path). InputError, one
    line, for an unreadable file, a missing column, and an empty or non-numeric value (with
    its line number, line 1 being the file's first)."""
    name = path if name is None else name
    try:
        fh = open(path, "r", encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError("cannot read %s: %s" % (name, exc.strerror or exc)) from None
    out = []
    with fh:
        try:
            lines = csv.reader(fh)
            first = next((r for r in lines if r and any(c.strip() for c in r)), None)
            if first is None:
                raise InputError("%s: empty file (%s)" % (name, "a header line naming the "
                                 "columns is needed" if header else "no readings"))
            first = [c.strip() for c in first]
            named = header or (header is None and not all(_decimal(c) for c in first))
            names = first if named else [str(i + 1) for i in range(len(first))]
            wanted = names if columns is None else list(columns)
            for c in wanted:
                if c not in names:
                    raise InputError("%s has no column %r (it has %s%s)" % (
                        name, c, ", ".join(map(repr, names)),
                        "" if named else "; a file without a header names them 1, 2, ..."))
            idx = [names.index(c) for c in wanted]
            pending = [] if named else [(lines.line_num, first)]
            for line, row in itertools.chain(pending, ((lines.line_num, r) for r in lines)):
                if count is not None and len(out) >= count:
                    break
                if not row or not any(cell.strip() for cell in row):
                    continue  # a blank line
                values = []
                for c, i in zip(wanted, idx):
                    text = row[i].strip() if i < len(row) else ""
                    if not text:
                        raise InputError("%s line %d: column %r is empty" % (name, line, c))
                    if not _decimal(text):
                        raise InputError("%s line %d: column %r is not a finite number: %r"
                                         % (name, line, c, text[:40]))
                    values.append(text)
                out.append(tuple(values))
        except UnicodeDecodeError:
            raise InputError("%s: not UTF-8 text" % name) from None
        except csv.Error as exc:
            raise InputError("%s: not a CSV file (%s)" % (name, exc)) from None
    if not out:
        raise InputError("%s: column %s has no values" % (name, ", ".join(map(repr, wanted))))
    return wanted, out


def load_csv_column(path, column: str, count: int = None) -> list:
    """The values of `column` (by header name) of the CSV file `path`, as decimal text
    (csv_columns: a header line is needed)."""
    return [v for (v,) in csv_columns(path, [column], count=count)[1]]
