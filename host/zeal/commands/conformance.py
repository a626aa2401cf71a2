"""`zeal conformance`: the shared vectors on CPython, MicroPython and a board."""
import json
import sys

from .common import ZealError


def add(sub):
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
    p.set_defaults(func=run)


def run(args) -> int:
    from ..board import conformance as C
    from ..board.devices import check_present, resolve_port

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
            from ..board.firmware import MICROPYTHON_MISSING

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
