"""Analysis of a store: estimates, losses, wire cost; the stored events.

- `analyze(store)`: per device, per profile and overall: n, the calibrated mean with its 99%
  Bernstein interval, AVG*, bits, the paper's transmission ratio, wire bits per report, and
  the losses the collector recorded (rejected frames, gaps, reboots, frames the device
  dropped); per device, the error STATUS it reported and whether its data came from a DEBUG
  build (non-private: never called private).
- `analyze_data(data, where)`: the same on what a store holds, page by page (a
  `decode.Paged`) or at once (an archive's `compress.archive.ArchivedData`); `analyze_archive(path)`:
  the document from a `zeal compress` archive (equal to the database's, figure for figure).
- `events(store)`: the stored events, filtered (`zeal events`).
- `register(subparsers)`: `zeal analyze` (--db or --archive), `zeal export` (zeal.analysis.export) and `zeal
  events`; each opens the database read-only.

The stored payloads are decoded by zeal.analysis.decode; `decode_frames`, `decode_values`,
`unpack_frames` and `DecodeError` are re-exported here.
"""
import json
import math
import re
import time
from collections import Counter
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import wire
from ..collect.store import Store, open_existing, open_store  # noqa: F401 (tests)
from ..errors import ZealError
from ..text import shown
from ..mechanism import kinds
from ..mechanism.grid.estimate import Estimator
from ..mechanism.core.tally import Tally, TallySet
from ..mechanism.grid.profile import Profile
from ..paper import formulas as paper
from .decode import Paged, frame_columns
from .decode import DecodeError, decode_frames, decode_values, unpack_frames  # noqa: F401
from ..wire.codec import device_name

CONFIDENCE = 0.99
# Event kinds the collector records (store.py: events.kind).
EVENT_REJECT, EVENT_GAP, EVENT_REBOOT = "reject", "gap", "reboot"
# STATUS codes that mean the device cannot sample (wire.ERROR_CODES by name)
ERROR_STATUSES = ("NO_PROFILE", "BAD_PROFILE", "CONFIG", "CRASH")
# The collector's status event detail: "<CODE> ticks=T frames_dropped=F[ replaced=R
# clamped=C debug][ message]"
_STATUS = re.compile(r"^(\w+) ticks=(\d+) frames_dropped=(\d+)"
                     r"(?: replaced=(\d+) clamped=(\d+) debug)?(?: (.*))?$", re.S)


# ---- estimates -----------------------------------------------------------------------------------
class _Estimators:
    def __init__(self):
        self._cache = {}

    def get(self, profile: Profile, confidence: float = CONFIDENCE) -> Estimator:
        """The profile's estimator (grid or table kind), cached."""
        key = (profile.fingerprint, confidence)
        if key not in self._cache:
            self._cache[key] = kinds.of(profile).estimator(profile, confidence)
        return self._cache[key]


def transmission_ratio(profile: Profile) -> Optional[float]:
    """The paper's TR = 1 - gamma_min/64 at the profile's exponent (Thm 3.6), or None where the
    paper's float64 E_enc disagrees with the exact one (an exponent the paper would refuse).
    None for a table profile (the paper's figure is about the window grid's binade)."""
    if not kinds.of(profile).double_reports:
        return None
    try:
        return paper.transmission_ratio(paper.gamma_min(profile.lo, profile.hi,
                                                        profile.epsilon, profile.exponent))
    except ValueError:
        return None


def _finite_interval(low: float, high: float):
    return [low, high] if math.isfinite(low) and math.isfinite(high) else None


def profile_kind(profile) -> str:
    """"grid" (the window grid, zeal-profile/1) or "table" (a table profile, zeal-table/1)."""
    return kinds.of(profile).name


