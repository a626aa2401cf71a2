"""`zeal` command line: one table of sub-commands; user mistakes print `zeal: <message>`."""
import argparse
import json
import re
import sys

from . import __version__
from .errors import InputError, ReportError, ZealError
from .text import shown


# ---- helpers ------------------------------------------------------------------------------------
STDIO = "-"  # `-o -`, `--input -`: stdout / stdin


class _Std:
    """stdin or stdout as a context manager that leaves the stream open."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        if self.stream is sys.stdout:
            self.stream.flush()
        return False


def _open(path, mode):
    """A file by name, or stdin/stdout for None or "-" (never closed), as a context manager.
    mode "r"/"w" (UTF-8 text) or "rb"; a file that cannot be opened is one ZealError line."""
    if path in (None, STDIO):
        if "r" in mode:
            return _Std(getattr(sys.stdin, "buffer", sys.stdin) if "b" in mode else sys.stdin)
        return _Std(sys.stdout)
    try:
        if "b" in mode:
            return open(path, mode)
        return open(path, mode, encoding="utf-8")
    except OSError as exc:
        raise ZealError("cannot %s %s: %s" % ("read" if "r" in mode else "write", path,
                                              exc.strerror or exc)) from None


def _lines(path):
    """(line number, text) of the non-blank lines of a file or stdin. A line that is not
    UTF-8 is an InputError naming it (never a traceback)."""
    with _open(path, "rb") as src:
        try:
            for lineno, line in enumerate(src, 1):
                if isinstance(line, bytes):
                    try:
                        line = line.decode("utf-8")
                    except UnicodeDecodeError:
                        raise InputError("line %d: not UTF-8 text" % lineno) from None
                if line.strip():
                    yield lineno, line
        except OSError as exc:
            raise ZealError("cannot read %s: %s" % (path or "stdin",
                                                    exc.strerror or exc)) from None


def _bits_arg(text):
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("bits must be an integer or 'auto'") from None


def _fmt(value):
    if value is None:
        return "n/a (float64 overflow)"
    return "%.10g" % value if isinstance(value, float) else str(value)


def _num(value) -> str:
    """Six decimals for readings of everyday size, 10 significant digits beyond 1e15."""
    return "%.6f" % value if abs(value) < 1e15 else "%.10g" % value


def _finite(value):
    """A float figure, or None where float64 cannot hold it (JSON has no inf/NaN)."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---- profile ------------------------------------------------------------------------------------
GRID = "grid"
# zeal.mechanism.table.profile.MECHANISMS (kept here so the parser needs no import; a test
# checks the two agree)
TABLE_MECHANISMS = ("duchi", "pm", "hm", "three-outputs", "pm-sub", "n-output", "optimal")
MECHANISMS = (GRID,) + TABLE_MECHANISMS
VARIANCE_UNIT = "(reading unit)^2"


def _ratio_text(value) -> str:
    from fractions import Fraction

    value = Fraction(value)
    return "%d/%d" % (value.numerator, value.denominator)


def _float_or_none(value):
    """float(value), or None where float64 cannot hold it (JSON has no inf)."""
    try:
        return _finite(float(value))
    except OverflowError:
        return None


