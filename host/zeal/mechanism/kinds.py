"""The profile kinds, one object each, behind one interface: the registry.

A profile file is one of four kinds (profile.md, table.md, multi.md, shuffle.md): the window
grid, a table (`zeal-table/1`), multi-attribute (`zeal-multi/1`) and shuffle
(`zeal-shuffle/2`). Code outside this module asks the kind object what it needs and never
which kind it holds:

    kind = kinds.of(profile)              # the kind object of a loaded profile
    kind = kinds.sniff(data)              # of a file's bytes (the sniff rule, first 503 bytes)
    profile = kinds.loads(data, fetch)    # a checked profile of any kind
    profile = kinds.load(path)

Each kind object answers:
  name                   "grid", "table", "multi", "shuffle" (what JSON documents print)
  export(profile, rows, counts, io)
                         the export's rows for the frames `rows` stored under `profile`:
                         a dict of equal-length arrays (EXPORT_FIELDS); `io` decodes the
                         stored payloads of fixed-width reports (zeal.analysis.decode: the
                         wire's bit layout is the analysis side's to read)
  export_doc(profile, unit, reports)
                         the export metadata's entry for the profile
  archivable             whether `zeal compress` can keep its reports (the archive stores
                         float64 report patterns: a grid's); None, or the one line saying why
  distribution_plots     whether analyze's per-profile histogram and running-mean plots
                         apply (a scalar report of one reading)
  rows_per_attribute     what one attribute's export rows count (a plot's axis label)
  refers_to_others       its file names other profile files by fingerprint (a multi header's
                         attribute files): a store loads it after the others

The export's rows. Every row is one unbiased estimate: grouped by (fingerprint, attribute,
value) the mean of `estimate` is exactly the figure `zeal analyze` prints for that group
(up to the rounding of each estimate to float64):
  grid, table  one row per report: attribute 0, name "reading", value "mean", low = the m
               bits sent, estimate =
               the report's unbiased estimate of its reading (the grid's affine map, the
               table's cell value)
  multi        one row per report and numeric attribute (value "mean"), and per report,
               categorical attribute and domain value v (value "frequency of v"): low = the
               value the report carried for the
               attribute (-1: not carried), estimate = mid + (d/k)(g(y) - mid) when carried,
               else mid (numeric; its mean over the n reports is MultiEstimator's
               mid + (d/k)/n sum (g(y) - mid)); for a categorical value v, (d/k)(B_v - q) /
               (p - q) when carried, else 0 (the mean is the frequency estimate)
  shuffle      one row per message (the shuffler's frames: no board identity): attribute =
               the coordinate c, name "coordinate c", value "mean", low = its level y, estimate = lo_c + (hi_c - lo_c)
               (y/k - gamma/2) / (1 - gamma); the mean over a coordinate's messages is
               shuffle.Analyzer's debiased mean. A message no randomiser sends (analyze
               counts it as invalid): attribute -1, low = the message, estimate NaN
"""
import math
from fractions import Fraction

import numpy as np

from ..errors import ProfileError
from . import multi_profile as MP
from . import profile as GP
from . import shuffle_profile as SP
from . import table_profile as TP
from .grid import ExactGrid
from .multi import _CategoricalPart

MAX_ANY_FILE = max(GP.MAX_FILE, TP.MAX_TABLE_FILE, MP.MAX_MULTI_FILE, SP.MAX_SHUFFLE_FILE)
# the export's per-row fields, beside the frame's (device, boot, seq, arrival, fingerprint)
EXPORT_FIELDS = ("frame", "report", "attribute", "name", "value", "low", "estimate")


def _as_bytes(data) -> bytes:
    return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)


def _frame_report(counts: np.ndarray) -> tuple:
    """(frame index, position within the frame) of every report of frames with `counts`."""
    counts = np.asarray(counts, dtype=np.int64)
    frame = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return frame, np.arange(frame.size, dtype=np.int64) - np.repeat(starts, counts)


