"""Analysis of a store: stored payloads -> offsets and doubles, estimates, export.

- `decode_frames(profile, rows)` / `decode_values(profile, rows)`: the stored DATA payloads
  (count x m bits, least-significant bit first, as received) of many frames at once, with
  numpy; bit-exact with `zeal.wire.unpack_reports` + `zeal.reports.offsets_from_low` frame by
  frame. A payload of the wrong length, non-zero padding bits or a report outside the
  profile's grid is a `DecodeError` naming the frame, never a silently wrong sample.
- `analyze(store)`: per device, per profile and overall: n, the calibrated mean with its 99%
  Bernstein interval, AVG*, bits, the paper's transmission ratio, wire bits per report, and
  the losses the collector recorded (rejected frames, gaps, reboots, frames the device
  dropped); per device, the error STATUS it reported and whether its data came from a DEBUG
  build (non-private: never called private).
- `events(store)`: the stored events, filtered (`zeal events`).
- `export(store, path, fmt)`: one row per report, CSV (stdlib) or Parquet (pyarrow, the
  optional extra `parquet`), written atomically.
- `register(subparsers)`: `zeal analyze`, `zeal export` and `zeal events`; each opens the
  database read-only.

Rows are `Store.frames()` tuples: (device_id, boot, seq, fingerprint, count, payload, arrival,
nonce, debug).
"""
import json
import math
import os
import re
import secrets
import time
import sqlite3
import sys
from collections import Counter
from fractions import Fraction
from operator import itemgetter
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import paper, reports, wire
from .errors import ReportError, ZealError
from .estimate import Estimator, exact_sum
from .profile import Profile
from .store import Store, StoreError, open_existing, wrap_sql_error

CONFIDENCE = 0.99
# Event kinds the collector records (store.py: events.kind).
EVENT_REJECT, EVENT_GAP, EVENT_REBOOT = "reject", "gap", "reboot"
EXPORT_COLUMNS = ("device", "boot", "seq", "index", "low", "k", "value", "fingerprint")
EXPORT_FORMATS = ("csv", "parquet")
_DEVICE, _BOOT, _SEQ, _FP, _COUNT, _PAYLOAD, _ARRIVAL, _NONCE, _DEBUG = range(9)
# STATUS codes that mean the device cannot sample (wire.ERROR_CODES by name)
ERROR_STATUSES = ("NO_PROFILE", "BAD_PROFILE", "CONFIG", "CRASH")
# The collector's status event detail: "<CODE> ticks=T frames_dropped=F[ replaced=R
# clamped=C debug][ message]"
_STATUS = re.compile(r"^(\w+) ticks=(\d+) frames_dropped=(\d+)"
                     r"(?: replaced=(\d+) clamped=(\d+) debug)?(?: (.*))?$", re.S)


class DecodeError(ReportError):
    """A stored frame cannot be decoded under its profile (length, padding, grid)."""


def _frame_name(row) -> str:
    return "frame (device %s, boot %d, seq %d)" % (bytes(row[_DEVICE]).hex(), row[_BOOT],
                                                   row[_SEQ])


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
                       check: bool = True) -> np.ndarray:
    """Frames of `count` reports each -> (len(rows), count) uint64: low + add (mod 2^64), after
    checking every low against the profile's grid (unless check=False)."""
    bits = profile.bits
    lay = _layout(bits)
    joined = _check_payloads(rows, list(map(itemgetter(_PAYLOAD), rows)), count, bits)
    nf = len(rows)
    first, last = profile.k_lo - profile.wire_base, profile.k_hi - profile.wire_base

    def in_grid(lo, hi):
        if check and not (first <= int(lo) and int(hi) <= last):
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
        lows = wire.unpack_reports(r[_PAYLOAD], count, profile.bits)
        bad = np.flatnonzero((lows < np.uint64(first)) | (lows > np.uint64(last)))
        if bad.size:
            raise DecodeError("%s, report %d: low bits %d are outside the profile's grid "
                              "(%d cells)" % (_frame_name(r), bad[0], int(lows[bad[0]]),
                                              profile.n_cells))
    raise DecodeError("a report is outside the profile's grid")  # not reached


