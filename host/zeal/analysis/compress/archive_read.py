"""Reading an archive (compress.archive): `read` checks the zip, the manifest and the
profiles, decodes every stream and checks it against its profile's grid; `Archive` holds the
result and `ArchivedData` rebuilds from it what analyze reads from `decode.Loaded`."""
import zipfile
from typing import Dict, List, Optional

import numpy as np

from ...errors import ZealError
from ...mechanism import kinds
from ...mechanism.grid.profile import Profile
from . import streams as SH
from . import archive_format as F
from .archive_format import ArchiveError
from .archive_manifest import (FINGERPRINT, frame_columns, manifest_checked, parse_manifest,
                               reports_match)
from .archive_streams import offsets_of, report_bits, stream_codec
from .archive_zip import check_directory, read_entry
from ..decode import ROW_FP

PAGE = 4096     # frames a chunk of `ArchivedData.chunks` (the store's page, as analyze reads it)


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
    def volume(self) -> int:
        """Which volume of its set this archive is (1 for an archive without volumes)."""
        return self.manifest.get("volume", 1)

    @property
    def volumes(self) -> int:
        """The volumes of its set (1 for an archive without volumes)."""
        return self.manifest.get("volumes", 1)

    @property
    def set_id(self) -> Optional[str]:
        """Its set's id (hex), or None for an archive without volumes."""
        return self.manifest.get("set")

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
        # of one (device, test mode) label, in row order, are that stream's, in order. The
        # work is per frame (each frame's reports are consecutive in both orders); a profile
        # of one stream has that stream's offsets as they are (no copy)
        self._offsets = {}
        for fp in self.by_fp:
            p = fps.index(fp)
            mine = np.flatnonzero((cols["profile"] == p) & keep)
            label = cols["device"][mine] * 2 + cols["vector"][mine]     # a frame's stream
            count = cols["count"][mine]
            order = np.argsort(label, kind="stable")
            keys, starts, sizes = np.unique(label[order], return_index=True,
                                            return_counts=True)
            end = np.cumsum(count)           # after each frame's reports, in row order
            out = None
            filled = np.zeros(keys.size, dtype=bool)
            for s, j in zip(m["streams"], archive.stream_offsets):
                if s["profile"] != fp or (s["vector"] and not include_vector):
                    continue
                key = s["device"] * 2 + int(s["vector"])
                i = int(np.searchsorted(keys, key))
                frames = order[starts[i]:starts[i] + sizes[i]] if i < keys.size else order[:0]
                c = count[frames]
                if i == keys.size or keys[i] != key or int(c.sum()) != j.size or filled[i]:
                    raise ArchiveError("%s: %d reports that the frame table does not hold"
                                       % (s["entry"], j.size))
                filled[i] = True
                if keys.size == 1:
                    out = j
                    continue
                if out is None:
                    out = np.empty(int(end[-1]), dtype=np.int64)
                # report r of the stream, in its frame k: at end[k] - c[k] + r - (c[0] +
                # ... + c[k-1]) in the profile's rows
                pos = np.arange(j.size, dtype=np.int64)
                pos += np.repeat(end[frames] - np.cumsum(c), c)
                out[pos] = j
                del pos
            if not filled.all():
                raise ArchiveError("manifest: frames without their stream")
            self._offsets[fp] = out

    def offsets(self, fp: str) -> np.ndarray:
        return self._offsets[fp]

    def chunks(self, page: int = PAGE):
        """What analyze_data takes as `chunks`: (fingerprint, frame_dev, names, counts, debug,
        offsets) a profile at a time, in pages of `page` frames (as analyze pages a store, so
        its temporaries are a page's). Uses the data up: each profile's rows and offsets are
        let go once given, and each page's offsets are a copy (a page analyze still holds
        keeps no more alive)."""
        from ..decode import frame_columns

        self.rows = None
        for fp in list(self.by_fp):
            rows, j, at = self.by_fp.pop(fp), self._offsets.pop(fp), 0
            for lo in range(0, len(rows), page):
                cols = frame_columns(rows[lo:lo + page])
                n = int(cols[2].sum())
                yield (fp,) + cols + (j[at:at + n].copy(),)
                at += n
            del rows, j


