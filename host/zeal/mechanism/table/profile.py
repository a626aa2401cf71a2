"""Table profiles: the file formats "zeal-table/1" (dense) and "zeal-table/2" (compact:
zeal.mechanism.table.compact) (shared_spec/profile.md, "Table profiles").

A table profile is the second profile kind beside the window grid ("zeal-profile/1"): R+1
anchor rows over [lo, hi] and N output cells with non-negative integer weights W[r][j]
(zeal.mechanism.table.mechanism explains the mechanism and its exact analysis). The file uses the grid
profile's grammar (`pfile.parse`), character set, canonical form and fingerprint rule; the
checks below are the device's (firmware/zealfw/tprofile.py), in the same order and with the
same reason codes (ProfileError.reason):

    size, json, type (value kinds), format, missing, unknown, type (ints, hex patterns,
    fingerprint, weights [0-9a-f], values [0-9+-]), value (calibration), fingerprint,
    value (lo, hi, eps; R; N; (R+1)N; len(weights); values; Q; row totals), derived (bits),
    privacy (every column ratio <= L, in integers), unbiased (every anchor, in integers).

API: `TableProfile` (kind "table"), `from_table(table, *, epsilon=None, calibration=None)`,
`loads(bytes)`, `load(path)`, `from_dict(doc)`, `build(lo, hi, epsilon, mechanism, bits, *,
objective="worst", data=None)`, `MAX_TABLE_FILE`, `is_table_file(prefix)` (the sniff rule).
`zeal.mechanism.grid.profile.loads/load` dispatch here for a table file.
"""
import json
import math
from fractions import Fraction

from ...errors import ProfileError
from ..core import pfile as P
from . import compact

FORMAT = "zeal-table/1"          # dense: every weight spelt out
FORMAT2 = "zeal-table/2"         # compact: two levels per cell (zeal.mechanism.table.compact)
FORMATS = (FORMAT, FORMAT2)
SNIFF = b"zeal-table/"           # both versions are table files; the format check decides
SNIFF_BYTES = P.MAX_FILE + 1      # the sniff looks at the first 503 bytes
ANCHORS_MAX = 64
CELLS_MIN, CELLS_MAX = 2, 64
ENTRIES_MAX = 320                 # (R + 1) * N of a dense profile
ROW_TOTAL_MAX = 1 << 32
WEIGHT_DIGITS = 8
VALUE_LIMIT = 1 << 63             # |a_j| < 2^63, 1 <= Q < 2^63
MECHANISMS = ("duchi", "pm", "hm", "three-outputs", "pm-sub", "three-outputs-lp",
              "n-output-lp", "optimal")
DESIGNED = ("optimal", "n-output-lp", "three-outputs-lp")   # the LP designer's (scipy)

_INT_KEYS = ("anchors", "bits", "cells", "value_den")
_REQUIRED = ("format", "lo", "hi", "epsilon", "anchors", "cells", "bits", "weights", "values",
             "value_den", "fingerprint")
_REQUIRED2 = ("format", "lo", "hi", "epsilon", "anchors", "cells", "bits", "levels", "rows",
              "values", "value_den", "fingerprint")
_WEIGHT_CHARS = frozenset("0123456789abcdef")
_VALUE_CHARS = frozenset("0123456789+-")
_DIGITS = frozenset("0123456789")
_fail = P._fail


def bits_for(cells: int) -> int:
    """m = max(1, bit_length(N - 1)): the smallest m with N <= 2^m."""
    return max(1, (cells - 1).bit_length())


def _widest(fmt, r, n, body) -> int:
    doc = {"format": fmt, "lo": "0x" + "f" * 16, "hi": "0x" + "f" * 16,
           "epsilon": "0x" + "f" * 16, "anchors": r, "cells": n, "bits": bits_for(n),
           "values": ("-" + "9" * 19) * n, "value_den": VALUE_LIMIT - 1,   # |a_j| < 2^63
           "cal_gain": "x" * P.MAX_RATIONAL, "cal_offset": "x" * P.MAX_RATIONAL,
           "fingerprint": "f" * 64}
    doc.update(body)
    return len(json.dumps(doc, sort_keys=True, indent=1) + "\n")