def _decode(profile: Profile, rows: Sequence, add: int, check: bool = True) -> np.ndarray:
    """uint64 (low + add) mod 2^64 for every report of `rows`, frame after frame."""
    fp = profile.fingerprint
    nrows = len(rows)
    if nrows == 0:
        return np.empty(0, dtype=np.uint64)
    if set(map(itemgetter(_FP), rows)) != {fp}:
        for r in rows:
            if r[_FP] != fp:
                raise DecodeError("%s is stored under profile %s, not %s"
                                  % (_frame_name(r), r[_FP][:16], fp[:16]))
    counts = np.fromiter(map(itemgetter(_COUNT), rows), dtype=np.int64, count=nrows)
    bad = np.flatnonzero((counts < 1) | (counts > wire.MAX_COUNT))
    if bad.size:
        raise DecodeError("%s: count %d is outside 1..%d"
                          % (_frame_name(rows[bad[0]]), counts[bad[0]], wire.MAX_COUNT))
    first = int(counts[0])
    if int(counts.min()) == int(counts.max()):  # the usual case: one batch size
        return _decode_same_count(rows, first, profile, add, check).reshape(-1)
    starts = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), dtype=np.uint64)
    for count in np.unique(counts):
        idx = np.flatnonzero(counts == count)
        vals = _decode_same_count([rows[i] for i in idx], int(count), profile, add, check)
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
    built in one pass from the narrow lanes instead of through an offsets array."""
    return _decode(profile, rows, profile.high_bits).view(np.float64)


# ---- reading a store -----------------------------------------------------------------------------
class _Loaded:
    """Everything analysis reads from a store, read once: profiles, frame rows, events."""

    def __init__(self, store: Store, include_vector: bool):
        try:
            self.profiles = store.profiles()
            rows = store.frames(vector=False)
            if include_vector:
                rows = rows + store.frames(vector=True)
            self.events = store.event_counts()
            self.statuses = [e for e in store.events() if e["kind"] == "status"]
            self.link_bytes = store.link_bytes()
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, store.path) from None
        self.rows = rows
        by_fp: Dict[str, list] = {}
        for r in rows:
            by_fp.setdefault(r[_FP], []).append(r)
        for fp in by_fp:
            if fp not in self.profiles:
                raise StoreError("frames refer to profile %s, which the database lacks" % fp)
        self.by_fp = by_fp

    def offsets(self, fp: str) -> np.ndarray:
        return decode_frames(self.profiles[fp], self.by_fp[fp])


# ---- estimates -----------------------------------------------------------------------------------
class _Estimators:
    def __init__(self):
        self._cache = {}

    def get(self, profile: Profile, confidence: float = CONFIDENCE) -> Estimator:
        key = (profile.fingerprint, confidence)
        if key not in self._cache:
            self._cache[key] = Estimator(profile, confidence)
        return self._cache[key]


def transmission_ratio(profile: Profile) -> Optional[float]:
    """The paper's TR = 1 - gamma_min/64 at the profile's exponent (Thm 3.6), or None where the
    paper's float64 E_enc disagrees with the exact one (an exponent the paper would refuse)."""
    try:
        return paper.transmission_ratio(paper.gamma_min(profile.lo, profile.hi,
                                                        profile.epsilon, profile.exponent))
    except ValueError:
        return None


def _finite_interval(low: float, high: float):
    return [low, high] if math.isfinite(low) and math.isfinite(high) else None