def _observe(context, bits, profile, offsets=None) -> None:
    """Every stream of a profile, whatever its codec, joins the adaptive codec's shared model
    (as archive_write.shared adds it when writing); a grid's or table's from its `offsets`
    where they are given (checked: what the codec's observe makes of the bits)."""
    from . import get

    try:
        coder = stream_codec("adaptive", get("adaptive"), profile)
    except ZealError:      # its library is not installed: no adaptive stream can be read
        return
    if coder is None:
        return
    if offsets is not None and hasattr(coder, "observe_offsets"):
        coder.observe_offsets(context, offsets.view(np.uint64), profile)
    else:
        coder.observe(context, report_bits(profile, offsets) if bits is None else bits,
                      profile)


def read(path: str) -> Archive:
    """Open and check an archive; every stream decoded (codec from the registry), within the
    limits of compress.archive_format."""
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
        check_directory(fh, path)
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
    raw = read_entry(z, path, F.MANIFEST, F.MAX_MANIFEST_BYTES, "the longest manifest within "
                     "the archive limits")
    try:
        m = manifest_checked(parse_manifest(raw))
        del raw
        cols = frame_columns(m) if m["source"] == "database" else None
        if cols is not None:
            reports_match(m, cols)
    except ArchiveError as exc:
        raise ArchiveError("%s: %s" % (path, exc)) from None
    profiles = {}
    files = {}                         # every profile file read, by fingerprint (read once)

    def file_bytes(fp: str) -> bytes:
        if fp not in files:
            files[fp] = bytes(read_entry(z, path, F.profile_entry(fp), F.MAX_PROFILE_BYTES,
                                         "the longest profile file"))
            if sum(map(len, files.values())) > F.MAX_PROFILE_TOTAL:
                raise ArchiveError("%s: its profile files hold more than %d bytes, the most "
                                   "an archive holds (the limits of "
                                   "zeal.analysis.compress.archive)"
                                   % (path, F.MAX_PROFILE_TOTAL))
        return files[fp]

    for fp in m["profiles"]:
        # a multi header's attribute files are entries of their own, read as it names them
        prof = kinds.loads(file_bytes(fp), lambda i, afp: file_bytes(afp)
                           if type(afp) is str and FINGERPRINT.fullmatch(afp) else None)
        if prof.fingerprint != fp:
            raise ArchiveError("%s: profile %s has fingerprint %s"
                               % (path, fp[:16], prof.fingerprint[:16]))
        if m["version"] == 1 and SH.shape_of(prof) is not SH.Patterns:
            raise ArchiveError("%s: profile %s is a %s profile, which a version 1 archive "
                               "does not keep" % (path, fp[:16], kinds.of(prof).name))
        profiles[fp] = prof
    offsets = []
    contexts = {}   # per profile: what the adaptive codec's shared model has seen
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
        blob = read_entry(z, path, s["entry"], F.stream_bytes_cap(count, shape.models(prof)),
                          "%d symbols' worth" % count)
        ctx = contexts.setdefault(s["profile"], {})
        try:
            bits = (codec.decode(blob, prof, limit=count, context=ctx)
                    if hasattr(codec, "observe") else codec.decode(blob, prof, limit=count))
        except ZealError as exc:
            raise ArchiveError("%s: %s" % (what, exc)) from None
        except Exception as exc:       # a damaged blob: whatever the codec's library raises
            raise ArchiveError("%s cannot be decoded by %s (%s)"
                               % (what, s["codec"], type(exc).__name__)) from None
        del blob
        if shape is SH.Patterns:     # the offsets made in the decoded array's memory
            j = offsets_of(prof, bits, what, in_place=True)
            bits = None
        else:
            j = np.asarray(bits, dtype=np.uint64)
            try:
                shape.check(prof, j, what)
            except SH.StreamShapeError as exc:
                raise ArchiveError(str(exc)) from None
        if j.size != count:
            raise ArchiveError("%s: %d symbols, the manifest says %d" % (what, j.size, count))
        _observe(ctx, bits, prof, j if bits is None else None)
        del bits
        offsets.append(j)
    return Archive(path, m, profiles, offsets, cols)
