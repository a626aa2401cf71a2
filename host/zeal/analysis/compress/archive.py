"""The archive: a collection's reports compressed, with what `zeal analyze` needs to answer
exactly as it does on the database.

Format (versions 1 and 2; shared_spec/archive.md): a ZIP file (the standard container:
`unzip -l` lists it, any zip tool extracts it; CRC-32 per entry). Its comment is
`zeal-archive V`. Version 1 holds streams of 64-bit patterns only (window grid, table) and is
what `write` still writes when every stream is one; version 2 adds the pairs (multi) and
messages (shuffle) streams of compress.streams, whose manifest entries carry "symbols" where
a report is more than one symbol (multi: 2k). `read` reads both; its entries:
- `manifest.json` (deflated): {"format": "zeal-archive", "version": 1, "source": "database"
  or "reports", "profiles": [fingerprint, ...], "devices": [id hex, ...], "streams": [...],
  "frames": {...}, "losses": [...], "statuses": [...], "link_bytes", "absent": [...]};
- `profiles/<first 16 hex digits of the fingerprint>.json` (deflated): each profile's file
  text, as `zeal profile -o` writes it (the file a device reads; checked on reading against
  the manifest's full fingerprint), and the files it refers to (a multi header's attribute
  files), each once;
- `streams/<i>` (stored, already compressed): the reports of one device under one profile
  (test-mode frames apart), as the codec named in the stream's manifest entry encodes their
  symbols (compress.streams: a grid's float64 bit patterns, a table's cells, a multi
  report's pairs, shuffle messages), in arrival order.
The frame table (per stored frame, in the database's order: device, profile, vector, count,
debug, boot, seq) is kept as arithmetic runs [first, step, length] per column, so regular
collections (seq + 1 per frame, one batch size) cost a few numbers. Losses are the summed
event counts per (device, kind) of the kinds analyze reads (reject, gap, reboot); statuses
are the STATUS events' (device, detail) in time order; link_bytes the bytes read on all links.

Not carried (`absent` in the manifest): each frame's arrival time and session nonce, and
every other event's detail and time -- `zeal analyze` reads none of them; `zeal export` and
`zeal events` need the database.

- `write(path, source, candidates)`: the archive from a database's `Loaded` data (or a
  reports file's), each stream in the smallest of the candidate codecs; returns the
  manifest and the per-codec measurements of `measure`.
- `read(path)` -> `Archive`: the manifest checked, the profiles re-validated, every stream
  decoded and checked against its profile's grid; `Archive.loaded(include_vector)` gives the
  same attributes analyze reads from `decode.Loaded` (profiles, rows, by_fp, events,
  statuses, link_bytes, offsets(fp)).
Damage (not a zip, CRC failure, wrong format or version, a missing entry, a codec whose
library is missing, a report off the grid) is an `ArchiveError`, one line.

Limits. An archive may come from anyone, so `read` bounds every size and count before it
allocates for it, and refuses (ArchiveError, one line) anything past them; `write` refuses to
write past them (the same line from `zeal compress`), so every archive zeal writes is one it
reads. The stated maximum archive, in what the format counts (the reader holds all of it in
memory -- about 60 B a report and 300 B a frame -- so these are sized to a workstation; a
streaming reader would lift them):
- MAX_REPORTS = 2^25 (33,554,432) reports: 256 MiB of float64 patterns; MAX_SYMBOLS = 2^25
  stream symbols (a multi report is 2k of them): 256 MiB of uint64 symbols;
- MAX_FRAMES = 2^20 (1,048,576) frames: MAX_REPORTS at a mean batch of 32 (the default is 64);
- MAX_DEVICES = 100,000 devices: the store's own cap (collect.store.MAX_DEVICES);
- MAX_STREAMS = 2^17 streams (one per device, profile and test mode): every device of the
  store's cap under one profile, with room for re-flashed or test-mode ones; MAX_PROFILES =
  MAX_STREAMS (every profile has a stream);
- MAX_STATUSES = 2^16 STATUS events (a heartbeat every 16 frames at MAX_FRAMES; the firmware
  sends one every 64 DATA frames by default), each detail at most MAX_STATUS_DETAIL = 300
  characters: the longest code name, four u32 counters, "debug" and a message of at most
  wire.MAX_MESSAGE = 200 characters, as the collector writes it; losses: 3 kinds a device.
Measured at MAX_REPORTS, MAX_FRAMES and MAX_STATUSES (1,000 devices, interleaved at random):
`zeal analyze --archive` peaks at 2.5 GB and takes 36 s; a hostile archive cannot cost more.
What an archive of that size holds, and so the caps on what is decompressed:
- a stream of n reports (n from the manifest, and first checked to equal the reports the
  frame table gives that device, profile and mode; all n sum to at most MAX_REPORTS) and s
  symbols (s = n, or the manifest's "symbols", checked to be n x the shape's symbols a report)
  is an entry of at most stream_bytes_cap(s, M) = 8 s + 8 s / 64 + M (2^16 bitlength(s) / 8 +
  64) + 1 KiB stored bytes, M the value models a rans blob of its shape holds (a multi
  profile's d, at most MAX_MODELS = 16; else 1): the raw doubles (packed, greedygd and rans store no more than the doubles' bits);
  the general-purpose compressors' worst-case growth on incompressible input, under 1 % (bz2:
  1 % + 600 B); rans's model, at most 2^16 counts of at most bitlength(n) bits; headers. It
  decodes to n reports, 8 n bytes, at most: its codec gets n as its limit (see
  zeal.analysis.compress: zstd, lz4, bz2, lzma through streaming decompressors with a maximum
  output of 8 n bytes, zstd's declared content size and window and lzma's dictionary checked
  first; pcodec into an array of n + 1; packed, rans, greedygd by their header's n);
- a profile entry holds at most MAX_PROFILE_BYTES = 4,317 bytes, a table profile's longest
  file (a window grid's: pfile.MAX_FILE = 502), and all of them together at most
  MAX_PROFILE_TOTAL = MAX_PROFILES x 502 bytes (what they could take before tables);
- the manifest holds at most MAX_MANIFEST_BYTES = 202,601,988 bytes (`_manifest_budget`): the
  longest manifest `write` makes at the caps above, every item at its longest (a greedy run
  covers two frames or more, so a frame costs at most half of [max, -max, 2] per column, with
  boot and seq u32; STATUS messages with every character escaped, 6 bytes each). Its declared
  size is checked before it is read, it is read in chunks (never more than the cap + 1 bytes),
  its nesting is checked on the text before JSON parses it (at most MAX_DEPTH = 8 levels:
  version 1 nests 4 -- frames, a column, its runs, a run -- and a later version's manifest is
  still parsed far enough to be refused by its version line), it holds integers only, and
  then every field's type, range and count is checked: ids in hex, frame runs' lengths 1 or
  more summing to at most MAX_FRAMES and their values in their column's range (checked at a
  run's two ends, before any run is expanded);
- the zip directory lists at most MAX_ENTRIES = 1 + MAX_PROFILES + MAX_STREAMS entries in at
  most DIRECTORY_ENTRY_BYTES (128) each, checked from its end record before zipfile reads it;
  entries are stored or deflated and not encrypted, as `write` makes them.
"""
import json
import math
import os
import re
import time
import zipfile
import zlib
from typing import Dict, List, Optional, Sequence