def summarize(parts: List[Tuple[Profile, object]], estimators: Optional[_Estimators] = None
              ) -> dict:
    """Estimates from the reports of one or several profiles: each part is (profile, a Tally
    of its offsets, zeal.mechanism.core.tally) or (profile, an array of offsets), non-empty.

    One profile: the estimator's summary. Several: the n-weighted combination of the
    per-profile calibrated means (exact: sum_p n_p mean_p / n in rationals). Its 99% interval
    is a union bound over the profiles: each profile's Bernstein half-width is taken at
    confidence 1 - 0.01/P, so with probability >= 0.99 every |mean_p - xbar_p| <= lambda_p
    holds at once, and then |mean - xbar| <= sum_p (n_p/n) lambda_p. The normal
    approximation combines variances: sqrt(sum_p (n_p/n)^2 w_p^2), w_p the per-profile
    half-width. AVG* is a window-grid notion: None when any part is a table profile.
    "kind" says which mechanism made the reports ("grid" or "table"; a list for several).
    """
    est = estimators or _Estimators()
    parts = [(p, t if isinstance(t, Tally) else
              est.get(p).add_to(Tally(counts=est.get(p).needs_counts), t)) for p, t in parts]
    if len(parts) == 1:
        prof, t = parts[0]
        e = est.get(prof)
        m = float(e.mean_of_tally(t))
        bw, cw = e.bernstein_halfwidth(t.n), e.clt_halfwidth_tally(t)
        avg = e.avg_star_of_tally(t)
        return {"n": t.n, "mean_calibrated": m, "ci99": [m - bw, m + bw],
                "ci99_clt": _finite_interval(m - cw, m + cw),
                "avg_star": None if avg is None else float(avg),
                "avg_star_naive_float64": e.avg_star_naive_tally(t), "bits": prof.bits,
                "exponent": getattr(prof, "exponent", None),
                "transmission_ratio": transmission_ratio(prof),
                "fingerprint": prof.fingerprint, "kind": profile_kind(prof)}
    n = sum(t.n for _, t in parts)
    union = 1 - (1 - CONFIDENCE) / len(parts)
    mean = avg = Fraction(0)
    naive = bern = clt2 = 0.0
    grids_only = all(kinds.of(p).double_reports for p, _ in parts)  # AVG*: their doubles
    for prof, t in parts:
        e = est.get(prof)
        w = Fraction(t.n, n)
        mean += w * e.mean_of_tally(t)
        if grids_only:
            avg += w * e.avg_star_of_tally(t)
            naive += float(w) * e.avg_star_naive_tally(t)
        bern += float(w) * est.get(prof, union).bernstein_halfwidth(t.n)
        clt2 += (float(w) * e.clt_halfwidth_tally(t)) ** 2
    m, cw = float(mean), math.sqrt(clt2)
    return {"n": n, "mean_calibrated": m, "ci99": [m - bern, m + bern],
            "ci99_clt": _finite_interval(m - cw, m + cw),
            "avg_star": float(avg) if grids_only else None,
            "avg_star_naive_float64": naive if grids_only else None,
            "bits": [p.bits for p, _ in parts],
            "exponent": [getattr(p, "exponent", None) for p, _ in parts],
            "transmission_ratio": [transmission_ratio(p) for p, _ in parts],
            "fingerprint": [p.fingerprint for p, _ in parts],
            "kind": [profile_kind(p) for p, _ in parts]}


_EMPTY = {"n": 0, "mean_calibrated": None, "ci99": None, "ci99_clt": None, "avg_star": None,
          "avg_star_naive_float64": None, "bits": None, "exponent": None,
          "transmission_ratio": None, "fingerprint": None, "kind": None}


