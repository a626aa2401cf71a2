"""Data sets shipped inside the package (provenance in data/SOURCES.md)."""
import csv
from importlib import resources

HUMIDITY_RANGE = (23.5, 83.9)  # the Zeal paper's feasible range for Aarhus humidity


def aarhus(column: str = "humidity", count: int = 5000) -> list:
    """The first `count` values of one column of the Aarhus citylab data, as text.

    Text, not floats: the readings are decimals and the mechanism takes them exactly.
    """
    with resources.files("zeal").joinpath("data/aarhus-citylab.csv").open("r") as fh:
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
