"""`zeal compare`: every mechanism side by side on one range, one epsilon, one bit budget.

One row per mechanism (`compare(...)` returns the rows; `format_table`, `plot` and
`register` wrap them for the command line):

- float REFERENCES (`exact` false, `on_device` false): Laplace, SCDF, Staircase, Duchi, PM,
  HM, PM-SUB from zeal.mechanism.references, carried to [lo, hi] by `Scaled`. Their figures
  are the closed-form variance formulas in float64; their outputs are continuous, so "bits
  sent" and the entropy are "n/a (continuous)".
- the WINDOW GRID (`exact` true, `on_device` true): today's profile (zeal.mechanism.build) at
  --bits, or at `--bits auto`'s choice when --bits is not given. Figures from `ExactGrid` in
  Fractions.
- the TABLE PROFILES (`exact` true, `on_device` true): every kind `zeal profile --mechanism`
  writes (zeal.mechanism.table.profile.build_table, then checked as a profile file by
  `from_table`): duchi-table (1 bit), three-outputs (2 bits), pm-table, pm-sub-table,
  hm-table, n-output (at most 4 bits: one anchor per cell) and the designer's `optimal`, at
  --bits (default 4). A table profile holds at most 6 bits per report, so above that the
  table rows say n/a; without scipy the designed rows (optimal, n-output, three-outputs) say
  what to install and the others stand. The lo/hi of a table profile are float64s: the
  range's decimals are rounded to the nearest double (the window grid's too).

Figures per row, in the reading's units (variances in (reading unit)^2):
- `worst_variance`: max over readings in [lo, hi] of Var(estimate | x) for one report.
  Tables: `Table.worst_variance()`. Window grid: `ExactGrid.worst_variance()`, exact.
- `mean_variance`: (1/n) sum_i Var(estimate | x_i) over the data's readings x_i (clamped to
  [lo, hi], as the device clamps); null without --data. Exact rows average Fractions.
- `bits`: bits sent per report: the profile's m for the grid, ceil(log2 N) for an N-cell
  table; null for the references.
- `entropy_bits`: H(M) in bits, M(j) = (1/n) sum_i P(j | x_i) the distribution of a report
  drawn from the data's reports (the order-0 bound an entropy coder of the reports can
  reach, as in zeal.analysis.compress.entropy). Computed from the exact probabilities (then
  rounded to float64 once per term); null without --data and for the references.
"""
import json
import math
import sys
import time
from collections import Counter
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ..errors import InputError, ProfileError, ZealError

PROFILE_TABLE_BITS_MAX = 6  # a table profile (zeal-table/1) holds at most 64 cells
# `zeal profile/demo --mechanism KIND --bits auto`: a table mechanism's natural size (Duchi
# 2 cells, Three-Outputs 3), else DEFAULT_TABLE_BITS
NATURAL_TABLE_BITS = {"duchi": 1, "three-outputs": 2}
DESIGNED = ("optimal", "n-output", "three-outputs")   # solved by the LP designer (scipy)
DEFAULT_TABLE_BITS = 4      # tables and `optimal` without --bits
BITS_MAX = 52               # the window grid's widest report
EPSILON_MAX = 20
VARIANCE_UNIT = "(reading unit)^2"
ROW_KEYS = ("mechanism", "kind", "bits", "cells", "worst_variance", "worst_variance_exact",
            "mean_variance", "mean_variance_exact", "entropy_bits", "exact", "on_device",
            "note")


# ---- inputs ---------------------------------------------------------------------------------
def parse_number(text, what) -> Fraction:
    """An exact decimal ("-1", "2.5e3") or p/q, as a Fraction; ZealError (one line) else."""
    s = str(text).strip()
    try:
        if "/" in s:
            value = Fraction(s)
        else:
            d = Decimal(s)
            if not d.is_finite() or abs(d.adjusted()) > 300:
                raise ValueError
            value = Fraction(d)
    except (InvalidOperation, ValueError, ZeroDivisionError):
        raise ZealError("%s must be a finite decimal number, got %r" % (what, str(text)[:40])) \
            from None
    return value


