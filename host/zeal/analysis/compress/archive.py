"""The archive: a collection's reports compressed, with what `zeal analyze` needs to answer
exactly as it does on the database.

Format (version 1): a ZIP file (the standard container: `unzip -l` lists it, any zip tool
extracts it; CRC-32 per entry). Its comment is `zeal-archive 1`; its entries:
- `manifest.json` (deflated): {"format": "zeal-archive", "version": 1, "source": "database"
  or "reports", "profiles": [fingerprint, ...], "devices": [id hex, ...], "streams": [...],
  "frames": {...}, "losses": [...], "statuses": [...], "link_bytes", "absent": [...]};
- `profiles/<first 16 hex digits of the fingerprint>.json` (deflated): each profile's file
  text, as `zeal profile -o` writes it (the file a device reads; checked on reading against
  the manifest's full fingerprint);
- `streams/<i>` (stored, already compressed): the reports of one device under one profile
  (test-mode frames apart), as the codec named in the stream's manifest entry encodes their
  float64 bit patterns, in arrival order.
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
"""
import json
import os
import time
import zipfile
import zlib
from typing import Dict, List, Optional, Sequence

import numpy as np

from ...errors import ZealError
from ...mechanism.profile import Profile, loads as profile_loads
from ..decode import ROW_BOOT, ROW_COUNT, ROW_DEBUG, ROW_DEVICE, ROW_FP, ROW_SEQ
from ..export import write_atomically

FORMAT = "zeal-archive"
VERSION = 1
COMMENT = b"zeal-archive 1"
MANIFEST = "manifest.json"
LOSS_KINDS = ("reject", "gap", "reboot")     # the event kinds analyze counts
ABSENT = ["arrival", "nonce", "event times and details (other than STATUS details)"]
COLUMNS = ("device", "profile", "vector", "count", "debug", "boot", "seq")


class ArchiveError(ZealError):
    """An archive that cannot be read: damaged, of another format or version, or needing a
    codec whose library is missing."""


# ---- frame table: arithmetic runs ---------------------------------------------------------------
def runs(values: Sequence[int]) -> List[List[int]]:
    """[[first, step, length], ...] covering `values` in order (greedy: a run extends while
    the step holds). Exact inverse: `unruns`."""
    v = np.asarray(values, dtype=np.int64)
    out = []
    i, n = 0, v.size
    while i < n:
        if i + 1 == n:
            out.append([int(v[i]), 0, 1])
            break
        step = int(v[i + 1] - v[i])
        d = np.diff(v[i:])
        bad = np.flatnonzero(d != step)
        length = (int(bad[0]) if bad.size else d.size) + 1
        out.append([int(v[i]), step, length])
        i += length
    return out


def unruns(spec, what: str) -> np.ndarray:
    try:
        parts = [np.int64(a) + np.int64(s) * np.arange(int(k), dtype=np.int64)
                 for a, s, k in spec]
    except (TypeError, ValueError, OverflowError):
        raise ArchiveError("manifest: frame column %s is damaged" % what) from None
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


# ---- the streams --------------------------------------------------------------------------------
class Stream:
    """The reports of one device (or of a reports file: device None) under one profile."""

    def __init__(self, device: Optional[int], fp: str, vector: bool, bits: np.ndarray):
        self.device, self.fp, self.vector, self.bits = device, fp, vector, bits


def report_bits(profile: Profile, offsets: np.ndarray) -> np.ndarray:
    """Offsets j -> the reports' float64 bit patterns (uint64), as the device's x* carry."""
    base = np.uint64(((profile.exponent + 1023) << 52) | profile.k_lo)
    return np.asarray(offsets, dtype=np.int64).astype(np.uint64) + base


def offsets_of(profile: Profile, bits: np.ndarray, what: str) -> np.ndarray:
    """Bit patterns -> offsets, every one checked against the profile's grid."""
    bits = np.asarray(bits, dtype=np.uint64)
    base = ((profile.exponent + 1023) << 52) | profile.k_lo
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


def measure(streams: List[Stream], profiles: Dict[str, Profile], codecs: dict) -> dict:
    """{codec name: {"blobs": [bytes per stream], "bytes", "encode_s", "decode_s"}} for every
    codec (times: one pass over every stream, the best of passes filling MIN_TIME_S), each
    blob checked to decode to its stream exactly (ArchiveError otherwise: a codec that does
    not round-trip is a bug, never a silently wrong archive)."""
    out = {}
    for name, codec in codecs.items():
        blobs, enc_s = _best_time(lambda: [bytes(codec.encode(s.bits, profiles[s.fp]))
                                           for s in streams])
        backs, dec_s = _best_time(lambda: [codec.decode(b, profiles[s.fp])
                                           for b, s in zip(blobs, streams)])
        for s, back in zip(streams, backs):
            if not np.array_equal(np.asarray(back, dtype=np.uint64), s.bits):
                raise ArchiveError("codec %s does not decode its own output exactly" % name)
        out[name] = {"blobs": blobs, "bytes": sum(map(len, blobs)), "encode_s": enc_s,
                     "decode_s": dec_s}
    return out


