"""`zeal export`: every stored report, one row each, to CSV (stdlib) or Parquet (pyarrow, the
optional extra `parquet`), with the profile alongside.

Columns (EXPORT_COLUMNS, in this order, the same names and types in both formats; CSV readers
such as pandas and DuckDB infer exactly these types from the text):

    device       string     the board's 8-byte id as "id:" + 16 hex digits. The prefix keeps a
                            reader from taking "1e10..." for a float, "0123..." for an integer
                            or "0x..." for a hex integer (DuckDB does); strip it to get the hex
                            that `zeal analyze` and `zeal events --device` use.
    boot         int64      the board's boot counter
    seq          int64      the frame's u32 sequence number within the boot
    report       int64      the report's position within its frame (0 = first)
    arrival      timestamp  when the collector read the frame, UTC, in microseconds: Parquet
                            timestamp[us, tz=UTC]; in CSV ISO-8601 with six decimals and "Z"
                            (1970-01-01T00:00:00.000000Z). Every report of a frame shares it.
    estimate     float64    the report's unbiased estimate of its reading, on the reading's
                            scale (the profile's range [lo, hi]) in the export's unit (see below)
    low          int64      the m bits the board transmitted, as an integer 0 <= low < 2^m
    fingerprint  string     SHA-256 fingerprint of the report's profile (64 hex digits)

The unit: a profile carries none, so `--unit TEXT` (default empty: unknown) names it. It is
stored in the metadata (top level and each profile), in Parquet also on the `estimate` field,
never as a column.

The estimate. A report is an offset j = k - k_lo in 0..N-1 (k = wire_base + low, so
j = low - (2^m - 1 - N)). The mechanism's mean is exactly affine in the reading
(shared_spec/mechanism.md section 5, zeal.mechanism.grid.ExactGrid): with q = T / 2^64,
No = N - Nc,

    E[j | x] = s * pos(x) + c0,  pos(x) = (x - lo) (N - Nc) / (hi - lo),
    s  = q - (1 - q) Nc / No,
    c0 = q (Nc - 1)/2 + (1 - q) (N(N - 1)/2 - Nc(Nc - 1)/2) / No,

so the per-report estimate

    estimate(j) = lo + g (j - c0),   g = (hi - lo) / (s (N - Nc))

has E[estimate | x] = x for every reading x in [lo, hi] (unbiased report by report), and,
being affine in j, the mean of any set of estimates is lo + g (mean(j) - c0): exactly the
calibrated mean `zeal analyze` prints for that set (per device, per profile, overall; over
several profiles the n-weighted combination analyze uses is again the plain mean). Each value
is the exact rational rounded once to the nearest double (Python's int / int is correctly
rounded), so a column mean differs from analyze's figure by float rounding alone: at most
(n + 2) u mean|estimate| for a left-to-right float64 sum of n values, u = 2^-53. For two
cells (N = 2, Nc = 1) this is randomised response's estimator
lo + (hi - lo) (j - (1 - q)) / (2q - 1). A single estimate can lie outside [lo, hi] (it is
unbiased, not clamped); only means are meaningful.

Table profiles (zeal-table/1): a report is a cell j (low = j) and its estimate is the
cell's output value g_j = lo + (hi - lo) a_j / Q, exact, unbiased at every reading, rounded
once to float64; the metadata's profile entry has "kind": "table" and the per-cell values
(decimal and exact p/q) instead of an affine map. Grid entries have "kind": "grid".

The paper's report, the double x* = 2^E (1 + k 2^-52), is not a column (its text or bit
pattern is ~1.4e17 for every reading, and a 16-hex-digit bit pattern is mistyped by CSV
readers); it follows from low and the profile: bits = ((E + 1023) << 52) | (2^52 - 2^m + low).

Metadata (`metadata()`; format META_FORMAT): the columns with types and descriptions, the
unit, the report count, the per-device report counts with `private` false for a device with
reports from a DEBUG (non-private) build, and every profile of the exported reports: range
lo/hi, epsilon, bits, exponent, n_cells, n_window, threshold, fingerprint, unit, the exact
estimate map from `low` (intercept and gain as decimals and as exact p/q), and the profile
file itself (`profile`: zeal.mechanism.grid.profile.from_dict reads it back). Parquet: the JSON
text under the schema metadata key "zeal", and a description on every field. CSV: a sidecar
JSON file FILE.csv.json (`sidecar_path`), or where `--meta FILE` says.

Output: files are written atomically (a temporary file beside it, then rename; the sidecar
likewise). `-o -` writes the CSV to stdout and nothing else there (no sidecar unless --meta).
Parquet on stdout is written only when stdout is not a terminal (a pipe or a redirect, as
gzip does); on a terminal it is refused in one line.

API: `export(store, path, fmt, *, include_vector=False, unit="", meta=None)` returns the row
count; `metadata(...)`, `estimate_map(profile)`, `estimates(profile, j)`, `device_text(id)`,
`register(subparsers)` adds `zeal export`.
"""
import json
import os
import secrets
import sys

