"""An archive's streams read from a store page by page (Store.iter_frames), into a spill
(compress.spill), so that `zeal compress --db` holds one page of frames at a time and not the
store: the same streams, frame table and events compress.archive_streams.database_streams
makes from a whole `decode.Loaded`, in the same order (tests/test_compress_scale.py checks
they are equal).

`read_database(path, spill)` -> `Source`: the profiles with frames (in the order their first
frame comes: real frames, then test-mode ones), the devices (sorted ids), the frame table as
arithmetic runs (archive_frames.RunsBuilder, column by column as the pages come; the device
column goes to the spill as each frame's device in the order devices first come, and is
renumbered, a page at a time, once every device is known), the
streams (`SpilledStream`, in the archive's order: by profile, then device, then test mode),
losses, statuses and link bytes. While reading, per stream: its reports, its symbols, the
histogram the adaptive codec's shared model keeps (compress.adaptive.histogram), the payload
bits its devices sent; per profile: the count of each distinct report (the plug-in entropy).

Refused while reading, before the rest of the store is read: more reports, symbols or frames
than an archive holds (compress.archive_format), in the line `write` gives.

`read_volumes(path, spills)` reads it as volumes (compress.archive_volumes): the same
sources, one a run of consecutive frames of at most VOLUME_REPORTS reports and VOLUME_FRAMES
frames, each with its own spill, yielded as it fills (a page is cut at the frame where the
volume is full); the last one carries the store's events. `read_database` is its one volume.

What still grows: the counts of distinct reports (`Counts`: an array of the grid's cells up to
2^16 of them -- 13 for the demo's 4-bit grid --, else 16 bytes a distinct report: nearly
every report of a 52-bit grid, so 16 bytes a report there), the frame table's runs (the manifest's:
2,245 runs for the 136,668 frames of 4 interleaved demo boards; at most about one a frame),
the spill's index (a piece per stream each time BUFFER bytes are held) and the events analyze
reads (STATUS details: at most MAX_STATUSES). Read as volumes, the runs, streams and spill are
a volume's (the counts of distinct reports still the store's).
"""
import numpy as np

from ...collect.store import StoreError
from ...errors import ZealError
from . import archive_format as F
from . import streams as SH
from .adaptive import histogram
from .archive_format import ArchiveError
from .archive_frames import RunsBuilder
from .archive_streams import report_bits
from .spill import uint_dtype
from ..decode import (ROW_BOOT, ROW_COUNT, ROW_DEBUG, ROW_DEVICE, ROW_FP, ROW_SEQ,
                      decode_frames)

PAGE = 1024     # frames a page (a demo frame holds 64 reports: 65,536 reports a page)
DISTINCT_BINCOUNT = 1 << 16   # reports' distinct values counted in an array up to this many


def _t(profile) -> int:
    return int(profile.n_cells - 1).bit_length()


class Counts:
    """The count of each distinct report of a profile, as they come: an array indexed by the
    value where the values are small integers (a grid's or table's offsets, N <= 2^16 cells),
    else the distinct values (a report of several symbols: its row, as bytes) sorted with
    their counts, 16 bytes a distinct value, the pages' values merged in when they hold as
    many as are kept (so each value is sorted O(log n) times)."""

    def __init__(self, size=None):
        self._arr = np.zeros(size, dtype=np.int64) if size is not None else None
        self._keys = self._counts = None
        self._pending, self._held = [], 0

    def add(self, values: np.ndarray, per: int = 1) -> None:
        if self._arr is not None:
            self._arr += np.bincount(values.astype(np.int64), minlength=self._arr.size)
            return
        rows = np.ascontiguousarray(values.astype(np.uint64)).reshape(-1, per)
        self._pending.append(rows.view(np.dtype((np.void, 8 * per))).reshape(-1))
        self._held += rows.shape[0]
        if self._held >= max(1 << 16, 0 if self._keys is None else self._keys.size):
            self._merge()

    def _merge(self) -> None:
        parts = self._pending + ([] if self._keys is None else [self._keys])
        weights = [np.ones(p.size, dtype=np.int64) for p in self._pending] + \
            ([] if self._counts is None else [self._counts])
        self._pending, self._held = [], 0
        if not parts:
            return
        keys, inverse = np.unique(np.concatenate(parts), return_inverse=True)
        self._counts = np.bincount(inverse.reshape(-1), weights=np.concatenate(weights),
                                   minlength=keys.size).astype(np.int64)
        self._keys = keys

    def counts(self) -> np.ndarray:
        """The counts of the distinct values (any order: the entropy is a sum over them)."""
        if self._arr is not None:
            return self._arr[self._arr > 0]
        self._merge()
        return np.zeros(0, np.int64) if self._counts is None else self._counts