# ---- writing ------------------------------------------------------------------------------------
def write(path: str, *, source: str, profiles: Dict[str, Profile], devices: List[bytes],
          columns: Optional[dict], streams: List[Stream], sizes: dict, candidates: List[str],
          losses=None, statuses=None, link_bytes: Optional[int] = None) -> dict:
    """Write the archive (atomically: a temporary file renamed over `path`); each stream in
    the smallest of the `candidates` codecs (measured in `sizes`; ties: the first named).
    Returns the manifest, with "bytes" (the archive's size) added."""
    fps = list(profiles)
    manifest = {"format": FORMAT, "version": VERSION, "source": source,
                "profiles": fps, "devices": [d.hex() for d in devices], "streams": [],
                "frames": None if columns is None else
                {name: runs(columns[name]) for name in COLUMNS},
                "losses": losses, "statuses": statuses, "link_bytes": link_bytes,
                "absent": ABSENT if source == "database" else
                ["devices", "frames", "losses", "events", "wire bytes"]}
    entries = []
    for i, s in enumerate(streams):
        best = min(candidates, key=lambda c: (len(sizes[c]["blobs"][i]), candidates.index(c)))
        blob = sizes[best]["blobs"][i]
        entry = "streams/%d" % i
        manifest["streams"].append({"entry": entry, "device": s.device, "profile": s.fp,
                                    "vector": s.vector, "codec": best, "n": int(s.bits.size),
                                    "bytes": len(blob)})
        entries.append((entry, blob))
    def write(fh):
        with zipfile.ZipFile(fh, "w") as z:
            z.comment = COMMENT
            z.writestr(_info(MANIFEST), json.dumps(manifest, separators=(",", ":")),
                       compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for fp in fps:
                z.writestr(_info(profile_entry(fp)), profiles[fp].to_json(),
                           compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for entry, blob in entries:
                z.writestr(_info(entry), blob, compress_type=zipfile.ZIP_STORED)

    write_atomically(path, write, binary=True)  # a temporary file renamed over path
    manifest["bytes"] = os.path.getsize(path)
    return manifest


def profile_entry(fp: str) -> str:
    return "profiles/%s.json" % fp[:16]


def _info(name: str) -> zipfile.ZipInfo:
    """An entry with a fixed date (1980-01-01): the same collection gives the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


# ---- reading ------------------------------------------------------------------------------------
class Archive:
    """A read archive: manifest, profiles, and every stream's offsets (checked)."""

    def __init__(self, path: str, manifest: dict, profiles: Dict[str, Profile],
                 offsets: List[np.ndarray]):
        self.path, self.manifest, self.profiles = path, manifest, profiles
        self.stream_offsets = offsets

    @property
    def source(self) -> str:
        return self.manifest["source"]

    @property
    def n(self) -> int:
        return sum(int(j.size) for j in self.stream_offsets)

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
        cols = {name: unruns(m["frames"][name], name) for name in COLUMNS}
        nframes = {c.size for c in cols.values()}
        if len(nframes) != 1:
            raise ArchiveError("manifest: frame columns of different lengths")
        keep = np.ones(nframes.pop(), dtype=bool) if include_vector else cols["vector"] == 0
        try:
            self.rows = [(devices[d], int(b), int(s), fps[p], int(c), None, None, None, int(g))
                         for d, p, c, g, b, s in zip(*(cols[k][keep].tolist() for k in
                                                       ("device", "profile", "count", "debug",
                                                        "boot", "seq")))]
        except IndexError:
            raise ArchiveError("manifest: a frame names a device or profile it lacks") from None
        self.by_fp: Dict[str, list] = {}
        for r in self.rows:
            self.by_fp.setdefault(r[ROW_FP], []).append(r)
        self.events = {(None if d is None else bytes.fromhex(d), kind, ""): int(c)
                       for d, kind, c in m["losses"]}
        self.statuses = [{"device": d, "kind": "status", "detail": detail}
                         for d, detail in m["statuses"]]
        self.link_bytes = int(m["link_bytes"])
        # every fingerprint's offsets in row order, from the per-device streams
        self._offsets = {}
        for fp in self.by_fp:
            p = fps.index(fp)
            mine = (cols["profile"] == p) & keep
            label = np.repeat(cols["device"][mine] * 2 + cols["vector"][mine],
                              cols["count"][mine])
            out = np.empty(label.size, dtype=np.int64)
            for s, j in zip(m["streams"], archive.stream_offsets):
                if s["profile"] != fp or (s["vector"] and not include_vector):
                    continue
                where = label == s["device"] * 2 + int(s["vector"])
                if int(where.sum()) != j.size:
                    raise ArchiveError("%s: %d reports for %d in the frame table"
                                       % (s["entry"], j.size, int(where.sum())))
                out[where] = j
            self._offsets[fp] = out

    def offsets(self, fp: str) -> np.ndarray:
        return self._offsets[fp]


def _manifest_checked(doc) -> dict:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ArchiveError("not a zeal archive (its manifest is not a %s manifest)" % FORMAT)
    if doc.get("version") != VERSION:
        raise ArchiveError("archive version %r; this zeal reads version %d"
                           % (doc.get("version"), VERSION))
    need = {"source": str, "profiles": list, "devices": list, "streams": list}
    for key, kind in need.items():
        if not isinstance(doc.get(key), kind):
            raise ArchiveError("manifest: %s is missing or damaged" % key)
    if doc["source"] not in ("database", "reports"):
        raise ArchiveError("manifest: unknown source %r" % doc["source"])
    if doc["source"] == "database":
        if not (isinstance(doc.get("frames"), dict) and isinstance(doc.get("losses"), list)
                and isinstance(doc.get("statuses"), list)
                and isinstance(doc.get("link_bytes"), int)
                and all(isinstance(doc["frames"].get(c), list) for c in COLUMNS)):
            raise ArchiveError("manifest: the frame table or events are missing or damaged")
    for s in doc["streams"]:
        if not (isinstance(s, dict) and isinstance(s.get("entry"), str)
                and isinstance(s.get("codec"), str) and s.get("profile") in doc["profiles"]
                and isinstance(s.get("n"), int)):
            raise ArchiveError("manifest: a stream entry is damaged")
    return doc


def read(path: str) -> Archive:
    """Open and check an archive; every stream decoded (codec from the registry)."""
    from . import get

    try:
        z = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ArchiveError("archive %s does not exist" % path) from None
    except IsADirectoryError:
        raise ArchiveError("archive %s is not a file" % path) from None
    except OSError as exc:
        raise ArchiveError("cannot read archive %s: %s" % (path, exc.strerror or exc)) from None
    except zipfile.BadZipFile:
        raise ArchiveError("%s is not a zeal archive (not a zip file)" % path) from None
    with z:
        def entry(name):
            try:
                return z.read(name)
            except KeyError:
                raise ArchiveError("%s: entry %s is missing" % (path, name)) from None
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
                raise ArchiveError("%s: entry %s is damaged (%s)" % (path, name, exc)) from None

        try:
            doc = json.loads(entry(MANIFEST).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ArchiveError("%s: the manifest is not JSON" % path) from None
        try:
            m = _manifest_checked(doc)
        except ArchiveError as exc:
            raise ArchiveError("%s: %s" % (path, exc)) from None
        profiles = {}
        for fp in m["profiles"]:
            prof = profile_loads(entry(profile_entry(fp)))
            if prof.fingerprint != fp:
                raise ArchiveError("%s: profile %s has fingerprint %s"
                                   % (path, fp[:16], prof.fingerprint[:16]))
            profiles[fp] = prof
        offsets = []
        for s in m["streams"]:
            codec = get(s["codec"])        # ZealError naming the package when it is missing
            prof = profiles[s["profile"]]
            what = "%s: %s" % (path, s["entry"])
            try:
                bits = codec.decode(entry(s["entry"]), prof)
            except ZealError:
                raise
            except Exception as exc:       # a damaged blob: whatever the codec's library raises
                raise ArchiveError("%s cannot be decoded by %s (%s)"
                                   % (what, s["codec"], type(exc).__name__)) from None
            j = offsets_of(prof, bits, what)
            if j.size != s["n"]:
                raise ArchiveError("%s: %d reports, the manifest says %d" % (what, j.size, s["n"]))
            offsets.append(j)
    return Archive(path, m, profiles, offsets)


def default_path(source_path: str) -> str:
    """FILE.db -> FILE.zeal.zip (the source's name without its last extension)."""
    stem, ext = os.path.splitext(source_path)
    return (stem if ext else source_path) + ".zeal.zip"


__all__ = ["ArchiveError", "Archive", "ArchivedData", "Stream", "read", "write", "measure",
           "database_streams", "report_bits", "offsets_of", "runs", "unruns", "default_path"]