def profile_report(prof, *, mechanism=None, data=None, objective=None) -> dict:
    """Every figure a user may want about a profile (the --json contract), for either kind.
    data: readings (Fractions) whose average variance is reported as data_mean_variance."""
    from .mechanism import kinds

    if not kinds.of(prof).double_reports:  # the paper's figures are about its doubles
        return table_report(prof, mechanism=mechanism, data=data, objective=objective)
    from .mechanism.grid.exact import worst_variance_ratio
    from .paper import formulas as paper

    lo, hi, eps, e = prof.lo, prof.hi, prof.epsilon, prof.exponent
    kind = kinds.of(prof)
    ratio = kind.privacy(prof)["ratio"]
    var = kind.variance(prof, data)[0]   # one quantity: the reading
    worst, at = var["worst"], var["worst_input"]
    gamma = paper.gamma_min(lo, hi, eps, e)
    doc = {
        "lo": lo, "hi": hi, "epsilon": eps,
        # the float64 the profile holds, exactly: never above the epsilon that was typed
        "epsilon_stored": repr(eps), "exponent": e, "bits": prof.bits,
        # the paper's float64 figures: null where float64 overflows (ranges near 1.8e308)
        "abar": _finite(paper.abar(lo, hi, eps, e)),
        "abar_exact": str(paper.abar_exact(lo, hi, eps, e)),
        "gamma_min": gamma, "transmission_ratio": paper.transmission_ratio(gamma),
        "wire_ratio": prof.bits / 64,
        "e_enc": paper.e_enc(lo, hi, eps), "e_vul": paper.e_vul(lo, hi, eps),
        "n_cells": prof.n_cells, "n_window": prof.n_window, "threshold": prof.threshold,
        "privacy_ratio": float(ratio), "privacy_ratio_exact": _ratio_text(ratio),
        "fingerprint": prof.fingerprint,
    }
    if prof.n_cells <= 1 << 22:
        low, high = worst_variance_ratio(prof)
        doc["variance_ratio_vs_pm"] = [_finite(low), _finite(high)]
    doc.update({"kind": kind.name, "mechanism": kind.name,
                "worst_variance": _float_or_none(worst),
                "worst_variance_exact": _ratio_text(worst),
                "worst_input": _float_or_none(at),
                "variance_unit": VARIANCE_UNIT})
    return _with_data_variance(doc, var, data)


def _with_data_variance(doc, var, data) -> dict:
    """doc with the data-averaged variance of `var` (a kind's variance entry) when data."""
    if data is not None:
        mean = var["data_mean"]
        doc.update(data_mean_variance=_float_or_none(mean),
                   data_mean_variance_exact=_ratio_text(mean), data_readings=len(data))
    return doc


def table_report(prof, *, mechanism=None, data=None, objective=None) -> dict:
    """profile_report for a table profile (zeal-table/1)."""
    from .mechanism import kinds

    kind = kinds.of(prof)
    privacy = kind.privacy(prof)
    ratio, bound = privacy["ratio"], privacy["bound"]
    var = kind.variance(prof, data)[0]   # one quantity: the reading
    worst = var["worst"]
    doc = {
        "format": prof.format, "kind": kind.name,
        "mechanism": mechanism if mechanism is not None else getattr(prof, "mechanism", None),
        "lo": prof.lo, "hi": prof.hi, "epsilon": prof.epsilon,
        "epsilon_stored": repr(prof.epsilon), "bits": prof.bits,
        "wire_ratio": prof.bits / 64,
        "cells": prof.n_cells, "n_cells": prof.n_cells,
        # the file's "anchors": R intervals, R + 1 anchor rows at lo + r (hi - lo)/R
        "anchors": prof.anchors, "anchor_rows": prof.anchors + 1,
        "value_den": prof.value_den,
        "privacy_ratio": float(ratio), "privacy_ratio_exact": _ratio_text(ratio),
        # the certified rational lower bound L of e^eps: every column ratio <= L <= e^eps
        "exp_epsilon_bound": float(bound), "exp_epsilon_bound_exact": _ratio_text(bound),
        "worst_variance": _float_or_none(worst),
        "worst_variance_exact": _ratio_text(worst),
        "worst_input": _float_or_none(var["worst_input"]),
        "variance_unit": VARIANCE_UNIT,
        "fingerprint": prof.fingerprint,
    }
    if objective is not None:
        doc["objective"] = objective
    return _with_data_variance(doc, var, data)


def _progress(line):
    print("zeal: %s" % line, file=sys.stderr, flush=True)


