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
  archivable             None where `zeal compress` keeps its reports, else the words saying
                         why not (every kind is kept now: None for all four)
  stream_shape           what an archive keeps per report (zeal.analysis.compress.streams):
                         "patterns" (grid, table: one 64-bit pattern), "pairs" (multi: the k
                         (attribute, value) pairs), "messages" (shuffle: the message integer)
  uniform_part(profile)  (what, N): the part of a report whose law the mechanism fixes,
                         whatever the readings: uniform over N outcomes (multi: the attribute
                         subset, C(d, k); shuffle: the coordinate, d); None where no part is
                         (an archive's rANS codes that part under this exact law)
  report_pattern(profile)
                         (base, high): the 64-bit pattern an archive keeps for offset j is
                         base + j, and for the m bits sent, high + low (the grid's: its float64
                         x*; a table's: the cell itself)
  distribution_plots     whether analyze's per-profile histogram and running-mean plots
                         apply (a scalar report of one reading)
  rows_per_attribute     what one attribute's export rows count (a plot's axis label)
  refers_to_others       its file names other profile files by fingerprint (a multi header's
                         attribute files): a store loads it after the others
  files(profile)         [(fingerprint, file text)] of the profile and every file it refers to
                         (what a store keeps, so that the profile loads from it)
  write(profile, path)   the profile's file at `path` and those it refers to beside it
  split_payload(profile, payload, count)
                         a DATA payload's reports where they are not one fixed width (a multi
                         report: its (attribute, value) pairs; multi_profile.PayloadError for
                         a bad one), None where every report is `bits` wide
  value_attributes(profile)
                         the attributes of a reading tuple given as a value's index (a multi
                         profile's categorical ones), for whoever writes replay lines
  double_reports         its reports are the paper's float64 patterns x* (the window grid):
                         what an archive keeps, decode_values gives and AVG* averages
  privacy_ratio(profile) the exact worst-case likelihood ratio of a report (e^epsilon bound)
  summary(profile, unit) one line naming the profile's figures (range, epsilon, bits, cells)
  facts(profile, unit)   the kind's own figures for a JSON document (None: nothing to add)
  title_note(profile)    what a plot's title adds about the kind ("" for the window grid)
  fields                 what a reading tuple's fields are ("attributes", "coordinates"), or
                         None: one reading a tick (a replay line, a perturb line)
  board_files(profile, name)
                         [(file name, label, text)] of the files a board needs beside the
                         profile file `name` (a multi header's attribute files)
  estimator(profile, confidence)
                         the calibrated-mean estimator of a one-reading profile's offsets
  formats                `zeal perturb --format` choices, the default first
  perturber(profile, words, fmt)
                         `zeal perturb`: .lines(text) -> the output lines for one input line
                         (InputError for a line that is no reading), .notes() -> stderr lines
  aggregate(profile, lines)
                         `zeal aggregate`: (JSON document, text lines) of `zeal perturb`'s
                         output lines [(line number, text)] (ReportError naming the line)

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

from ..errors import InputError, ProfileError, ReportError
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

    def files(self, profile) -> list:
        return [(profile.fingerprint, profile.to_json())]

    def write(self, profile, path) -> None:
        with open(path, "w") as fh:
            fh.write(profile.to_json())

    def split_payload(self, profile, payload, count):
        return None

    def value_attributes(self, profile) -> frozenset:
        return frozenset()

    double_reports = False
    formats = ("low",)

    def report_pattern(self, profile):
        raise TypeError("a %s profile's reports are not kept by an archive" % self.name)

    # the archive's streams (zeal.analysis.compress.streams and kind_codecs)
    stream_shape = "patterns"

    def uniform_part(self, profile):
        return None

    def facts(self, profile, unit=""):
        return None

    def title_note(self, profile):
        return ""

    fields = None

    def board_files(self, profile, name) -> list:
        return []

    def estimator(self, profile, confidence=0.99):
        raise ReportError("a %s profile's reports estimate several attributes: zeal analyze "
                          "gives them" % self.name)


def _lines_of(lines, parse):
    out = []
    for lineno, text in lines:
        try:
            out.append(parse(text))
        except ReportError as exc:
            raise ReportError("line %d: %s" % (lineno, exc)) from None
    if not out:
        raise ReportError("no reports to aggregate")
    return out


def _finite(value):
    """A float figure, or None where float64 cannot hold it (JSON has no inf/NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _num(value) -> str:
    """Six decimals for figures of everyday size, 10 significant digits beyond 1e15."""
    if value is None:
        return "n/a"
    return "%.6f" % value if abs(value) < 1e15 else "%.10g" % value


def reading_from_text(text: str) -> Fraction:
    """One reading as typed: an exact decimal ("35.58" is 3558/100, not its float64
    rounding); InputError for anything else."""
    from decimal import Decimal, InvalidOperation

    t = text.strip()
    low = t.lower()
    if low in ("nan", "+nan", "-nan"):
        raise InputError("reading is NaN")
    if low.lstrip("+-") in ("inf", "infinity"):
        raise InputError("reading is infinite")
    try:
        dec = Decimal(t)
    except (InvalidOperation, ValueError):
        raise InputError("not a number: %r" % t[:40]) from None
    if not dec.is_finite():  # "snan", "-nan" and such spellings
        raise InputError("reading is not a finite number: %r" % t[:40])
    # Exponents beyond float64's are cut before the exact conversion, which would otherwise
    # build a 10^999999 integer: a magnitude above 1e400 is clamped like any out-of-range
    # reading, one below 1e-400 (but not zero) cannot come from a sensor.
    if dec and dec.adjusted() > 400:
        return Fraction(-(10 ** 401) if dec < 0 else 10 ** 401)
    if dec and dec.adjusted() < -400:
        raise InputError("reading %r is closer to zero than any float64" % t[:40])
    return Fraction(dec)


class _Scalar:
    """`zeal perturb` for one reading a line (grid, table)."""

    def __init__(self, profile, mech, spell):
        self.profile, self.mech, self.spell = profile, mech, spell

    def lines(self, text):
        return [self.spell(self.mech.perturb(reading_from_text(text)))]

    def notes(self):
        if self.mech.clamped:
            return ["clamped %d reading(s) outside [%r, %r]" % (self.mech.clamped,
                                                                self.profile.lo,
                                                                self.profile.hi)]
        return []


def _scalar_aggregate(profile, offsets, table: bool):
    try:
        summary = of(profile).estimator(profile).summarize(np.array(offsets, dtype=np.int64))
    except OverflowError:  # the variance bound is about (hi - lo)^2: beyond float64
        raise ReportError("cannot aggregate under this profile: the estimate's error bound "
                          "overflows float64 for the range [%r, %r] (ranges up to about "
                          "1e150 wide work)" % (profile.lo, profile.hi)) from None
    doc = {k: ([_finite(x) for x in v] if isinstance(v, (list, tuple)) else _finite(v))
           for k, v in summary.as_dict().items()}
    text = ["n                 %d" % summary.n,
            "mean (calibrated) %s" % _num(summary.mean_calibrated),
            "99%% interval      [%s, %s]  (Bernstein; normal approx. [%s, %s])"
            % tuple(_num(v) for v in summary.ci99 + summary.ci99_clt)]
    if table:
        text.append("AVG*              n/a (the paper's estimator is a window-grid notion; "
                    "table profile)")
    else:
        text.append("AVG* (exact)      %s" % _num(summary.avg_star))
        text.append("AVG* (float64)    %s  (naive sum near Abar, for comparison only)"
                    % _num(summary.avg_star_naive))
    return doc, text


# ---- the window grid ---------------------------------------------------------------------------
class GridKind(Kind):
    name = "grid"
    profile_class = GP.Profile
    distribution_plots = True
    double_reports = True

    def matches(self, data):
        return True  # the sniff rule's last resort

    def loads(self, data, fetch=None):
        return GP.loads(data)

    @staticmethod
    @staticmethod
    def report_pattern(profile):
        return ((profile.exponent + 1023) << 52) | profile.k_lo, profile.high_bits

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

    formats = ("bits", "low", "float")

    def privacy_ratio(self, profile):
        return ExactGrid(profile).privacy_ratio

    def summary(self, profile, unit=""):
        return ("range [%g, %g] %s, epsilon %g, %d bits per report (E = %d, %d cells), "
                "fingerprint %s" % (profile.lo, profile.hi, unit, profile.epsilon, profile.bits,
                                    profile.exponent, profile.n_cells,
                                    profile.fingerprint[:16]))

    def estimator(self, profile, confidence=0.99):
        from .estimate import Estimator

        return Estimator(profile, confidence)

    def perturber(self, profile, words, fmt):
        from . import reports
        from .scalar import ExactZeal

        spell = {"bits": lambda k: "%016x" % reports.to_bits(profile, k),
                 "low": lambda k: str(reports.to_low(profile, k)),
                 "float": lambda k: repr(reports.value_of_bits(reports.to_bits(profile, k)))
                 }[fmt]
        return _Scalar(profile, ExactZeal(profile=profile, words=words), spell)

    def aggregate(self, profile, lines):
        from . import reports

        offsets = _lines_of(lines, lambda t: reports.parse_line(profile, t) - profile.k_lo)
        return _scalar_aggregate(profile, offsets, False)

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
    distribution_plots = True

    @staticmethod
    def report_pattern(profile):
        return 0, 0  # a report is its cell j, sent as the m-bit value j

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

    formats = ("low",)  # a report is its cell j, sent as the m-bit value j

    def privacy_ratio(self, profile):
        return profile.table.privacy_ratio()

    def summary(self, profile, unit=""):
        return ("table, range [%g, %g] %s, epsilon %g, %d bits per report (%d cells, %d "
                "anchor rows), fingerprint %s" % (profile.lo, profile.hi, unit, profile.epsilon,
                                                  profile.bits, profile.n_cells,
                                                  profile.anchors + 1,
                                                  profile.fingerprint[:16]))

    def title_note(self, profile):
        return ", table profile (%d anchors)" % (profile.anchors + 1)

    def facts(self, profile, unit=""):
        worst = profile.worst_variance()
        return {"cells": profile.n_cells, "anchor_rows": profile.anchors + 1,
                "worst_variance": float(worst),
                "worst_variance_exact": "%d/%d" % (worst.numerator, worst.denominator),
                "variance_unit": unit + "^2"}

    def estimator(self, profile, confidence=0.99):
        from .estimate import TableEstimator

        return TableEstimator(profile, confidence)

    def perturber(self, profile, words, fmt):
        from .table_sampler import TableSampler

        mech = TableSampler(profile, words)
        mech.perturb = mech.sample_exact
        return _Scalar(profile, mech, str)

    def aggregate(self, profile, lines):
        def cell(text):
            t = text.strip()
            if not t.isdigit():
                raise ReportError("not a report of a table profile (a cell number 0..%d): "
                                  "%r" % (profile.n_cells - 1, t[:40]))
            if int(t) >= profile.n_cells:
                raise ReportError("cell %d is outside the table's %d cells"
                                  % (int(t), profile.n_cells))
            return int(t)
        return _scalar_aggregate(profile, _lines_of(lines, cell), True)

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
    # ---- the archive: a report as its k pairs; its attribute subset's exact law
    stream_shape = "pairs"

    def uniform_part(self, profile):
        """MultiSampler draws the k attributes by a partial Fisher-Yates shuffle with
        uniform_below(d - i) at step i: every ordered k-tuple has probability (d - k)! / d!,
        each subset k! of them, so each of the C(d, k) subsets has 1 / C(d, k), whatever the
        readings."""
        return "attribute subset", math.comb(profile.d, profile.k)

    def matches(self, data):
        return MP.is_multi_file(data)

    def files(self, profile) -> list:
        return [(profile.fingerprint, profile.to_json())] + [
            (profile.attributes[i].fingerprint, text)
            for i, text in profile.attribute_files().items()]

    def write(self, profile, path) -> None:
        profile.write(path)   # the header, and its attribute files beside it

    def split_payload(self, profile, payload, count):
        return tuple(MP.unpack_multi(profile, payload, count))

    def value_attributes(self, profile) -> frozenset:
        return frozenset(j for j, a in enumerate(profile.attributes) if a.kind == "oue")

    fields = "attributes"

    def board_files(self, profile, name) -> list:
        return [(MP.attribute_path(name, i), "attribute %d (%s), fingerprint %s" % (
            i, profile.names[i], profile.attributes[i].fingerprint[:16]), text)
            for i, text in profile.attribute_files().items()]

    def loads(self, data, fetch=None):
        return MP.loads(data, fetch if fetch is not None else (lambda i, fp: None))

    formats = ("pairs",)  # a report as "j:y j:y ..." (its k attribute indices and values)

    def privacy_ratio(self, profile):
        return profile.multi().privacy_ratio()

    def summary(self, profile, unit=""):
        return ("%d attributes (%s), k = %d a report, epsilon %g, fingerprint %s"
                % (profile.d, ", ".join(profile.names), profile.k, profile.epsilon,
                   profile.fingerprint[:16]))

    def perturber(self, profile, words, fmt):
        return _MultiPerturber(profile, words)

    def aggregate(self, profile, lines):
        from .multi import MultiEstimator

        def report(text):
            pairs = []
            for field in text.split():
                j, _, y = field.partition(":")
                if not (j.isdigit() and y.isdigit()):
                    raise ReportError("not a multi report ('j:y j:y ...'): %r" % text[:60])
                pairs.append((int(j), int(y)))
            try:  # the payload's own checks: indices ascending below d, values of each
                MP.unpack_multi(profile, MP.pack_multi(profile, [pairs]), 1)
            except (MP.PayloadError, ValueError, KeyError, IndexError) as exc:
                raise ReportError("not a report of this profile: %s" % exc) from None
            if len(pairs) != profile.k:
                raise ReportError("a report holds k = %d pairs, got %d" % (profile.k,
                                                                            len(pairs)))
            return pairs
        reps = _lines_of(lines, report)
        idx = np.array([[j for j, _ in r] for r in reps], dtype=np.int64)
        val = np.array([[y for _, y in r] for r in reps], dtype=np.int64)
        atts = [a.as_dict() for a in MultiEstimator(profile.multi()).summarize(idx, val)]
        text = ["n                 %d reports (k = %d of d = %d attributes each)"
                % (len(reps), profile.k, profile.d)]
        for a in atts:
            if a["kind"] == "numeric":
                lo, hi = a["ci99"]
                text.append("%-17s %s  99%% interval [%s, %s] (Bernstein), carried by %d"
                            % (a["name"], _num(a["mean_calibrated"]), _num(lo), _num(hi),
                               a["carried"]))
            else:
                for v, f in a["frequencies"].items():
                    text.append("%-17s frequency of %s: %s  99%% interval [%s, %s]"
                                % (a["name"], v, _num(f["estimate"]), _num(f["ci99"][0]),
                                   _num(f["ci99"][1])))
        return {"n": len(reps), "attributes": atts}, text

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
    fields = "coordinates"
    profile_class = SP.ShuffleProfile
    # ---- the archive: a message as its integer; its coordinate's exact law
    stream_shape = "messages"

    def uniform_part(self, profile):
        """randomise draws a message's coordinate by UNIFORM(d): 1 / d each, whatever the
        reading (the level's law depends on it)."""
        return "coordinate", profile.params.d

    def matches(self, data):
        return SP.is_shuffle_file(data)

    def loads(self, data, fetch=None):
        return SP.loads(data)

    formats = ("messages",)  # t message integers a reading, one a line

    def privacy_ratio(self, profile):
        raise ReportError("a shuffle profile's guarantee is (epsilon, delta) for a shuffled "
                          "batch, not a per-report ratio")

    def summary(self, profile, unit=""):
        p = profile.params
        return ("shuffle, %d coordinates, %d levels, t = %d, n = %d, (epsilon, delta) = (%g, "
                "%g), fingerprint %s" % (p.d, p.k, p.t, p.n, float(p.epsilon), float(p.delta),
                                         profile.fingerprint[:16]))

    def perturber(self, profile, words, fmt):
        return _ShufflePerturber(profile, words)

    def aggregate(self, profile, lines):
        from . import shuffle as S

        p = profile.params

        def message(text):
            t = text.strip()
            if not t.isdigit():
                raise ReportError("not a shuffle message (a decimal integer): %r" % t[:40])
            try:
                return S.decode_message(p, int(t))
            except S.ShuffleError as exc:
                raise ReportError(str(exc)) from None
        pairs = _lines_of(lines, message)
        hist = np.zeros((p.d, p.levels), dtype=np.int64)
        for c, y in pairs:
            hist[c, y] += 1
        means = S.Analyzer(p).estimate(hist)
        coords = []
        for c, (m, (lo, hi)) in enumerate(zip(means, profile.ranges)):
            value = None if m is None else Fraction(lo) + (Fraction(hi) - Fraction(lo)) * m
            coords.append({"coordinate": c, "messages": int(hist[c].sum()),
                           "mean": None if value is None else float(value)})
        text = ["messages          %d (t = %d a reading)" % (len(pairs), p.t)]
        text += ["coordinate %-6d %s  from %d messages" % (d["coordinate"], _num(d["mean"]),
                                                            d["messages"]) for d in coords]
        text.append("privacy           the shuffle's (epsilon, delta) holds only for messages "
                    "mixed by a shuffler with the profile's n readings (zeal analyze says)")
        return {"messages": len(pairs), "coordinates": coords}, text

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


class _MultiPerturber:
    """`zeal perturb` under a multi profile: a line of d comma-separated readings (numeric:
    an exact decimal; categorical: its value's index 0..c-1) -> one report "j:y j:y ..."."""

    def __init__(self, profile, words):
        self.profile = profile
        self.sampler = MP.MultiSampler(profile, words)

    def lines(self, text):
        prof = self.profile
        fields = text.split(",")
        if len(fields) != prof.d:
            raise InputError("not %d comma-separated readings (%s)" % (prof.d,
                                                                        ", ".join(prof.names)))
        values = []
        for a, name, field in zip(prof.attributes, prof.names, fields):
            field = field.strip()
            if a.kind == "oue":  # a categorical attribute: its value's index 0..c-1
                if not (field.isdigit() and int(field) < a.c):
                    raise InputError("%s: %r is not a value index 0..%d" % (name, field[:20],
                                                                           a.c - 1))
                values.append(int(field))
            else:
                try:
                    values.append(reading_from_text(field))
                except InputError as exc:
                    raise InputError("%s: %s" % (name, exc)) from None
        return [" ".join("%d:%d" % jy for jy in self.sampler.sample(values))]

    def notes(self):
        return (["clamped %d reading(s) to their attribute's range" % self.sampler.clamped]
                if self.sampler.clamped else [])


class _ShufflePerturber:
    """`zeal perturb` under a shuffle profile: a line of d comma-separated readings -> its t
    messages, one a line (for a shuffler: alone they carry no guarantee)."""

    def __init__(self, profile, words):
        self.profile = profile
        self.sampler = SP.ShuffleSampler(profile, words)

    def lines(self, text):
        fields = text.split(",")
        if len(fields) != self.profile.d:
            raise InputError("not %d comma-separated readings" % self.profile.d)
        return [str(m) for m in self.sampler.sample([reading_from_text(f) for f in fields])]

    def notes(self):
        return ["these messages are private only once a shuffler mixes them with the other "
                "readings' (the profile's n = %d)" % self.profile.n]


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


def is_profile(obj) -> bool:
    """Is `obj` a loaded profile of any kind?"""
    return any(kind.owns(obj) for kind in KINDS)


def of(profile) -> Kind:
    """The kind object of a loaded profile."""
    for kind in KINDS:
        if kind.owns(profile):
            return kind
    raise TypeError("not a profile: %r" % (type(profile).__name__,))
