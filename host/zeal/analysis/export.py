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

Memory: the store is read a page at a time (Store.iter_frames, EXPORT_FRAMES frames a page),
each page decoded in batches of whole frames of at most BATCH_REPORTS reports, and each batch
written before the next is read: CSV rows as they come, Parquet in row groups of
ROW_GROUP_ROWS rows. Every row depends on its own frame alone, so the output is the same
however the store is cut. Peak memory does not grow with the store (measured with 10^6 and
4 x 10^6 reports alike: about 85 MB for CSV, 155 MB for Parquet, where reading it all at once
took 0.3 and 0.47 GB at 10^6, 1.0 and 1.4 GB at 4 x 10^6), except for a Parquet file's footer,
which pyarrow holds until the end: about 1.2 KB a row group in the file (some 10 MB at 10^9
reports) and a few times that in memory. The metadata is counted as the rows go: the CSV's
sidecar is written after the data; Parquet's document goes into the footer once the last row
is written (pyarrow >= 17: ParquetWriter.add_key_value_metadata, with the Arrow schema that
readers take it from), while with an older pyarrow a first pass over the store counts and the
second writes the frames the first one read. Errors are those of a whole-store read: the
store's damage check (Store.check_frames) runs before anything is written, the others (profile
stored, counts, payloads, arrival) as each batch is decoded, and output starts with the first
batch's rows; so a failure further on leaves on stdout what was written before it (CSV rows,
or Parquet without its footer, which no reader takes for a file) and exit status 1, while a
file is not replaced.

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
                     PayloadReader, frame_counts)

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


# ---- reading the store a page at a time ----------------------------------------------------------
EXPORT_FRAMES = 4096       # frames a page of the store holds (Store.iter_frames' chunk)
BATCH_REPORTS = 65_536     # reports decoded at once: a page is cut into batches of whole frames
ROW_GROUP_ROWS = 131_072   # rows of a Parquet row group, gathered from the batches


def _pages(store: Store, include_vector: bool, seen=None, limit=None):
    """The frames export reads, page by page (Store.iter_frames, EXPORT_FRAMES frames each):
    the stored frames in arrival order, then with include_vector the test-mode (vector) ones.
    `seen`, a list, receives each of these two runs' frame count; `limit` (such a list) stops
    each run after that many frames (a second pass reads what the first did, not the frames
    a collector stored since)."""
    for i, vector in enumerate((False, True) if include_vector else (False,)):
        n = 0
        # the damage check ran first (export: store.check_frames)
        for page in store.iter_frames(vector=vector, chunk=EXPORT_FRAMES, check=False):
            if limit is not None:
                page = page[:limit[i] - n]
            if not page:
                break
            n += len(page)
            yield page
        if seen is not None:
            seen.append(n)


def _batches(rows, profiles: dict):
    """A page cut into runs of whole frames of at most BATCH_REPORTS reports (a frame of more
    stands alone), after checking that every frame's profile is stored and every count is
    1..255 (frame_counts)."""
    for fp in dict.fromkeys(r[ROW_FP] for r in rows):  # in order of appearance
        if fp not in profiles:
            raise StoreError("frames refer to profile %s, which the database lacks" % fp)
    counts = frame_counts(rows).tolist()
    start = total = 0
    for i, c in enumerate(counts):
        if total and total + c > BATCH_REPORTS:
            yield rows[start:i]
            start, total = i, 0
        total += c
    if start < len(rows):
        yield rows[start:]


def _columns(store: Store, profiles: dict, include_vector: bool, seen=None, limit=None):
    """The export's rows, a batch (_Columns) at a time, in stored frame order."""
    for page in _pages(store, include_vector, seen, limit):
        for rows in _batches(page, profiles):
            yield _Columns(rows, profiles)


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
    """A batch of frames (Store.frames rows, their profiles in `profiles`) as the export's
    columns, one entry per row (zeal.mechanism.kinds: a report of a one-reading profile; a
    multi report's attribute or categorical value; a shuffle message), in stored frame order:
    per-frame values (device, boot, seq, arrival, fingerprint), taken by each row's frame
    (`frame`). Every row depends on its own frame alone, so batches cut anywhere between
    frames give the rows of the whole store."""

    def __init__(self, rows, profiles: dict):
        nrows = len(rows)
        counts = frame_counts(rows)   # 1..255 each, checked before sizing anything by them
        by_fp = {}
        for r in rows:
            by_fp.setdefault(r[ROW_FP], []).append(r)
        fp_index = {fp: i for i, fp in enumerate(by_fp)}
        row_fp = np.fromiter((fp_index[r[ROW_FP]] for r in rows), dtype=np.int64, count=nrows)
        parts, self.per_fp = [], {}
        for fp, i in fp_index.items():
            prof = profiles[fp]
            idx = np.flatnonzero(row_fp == i)
            got = kinds.of(prof).export(prof, by_fp[fp], counts[idx], PayloadReader)
            got["frame"] = idx[got["frame"]]  # that profile's frames -> the batch's
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