def _profile_data(args):
    """(objective, readings or None) from --objective/--data/--column."""
    from .analysis.compare import DESIGNED

    if args.column is not None and args.data is None:
        raise ZealError("--column needs --data FILE")
    objective = args.objective or ("data" if args.data is not None else "worst")
    if objective == "data" and args.data is None:
        raise ZealError("--objective data needs --data FILE (the readings to design for)")
    if objective == "worst" and args.data is not None:
        raise ZealError("--data goes with --objective data (drop --objective worst)")
    if args.data is None:
        return objective, None
    if args.mechanism not in DESIGNED:
        raise ZealError("--objective data and --data apply to the designed mechanisms (%s), "
                        "not --mechanism %s" % (", ".join(DESIGNED), args.mechanism))
    from .analysis.compare import load_readings

    return objective, load_readings(args.data, args.column)


_UNITS = {"lo": "(reading unit)", "hi": "(reading unit)", "worst_input": "(reading unit)",
          "worst_variance": VARIANCE_UNIT, "worst_variance_exact": VARIANCE_UNIT,
          "data_mean_variance": VARIANCE_UNIT, "data_mean_variance_exact": VARIANCE_UNIT,
          "bits": "bits per report", "cells": "cells", "n_cells": "cells"}


def cmd_profile(args) -> int:
    from .analysis import shuffle_cli  # zeal profile --shuffle (seed 004)

    if shuffle_cli.wants_shuffle(args):
        return shuffle_cli.cmd_profile_shuffle(args)
    if getattr(args, "attributes", False):  # a multi-attribute profile (analysis.multi_demo)
        from .analysis.multi_demo import cmd_profile_attributes

        return cmd_profile_attributes(args)
    if getattr(args, "multi_specs", None) or getattr(args, "k", None) is not None:
        raise ZealError("--attribute, --categorical and --k need --attributes")
    if args.range is None:
        raise ZealError("give the reading range with --range LO HI")
    from .analysis.compare import DESIGNED, build_table_profile
    from .mechanism.grid import choose, profile as prof_mod

    calibration = None
    if args.cal_gain is not None or args.cal_offset is not None:
        if args.cal_gain is None or args.cal_offset is None:
            raise ZealError("--cal-gain and --cal-offset go together")
        calibration = prof_mod.Calibration(
            prof_mod.Calibration.parse(args.cal_gain, "--cal-gain"),
            prof_mod.Calibration.parse(args.cal_offset, "--cal-offset"))
    lo, hi = args.range
    if args.output == STDIO and args.json:
        raise ZealError("-o - writes the profile to stdout, where --json would print too: "
                        "give -o FILE, or drop --json")
    mechanism = args.mechanism
    if mechanism == GRID:
        if args.objective is not None or args.data is not None or args.column is not None:
            raise ZealError("--objective, --data and --column apply to the designed table "
                            "mechanisms (%s), not the window grid" % ", ".join(DESIGNED))
        prof = choose.build(lo, hi, args.epsilon, bits=args.bits, exponent=args.exponent,
                            calibration=calibration)
        doc = profile_report(prof)
    else:
        if args.exponent is not None:
            raise ZealError("--exponent is the window grid's; a table profile takes --bits "
                            "1 to 6")
        from .analysis.compare import table_bits

        bits = table_bits(mechanism, args.bits)
        objective, data = _profile_data(args)
        prof = build_table_profile(lo, hi, args.epsilon, mechanism, bits, objective=objective,
                                   data=data, calibration=calibration, progress=_progress)
        doc = profile_report(prof, mechanism=mechanism, data=data,
                             objective=objective if mechanism in DESIGNED else None)
    text = prof.to_json()
    if args.output:
        with _open(args.output, "w") as out:
            out.write(text)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        # with -o - the profile file is the result on stdout; the figures go to stderr
        shown = sys.stderr if args.output == STDIO else sys.stdout
        for key, value in doc.items():
            unit = _UNITS.get(key)
            print("%-24s %s%s" % (key, _fmt(value), " " + unit if unit and value is not None
                                  else ""), file=shown)
        if args.output and args.output != STDIO:
            print("written to %s" % args.output)
    return 0


# ---- perturb ------------------------------------------------------------------------------------
FORMATS = ("bits", "low", "float")