class SpilledStream:
    """The reports of one device under one profile (and test mode or not), in a spill: what
    compress.archive_streams.Stream holds, its symbols on disk. `read(lo, hi)` gives what the
    spill keeps (a grid's or table's offsets j, the symbols of the other shapes),
    `bits()` the whole stream as Stream.bits (uint64 symbols)."""

    def __init__(self, spill, key, device, fp: str, vector: bool, profile):
        self.spill, self.key = spill, key
        self.device, self.fp, self.vector, self.profile = device, fp, vector, profile
        self.shape = SH.shape_of(profile)
        self.n = 0                 # reports (messages)
        self.hist = None           # patterns: adaptive.histogram of the offsets
        self.payload_bits = 0      # the bits the devices sent (SH payload_bits)

    @property
    def symbols(self) -> int:
        return self.spill.count(self.key)

    def add(self, values: np.ndarray, reports: int) -> None:
        prof = self.profile
        if self.shape is SH.Patterns:
            h = histogram(values.astype(np.uint64), _t(prof))
            self.hist = h if self.hist is None else self.hist + h
            self.payload_bits += values.size * prof.bits
        elif self.shape is SH.Pairs:
            j = values.reshape(-1, 2)[:, 0].astype(np.int64)
            widths = np.array([a.bits for a in prof.attributes], dtype=np.int64)
            self.payload_bits += int(j.size * prof.index_bits + widths[j].sum())
        else:
            self.payload_bits += reports * prof.bits
        self.n += reports
        self.spill.append(self.key, values)

    def read(self, lo: int, hi: int) -> np.ndarray:
        return self.spill.read(self.key, lo, hi)

    def bits(self) -> np.ndarray:
        raw = self.read(0, self.symbols)
        if self.shape is SH.Patterns:
            return report_bits(self.profile, raw)
        return raw.astype(np.uint64)


class Source:
    """What an archive of a store holds, read page by page (module docstring)."""

    def __init__(self):
        self.profiles, self.devices, self.streams = {}, [], []
        self.frames, self.nframes = None, 0
        self.losses = self.statuses = self.link_bytes = None
        self.counts = {}        # fp -> Counts
        self.reports = {}       # fp -> reports (messages)

    @property
    def n(self) -> int:
        return sum(s.n for s in self.streams)


def _refuse(what: str, count: int, cap: int) -> None:
    raise ArchiveError("the archive would hold %d %s or more; zeal analyze --archive reads at "
                       "most %d (the limits of zeal.analysis.compress.archive)"
                       % (count, what, cap))


def _by_device(label: np.ndarray, values: np.ndarray):
    """[(device index, its values in order)] for the devices in `label` (one a value)."""
    first = int(label[0]) if label.size else 0
    if not label.size or bool((label == first).all()):
        return [(first, values)] if label.size else []
    order = np.argsort(label, kind="stable")        # stable: each device's values in order
    keys = label[order]
    devs, starts = np.unique(keys, return_index=True)
    ends = np.append(starts[1:], keys.size)
    vals = values[order]
    return [(int(d), vals[a:b]) for d, a, b in zip(devs.tolist(), starts.tolist(),
                                                    ends.tolist())]