class _Totals:
    """What the metadata counts, summed over the batches: rows (`n`), reports, reports per
    profile (in the order the profiles first appear) and per device."""

    def __init__(self):
        self.n = self.reports = 0
        self.per_fp, self.devices = {}, {}

    def add(self, cols: _Columns) -> None:
        self.n += cols.n
        self.reports += cols.reports
        for fp, n in cols.per_fp.items():
            self.per_fp[fp] = self.per_fp.get(fp, 0) + n
        for dev, d in cols.devices.items():
            doc = self.devices.setdefault(dev, {"reports": 0, "debug_reports": 0})
            doc["reports"] += d["reports"]
            doc["debug_reports"] += d["debug_reports"]


def metadata(cols, profiles: dict, *, unit: str = "",
             include_vector: bool = False) -> dict:
    """The export's metadata document (see the module docstring) of `cols` (a _Totals, or a
    single batch's _Columns)."""
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


def _write_csv(out, cols: _Columns, tick=None) -> None:
    """A batch's rows to csv.writer `out`."""
    import itertools

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


def _parquet_schema(unit: str, meta=None):
    """The Parquet schema: the columns with their descriptions (and the unit on `estimate`),
    and the metadata document `meta` (if given) under PARQUET_META_KEY."""
    pa, _ = _parquet()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "timestamp[us, UTC]": pa.timestamp("us", tz="UTC")}
    fields = []
    for name, kind, desc in COLUMNS:
        field_meta = {b"description": desc.encode("utf-8")}
        if name == "estimate":
            field_meta[b"unit"] = unit.encode("utf-8")
        fields.append(pa.field(name, types[kind], nullable=False, metadata=field_meta))
    return pa.schema(fields, metadata=None if meta is None else _meta_value(meta))


def _meta_value(meta: dict) -> dict:
    return {PARQUET_META_KEY: json.dumps(meta).encode("utf-8")}