def _perturb_format(args):
    """--format, and the old `--output bits|low|float` (one release): a value that is a format
    name is taken as the format, with a note on stderr; any other value is the output file."""
    if args.output in FORMATS:
        if args.format not in (None, args.output):
            raise ZealError("--format %s and --output %s disagree (--output now names a file; "
                            "write to a file of that name with -o ./%s)"
                            % (args.format, args.output, args.output))
        print("zeal: note: `--output %s` is the old spelling of `--format %s` (accepted in this "
              "release only; -o/--output now names the output file, e.g. -o ./%s)"
              % ((args.output,) * 3), file=sys.stderr)
        args.format, args.output = args.output, None
    if args.format is None:
        args.format = "bits"


def cmd_perturb(args) -> int:
    from .mechanism import kinds
    from .mechanism.core.words import CounterWords, key_from_hex, system_words

    prof = kinds.load(args.profile)
    kind = kinds.of(prof)
    if kind.formats == FORMATS:
        _perturb_format(args)
    elif args.output in FORMATS and args.format is None:  # the old --output spelling
        args.format, args.output = args.output, None
    if args.format is None:
        args.format = kind.formats[0]
    if args.format not in kind.formats:
        raise ZealError("a %s profile's reports are written as %s: use --format %s"
                        % (kind.name, " or ".join(kind.formats), kind.formats[0]))
    if args.seed is not None:
        try:
            words = CounterWords(key_from_hex(args.seed))
        except ValueError as exc:
            raise ZealError(str(exc)) from None
    else:
        words = system_words()
    mech = kind.perturber(prof, words, args.format)
    skipped = 0
    with _open(args.output, "w") as out:
        for lineno, line in _lines(args.input):
            try:
                got = mech.lines(line)
            except InputError as exc:
                if not args.skip_invalid:
                    raise InputError("line %d: %s" % (lineno, exc)) from None
                skipped += 1
                continue
            out.write("".join(t + "\n" for t in got))
    for note in mech.notes():
        print("zeal: %s" % note, file=sys.stderr)
    if skipped:
        print("zeal: skipped %d invalid line(s)" % skipped, file=sys.stderr)
    return 0


# ---- aggregate ----------------------------------------------------------------------------------
def cmd_aggregate(args) -> int:
    from .mechanism import kinds

    prof = kinds.load(args.profile)
    try:
        doc, text = kinds.of(prof).aggregate(prof, _lines(args.input))
    except ReportError as exc:
        if str(exc) == "no reports to aggregate" or str(exc).startswith("cannot aggregate"):
            raise ZealError(str(exc)) from None
        raise
    if args.json:  # an interval past float64 is null (JSON has no inf)
        print(json.dumps(doc, indent=1, allow_nan=False))
    else:
        print("\n".join(text))
    return 0


# ---- demo ---------------------------------------------------------------------------------------
def cmd_demo(args) -> int:
    from .analysis import shuffle_cli  # boards -> shuffler -> collector (analysis.shuffle_demo)
    from .collect.store import is_url

    if args.db and is_url(args.db) and not getattr(args, "mqtt", False):
        raise ZealError("--db %s: this demo writes a new SQLite file; a PostgreSQL store is "
                        "the fleet demo's (zeal demo --mqtt --db postgresql://...)" % args.db)
    if shuffle_cli.demo_wants_shuffle(args):
        from .analysis.shuffle_demo import cmd_demo_shuffle

        return cmd_demo_shuffle(args)
    if getattr(args, "attributes", False):  # multi-attribute boards (analysis.multi_demo)
        from .analysis.multi_demo import run_multi_demo

        doc = run_multi_demo(db=args.db, epsilon=args.epsilon, count=args.count,
                             devices=args.devices, progress=not args.json)
        if args.json:
            print(json.dumps(doc, indent=1))
        return 0
    if getattr(args, "mqtt", False):  # the fleet path (zeal.demo.run_mqtt_demo)
        from .demo import run_mqtt_demo

        doc = run_mqtt_demo(db=args.db, epsilon=args.epsilon, bits=args.bits,
                            count=args.count, devices=args.devices, progress=not args.json)
        if args.json:
            print(json.dumps(doc, indent=1))
        return 0
    from .demo import run_demo

    doc = run_demo(db=args.db, epsilon=args.epsilon, bits=args.bits, count=args.count,
                   devices=args.devices, plots=args.plots, progress=not args.json,
                   mechanism=args.mechanism)
    if args.json:  # zeal analyze --json's document, plus the demo's own section
        print(json.dumps(doc, indent=1))
    return 0