def summarize(parts: List[Tuple[Profile, np.ndarray]], estimators: Optional[_Estimators] = None
              ) -> dict:
    """Estimates from offsets under one or several profiles (each part non-empty).

    One profile: exactly Estimator.summarize. Several: the n-weighted combination of the
    per-profile calibrated means (exact: sum_p n_p mean_p / n in rationals). Its 99% interval
    is a union bound over the profiles: each profile's Bernstein half-width is taken at
    confidence 1 - 0.01/P, so with probability >= 0.99 every |mean_p - xbar_p| <= lambda_p
    holds at once, and then |mean - xbar| <= sum_p (n_p/n) lambda_p. The normal
    approximation combines variances: sqrt(sum_p (n_p/n)^2 w_p^2), w_p the per-profile
    half-width.
    """
    est = estimators or _Estimators()
    parts = [(p, np.asarray(j, dtype=np.int64)) for p, j in parts]
    if len(parts) == 1:
        prof, j = parts[0]
        s = est.get(prof).summarize(j)
        return {"n": s.n, "mean_calibrated": s.mean_calibrated, "ci99": list(s.ci99),
                "ci99_clt": _finite_interval(*s.ci99_clt), "avg_star": s.avg_star,
                "avg_star_naive_float64": s.avg_star_naive, "bits": prof.bits,
                "exponent": prof.exponent, "transmission_ratio": transmission_ratio(prof),
                "fingerprint": prof.fingerprint}
    n = sum(int(j.size) for _, j in parts)
    union = 1 - (1 - CONFIDENCE) / len(parts)
    mean = avg = Fraction(0)
    naive = bern = clt2 = 0.0
    for prof, j in parts:
        n_p = int(j.size)
        total = exact_sum(j)
        e = est.get(prof)
        w = Fraction(n_p, n)
        mean += w * e.calibrated_mean(total, n_p)
        avg += w * e.avg_star(total, n_p)
        naive += float(w) * e.avg_star_naive(j)
        bern += float(w) * est.get(prof, union).bernstein_halfwidth(n_p)
        clt2 += (float(w) * e.clt_halfwidth(j)) ** 2
    m, cw = float(mean), math.sqrt(clt2)
    return {"n": n, "mean_calibrated": m, "ci99": [m - bern, m + bern],
            "ci99_clt": _finite_interval(m - cw, m + cw), "avg_star": float(avg),
            "avg_star_naive_float64": naive, "bits": [p.bits for p, _ in parts],
            "exponent": [p.exponent for p, _ in parts],
            "transmission_ratio": [transmission_ratio(p) for p, _ in parts],
            "fingerprint": [p.fingerprint for p, _ in parts]}


_EMPTY = {"n": 0, "mean_calibrated": None, "ci99": None, "ci99_clt": None, "avg_star": None,
          "avg_star_naive_float64": None, "bits": None, "exponent": None,
          "transmission_ratio": None, "fingerprint": None}


def _frame_wire_bytes(rows: Sequence, bits: int) -> int:
    """Bytes of these DATA frames on the wire: COBS(body || CRC) plus the delimiter, by
    wire.frame_length. Exact while body + CRC <= 254 bytes (e.g. 64 reports of up to 30
    bits); above, an upper bound by at most one byte per 254 (COBS adds a byte only after 254
    non-zero bytes, and the rows do not keep the CRC to tell)."""
    sizes = Counter(r[_COUNT] for r in rows)
    return sum(frames * wire.frame_length(wire.data_body_length(count, bits))
               for count, frames in sizes.items())


