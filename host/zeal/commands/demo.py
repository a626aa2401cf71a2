"""`zeal demo`: the whole chain without hardware (virtual boards, collector, store,
analysis); --attributes, --shuffle and --mqtt run the other kinds and the fleet path."""
import json

from .common import ZealError, bits_arg
from .profile import GRID, MECHANISMS, TABLE_MECHANISMS


def _shuffle_arguments(p) -> None:
    """`zeal demo`'s shuffle options (the run itself: zeal.demo.shuffle)."""
    p.add_argument("--shuffle", action="store_true",
                   help="shuffle mode: boards read Aarhus light, humidity and temperature, "
                        "send t randomised messages each reading (--t, default 1), a shuffler "
                        "strips their identities and permutes a batch of all their messages, "
                        "the "
                        "collector stores it, the analysis debiases the mean vector (JSON: "
                        "normalized_mse, mse_bound, epsilon, delta, identities_stored, "
                        "coordinates)")
    p.add_argument("--delta", type=float, default=None, metavar="DELTA",
                   help="with --shuffle: the guarantee's delta (default 1e-6)")
    p.add_argument("--t", type=int, default=None, metavar="T",
                   help="with --shuffle: messages per reading, 1 to 3 (default 1); each "
                        "reading then sends T one-coordinate messages and the batch is "
                        "--count T messages")


def add(sub):
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
    p.add_argument("--bits", type=bits_arg, default="auto", metavar="M|auto",
                   help="bits per report (tables: 1 to 6; default %(default)s)")
    p.add_argument("--count", type=int, default=None, metavar="N",
                   help="readings to replay (default 5000; with --data: every row of the file)")
    p.add_argument("--data", metavar="FILE",
                   help="replay your own readings: a CSV file (a header line naming the "
                        "columns, or none when the first line is numbers); grid and table "
                        "boards replay one column of it (--column), --attributes and "
                        "--shuffle boards a tuple of columns a tick (every column, or those "
                        "named by --column); the boards, collector, store and analysis are "
                        "the same")
    p.add_argument("--column", action="append", metavar="C",
                   help="with --data: a column to replay, by header name (or 1, 2, ... in a "
                        "file without a header); grid and table: one, needed when the file "
                        "has several; --attributes, --shuffle: repeat it for each column of "
                        "the tuple, in order (default: every column)")
    p.add_argument("--range", type=float, nargs=2, action="append", metavar=("LO", "HI"),
                   help="with --data: the range the sensor reads, fixed before collecting "
                        "(readings outside are clamped); once per column, in the columns' "
                        "order; default the data's minimum and maximum, which is fine for a "
                        "trial but not private")
    p.add_argument("--unit", action="append", metavar="TEXT",
                   help="with --data: the readings' unit, for the output (e.g. degC); once "
                        "per column, in their order (default none)")
    p.add_argument("--paper", action="store_true",
                   help="also print the Zeal paper's own estimator (AVG*: the mean of the "
                        "perturbed doubles minus the public bias) beside the estimate, with its "
                        "exact bias on this grid (default: off; the JSON always has it)")
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
    _shuffle_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis import shuffle_cli  # boards -> shuffler -> collector (zeal.demo.shuffle)
    from ..collect.store import is_url

    if args.db and is_url(args.db) and not getattr(args, "mqtt", False):
        raise ZealError("--db %s: this demo writes a new SQLite file; a PostgreSQL store is "
                        "the fleet demo's (zeal demo --mqtt --db postgresql://...)" % args.db)
    own = [o for o, v in (("--column", args.column), ("--range", args.range),
                          ("--unit", args.unit)) if v]
    if own and args.data is None:
        raise ZealError("%s: only with --data FILE" % ", ".join(own))
    other = [o for o, v in (("--attributes", getattr(args, "attributes", False)),
                            ("--mqtt", getattr(args, "mqtt", False)),
                            ("--shuffle", shuffle_cli.demo_wants_shuffle(args))) if v]
    if args.data is not None and getattr(args, "mqtt", False):
        raise ZealError("--data replays your readings through the serial boards; the fleet "
                        "demo (--mqtt) replays the shipped data only")
    tuples = None
    if args.data is not None and other:  # --attributes or --shuffle: a tuple a tick
        from ..demo.data import tuples_from_file

        tuples = tuples_from_file(args.data, args.column, args.count, args.range, args.unit)
    if args.data is None and args.count is None:
        args.count = 5000  # the shipped data's rows (with --data: every row of the file)
    if args.plots and other:
        raise ZealError("--plots draws the grid and table demo's figures; %s has none yet"
                        % ", ".join(other))
    if args.plots:
        from ..analysis.plots import require_matplotlib

        require_matplotlib("zeal demo --plots")  # before the run, not after it
    if shuffle_cli.demo_wants_shuffle(args):
        from ..demo.shuffle import cmd_demo_shuffle

        return cmd_demo_shuffle(args, tuples)
    if getattr(args, "attributes", False):  # multi-attribute boards (zeal.demo.attributes)
        from ..demo.attributes import run_multi_demo

        if args.mechanism != GRID or args.bits != "auto":
            raise ZealError("--mechanism and --bits are the grid and table boards'; a "
                            "multi-attribute report sends each attribute by its own "
                            "mechanism (seed 001's PM/HM at epsilon/k)")
        doc = run_multi_demo(db=args.db, epsilon=args.epsilon, count=args.count,
                             devices=args.devices, progress=not args.json, data=tuples)
        if args.json:
            print(json.dumps(doc, indent=1))
        return 0
    if getattr(args, "mqtt", False):  # the fleet path (zeal.demo.run_mqtt_demo)
        from ..demo import run_mqtt_demo

        doc = run_mqtt_demo(db=args.db, epsilon=args.epsilon, bits=args.bits,
                            count=args.count, devices=args.devices, progress=not args.json)
        if args.json:
            print(json.dumps(doc, indent=1))
        return 0
    from ..demo import run_demo
    from ..demo.data import scalar_from_args

    data = None
    if args.data is not None:
        data = scalar_from_args(args.data, args.column, args.count, args.range, args.unit)
    doc = run_demo(db=args.db, epsilon=args.epsilon, bits=args.bits,
                   count=args.count, devices=args.devices,
                   plots=args.plots, progress=not args.json, mechanism=args.mechanism,
                   data=data, paper=args.paper)
    if args.json:  # zeal analyze --json's document, plus the demo's own section
        print(json.dumps(doc, indent=1))
    return 0
