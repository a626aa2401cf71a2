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
NATURAL_TABLE_BITS = {"duchi": 1, "three-outputs": 2, "three-outputs-lp": 2}
DESIGNED = ("optimal", "n-output-lp", "three-outputs-lp")   # solved by the LP designer (scipy)
DEFAULT_TABLE_BITS = 4      # tables and `optimal` without --bits
BITS_MAX = 52               # the window grid's widest report
EPSILON_MAX = 20
VARIANCE_UNIT = "(reading unit)^2"
ROW_KEYS = ("mechanism", "kind", "bits", "cells", "worst_variance", "worst_variance_exact",
            "mean_variance", "mean_variance_exact", "entropy_bits", "exact", "on_device",
            "note", "floor", "above_floor")
FLOOR_INPUTS = 13   # J of the floor's conic program: ~10 s an epsilon, within 0.1 % of J = 15


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


def _published(epsilon):
    """[(name, mechanism or the one-line reason it is n/a)] of the later published
    mechanisms (zeal.mechanism.published; N-output and HM-NP search with scipy)."""
    from ..mechanism import published as P
    from ..mechanism.references import PTT, PMOpt

    out = [("ptt", PTT(epsilon=epsilon)), ("pm-opt", PMOpt(epsilon=epsilon)),
           ("three-outputs", P.ThreeOutputs(epsilon=epsilon)), ("hm-tp", P.hm_tp(epsilon))]
    for name, make in (("n-output", P.noutput_best_n), ("hm-np", P.hm_np)):
        try:
            out.append((name, make(epsilon)))
        except ImportError:
            out.append((name, "n/a: its search needs scipy (pip install 'zeal-mcu[design]')"))
    return out


NOTES = {
    "ptt": "float reference: seed 002's I-PTT, eta = 19/10 (the window family at t = 0.9)",
    "pm-opt": "float reference: the window family's best member (PM, PM-SUB and PTT are "
              "members)",
    "three-outputs": "float reference: Zhao et al., the published P0",
    "hm-tp": "float reference: PM-SUB and Three-Outputs mixed at the best weight",
    "n-output": "float reference: Baek & Chung's construction, the best N and outputs",
    "hm-np": "float reference: Baek & Chung's HM-NP (N-output and PM-SUB)",
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
    mechs = [(m.name, m) for m in all_references(float(epsilon))] + _published(float(epsilon))
    for name, mech in mechs:
        if isinstance(mech, str):
            rows.append(_row(name, "reference", exact=False, on_device=False, note=mech))
            continue
        scaled = Scaled(mech, lo=float(lo), hi=float(hi))
        mean = None
        if xs is not None:
            mean = float(np.dot(np.asarray(scaled.variance(xs)), ws) / ws.sum())
        cells = getattr(mech, "cells", None)  # a finite output set (Three-Outputs, N-output)
        rows.append(_row(name, "reference", worst=scaled.worst_variance(), mean=mean,
                         cells=cells, bits=None if cells is None else (cells - 1).bit_length(),
                         exact=False, on_device=False,
                         note=NOTES.get(name, "float reference (closed form); continuous "
                                              "output")))
    return rows


def _floor_row(lo, hi, epsilon, inputs, progress):
    """The `floor` row: no unbiased epsilon-LDP mechanism on [lo, hi] has a smaller worst
    case (zeal.mechanism.floor; its proof: shared_spec/floor.md)."""
    from ..mechanism.floor import floor

    progress("the floor: a conic program on %d inputs (%d output patterns), about %s ..."
             % (inputs, (1 << inputs) - 1, "10 s" if inputs >= 13 else "a second"))
    try:
        f = floor(float(epsilon), inputs)
    except ZealError as exc:
        return _row("floor", "floor", exact=False, on_device=False, note="n/a: %s" % exc)
    progress("floor computed in %.1f s" % f.seconds)
    return _row("floor", "floor", worst=f.on_range(float(lo), float(hi)), exact=False,
                on_device=False,
                note="proven lower bound for every unbiased epsilon-LDP mechanism: the dual "
                     "of the minimax program on %d equally spaced inputs (solver gap %.1e "
                     "relative)" % (inputs, (f.primal - f.value) / f.value))


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
# (the LP on Three-Outputs' and N-output's structures: "-lp"; the published constructions are
# the reference rows of those names)
TABLE_ROWS = (("duchi-table", "duchi"), ("three-outputs-table", "three-outputs"),
              ("three-outputs-lp", "three-outputs-lp"), ("pm-table", "pm"),
              ("pm-sub-table", "pm-sub"), ("hm-table", "hm"), ("n-output-lp", "n-output-lp"),
              ("optimal", "optimal"))
N_OUTPUT_BITS_MAX = 4   # n-output has one anchor per cell: 2^4 cells x 16 anchors fit a profile


def _kind_bits(mechanism, bits):
    """The bits a table row uses: its natural size for Duchi (1) and Three-Outputs (2), the
    row's --bits otherwise (default 4; n-output at most 4)."""
    if mechanism in NATURAL_TABLE_BITS:
        return NATURAL_TABLE_BITS[mechanism]
    tb = DEFAULT_TABLE_BITS if bits is None else bits
    return min(tb, N_OUTPUT_BITS_MAX) if mechanism == "n-output-lp" else tb


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
                     % (mech, b, 3 if mech == "three-outputs-lp" else 1 << b))
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