def device_health(statuses: List[dict]) -> Dict[bytes, dict]:
    """device id -> {"errors": [CODE: message, ...], "frames_dropped": int, "replaced": int,
    "clamped": int, "debug": bool} from the stored STATUS events (`Store.events()` dicts of kind
    status, in time order). The counters are cumulative within a boot (ticks only grow), so
    each boot contributes its last value: a boot ends where ticks go down."""
    out: Dict[bytes, dict] = {}
    last: Dict[bytes, list] = {}
    for e in statuses:
        if e["device"] is None:
            continue
        dev = bytes.fromhex(e["device"])
        m = _STATUS.match(e["detail"])
        if m is None:
            continue
        code, ticks, dropped = m.group(1), int(m.group(2)), int(m.group(3))
        replaced, clamped = int(m.group(4) or 0), int(m.group(5) or 0)
        doc = out.setdefault(dev, {"errors": [], "frames_dropped": 0, "replaced": 0,
                                   "clamped": 0, "debug": False})
        if m.group(4) is not None:
            doc["debug"] = True
        if code in ERROR_STATUSES:
            text = code + (": " + m.group(6) if m.group(6) else "")
            if text not in doc["errors"]:
                doc["errors"].append(text)
        prev = last.get(dev)
        if prev is not None and ticks < prev[0]:  # a new boot: bank the previous one's
            for i, name in enumerate(("frames_dropped", "replaced", "clamped"), 1):
                doc[name] += prev[i]
            prev = None
        last[dev] = [ticks, dropped, replaced, clamped] if prev is None else \
            [ticks, max(prev[1], dropped), max(prev[2], replaced), max(prev[3], clamped)]
    for dev, (_, dropped, replaced, clamped) in last.items():
        out[dev]["frames_dropped"] += dropped
        out[dev]["replaced"] += replaced
        out[dev]["clamped"] += clamped
    return out


