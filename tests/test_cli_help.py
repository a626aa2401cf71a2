"""The command line is a contract: every command's options (names, metavar, nargs, default,
choices, required, help text) and description are those recorded in tests/data/cli_help.json
(tools/cli_help.py --write records them). A reorganisation of the commands (issue 21) changes
none of them by accident; an intended change re-records the file and says so in its commit.
"""
import copy
import json
import os

from conftest import ROOT, tools_module

RECORDED = os.path.join(ROOT, "tests", "data", "cli_help.json")


def _differences(recorded: dict, now: dict) -> list:
    out = []
    for cmd in sorted(recorded.keys() | now.keys()):
        a, b = recorded.get(cmd), now.get(cmd)
        if a is None or b is None:
            out.append("%s: %s" % (cmd, "new" if a is None else "gone"))
            continue
        for key in ("description", "epilog", "summary"):
            if a.get(key) != b.get(key):
                out.append("%s: %s changed" % (cmd, key))
        opts_a = {o["dest"]: o for o in a["options"]}
        opts_b = {o["dest"]: o for o in b["options"]}
        for dest in sorted(opts_a.keys() | opts_b.keys()):
            if opts_a.get(dest) != opts_b.get(dest):
                out.append("%s: option %s: %s -> %s" % (cmd, dest, opts_a.get(dest),
                                                         opts_b.get(dest)))
        if [o["dest"] for o in a["options"]] != [o["dest"] for o in b["options"]]:
            out.append("%s: options reordered (the help lists them in this order)" % cmd)
    return out


def test_every_command_keeps_its_options():
    with open(RECORDED, encoding="utf-8") as fh:
        recorded = json.load(fh)
    now = tools_module("cli_help").contract()
    diff = _differences(recorded, now)
    assert not diff, "the command line changed (re-record with tools/cli_help.py --write " \
                     "if intended):\n" + "\n".join(diff)
    assert len(now) == 20    # zeal, its 18 commands and `zeal locate publish`


def test_the_comparison_can_fail():
    now = tools_module("cli_help").contract()
    changed = copy.deepcopy(now)
    changed["zeal analyze"]["options"][-1]["help"] = "something else"
    del changed["zeal stop"]
    changed["zeal perturb"]["options"].reverse()
    diff = _differences(now, changed)
    assert any("zeal analyze: option" in d for d in diff)
    assert "zeal stop: gone" in diff
    assert any("zeal perturb: options reordered" in d for d in diff)
