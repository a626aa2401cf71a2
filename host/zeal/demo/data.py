"""What a scalar demo replays: the shipped Aarhus humidity readings (the default), or a
column of the user's own file (`zeal demo --data FILE [--column C] [--range LO HI]`).

A file is CSV: a header line naming the columns, or no header when its first line is all
numbers (columns are then named 1, 2, ...); one column needs no --column. Every value of the
column must be a finite number (a one-line error names the first that is not).

The range [LO, HI] is part of the profile, so it is public and must be fixed before any
reading is taken: taken from the data (its minimum and maximum, when --range is not given)
it depends on the readings and is not private -- fine for a trial on your own data, said so
in a line and in the JSON ("range_from_data": true), never for the field. Readings outside
a given range are clamped to it by the mechanism (counted, and said).
"""
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..analysis import datasets
from ..errors import InputError, ZealError
from .common import aarhus_rows, dataset_text

HUMIDITY_UNIT = "%RH"  # the Aarhus humidity readings: relative humidity in percent


@dataclass
class DemoData:
    readings: list          # floats, in the order the boards replay them
    lo: float
    hi: float
    unit: str               # "" when the file's unit is not known
    label: str              # what the readings are, for the document and the text
    range_from_data: bool = False
    outside: int = 0        # readings outside [lo, hi] (clamped by the mechanism)


def aarhus_humidity(count: int) -> DemoData:
    """The first `count` Aarhus humidity readings, on the data set's documented range."""
    try:
        values = [float(v) for v in datasets.aarhus("humidity", count)]
    except ValueError as exc:
        raise ZealError(str(exc)) from None
    lo, hi = datasets.HUMIDITY_RANGE
    return DemoData(values, lo, hi, HUMIDITY_UNIT,
                    "Aarhus citylab humidity, first %d readings" % len(values))


@dataclass
class TupleData:
    """What a tuple demo replays (--attributes, --shuffle): one reading tuple a tick."""
    rows: list              # tuples of floats, one per tick, in replay order
    names: tuple            # the columns' names, in the tuples' order
    ranges: list            # [(lo, hi)] per column
    units: list             # per column ("" when not known)
    label: str
    range_from_data: bool = False
    outside: int = 0        # readings (of any column) outside their range (clamped)


def _one(values, what):
    """The one value given with a repeatable option, or None; more is an error."""
    values = values or []
    if len(values) > 1:
        raise ZealError("%s is given %d times: one reading a tick has one column" % (
            what, len(values)))
    return values[0] if values else None


def _read(path, columns, count):
    """(names, rows of floats) of `columns` (None: every column) of the file (module doc)."""
    try:
        names, rows = datasets.csv_columns(path, columns, header=None, name="--data " + path)
    except InputError as exc:
        raise ZealError(str(exc)) from None
    if count is not None:
        if count > len(rows):
            raise ZealError("--count %d: --data %s has %d readings in column %s"
                            % (count, path, len(rows), ", ".join(names)))
        rows = rows[:count]
    return tuple(names), [tuple(float(v) for v in r) for r in rows]


def _range(value_range, column, path, values):
    """(lo, hi, from data) of one column: the given range, or the data's own."""
    if value_range is not None:
        lo, hi = (float(v) for v in value_range)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ZealError("--range %g %g: LO must be below HI (finite numbers)" % (lo, hi))
        return lo, hi, False
    lo, hi = min(values), max(values)
    if lo == hi:
        raise ZealError("--data %s: every reading of column %s is %g; give the range the "
                        "sensor can read with --range LO HI" % (path, column, lo))
    return lo, hi, True


def read_column(path: str, column: Optional[str]) -> tuple:
    """(column name, [float]) of one column of the CSV file `path` (see the module doc); a
    file of several columns needs `column`."""
    names, rows = _read(path, None if column is None else [column], None)
    if len(names) != 1:
        raise ZealError("--data %s has %d columns (%s): choose one with --column"
                        % (path, len(names), ", ".join(names)))
    name = names[0]
    return name, [r[0] for r in rows]


def from_file(path: str, column: Optional[str] = None, count: Optional[int] = None,
              value_range: Optional[Sequence[float]] = None, unit: str = "") -> DemoData:
    """The readings of `column` of the file (the first `count` if given), on `value_range`
    or, without one, on the data's own minimum and maximum (not private: module doc)."""
    name, values = read_column(path, column)
    if count is not None:
        if count > len(values):
            raise ZealError("--count %d: --data %s has %d readings in column %s"
                            % (count, path, len(values), name))
        values = values[:count]
    lo, hi, from_data = _range(value_range, name, path, values)
    outside = sum(1 for v in values if not lo <= v <= hi)
    return DemoData(values, lo, hi, unit, "%s, column %s, %d readings" % (path, name, len(values)),
                    range_from_data=from_data, outside=outside)


def scalar_from_args(path, columns, count, ranges, units) -> DemoData:
    """from_file with `zeal demo`'s repeatable --column, --range and --unit (one each)."""
    return from_file(path, _one(columns, "--column"), count, _one(ranges, "--range"),
                     _one(units, "--unit") or "")


def tuples_from_file(path: str, columns=None, count: Optional[int] = None, ranges=None,
                     units=None) -> TupleData:
    """The reading tuples of `columns` (default: every column of the file), the first `count`
    if given; `ranges` one (lo, hi) per column or none (the data's own: not private); `units`
    one per column or none."""
    names, rows = _read(path, columns, count)
    for opt, given in (("--range", ranges), ("--unit", units)):
        if given and len(given) != len(names):
            raise ZealError("%s is given %d times for %d columns (%s): give it once per "
                            "column, in their order, or not at all"
                            % (opt, len(given), len(names), ", ".join(names)))
    spans = [_range(ranges[c] if ranges else None, name, path, [r[c] for r in rows])
             for c, name in enumerate(names)]
    outside = sum(1 for r in rows for c, (lo, hi, _) in enumerate(spans)
                  if not lo <= r[c] <= hi)
    return TupleData(rows, names, [(lo, hi) for lo, hi, _ in spans],
                     list(units) if units else [""] * len(names),
                     "%s, columns %s, %d rows" % (path, ", ".join(names), len(rows)),
                     range_from_data=any(f for _, _, f in spans), outside=outside)


def aarhus_tuples(columns, ranges, units, count) -> TupleData:
    """The first `count` rows of the Aarhus citylab `columns` on the demo's `ranges`."""
    rows = aarhus_rows(columns, count)
    return TupleData(rows, tuple(columns), [tuple(ranges[c]) for c in columns],
                     [units.get(c, "") for c in columns], dataset_text(columns, len(rows)))


def range_notes(demo: dict) -> list:
    """The lines a tuple demo prints about its ranges (its document's demo section)."""
    out = []
    if demo.get("range_from_data"):
        out.append("ranges: taken from the data (its minimum and maximum per column): fine "
                   "for a trial, not private -- fix them before collecting with --range LO HI "
                   "per column")
    if demo.get("readings_outside_range"):
        out.append("readings outside their range: %d (clamped to it by the mechanism)"
                   % demo["readings_outside_range"])
    return out