import numpy as np

from ..collect.store import Store, StoreError, is_url, open_store
from ..errors import ZealError
from ..text import progress_bar
from ..mechanism import kinds
from ..mechanism.grid.profile import Profile
from .decode import (ROW_ARRIVAL, ROW_BOOT, ROW_COUNT, ROW_DEBUG, ROW_DEVICE, ROW_FP, ROW_SEQ,
                     Loaded, PayloadReader, frame_counts)

META_FORMAT = "zeal-export/1"
PARQUET_META_KEY = b"zeal"
DEVICE_PREFIX = "id:"
UNIT_MAX = 64  # characters
EXPORT_FORMATS = ("csv", "parquet")
# name, type (as Parquet/pandas/DuckDB see it), description
COLUMNS = (
    ("device", "string", "board id: 'id:' + 16 hex digits (strip 'id:' for the hex zeal "
                         "analyze prints)"),
    ("boot", "int64", "boot counter of the board"),
    ("seq", "int64", "u32 sequence number of the frame within the boot"),
    ("report", "int64", "position of the report within its frame, from 0"),
    ("arrival", "timestamp[us, UTC]", "when the collector read the frame (UTC; CSV: "
                                      "ISO-8601 with Z)"),
    ("estimate", "float64", "unbiased estimate of the report's reading on the reading's scale, "
                            "in the metadata's unit; its mean is zeal analyze's calibrated "
                            "mean"),
    ("low", "int64", "the m bits transmitted, 0 <= low < 2^m"),
    ("fingerprint", "string", "SHA-256 fingerprint of the report's profile"),
    ("attribute", "int64", "what the row estimates: 0 for a one-reading profile; a multi "
                           "profile's attribute index; a shuffle message's coordinate"),
    ("name", "string", "the attribute's name (multi), 'coordinate C' (shuffle), else "
                       "'reading'"),
    ("value", "string", "what the estimate is of: 'mean', or 'frequency of V' for a "
                        "categorical attribute's domain value V"),
)
EXPORT_COLUMNS = tuple(c[0] for c in COLUMNS)
_ARRIVAL_MAX = 253402300800  # 10000-01-01T00:00:00Z: the last instant with a 4-digit year


def device_text(device_id: bytes) -> str:
    """The `device` column's text for an 8-byte device id."""
    return DEVICE_PREFIX + bytes(device_id).hex()


# ---- the estimate --------------------------------------------------------------------------------
def estimate_map(profile: Profile) -> tuple:
    """(a, b, d) integers with estimate(j) = (a + b j) / d exactly (d > 0), j = k - k_lo:
    lo + g (j - c0) of the module docstring (a window grid's; zeal.mechanism.kinds)."""
    return kinds.GRID.estimate_map(profile)


def table_values(profile) -> list:
    """A table profile's per-cell estimates g_j = lo + (hi - lo) a_j / Q, exact Fractions."""
    return kinds.TABLE.values(profile)


def estimates(profile: Profile, j: np.ndarray) -> np.ndarray:
    """Per-report estimates (float64) of a one-reading profile's offsets j: each the exact
    (a + b j) / d rounded once to the nearest double (CPython's int / int is correctly
    rounded), computed once per distinct offset; a table profile's cell value g_j likewise."""
    return kinds.of(profile).estimates(profile, j)