class _Reader:
    def __init__(self, store, spill, profiles=None, counts=None):
        self.store, self.spill = store, spill
        self.all_profiles = store.profiles() if profiles is None else profiles
        self.fps = {}           # fingerprint -> index, in the order of their first frame
        self.dev_ix = {}        # device id -> index, in the order of their first frame
        self.dev_col = ("frames", "device")   # the spill's key of the device column
        self.cols = {name: RunsBuilder() for name in F.COLUMNS if name != "device"}
        self.streams = {}       # (fp, device index, vector) -> SpilledStream
        self.counts = {} if counts is None else counts   # fp -> Counts (a set's: shared)
        self.nframes = self.nreports = self.nsymbols = 0

    def page(self, rows, vector: bool) -> None:
        profiles = self.all_profiles
        dev = np.empty(len(rows), dtype=np.int32)
        fpi = np.empty(len(rows), dtype=np.int64)
        by_fp = {}
        for i, r in enumerate(rows):
            fp = r[ROW_FP]
            if fp not in self.fps:
                if fp not in profiles:
                    raise StoreError("frames refer to profile %s, which the database lacks"
                                    % fp)
                self.fps[fp] = len(self.fps)
                prof = profiles[fp]
                if fp in self.counts:            # kept from an earlier volume
                    pass
                elif SH.shape_of(prof) is SH.Patterns:
                    size = prof.n_cells if prof.n_cells <= DISTINCT_BINCOUNT else None
                    self.counts[fp] = Counts(size)
                else:
                    self.counts[fp] = Counts()
            d = bytes(r[ROW_DEVICE])
            ix = self.dev_ix.get(d)
            if ix is None:
                ix = self.dev_ix[d] = len(self.dev_ix)
            dev[i] = ix
            fpi[i] = self.fps[fp]
            by_fp.setdefault(fp, []).append(i)
        self.spill.append(self.dev_col, dev, dtype=np.int32)   # first-seen indices
        self.cols["profile"].add(fpi)
        self.cols["vector"].add(np.full(len(rows), int(vector), dtype=np.int64))
        self.cols["count"].add(np.fromiter((r[ROW_COUNT] for r in rows), np.int64, len(rows)))
        self.cols["debug"].add(np.fromiter((int(r[ROW_DEBUG]) for r in rows), np.int64,
                                           len(rows)))
        self.cols["boot"].add(np.fromiter((r[ROW_BOOT] for r in rows), np.int64, len(rows)))
        self.cols["seq"].add(np.fromiter((r[ROW_SEQ] for r in rows), np.int64, len(rows)))
        self.nframes += len(rows)
        if self.nframes > F.MAX_FRAMES:
            _refuse("frames", self.nframes, F.MAX_FRAMES)
        for fp, idx in by_fp.items():
            self._profile_rows(fp, [rows[i] for i in idx], dev[idx], vector)

    def _stream(self, fp, ix, vector):
        key = (fp, int(ix), vector)
        s = self.streams.get(key)
        if s is None:
            s = self.streams[key] = SpilledStream(self.spill, key, int(ix), fp, vector,
                                                  self.all_profiles[fp])
        return s

    def _profile_rows(self, fp, rows, dev, vector) -> None:
        prof = self.all_profiles[fp]
        shape = SH.shape_of(prof)
        counts = np.fromiter((r[ROW_COUNT] for r in rows), np.int64, len(rows))
        if shape is SH.Patterns:
            j = decode_frames(prof, rows)            # DecodeError naming a damaged frame
            self.counts[fp].add(j)
            dt = uint_dtype(prof.n_cells - 1)
            for ix, mine in _by_device(np.repeat(dev, counts), j):
                s = self._stream(fp, ix, vector)
                if s.n == 0:
                    self.spill.append(s.key, mine[:0], dtype=dt)   # the key's dtype, first
                s.add(mine, mine.size)
            added, symbols = j.size, j.size
        else:
            per = shape.per_report(prof)
            added = symbols = 0
            for ix, sel in _by_device(dev, np.arange(len(rows))):
                sym = SH.rows_symbols(prof, [rows[i] for i in sel.tolist()])
                self.counts[fp].add(sym, per)
                s = self._stream(fp, ix, vector)
                if s.n == 0:
                    self.spill.append(s.key, sym[:0], dtype=np.uint64)
                n = int(counts[sel].sum())
                s.add(sym, n)
                added += n
                symbols += sym.size
        self.nreports += added
        self.nsymbols += symbols
        if self.nreports > F.MAX_REPORTS:
            _refuse("reports", self.nreports, F.MAX_REPORTS)
        if self.nsymbols > F.MAX_SYMBOLS:
            _refuse("symbols (a multi report: 2k)", self.nsymbols, F.MAX_SYMBOLS)

    def source(self) -> Source:
        out = Source()
        devices = sorted(self.dev_ix)
        out.devices = devices
        # device indices: first-seen -> the sorted ids' order (database_streams's)
        order = {d: i for i, d in enumerate(devices)}
        remap = np.empty(len(devices), dtype=np.int64)
        for d, ix in self.dev_ix.items():
            remap[ix] = order[d]
        device = RunsBuilder()       # the column read back a piece at a time, renumbered
        for lo in range(0, self.nframes, PAGE):
            device.add(remap[self.spill.read(self.dev_col, lo, lo + PAGE)])
        out.frames = {name: (device if name == "device" else self.cols[name]).done()
                      for name in F.COLUMNS}
        out.nframes = self.nframes
        fps = sorted(self.fps, key=self.fps.get)
        out.profiles = {fp: self.all_profiles[fp] for fp in fps}
        streams = []
        for (fp, ix, vector), s in self.streams.items():
            s.device = int(remap[ix])
            streams.append((self.fps[fp], s.device * 2 + int(vector), s))
        out.streams = [s for _, _, s in sorted(streams, key=lambda t: t[:2])]
        out.counts = self.counts
        for s in out.streams:
            out.reports[s.fp] = out.reports.get(s.fp, 0) + s.n
        return out


def read_database(path: str, spill, tick=None) -> Source:
    """The archive's source from the store `path` (module docstring), in one volume (refused
    past the caps of one archive); tick(frames) after each page."""
    for src, _, _ in read_volumes(path, lambda: spill, tick, cut=False):
        return src


