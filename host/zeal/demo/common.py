"""What every demo shares (`zeal demo`, `--attributes`, `--shuffle`, `--mqtt`): the one-line
errors of their common arguments (`check_arguments`), progress on stderr (`printer`), the
Aarhus rows (`aarhus_rows`) and how a demo names them (`dataset_text`), and the rows split
among the boards with their ids and seeded keys (`board_slices`)."""
import hashlib
import os
import sys

from ..analysis import datasets
from ..errors import ZealError


def check_arguments(count, devices, db):
    """The one-line errors for the arguments every serial demo takes."""
    if count < devices:
        raise ZealError("--count must be at least the number of devices (%d)" % devices)
    if not 1 <= devices <= 16:
        raise ZealError("--devices must be 1 to 16")
    if db is not None and os.path.exists(db):
        raise ZealError("%s exists: the demo writes a new database (choose another --db)" % db)


def printer(progress):
    """say(*parts): a progress line on stderr, or nothing when progress is off."""
    return (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)


def aarhus_rows(columns, count):
    """The first `count` rows of the Aarhus citylab `columns`, each a tuple of floats (what a
    sensor driver hands the firmware); too many rows asked for is a one-line error."""
    try:
        cols = [datasets.aarhus(c, count) for c in columns]
    except ValueError as exc:
        raise ZealError(str(exc)) from None
    return [tuple(float(col[i]) for col in cols) for i in range(count)]


def dataset_text(columns, rows):
    """The demo document's "dataset" for `rows` rows of several Aarhus columns."""
    return "Aarhus citylab, columns %s, first %d rows" % (", ".join(columns), rows)


def board_slices(rows, devices, id_pattern, seed, seed_label):
    """(slices, ids, keys): `rows` cut into contiguous slices, one per board (at most
    `devices`); each board's id (`id_pattern` % i, zero-padded to the 8 bytes of a HELLO);
    and for a seeded run (tests only) its vector-mode key SHA-256(seed_label " seed i), else
    None (fresh keys on the board, as in the field)."""
    share = -(-len(rows) // devices)
    slices = [rows[i:i + share] for i in range(0, len(rows), share)]
    ids = [(id_pattern % i).ljust(8, b"\0") for i in range(len(slices))]
    keys = ([hashlib.sha256(seed_label + b" %d %d" % (seed, i)).digest()
             for i in range(len(slices))] if seed is not None else [None] * len(slices))
    return slices, ids, keys