def _rows(frame, report, attribute, name, value, low, estimate) -> dict:
    n = len(frame)
    return {"frame": np.asarray(frame, dtype=np.int64),
            "report": np.asarray(report, dtype=np.int64),
            "attribute": np.broadcast_to(np.asarray(attribute, dtype=np.int64), (n,)).copy(),
            "name": np.array(name if isinstance(name, list) else [name] * n, dtype=object),
            "value": np.array(value if isinstance(value, list) else [value] * n, dtype=object),
            "low": np.asarray(low, dtype=np.int64),
            "estimate": np.asarray(estimate, dtype=np.float64)}


def _ratio(x: Fraction) -> str:
    return "%d/%d" % (x.numerator, x.denominator)


def _by_value(values: np.ndarray, exact) -> np.ndarray:
    """float64 of exact(v) (a Fraction or int/int) for every entry of `values`, each rounded
    once, computed once per distinct value."""
    values = np.asarray(values, dtype=np.int64)
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    uniq, inverse = np.unique(values, return_inverse=True)
    table = np.array([float(exact(int(v))) for v in uniq.tolist()], dtype=np.float64)
    return table[inverse.reshape(-1)]


def _calibration(profile, doc: dict) -> dict:
    cal = getattr(profile, "calibration", None)
    if cal is not None:
        doc["calibration"] = {"gain": str(cal.gain), "offset": str(cal.offset)}
    return doc


class Kind:
    name = ""
    rows_per_attribute = "reports"
    refers_to_others = False
    profile_class = None
    archivable = None
    distribution_plots = False

    def matches(self, data: bytes) -> bool:
        raise NotImplementedError

    def loads(self, data: bytes, fetch=None):
        raise NotImplementedError

    def owns(self, profile) -> bool:
        return type(profile) is self.profile_class