def _fits(reader, rows) -> int:
    """How many of `rows` (frames, in order) the reader's volume takes: those within
    VOLUME_FRAMES frames and VOLUME_REPORTS reports, and at least one frame (the first of a
    volume always goes in it)."""
    counts = np.fromiter((r[ROW_COUNT] for r in rows), np.int64, len(rows))
    room = F.VOLUME_REPORTS - reader.nreports
    take = int(np.searchsorted(np.cumsum(counts), room, side="right"))
    take = max(0, min(take, F.VOLUME_FRAMES - reader.nframes))
    return take if take or reader.nframes else 1


def _cuttable(profiles, fps) -> bool:
    """Volumes hold window-grid and table reports only (one-reading profiles, whose analysis
    takes the frames a piece at a time): a store with frames of another kind is one archive."""
    return all(fp not in profiles or SH.shape_of(profiles[fp]) is SH.Patterns for fp in fps)


def read_volumes(path: str, spills, tick=None, cut: bool = True):
    """The store `path` read page by page as volumes (compress.archive_volumes): yields
    (Source, its spill, last) per volume, each the source of the run of consecutive frames
    (in the frame table's order: real frames, then test-mode ones) that fill it up to
    VOLUME_REPORTS reports and VOLUME_FRAMES frames (cut at a frame boundary); the last
    one carries the store's losses, statuses and link bytes (which a set writes in volume
    1). spills() gives each volume's spill (the caller closes it); tick(frames) after each
    page. Volumes are cut where every frame is a window grid's or a table's; with
    cut=False (or frames of another kind, seen before the first cut) the store is one
    volume, refused past the caps of an archive."""
    from ...collect.store import open_store

    counts = {}                   # fp -> Counts, over every volume (the plug-in entropy)
    with open_store(path, read_only=True) as store:
        profiles = store.profiles()
        cut = cut and _cuttable(profiles, store.frame_fingerprints(False)
                                + store.frame_fingerprints(True))
        seen = set()
        spill = spills()
        reader = _Reader(store, spill, profiles, counts)
        volumes = 1
        check = True
        for vector in (False, True):
            for rows in store.iter_frames(vector=vector, chunk=PAGE, check=check):
                check = False
                size = len(rows)
                new = {r[ROW_FP] for r in rows} - seen
                if cut and not _cuttable(profiles, new):   # a kind that came since
                    if volumes > 1:
                        raise ArchiveError("frames of profile %s (not a window grid or a "
                                           "table) came after the store was cut into "
                                           "volumes; a store with them is one archive"
                                           % next(fp for fp in new
                                                  if not _cuttable(profiles, [fp]))[:16])
                    cut = False
                seen |= new
                while rows:
                    take = _fits(reader, rows) if cut else len(rows)
                    if take == 0:         # the volume is full: out, and a new one
                        yield reader.source(), spill, False
                        volumes += 1
                        if volumes > F.MAX_VOLUMES:
                            raise ArchiveError("the store needs more than %d volumes of %d "
                                               "reports" % (F.MAX_VOLUMES, F.VOLUME_REPORTS))
                        spill = spills()
                        reader = _Reader(store, spill, profiles, counts)
                        continue
                    reader.page(rows[:take], vector)
                    rows = rows[take:]
                if tick is not None:
                    tick(size)
        if not reader.nframes:
            raise ZealError("no reports stored in %s" % path)
        events = store.event_counts()
        statuses = [e for e in store.events() if e["kind"] == "status"]
        link_bytes = store.link_bytes()
    out = reader.source()
    losses = {}
    for (dev, kind, _detail), count in events.items():
        if kind in F.LOSS_KINDS:
            key = (None if dev is None else bytes(dev).hex(), kind)
            losses[key] = losses.get(key, 0) + int(count)
    out.losses = [[d, k, c] for (d, k), c in sorted(losses.items(),
                                                      key=lambda kv: (kv[0][0] or "", kv[0][1]))]
    out.statuses = [[e["device"], e["detail"]] for e in statuses]
    out.link_bytes = int(link_bytes)
    yield out, spill, True


def read_offsets(profile, j: np.ndarray, spill) -> Source:
    """The source of a reports file: its offsets j as one stream (device None)."""
    out = Source()
    fp = profile.fingerprint
    out.profiles = {fp: profile}
    s = SpilledStream(spill, (fp, None, False), None, fp, False, profile)
    spill.append(s.key, np.asarray(j)[:0], dtype=uint_dtype(profile.n_cells - 1))
    s.add(np.asarray(j, dtype=np.int64), int(np.asarray(j).size))
    out.streams = [s]
    c = Counts(profile.n_cells if profile.n_cells <= DISTINCT_BINCOUNT else None)
    c.add(np.asarray(j, dtype=np.int64))
    out.counts = {fp: c}
    out.reports = {fp: s.n}
    return out


__all__ = ["Source", "SpilledStream", "Counts", "read_database", "read_volumes", "read_offsets",
           "PAGE"]
