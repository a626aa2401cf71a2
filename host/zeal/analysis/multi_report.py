"""Multi-attribute reports in a store (multi.md): per-attribute estimates with 99% intervals.

`holds_multi(store)`: whether the store has DATA frames under a multi profile.
`analyze_doc(store, include_vector)`: `zeal analyze`'s document for them:
    {"multi": True, "attributes": [...] (of the first multi profile, the demo's),
     "profiles": [{fingerprint, epsilon, d, k, n, frames, devices, attributes,
                   report_bits_mean, payload_bits_per_report, wire_bits_per_report}],
     "devices": [{device, name, n}], "overall": {n, frames, devices, private, debug_reports}}
Each numeric attribute: {name, kind "numeric", n (reports), carried (reports that held it),
mean_calibrated, ci99 [low, high]} (Bernstein, valid at every n: multi.MultiEstimator; a
figure past float64, for a range near the top of float64, is None);
each categorical one: {name, kind "categorical", n, carried, frequencies {value: {estimate,
ci99}}} (per value, not simultaneous). wire_bits_per_report counts every DATA frame's bytes on
the wire (COBS, CRC, header, delimiter: exact, re-encoded from the stored frame) per report.
`format_text(doc)`: the table `zeal analyze` prints.
"""
import struct

import numpy as np

from .. import wire
from ..errors import ZealError
from ..mechanism import kinds
from ..mechanism.multi.mechanism import MultiEstimator
from ..mechanism.multi.profile import unpack_multi, PayloadError
from ..wire.codec import device_name

_DEVICE, _BOOT, _SEQ, _FP, _COUNT, _PAYLOAD = range(6)


def _multi_profiles(store) -> dict:
    return {fp: p for fp, p in store.profiles().items() if kinds.of(p) is kinds.MULTI}


def holds_multi(store) -> bool:
    fps = _multi_profiles(store)
    if not fps:
        return False
    return any(row[_FP] in fps for vec in (False, True) for row in store.frames(vector=vec))


def frame_wire_bytes(row) -> int:
    """The bytes one stored DATA frame took on the wire: COBS(body || CRC) and its delimiter,
    the body rebuilt (type, u16 seq, count, payload; the CRC's bytes taken as non-zero, which
    is exact but for a CRC byte of 0: COBS length depends only on the zeros' places)."""
    body = struct.pack("<BHB", wire.TYPE_DATA, row[_SEQ] & 0xFFFF, row[_COUNT]) + bytes(row[_PAYLOAD])
    return len(wire.cobs_encode(body + b"\xff" * wire.CRC_LEN)) + 1


def summarize_profile(prof, rows) -> dict:
    """Per-attribute estimates of one multi profile's stored frames."""
    reports = []
    for r in rows:
        try:
            reports.extend(unpack_multi(prof, r[_PAYLOAD], r[_COUNT]))
        except PayloadError as exc:
            raise ZealError("frame %s boot %d seq %d: %s" % (device_name(r[_DEVICE]), r[_BOOT],
                                                             r[_SEQ], exc)) from None
    n = len(reports)
    idx = np.array([[j for j, _ in rep] for rep in reports], dtype=np.int64).reshape(n, prof.k)
    val = np.array([[y for _, y in rep] for rep in reports], dtype=np.int64).reshape(n, prof.k)
    m = prof.multi()
    atts = [s.as_dict() for s in MultiEstimator(m).summarize(idx, val)]
    payload_bits = sum(prof.index_bits + prof.attributes[j].bits for rep in reports
                       for j, _ in rep)
    wire_bytes = sum(frame_wire_bytes(r) for r in rows)
    return {"fingerprint": prof.fingerprint, "epsilon": prof.epsilon, "d": prof.d,
            "k": prof.k, "names": prof.names, "n": n, "frames": len(rows),
            "devices": len({bytes(r[_DEVICE]) for r in rows}),
            "attributes": atts, "report_bits_mean": payload_bits / n,
            "report_bits_bound": prof.k * (prof.index_bits + max(a.bits for a in
                                                                 prof.attributes)),
            "payload_bits_per_report": 8 * sum(len(r[_PAYLOAD]) for r in rows) / n,
            "wire_bits_per_report": 8 * wire_bytes / n}