# ---- the window grid ---------------------------------------------------------------------------
class GridKind(Kind):
    name = "grid"
    profile_class = GP.Profile
    distribution_plots = True

    def matches(self, data):
        return True  # the sniff rule's last resort

    def loads(self, data, fetch=None):
        return GP.loads(data)

    @staticmethod
    def estimate_map(profile) -> tuple:
        """(a, b, d) integers with estimate(j) = (a + b j) / d exactly (d > 0), j = k - k_lo:
        lo + g (j - c0) (zeal.analysis.export's docstring), from ExactGrid's slope and
        intercept."""
        g = ExactGrid(profile)
        gain = g.gain
        base = g.lo - gain * g.intercept
        d = base.denominator * gain.denominator // math.gcd(base.denominator, gain.denominator)
        return (base.numerator * (d // base.denominator), gain.numerator * (d // gain.denominator),
                d)

    def estimates(self, profile, j) -> np.ndarray:
        a, b, d = self.estimate_map(profile)
        return _by_value(j, lambda v: (a + b * v) / d)

    def export(self, profile, rows, counts, io):
        j = io.offsets(profile, rows)
        frame, report = _frame_report(counts)
        return _rows(frame, report, 0, "reading", "mean", j + (profile.k_lo - profile.wire_base),
                     self.estimates(profile, j))

    def export_doc(self, profile, unit, reports):
        a, b, d = self.estimate_map(profile)
        first = profile.k_lo - profile.wire_base  # the low of offset 0: j = low - first
        intercept, gain = Fraction(a - b * first, d), Fraction(b, d)  # estimate = i + g low
        return _calibration(profile, {
            "fingerprint": profile.fingerprint, "kind": self.name, "lo": profile.lo,
            "hi": profile.hi, "unit": unit, "epsilon": profile.epsilon, "bits": profile.bits,
            "exponent": profile.exponent, "n_cells": profile.n_cells,
            "n_window": profile.n_window, "threshold": profile.threshold, "reports": reports,
            "estimate_from_low": {"intercept": float(intercept), "gain": float(gain),
                                  "intercept_exact": _ratio(intercept),
                                  "gain_exact": _ratio(gain),
                                  "formula": "estimate = intercept + gain * low"},
            "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)})


# ---- tables ------------------------------------------------------------------------------------
class TableKind(Kind):
    name = "table"
    profile_class = TP.TableProfile
    archivable = "its reports are cells of a table, not the float64 patterns an archive keeps"
    distribution_plots = True

    def matches(self, data):
        return TP.is_table_file(data)

    def loads(self, data, fetch=None):
        return GP.loads(data)  # profile.loads dispatches a table file

    @staticmethod
    def values(profile) -> list:
        """The per-cell estimates g_j = lo + (hi - lo) a_j / Q, exact Fractions."""
        lo, hi = Fraction(profile.lo), Fraction(profile.hi)
        return [lo + (hi - lo) * Fraction(int(a), int(profile.value_den))
                for a in profile.values]

    def estimates(self, profile, j) -> np.ndarray:
        table = np.array([float(g) for g in self.values(profile)], dtype=np.float64)
        return table[np.asarray(j, dtype=np.int64).reshape(-1)]

    def export(self, profile, rows, counts, io):
        j = io.offsets(profile, rows)  # a cell: low = j
        frame, report = _frame_report(counts)
        return _rows(frame, report, 0, "reading", "mean", j, self.estimates(profile, j))

    def export_doc(self, profile, unit, reports):
        values = self.values(profile)
        return _calibration(profile, {
            "fingerprint": profile.fingerprint, "kind": self.name, "lo": profile.lo,
            "hi": profile.hi, "unit": unit, "epsilon": profile.epsilon, "bits": profile.bits,
            "n_cells": profile.n_cells, "anchors": profile.anchors, "reports": reports,
            "estimate_from_low": {"values": [float(g) for g in values],
                                  "values_exact": [_ratio(g) for g in values],
                                  "formula": "estimate = values[low] = lo + (hi - lo) * "
                                             "a[low] / Q (the profile's values and value_den)"},
            "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)})


# ---- multi-attribute ---------------------------------------------------------------------------
class MultiKind(Kind):
    name = "multi"
    refers_to_others = True
    profile_class = MP.MultiProfile
    archivable = ("its reports are k (attribute, value) pairs of varying width, not the "
                  "float64 patterns an archive keeps")

    def matches(self, data):
        return MP.is_multi_file(data)

    def loads(self, data, fetch=None):
        return MP.loads(data, fetch if fetch is not None else (lambda i, fp: None))

    def export(self, profile, rows, counts, io):
        m = profile.multi()
        pairs = []   # per frame row: the frame's reports' [(j, y)]
        for i, r in enumerate(rows):
            pairs.append(io.multi_reports(profile, r))
        frame, report = _frame_report(counts)
        n = frame.size
        carried = np.full((n, profile.d), -1, dtype=np.int64)  # y, or -1
        at = 0
        for reps in pairs:
            for rep in reps:
                for j, y in rep:
                    carried[at, j] = y
                at += 1
        parts = []
        scale = m.scale
        for j, part in enumerate(m.parts):
            ys = carried[:, j]
            name = profile.names[j]
            if not isinstance(part, _CategoricalPart):
                def numeric(y, part=part):
                    return part.mid if y < 0 else part.mid + scale * (part.value(y) - part.mid)
                parts.append(_rows(frame, report, j, name, "mean", ys,
                                   _by_value(ys, numeric)))
                continue
            for v, label in enumerate(part.domain):
                def bit(y, v=v, p=part.p, q=part.q):
                    return 0 if y < 0 else scale * (((y >> v) & 1) - q) / (p - q)
                parts.append(_rows(frame, report, j, name, "frequency of %s" % label, ys,
                                   _by_value(ys, bit)))
        out = {k: np.concatenate([p[k] for p in parts]) for k in EXPORT_FIELDS}
        order = np.lexsort((out["attribute"], out["report"], out["frame"]))  # report order
        return {k: v[order] for k, v in out.items()}

    def export_doc(self, profile, unit, reports):
        m = profile.multi()
        atts = []
        for j, part in enumerate(m.parts):
            doc = {"attribute": j, "name": profile.names[j]}
            if isinstance(part, _CategoricalPart):
                doc.update(kind="categorical", domain=[str(v) for v in part.domain],
                           p=_ratio(Fraction(part.p)), q=_ratio(Fraction(part.q)))
            else:
                doc.update(kind="numeric", mid=float(part.mid), mid_exact=_ratio(
                    Fraction(part.mid)))
            atts.append(doc)
        return {"fingerprint": profile.fingerprint, "kind": self.name, "unit": unit,
                "epsilon": profile.epsilon, "d": profile.d, "k": profile.k,
                "reports": reports, "attributes": atts,
                "estimate_from_low": {
                    "scale": _ratio(Fraction(m.scale)),
                    "formula": "per report and attribute: numeric, mid + scale * (g(low) - mid) "
                               "when carried (low >= 0), else mid; categorical value v, scale "
                               "* (bit v of low - q) / (p - q) when carried, else 0; the mean "
                               "over the reports is zeal analyze's figure"},
                "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)}


# ---- shuffle -----------------------------------------------------------------------------------
class ShuffleKind(Kind):
    name = "shuffle"
    rows_per_attribute = "messages of this coordinate"
    profile_class = SP.ShuffleProfile
    archivable = ("its reports are shuffled messages (coordinate, level), not the float64 "
                  "patterns an archive keeps")

    def matches(self, data):
        return SP.is_shuffle_file(data)

    def loads(self, data, fetch=None):
        return SP.loads(data)

    def export(self, profile, rows, counts, io):
        from .shuffle import ShuffleError, decode_message

        p = profile.params
        msgs = io.lows(profile, rows)
        frame, report = _frame_report(counts)
        coord = np.empty(msgs.size, dtype=np.int64)
        level = np.empty(msgs.size, dtype=np.int64)
        for i, mval in enumerate(msgs.tolist()):
            try:
                coord[i], level[i] = decode_message(p, int(mval))
            except ShuffleError:  # no randomiser sends it (analyze counts these as invalid)
                coord[i], level[i] = -1, int(mval)
        g, k = Fraction(p.gamma), p.k
        est = np.full(msgs.size, np.nan, dtype=np.float64)
        for c in range(p.d):
            lo, hi = (Fraction(v) for v in profile.ranges[c])
            sel = coord == c
            est[sel] = _by_value(level[sel], lambda y: lo + (hi - lo)
                                 * (Fraction(y, k) - g / 2) / (1 - g))
        names = ["invalid" if c < 0 else "coordinate %d" % c for c in coord.tolist()]
        return _rows(frame, report, coord, names, "mean", level, est)

    def export_doc(self, profile, unit, reports):
        p = profile.params
        return {"fingerprint": profile.fingerprint, "kind": self.name, "unit": unit,
                "epsilon": float(p.epsilon), "delta": float(p.delta), "d": p.d,
                "levels": p.k, "t": p.t, "reports": reports,
                "ranges": [list(r) for r in profile.ranges],
                "estimate_from_low": {
                    "gamma": _ratio(Fraction(p.gamma)),
                    "formula": "per message of coordinate c: lo_c + (hi_c - lo_c) * (low / "
                               "levels - gamma / 2) / (1 - gamma); the mean over a "
                               "coordinate's messages is zeal analyze's"},
                "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)}


# ---- the registry ------------------------------------------------------------------------------
GRID, TABLE, MULTI, SHUFFLE = GridKind(), TableKind(), MultiKind(), ShuffleKind()
KINDS = (MULTI, SHUFFLE, TABLE, GRID)   # the sniff rule's order


def sniff(data) -> Kind:
    """The kind of a profile file's bytes (or text), by the sniff rule (first 503 bytes)."""
    data = _as_bytes(data)
    for kind in KINDS:
        if kind.matches(data):
            return kind
    return GRID  # not reached: the grid matches anything


def loads(data, fetch=None):
    """A checked profile of any kind from a file's bytes (or text). fetch(i, fingerprint)
    gives a multi header's attribute file i (None: reason "attr<i>:missing")."""
    data = _as_bytes(data)
    return sniff(data).loads(data, fetch)


def load(path):
    """A checked profile of any kind from a file; a multi header's attribute files are read
    beside it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ANY_FILE + 1)
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None
    return loads(data, MP.file_fetcher(path))


def of(profile) -> Kind:
    """The kind object of a loaded profile."""
    for kind in KINDS:
        if kind.owns(profile):
            return kind
    raise TypeError("not a profile: %r" % (type(profile).__name__,))