def analyze(store: Store, include_vector: bool = False) -> dict:
    """{"overall": {...}, "devices": [...], "profiles": [...]} for the reports in `store`.

    Each entry has n, mean_calibrated, ci99 [low, high] (Bernstein, valid at every n),
    ci99_clt, avg_star, bits, transmission_ratio, wire_bits_per_report, rejected_frames, gaps,
    reboots, frames_dropped (frames the device could not send: its STATUS counter), errors
    (the error STATUS it reported: "NO_PROFILE: message", ...), private (False when any of
    its reports came from a DEBUG build: such data are NOT private), debug_reports, and, for
    DEBUG devices only, replaced and clamped readings; fingerprint. Overall wire bits per
    report = 8 x every byte read on every link / the reports analysed (None when no link
    recorded bytes); per device and per profile it counts that device's DATA frames only
    (`data_bits_per_report` overall). Devices that sent no stored report but have events are
    listed with n = 0. Test-mode (vector) frames are left out unless include_vector.
    ZealError if there are no reports (naming the devices that reported errors, if any).
    """
    data = _Loaded(store, include_vector)
    health = device_health(data.statuses)
    if not data.rows:
        failed = ["%s (%s)" % (dev.hex(), "; ".join(h["errors"]))
                  for dev, h in sorted(health.items()) if h["errors"]]
        raise ZealError("no reports stored in %s" % store.path
                        + ("" if include_vector else " (test-mode frames not counted)")
                        + ("; devices that reported errors: " + ", ".join(failed)
                           if failed else ""))
    est = _Estimators()
    per_fp = {fp: data.offsets(fp) for fp in data.by_fp}

    # per device: its offsets under each profile (integer labels per report), its wire bytes
    dev_parts: Dict[bytes, list] = {}
    dev_wire: Dict[bytes, int] = {}
    for fp, rows in data.by_fp.items():
        prof = data.profiles[fp]
        by_dev: Dict[bytes, list] = {}
        for r in rows:
            by_dev.setdefault(bytes(r[_DEVICE]), []).append(r)
        if len(by_dev) == 1:
            labels = None
        else:
            number = {dev: i for i, dev in enumerate(by_dev)}
            labels = np.repeat(np.fromiter((number[bytes(r[_DEVICE])] for r in rows),
                                           dtype=np.int64, count=len(rows)),
                               np.fromiter((r[_COUNT] for r in rows), dtype=np.int64,
                                           count=len(rows)))
        for i, (dev, mine) in enumerate(by_dev.items()):
            j = per_fp[fp] if labels is None else per_fp[fp][labels == i]
            dev_parts.setdefault(dev, []).append((prof, j))
            dev_wire[dev] = dev_wire.get(dev, 0) + _frame_wire_bytes(mine, prof.bits)

    losses: Dict[Optional[bytes], Dict[str, int]] = {}
    for (dev, kind, _detail), count in data.events.items():
        key = bytes(dev) if dev is not None else None
        slot = losses.setdefault(key, {EVENT_REJECT: 0, EVENT_GAP: 0, EVENT_REBOOT: 0})
        if kind in slot:
            slot[kind] += int(count)

    def loss_doc(slots):
        return {"rejected_frames": sum(s[EVENT_REJECT] for s in slots),
                "gaps": sum(s[EVENT_GAP] for s in slots),
                "reboots": sum(s[EVENT_REBOOT] for s in slots)}

    debug_reports: Dict[bytes, int] = {}
    for r in data.rows:
        if r[_DEBUG]:
            dev = bytes(r[_DEVICE])
            debug_reports[dev] = debug_reports.get(dev, 0) + r[_COUNT]

    devices = []
    for dev in sorted(set(dev_parts) | {d for d in losses if d is not None} | set(health)):
        if dev in dev_parts:
            doc = summarize(dev_parts[dev], est)
            doc["wire_bits_per_report"] = 8 * dev_wire[dev] / doc["n"]
        else:
            doc = dict(_EMPTY, wire_bits_per_report=None)
        doc.update(loss_doc([losses[dev]] if dev in losses else []))
        h = health.get(dev, {})
        doc["frames_dropped"] = h.get("frames_dropped", 0)
        doc["errors"] = h.get("errors", [])
        doc["debug_reports"] = debug_reports.get(dev, 0)
        doc["private"] = not (doc["debug_reports"] or h.get("debug"))
        if not doc["private"]:
            doc["replaced"] = h.get("replaced", 0)
            doc["clamped"] = h.get("clamped", 0)
        devices.append(dict({"device": dev.hex()}, **doc))

    profiles = []
    for fp, rows in data.by_fp.items():
        prof = data.profiles[fp]
        doc = summarize([(prof, per_fp[fp])], est)
        doc["wire_bits_per_report"] = 8 * _frame_wire_bytes(rows, prof.bits) / doc["n"]
        doc["devices"] = len({bytes(r[_DEVICE]) for r in rows})
        profiles.append(doc)

    overall = summarize([(data.profiles[fp], j) for fp, j in per_fp.items()], est)
    n = overall["n"]
    overall["wire_bits_per_report"] = 8 * data.link_bytes / n if data.link_bytes else None
    overall["data_bits_per_report"] = 8 * sum(dev_wire.values()) / n
    overall.update(loss_doc(list(losses.values())))
    overall["frames_dropped"] = sum(d["frames_dropped"] for d in devices)
    overall["debug_reports"] = sum(debug_reports.values())
    overall["private"] = overall["debug_reports"] == 0
    overall["devices_with_errors"] = [d["device"] for d in devices if d["errors"]]
    overall["devices"] = len(dev_parts)
    overall["frames"] = len(data.rows)
    return {"overall": overall, "devices": devices, "profiles": profiles}