def compare(lo, hi, epsilon, *, bits=None, data=None, progress=None,
            floor_inputs=FLOOR_INPUTS) -> list:
    """The rows (dicts with ROW_KEYS) for every mechanism on [lo, hi] at `epsilon`, the
    `floor` row last, every row's `above_floor` its worst case over the floor.

    lo, hi, epsilon: exact numbers (Fraction, int or decimal text); bits: None or 1..52;
    data: None or a list of readings (exact); progress: a callable taking one line;
    floor_inputs: the floor's J (None: no floor row, above_floor null)."""
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
    bound = None
    if floor_inputs is not None:
        rows.append(_floor_row(lo, hi, eps, floor_inputs, progress))
        bound = rows[-1]["worst_variance"]
    for r in rows:
        r["floor"] = bound   # the floor's worst-case variance, the same on every row
        r["above_floor"] = (None if bound is None or r["worst_variance"] is None
                            else r["worst_variance"] / bound)
    return rows


# ---- output -------------------------------------------------------------------------------------
def _fmt_var(value):
    return "-" if value is None else "%.6g" % value


def format_table(rows, *, lo, hi, epsilon, data_label=None) -> str:
    head = ("mechanism", "kind", "cells", "bits sent", "entropy (bits/report)",
            "worst variance", "x floor", "mean variance", "exact", "runs on device")
    body = []
    for r in rows:
        cont = r["kind"] == "reference" and r["cells"] is None
        unavailable = r["worst_variance"] is None
        body.append((
            r["mechanism"], r["kind"],
            "-" if r["cells"] is None else str(r["cells"]),
            "n/a (continuous)" if cont else ("-" if unavailable or r["bits"] is None
                                             else str(r["bits"])),
            "n/a (continuous)" if cont else "-" if r["kind"] == "floor" else
            "n/a (float reference)" if not r["exact"] else (
                "-" if unavailable else ("n/a (needs --data)" if r["entropy_bits"] is None
                                          else "%.4f" % r["entropy_bits"])),
            _fmt_var(r["worst_variance"]),
            "-" if r.get("above_floor") is None else "%.4f" % r["above_floor"],
            ("n/a (needs --data)" if data_label is None and not unavailable
             else _fmt_var(r["mean_variance"])),
            "yes" if r["exact"] else ("bound" if r["kind"] == "floor" else "no (float)"),
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
    lines.append("x floor = worst variance / the floor's: how far above the least worst case "
                 "any unbiased mechanism can have.")
    for r in rows:
        if r["note"]:
            lines.append("%s: %s" % (r["mechanism"], r["note"]))
    return "\n".join(lines)


def plot(rows, path, *, lo, hi, epsilon, bits_label=""):
    """A PNG: worst variance per mechanism (bars, log scale), coloured by kind; the data's
    mean variance as points when present."""
    from .plots import new_figure
    shown = [r for r in rows if r["worst_variance"] is not None and r["kind"] != "floor"]
    bound = next((r["worst_variance"] for r in rows
                  if r["kind"] == "floor" and r["worst_variance"] is not None), None)
    fig = new_figure(9.0, 6.6, who="zeal compare --plot")
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
    if bound is not None:
        ax.axvline(bound, color="black", linestyle="--", linewidth=1,
                   label="floor: no unbiased mechanism has a smaller worst case")
    ax.set_yticks(ys)
    ax.set_yticklabels(["%s (%s)" % (r["mechanism"], "continuous" if r["bits"] is None
                                     else "%d bit%s" % (r["bits"], "" if r["bits"] == 1 else "s"))
                        for r in shown])
    ax.invert_yaxis()
    values = [r["worst_variance"] for r in shown] + [m for _, m in means] + (
        [] if bound is None else [bound])
    if values and max(values) / min(values) > 3:
        ax.set_xscale("log")
    ax.set_xlabel("worst-case variance of one report's estimate over [%s, %s] "
                  "(%s)" % (lo, hi, VARIANCE_UNIT.replace("^2", "²")))
    ax.set_ylabel("mechanism (bits sent per report)")
    ax.set_title("zeal compare: epsilon = %s%s" % (epsilon, bits_label))
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8,
              frameon=False)
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

    inputs = getattr(args, "floor_inputs", FLOOR_INPUTS)
    if inputs != 0 and not 2 <= inputs <= 17:
        raise ZealError("--floor-inputs must be 2 to 17 (or 0: no floor), got %d" % inputs)
    rows = compare(lo, hi, args.epsilon.strip(), bits=bits, data=data, progress=progress,
                   floor_inputs=inputs or None)
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


