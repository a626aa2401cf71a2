"""Volumes (shared_spec/archive.md, "Volumes"; issue "Scale: a billion reports in constant
memory"): a store past one volume is written by `zeal compress` as a set of archives, so that
`zeal analyze --archive` holds one volume at a time whatever the store.

- The cut: volume 1 takes the store's frames in the frame table's order (real frames in
  arrival order, then test-mode ones) until the next frame would take it past VOLUME_REPORTS
  reports or VOLUME_FRAMES frames (archive_format); volume 2 the next run, and so on
  (compress.store_streams.read_volumes). Each is a complete archive of its frames, readable
  alone by `read`; everything that is not per frame (losses, statuses, link bytes) is in
  volume 1 only, so the set adds up to the store. A store that fits in one volume is one
  archive without volume keys, as before volumes.
- The names: volume 1 at the path given (`--out`), volume i > 1 beside it at
  `volume_path(first, i)`: the first's name without `.zeal.zip`, then `.v<i>.zeal.zip`.
- The keys: each manifest has "volume" (1-based), "volumes" (k) and "set" (SET_HEX random hex
  digits shared by the set), after "version" (archive_manifest checks them).
- Writing: volumes 2..k are written as they fill, into temporary files whose manifest says
  "volumes": 0 (k is not known yet), then `finalize` copies each to its name with k (the
  manifest re-deflated, every other entry copied as it is); volume 1 is written last, when the
  events are read (command.py).
- Reading: `VolumeSet(archive)` (any volume of the set) reads volume 1, 2, ..., k in turn,
  each checked to be that volume of the same set and count, holding one at a time; it gives
  what analyze_data reads (profiles, events, statuses, link_bytes from volume 1, and the
  chunks of every volume in order).
"""
import os
import secrets
import shutil
import zipfile
from typing import Dict

from . import archive_format as F
from .archive_format import ArchiveError
from .archive_zip import entry_info, read_entry
from .spill import COPY_CHUNK

SUFFIX = ".zeal.zip"