# ---- export --------------------------------------------------------------------------------------
def _positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices of the reports of frames that begin at `starts` (in a frame-order array)."""
    within = np.cumsum(counts) - counts
    return np.repeat(starts - within, counts) + np.arange(int(counts.sum()))


def _export_arrays(data: _Loaded) -> dict:
    """Per-report columns in frame (row) order: low, k (uint64), value (float64), index; and
    per-row device, boot, seq, fingerprint, count (expanded by the writers)."""
    rows = data.rows
    counts = np.fromiter((r[_COUNT] for r in rows), dtype=np.int64, count=len(rows))
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    low = np.empty(total, dtype=np.uint64)
    k = np.empty(total, dtype=np.uint64)
    value = np.empty(total, dtype=np.float64)
    fp_index = {fp: i for i, fp in enumerate(data.by_fp)}
    row_fp = np.fromiter((fp_index[r[_FP]] for r in rows), dtype=np.int64, count=len(rows))
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
            "device": [bytes(r[_DEVICE]).hex() for r in rows],
            "boot": [r[_BOOT] for r in rows], "seq": [r[_SEQ] for r in rows],
            "fingerprint": [r[_FP] for r in rows]}


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
    cols = _export_arrays(_Loaded(store, include_vector))
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


# ---- events --------------------------------------------------------------------------------------
def events(store: Store, *, device: Optional[str] = None, kind: Optional[str] = None) -> list:
    """Stored events (Store.events dicts) in time order, only `device`'s (hex) and/or only of
    `kind` if given."""
    dev = None
    if device is not None:
        try:
            dev = bytes.fromhex(device)
        except ValueError:
            raise ZealError("--device takes the device id in hex, got %r" % device) from None
        if not 1 <= len(dev) <= 8:
            raise ZealError("--device takes 1 to 8 bytes in hex, got %r" % device)
        dev = dev.ljust(8, b"\0")  # as in HELLO
    rows = store.events(device_id=dev)
    if kind is not None:
        rows = [e for e in rows if e["kind"] == kind]
    return rows


def format_events(rows: list) -> str:
    lines = []
    for e in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"]))
        who = e["device"] or "-"
        count = " x%d" % e["count"] if e["count"] != 1 else ""
        lines.append("%s  %-16s  %-14s %s%s%s" % (when, who, e["kind"], e["detail"], count,
                                                  ("  [%s]" % e["port"]) if e["port"] else ""))
    return "\n".join(lines)


def cmd_events(args) -> int:
    with open_existing(args.db, readonly=True) as store:
        rows = events(store, device=args.device, kind=args.kind)
    if args.json:
        print(json.dumps(rows, indent=1))
    elif rows:
        print(format_events(rows))
    else:
        print("no events%s" % ("" if args.device is None and args.kind is None
                               else " matching"))
    return 0


# ---- command line --------------------------------------------------------------------------------
def _num(value, spec="%.6f") -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ",".join(_num(v, spec) for v in value)
    return spec % value if isinstance(value, float) else str(value)


def format_table(doc: dict) -> str:
    """One line per device, then the overall line, then what the user must not miss: devices
    that reported errors, and data from DEBUG builds (NOT private)."""
    head = ("%-16s %9s %12s %25s %6s %9s %8s %6s %7s %7s"
            % ("device", "n", "mean", "99% interval (Bernstein)", "bits", "wire b/r",
               "rejected", "gaps", "reboots", "dropped"))
    lines = [head, "-" * len(head)]

    def line(name, d):
        ci = "-" if d["ci99"] is None else "[%.4f, %.4f]" % tuple(d["ci99"])
        text = ("%-16s %9d %12s %25s %6s %9s %8d %6d %7d %7d"
                % (name, d["n"], _num(d["mean_calibrated"]), ci, _num(d["bits"]),
                   _num(d["wire_bits_per_report"], "%.2f"), d["rejected_frames"], d["gaps"],
                   d["reboots"], d.get("frames_dropped", 0)))
        if not d.get("private", True):
            text += "  DEBUG: NOT PRIVATE"
        return text

    for d in doc["devices"]:
        lines.append(line(d["device"], d))
    lines.append(line("overall", doc["overall"]))
    o = doc["overall"]
    lines.append("AVG* (exact) %s; data frames %s bits/report; TR (paper) %s"
                 % (_num(o["avg_star"]), _num(o["data_bits_per_report"], "%.2f"),
                    _num(o["transmission_ratio"], "%.4f")))
    if isinstance(o["bits"], list):
        lines.append("%d profiles: overall = n-weighted mean of the per-profile calibrated "
                     "means; interval by a union bound" % len(o["bits"]))
    for d in doc["devices"]:
        if d.get("errors"):
            lines.append("device %s reported errors: %s" % (d["device"], "; ".join(d["errors"])))
    for d in doc["devices"]:
        if not d.get("private", True):
            lines.append("device %s runs a DEBUG build: its %d reports are NOT PRIVATE "
                         "(readings replaced %d, clamped %d)"
                         % (d["device"], d["debug_reports"], d.get("replaced", 0),
                            d.get("clamped", 0)))
    if not o.get("private", True):
        lines.append("WARNING: %d of the %d reports come from DEBUG builds and are NOT "
                     "PRIVATE" % (o["debug_reports"], o["n"]))
    return "\n".join(lines)


def cmd_analyze(args) -> int:
    with open_existing(args.db, readonly=True) as store:
        doc = analyze(store, include_vector=args.include_vector)
        paths = []
        if args.plots:
            from . import plots

            paths = plots.plot_store(store, args.plots, include_vector=args.include_vector)
    if args.json:
        if paths:
            doc["plots"] = paths
        print(json.dumps(doc, indent=1))
    else:
        print(format_table(doc))
        for p in paths:
            print("plot written to %s" % p)
    return 0


def cmd_export(args) -> int:
    out = args.output
    if out is None:
        out = os.path.splitext(args.db)[0] + "." + args.format
    with open_existing(args.db, readonly=True) as store:
        n = export(store, out, args.format, include_vector=args.include_vector)
    if out != "-":
        print("%d reports written to %s" % (n, out))
    return 0


def register(subparsers) -> None:
    """Add `zeal analyze`, `zeal export` and `zeal events` to the CLI's sub-command table."""
    p = subparsers.add_parser("analyze", help="estimates, losses and wire cost from a "
                              "collector database",
                              description="Decode the stored reports and print, per device "
                              "and overall, the calibrated mean with its 99% interval, the "
                              "wire cost and the losses the collector recorded.")
    p.add_argument("--db", required=True, metavar="FILE", help="the collector's database")
    p.add_argument("--plots", metavar="DIR", help="also write PNG plots here "
                   "(needs matplotlib: pip install 'zeal-mcu[plots]')")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--include-vector", action="store_true",
                   help="count test-mode (vector) frames too (never real data)")
    p.set_defaults(func=cmd_analyze)

    p = subparsers.add_parser("export", help="write every stored report to CSV or Parquet",
                              description="One row per report: device, boot, seq, index, "
                              "low, k, value (the exact double), fingerprint.")
    p.add_argument("--db", required=True, metavar="FILE", help="the collector's database")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="csv",
                   help="csv (default) or parquet (needs pyarrow: "
                        "pip install 'zeal-mcu[parquet]')")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="output file (default: the database's name with .csv/.parquet; "
                        "'-' for CSV on stdout)")
    p.add_argument("--include-vector", action="store_true",
                   help="export test-mode (vector) frames too")
    p.set_defaults(func=cmd_export)

    p = subparsers.add_parser("events", help="list the events the collector stored (status, "
                              "gaps, rejects, reboots, connects, ...)",
                              description="Every stored event in time order: device STATUS "
                              "messages, sessions and reboots, gaps, rejected frames, "
                              "connects and disconnects, reader errors, duplicate ids. Opens "
                              "the database read-only.")
    p.add_argument("--db", required=True, metavar="FILE", help="the collector's database")
    p.add_argument("--json", action="store_true", help="print a JSON list (time, device, "
                   "port, kind, detail, count)")
    p.add_argument("--device", metavar="HEX", help="only this device's events")
    p.add_argument("--kind", metavar="K", help="only events of this kind (status, gap, "
                   "reject, reboot, session, connect, disconnect, reader_error, "
                   "duplicate_id, conflict, ...)")
    p.set_defaults(func=cmd_events)