import numpy as np

from ... import wire
from ...collect.store import MAX_DEVICES as STORE_MAX_DEVICES
from ...errors import ZealError
from ...mechanism import kinds
from ...mechanism.core.pfile import MAX_FILE as PROFILE_MAX_FILE
from ...mechanism.table.profile import MAX_TABLE_FILE
from ...mechanism.grid.profile import Profile
from . import streams as SH
from ..decode import ROW_BOOT, ROW_COUNT, ROW_DEBUG, ROW_DEVICE, ROW_FP, ROW_SEQ
from ..export import write_atomically

FORMAT = "zeal-archive"
VERSION = 2            # the newest this zeal writes and reads
VERSIONS = (1, 2)      # every version it reads
MANIFEST = "manifest.json"
LOSS_KINDS = ("reject", "gap", "reboot")     # the event kinds analyze counts
ABSENT = ["arrival", "nonce", "event times and details (other than STATUS details)"]
COLUMNS = ("device", "profile", "vector", "count", "debug", "boot", "seq")


class ArchiveError(ZealError):
    """An archive that cannot be read: damaged, of another format or version, past a limit,
    or needing a codec whose library is missing."""


# ---- limits (the module docstring says why each is what it is) ---------------------------------
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
U32_MAX = (1 << 32) - 1
MAX_REPORTS = 1 << 25
MAX_SYMBOLS = MAX_REPORTS    # a stream's symbols (compress.streams), all streams together
MAX_MODELS = 16              # a rans blob's value models: a multi profile's d (at most 16)
MAX_FRAMES = 1 << 20
MAX_DEVICES = STORE_MAX_DEVICES
MAX_STREAMS = 1 << 17
MAX_PROFILES = MAX_STREAMS
MAX_STATUSES = 1 << 16
MAX_LOSSES = (MAX_DEVICES + 1) * len(LOSS_KINDS)
MAX_DEPTH = 8
# a profile entry: at most a table profile's longest file (a grid's is PROFILE_MAX_FILE, 502
# bytes); all of them together at most what MAX_PROFILES grid files take, as before tables
MAX_PROFILE_BYTES = max(PROFILE_MAX_FILE, MAX_TABLE_FILE)
MAX_PROFILE_TOTAL = MAX_PROFILES * PROFILE_MAX_FILE
MAX_ENTRIES = 1 + MAX_PROFILES + MAX_STREAMS
#: a central directory record: 46 fixed bytes, the name (at most 30: profiles/<16 hex>.json),
#: a ZIP64 extra field (at most 32), rounded up
DIRECTORY_ENTRY_BYTES = 128
_COUNTERS = " ticks=%d frames_dropped=%d replaced=%d clamped=%d debug" % ((U32_MAX,) * 4)
MAX_STATUS_DETAIL = (max(len("CODE_255"), *map(len, wire.STATUS_CODES.values()))
                     + len(_COUNTERS) + 1 + wire.MAX_MESSAGE)


def stream_bytes_cap(n: int, models: int = 1) -> int:
    """The most bytes a stream entry of n symbols may store (module docstring), its rans blob
    holding at most `models` value models (a multi profile's: d)."""
    return 8 * n + 8 * n // 64 + models * ((1 << 16) * n.bit_length() // 8 + 64) + 1024


def _json_len(obj) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


