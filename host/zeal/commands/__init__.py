"""The command line as one table: COMMANDS lists every `zeal` command in the order `zeal
--help` shows them; each is a module here with `add(sub)` (its parser: options, help) and
`run(args) -> int` (which imports the work it hands the arguments to only when it runs).
`common` holds what several commands share: the parser class, the options more than one
command takes, stdin/stdout or a file, the option types that check a spelling.

    build_parser()   the `zeal` parser with every command (zeal.cli.main runs it)
"""
from .. import __version__
from . import (aggregate, analyze, collect, compare, compress, conformance, demo, devices,
               events, export, flash, locate, perturb, profile, reproduce, run, shuffle, stop)
from .common import Parser

COMMANDS = (profile, perturb, aggregate, demo, collect, shuffle, analyze, export, events,
            compress, reproduce, compare, locate, flash, run, devices, stop, conformance)


def build_parser() -> Parser:
    parser = Parser(
        prog="zeal", description="Zeal-MCU: exact local differential privacy for sensor telemetry.")
    parser.add_argument("--version", action="version", version="zeal " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for command in COMMANDS:
        command.add(sub)
    return parser
