"""`zeal devices`: the serial ports that look like MicroPython boards."""


def add(sub):
    p = sub.add_parser(
        "devices", help="list serial ports that look like MicroPython boards",
        description="List serial ports whose USB VID/PID belongs to common MicroPython "
                    "boards or USB-UART bridges, or that say MicroPython.")
    p.add_argument("--all", action="store_true", help="list every serial port")
    p.add_argument("--json", action="store_true", help="print rows as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..board.devices import cmd_devices

    return cmd_devices(args)