# ---- columns -------------------------------------------------------------------------------------
def _positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices of the reports of frames that begin at `starts` (in a frame-order array)."""
    within = np.cumsum(counts) - counts
    return np.repeat(starts - within, counts) + np.arange(int(counts.sum()))


def _arrival_us(rows) -> np.ndarray:
    """Per frame: arrival in integer microseconds since 1970 (UTC)."""
    arr = np.fromiter((float(r[ROW_ARRIVAL]) for r in rows), dtype=np.float64, count=len(rows))
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0) | (arr >= _ARRIVAL_MAX))
    if bad.size:
        r = rows[bad[0]]
        raise StoreError("frame (device %s, boot %d, seq %d) has arrival time %r, outside "
                        "1970..9999: the database is damaged" % (bytes(r[ROW_DEVICE]).hex(),
                                                                 r[ROW_BOOT], r[ROW_SEQ],
                                                                 float(r[ROW_ARRIVAL])))
    return np.rint(arr * 1e6).astype(np.int64)


class _Columns:
    """The export in columns, one entry per row (zeal.mechanism.kinds: a report of a
    one-reading profile; a multi report's attribute or categorical value; a shuffle message),
    in stored frame order: per-frame values (device, boot, seq, arrival, fingerprint), taken
    by each row's frame (`frame`)."""

    def __init__(self, data: Loaded):
        rows = data.rows
        nrows = len(rows)
        counts = frame_counts(rows)   # 1..255 each, checked before sizing anything by them
        fp_index = {fp: i for i, fp in enumerate(data.by_fp)}
        row_fp = np.fromiter((fp_index[r[ROW_FP]] for r in rows), dtype=np.int64, count=nrows)
        parts, self.per_fp = [], {}
        for fp, i in fp_index.items():
            prof = data.profiles[fp]
            idx = np.flatnonzero(row_fp == i)
            got = kinds.of(prof).export(prof, data.by_fp[fp], counts[idx], PayloadReader)
            got["frame"] = idx[got["frame"]]  # that profile's frames -> the store's
            self.per_fp[fp] = int(counts[idx].sum())
            parts.append(got)
        if parts:
            cols = {k: np.concatenate([p[k] for p in parts]) for k in kinds.EXPORT_FIELDS}
            order = np.argsort(cols["frame"], kind="stable")  # stored frame order
            cols = {k: v[order] for k, v in cols.items()}
        else:
            cols = {k: np.empty(0, dtype=object if k in ("name", "value") else np.int64)
                    for k in kinds.EXPORT_FIELDS}
            cols["estimate"] = np.empty(0, dtype=np.float64)
        self.frame = cols["frame"]
        self.n = int(self.frame.size)
        self.reports = int(counts.sum())
        self.report, self.low, self.estimate = cols["report"], cols["low"], cols["estimate"]
        self.attribute, self.name, self.value = cols["attribute"], cols["name"], cols["value"]
        self.frame_device = [device_text(r[ROW_DEVICE]) for r in rows]
        self.frame_boot = np.fromiter((r[ROW_BOOT] for r in rows), dtype=np.int64, count=nrows)
        self.frame_seq = np.fromiter((r[ROW_SEQ] for r in rows), dtype=np.int64, count=nrows)
        self.frame_fp = [r[ROW_FP] for r in rows]
        self.frame_arrival = _arrival_us(rows)
        self.devices = {}
        for r in rows:
            doc = self.devices.setdefault(device_text(r[ROW_DEVICE]),
                                          {"reports": 0, "debug_reports": 0})
            doc["reports"] += r[ROW_COUNT]
            if r[ROW_DEBUG]:
                doc["debug_reports"] += r[ROW_COUNT]

    def expand(self, per_frame, dtype=None) -> np.ndarray:
        """A per-frame value for every row."""
        return np.asarray(per_frame, dtype=dtype)[self.frame]

    def arrival_text(self) -> np.ndarray:
        """Per frame: ISO-8601 UTC text, microseconds, 'Z'."""
        stamps = self.frame_arrival.astype("datetime64[us]")
        return np.datetime_as_string(stamps, unit="us", timezone="UTC").astype(object)


def metadata(cols: _Columns, profiles: dict, *, unit: str = "",
             include_vector: bool = False) -> dict:
    """The export's metadata document (see the module docstring)."""
    return {
        "format": META_FORMAT,
        "columns": [{"name": n, "type": t, "description": d} for n, t, d in COLUMNS],
        "unit": unit,
        "reports": cols.reports,
        "rows": cols.n,
        "include_vector": include_vector,
        "estimate": "estimate = lo + g (j - c0), j = k - k_lo: unbiased per report; the mean "
                    "of the column is zeal analyze's calibrated mean (shared_spec/mechanism.md "
                    "section 5); per profile, estimate = intercept + gain * low (a table "
                    "profile: estimate = values[low])",
        "devices": [{"device": dev, "reports": d["reports"], "private": not d["debug_reports"],
                     "debug_reports": d["debug_reports"]}
                    for dev, d in sorted(cols.devices.items())],
        "profiles": [kinds.of(profiles[fp]).export_doc(profiles[fp], unit, n)
                     for fp, n in cols.per_fp.items()],
    }


# ---- writers -------------------------------------------------------------------------------------
def _parquet():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ZealError("Parquet export needs pyarrow: pip install 'zeal-mcu[parquet]'") from None
    return pyarrow, pyarrow.parquet


def write_atomically(path: str, write, binary: bool) -> None:
    """write(fh) into a new temporary file beside `path` (created exclusively, mode 0666 &
    ~umask), fsync, then rename over `path`."""
    tmp = "%s.%d.%s.tmp" % (path, os.getpid(), secrets.token_hex(4))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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


CSV_CHUNK = 65_536  # rows a progress step writes


def _write_csv(fh, cols: _Columns, tick=None) -> None:
    import csv
    import itertools

    out = csv.writer(fh, lineterminator="\n")
    out.writerow(EXPORT_COLUMNS)
    dev = cols.expand(cols.frame_device, object)
    boot = cols.expand(cols.frame_boot).tolist()
    seq = cols.expand(cols.frame_seq).tolist()
    arrival = cols.expand(cols.arrival_text(), object)
    fp = cols.expand(cols.frame_fp, object)
    est = map(repr, cols.estimate.tolist())  # repr: the shortest text that reads back exact
    rows = zip(dev, boot, seq, cols.report.tolist(), arrival, est, cols.low.tolist(),
               fp, cols.attribute.tolist(), cols.name, cols.value)
    while True:
        chunk = list(itertools.islice(rows, CSV_CHUNK))
        if not chunk:
            break
        out.writerows(chunk)
        if tick is not None:
            tick(len(chunk))


def _parquet_table(cols: _Columns, meta: dict):
    pa, _ = _parquet()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "timestamp[us, UTC]": pa.timestamp("us", tz="UTC")}
    values = {
        "device": cols.expand(cols.frame_device, object),
        "boot": cols.expand(cols.frame_boot),
        "seq": cols.expand(cols.frame_seq),
        "report": cols.report,
        "arrival": cols.expand(cols.frame_arrival),
        "estimate": cols.estimate,
        "low": cols.low,
        "fingerprint": cols.expand(cols.frame_fp, object),
        "attribute": cols.attribute,
        "name": cols.name,
        "value": cols.value,
    }
    fields, arrays = [], []
    for name, kind, desc in COLUMNS:
        field_meta = {b"description": desc.encode("utf-8")}
        if name == "estimate":
            field_meta[b"unit"] = meta["unit"].encode("utf-8")
        fields.append(pa.field(name, types[kind], nullable=False, metadata=field_meta))
        arrays.append(pa.array(values[name], types[kind]))
    schema = pa.schema(fields, metadata={PARQUET_META_KEY: json.dumps(meta).encode("utf-8")})
    return pa.Table.from_arrays(arrays, schema=schema)