def _max_table_file() -> int:
    """The longest file the limits allow, as the host writes it (profile.md derives it):
    every field at its widest, over every (R, N) the limits admit, either version."""
    from .compact import EXCEPTIONS_MAX
    best = 0
    for n in range(CELLS_MIN, CELLS_MAX + 1):
        for r in range(1, ANCHORS_MAX + 1):
            if (r + 1) * n <= ENTRIES_MAX:
                best = max(best, _widest(FORMAT, r, n,
                                         {"weights": "f" * (WEIGHT_DIGITS * (r + 1) * n)}))
    # zeal-table/2 is widest at N = R = 64 with every row's exceptions listed
    per_row = 6 + EXCEPTIONS_MAX * 10
    return max(best, _widest(FORMAT2, ANCHORS_MAX, CELLS_MAX,
                             {"levels": "f" * 16 * CELLS_MAX,
                              "rows": "f" * per_row * (ANCHORS_MAX + 1)}))


MAX_TABLE_FILE = _max_table_file()   # 5803 bytes (profile.md)


def is_table_file(data: bytes) -> bool:
    """The sniff rule: the first 503 bytes (the grid's MAX_FILE + 1) hold b"zeal-table/"."""
    return SNIFF in bytes(data[:SNIFF_BYTES])


# ---- the profile ----------------------------------------------------------------------------
class TableProfile(P.Canonical):
    """A checked table profile (build with from_table/build/loads; do not mutate)."""

    kind = "table"
    MAX_BYTES = MAX_TABLE_FILE
    k_lo = 0
    wire_base = 0

    def __init__(self, *, lo, hi, epsilon, weights, values, value_den, calibration=None,
                 compact=None):
        self.lo, self.hi, self.epsilon = float(lo), float(hi), float(epsilon)
        self.compact = compact   # None (dense), or the (levels, rows) strings of zeal-table/2
        self.weights = [list(row) for row in weights]
        self.values = list(values)
        self.value_den = value_den
        self.calibration = calibration
        self.anchors = len(self.weights) - 1
        self.n_cells = len(self.values)
        self.bits = bits_for(self.n_cells)
        self._table = None

    @property
    def format(self) -> str:
        return FORMAT if self.compact is None else FORMAT2

    @property
    def k_hi(self) -> int:
        return self.n_cells - 1

    def output_value(self, j) -> Fraction:
        """g_j = lo + (hi - lo) a_j / Q, exactly (reading units)."""
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        return lo + (hi - lo) * Fraction(self.values[j], self.value_den)

    @property
    def table(self):
        """The exact zeal.mechanism.table.Table (values = the g_j), checked."""
        if self._table is None:
            from .mechanism import Table
            self._table = Table(Fraction(self.lo), Fraction(self.hi), Fraction(self.epsilon),
                                self.weights,
                                values=[self.output_value(j) for j in range(self.n_cells)])
        return self._table

    def worst_variance(self) -> Fraction:
        """Exact worst-case variance of one report's estimate over [lo, hi] (reading units^2)."""
        return self.table.worst_variance()

    def row_totals(self) -> list:
        return [sum(row) for row in self.weights]

    # ---- canonical form -------------------------------------------------------------------
    def canonical(self) -> dict:
        core = dict(P.range_fields(self.format, self.lo, self.hi, self.epsilon), **{
            "anchors": self.anchors,
            "cells": self.n_cells,
            "bits": self.bits,
            "values": "".join("%+d" % a for a in self.values),
            "value_den": self.value_den,
        })
        if self.compact is None:
            core["weights"] = "".join("%08x" % w for row in self.weights for w in row)
        else:
            core["levels"], core["rows"] = self.compact
        return P.with_calibration(core, self.calibration)

    def __eq__(self, other):
        return isinstance(other, TableProfile) and self.canonical() == other.canonical()

    def __hash__(self):
        return hash(self.fingerprint)

    def __repr__(self):
        return ("TableProfile(lo=%r, hi=%r, epsilon=%r, anchors=%d, cells=%d, bits=%d)"
                % (self.lo, self.hi, self.epsilon, self.anchors, self.n_cells, self.bits))


