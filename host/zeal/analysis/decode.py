"""Stored DATA payloads -> offsets and doubles, many frames at once; a store read once.

- `decode_frames(profile, rows)` / `decode_values(profile, rows)`: the stored DATA payloads
  (count x m bits, least-significant bit first, as received) of many frames at once, with
  numpy; bit-exact with `zeal.wire.unpack_reports` + `zeal.mechanism.grid.reports.offsets_from_low`
  frame by frame. A payload of the wrong length, non-zero padding bits or a report outside
  the profile's grid is a `DecodeError` naming the frame, never a silently wrong sample.
- Table profiles (zeal-table/1): a report is a cell j in 0..N-1 sent as its m bits (k_lo =
  wire_base = 0), so decode_frames gives the cells; decode_values refuses them (no double).
- `Loaded(store, include_vector)`: everything the plots read from a store, read once;
  `Paged(store, include_vector)`: the same for analyze, its frames page by page (memory that
  does not grow with the store).
- `frame_counts(rows)`: every frame's report count, each an integer in 1..wire.MAX_COUNT
  (DecodeError naming the first frame that is not) -- what anything sized by the counts (export's
  columns, the decoders' output) checks first, so a damaged row is refused in one line.

Rows are `Store.frames()` tuples: (device_id, boot, seq, fingerprint, count, payload, arrival,
nonce, debug); ROW_DEVICE ... ROW_DEBUG index them.
"""
import math
from operator import itemgetter
from typing import Dict, Sequence

import numpy as np

from ..collect.store import Store, StoreError
from .. import wire
from ..errors import ReportError
from ..mechanism import kinds
from ..mechanism.grid.profile import Profile

(ROW_DEVICE, ROW_BOOT, ROW_SEQ, ROW_FP, ROW_COUNT, ROW_PAYLOAD, ROW_ARRIVAL, ROW_NONCE,
 ROW_DEBUG) = range(9)


class DecodeError(ReportError):
    """A stored frame cannot be decoded under its profile (length, padding, grid)."""


def _frame_name(row) -> str:
    return "frame (device %s, boot %d, seq %d)" % (bytes(row[ROW_DEVICE]).hex(), row[ROW_BOOT],
                                                   row[ROW_SEQ])