# ---- conformance --------------------------------------------------------------------------------
def cmd_conformance(args) -> int:
    from .board import conformance as C
    from .board.devices import check_present, resolve_port

    suites = C.available_suites()
    unknown = [name for name in (args.suite or ()) if name not in suites]
    if unknown:
        raise ZealError("unknown suite %s (suites: %s)" % (", ".join(map(repr, unknown)),
                                                           ", ".join(suites)))
    port = resolve_port(args.port) if args.port else None
    targets = [args.target] if args.target else ["cpython", "micropython"]
    if port:
        targets = [t for t in targets if t != "board"] + ["board"]
        check_present(port)  # the one missing-port message, before any work
    table, failed = [], []
    for target in targets:
        if target == "micropython" and C.locate_micropython() is None:
            from .board.firmware import MICROPYTHON_MISSING

            raise ZealError(MICROPYTHON_MISSING)
        print("running the vectors on %s ..." % target, file=sys.stderr)
        try:
            rows = C.run(target, args.suite, port if target == "board" else None,
                         heapsize=args.heapsize if target == "micropython" else None,
                         progress=lambda line: print(line, file=sys.stderr))
        except C.ConformanceError as exc:
            raise ZealError("%s: %s" % (target, exc)) from None
        for suite in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == suite]
            table.append((target, suite) + C.summary(mine))
        failed += [(target,) + r for r in rows if r[2] is False]
    if args.json:
        print(json.dumps({
            "table": [dict(zip(("target", "suite", "passed", "failed", "not_applicable"), row))
                      for row in table],
            "failures": [{"target": t, "suite": su, "id": cid, "detail": detail}
                         for t, su, cid, _, detail in failed],
            "board_port": port}, indent=1))
    else:
        print("%-12s %-10s %7s %7s %7s" % ("target", "suite", "passed", "failed", "n/a"))
        for row in table:
            print("%-12s %-10s %7d %7d %7d" % row)
        for target, suite, cid, _, detail in failed:
            print("FAIL %s %s/%s: %s" % (target, suite, cid, detail))
    if not port:
        print("(no board: pass --port PORT to run the vectors on real hardware)",
              file=sys.stderr)
    return 1 if failed else 0