def parse_bits(text):
    """None (not given), or an int in [1, 52]."""
    if text is None:
        return None
    try:
        bits = int(str(text).strip())
    except ValueError:
        raise ZealError("--bits must be an integer from 1 to %d, got %r"
                        % (BITS_MAX, str(text)[:40])) from None
    if not 1 <= bits <= BITS_MAX:
        raise ZealError("--bits must be an integer from 1 to %d, got %d" % (BITS_MAX, bits))
    return bits


def table_bits(mechanism, bits) -> int:
    """--bits for a table mechanism (zeal profile, zeal demo): 'auto'/None is its natural
    size; otherwise 1..6 (ZealError, one line, beyond)."""
    if bits in (None, "auto"):
        return NATURAL_TABLE_BITS.get(mechanism, DEFAULT_TABLE_BITS)
    if isinstance(bits, bool) or not isinstance(bits, int) \
            or not 1 <= bits <= PROFILE_TABLE_BITS_MAX:
        raise ZealError("--mechanism %s takes --bits 1 to %d (a table profile holds at most "
                        "%d cells); for more bits per report use --mechanism grid"
                        % (mechanism, PROFILE_TABLE_BITS_MAX, 1 << PROFILE_TABLE_BITS_MAX))
    return bits


def build_table_profile(lo, hi, epsilon, mechanism, bits, *, objective="worst", data=None,
                        calibration=None, progress=None):
    """The table profile of `mechanism` (zeal.mechanism.table.profile.build), with progress
    lines while the LP designer runs. No scipy: one ZealError line saying what to install."""
    import time

    from ..mechanism.table import profile as table_profile

    progress = progress or (lambda line: None)
    start = time.perf_counter()
    if mechanism in DESIGNED:
        from ..mechanism.table import design

        design.need_scipy()  # "the designer needs scipy: pip install 'zeal-mcu[design]'"
        progress("designing %s with the LP designer (HiGHS via scipy), %d bit(s) per report, "
                 "%s objective; a few seconds ..." % (mechanism, bits, objective))
    prof = table_profile.build(lo, hi, epsilon, mechanism, bits, objective=objective,
                               data=None if data is None else [float(x) for x in data],
                               calibration=calibration)
    if mechanism in DESIGNED:
        progress("%s designed in %.1f s: %d cells, %d anchor rows"
                 % (mechanism, time.perf_counter() - start, prof.n_cells, prof.anchors + 1))
    return prof