# ---- the checks -----------------------------------------------------------------------------
def _parse_values(text: str, n: int) -> list:
    """N signed decimal integers, each "+" or "-" then digits without leading zeros ("+0" for
    zero, "-0" refused), concatenated; |a_j| < 2^63. Reason "value" otherwise."""
    out, i, size = [], 0, len(text)
    while i < size:
        sign = text[i]
        if sign not in "+-":
            raise _fail("value", "table profile: values must be signed integers (+ or - first)")
        j = i + 1
        while j < size and text[j] in _DIGITS:
            j += 1
        digits = text[i + 1:j]
        if not digits or (digits[0] == "0" and (len(digits) > 1 or sign == "-")):
            raise _fail("value", "table profile: values holds %r: digits without leading "
                        "zeros are needed (+0 for zero)" % text[i:j])
        if len(digits) > 19 or int(digits) >= VALUE_LIMIT:
            raise _fail("value", "table profile: a value is 2^63 or more in size")
        out.append(int(digits) if sign == "+" else -int(digits))
        if len(out) > n:
            break
        i = j
    if len(out) != n:
        raise _fail("value", "table profile: values must hold exactly %d integers (cells)" % n)
    return out


def _weights(text: str, rows: int, n: int) -> list:
    k = WEIGHT_DIGITS
    flat = [int(text[i:i + k], 16) for i in range(0, len(text), k)]
    return [flat[r * n:(r + 1) * n] for r in range(rows)]


def _string_types(doc):
    """Check 7's table part: weights (or levels and rows) only [0-9a-f], values only
    [0-9+-]."""
    for key in ("weights",) if "weights" in doc else ("levels", "rows"):
        P._check_string(key, doc[key])
        if not set(doc[key]) <= _WEIGHT_CHARS:
            raise _fail("type", "table profile: %s must be lowercase hex digits only" % key)
    P._check_string("values", doc["values"])
    if not set(doc["values"]) <= _VALUE_CHARS:
        raise _fail("type", "table profile: values must hold only digits, + and -")


