"""`zeal export`: every stored report, one row each, to CSV (stdlib) or Parquet (pyarrow, the
optional extra `parquet`), written atomically.

`export(store, path, fmt)` returns the row count; the columns are EXPORT_COLUMNS.
"""
import os
import secrets
import sys

import numpy as np

from ..collect.store import Store, open_existing
from ..errors import ZealError
from ..mechanism import reports
from .decode import ROW_BOOT, ROW_COUNT, ROW_DEVICE, ROW_FP, ROW_SEQ, Loaded, decode_frames

EXPORT_COLUMNS = ("device", "boot", "seq", "index", "low", "k", "value", "fingerprint")
EXPORT_FORMATS = ("csv", "parquet")


def _positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices of the reports of frames that begin at `starts` (in a frame-order array)."""
    within = np.cumsum(counts) - counts
    return np.repeat(starts - within, counts) + np.arange(int(counts.sum()))


def _export_arrays(data: Loaded) -> dict:
    """Per-report columns in frame (row) order: low, k (uint64), value (float64), index; and
    per-row device, boot, seq, fingerprint, count (expanded by the writers)."""
    rows = data.rows
    counts = np.fromiter((r[ROW_COUNT] for r in rows), dtype=np.int64, count=len(rows))
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    low = np.empty(total, dtype=np.uint64)
    k = np.empty(total, dtype=np.uint64)
    value = np.empty(total, dtype=np.float64)
    fp_index = {fp: i for i, fp in enumerate(data.by_fp)}
    row_fp = np.fromiter((fp_index[r[ROW_FP]] for r in rows), dtype=np.int64, count=len(rows))
    for fp, i in fp_index.items():
        prof = data.profiles[fp]
        idx = np.flatnonzero(row_fp == i)
        j = decode_frames(prof, data.by_fp[fp]).view(np.uint64)  # row order
        pos = _positions(starts[idx], counts[idx])
        k[pos] = j + np.uint64(prof.k_lo)
        low[pos] = j + np.uint64(prof.k_lo - prof.wire_base)
        value[pos] = reports.floats_from_offsets(prof, j)
    return {"counts": counts, "low": low, "k": k, "value": value,
            "index": np.arange(total, dtype=np.int64) - np.repeat(starts, counts),
            "device": [bytes(r[ROW_DEVICE]).hex() for r in rows],
            "boot": [r[ROW_BOOT] for r in rows], "seq": [r[ROW_SEQ] for r in rows],
            "fingerprint": [r[ROW_FP] for r in rows]}


def _parquet():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ZealError("Parquet export needs pyarrow: pip install 'zeal-mcu[parquet]'") from None
    return pyarrow, pyarrow.parquet


def _atomic_open(path: str):
    """A new temporary file beside `path` (created exclusively, mode 0666 & ~umask)."""
    tmp = "%s.%d.%s.tmp" % (path, os.getpid(), secrets.token_hex(4))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    return tmp, fd


def _write_atomically(path: str, write, binary: bool) -> None:
    try:
        tmp, fd = _atomic_open(path)
    except OSError as exc:
        raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    try:
        with (os.fdopen(fd, "wb") if binary else
              os.fdopen(fd, "w", encoding="utf-8", newline="")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
        raise


def _write_csv(fh, cols) -> None:
    import csv

    out = csv.writer(fh, lineterminator="\n")
    out.writerow(EXPORT_COLUMNS)
    rep = np.repeat
    counts = cols["counts"]
    dev = rep(np.array(cols["device"], dtype=object), counts)
    boot = rep(np.array(cols["boot"], dtype=np.int64), counts).tolist()
    seq = rep(np.array(cols["seq"], dtype=np.int64), counts).tolist()
    fp = rep(np.array(cols["fingerprint"], dtype=object), counts)
    values = map(repr, cols["value"].tolist())  # repr: the shortest text that reads back exact
    out.writerows(zip(dev, boot, seq, cols["index"].tolist(), cols["low"].tolist(),
                      cols["k"].tolist(), values, fp))


def _parquet_table(cols):
    pa, _ = _parquet()
    counts = cols["counts"]
    rep = np.repeat
    return pa.table({
        "device": pa.array(rep(np.array(cols["device"], dtype=object), counts), pa.string()),
        "boot": pa.array(rep(np.array(cols["boot"], dtype=np.uint32), counts)),
        "seq": pa.array(rep(np.array(cols["seq"], dtype=np.uint16), counts)),
        "index": pa.array(cols["index"].astype(np.uint8)),
        "low": pa.array(cols["low"]),
        "k": pa.array(cols["k"]),
        "value": pa.array(cols["value"]),
        "fingerprint": pa.array(rep(np.array(cols["fingerprint"], dtype=object), counts),
                                pa.string()),
    })


def export(store: Store, path, fmt: str, *, include_vector: bool = False) -> int:
    """Write every report (one row each; columns EXPORT_COLUMNS) to `path` as `fmt` ('csv' or
    'parquet'), atomically (a temporary file beside it, then rename). Returns the row count.
    `path` '-' writes CSV to stdout."""
    if fmt not in EXPORT_FORMATS:
        raise ZealError("export format must be one of %s, got %r" % (", ".join(EXPORT_FORMATS),
                                                                     fmt))
    if fmt == "parquet":
        _parquet()  # fail before reading anything
    path = os.fspath(path)
    if path == "-" and fmt != "csv":
        raise ZealError("Parquet is binary: give an output file with -o")
    cols = _export_arrays(Loaded(store, include_vector))
    total = int(cols["counts"].sum())
    if fmt == "csv":
        if path == "-":
            _write_csv(sys.stdout, cols)
        else:
            _write_atomically(path, lambda fh: _write_csv(fh, cols), binary=False)
    else:
        _, pq = _parquet()
        table = _parquet_table(cols)
        _write_atomically(path, lambda fh: pq.write_table(table, fh), binary=True)
    return total

def cmd_export(args) -> int:
    out = args.output
    if out is None:
        out = os.path.splitext(args.db)[0] + "." + args.format
    with open_existing(args.db, readonly=True) as store:
        n = export(store, out, args.format, include_vector=args.include_vector)
    if out != "-":
        print("%d reports written to %s" % (n, out))
    return 0