def load_readings(path, column=None) -> list:
    """The readings of a data file as exact Fractions: one decimal per line (blank lines and
    lines starting with '#' skipped), or, with `column`, that column of a CSV file with a
    header (datasets.load_csv_column). InputError, one line, for anything else."""
    if column is not None:
        from .datasets import load_csv_column
        texts = [(i, t) for i, t in enumerate(load_csv_column(path, column), 2)]
    else:
        try:
            with open(path, "r", encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError as exc:
            raise InputError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
        except UnicodeDecodeError:
            raise InputError("%s: not UTF-8 text" % path) from None
        texts = [(i, ln.strip()) for i, ln in enumerate(lines, 1)
                 if ln.strip() and not ln.strip().startswith("#")]
    out = []
    for line, text in texts:
        try:
            d = None if "_" in text else Decimal(text)
        except InvalidOperation:
            d = None
        if d is None or not d.is_finite() or abs(d.adjusted()) > 300:
            raise InputError("%s line %d: not a finite decimal reading: %r"
                             % (path, line, text[:40]))
        out.append(Fraction(d))
    if not out:
        raise InputError("%s: no readings (one decimal number per line)" % path)
    return out


# ---- exact figures ----------------------------------------------------------------------------
def _mean(values) -> Fraction:
    total, n = Fraction(0), 0
    for value, count in values:
        total += value * count
        n += count
    return total / n


def _entropy(probs) -> float:
    return math.fsum(-float(p) * math.log2(float(p)) for p in probs if p)


def _clamp(readings, lo, hi) -> Counter:
    return Counter(min(max(x, lo), hi) for x in readings)


def _exact_text(value):
    return None if value is None else str(value)


def _row(mechanism, kind, *, bits=None, cells=None, worst=None, mean=None, entropy=None,
         exact, on_device, note=""):
    return {
        "mechanism": mechanism, "kind": kind, "bits": bits, "cells": cells,
        "worst_variance": None if worst is None else float(worst),
        "worst_variance_exact": _exact_text(worst) if exact else None,
        "mean_variance": None if mean is None else float(mean),
        "mean_variance_exact": _exact_text(mean) if exact else None,
        "entropy_bits": entropy, "exact": exact, "on_device": on_device, "note": note,
    }


def _reference_rows(lo, hi, epsilon, data):
    import numpy as np
    from ..mechanism.references import Scaled, all_references
    rows = []
    xs = None
    if data is not None:
        counts = _clamp(data, lo, hi)
        xs = np.array([float(x) for x in counts], dtype=float)
        ws = np.array(list(counts.values()), dtype=float)
        xs = np.clip(xs, float(lo), float(hi))
    for mech in all_references(float(epsilon)):
        scaled = Scaled(mech, lo=float(lo), hi=float(hi))
        mean = None
        if xs is not None:
            mean = float(np.dot(np.asarray(scaled.variance(xs)), ws) / ws.sum())
        rows.append(_row(mech.name, "reference", worst=scaled.worst_variance(), mean=mean,
                         exact=False, on_device=False,
                         note="float reference (closed form); continuous output"))
    return rows


def _grid_row(lo, hi, eps_text, bits, data):
    from ..mechanism import ExactGrid, build
    try:
        prof = build(float(lo), float(hi), eps_text, bits="auto" if bits is None else bits)
    except ProfileError as exc:
        return _row("window-grid", "grid", exact=True, on_device=True,
                    note="n/a: %s" % exc)
    g = ExactGrid(prof)
    worst, _ = g.worst_variance()
    mean = entropy = None
    if data is not None:
        counts = _clamp(data, Fraction(prof.lo), Fraction(prof.hi))
        mean = _mean((g.variance(x), c) for x, c in counts.items())
        from .compress.entropy import entropy_bits_per_report
        entropy = entropy_bits_per_report(prof, list(counts.elements()))
    how = "--bits auto" if bits is None else "--bits %d" % bits
    return _row("window-grid", "grid", bits=prof.bits, cells=prof.n_cells, worst=worst,
                mean=mean, entropy=entropy, exact=True, on_device=True,
                note="today's profile (%s; N=%d, Nc=%d)" % (how, prof.n_cells, prof.n_window))


def _table_figures(table, data):
    mean = entropy = None
    if data is not None:
        counts = _clamp(data, table.lo, table.hi)
        mean = _mean((table.variance(x), c) for x, c in counts.items())
        n = sum(counts.values())
        marginal = [Fraction(0)] * table.cells
        for x, c in counts.items():
            for j, p in enumerate(table.distribution(x)):
                marginal[j] += c * p
        entropy = _entropy([m / n for m in marginal])
    return table.worst_variance(), mean, entropy


def _table_row(name, table, data, note, kind="table"):
    worst, mean, entropy = _table_figures(table, data)
    return _row(name, kind, bits=max(1, (table.cells - 1).bit_length()), cells=table.cells,
                worst=worst, mean=mean, entropy=entropy, exact=True, on_device=True,
                note=note)


# (row name, table_profile mechanism): every kind `zeal profile --mechanism` writes
TABLE_ROWS = (("duchi-table", "duchi"), ("three-outputs", "three-outputs"),
              ("pm-table", "pm"), ("pm-sub-table", "pm-sub"), ("hm-table", "hm"),
              ("n-output", "n-output"), ("optimal", "optimal"))
N_OUTPUT_BITS_MAX = 4   # n-output has one anchor per cell: 2^4 cells x 16 anchors fit a profile


def _kind_bits(mechanism, bits):
    """The bits a table row uses: its natural size for Duchi (1) and Three-Outputs (2), the
    row's --bits otherwise (default 4; n-output at most 4)."""
    if mechanism in NATURAL_TABLE_BITS:
        return NATURAL_TABLE_BITS[mechanism]
    tb = DEFAULT_TABLE_BITS if bits is None else bits
    return min(tb, N_OUTPUT_BITS_MAX) if mechanism == "n-output" else tb


def _table_rows(lo, hi, eps, bits, data, progress):
    """One row per table kind, each the device-ready table profile `zeal profile --mechanism
    KIND` writes (zeal.mechanism.table.profile.build_table): exact and on the device."""
    from ..mechanism.table import design, profile as table_profile
    rows = []
    for name, mech in TABLE_ROWS:
        kind = "designed" if mech in DESIGNED else "table"
        b = _kind_bits(mech, bits)
        if b > PROFILE_TABLE_BITS_MAX:
            rows.append(_row(name, kind, exact=True, on_device=False,
                             note="n/a: a table profile holds at most %d bits per report (%d "
                                  "cells)" % (PROFILE_TABLE_BITS_MAX,
                                              1 << PROFILE_TABLE_BITS_MAX)))
            continue
        if mech in DESIGNED:
            try:
                design.need_scipy()
            except ZealError as exc:  # no scipy: the other rows still stand, this one says why
                rows.append(_row(name, kind, exact=True, on_device=False, note="n/a: %s" % exc))
                continue
            progress("designing %s at %d bits (%d cells); a few seconds ..."
                     % (mech, b, 3 if mech == "three-outputs" else 1 << b))
        else:
            progress("exact table %s at %d bits" % (mech, b))
        start = time.perf_counter()
        try:
            table = table_profile.build_table(float(lo), float(hi), eps, mech, b)
            prof = table_profile.from_table(table)
        except ProfileError as exc:
            rows.append(_row(name, kind, exact=True, on_device=False, note="n/a: %s" % exc))
            continue
        if mech in DESIGNED:
            progress("%s designed in %.1f s" % (mech, time.perf_counter() - start))
        rows.append(_table_row(name, prof.table, data,
                               "table profile: zeal profile --mechanism %s --bits %d; %d "
                               "anchor rows" % (mech, b, prof.anchors + 1), kind=kind))
    return rows


def compare(lo, hi, epsilon, *, bits=None, data=None, progress=None) -> list:
    """The rows (dicts with ROW_KEYS) for every mechanism on [lo, hi] at `epsilon`.

    lo, hi, epsilon: exact numbers (Fraction, int or decimal text); bits: None or 1..52;
    data: None or a list of readings (exact); progress: a callable taking one line."""
    progress = progress or (lambda line: None)
    lo, hi = parse_number(lo, "lo"), parse_number(hi, "hi")
    eps = parse_number(epsilon, "epsilon")
    if not lo < hi:
        raise ZealError("range is empty: LO (%s) must be below HI (%s)" % (lo, hi))
    if not 0 < eps <= EPSILON_MAX:
        raise ZealError("epsilon must be in (0, %d], got %s" % (EPSILON_MAX, epsilon))
    if isinstance(bits, bool) or not (bits is None or isinstance(bits, int)):
        raise ZealError("bits must be an integer or None, got %r" % (bits,))
    if bits is not None and not 1 <= bits <= BITS_MAX:
        raise ZealError("bits must be from 1 to %d, got %d" % (BITS_MAX, bits))
    if data is not None:
        data = [parse_number(x, "reading") if not isinstance(x, Fraction) else x
                for x in data]
        if not data:
            raise ZealError("no readings in the data")
    eps_text = str(epsilon) if isinstance(epsilon, str) else (
        str(eps) if eps.denominator == 1 else "%d/%d" % (eps.numerator, eps.denominator))
    rows = _reference_rows(lo, hi, eps, data)
    progress("window grid (exact analysis)")
    rows.append(_grid_row(lo, hi, eps_text, bits, data))
    rows.extend(_table_rows(lo, hi, eps, bits, data, progress))
    return rows


# ---- output -------------------------------------------------------------------------------------
def _fmt_var(value):
    return "-" if value is None else "%.6g" % value


def format_table(rows, *, lo, hi, epsilon, data_label=None) -> str:
    head = ("mechanism", "kind", "cells", "bits sent", "entropy (bits/report)",
            "worst variance", "mean variance", "exact", "runs on device")
    body = []
    for r in rows:
        cont = r["kind"] == "reference"
        unavailable = r["worst_variance"] is None
        body.append((
            r["mechanism"], r["kind"],
            "-" if r["cells"] is None else str(r["cells"]),
            "n/a (continuous)" if cont else ("-" if unavailable else str(r["bits"])),
            "n/a (continuous)" if cont else (
                "-" if unavailable else ("n/a (needs --data)" if r["entropy_bits"] is None
                                          else "%.4f" % r["entropy_bits"])),
            _fmt_var(r["worst_variance"]),
            ("n/a (needs --data)" if data_label is None and not unavailable
             else _fmt_var(r["mean_variance"])),
            "yes" if r["exact"] else "no (float)",
            "yes" if r["on_device"] else "no",
        ))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["zeal compare: range [%s, %s], epsilon %s; variances of one report's estimate in "
             "%s, worst = max over [%s, %s]%s"
             % (lo, hi, epsilon, VARIANCE_UNIT, lo, hi,
                "" if data_label is None else ", mean = average over %s" % data_label)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for b in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
    lines.append("")
    lines.append("exact = figures from the exact rational analysis; runs on device = a profile "
                 "the firmware runs (the window grid, or a table profile written by zeal "
                 "profile --mechanism KIND); variances of one report's estimate in %s."
                 % VARIANCE_UNIT)
    for r in rows:
        if r["note"] and r["kind"] != "reference":
            lines.append("%s: %s" % (r["mechanism"], r["note"]))
    return "\n".join(lines)


def plot(rows, path, *, lo, hi, epsilon, bits_label=""):
    """A PNG: worst variance per mechanism (bars, log scale), coloured by kind; the data's
    mean variance as points when present."""
    from .plots import new_figure
    shown = [r for r in rows if r["worst_variance"] is not None]
    fig = new_figure(9.0, 5.8, who="zeal compare --plot")
    ax = fig.add_subplot(1, 1, 1)
    colours = {"reference": "#9aa5b1", "host": "#4c78a8", "device": "#e45756"}
    labels = {"reference": "float reference (not exact)",
              "host": "exact, host only",
              "device": "exact, runs on the device"}
    used = set()
    ys = list(range(len(shown)))
    for y, r in zip(ys, shown):
        key = "reference" if not r["exact"] else ("device" if r["on_device"] else "host")
        ax.barh(y, r["worst_variance"], color=colours[key],
                label=None if key in used else labels[key])
        used.add(key)
    means = [(y, r["mean_variance"]) for y, r in zip(ys, shown) if r["mean_variance"] is not None]
    if means:
        ax.plot([m for _, m in means], [y for y, _ in means], "kD", markersize=5,
                label="mean variance over the data")
    ax.set_yticks(ys)
    ax.set_yticklabels(["%s (%s)" % (r["mechanism"], "continuous" if r["bits"] is None
                                     else "%d bit%s" % (r["bits"], "" if r["bits"] == 1 else "s"))
                        for r in shown])
    ax.invert_yaxis()
    values = [r["worst_variance"] for r in shown] + [m for _, m in means]
    if values and max(values) / min(values) > 3:
        ax.set_xscale("log")
    ax.set_xlabel("worst-case variance of one report's estimate over [%s, %s] "
                  "(%s)" % (lo, hi, VARIANCE_UNIT.replace("^2", "²")))
    ax.set_ylabel("mechanism (bits sent per report)")
    ax.set_title("zeal compare: epsilon = %s%s" % (epsilon, bits_label))
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path, format="png")
    except OSError as exc:
        raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None


def cmd_compare(args) -> int:
    lo_t, hi_t = args.range
    lo, hi = parse_number(lo_t, "LO"), parse_number(hi_t, "HI")
    parse_number(args.epsilon, "--epsilon")
    bits = parse_bits(args.bits)
    if args.column is not None and args.data is None:
        raise ZealError("--column needs --data FILE")
    data = None
    if args.data is not None:
        data = load_readings(args.data, args.column)
        outside = sum(1 for x in data if not lo <= x <= hi)
        if outside:
            print("zeal compare: %d of %d readings lie outside [%s, %s] and are clamped to it "
                  "(as the device clamps)" % (outside, len(data), lo_t, hi_t), file=sys.stderr)

    def progress(line):
        print("zeal compare: %s" % line, file=sys.stderr, flush=True)

    rows = compare(lo, hi, args.epsilon.strip(), bits=bits, data=data, progress=progress)
    if args.plot:
        plot(rows, args.plot, lo=lo_t, hi=hi_t, epsilon=args.epsilon.strip(),
             bits_label="" if bits is None else ", --bits %d" % bits)
        progress("plot written to %s" % args.plot)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_table(rows, lo=lo_t, hi=hi_t, epsilon=args.epsilon.strip(),
                           data_label=None if data is None else "%d readings of %s"
                           % (len(data), args.data)))
    return 0