def device_checks(doc) -> dict:
    """Every check of the table profile list, in order (module docstring, profile.md). Returns
    the decoded fields; ProfileError with .reason otherwise."""
    fmt = doc.get("format") if type(doc) is dict and doc.get("format") in FORMATS else FORMAT
    dense = fmt == FORMAT
    calibration = P.header_checks(doc, fmt, _REQUIRED if dense else _REQUIRED2, _INT_KEYS,
                                  "table profile", _string_types)
    lo, hi, eps = P.range_checks(doc, "table profile")
    big_r, n, bits, q = (doc[k] for k in ("anchors", "cells", "bits", "value_den"))
    if not 1 <= big_r <= ANCHORS_MAX:
        raise _fail("value", "table profile: anchors must be in [1, %d]" % ANCHORS_MAX)
    if not CELLS_MIN <= n <= CELLS_MAX:
        raise _fail("value", "table profile: cells must be in [%d, %d]" % (CELLS_MIN, CELLS_MAX))
    if dense and (big_r + 1) * n > ENTRIES_MAX:
        raise _fail("value", "table profile: (anchors + 1) * cells must be at most %d"
                    % ENTRIES_MAX)
    if dense and len(doc["weights"]) != WEIGHT_DIGITS * (big_r + 1) * n:
        raise _fail("value", "table profile: weights must be %d hex digits (8 per entry)"
                    % (WEIGHT_DIGITS * (big_r + 1) * n))
    values = _parse_values(doc["values"], n)
    if not 1 <= q < VALUE_LIMIT:
        raise _fail("value", "table profile: value_den must be in [1, 2^63)")
    if dense:
        weights = _weights(doc["weights"], big_r + 1, n)
    else:
        weights = compact.decode(doc["levels"], doc["rows"], big_r + 1, n)
    totals = [sum(row) for row in weights]
    for r, s in enumerate(totals):
        if not 1 <= s <= ROW_TOTAL_MAX:
            raise _fail("value", "table profile: row %d total %d is outside [1, 2^32]" % (r, s))
        if not dense and s != totals[0]:
            raise _fail("value", "table profile: row %d total %d differs from row 0's %d (a "
                        "compact table has one total)" % (r, s, totals[0]))
    if bits != bits_for(n):
        raise _fail("derived", "table profile: bits is %r but %d cells need %d"
                    % (bits, n, bits_for(n)))
    lb = P.exp_lower_bound(Fraction(eps))
    lp, lq = lb.numerator, lb.denominator
    for j in range(n):
        col = [row[j] for row in weights]
        if not any(col):
            continue
        if not all(col):
            raise _fail("privacy", "table profile: cell %d is zero in one row and not in "
                        "another (infinite privacy ratio)" % j)
        # the largest and smallest W[r][j]/S_r, by cross-multiplication
        top = bot = 0
        for r in range(1, big_r + 1):
            if col[r] * totals[top] > col[top] * totals[r]:
                top = r
            if col[r] * totals[bot] < col[bot] * totals[r]:
                bot = r
        if col[top] * totals[bot] * lq > lp * col[bot] * totals[top]:
            raise _fail("privacy", "table profile: cell %d's privacy ratio exceeds e^epsilon "
                        "(the certified bound L)" % j)
    for r in range(big_r + 1):
        if big_r * sum(w * a for w, a in zip(weights[r], values)) != r * totals[r] * q:
            raise _fail("unbiased", "table profile: the output values are biased at anchor "
                        "%d (E[g | x_r] != x_r)" % r)
    return {"lo": lo, "hi": hi, "epsilon": eps, "weights": weights, "values": values,
            "value_den": q, "calibration": calibration,
            "compact": None if dense else (doc["levels"], doc["rows"])}


def from_dict(doc) -> TableProfile:
    """A checked table profile from its parsed object."""
    f = device_checks(doc)
    prof = TableProfile(lo=f["lo"], hi=f["hi"], epsilon=f["epsilon"], weights=f["weights"],
                        values=f["values"], value_den=f["value_den"],
                        calibration=f["calibration"], compact=f["compact"])
    if prof.fingerprint != doc["fingerprint"]:  # implied by the checks; kept as a guard
        raise _fail("fingerprint", "table profile fingerprint does not match its contents")
    return prof