# ---- decoding ----------------------------------------------------------------------------------
# Reports are packed LSB-first, so G = 8 / gcd(m, 8) consecutive reports (or a multiple of
# that) fill exactly B = G m / 8 bytes: frames of c reports (c a multiple of G) are a sequence
# of such groups. Report r of a group starts at bit r m: it lies in the F-byte little-endian
# word at byte o_r = (r m) // 8 (moved back to B - F if that word would leave the group),
# shifted by s_r = r m - 8 o_r, with s_r + m <= 8 F; F is the narrowest of 1, 2, 4, 8 bytes
# that fits (G doubles if no lane fits in a group, e.g. m = 24, 40).
# Decoding is then: G strided copies (numpy's fixed-size copy loops, through a void dtype of
# alignment 1, so unaligned words cost nothing extra) into a field-major array of F-byte
# lanes, a shift and a mask per field, a range check on the narrow lanes, and one widening add
# that interleaves the fields into the uint64 output. m = 8, 16, 32 need no copy.
class _Layout:
    def __init__(self, bits: int):
        self.bits = bits
        group = 8 // math.gcd(bits, 8)
        while True:
            size = group * bits // 8
            for lane in (1, 2, 4, 8):
                fields = [(min(r * bits // 8, size - lane), r) for r in range(group)]
                fields = [(off, r * bits - 8 * off) for off, r in fields]
                if lane <= size and all(sh + bits <= 8 * lane for _, sh in fields):
                    break
            else:
                group *= 2
                continue
            break
        self.group, self.group_bytes, self.lane, self.fields = group, size, lane, fields
        self.dtype = np.dtype("<u%d" % lane)
        self.void = np.dtype("V%d" % lane)
        self.direct = group == 1 and bits == 8 * lane  # m = 8, 16, 32: a plain view


_LAYOUTS = {}


def _layout(bits: int) -> _Layout:
    if bits not in _LAYOUTS:
        _LAYOUTS[bits] = _Layout(bits)
    return _LAYOUTS[bits]


def _fix_field(row: np.ndarray, lay: _Layout, sh: int) -> None:
    """Shift a field's lanes down to bit 0 and clear the bits of the next reports."""
    if sh:
        np.right_shift(row, lay.dtype.type(sh), out=row)
    if sh + lay.bits < 8 * lay.lane:
        np.bitwise_and(row, lay.dtype.type((1 << lay.bits) - 1), out=row)


def _lanes(buf, lay: _Layout, ngroups: int) -> np.ndarray:
    """Groups of packed reports -> (G, ngroups) array of F-byte lanes, field-major: the
    m-bit values of report r of every group in row r."""
    if lay.direct:
        return np.frombuffer(buf, dtype=lay.dtype, count=ngroups).reshape(1, ngroups)
    out = np.empty((lay.group, ngroups), dtype=lay.dtype)
    for r, (off, sh) in enumerate(lay.fields):
        src = np.ndarray((ngroups,), dtype=lay.void, buffer=buf, offset=off,
                         strides=(lay.group_bytes,))
        np.copyto(out[r].view(lay.void), src)
        _fix_field(out[r], lay, sh)
    return out


def _groups_to_uint64(buf, lay: _Layout, ngroups: int, add: int, check) -> np.ndarray:
    """Groups of packed reports -> (ngroups, G) uint64 lows + add (mod 2^64), in report order;
    check(low_min, low_max) is called on the lows before the add."""
    out = np.empty((ngroups, lay.group), dtype=np.uint64)
    lanes = _lanes(buf, lay, ngroups)
    if lanes.size:
        check(lanes.min(), lanes.max())
    if lay.group <= 2:  # short rows: a strided add per field beats one transposed add
        for r in range(lay.group):
            np.add(lanes[r], np.uint64(add), out=out[:, r])
    else:
        np.add(lanes.T, np.uint64(add), out=out)
    return out


def _check_payloads(rows: Sequence, payloads: list, count: int, bits: int) -> bytes:
    """Every payload has the length `count` reports need and zero padding bits; returns them
    joined."""
    nbytes = (count * bits + 7) // 8
    if set(map(len, payloads)) != {nbytes}:
        for r, p in zip(rows, payloads):
            if len(p) != nbytes:
                raise DecodeError("%s: payload of %d bytes; %d reports of %d bits need %d"
                                  % (_frame_name(r), len(p), count, bits, nbytes))
    joined = b"".join(payloads)
    used = count * bits
    if used % 8:  # bits above the last report must be zero (as wire.unpack_reports)
        last = np.frombuffer(joined, dtype=np.uint8)[nbytes - 1::nbytes]
        bad = np.flatnonzero(last >> np.uint8(used % 8))
        if bad.size:
            raise DecodeError("%s: non-zero padding bits after the last report"
                              % _frame_name(rows[bad[0]]))
    return joined


def _decode_same_count(rows: Sequence, count: int, profile: Profile, add: int,
                       check: bool = True, payloads=None) -> np.ndarray:
    """Frames of `count` reports each -> (len(rows), count) uint64: low + add (mod 2^64), after
    checking every low against the profile's grid (unless check=False). `payloads`: the
    rows' payloads when the rows are not Store.frames() rows (then rows only name errors)."""
    bits = profile.bits
    lay = _layout(bits)
    if payloads is None:
        payloads = list(map(itemgetter(ROW_PAYLOAD), rows))
    joined = _check_payloads(rows, payloads, count, bits)
    nf = len(rows)

    def in_grid(lo, hi):
        if check and not (profile.k_lo - profile.wire_base <= int(lo)
                          and int(hi) <= profile.k_hi - profile.wire_base):
            _grid_error(rows, count, profile)

    if count % lay.group == 0:
        out = _groups_to_uint64(joined, lay, nf * count // lay.group, add, in_grid)
        return out.reshape(nf, count)
    # A partial last group (count not a multiple of G): give each frame whole groups, and
    # check the reports only (the filler past `count` decodes to zeros).
    groups = -(-count // lay.group)
    nbytes = (count * bits + 7) // 8
    pad = np.zeros((nf, groups * lay.group_bytes), dtype=np.uint8)
    pad[:, :nbytes] = np.frombuffer(joined, dtype=np.uint8).reshape(nf, nbytes)
    full = _groups_to_uint64(pad, lay, nf * groups, 0, lambda lo, hi: None)
    lows = full.reshape(nf, groups * lay.group)[:, :count]
    if lows.size:
        in_grid(lows.min(), lows.max())
    return lows + np.uint64(add)


def _grid_error(rows: Sequence, count: int, profile: Profile) -> None:
    """DecodeError naming the first report whose low bits fall outside the grid (the slow path
    runs only once some frame is known to be bad)."""
    first, last = profile.k_lo - profile.wire_base, profile.k_hi - profile.wire_base
    for r in rows:
        lows = wire.unpack_reports(r[ROW_PAYLOAD], count, profile.bits)
        bad = np.flatnonzero((lows < np.uint64(first)) | (lows > np.uint64(last)))
        if bad.size:
            raise DecodeError("%s, report %d: low bits %d are outside the profile's grid "
                              "(%d cells)" % (_frame_name(r), bad[0], int(lows[bad[0]]),
                                              profile.n_cells))
    raise DecodeError("a report is outside the profile's grid")  # not reached


def frame_counts(rows: Sequence) -> np.ndarray:
    """Every frame's report count (int64), each checked to be an integer in 1..wire.MAX_COUNT,
    as the wire allows: DecodeError naming the first frame that is not (a damaged row, e.g. a
    count of 10^17, never sizes an array)."""
    try:
        counts = np.fromiter(map(itemgetter(ROW_COUNT), rows), dtype=np.int64, count=len(rows))
    except (TypeError, ValueError, OverflowError):   # not an integer, or past int64
        counts = None
    if counts is None or (counts.size and not (1 <= int(counts.min())
                                               and int(counts.max()) <= wire.MAX_COUNT)):
        for r in rows:
            c = r[ROW_COUNT]
            if not (isinstance(c, int) and 1 <= c <= wire.MAX_COUNT):
                raise DecodeError("%s: count %r is outside 1..%d"
                                  % (_frame_name(r), c, wire.MAX_COUNT))
    return counts


def _decode(profile: Profile, rows: Sequence, add: int, check: bool = True) -> np.ndarray:
    """uint64 (low + add) mod 2^64 for every report of `rows`, frame after frame."""
    fp = profile.fingerprint
    nrows = len(rows)
    if nrows == 0:
        return np.empty(0, dtype=np.uint64)
    if set(map(itemgetter(ROW_FP), rows)) != {fp}:
        for r in rows:
            if r[ROW_FP] != fp:
                raise DecodeError("%s is stored under profile %s, not %s"
                                  % (_frame_name(r), r[ROW_FP][:16], fp[:16]))
    return _decode_counts(profile, rows, frame_counts(rows), None, add, check)


def _decode_counts(profile, rows, counts, payloads, add: int, check: bool) -> np.ndarray:
    """_decode once the counts are known (checked); payloads as _decode_same_count's."""
    first = int(counts[0])
    if int(counts.min()) == int(counts.max()):  # the usual case: one batch size
        return _decode_same_count(rows, first, profile, add, check, payloads).reshape(-1)
    starts = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), dtype=np.uint64)
    for count in np.unique(counts):
        idx = np.flatnonzero(counts == count)
        vals = _decode_same_count([rows[i] for i in idx], int(count), profile, add, check,
                                  None if payloads is None else [payloads[i] for i in idx])
        out[(starts[idx][:, None] + np.arange(count)).reshape(-1)] = vals.reshape(-1)
    return out


def unpack_frames(rows: Sequence, profile: Profile) -> np.ndarray:
    """The m-bit values (uint64) of every report of `rows`, frame after frame, NOT checked
    against the grid (wire.unpack_reports for many frames). DecodeError for a payload of the
    wrong length, non-zero padding or a frame of another profile."""
    return _decode(profile, rows, 0, check=False)


def decode_frames(profile: Profile, rows: Sequence) -> np.ndarray:
    """Stored frames (Store.frames rows, all under `profile`) -> offsets j = k - k_lo (int64),
    frame after frame. DecodeError, naming the frame, for anything that is not a valid report.
    """
    # j = low + wire_base - k_lo, computed mod 2^64 (the grid check comes first)
    add = (profile.wire_base - profile.k_lo) % (1 << 64)
    return _decode(profile, rows, add).view(np.int64)


def decode_values(profile: Profile, rows: Sequence) -> np.ndarray:
    """Stored frames -> the reports x* as float64, bit-exact: the bit pattern
    ((E + 1023) << 52) | (wire_base + low), i.e. reports.floats_from_offsets's bits(k_lo) + j,
    built in one pass from the narrow lanes instead of through an offsets array. A table
    profile's reports are cells, not doubles: DecodeError."""
    kind = kinds.of(profile)
    if not kind.double_reports:
        raise DecodeError("profile %s is a %s profile: its reports are not doubles"
                          % (profile.fingerprint[:16], kind.name))
    return _decode(profile, rows, profile.high_bits).view(np.float64)


class PayloadReader:
    """What a kind object (zeal.mechanism.kinds) reads stored frames with: the wire's bit
    layout is this side's to decode."""

    @staticmethod
    def offsets(profile, rows) -> np.ndarray:
        """A scalar profile's offsets j (decode_frames: checked against its grid)."""
        return decode_frames(profile, rows)

    @staticmethod
    def lows(profile, rows) -> np.ndarray:
        """The m-bit reports (uint64) of fixed-width reports, unchecked (unpack_frames)."""
        return unpack_frames(rows, profile)

    @staticmethod
    def multi_reports(profile, row) -> list:
        """A multi-attribute frame's reports [[(j, y)] * k] (multi_profile.unpack_multi);
        DecodeError naming the frame."""
        from ..mechanism.multi.profile import PayloadError, unpack_multi

        try:
            return unpack_multi(profile, row[ROW_PAYLOAD], row[ROW_COUNT])
        except PayloadError as exc:
            raise DecodeError("%s: %s" % (_frame_name(row), exc)) from None


# ---- reading a store -----------------------------------------------------------------------------
class Loaded:
    """Everything analysis reads from a store, read once: profiles, frame rows, events."""

    def __init__(self, store: Store, include_vector: bool, one_reading: bool = False):
        """one_reading: only the frames of profiles whose report is of one reading (grid,
        table: zeal.mechanism.kinds, `fields` None); the others have their own analyses."""
        self.profiles = store.profiles()
        rows = store.frames(vector=False)
        if include_vector:
            rows = rows + store.frames(vector=True)
        self.events = store.event_counts()
        self.statuses = [e for e in store.events() if e["kind"] == "status"]
        self.link_bytes = store.link_bytes()
        by_fp: Dict[str, list] = {}
        for r in rows:
            by_fp.setdefault(r[ROW_FP], []).append(r)
        for fp in by_fp:
            if fp not in self.profiles:
                raise StoreError("frames refer to profile %s, which the database lacks" % fp)
        if one_reading:
            keep = {fp for fp in by_fp if kinds.of(self.profiles[fp]).fields is None}
            rows = [r for r in rows if r[ROW_FP] in keep]
            by_fp = {fp: rs for fp, rs in by_fp.items() if fp in keep}
        self.rows = rows
        self.by_fp = by_fp

    def offsets(self, fp: str) -> np.ndarray:
        return decode_frames(self.profiles[fp], self.by_fp[fp])


class Paged:
    """What analyze reads from a store: profiles, events and link bytes at once, the frames
    one profile at a time, page by page (`chunks()`), so memory does not grow with the store.
    A page is read with Store.iter_reports (device, count, payload, debug: the columns
    analyze needs) and checked here; a bad row is then named by the store's damage check or
    the full decoder. A store view without pages (an archive's) reads as one page a profile.
    """

    def __init__(self, store, include_vector: bool, one_reading: bool = False):
        self.store = store
        self.include_vector = include_vector
        self.profiles = store.profiles()
        self.events = store.event_counts()
        self.statuses = [e for e in store.events() if e["kind"] == "status"]
        self.link_bytes = store.link_bytes()
        self.keep = {fp for fp, p in self.profiles.items()
                     if not one_reading or kinds.of(p).fields is None}
        self.paged = isinstance(store, Store)
        self._rows = None
        if self.paged:
            fps = store.frame_fingerprints(False)
            if include_vector:
                fps += [fp for fp in store.frame_fingerprints(True) if fp not in fps]
            self.devices = store.device_rows()
        else:
            self._rows = store.frames(vector=False)
            if include_vector:
                self._rows = self._rows + store.frames(vector=True)
            fps = list(dict.fromkeys(r[ROW_FP] for r in self._rows))
        for fp in fps:
            if fp not in self.profiles:
                raise StoreError("frames refer to profile %s, which the database lacks" % fp)
        self.fps = [fp for fp in fps if fp in self.keep]

    def any_rows(self) -> bool:
        return bool(self.fps)

    def chunks(self):
        """(fingerprint, frame_dev, names, counts, debug, offsets) per page of one profile's
        frames, in arrival order (test-mode frames after the others): frame_dev (int64) the
        index in names (8-byte device ids) of each frame's device, counts (int64) and debug
        (bool) per frame, offsets (int64) per report."""
        if not self.paged:
            for fp in self.fps:
                rows = [r for r in self._rows if r[ROW_FP] == fp]
                yield (fp,) + frame_columns(rows) + (decode_frames(self.profiles[fp], rows),)
            return
        modes = (False, True) if self.include_vector else (False,)
        for fp in self.fps:
            prof = self.profiles[fp]
            for vector in modes:
                for page in self.store.iter_reports(fp, vector=vector):
                    yield (fp,) + self._page(prof, page, vector)

    def _page(self, prof, page, vector):
        try:
            rid = np.fromiter(map(itemgetter(0), page), dtype=np.int64, count=len(page))
            both = np.fromiter(map(itemgetter(1), page), dtype=np.int64, count=len(page))
            if int(both.min()) < 0:               # Store.iter_reports: a bad count or flag
                raise ValueError("out of range")
            counts, debug = both & 255, both >> 8  # count + 256 debug
            if not (1 <= int(counts.min()) and int(counts.max()) <= wire.MAX_COUNT):
                raise ValueError("out of range")
            keys, frame_dev = np.unique(rid, return_inverse=True)
            names = [self.devices[int(k)] for k in keys]
            payloads = list(map(itemgetter(2), page))
            add = (prof.wire_base - prof.k_lo) % (1 << 64)
            j = _decode_counts(prof, page, counts, payloads, add, True).view(np.int64)
        except (DecodeError, TypeError, ValueError, KeyError, OverflowError, IndexError):
            self.store.check_frames()              # names a damaged row, if that is it
            for rows in self.store.iter_frames(fingerprint=prof.fingerprint, vector=vector,
                                               check=False):
                decode_frames(prof, rows)          # names the frame it cannot decode
            raise StoreError("database %s: a frame of profile %s is damaged"
                             % (self.store.path, prof.fingerprint[:16])) from None
        return frame_dev.astype(np.int64), names, counts, debug.astype(bool), j


def frame_columns(rows):
    """(frame_dev, names, counts, debug) of Store.frames() rows (as Paged.chunks gives)."""
    number: Dict[bytes, int] = {}
    idx = [number.setdefault(bytes(r[ROW_DEVICE]), len(number)) for r in rows]
    counts = frame_counts(rows)
    debug = np.fromiter((bool(r[ROW_DEBUG]) for r in rows), dtype=bool, count=len(rows))
    return np.asarray(idx, dtype=np.int64), list(number), counts, debug
