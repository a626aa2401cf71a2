"""`zeal profile`: build a profile (range, epsilon, bits per report) and print its figures;
a multi-attribute profile with --attributes, a shuffle profile with --shuffle."""
import json
import sys

from .common import STDIO, ZealError, bits_arg, fmt, open_io, progress

# zeal.analysis.shuffle_cli.DEFAULT_LEVELS and DEFAULT_T, kept here so that building the
# parser imports no analysis (tests/test_cli_fast.py checks they agree)
DEFAULT_LEVELS = 3
DEFAULT_T = 1

GRID = "grid"
# zeal.mechanism.table.profile.MECHANISMS (kept here so the parser needs no import; a test
# checks the two agree)
TABLE_MECHANISMS = ("duchi", "pm", "hm", "three-outputs", "pm-sub", "three-outputs-lp",
                    "n-output-lp", "optimal")
MECHANISMS = (GRID,) + TABLE_MECHANISMS
VARIANCE_UNIT = "(reading unit)^2"
_UNITS = {"lo": "(reading unit)", "hi": "(reading unit)", "worst_input": "(reading unit)",
          "worst_variance": VARIANCE_UNIT, "worst_variance_exact": VARIANCE_UNIT,
          "data_mean_variance": VARIANCE_UNIT, "data_mean_variance_exact": VARIANCE_UNIT,
          "bits": "bits per report", "cells": "cells", "n_cells": "cells"}


def _shuffle_arguments(p) -> None:
    """`zeal profile`'s shuffle options (the profile itself: analysis.shuffle_cli)."""
    p.add_argument("--shuffle", action="store_true",
                   help="a shuffle-mode profile (zeal-shuffle/2, seed 004): give --n, "
                        "--epsilon, --delta and --ranges (and --dims, --levels, --t)")
    p.add_argument("--dims", type=int, default=None, metavar="D",
                   help="with --shuffle: coordinates per vector, 1 to 64 (default: half the "
                        "numbers given to --ranges)")
    p.add_argument("--levels", type=int, default=None, metavar="K",
                   help="with --shuffle: levels 0..K, 1 to 15 (default %d, the paper's best)"
                        % DEFAULT_LEVELS)
    p.add_argument("--t", type=int, default=None, metavar="T",
                   help="with --shuffle: messages per reading, 1 to D, each one coordinate "
                        "(default %d)" % DEFAULT_T)
    p.add_argument("--n", type=int, default=None, metavar="N",
                   help="with --shuffle: the configured batch: the guarantee holds for a "
                        "shuffled batch of the messages of at least N readings (N t "
                        "messages)")
    p.add_argument("--delta", type=str, default=None, metavar="DELTA",
                   help="with --shuffle: the guarantee's delta, in (0, 1) (an exact decimal; "
                        "the stored float64 is rounded down)")
    p.add_argument("--ranges", nargs="+", type=float, default=None, metavar="LO HI",
                   help="with --shuffle: each coordinate's reading range, LO HI per "
                        "coordinate in order, or one LO HI for all")


def add(sub):
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
    g.add_argument("--bits", type=bits_arg, default="auto", metavar="M|auto",
                   help="bits per report; grid: 'auto' = fewest bits whose variance is within "
                        "1%% of the continuous piecewise mechanism at every input; tables: 1 "
                        "to 6, 'auto' = 1 for duchi, 2 for three-outputs(-lp), else 4 (default "
                        "%(default)s)")
    g.add_argument("--exponent", type=int, metavar="E",
                   help="binade exponent instead of bits (default: from --bits)")
    p.add_argument("--cal-gain", metavar="Q", help="raw-count calibration: x = offset + gain*raw "
                   "(exact decimal or p/q; default: none, the readings are values)")
    p.add_argument("--cal-offset", metavar="Q", help="raw-count calibration offset (with "
                   "--cal-gain; default: none)")
    p.add_argument("--objective", choices=("worst", "data"), default=None,
                   help="designed tables (optimal, n-output-lp, three-outputs-lp): minimise the "
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
    _shuffle_arguments(p)
    p.set_defaults(func=run)


def _profile_data(args):
    """(objective, readings or None) from --objective/--data/--column."""
    from ..analysis.compare import DESIGNED

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
    from ..analysis.compare import load_readings

    return objective, load_readings(args.data, args.column)


def run(args) -> int:
    from ..analysis import shuffle_cli  # zeal profile --shuffle (seed 004)

    if shuffle_cli.wants_shuffle(args):
        return shuffle_cli.cmd_profile_shuffle(args)
    if getattr(args, "attributes", False):  # a multi-attribute profile (analysis.multi_cli)
        from ..analysis.multi_cli import cmd_profile_attributes

        return cmd_profile_attributes(args)
    if getattr(args, "multi_specs", None) or getattr(args, "k", None) is not None:
        raise ZealError("--attribute, --categorical and --k need --attributes")
    if args.range is None:
        raise ZealError("give the reading range with --range LO HI")
    from ..analysis.compare import DESIGNED, build_table_profile
    from ..analysis.profile_report import profile_report
    from ..mechanism.grid import choose, profile as prof_mod

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
        from ..analysis.compare import table_bits

        bits = table_bits(mechanism, args.bits)
        objective, data = _profile_data(args)
        prof = build_table_profile(lo, hi, args.epsilon, mechanism, bits, objective=objective,
                                   data=data, calibration=calibration, progress=progress)
        doc = profile_report(prof, mechanism=mechanism, data=data,
                             objective=objective if mechanism in DESIGNED else None)
    text = prof.to_json()
    if args.output:
        with open_io(args.output, "w") as out:
            out.write(text)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        # with -o - the profile file is the result on stdout; the figures go to stderr
        shown = sys.stderr if args.output == STDIO else sys.stdout
        for key, value in doc.items():
            unit = _UNITS.get(key)
            print("%-24s %s%s" % (key, fmt(value), " " + unit if unit and value is not None
                                  else ""), file=shown)
        if args.output and args.output != STDIO:
            print("written to %s" % args.output)
    return 0