def sidecar_path(path: str) -> str:
    """Where the CSV's metadata goes by default: FILE.csv -> FILE.csv.json."""
    return path + ".json"


def _check_unit(unit: str) -> str:
    if not isinstance(unit, str):
        raise ZealError("--unit must be text")
    try:
        unit.encode("utf-8")
    except UnicodeEncodeError:
        raise ZealError("--unit must be valid UTF-8 text") from None
    if len(unit) > UNIT_MAX or not unit.isprintable():
        raise ZealError("--unit takes at most %d printable characters, got %r"
                        % (UNIT_MAX, unit[:UNIT_MAX + 8]))
    return unit


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def export(store: Store, path, fmt: str, *, include_vector: bool = False, unit: str = "",
           meta=None, summary=None, quiet: bool = False) -> int:
    """Write every report (one row each, or one per attribute or value of a multi report;
    columns EXPORT_COLUMNS) to `path` as `fmt` ('csv' or 'parquet'), atomically. Returns the
    row count; `summary` (a dict), if given, receives "rows" and "reports". `path` '-' writes to stdout (Parquet only
    when stdout is not a terminal). The metadata goes into a Parquet file's schema; for CSV to
    `meta` if given, else to sidecar_path(path) (none for CSV on stdout without `meta`).
    `meta` given with Parquet writes the same JSON there too. A progress bar on stderr (a
    terminal only; not when `quiet`) counts the rows written."""
    if fmt not in EXPORT_FORMATS:
        raise ZealError("export format must be one of %s, got %r" % (", ".join(EXPORT_FORMATS),
                                                                     fmt))
    unit = _check_unit(unit)
    path = os.fspath(path)
    meta = None if meta is None else os.fspath(meta)
    if meta == "-":
        raise ZealError("--meta takes a file name (stdout is for the data: -o -)")
    if fmt == "parquet":
        _parquet()  # fail before reading anything
        if path == "-" and sys.stdout.isatty():
            raise ZealError("Parquet is binary: give an output file with -o, or send stdout "
                            "to a pipe or a file")
    if fmt == "csv" and path != "-" and meta is None:
        meta = sidecar_path(path)
    for name in ([path] if path != "-" else []) + ([meta] if meta else []):
        if _same_file(name, store.path):
            raise ZealError("%s is the database itself: choose another output" % name)
    if meta is not None and path != "-" and _same_file(meta, path):
        raise ZealError("--meta %s is the output file itself" % meta)
    data = Loaded(store, include_vector)
    cols = _Columns(data)
    doc = metadata(cols, data.profiles, unit=unit, include_vector=include_vector)
    if fmt == "csv":
        with progress_bar(cols.n, "row", "writing CSV", quiet=quiet) as bar:
            if path == "-":
                _write_csv(sys.stdout, cols, bar.update)
                sys.stdout.flush()
            else:
                write_atomically(path, lambda fh: _write_csv(fh, cols, bar.update),
                                 binary=False)
    else:
        _, pq = _parquet()
        table = _parquet_table(cols, doc)
        if path == "-":
            import io

            buf = io.BytesIO()
            pq.write_table(table, buf)
            sys.stdout.flush()
            sys.stdout.buffer.write(buf.getvalue())
            sys.stdout.buffer.flush()
        else:
            write_atomically(path, lambda fh: pq.write_table(table, fh), binary=True)
    if meta is not None:
        text = json.dumps(doc, indent=1) + "\n"
        write_atomically(meta, lambda fh: fh.write(text), binary=False)
    if summary is not None:
        summary.update(rows=cols.n, reports=cols.reports)
    return cols.n