def _manifest_budget() -> int:
    """The longest manifest `write` makes within the count caps, each item at its longest."""
    hex16, fp = "f" * 16, "f" * 64
    tops = {"device": MAX_DEVICES - 1, "profile": MAX_PROFILES - 1, "vector": 1,
            "count": wire.MAX_COUNT, "debug": 1, "boot": U32_MAX, "seq": U32_MAX}
    # a greedy run covers two frames or more except a column's last: half of [top, -top, 2]
    # (and its comma) a frame per column, and one longest last run per column
    per_frame = sum(_json_len([t, -t, 2]) + 1 for t in tops.values()) / 2
    last_runs = sum(_json_len([t, -t, MAX_FRAMES]) + 1 for t in tops.values())
    stream = _json_len({"entry": "streams/%d" % (MAX_STREAMS - 1), "device": MAX_DEVICES - 1,
                        "profile": fp, "vector": False, "codec": "greedygd", "n": MAX_REPORTS,
                        "symbols": MAX_SYMBOLS,
                        "bytes": stream_bytes_cap(MAX_REPORTS, MAX_MODELS)}) + 1
    detail = "CODE_255" + _COUNTERS + " " + "\x00" * wire.MAX_MESSAGE   # each \u0000: 6 bytes
    status = _json_len([hex16, detail]) + 1
    loss = _json_len([hex16, "reject", INT64_MIN]) + 1
    skeleton = _json_len({"format": FORMAT, "version": VERSION, "source": "database",
                          "profiles": [], "devices": [], "streams": [],
                          "frames": {c: [] for c in COLUMNS}, "losses": [], "statuses": [],
                          "link_bytes": INT64_MAX, "absent": ABSENT})
    return (skeleton + math.ceil(per_frame * MAX_FRAMES) + last_runs + MAX_STREAMS * stream
            + MAX_PROFILES * (_json_len(fp) + 1) + MAX_DEVICES * (_json_len(hex16) + 1)
            + MAX_LOSSES * loss + MAX_STATUSES * status)


MAX_MANIFEST_BYTES = _manifest_budget()


# ---- frame table: arithmetic runs ---------------------------------------------------------------
def runs(values: Sequence[int]) -> List[List[int]]:
    """[[first, step, length], ...] covering `values` in order (greedy: a run extends while
    the step holds). Exact inverse: `unruns`. Linear: the differences are taken once, and
    each position knows where its block of equal differences ends."""
    v = np.asarray(values, dtype=np.int64)
    n = v.size
    d = np.diff(v)
    if d.size:
        ends = np.append(np.flatnonzero(d[1:] != d[:-1]), d.size - 1)
        end = np.repeat(ends, np.diff(ends, prepend=-1))   # end[j]: last j' with d[j..j'] equal
    out = []
    i = 0
    while i < n:
        if i + 1 == n:
            out.append([int(v[i]), 0, 1])
            break
        length = int(end[i]) - i + 2
        out.append([int(v[i]), int(d[i]), length])
        i += length
    return out


# ---- the streams --------------------------------------------------------------------------------
class Stream:
    """The reports of one device (or of a reports file: device None) under one profile:
    `bits`, the symbols of its shape (compress.streams: a grid's or table's 64-bit patterns,
    a multi report's pairs, shuffle messages), `n` reports (messages)."""

    def __init__(self, device: Optional[int], fp: str, vector: bool, bits: np.ndarray,
                 n: Optional[int] = None):
        self.device, self.fp, self.vector, self.bits = device, fp, vector, bits
        self.n = int(bits.size) if n is None else int(n)


def report_bits(profile: Profile, offsets: np.ndarray) -> np.ndarray:
    """Offsets j -> the reports' 64-bit patterns (uint64): a window grid's float64 x*, a
    table's cell (zeal.mechanism.kinds: report_pattern)."""
    base = np.uint64(kinds.of(profile).report_pattern(profile)[0])
    return np.asarray(offsets, dtype=np.int64).astype(np.uint64) + base


def offsets_of(profile: Profile, bits: np.ndarray, what: str) -> np.ndarray:
    """Bit patterns -> offsets, every one checked against the profile's grid."""
    bits = np.asarray(bits, dtype=np.uint64)
    base = kinds.of(profile).report_pattern(profile)[0]
    j = (bits - np.uint64(base)).view(np.int64)
    bad = np.flatnonzero((bits < np.uint64(base)) | (j >= profile.n_cells))
    if bad.size:
        raise ArchiveError("%s: report %d (0x%016x) is outside the profile's grid"
                           % (what, bad[0], int(bits[bad[0]])))
    return j


def database_streams(data, vector_flags: Sequence[int]) -> tuple:
    """(devices [bytes], frame columns {name: int array}, streams [Stream]) from a
    `decode.Loaded` made with include_vector=True (rows: real frames, then test-mode ones;
    vector_flags: 1 for each test-mode row)."""
    rows = data.rows
    devices = sorted({bytes(r[ROW_DEVICE]) for r in rows})
    dev_ix = {d: i for i, d in enumerate(devices)}
    fps = list(data.by_fp)
    fp_ix = {fp: i for i, fp in enumerate(fps)}
    cols = {
        "device": np.fromiter((dev_ix[bytes(r[ROW_DEVICE])] for r in rows), np.int64, len(rows)),
        "profile": np.fromiter((fp_ix[r[ROW_FP]] for r in rows), np.int64, len(rows)),
        "vector": np.asarray(vector_flags, dtype=np.int64),
        "count": np.fromiter((r[ROW_COUNT] for r in rows), np.int64, len(rows)),
        "debug": np.fromiter((int(r[ROW_DEBUG]) for r in rows), np.int64, len(rows)),
        "boot": np.fromiter((r[ROW_BOOT] for r in rows), np.int64, len(rows)),
        "seq": np.fromiter((r[ROW_SEQ] for r in rows), np.int64, len(rows)),
    }
    streams = []
    for fp in fps:
        prof = data.profiles[fp]
        mine = cols["profile"] == fp_ix[fp]
        shape = SH.shape_of(prof)
        if shape is not SH.Patterns:           # pairs, messages: from each label's frames
            frame_label = cols["device"][mine] * 2 + cols["vector"][mine]
            fp_rows = data.by_fp[fp]               # in the order of `mine`
            for key in np.unique(frame_label):
                sel = np.flatnonzero(frame_label == key).tolist()
                streams.append(Stream(int(key) // 2, fp, bool(key % 2),
                                      SH.rows_symbols(prof, [fp_rows[i] for i in sel]),
                                      int(cols["count"][mine][sel].sum())))
            continue
        j = data.offsets(fp)                           # this profile's rows, in order
        label = np.repeat(cols["device"][mine] * 2 + cols["vector"][mine], cols["count"][mine])
        for key in np.unique(label):
            streams.append(Stream(int(key) // 2, fp, bool(key % 2),
                                  report_bits(prof, j[label == key])))
    return devices, cols, streams