def loads(text) -> TableProfile:
    """A checked table profile from a file's bytes (or text)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if len(text) > MAX_TABLE_FILE:
        raise _fail("size", "table profile is longer than %d bytes, the longest a device reads"
                    % MAX_TABLE_FILE)
    return from_dict(P.parse(bytes(text)))


def load(path) -> TableProfile:
    data = P.read_file(path, MAX_TABLE_FILE)
    return loads(data)


# ---- construction ---------------------------------------------------------------------------
def from_table(table, *, epsilon=None, calibration=None, encoding=None) -> TableProfile:
    """The profile of an exact `Table`: lo and hi must be floats exactly; epsilon defaults to
    the largest float64 <= the table's; values are the table's output values brought to one
    denominator Q. `encoding`: "dense" (zeal-table/1), "compact" (zeal-table/2) or None
    (dense when the weights fit its 320). Every check of the list runs on the result
    (ProfileError otherwise)."""
    lo, hi = float(table.lo), float(table.hi)
    if Fraction(lo) != table.lo or Fraction(hi) != table.hi:
        raise ProfileError("a table profile needs lo and hi that are float64 values exactly")
    eps = P.epsilon_at_most(table.epsilon if epsilon is None else epsilon)
    if not (math.isfinite(eps) and 0 < eps <= P.EPSILON_MAX):
        raise ProfileError("epsilon must be in (0, %g], got %r" % (P.EPSILON_MAX, eps))
    n, big_r = table.cells, table.anchors
    if not 1 <= big_r <= ANCHORS_MAX or not CELLS_MIN <= n <= CELLS_MAX:
        raise ProfileError("a table profile holds 1 to %d anchor intervals and %d to %d cells; "
                           "this table has %d intervals and %d cells"
                           % (ANCHORS_MAX, CELLS_MIN, CELLS_MAX, big_r, n))
    # dense when the weights fit (every file the older versions wrote), else compact
    if encoding is None:
        encoding = "dense" if (big_r + 1) * n <= ENTRIES_MAX else "compact"
    if encoding == "dense" and (big_r + 1) * n > ENTRIES_MAX:
        raise ProfileError("a dense table profile holds at most %d weights; this table has %d"
                           % (ENTRIES_MAX, (big_r + 1) * n))
    packed = compact.encode(table.weights) if encoding == "compact" else None
    for r, row in enumerate(table.weights):
        if sum(row) > ROW_TOTAL_MAX:
            raise ProfileError("table row %d totals %d, above the 2^32 a profile allows"
                               % (r, sum(row)))
    span = table.hi - table.lo
    ys = [(g - table.lo) / span for g in table.output_values()]
    q = math.lcm(*(y.denominator for y in ys))
    values = [int(y * q) for y in ys]
    if q >= VALUE_LIMIT or any(abs(a) >= VALUE_LIMIT for a in values):
        raise ProfileError("the table's output values need a common denominator or numerators "
                           "of 2^63 or more; a profile holds less")
    if calibration is not None:
        for what, value in (("cal_gain", calibration.gain), ("cal_offset", calibration.offset)):
            if len(str(value)) > P.MAX_RATIONAL:
                raise ProfileError("%s reduced is %s: longer than the %d characters a device "
                                   "reads" % (what, value, P.MAX_RATIONAL))
    prof = TableProfile(lo=lo, hi=hi, epsilon=eps, weights=table.weights, values=values,
                        value_den=q, calibration=calibration, compact=packed)
    doc = dict(prof.canonical(), fingerprint=prof.fingerprint)
    try:
        return from_dict(doc)
    except ProfileError as exc:
        raise ProfileError("the table fails the profile checks: %s" % exc) from None


def _fits(table) -> bool:
    return all(sum(row) <= ROW_TOTAL_MAX for row in table.weights)


def _scaled(make):
    """The first table make(scale_bits=s), s = 32, 31, ..., whose row totals fit 2^32 (the
    budget ratio is floor(L 2^s)/2^s: the largest s keeps it closest to L)."""
    for s in range(32, 3, -1):
        t = make(s)
        if _fits(t):
            return t
    raise ProfileError("no weight scale keeps the table's rows within 2^32")


def _window(cells: int, t: float) -> int:
    """The window family's Nc for N cells: N/Nc = t + 1 (references.Piecewise), clamped."""
    return min(cells - 2, max(1, round(cells / (t + 1))))