# ---- command line --------------------------------------------------------------------------------
def cmd_export(args) -> int:
    out = args.output
    if out is None:
        if is_url(args.db):
            raise ZealError("--db is a PostgreSQL URL: name the output file with -o FILE "
                            "(or -o - for stdout)")
        out = os.path.splitext(args.db)[0] + "." + args.format
    unit = getattr(args, "unit", "")
    meta = getattr(args, "meta", None)
    as_json = getattr(args, "json", False)
    if as_json and out == "-":
        raise ZealError("--json prints a summary on stdout, where -o - writes the data: "
                        "give -o FILE")
    if meta is None and args.format == "csv" and out != "-":
        meta = sidecar_path(out)
    got = {}
    with open_store(args.db, read_only=True) as store:
        export(store, out, args.format, include_vector=args.include_vector, unit=unit,
               meta=meta, summary=got, quiet=as_json)
    what = "%d reports" % got["reports"]
    if got["rows"] != got["reports"]:  # a multi report: a row per attribute (and value)
        what = "%d rows (%d reports)" % (got["rows"], got["reports"])
    if as_json:
        print(json.dumps({"reports": got["reports"], "rows": got["rows"],
                          "format": args.format, "output": out, "metadata": meta,
                          "unit": unit}, indent=1))
    elif out == "-":
        print("zeal: %s written to stdout%s" % (what, "; metadata to %s" % meta
                                                if meta else ""), file=sys.stderr)
    else:
        print("%s written to %s%s" % (what, out, " (metadata: %s)" % meta if meta
                                      else " (metadata in the file's schema)"))
    return 0


