"""`zeal stop`: stop a streaming board and give its REPL back."""
from .common import seconds_arg
from ..board.devices import PORT_HELP


def add(sub):
    p = sub.add_parser(
        "stop", help="stop a streaming board and give its REPL back",
        description="Send the line !stop to a board streaming Zeal frames and wait for its "
                    "STOPPED status and REPL prompt. A board whose watchdog runs cannot stop "
                    "it: it sends HELD and resets into a held REPL, which this waits for.")
    p.add_argument("--port", required=True, metavar="PORT", help=PORT_HELP)
    p.add_argument("--baud", type=int, default=115200, metavar="BAUD",
                   help="line speed for a UART link; USB boards ignore it (default %(default)s)")
    p.add_argument("--wait", type=seconds_arg, default=5.0, metavar="S",
                   help="seconds to wait for the board's answer (default %(default)g; a board "
                        "reads !stop once per sampling tick, so give more than its period)")
    p.add_argument("--json", action="store_true",
                   help="print the outcome as JSON: port, state (stopped, held, repl), "
                        "status_codes (STATUS codes seen), message")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..board.stop import cmd_stop

    return cmd_stop(args)