def build_table(lo, hi, epsilon, mechanism, bits, *, objective="worst", data=None,
                anchors=None):
    """The exact Table of `mechanism` for `bits` bits per report (see `build`)."""
    from . import design as D
    from . import mechanism as T
    lo, hi, eps_f = P.parameters(lo, hi, epsilon)
    eps = Fraction(eps_f)
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 6:
        raise ProfileError("bits must be an integer in [1, 6] for a table profile, got %r"
                           % (bits,))
    if mechanism == "n-output":
        raise ProfileError("n-output as published is not a table profile (its anchors are not "
                           "evenly spaced); n-output-lp is the LP on its structure")
    if mechanism not in MECHANISMS:
        raise ProfileError("mechanism must be one of %s, got %r"
                           % (", ".join(MECHANISMS), mechanism))
    if objective != "worst" and mechanism not in DESIGNED:
        raise ProfileError("--objective data needs a designed mechanism (%s)"
                           % ", ".join(DESIGNED))
    n = 1 << bits
    if mechanism == "duchi":
        return _scaled(lambda s: T.duchi(lo, hi, eps, scale_bits=s))
    if mechanism in ("pm", "pm-sub"):
        if n < 3:
            raise ProfileError("%s needs at least 2 bits (3 cells)" % mechanism)
        t = math.exp(eps_f / (2 if mechanism == "pm" else 3))
        return _scaled(lambda s: T.pm(lo, hi, eps, cells=n, window=_window(n, t),
                                      scale_bits=s))
    if mechanism == "hm":
        if n < 5 and float(eps) > T._EPS_STAR:
            raise ProfileError("hm needs at least 3 bits (5 cells) above eps* ~ 0.61")
        return _scaled(lambda s: T.hm(lo, hi, eps, cells=n, scale_bits=s))
    if mechanism == "three-outputs":
        if bits < 2:
            raise ProfileError("three-outputs needs 2 bits (3 cells)")
        return _scaled(lambda s: T.three_outputs(lo, hi, eps, scale_bits=s))
    if mechanism == "three-outputs-lp":
        if bits < 2:
            raise ProfileError("three-outputs-lp needs 2 bits (3 cells)")
        return D.design(lo, hi, eps, 2, cells=3, anchors=3, objective=objective, data=data,
                        refine=False)
    if mechanism == "n-output-lp":
        if n > 16:
            raise ProfileError("n-output-lp has N anchors for N = 2^bits cells: at most 4 "
                               "bits fit a table profile's %d weights" % ENTRIES_MAX)
        # the even grid: the papers' structure, not the designer's free outputs
        return D.design(lo, hi, eps, bits, anchors=n, objective=objective, data=data,
                        refine=False)
    return D.design(lo, hi, eps, bits, anchors=anchors, objective=objective, data=data)


def build(lo, hi, epsilon, mechanism, bits, *, objective="worst", data=None, anchors=None,
          calibration=None) -> TableProfile:
    """A checked table profile for `mechanism` on [lo, hi] at budget epsilon, bits per report.

    Transcribed from the papers (exact versions, zeal.mechanism.table.mechanism): duchi (2 cells, 1
    bit), pm (2^bits cells, Wang et al.'s window N/Nc = e^(eps/2) + 1), hm (Wang et al.'s
    alpha; Duchi alone at eps <= eps*), pm-sub (Zhao et al.: the same window family at
    t = e^(eps/3), N/Nc = t + 1), three-outputs (Zhao et al.'s published P0; 3 cells, anchors
    lo, mid, hi). Derived rather than transcribed (their structure from the papers, their
    probabilities from the LP of zeal.mechanism.table.design): three-outputs-lp (3 cells,
    anchors lo, mid, hi), n-output-lp (N = 2^bits cells on an even grid, N anchors: Baek &
    Chung's piecewise-linear structure), optimal (the designer, default 65 anchors: a compact
    zeal-table/2 file). The budget ratio of the transcribed ones is floor(L 2^s)/2^s with
    the largest s <= 32 that keeps every row total within 2^32."""
    table = build_table(lo, hi, epsilon, mechanism, bits, objective=objective, data=data,
                        anchors=anchors)
    prof = from_table(table, epsilon=P.parameters(lo, hi, epsilon)[2],
                      calibration=calibration)
    prof.mechanism = mechanism
    return prof