def _wire_bytes(sizes, bits: int) -> int:
    """Bytes of DATA frames on the wire, from {report count: frames}: COBS(body || CRC) plus
    the delimiter, by wire.frame_length. Exact while body + CRC <= 254 bytes (e.g. 64 reports
    of up to 30 bits); above, an upper bound by at most one byte per 254 (COBS adds a byte
    only after 254 non-zero bytes, and the rows do not keep the CRC to tell)."""
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
    "kind" names the mechanism of the reports' profile: "grid" (the window grid) or "table"
    (a table profile; AVG* and TR are then None: grid notions). Each device entry also has
    "device" (its 8-byte id in hex, as `zeal events --device` takes it) and "name" (the id as text when printable ASCII, e.g. "demo-000", else the hex).
    ZealError if there are no reports (naming the devices that reported errors, if any).
    """
    from . import multi_report  # multi-attribute reports (seed 001): per-attribute estimates
    from . import shuffle_report  # shuffle mode (seed 004): its own document

    docs = []
    data = Paged(store, include_vector, one_reading=True)
    others = shuffle_report.holds_shuffle(store) or multi_report.holds_multi(store)
    if not others or data.any_rows():
        docs.append(analyze_data(data, store.path, include_vector, chunks=data.chunks()))
    if shuffle_report.holds_shuffle(store):
        docs.append(shuffle_report.analyze_doc(store, include_vector))
    if multi_report.holds_multi(store):
        docs.append(multi_report.analyze_doc(store, include_vector))
    if len(docs) == 1:
        return docs[0]
    # a store of several kinds: the first document's keys as when it is alone, and every
    # kind's document in "sections" (one-reading profiles, shuffle, multi-attribute)
    return dict(docs[0], sections=docs)


class _Totals:
    """analyze's running figures over pages of frames (decode.Paged.chunks): per profile a
    Tally of its offsets and a TallySet of its devices' (zeal.mechanism.core.tally), the
    frames' report counts (their wire bytes), debug reports."""

    def __init__(self, profiles, est):
        self.profiles, self.est = profiles, est
        self.fp_order: List[str] = []
        self.fp = {}          # fp -> Tally
        self.fp_devs = {}     # fp -> TallySet, labelled by the global device index
        self.fp_seen = {}     # fp -> set of device indices
        self.names: List[bytes] = []
        self.index: Dict[bytes, int] = {}
        self.fp_sizes = {}    # fp -> Counter of frame counts
        self.dev_sizes = {}   # dev -> Counter of (fp, frame count)
        self.debug = {}       # dev -> debug reports
        self.frames = 0

    def add_chunk(self, fp, frame_dev, names, counts, debug, j) -> None:
        e = self.est.get(self.profiles[fp])
        if fp not in self.fp:
            self.fp_order.append(fp)
            self.fp[fp] = Tally(counts=e.needs_counts)
            self.fp_devs[fp] = TallySet(counts=e.needs_counts)
            self.fp_seen[fp] = set()
            self.fp_sizes[fp] = Counter()
        for d in names:
            if d not in self.index:
                self.index[d] = len(self.names)
                self.names.append(d)
        glob = np.array([self.index[d] for d in names], dtype=np.int64)
        self.frames += int(counts.size)
        whole, devs = self.fp[fp], self.fp_devs[fp]
        self.fp_seen[fp].update(glob.tolist())
        # frames per (device, count) and debug reports per device, from small bincounts
        width = int(counts.max()) + 1
        pairs = np.bincount(frame_dev * width + counts, minlength=len(names) * width)
        for key in np.flatnonzero(pairs).tolist():
            dev, count = names[key // width], key % width
            frames = int(pairs[key])
            self.fp_sizes[fp][count] += frames
            if dev not in self.dev_sizes:
                self.dev_sizes[dev] = Counter()
            self.dev_sizes[dev][(fp, count)] += frames
        if debug.any():
            per = np.bincount(frame_dev, weights=counts * debug, minlength=len(names))
            for i in np.flatnonzero(per).tolist():
                self.debug[names[i]] = self.debug.get(names[i], 0) + int(per[i])
        k = int(glob[0])
        if len(names) == 1 and int(devs.n[k] if k < devs.size else 0) == whole.n:
            e.add_to(whole, j, counts)  # the device has had every report of this profile, in
            devs.set_from(k, whole)   # the same order: the same tally
        else:
            e.add_frames(devs, glob[frame_dev], counts, j, total=whole)

    def dev_parts(self, dev) -> list:
        k = self.index[dev]
        return [(self.profiles[fp], self.fp_devs[fp].tally(k)) for fp in self.fp_order
                if k in self.fp_seen[fp]]

    def devices(self) -> List[bytes]:
        return [d for d in self.names if any(self.index[d] in self.fp_seen[fp]
                                             for fp in self.fp_order)]

    def dev_wire(self, dev) -> int:
        return sum(_wire_bytes({count: frames}, self.profiles[fp].bits)
                   for (fp, count), frames in self.dev_sizes[dev].items())

    def fp_wire(self, fp) -> int:
        return _wire_bytes(self.fp_sizes[fp], self.profiles[fp].bits)


def analyze_data(data, where: str, include_vector: bool = False, chunks=None) -> dict:
    """`analyze` on what a store holds: a `decode.Paged` (with chunks=its chunks()), or an
    archive's `compress.archive.ArchivedData` (rows and offsets at once: one chunk a
    profile); `where` names it in errors. Memory: running tallies only
    (zeal.mechanism.core.tally), whatever the number of reports."""
    health = device_health(data.statuses)
    est = _Estimators()
    if chunks is None:  # an archive's data: every profile's frames at once
        chunks = ((fp,) + frame_columns(rows) + (data.offsets(fp),)
                  for fp, rows in data.by_fp.items())
    totals = _Totals(data.profiles, est)
    for chunk in chunks:
        totals.add_chunk(*chunk)
    if not totals.frames:
        failed = ["%s (%s)" % (device_name(dev), "; ".join(h["errors"]))
                  for dev, h in sorted(health.items()) if h["errors"]]
        raise ZealError("no reports stored in %s" % where
                        + ("" if include_vector else " (test-mode frames not counted)")
                        + ("; devices that reported errors: " + ", ".join(failed)
                           if failed else ""))
    dev_parts = {dev: totals.dev_parts(dev) for dev in totals.devices()}
    dev_wire = {dev: totals.dev_wire(dev) for dev in dev_parts}

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

    debug_reports = totals.debug

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
        devices.append(dict({"device": dev.hex(), "name": device_name(dev)}, **doc))

    profiles = []
    for fp in totals.fp_order:
        doc = summarize([(data.profiles[fp], totals.fp[fp])], est)
        doc["wire_bits_per_report"] = 8 * totals.fp_wire(fp) / doc["n"]
        doc["devices"] = len(totals.fp_seen[fp])
        profiles.append(doc)

    overall = summarize([(data.profiles[fp], totals.fp[fp]) for fp in totals.fp_order], est)
    n = overall["n"]
    overall["wire_bits_per_report"] = 8 * data.link_bytes / n if data.link_bytes else None
    overall["data_bits_per_report"] = 8 * sum(dev_wire.values()) / n
    overall.update(loss_doc(list(losses.values())))
    overall["frames_dropped"] = sum(d["frames_dropped"] for d in devices)
    overall["debug_reports"] = sum(debug_reports.values())
    overall["private"] = overall["debug_reports"] == 0
    overall["devices_with_errors"] = [d["device"] for d in devices if d["errors"]]
    overall["devices"] = len(dev_parts)
    overall["frames"] = totals.frames
    return {"overall": overall, "devices": devices, "profiles": profiles}


# ---- events --------------------------------------------------------------------------------------
# what the collector and the store record (zeal.collect.store's docstring lists their keys)
EVENT_KINDS = ("session", "reboot", "gap", "restart", "reject", "status", "connect",
               "disconnect", "reader_error", "duplicate_id", "hello_request", "conflict",
               "unresolved_dropped", "events_dropped", "devices_dropped")


def device_id_arg(text: str) -> bytes:
    """--device: a device id in hex (1 to 8 bytes), or its name as the tables show it (up to
    8 printable characters, e.g. demo-000); 8 bytes, zero-padded as in HELLO."""
    try:
        dev = bytes.fromhex(text)
    except ValueError:
        dev = None
    if dev is not None and 1 <= len(dev) <= 8:
        return dev.ljust(8, b"\0")
    raw = text.encode("ascii", "replace")
    if 0 < len(raw) <= 8 and all(0x20 < c < 0x7f for c in raw):
        return raw.ljust(8, b"\0")
    raise ZealError("--device takes a device id in hex (up to 16 digits) or its name (up to "
                    "8 characters, as the tables show it), got %r" % text)


def events(store: Store, *, device: Optional[str] = None, kind: Optional[str] = None) -> list:
    """Stored events (Store.events dicts, each with its device's "name" added) in time order,
    only `device`'s (hex or name) and/or only of `kind` if given."""
    dev = None if device is None else device_id_arg(device)
    rows = store.events(device_id=dev)
    if kind is not None:
        if kind not in EVENT_KINDS and kind not in {e["kind"] for e in rows}:
            raise ZealError("--kind %s: no such event kind (the kinds: %s)"
                            % (kind, ", ".join(EVENT_KINDS)))
        rows = [e for e in rows if e["kind"] == kind]
    for e in rows:
        e["name"] = None if e["device"] is None else device_name(bytes.fromhex(e["device"]))
    return rows


def format_events(rows: list) -> str:
    lines = []
    for e in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"]))
        who = e.get("name") or e["device"] or "-"
        count = " x%d" % e["count"] if e["count"] != 1 else ""
        # every text here is the database's (a file may come from anyone): escaped
        lines.append("%s  %-16s  %-14s %s%s%s" % (when, shown(who), shown(e["kind"]),
                                                  shown(e["detail"]), count,
                                                  ("  [%s]" % shown(e["port"])) if e["port"]
                                                  else ""))
    return "\n".join(lines)


def cmd_events(args) -> int:
    with open_store(args.db, read_only=True) as store:
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


def format_table(doc: dict, footer: bool = True, paper: bool = False) -> str:
    """One line per device (named by its text id when printable, else hex), then the overall
    line, then what the user must not miss: devices that reported errors, and data from DEBUG
    builds (NOT private). A "true mean" column appears when the entries carry one (the demo).
    footer: the wire-cost line (the demo explains it itself); paper: also the Zeal paper's
    AVG* and TR. A store of several kinds: each kind's table in turn."""
    if "sections" in doc:
        return "\n\n".join(format_table(d, footer, paper) for d in doc["sections"])
    if "shuffle" in doc:  # shuffle mode's document (analysis.shuffle_report)
        from .shuffle_report import format_text

        return format_text(doc["shuffle"])
    if doc.get("multi"):  # multi-attribute reports (analysis.multi_report)
        from .multi_report import format_text as multi_text

        return multi_text(doc)
    truth = "true_mean" in doc["overall"]
    head = ("%-16s %9s %12s %25s%s %6s %9s %8s %6s %7s %7s"
            % ("device", "reports", "estimate", "99% interval",
               " %12s" % "true mean" if truth else "", "bits", "wire bits",
               "rejected", "lost", "reboots", "dropped"))
    lines = [head, "-" * len(head)]
    legend = ("(estimate: the mean of the readings, computed from the private reports; bits: "
              "each report's; wire bits: per report on the line, framing included; rejected, "
              "lost: frames; dropped: by the board)")

    def line(name, d):
        ci = "-" if d["ci99"] is None else "[%.4f, %.4f]" % tuple(d["ci99"])
        text = ("%-16s %9d %12s %25s%s %6s %9s %8s %6s %7s %7s"
                % (name, d["n"], _num(d["mean_calibrated"]), ci,
                   " %12s" % _num(d.get("true_mean")) if truth else "", _num(d["bits"]),
                   _num(d["wire_bits_per_report"], "%.2f"), _num(d["rejected_frames"]),
                   _num(d["gaps"]), _num(d["reboots"]), _num(d.get("frames_dropped", 0))))
        if d.get("private", True) is False:     # None: not known (a reports file)
            text += "  DEBUG: NOT PRIVATE"
        return text

    for d in doc["devices"]:
        lines.append(line(d.get("name", d["device"]), d))
    lines.append(line("overall", doc["overall"]))
    lines.append(legend)
    o = doc["overall"]
    kinds = o.get("kind")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    tables = "table" in kinds
    if footer:
        lines.append("bits on the wire per report: %s counting every byte read, %s in DATA "
                     "frames alone (a raw double: 64)"
                     % (_num(o["wire_bits_per_report"], "%.2f"),
                        _num(o["data_bits_per_report"], "%.2f")))
    if footer and paper:
        avg = ("n/a (a window-grid notion; table profiles report the calibrated mean only)"
               if tables else _num(o["avg_star"]))
        lines.append("paper: AVG* (the Zeal paper's estimator: the mean of the perturbed "
                     "doubles minus the public bias; exact here, biased on coarse grids) %s; "
                     "TR (its transmission ratio: report bits over 64) %s"
                     % (avg, _num(o["transmission_ratio"], "%.4f")))
    if tables:
        for p in doc.get("profiles", []):
            lines.append("profile %s: %s, %s bits per report, %d reports"
                         % (p["fingerprint"][:16],
                            "table profile (zeal-table/1)" if p.get("kind") == "table"
                            else "window grid (zeal-profile/1)", _num(p["bits"]), p["n"]))
    if isinstance(o["bits"], list):
        lines.append("%d profiles: overall = n-weighted mean of the per-profile calibrated "
                     "means; interval by a union bound" % len(o["bits"]))
    for d in doc["devices"]:
        if d.get("errors"):  # the devices' STATUS messages: escaped
            lines.append(shown("device %s reported errors: %s"
                               % (d.get("name", d["device"]), "; ".join(d["errors"]))))
    for d in doc["devices"]:
        if not d.get("private", True):
            lines.append("device %s runs a DEBUG build: its %d reports are NOT PRIVATE "
                         "(readings replaced %d, clamped %d)"
                         % (d.get("name", d["device"]), d["debug_reports"],
                            d.get("replaced", 0), d.get("clamped", 0)))
    if doc.get("source") == "reports":
        lines.append("from an archive of a reports file: no devices, frames, links or "
                     "events, so wire cost and losses are absent (-)")
    if o.get("private") is False:
        lines.append("WARNING: %d of the %d reports come from DEBUG builds and are NOT "
                     "PRIVATE" % (o["debug_reports"], o["n"]))
    return "\n".join(lines)


def headline(doc: dict, unit: str = "") -> str:
    """The estimates of `analyze`'s document in one short line (`zeal run`'s live line): the
    mean with its 99 % interval; a multi-attribute store each numeric attribute's; a
    shuffled batch each coordinate's mean (its error bound is the batch's, not an interval).
    `unit` follows each one-reading figure."""
    if "sections" in doc:
        return "; ".join(headline(d, unit) for d in doc["sections"])
    unit = (" " + unit) if unit else ""
    if "shuffle" in doc:
        return "; ".join("means (%s) of %d messages" % (", ".join(_num(m, "%.4g")
                                                                  for m in r["mean"]),
                                                      r["messages"]) for r in doc["shuffle"])
    if doc.get("multi"):
        return "  ".join("%s %s [%s, %s]" % (a["name"], _num(a["mean_calibrated"], "%.4g"),
                                             _num(a["ci99"][0], "%.4g"),
                                             _num(a["ci99"][1], "%.4g"))
                         for a in doc["attributes"] if a["kind"] == "numeric")
    o = doc["overall"]
    ci = o.get("ci99")
    return "estimate %s%s, 99%% interval %s" % (
        _num(o["mean_calibrated"], "%.4f"), unit,
        "-" if ci is None else "[%.4f, %.4f]%s" % (ci[0], ci[1], unit))


# Figures a reports-file archive cannot give (no devices, frames, links or events): absent.
_NO_COLLECTION = {"wire_bits_per_report": None, "data_bits_per_report": None,
                  "rejected_frames": None, "gaps": None, "reboots": None,
                  "frames_dropped": None, "debug_reports": None, "private": None,
                  "devices_with_errors": None, "devices": None, "frames": None}


def analyze_archive(path: str, include_vector: bool = False) -> dict:
    """`analyze`'s document from an archive (`zeal compress`). From a database's archive:
    the same document, figure for figure, as `analyze` on that database. From a reports
    file's archive: the estimates (overall and the one profile); the figures only a
    collection has are None (absent), and "source" is "reports". `path` may be any volume of
    a set (compress.archive_volumes): every volume is read in turn, one held at a time, its
    chunks fed in order (volume 1's events), giving the document of the store."""
    from .compress import archive

    arc = archive.read(path)
    if arc.volumes > 1:
        data = archive.VolumeSet(arc, include_vector)
        del arc                    # the volume given is let go: one volume held at a time
        return analyze_data(data, path, include_vector, chunks=data.chunks())
    if arc.source == "database":
        if not arc.patterns_only:   # multi or shuffle streams: analyze runs on a store's view
            from .compress.replay import ArchiveStore

            return analyze(ArchiveStore(arc), include_vector)
        data = arc.loaded(include_vector)
        del arc                    # its streams: now the data's offsets
        return analyze_data(data, path, include_vector, chunks=data.chunks())
    prof, j = arc.reports_offsets()
    overall = summarize([(prof, j)])
    overall.update(_NO_COLLECTION)
    profile = summarize([(prof, j)])
    profile.update(wire_bits_per_report=None, devices=None)
    return {"overall": overall, "devices": [], "profiles": [profile], "source": "reports"}


def cmd_analyze(args) -> int:
    if (args.db is None) == (args.archive is None):
        raise ZealError("give --db FILE or --archive ARCHIVE")
    if args.archive is not None:
        if args.plots or getattr(args, "unit", None):
            raise ZealError("--plots needs --db (plots read the database; --unit is for "
                            "--plots)")
        doc = analyze_archive(args.archive, include_vector=args.include_vector)
        paths = []
    else:
        if args.plots:
            from .plots import require_matplotlib

            require_matplotlib("zeal analyze --plots")  # before the analysis, not after it
        with open_store(args.db, read_only=True) as store:
            doc = analyze(store, include_vector=args.include_vector)
            paths = []
            if args.plots:
                from . import plots

                paths = plots.plot_store(store, args.plots,
                                         include_vector=args.include_vector,
                                         unit=getattr(args, "unit", None))
    if args.json:
        if paths:
            doc["plots"] = paths
        print(json.dumps(doc, indent=1))
    else:
        print(format_table(doc, paper=getattr(args, "paper", False)))
        for p in paths:
            print("plot written to %s" % p)
    return 0