# ---- measuring the codecs -----------------------------------------------------------------------
MIN_TIME_S = 0.05   # each codec's timing repeats its whole pass until this long (best pass)


def _best_time(fn, budget: float = MIN_TIME_S):
    """(fn(), the shortest of its runs): runs again until `budget` seconds are spent."""
    best, spent, out = float("inf"), 0.0, None
    while spent < budget:
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
    return out, best


def stream_codec(name: str, codec, profile):
    """The codec `name` as it runs on this profile's streams (compress.streams: the generic
    codecs as they are, packed and rans by their shape's versions), or None where it does not
    apply."""
    return SH.shape_of(profile).codec(name, codec)


def measure(streams: List[Stream], profiles: Dict[str, Profile], codecs: dict) -> dict:
    """{codec name: {"blobs": [bytes per stream, None where the codec does not apply to the
    stream's shape], "bytes", "encode_s", "decode_s"}} for every codec (times: one pass over
    every stream, the best of passes filling MIN_TIME_S), each blob checked to decode to its
    stream exactly (ArchiveError otherwise: a codec that does not round-trip is a bug, never
    a silently wrong archive)."""
    out = {}
    for name, codec in codecs.items():
        runs = [stream_codec(name, codec, profiles[s.fp]) for s in streams]
        blobs, enc_s = _best_time(lambda: [None if c is None else
                                           bytes(c.encode(s.bits, profiles[s.fp]))
                                           for c, s in zip(runs, streams)])
        backs, dec_s = _best_time(lambda: [None if c is None else c.decode(b, profiles[s.fp])
                                           for c, b, s in zip(runs, blobs, streams)])
        for s, back in zip(streams, backs):
            if back is not None and not np.array_equal(np.asarray(back, dtype=np.uint64),
                                                       s.bits):
                raise ArchiveError("codec %s does not decode its own output exactly" % name)
        out[name] = {"blobs": blobs, "bytes": sum(len(b) for b in blobs if b is not None),
                     "applies": all(b is not None for b in blobs),
                     "encode_s": enc_s, "decode_s": dec_s}
    return out


