"""`zeal run`: flash a board, collect its frames with a live estimate, Ctrl-C stops it."""
from .common import positive, seconds_arg
from ..board.devices import PORT_HELP
from .collect import DEFAULT_BAUD


def add(sub):
    p = sub.add_parser(
        "run", help="one board in one step: flash, collect with a live estimate, Ctrl-C "
                    "stops the board",
        description="Flash the board (as `zeal flash`), then collect its frames into --db (as "
                    "`zeal collect`) with a live line: reports, rate and the running "
                    "estimate with its 99% interval. The run ends when the board stops (a "
                    "replay file run out), at --duration or --reports, or on Ctrl-C, which "
                    "sends the board !stop, stores what it sent until its STATUS STOPPED, "
                    "and leaves it at its REPL. The summary and the estimate follow.")
    p.add_argument("--port", required=True, metavar="PORT", help=PORT_HELP)
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="profile made by `zeal profile -o FILE` (any kind)")
    p.add_argument("--db", default="zeal.db", metavar="FILE|URL",
                   help="the store: a SQLite file (created if missing; an existing one is "
                        "added to) or a postgresql:// URL (default %(default)s)")
    p.add_argument("--sensor", metavar="SPEC",
                   help="as `zeal flash --sensor` (adc:PIN[:ATTEN], rp2040-temp, replay, "
                        "callable:MODULE.FUNCTION; default: the config's, else replay)")
    p.add_argument("--config", metavar="FILE",
                   help="device config JSON, as `zeal flash --config` (default: none)")
    p.add_argument("--replay-file", metavar="FILE",
                   help="readings for the replay sensor, as `zeal flash --replay-file`; the "
                        "run ends when the board has replayed them (default: none)")
    p.add_argument("--watchdog-ms", type=int, metavar="MS",
                   help="as `zeal flash --watchdog-ms` (default: the config's, else none)")
    p.add_argument("--no-flash", action="store_true",
                   help="the board is flashed already: only collect (and stop it on Ctrl-C)")
    p.add_argument("--no-compile", action="store_true",
                   help="copy .py sources instead of .mpy (MicroPython older than 1.19)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--duration", type=positive(float), metavar="S",
                   help="stop collecting after S seconds (the board streams on; default: "
                        "until the board stops or Ctrl-C)")
    g.add_argument("--reports", type=positive(int), metavar="N",
                   help="stop collecting once N reports are stored (default: no limit)")
    p.add_argument("--every", type=positive(float), default=2.0, metavar="S",
                   help="seconds between two estimates on the live line (default %(default)g; "
                        "a large store is re-read less often)")
    p.add_argument("--unit", metavar="TEXT",
                   help="the readings' unit, shown with the estimate (default none)")
    p.add_argument("--stop-wait", type=seconds_arg, default=5.0, metavar="S",
                   help="after Ctrl-C, seconds to wait for the board's STATUS STOPPED (it "
                        "reads !stop once per sampling tick; default %(default)g)")
    p.add_argument("--baud", type=int, default=DEFAULT_BAUD, metavar="BAUD",
                   help="line speed for a UART link; USB boards ignore it (default "
                        "%(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print the collect summary as JSON with an \"analysis\" key "
                        "(`zeal analyze --json`'s document; progress stays on stderr)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..live import cmd_run

    return cmd_run(args)