# ---- parser -------------------------------------------------------------------------------------
# argparse takes "-40" for a number but "-1e3" or "-.5e2" for an option; readings and ranges
# are often negative, so every parser of ours accepts any float spelling after a minus, and a
# negative p/q (calibrations: --cal-gain -220000/7519049).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$|^-\d+/\d+$")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="zeal", description="Zeal-MCU: exact local differential privacy for sensor telemetry.")
    parser.add_argument("--version", action="version", version="zeal " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("profile", help="build a profile (range, epsilon, bits per report)",
                       description="Build a profile and print its figures.")
    p.add_argument("--range", nargs=2, type=float, metavar=("LO", "HI"),
                   help="feasible reading range, in the reading's unit (required but with "
                        "--attributes)")
    p.add_argument("--epsilon", type=str, required=True, metavar="EPS",
                   help="privacy budget per reading (> 0, at most 20), an exact decimal or "
                        "p/q; the guarantee holds for the number as typed (the stored float64 "
                        "is rounded down from it)")
    p.add_argument("--mechanism", choices=MECHANISMS, default=GRID, metavar="KIND",
                   help="grid (the window grid, any bits), or a table profile: %s (exact "
                        "versions of the literature's mechanisms; optimal = the LP designer, "
                        "needs scipy); default %%(default)s" % ", ".join(TABLE_MECHANISMS))
    g = p.add_mutually_exclusive_group()
    g.add_argument("--bits", type=_bits_arg, default="auto", metavar="M|auto",
                   help="bits per report; grid: 'auto' = fewest bits whose variance is within "
                        "1%% of the continuous piecewise mechanism at every input; tables: 1 "
                        "to 6, 'auto' = 1 for duchi, 2 for three-outputs, else 4 (default "
                        "%(default)s)")
    g.add_argument("--exponent", type=int, metavar="E",
                   help="binade exponent instead of bits (default: from --bits)")
    p.add_argument("--cal-gain", metavar="Q", help="raw-count calibration: x = offset + gain*raw "
                   "(exact decimal or p/q; default: none, the readings are values)")
    p.add_argument("--cal-offset", metavar="Q", help="raw-count calibration offset (with "
                   "--cal-gain; default: none)")
    p.add_argument("--objective", choices=("worst", "data"), default=None,
                   help="designed tables (optimal, n-output, three-outputs): minimise the "
                        "worst-case variance over [LO, HI], or the variance averaged over "
                        "--data (default: worst, or data when --data is given)")
    p.add_argument("--data", metavar="FILE",
                   help="readings for --objective data: one decimal per line, or a CSV "
                        "column with --column (default: none)")
    p.add_argument("--column", metavar="NAME",
                   help="read --data as a CSV file with a header and take this column")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the profile file here ('-': stdout, the figures then go to "
                        "stderr; default: not written)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON "
                   "(worst_variance: the exact worst-case variance of one report's estimate "
                   "over [LO, HI], in the reading's unit squared)")
    p.add_argument("--attributes", action="store_true",
                   help="a multi-attribute profile (zeal-multi/1): give its attributes with "
                        "--attribute and --categorical (in report order); -o X.json writes "
                        "the header X.json and X.<i>.json per numeric attribute")
    p.add_argument("--attribute", dest="multi_specs", action="append",
                   type=lambda t: ("a", t), metavar="NAME:LO:HI[:MECH[:BITS]]",
                   help="with --attributes: a numeric attribute, range [LO, HI], MECH grid "
                        "(default) or a table kind, BITS an integer or auto (repeatable)")
    p.add_argument("--categorical", dest="multi_specs", action="append",
                   type=lambda t: ("c", t), metavar="NAME:C",
                   help="with --attributes: a categorical attribute of C values 0..C-1 "
                        "(2 to 63; OUE) (repeatable)")
    p.add_argument("--k", type=int, default=None, metavar="K",
                   help="with --attributes: attributes per report (default: seed 001's Eq. "
                        "12, max(1, min(d, floor(eps/2.5))))")
    from .analysis import shuffle_cli

    shuffle_cli.add_profile_arguments(p)
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("perturb", help="privatise readings (one decimal per line)",
                       description="Privatise readings, one exact decimal per line; one "
                                   "report per line on stdout (or -o FILE).")
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="profile made by `zeal profile -o FILE`")
    p.add_argument("--input", metavar="FILE",
                   help="readings file, UTF-8 ('-' or default: stdin)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the reports here ('-' or default: stdout)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="bits: the 64-bit pattern in hex; low: the m transmitted bits; "
                        "float: the double (default: bits)")
    p.add_argument("--seed", metavar="HEX", help="generator key, up to 64 hex digits "
                   "(reproducible runs only; default: the OS's secure source)")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip (and count) NaN, infinite or malformed lines instead of stopping")
    p.set_defaults(func=cmd_perturb)

    p = sub.add_parser("aggregate", help="estimate the mean from perturbed reports",
                       description="Estimate the mean from `zeal perturb` output (any "
                                   "--format).")
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="the profile the reports were made under")
    p.add_argument("--input", metavar="FILE",
                   help="reports file, one a line ('-' or default: stdin)")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("demo", help="end-to-end run without hardware: virtual boards -> "
                       "collector -> SQLite -> analysis",
                       description="Four virtual boards (the firmware on the MicroPython unix "
                                   "port, behind ptys) replay the first 5000 Aarhus humidity "
                                   "readings; the collector stores their reports; the "
                                   "analysis shows the private estimate beside the true mean.")
    p.add_argument("--db", metavar="FILE", help="keep the database here (a new file; "
                   "default: a temporary one)")
    p.add_argument("--epsilon", type=float, default=1.0, metavar="EPS",
                   help="privacy budget per reading (default %(default)g)")
    p.add_argument("--mechanism", choices=MECHANISMS, default=GRID, metavar="KIND",
                   help="the boards' mechanism: grid (the window grid) or a table profile "
                        "(%s; optimal needs scipy); default %%(default)s"
                        % ", ".join(TABLE_MECHANISMS))
    p.add_argument("--bits", type=_bits_arg, default="auto", metavar="M|auto",
                   help="bits per report (tables: 1 to 6; default %(default)s)")
    p.add_argument("--count", type=int, default=5000, metavar="N",
                   help="readings to replay (default %(default)d)")
    p.add_argument("--devices", type=int, default=4, metavar="N",
                   help="virtual boards (default %(default)d)")
    p.add_argument("--plots", metavar="DIR", help="also write PNG plots here (needs "
                   "matplotlib; default: none)")
    p.add_argument("--json", action="store_true", help="print `zeal analyze --json`'s "
                   "document (overall, devices, profiles) with true_mean and readings in "
                   "overall and each device, and a demo section (AVG* expectation, wire cost, "
                   "privacy accounting)")
    p.add_argument("--attributes", action="store_true",
                   help="multi-attribute boards: each reads the Aarhus light, humidity, noise "
                        "and temperature columns at once and reports k of them (seed 001's "
                        "Algorithm 4); the analysis gives every attribute's mean with its 99%% "
                        "interval beside the true mean (JSON: attributes)")
    p.add_argument("--mqtt", action="store_true",
                   help="the fleet path: the boards publish over MQTT to a throw-away Mosquitto "
                        "(needs the mosquitto binary), 2 collectors share them into --db "
                        "(a SQLite file or a postgresql:// URL); JSON adds a fleet section")
    shuffle_cli.add_demo_arguments(p)
    p.set_defaults(func=cmd_demo)
    from .analysis import analyze, compare, reproduce
    from .analysis.compress import command as compress
    from .board import devices, flash, stop
    from .collect import collector, shuffler

    collector.register(sub)
    shuffler.register(sub)
    analyze.register(sub)
    compress.register(sub)
    reproduce.register(sub)
    compare.register(sub)
    flash.register(sub)
    devices.register(sub)

    stop.register_stop(sub)

    p = sub.add_parser("conformance", help="run the shared vectors on CPython, MicroPython "
                       "and a board", description="Run every vector in shared_spec/vectors "
                       "through the implementations and print a table.")
    p.add_argument("--port", metavar="PORT",
                   help="also run on a board at this serial port or pyserial URL ('auto': "
                        "the one board `zeal devices` lists; default: no board)")
    p.add_argument("--target", choices=("cpython", "micropython", "firmware-cpython", "board"),
                   help="only this implementation (default: cpython and micropython, and "
                        "board with --port)")
    p.add_argument("--suite", action="append", metavar="NAME",
                   help="generator, profiles, mechanism or wire (repeatable; default all)")
    p.add_argument("--heapsize", metavar="SIZE", help="unix-port heap, e.g. 64k (default: "
                   "the port's own)")
    p.add_argument("--json", action="store_true",
                   help="print the table (and any failures) as JSON")
    p.set_defaults(func=cmd_conformance)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ZealError as exc:  # may quote a device's or a file's text: escaped
        print("zeal: %s" % shown(str(exc)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zeal: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