# ---- writing ------------------------------------------------------------------------------------
def write(path: str, *, source: str, profiles: Dict[str, Profile], devices: List[bytes],
          columns: Optional[dict], streams: List[Stream], sizes: dict, candidates: List[str],
          losses=None, statuses=None, link_bytes: Optional[int] = None) -> dict:
    """Write the archive (atomically: a temporary file renamed over `path`); each stream in
    the smallest of the `candidates` codecs (measured in `sizes`; ties: the first named).
    Returns the manifest, with "bytes" (the archive's size) added."""
    fps = list(profiles)
    # version 1 where every stream is of 64-bit patterns (what a zeal reading version 1 only
    # reads), version 2 where a stream is of pairs or messages
    plain = all(SH.shape_of(profiles[fp]) is SH.Patterns for fp in fps)
    version = 1 if plain else VERSION
    manifest = {"format": FORMAT, "version": version, "source": source,
                "profiles": fps, "devices": [d.hex() for d in devices], "streams": [],
                "frames": None if columns is None else
                {name: runs(columns[name]) for name in COLUMNS},
                "losses": losses, "statuses": statuses, "link_bytes": link_bytes,
                "absent": ABSENT if source == "database" else
                ["devices", "frames", "losses", "events", "wire bytes"]}
    entries = []
    for i, s in enumerate(streams):
        usable = [c for c in candidates if sizes[c]["blobs"][i] is not None]
        if not usable:
            raise ArchiveError("none of the codecs %s applies to the %s streams of profile %s"
                               % (", ".join(candidates), SH.shape_of(profiles[s.fp]).name,
                                  s.fp[:16]))
        best = min(usable, key=lambda c: (len(sizes[c]["blobs"][i]), candidates.index(c)))
        blob = sizes[best]["blobs"][i]
        entry = "streams/%d" % i
        item = {"entry": entry, "device": s.device, "profile": s.fp, "vector": s.vector,
                "codec": best, "n": s.n, "bytes": len(blob)}
        if int(s.bits.size) != s.n:
            item["symbols"] = int(s.bits.size)
        manifest["streams"].append(item)
        entries.append((entry, blob))
    # every profile's file and those it refers to (a multi header's attribute files), once
    files = {}
    for fp in fps:
        for ffp, text in kinds.of(profiles[fp]).files(profiles[fp]):
            files.setdefault(ffp, text)

    def write(fh):
        with zipfile.ZipFile(fh, "w") as z:
            z.comment = b"zeal-archive %d" % version
            z.writestr(_info(MANIFEST), json.dumps(manifest, separators=(",", ":")),
                       compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for ffp, text in files.items():
                z.writestr(_info(profile_entry(ffp)), text,
                           compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for entry, blob in entries:
                z.writestr(_info(entry), blob, compress_type=zipfile.ZIP_STORED)

    past = _past_caps(manifest, columns)
    total = sum(len(text.encode("utf-8")) for text in files.values())
    if past is None and total > MAX_PROFILE_TOTAL:
        past = ("%d bytes of profile files" % total, "%d" % MAX_PROFILE_TOTAL)
    if past is None and 1 + len(files) + len(entries) > MAX_ENTRIES:
        past = ("%d zip entries" % (1 + len(files) + len(entries)), "%d" % MAX_ENTRIES)
    if past:
        raise ArchiveError("the archive would hold %s; zeal analyze --archive reads at most %s "
                           "(the limits of zeal.analysis.compress.archive)" % past)
    write_atomically(path, write, binary=True)  # a temporary file renamed over path
    manifest["bytes"] = os.path.getsize(path)
    return manifest


def _past_caps(manifest: dict, columns: Optional[dict]):
    """(what the archive would hold, the cap) for the first cap `manifest` goes past, or None:
    what `read` refuses, `write` does not write."""
    nframes = 0 if columns is None else len(columns["count"])
    details = [d for _, d in manifest["statuses"] or []]
    longest = max(map(len, details)) if details else 0
    counts = (("reports", sum(s["n"] for s in manifest["streams"]), MAX_REPORTS),
              ("symbols (a multi report: 2k)", sum(s.get("symbols", s["n"])
                                                   for s in manifest["streams"]), MAX_SYMBOLS),
              ("frames", nframes, MAX_FRAMES), ("devices", len(manifest["devices"]), MAX_DEVICES),
              ("streams", len(manifest["streams"]), MAX_STREAMS),
              ("profiles", len(manifest["profiles"]), MAX_PROFILES),
              ("STATUS events", len(details), MAX_STATUSES),
              ("characters in a STATUS detail", longest, MAX_STATUS_DETAIL),
              ("loss entries", len(manifest["losses"] or []), MAX_LOSSES))
    for what, n, cap in counts:
        if n > cap:
            return ("%d %s" % (n, what), "%d" % cap)
    size = len(json.dumps(manifest, separators=(",", ":")).encode("utf-8"))
    if size > MAX_MANIFEST_BYTES:
        return ("a manifest of %d bytes" % size, "%d bytes" % MAX_MANIFEST_BYTES)
    return None


def profile_entry(fp: str) -> str:
    return "profiles/%s.json" % fp[:16]


def _info(name: str) -> zipfile.ZipInfo:
    """An entry with a fixed date (1980-01-01): the same collection gives the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


# ---- reading ------------------------------------------------------------------------------------
class Archive:
    """A read archive: manifest, profiles, the frame table's columns (None for a reports file)
    and every stream's offsets (checked)."""

    def __init__(self, path: str, manifest: dict, profiles: Dict[str, Profile],
                 offsets: List[np.ndarray], columns: Optional[Dict[str, np.ndarray]] = None):
        self.path, self.manifest, self.profiles = path, manifest, profiles
        self.stream_offsets = offsets
        self.columns = columns

    @property
    def source(self) -> str:
        return self.manifest["source"]

    @property
    def n(self) -> int:
        return sum(s["n"] for s in self.manifest["streams"])

    @property
    def patterns_only(self) -> bool:
        """Every stream of 64-bit patterns (grid, table): `loaded` gives what analyze reads;
        otherwise compress.replay.ArchiveStore gives a store's read interface."""
        return all(SH.shape_of(p) is SH.Patterns for p in self.profiles.values())

    def reports_offsets(self) -> tuple:
        """(profile, offsets) of a reports-file archive."""
        fp = self.manifest["profiles"][0]
        return self.profiles[fp], np.concatenate(self.stream_offsets)

    def loaded(self, include_vector: bool = False) -> "ArchivedData":
        return ArchivedData(self, include_vector)


class ArchivedData:
    """What analyze reads from `decode.Loaded`, rebuilt from an archive (rows carry device,
    boot, seq, fingerprint, count and debug; payload, arrival and nonce are None)."""

    def __init__(self, archive: Archive, include_vector: bool):
        m = archive.manifest
        self.path = archive.path
        self.profiles = archive.profiles
        fps = m["profiles"]
        devices = [bytes.fromhex(d) for d in m["devices"]]
        cols = archive.columns
        keep = (np.ones(cols["vector"].size, dtype=bool) if include_vector
                else cols["vector"] == 0)
        self.rows = [(devices[d], int(b), int(s), fps[p], int(c), None, None, None, int(g))
                     for d, p, c, g, b, s in zip(*(cols[k][keep].tolist() for k in
                                                   ("device", "profile", "count", "debug",
                                                    "boot", "seq")))]
        self.by_fp: Dict[str, list] = {}
        for r in self.rows:
            self.by_fp.setdefault(r[ROW_FP], []).append(r)
        self.events = {(None if d is None else bytes.fromhex(d), kind, ""): int(c)
                       for d, kind, c in m["losses"]}
        self.statuses = [{"device": d, "kind": "status", "detail": detail}
                         for d, detail in m["statuses"]]
        self.link_bytes = int(m["link_bytes"])
        # every fingerprint's offsets in row order, from the per-device streams: the reports
        # of one (device, test mode) label, in row order, are that stream's, in order
        self._offsets = {}
        for fp in self.by_fp:
            p = fps.index(fp)
            mine = (cols["profile"] == p) & keep
            label = np.repeat(cols["device"][mine] * 2 + cols["vector"][mine],
                              cols["count"][mine])
            order = np.argsort(label, kind="stable")
            keys, starts, sizes = np.unique(label[order], return_index=True,
                                            return_counts=True)
            out = np.empty(label.size, dtype=np.int64)
            filled = np.zeros(keys.size, dtype=bool)
            for s, j in zip(m["streams"], archive.stream_offsets):
                if s["profile"] != fp or (s["vector"] and not include_vector):
                    continue
                i = int(np.searchsorted(keys, s["device"] * 2 + int(s["vector"])))
                if i == keys.size or keys[i] != s["device"] * 2 + int(s["vector"]) \
                        or sizes[i] != j.size or filled[i]:
                    raise ArchiveError("%s: %d reports that the frame table does not hold"
                                       % (s["entry"], j.size))
                out[order[starts[i]:starts[i] + sizes[i]]] = j
                filled[i] = True
            if not filled.all():
                raise ArchiveError("manifest: frames without their stream")
            self._offsets[fp] = out

    def offsets(self, fp: str) -> np.ndarray:
        return self._offsets[fp]


# ---- checking what an archive says, before believing it ----------------------------------------
_HEX_ID = re.compile(r"(?:[0-9a-fA-F]{2}){1,8}")
_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ENTRY = re.compile(r"streams/[0-9]{1,9}")
_CODEC = re.compile(r"[a-z0-9_]{1,32}")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CHUNK = 1 << 20


def _int(v, lo: int = INT64_MIN, hi: int = INT64_MAX) -> bool:
    """An integer (never a bool) in lo..hi."""
    return type(v) is int and lo <= v <= hi


def _hex_id(v) -> bool:
    """A device id as the manifest writes it: 1 to 8 bytes in hex."""
    return type(v) is str and _HEX_ID.fullmatch(v) is not None


def _damaged(what: str) -> ArchiveError:
    return ArchiveError("manifest: %s is missing or damaged" % what)


def _past(what: str, n, cap: int) -> ArchiveError:
    return ArchiveError("manifest: %s %s; an archive holds at most %d (the limits of "
                        "zeal.analysis.compress.archive)" % (n, what, cap))


def _json_depth(raw) -> int:
    """The deepest nesting of arrays and objects in a JSON text, without parsing it (strings
    removed, then a running count of the brackets, a chunk at a time)."""
    brackets = _STRING.sub(b"", bytes(raw)).translate(None, _NOT_BRACKETS)
    deepest = depth = 0
    for at in range(0, len(brackets), _CHUNK):
        a = np.frombuffer(brackets, dtype=np.uint8, count=min(_CHUNK, len(brackets) - at),
                          offset=at)
        steps = np.where((a == ord("[")) | (a == ord("{")), 1, -1).astype(np.int64)
        run = np.cumsum(steps) + depth
        deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest


class _NotAnInteger(ValueError):
    pass


def _no_float(text):
    raise _NotAnInteger(text)


def _parse_manifest(raw) -> dict:
    if _json_depth(raw) > MAX_DEPTH:
        raise ArchiveError("the manifest nests deeper than %d levels (version %d nests 4)"
                           % (MAX_DEPTH, VERSION))
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError("the manifest is not JSON (not UTF-8)") from None
    try:
        return json.loads(text, parse_float=_no_float, parse_constant=_no_float)
    except _NotAnInteger as exc:
        raise ArchiveError("the manifest holds the number %s; its numbers are integers"
                           % str(exc)[:40]) from None
    except (ValueError, RecursionError):
        raise ArchiveError("the manifest is not JSON") from None


def _manifest_checked(doc) -> dict:
    """The manifest, every field's type, range and count checked (ArchiveError otherwise)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ArchiveError("not a zeal archive (its manifest is not a %s manifest)" % FORMAT)
    if doc.get("version") not in VERSIONS or type(doc.get("version")) is not int:
        raise ArchiveError("archive version %r; this zeal reads versions %s"
                           % (doc.get("version"), " and ".join(map(str, VERSIONS))))
    need = {"source": str, "profiles": list, "devices": list, "streams": list}
    for key, kind in need.items():
        if not isinstance(doc.get(key), kind):
            raise _damaged(key)
    if doc["source"] not in ("database", "reports"):
        raise ArchiveError("manifest: unknown source %r" % doc["source"][:40])
    fps, devices, streams = doc["profiles"], doc["devices"], doc["streams"]
    if len(fps) > MAX_PROFILES:
        raise _past("profiles", len(fps), MAX_PROFILES)
    if not fps or not all(type(f) is str and _FINGERPRINT.fullmatch(f) for f in fps) \
            or len(set(fps)) != len(fps):
        raise _damaged("the profile list")
    if len(devices) > MAX_DEVICES:
        raise _past("devices", len(devices), MAX_DEVICES)
    if not all(map(_hex_id, devices)) or len(set(devices)) != len(devices):
        raise _damaged("the device list (ids in hex)")
    if len(streams) > MAX_STREAMS:
        raise _past("streams", len(streams), MAX_STREAMS)
    database = doc["source"] == "database"
    profile_set, total, symbols, keys, entries = set(fps), 0, 0, set(), set()
    for s in streams:
        if not (isinstance(s, dict) and type(s.get("entry")) is str
                and _ENTRY.fullmatch(s["entry"]) and type(s.get("codec")) is str
                and _CODEC.fullmatch(s["codec"]) and s.get("profile") in profile_set
                and type(s.get("vector")) is bool and _int(s.get("n"), 1)
                and (_int(s.get("device"), 0, len(devices) - 1) if database
                     else s.get("device") is None and not s["vector"])
                and ("symbols" not in s or (doc["version"] >= 2
                                            and _int(s["symbols"], 1, MAX_SYMBOLS)))):
            raise ArchiveError("manifest: a stream entry is damaged")
        key = (s["profile"], s["device"], s["vector"])
        if key in keys or s["entry"] in entries:
            raise ArchiveError("manifest: two streams for one device, profile and mode")
        keys.add(key)
        entries.add(s["entry"])
        total += s["n"]
        if total > MAX_REPORTS:
            raise _past("reports or more", total, MAX_REPORTS)
        symbols += s.get("symbols", s["n"])
        if symbols > MAX_SYMBOLS:
            raise _past("symbols or more", symbols, MAX_SYMBOLS)
    if not streams:
        raise ArchiveError("manifest: no streams")
    if not database:
        if len(fps) != 1 or devices:
            raise ArchiveError("manifest: a reports file's archive has one profile, no devices")
        return doc
    if not (isinstance(doc.get("frames"), dict) and isinstance(doc.get("losses"), list)
            and isinstance(doc.get("statuses"), list) and _int(doc.get("link_bytes"), 0)
            and all(isinstance(doc["frames"].get(c), list) for c in COLUMNS)):
        raise ArchiveError("manifest: the frame table or events are missing or damaged")
    losses, statuses = doc["losses"], doc["statuses"]
    if len(losses) > MAX_LOSSES:
        raise _past("loss entries", len(losses), MAX_LOSSES)
    for e in losses:
        if not (isinstance(e, list) and len(e) == 3 and (e[0] is None or _hex_id(e[0]))
                and e[1] in LOSS_KINDS and _int(e[2])):
            raise _damaged("a loss entry")
    if len(statuses) > MAX_STATUSES:
        raise _past("STATUS events", len(statuses), MAX_STATUSES)
    for e in statuses:
        if not (isinstance(e, list) and len(e) == 2 and (e[0] is None or _hex_id(e[0]))
                and type(e[1]) is str and len(e[1]) <= MAX_STATUS_DETAIL):
            raise _damaged("a STATUS entry (device, detail of at most %d characters)"
                           % MAX_STATUS_DETAIL)
    return doc


def _frame_columns(m: dict) -> Dict[str, np.ndarray]:
    """The frame table's columns (int64), every run checked first: integers, lengths >= 1
    summing to at most MAX_FRAMES frames, every value in its column's range (device and
    profile: an index into their lists; count: 1..wire.MAX_COUNT; boot, seq: int64) -- the
    ends of an arithmetic run are its extremes. Nothing is expanded before all of it holds."""
    ranges = {"device": (0, len(m["devices"]) - 1), "profile": (0, len(m["profiles"]) - 1),
              "vector": (0, 1), "count": (1, wire.MAX_COUNT), "debug": (0, 1),
              "boot": (INT64_MIN, INT64_MAX), "seq": (INT64_MIN, INT64_MAX)}
    frames = None
    for name in COLUMNS:
        lo, hi = ranges[name]
        length = 0
        for run in m["frames"][name]:
            if not (type(run) is list and len(run) == 3 and _int(run[0]) and _int(run[1])
                    and _int(run[2], 1)):
                raise ArchiveError("manifest: frame column %s is damaged" % name)
            a, step, k = run
            length += k
            if length > MAX_FRAMES:
                raise _past("frames or more", length, MAX_FRAMES)
            if not (lo <= a <= hi and lo <= a + step * (k - 1) <= hi):
                raise ArchiveError("manifest: frame column %s has a value outside %d..%d"
                                   % (name, lo, hi))
        if frames is not None and length != frames:
            raise ArchiveError("manifest: frame columns of different lengths")
        frames = length
    return {name: unruns(m["frames"][name], name) for name in COLUMNS}


def unruns(spec, what: str) -> np.ndarray:
    """Exact inverse of `runs` (vectorised; int64 arithmetic wraps, and a run whose ends fit
    int64 has every value exact)."""
    try:
        arr = np.array(spec, dtype=np.int64).reshape(-1, 3)
    except (TypeError, ValueError, OverflowError):
        raise ArchiveError("manifest: frame column %s is damaged" % what) from None
    first, step, k = arr[:, 0], arr[:, 1], arr[:, 2]
    if arr.size and int(k.min()) < 1:
        raise ArchiveError("manifest: frame column %s is damaged" % what)
    n = int(k.sum())
    within = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    with np.errstate(over="ignore"):
        return np.repeat(first, k) + np.repeat(step, k) * within


def _reports_match(m: dict, cols: Dict[str, np.ndarray]) -> None:
    """Every stream's n equals the reports the frame table gives its device, profile and
    mode, and every frame's reports have a stream: checked before any stream is decoded."""
    ndev = max(len(m["devices"]), 1)
    key = (cols["profile"] * ndev + cols["device"]) * 2 + cols["vector"]
    keys, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=cols["count"], minlength=keys.size)
    held = {int(k): int(c) for k, c in zip(keys, sums)}
    fp_ix = {fp: i for i, fp in enumerate(m["profiles"])}
    for s in m["streams"]:
        got = held.pop((fp_ix[s["profile"]] * ndev + s["device"]) * 2 + int(s["vector"]), 0)
        if got != s["n"]:
            raise ArchiveError("manifest: the frame table gives %s %d reports, the manifest "
                               "says %d" % (s["entry"], got, s["n"]))
    if held:
        raise ArchiveError("manifest: %d reports of the frame table have no stream"
                           % sum(held.values()))