def _strings(pa, texts: list, index: np.ndarray):
    """The Arrow string array [texts[i] for i in index], built with numpy from the few
    distinct texts (per frame, or a column's distinct values) rather than from a Python string
    per row (pa.array would also import pandas, some 50 MB)."""
    data = [t.encode("utf-8") for t in texts]
    lens = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    width = int(lens.max()) if data else 0
    table = np.zeros((len(data), width), dtype=np.uint8)
    for k, d in enumerate(data):
        table[k, :len(d)] = np.frombuffer(d, dtype=np.uint8)
    row_lens = lens[index]
    offsets = np.zeros(index.size + 1, dtype=np.int64)
    np.cumsum(row_lens, out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        raise ZealError("a batch of the export holds over 2 GiB of text")  # not reached
    rows = table[index]
    body = rows.reshape(-1) if int(lens.min(initial=width)) == width else \
        rows[np.arange(width) < row_lens[:, None]]
    return pa.Array.from_buffers(pa.string(), int(index.size),
                                 [None, pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(np.ascontiguousarray(body))])


def _distinct(values: np.ndarray) -> tuple:
    """(distinct values in order of appearance, each entry's index among them)."""
    if values.size and bool((values == values[0]).all()):  # one value (every scalar report)
        return [values[0]], np.zeros(values.size, dtype=np.int64)
    seen = {}
    index = np.fromiter((seen.setdefault(v, len(seen)) for v in values.tolist()),
                        dtype=np.int64, count=len(values))
    return list(seen), index


def _parquet_table(cols: _Columns, schema):
    """A batch's rows as an Arrow table of `schema`, its arrays on numpy buffers."""
    pa, _ = _parquet()
    frame = cols.frame
    values = {
        "device": _strings(pa, cols.frame_device, frame),
        "boot": cols.expand(cols.frame_boot),
        "seq": cols.expand(cols.frame_seq),
        "report": cols.report,
        "arrival": cols.expand(cols.frame_arrival),
        "estimate": cols.estimate,
        "low": cols.low,
        "fingerprint": _strings(pa, cols.frame_fp, frame),
        "attribute": cols.attribute,
        "name": _strings(pa, *_distinct(cols.name)),
        "value": _strings(pa, *_distinct(cols.value)),
    }
    arrays = []
    for f in schema:
        got = values[f.name]
        if not isinstance(got, pa.Array):  # int64, float64, timestamp[us] (int64 microseconds)
            got = np.ascontiguousarray(got, dtype=np.float64 if pa.types.is_floating(f.type)
                                       else np.int64)
            got = pa.Array.from_buffers(f.type, int(got.size), [None, pa.py_buffer(got)])
        arrays.append(got)
    return pa.Table.from_arrays(arrays, schema=schema)


class _Gate:
    """The file a ParquetWriter writes through: shut on a failure, so that closing the writer
    (which writes the footer) then writes nothing -- no valid-looking partial file on stdout,
    no write to a file already closed."""

    closed = False

    def __init__(self, fh):
        self.fh, self.open, self.pos = fh, True, 0

    def write(self, data) -> int:
        if self.open:
            self.fh.write(data)
        self.pos += len(data)
        return len(data)

    def flush(self) -> None:
        if self.open:
            self.fh.flush()

    def tell(self) -> int:
        return self.pos


def _write_parquet(fh, batches, schema, late_meta=None) -> None:
    """The batches' rows to `fh` as Parquet, in row groups of ROW_GROUP_ROWS rows (the last
    one shorter; one empty row group if there are no rows, as pyarrow.parquet.write_table
    writes). late_meta(): the schema's metadata document, asked for once every row is written
    (pyarrow >= 17 adds it to the footer), or None when `schema` carries it already."""
    import base64

    pa, pq = _parquet()
    gate = _Gate(fh)
    writer = None   # opened with the first rows: a failure before them writes nothing
    try:
        pending, rows, written = [], 0, 0
        for cols in batches:
            pending.append(_parquet_table(cols, schema))
            if writer is None:
                writer = pq.ParquetWriter(gate, schema)
            rows += cols.n
            if rows >= ROW_GROUP_ROWS:
                table = pa.concat_tables(pending)
                cut = rows - rows % ROW_GROUP_ROWS
                writer.write_table(table.slice(0, cut), row_group_size=ROW_GROUP_ROWS)
                written += cut
                rest = table.slice(cut)
                pending, rows = ([rest] if rest.num_rows else []), rest.num_rows
        if writer is None:
            writer = pq.ParquetWriter(gate, schema)
        if rows or not written:
            writer.write_table(pa.concat_tables(pending) if pending else schema.empty_table(),
                               row_group_size=ROW_GROUP_ROWS)
        if late_meta is not None:
            # the footer's key-value metadata: the document, and the Arrow schema that
            # pyarrow reads the columns' and the file's metadata from, now with the document
            kv = _meta_value(late_meta())
            kv[b"ARROW:schema"] = base64.b64encode(schema.with_metadata(kv).serialize()
                                                   .to_pybytes())
            writer.add_key_value_metadata(kv)
    except BaseException:
        gate.open = False
        try:
            if writer is not None:
                writer.close()
        except Exception:
            pass
        raise
    writer.close()


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
    terminal only; not when `quiet`) counts the rows written. The store is read a page at a
    time and the rows written as they are decoded (module docstring: Memory)."""
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
    profiles = store.profiles()
    store.check_frames()   # every frame row, before anything is written
    totals = _Totals()

    def document() -> dict:
        return metadata(totals, profiles, unit=unit, include_vector=include_vector)

    def counted(batches):
        for cols in batches:
            totals.add(cols)
            yield cols

    if fmt == "csv":
        import csv

        def write_csv(fh):
            # the header goes out with the first rows: a failure before them writes nothing
            out = csv.writer(fh, lineterminator="\n")
            header = [EXPORT_COLUMNS]
            for cols in counted(_columns(store, profiles, include_vector)):
                out.writerows(header)
                header = []
                _write_csv(out, cols, bar.update)
            out.writerows(header)

        with progress_bar(None, "row", "writing CSV", quiet=quiet) as bar:
            if path == "-":
                write_csv(sys.stdout)
                sys.stdout.flush()
            else:
                write_atomically(path, write_csv, binary=False)
    else:
        _, pq = _parquet()
        if hasattr(pq.ParquetWriter, "add_key_value_metadata"):  # pyarrow >= 17
            schema, limit, late = _parquet_schema(unit), None, document
        else:
            # the metadata must be in the schema the writer starts with: a first pass counts
            # (decoding every frame, but holding a batch at a time), the second writes the
            # frames the first read
            seen = []
            for _cols in counted(_columns(store, profiles, include_vector, seen=seen)):
                pass
            schema, limit, late = _parquet_schema(unit, document()), seen, None
            totals = _Totals()

        def write_parquet(fh):
            _write_parquet(fh, counted(_columns(store, profiles, include_vector, limit=limit)),
                           schema, late)

        if path == "-":
            sys.stdout.flush()
            write_parquet(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            write_atomically(path, write_parquet, binary=True)
    doc = document()
    if meta is not None:
        text = json.dumps(doc, indent=1) + "\n"
        write_atomically(meta, lambda fh: fh.write(text), binary=False)
    if summary is not None:
        summary.update(rows=totals.n, reports=totals.reports)
    return totals.n


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