def new_set_id() -> str:
    return secrets.token_hex(F.SET_HEX // 2)


def volume_path(first: str, i: int) -> str:
    """Volume i's path in the set whose volume 1 is `first`."""
    if i == 1:
        return first
    stem = first[:-len(SUFFIX)] if first.endswith(SUFFIX) else first
    return "%s.v%d%s" % (stem, i, SUFFIX)


def first_volume(path: str, volume: int) -> str:
    """The path of volume 1 of the set whose volume `volume` is at `path` (the name
    volume_path gives it; ArchiveError when the name is not one)."""
    if volume == 1:
        return path
    tail = ".v%d%s" % (volume, SUFFIX)
    if path.endswith(tail):
        stem = path[:-len(tail)]
        for first in (stem + SUFFIX, stem):
            if volume_path(first, volume) == path and os.path.isfile(first):
                return first
        raise ArchiveError("volume 1 of the set of %s is missing: %s" % (path, stem + SUFFIX))
    raise ArchiveError("%s is volume %d of a set, but not named NAME%s: its other volumes "
                       "cannot be found" % (path, volume, tail))


def temporary_path(final: str) -> str:
    """A new name beside `final` for a volume being written."""
    return "%s.%d.%s.part" % (final, os.getpid(), secrets.token_hex(4))


def finalize(temp: str, final: str, volumes: int) -> int:
    """The volume written to `temp` with "volumes": 0 copied to `final` with "volumes":
    `volumes` (the manifest re-deflated as archive_write deflates it, every other entry copied
    as it is: the bytes `write` makes with that count); `temp` removed. Returns final's
    size."""
    import json

    from ..export import write_atomically

    with zipfile.ZipFile(temp) as src:
        raw = bytes(read_entry(src, temp, F.MANIFEST, F.MAX_MANIFEST_BYTES, "a manifest"))
        head = json.loads(raw[:raw.index(b',"set":')] + b"}")
        if head.get("volumes") != 0 or list(head)[2:] != ["volume", "volumes"]:
            raise ArchiveError("%s: not a volume being written" % temp)
        old = json.dumps(head, separators=(",", ":"))[:-1].encode()
        head["volumes"] = volumes
        new = json.dumps(head, separators=(",", ":"))[:-1].encode()
        raw = new + raw[len(old):]

        def write(fh):
            with zipfile.ZipFile(fh, "w") as z:
                z.comment = src.comment
                for info in src.infolist():
                    out = entry_info(info.filename)
                    out.compress_type = info.compress_type
                    if info.filename == F.MANIFEST:
                        z.writestr(out, raw, compress_type=zipfile.ZIP_DEFLATED,
                                   compresslevel=9)
                    elif info.compress_type == zipfile.ZIP_DEFLATED:    # a profile's file
                        z.writestr(out, src.read(info), compress_type=zipfile.ZIP_DEFLATED,
                                   compresslevel=9)
                    else:                                              # a stream, stored
                        out.file_size = info.file_size
                        with src.open(info) as a, z.open(out, mode="w") as b:
                            shutil.copyfileobj(a, b, COPY_CHUNK)
        write_atomically(final, write, binary=True)
    os.unlink(temp)
    return os.path.getsize(final)


class VolumeSet:
    """Every volume of a set in turn, as `zeal analyze` reads it (analyze_data): profiles
    (filled as the volumes are read), events, statuses and link_bytes (volume 1's), and
    `chunks()`, the chunks of each volume in order (decode.frame_columns, as analyze_data
    makes them of one archive), one volume held at a time. Made from any volume of the set
    (an Archive that `read` gave): every volume's file is checked to exist first; each is
    checked, as it is read, to be that volume of the same set and count."""

    def __init__(self, archive, include_vector: bool = False):
        self.include_vector = include_vector
        self.volumes, self.set_id = archive.volumes, archive.set_id
        self.first = first_volume(archive.path, archive.volume)
        self.path = archive.path
        self.profiles: Dict[str, object] = {}
        self._devices = set()
        for i in range(1, self.volumes + 1):
            p = volume_path(self.first, i)
            if not os.path.isfile(p):
                raise ArchiveError("volume %d of %d of %s is missing: %s"
                                   % (i, self.volumes, self.first, p))
        self._data = None      # volume 1's ArchivedData, until its chunks are taken
        self._events = None    # volume 1's (events, statuses, link_bytes), once read
        if archive.volume == 1:
            self._data = self._loaded(archive, 1)

    def _read(self, i: int):
        from .archive_read import read

        return read(volume_path(self.first, i))

    def _loaded(self, arc, i: int):
        """The volume's ArchivedData, once it is checked to be volume i of this set."""
        if (arc.volume, arc.volumes, arc.set_id) != (i, self.volumes, self.set_id):
            what = ("an archive without volumes" if arc.set_id is None else
                    "volume %d of %d of set %s" % (arc.volume, arc.volumes, arc.set_id))
            raise ArchiveError("%s is %s, not volume %d of %d of set %s"
                               % (arc.path, what, i, self.volumes, self.set_id))
        if not arc.patterns_only:
            raise ArchiveError("%s: a volume holds window-grid and table reports only"
                               % arc.path)
        for fp, prof in arc.profiles.items():
            self.profiles.setdefault(fp, prof)
        self._devices.update(arc.manifest["devices"])
        if len(self.profiles) > F.MAX_PROFILES or len(self._devices) > F.MAX_DEVICES:
            raise ArchiveError("%s: the set holds more than %d profiles or %d devices, the "
                               "most an archive holds" % (arc.path, F.MAX_PROFILES,
                                                          F.MAX_DEVICES))
        data = arc.loaded(self.include_vector)
        if i == 1:
            self._events = (data.events, data.statuses, data.link_bytes)
        return data

    def _first_data(self):
        if self._data is None and self._events is None:
            self._data = self._loaded(self._read(1), 1)
        return self._data

    @property
    def events(self) -> dict:
        self._first_data()
        return self._events[0]

    @property
    def statuses(self) -> list:
        self._first_data()
        return self._events[1]

    @property
    def link_bytes(self) -> int:
        self._first_data()
        return self._events[2]

    def chunks(self):
        """(fingerprint, frame_dev, names, counts, debug, offsets) of each volume in turn,
        volume 1 first (ArchivedData.chunks: a profile at a time, in pages): every chunk of a
        profile (and of a device) continues its sequence. A volume is let go as its chunks
        are taken, before the next is read."""
        for i in range(1, self.volumes + 1):
            data = self._first_data() if i == 1 else self._loaded(self._read(i), i)
            self._data = None
            yield from data.chunks()
            del data


__all__ = ["SUFFIX", "VolumeSet", "new_set_id", "volume_path", "first_volume",
           "temporary_path", "finalize"]