def _check_directory(fh, path: str) -> None:
    """The zip's end record, read before zipfile reads the directory it points to: at most
    MAX_ENTRIES entries in at most MAX_ENTRIES x DIRECTORY_ENTRY_BYTES bytes."""
    end_record = getattr(zipfile, "_EndRecData", None)   # what zipfile itself reads first
    if end_record is None:
        return
    try:
        rec = end_record(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        rec = None
    if rec is None:
        raise ArchiveError("%s is not a zeal archive (not a zip file)" % path)
    entries, size = rec[zipfile._ECD_ENTRIES_TOTAL], rec[zipfile._ECD_SIZE]
    if entries > MAX_ENTRIES or size > MAX_ENTRIES * DIRECTORY_ENTRY_BYTES:
        raise ArchiveError("%s: its zip directory lists %d entries in %d bytes; a zeal archive "
                           "has at most %d entries (1 + profiles + streams)"
                           % (path, entries, size, MAX_ENTRIES))
    fh.seek(0)


def _entry(z: zipfile.ZipFile, path: str, name: str, cap: int, why: str) -> bytearray:
    """An entry's bytes, at most `cap` of them (its declared size checked first, then read a
    chunk at a time: never more than cap + 1 bytes held)."""
    try:
        info = z.getinfo(name)
    except KeyError:
        raise ArchiveError("%s: entry %s is missing" % (path, name)) from None
    if info.flag_bits & 0x1:
        raise ArchiveError("%s: entry %s is encrypted" % (path, name))
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ArchiveError("%s: entry %s uses zip compression method %d; a zeal archive's "
                           "entries are stored or deflated" % (path, name, info.compress_type))
    if info.file_size > cap:
        raise ArchiveError("%s: entry %s is %d bytes; at most %d (%s)"
                           % (path, name, info.file_size, cap, why))
    out = bytearray()
    try:
        with z.open(info) as fh:
            while True:
                chunk = fh.read(min(_CHUNK, cap + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
                if len(out) > cap:
                    raise ArchiveError("%s: entry %s holds more than %d bytes (%s)"
                                       % (path, name, cap, why))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError, ValueError) as exc:
        raise ArchiveError("%s: entry %s is damaged (%s)" % (path, name, exc)) from None
    return out


def read(path: str) -> Archive:
    """Open and check an archive; every stream decoded (codec from the registry), within the
    limits of the module docstring."""
    from . import get

    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise ArchiveError("archive %s does not exist" % path) from None
    except IsADirectoryError:
        raise ArchiveError("archive %s is not a file" % path) from None
    except OSError as exc:
        raise ArchiveError("cannot read archive %s: %s" % (path, exc.strerror or exc)) from None
    with fh:
        _check_directory(fh, path)
        try:
            z = zipfile.ZipFile(fh)
        except OSError as exc:
            raise ArchiveError("cannot read archive %s: %s" % (path, exc.strerror or exc)) \
                from None
        except (zipfile.BadZipFile, ValueError, EOFError, OverflowError):
            raise ArchiveError("%s is not a zeal archive (not a zip file)" % path) from None
        with z:
            return _read(z, path, get)


def _read(z: zipfile.ZipFile, path: str, get) -> Archive:
    raw = _entry(z, path, MANIFEST, MAX_MANIFEST_BYTES, "the longest manifest within the "
                 "archive limits")
    try:
        m = _manifest_checked(_parse_manifest(raw))
        del raw
        cols = _frame_columns(m) if m["source"] == "database" else None
        if cols is not None:
            _reports_match(m, cols)
    except ArchiveError as exc:
        raise ArchiveError("%s: %s" % (path, exc)) from None
    profiles = {}
    files = {}                         # every profile file read, by fingerprint (read once)

    def file_bytes(fp: str) -> bytes:
        if fp not in files:
            files[fp] = bytes(_entry(z, path, profile_entry(fp), MAX_PROFILE_BYTES,
                                     "the longest profile file"))
            if sum(map(len, files.values())) > MAX_PROFILE_TOTAL:
                raise ArchiveError("%s: its profile files hold more than %d bytes, the most "
                                   "an archive holds (the limits of "
                                   "zeal.analysis.compress.archive)" % (path, MAX_PROFILE_TOTAL))
        return files[fp]

    for fp in m["profiles"]:
        # a multi header's attribute files are entries of their own, read as it names them
        prof = kinds.loads(file_bytes(fp), lambda i, afp: file_bytes(afp)
                           if type(afp) is str and _FINGERPRINT.fullmatch(afp) else None)
        if prof.fingerprint != fp:
            raise ArchiveError("%s: profile %s has fingerprint %s"
                               % (path, fp[:16], prof.fingerprint[:16]))
        if m["version"] == 1 and SH.shape_of(prof) is not SH.Patterns:
            raise ArchiveError("%s: profile %s is a %s profile, which a version 1 archive "
                               "does not keep" % (path, fp[:16], kinds.of(prof).name))
        profiles[fp] = prof
    offsets = []
    for s in m["streams"]:
        prof = profiles[s["profile"]]
        shape = SH.shape_of(prof)
        what = "%s: %s" % (path, s["entry"])
        count = s.get("symbols", s["n"])
        if count != s["n"] * shape.per_report(prof):
            raise ArchiveError("%s: %d symbols for %d reports of %d symbols each"
                               % (what, count, s["n"], shape.per_report(prof)))
        codec = stream_codec(s["codec"], get(s["codec"]), prof)  # ZealError naming a package
        if codec is None:
            raise ArchiveError("%s: codec %s does not apply to %s streams"
                               % (what, s["codec"], shape.name))
        blob = _entry(z, path, s["entry"], stream_bytes_cap(count, shape.models(prof)),
                      "%d symbols' worth" % count)
        try:
            bits = codec.decode(blob, prof, limit=count)
        except ZealError as exc:
            raise ArchiveError("%s: %s" % (what, exc)) from None
        except Exception as exc:       # a damaged blob: whatever the codec's library raises
            raise ArchiveError("%s cannot be decoded by %s (%s)"
                               % (what, s["codec"], type(exc).__name__)) from None
        del blob
        if shape is SH.Patterns:
            j = offsets_of(prof, bits, what)
        else:
            j = np.asarray(bits, dtype=np.uint64)
            try:
                shape.check(prof, j, what)
            except SH.StreamShapeError as exc:
                raise ArchiveError(str(exc)) from None
        if j.size != count:
            raise ArchiveError("%s: %d symbols, the manifest says %d" % (what, j.size, count))
        offsets.append(j)
    return Archive(path, m, profiles, offsets, cols)


def default_path(source_path: str) -> str:
    """FILE.db -> FILE.zeal.zip (the source's name without its last extension)."""
    stem, ext = os.path.splitext(source_path)
    return (stem if ext else source_path) + ".zeal.zip"


__all__ = ["ArchiveError", "Archive", "ArchivedData", "Stream", "read", "write", "measure",
           "database_streams", "report_bits", "offsets_of", "runs", "unruns", "default_path"]