def analyze_doc(store, include_vector: bool = False) -> dict:
    profs = _multi_profiles(store)
    rows = [r for vec in ((False, True) if include_vector else (False,))
            for r in store.frames(vector=vec) if r[_FP] in profs]
    if not rows:
        raise ZealError("no multi-attribute reports stored in %s%s" % (
            store.path, "" if include_vector else " (test-mode frames not counted)"))
    by_fp = {}
    for r in rows:
        by_fp.setdefault(r[_FP], []).append(r)
    profiles = [summarize_profile(profs[fp], rs) for fp, rs in by_fp.items()]
    per_dev = {}
    for r in rows:
        per_dev[bytes(r[_DEVICE])] = per_dev.get(bytes(r[_DEVICE]), 0) + r[_COUNT]
    debug = sum(r[_COUNT] for r in rows if r[8])
    devices = [{"device": d.hex(), "name": device_name(d), "n": n}
               for d, n in sorted(per_dev.items())]
    return {"multi": True, "attributes": profiles[0]["attributes"], "profiles": profiles,
            "devices": devices,
            "overall": {"n": sum(p["n"] for p in profiles), "frames": len(rows),
                        "devices": len(per_dev), "debug_reports": debug,
                        "private": debug == 0}}


def _num(value) -> str:
    """A numeric figure: four decimals, 6 significant digits from 1e15 on (a range near
    1e300 would print 300 digits), n/a where the document holds None (past float64)."""
    if value is None:
        return "n/a"
    return "%.4f" % value if abs(value) < 1e15 else "%.6g" % value


def format_text(doc: dict, units=None) -> str:
    """One line per attribute (numeric: mean and interval; categorical: one line per value),
    per profile; then devices and the wire cost."""
    units = units or {}
    lines = []
    past = False
    for p in doc["profiles"]:
        lines.append("multi profile %s: d = %d attributes, k = %d per report, epsilon %g; %d "
                     "reports in %d frames from %d device(s)"
                     % (p["fingerprint"][:16], p["d"], p["k"], p["epsilon"], p["n"],
                        p["frames"], p["devices"]))
        truth = any("true_mean" in a for a in p["attributes"])
        head = "%-16s %8s %14s %29s%s" % ("attribute", "carried", "estimate",
                                         "99% interval (Bernstein)",
                                         " %14s" % "true mean" if truth else "")
        lines += [head, "-" * len(head)]
        for a in p["attributes"]:
            unit = units.get(a["name"], "")
            if a["kind"] == "numeric":
                tm = a.get("true_mean")
                lines.append("%-16s %8d %14s [%12s, %12s]%s %s"
                             % (a["name"], a["carried"], _num(a["mean_calibrated"]),
                                _num(a["ci99"][0]), _num(a["ci99"][1]),
                                " %14s" % _num(tm) if tm is not None else
                                (" %14s" % "" if truth else ""), unit))
                past = past or None in (a["mean_calibrated"],) + tuple(a["ci99"])
            else:
                for v, f in a["frequencies"].items():
                    lines.append("%-16s %8d %14.4f [%12.4f, %12.4f]  (frequency of value %s)"
                                 % (a["name"] if v == next(iter(a["frequencies"])) else "",
                                    a["carried"], f["estimate"], f["ci99"][0], f["ci99"][1], v))
        lines.append("wire: %.2f bits per report on the wire (DATA frames: header, CRC, COBS, "
                     "delimiter), %.2f payload bits per report, %.2f report bits on average "
                     "(bound k (ceil(log2 d) + m) = %d bits)"
                     % (p["wire_bits_per_report"], p["payload_bits_per_report"],
                        p["report_bits_mean"], p["report_bits_bound"]))
    if past:
        lines.append("n/a: past float64 (about 1.8e308): the attribute's range is too wide for "
                     "this figure")
    o = doc["overall"]
    if not o["private"]:
        lines.append("WARNING: %d reports came from a DEBUG build: NOT private" % o["debug_reports"])
    return "\n".join(lines)
