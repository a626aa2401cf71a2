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
import csv
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..analysis import datasets
from ..errors import ZealError

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


def _number(text: str) -> Optional[float]:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def read_column(path: str, column: Optional[str]) -> tuple:
    """(column name, [float]) of one column of the CSV file `path` (see the module doc)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ZealError("cannot read --data %s: %s"
                        % (path, getattr(exc, "strerror", None) or exc)) from None
    if not rows:
        raise ZealError("--data %s is empty" % path)
    header = not all(_number(c) is not None for c in rows[0])
    names = [c.strip() for c in rows[0]] if header else [str(i + 1)
                                                         for i in range(len(rows[0]))]
    if column is None:
        if len(names) != 1:
            raise ZealError("--data %s has %d columns (%s): choose one with --column"
                            % (path, len(names), ", ".join(names)))
        column = names[0]
    if column not in names:
        raise ZealError("--data %s has no column %r (it has %s%s)"
                        % (path, column, ", ".join(names),
                           "" if header else "; a file without a header names them 1, 2, ..."))
    idx = names.index(column)
    values = []
    for line, row in enumerate(rows[1:] if header else rows, 2 if header else 1):
        v = _number(row[idx]) if idx < len(row) else None
        if v is None:
            raise ZealError("--data %s line %d: column %s is not a finite number: %r"
                            % (path, line, column, (row[idx] if idx < len(row) else "")[:40]))
        values.append(v)
    if not values:
        raise ZealError("--data %s: column %s has no values" % (path, column))
    return column, values


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
    if value_range is not None:
        lo, hi = (float(v) for v in value_range)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ZealError("--range %g %g: LO must be below HI (finite numbers)" % (lo, hi))
    else:
        lo, hi = min(values), max(values)
        if lo == hi:
            raise ZealError("--data %s: every reading of column %s is %g; give the range the "
                            "sensor can read with --range LO HI" % (path, name, lo))
    outside = sum(1 for v in values if not lo <= v <= hi)
    return DemoData(values, lo, hi, unit, "%s, column %s, %d readings" % (path, name, len(values)),
                    range_from_data=value_range is None, outside=outside)
