"""What every profile kind shares: the kind interface (`Kind`, its defaults) and the helpers
the kinds' answers are built from (export rows, exact-to-float tables, `zeal perturb` and
`zeal aggregate` of one reading a line). The interface is documented in zeal.mechanism.kinds.
"""
import math
from fractions import Fraction

import numpy as np

from ...errors import InputError, ReportError

# the export's per-row fields, beside the frame's (device, boot, seq, arrival, fingerprint)
EXPORT_FIELDS = ("frame", "report", "attribute", "name", "value", "low", "estimate")


def as_bytes(data) -> bytes:
    return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)


def frame_report(counts: np.ndarray) -> tuple:
    """(frame index, position within the frame) of every report of frames with `counts`."""
    counts = np.asarray(counts, dtype=np.int64)
    frame = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return frame, np.arange(frame.size, dtype=np.int64) - np.repeat(starts, counts)


def export_rows(frame, report, attribute, name, value, low, estimate) -> dict:
    n = len(frame)
    return {"frame": np.asarray(frame, dtype=np.int64),
            "report": np.asarray(report, dtype=np.int64),
            "attribute": np.broadcast_to(np.asarray(attribute, dtype=np.int64), (n,)).copy(),
            "name": np.array(name if isinstance(name, list) else [name] * n, dtype=object),
            "value": np.array(value if isinstance(value, list) else [value] * n, dtype=object),
            "low": np.asarray(low, dtype=np.int64),
            "estimate": np.asarray(estimate, dtype=np.float64)}


def ratio(x: Fraction) -> str:
    return "%d/%d" % (x.numerator, x.denominator)


def by_value(values: np.ndarray, exact) -> np.ndarray:
    """float64 of exact(v) (a Fraction or int/int) for every entry of `values`, each rounded
    once, computed once per distinct value."""
    values = np.asarray(values, dtype=np.int64)
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    uniq, inverse = np.unique(values, return_inverse=True)
    table = np.array([float(exact(int(v))) for v in uniq.tolist()], dtype=np.float64)
    return table[inverse.reshape(-1)]


def calibration(profile, doc: dict) -> dict:
    cal = getattr(profile, "calibration", None)
    if cal is not None:
        doc["calibration"] = {"gain": str(cal.gain), "offset": str(cal.offset)}
    return doc


class Kind:
    name = ""
    rows_per_attribute = "reports"
    refers_to_others = False
    profile_class = None
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

    def join_payload(self, profile, reports) -> bytes:
        raise TypeError("a %s profile's reports are each `bits` wide: the wire packs them"
                        % self.name)

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

    def privacy(self, profile) -> dict:
        """The exact privacy figures (module kinds documents the keys)."""
        raise NotImplementedError

    def variance(self, profile, readings=None) -> list:
        """The exact variance figures of each estimated quantity (module kinds)."""
        raise NotImplementedError

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


def lines_of(lines, parse):
    out = []
    for lineno, text in lines:
        try:
            out.append(parse(text))
        except ReportError as exc:
            raise ReportError("line %d: %s" % (lineno, exc)) from None
    if not out:
        raise ReportError("no reports to aggregate")
    return out


def finite(value):
    """A float figure, or None where float64 cannot hold it (JSON has no inf/NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def num(value) -> str:
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


class ScalarPerturber:
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


def scalar_aggregate(kind, profile, offsets, table: bool):
    """`zeal aggregate` of one-reading offsets under `kind` (grid, table)."""
    try:
        summary = kind.estimator(profile).summarize(np.array(offsets, dtype=np.int64))
    except OverflowError:  # the variance bound is about (hi - lo)^2: beyond float64
        raise ReportError("cannot aggregate under this profile: the estimate's error bound "
                          "overflows float64 for the range [%r, %r] (ranges up to about "
                          "1e150 wide work)" % (profile.lo, profile.hi)) from None
    doc = {k: ([finite(x) for x in v] if isinstance(v, (list, tuple)) else finite(v))
           for k, v in summary.as_dict().items()}
    text = ["reports           %d" % summary.n,
            "estimate of the mean  %s  (from the reports alone; exactly unbiased)"
            % num(summary.mean_calibrated),
            "99%% interval      [%s, %s]  (Bernstein; normal approximation [%s, %s])"
            % tuple(num(v) for v in summary.ci99 + summary.ci99_clt)]
    # the paper's own estimator: lines `zeal aggregate` shows only with --paper
    if table:
        text.append("paper: AVG* n/a (the Zeal paper's estimator is a window-grid notion; "
                    "table profile)")
    else:
        text.append("paper: AVG* (the Zeal paper's estimator: the mean of the perturbed "
                    "doubles minus the public bias Abar), exact  %s" % num(summary.avg_star))
        text.append("paper: AVG* summed in float64 as the paper does  %s  (the doubles are "
                    "near Abar: the sum loses their low bits; for comparison only)"
                    % num(summary.avg_star_naive))
    return doc, text


def variance_entry(name, of, worst, worst_input=None, upper=None, data=None) -> dict:
    """One quantity's entry of Kind.variance: data is (sum of the variances, readings)."""
    return {"name": name, "of": of, "worst": worst,
            "worst_upper": worst if upper is None else upper, "worst_input": worst_input,
            "data_mean": None if not data or not data[1] else data[0] / data[1],
            "data_readings": data[1] if data else 0}


def clamped_mean(variance, readings, lo, hi):
    """(sum of variance(x) over the readings clamped to [lo, hi], how many), each distinct
    reading evaluated once (the device clamps before it samples)."""
    from collections import Counter

    lo, hi = Fraction(lo), Fraction(hi)
    counts = Counter(min(max(Fraction(x), lo), hi) for x in readings)
    return sum(variance(x) * c for x, c in counts.items()), sum(counts.values())
