"""Write (or check) the command line's contract: every command's options as argparse holds
them (names, metavar, nargs, default, choices, required, help text) and its description.

    python tools/cli_help.py --write tests/data/cli_help.json   # record the contract
    python tools/cli_help.py --check tests/data/cli_help.json   # 0 when unchanged

The command line is a contract (README, scripts): tests/test_cli_help.py compares the recorded
contract with today's, so that a reorganisation of the commands changes none by accident. The
options are recorded rather than the formatted help, whose layout changes between Python
versions (3.13 prints "-o, --out FILE" where 3.11 prints "-o FILE, --out FILE").
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))


def _describe(parser) -> dict:
    def value(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return [value(x) for x in v]
        return repr(v) if not callable(v) else getattr(v, "__name__", repr(v))

    options = []
    for a in parser._actions:      # argparse keeps a parser's options here (no public API)
        if isinstance(a, argparse._SubParsersAction):
            continue
        options.append({"flags": list(a.option_strings), "dest": a.dest,
                        "action": type(a).__name__, "metavar": value(a.metavar),
                        "nargs": value(a.nargs), "const": value(a.const),
                        "default": value(a.default),
                        # a builtin type by name; any other callable (a range check, a
                        # spelling check) as "checked": its name is no part of the contract
                        "type": (a.type.__name__ if a.type in (int, float, str)
                                 else None if a.type is None else "checked"),
                        "choices": value(list(a.choices)) if a.choices else None,
                        "required": a.required, "help": a.help})
    return {"description": parser.description, "epilog": parser.epilog, "options": options}


def contract() -> dict:
    """{"zeal": the top level, "zeal CMD": each command (and "zeal CMD SUB" each command of
    a command)}: `_describe` of each parser."""
    from zeal.commands import build_parser

    parser = build_parser()
    out = {"zeal": _describe(parser)}
    _commands(parser, "zeal", out)
    return out


def _commands(parser, prefix, out):
    """Every command under `parser`, nested ones too ("zeal locate publish")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                out[prefix + " " + name] = dict(_describe(sub), summary=helps.get(name))
                _commands(sub, prefix + " " + name, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    args = ap.parse_args(argv)
    texts = contract()
    if args.write:
        with open(args.write, "w", encoding="utf-8") as fh:
            json.dump(texts, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("recorded the options of %d commands in %s" % (len(texts) - 1, args.write))
        return 0
    with open(args.check, encoding="utf-8") as fh:
        recorded = json.load(fh)
    changed = sorted(k for k in recorded.keys() | texts.keys()
                     if recorded.get(k) != texts.get(k))
    for k in changed:
        print("changed: %s" % k)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
