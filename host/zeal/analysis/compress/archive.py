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
allocates for it and `write` refuses to write past the same caps: compress.archive_format
states each cap and why it is what it is (MAX_REPORTS, MAX_FRAMES, ..., stream_bytes_cap).

This module is the archive's one import path; the work is done, each part once, by:
- archive_format: names, versions, the caps, `ArchiveError`;
- archive_frames: the frame table's arithmetic runs (`runs`, `unruns`);
- archive_streams: `Stream`, the streams of a database (`database_streams`), a report's bit
  pattern and back (`report_bits`, `offsets_of`), the codec a stream's shape runs;
- archive_zip: the zip entries as written, and read within the caps;
- archive_manifest: the manifest checked before it is believed;
- archive_write: `measure` (every codec timed on whole streams: `zeal compress --table`),
  `encode_each` (each codec once a stream, from a spill: the default), `choose`, `write`;
- archive_read: `read`, `Archive`, `ArchivedData`;
- archive_volumes: a store past one volume as a set of archives (VOLUME_REPORTS reports,
  VOLUME_FRAMES frames each; "volume", "volumes" and "set" in each manifest): their names
  (`volume_path`), their writing (`finalize`) and `VolumeSet`, every volume read in turn.
"""
import os

from .archive_format import (ABSENT, COLUMNS, DIRECTORY_ENTRY_BYTES, FORMAT, INT64_MAX,
                             INT64_MIN, LOSS_KINDS, MANIFEST, MAX_DEPTH, MAX_DEVICES, MAX_ENTRIES,
                             MAX_FRAMES, MAX_LOSSES, MAX_MANIFEST_BYTES, MAX_MODELS,
                             MAX_PROFILE_BYTES, MAX_PROFILE_TOTAL, MAX_PROFILES, MAX_REPORTS,
                             MAX_STATUS_DETAIL, MAX_STATUSES, MAX_STREAMS, MAX_SYMBOLS,
                             MAX_VOLUMES, PROFILE_MAX_FILE, SET_HEX, U32_MAX, VERSION, VERSIONS,
                             VOLUME_FRAMES, VOLUME_REPORTS, ArchiveError, profile_entry,
                             stream_bytes_cap)
from .archive_frames import runs, unruns
from .archive_read import Archive, ArchivedData, read
from .archive_streams import Stream, database_streams, offsets_of, report_bits, stream_codec
from .archive_volumes import VolumeSet, finalize, new_set_id, volume_path
from .archive_write import MIN_TIME_S, Sized, choose, encode_each, measure, write


def default_path(source_path: str) -> str:
    """FILE.db -> FILE.zeal.zip (the source's name without its last extension)."""
    stem, ext = os.path.splitext(source_path)
    return (stem if ext else source_path) + ".zeal.zip"


__all__ = ["ArchiveError", "Archive", "ArchivedData", "Stream", "read", "write", "measure",
           "encode_each", "choose", "Sized",
           "database_streams", "report_bits", "offsets_of", "runs", "unruns", "default_path",
           # re-exported from the modules above, importable here as before the split
           "stream_codec", "profile_entry", "stream_bytes_cap", "MIN_TIME_S", "FORMAT",
           "VERSION", "VERSIONS", "MANIFEST", "LOSS_KINDS", "ABSENT", "COLUMNS", "INT64_MIN",
           "INT64_MAX", "U32_MAX", "MAX_REPORTS", "MAX_SYMBOLS", "MAX_MODELS", "MAX_FRAMES",
           "MAX_DEVICES", "MAX_STREAMS", "MAX_PROFILES", "MAX_STATUSES", "MAX_LOSSES",
           "MAX_DEPTH", "MAX_PROFILE_BYTES", "MAX_PROFILE_TOTAL", "MAX_ENTRIES",
           "DIRECTORY_ENTRY_BYTES", "MAX_STATUS_DETAIL", "MAX_MANIFEST_BYTES", "PROFILE_MAX_FILE",
           # volumes (archive_volumes)
           "VolumeSet", "finalize", "new_set_id", "volume_path", "VOLUME_REPORTS",
           "VOLUME_FRAMES", "MAX_VOLUMES", "SET_HEX"]
