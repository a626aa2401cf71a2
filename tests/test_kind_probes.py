"""No code outside the kind registry asks which kind of profile it holds (issue 20).

A probe is: a comparison of a `.kind` (or getattr(x, "kind", ...), or kind_of(...)) with a
kind's name ("grid", "table", "multi", "shuffle"); `is_table(...)`; getattr(x, "kind");
isinstance(x, <a profile class>). The registry (zeal.mechanism.kinds) and each kind's own
sub-package (zeal.mechanism.grid, .table, .multi, .shuffle) may; everything else asks the kind object (kinds.of(profile)) what it needs.

A layer may keep its own table of what it does per kind, keyed by the kind objects
(`kinds.of(profile) is kinds.MULTI` in the multi-attribute analysis and conformance suite):
that is not a probe of the profile. REMAINING (file: count) would list probes still to be
replaced; it is empty.
"""
import ast
import os

from conftest import HOST

PACKAGE = os.path.join(HOST, "zeal")
KIND_NAMES = {"grid", "table", "multi", "shuffle"}
PROFILE_CLASSES = {"Profile", "TableProfile", "MultiProfile", "ShuffleProfile"}
# the registry, and each kind's own sub-package of zeal.mechanism (a kind may know its own
# type; multi knows the grid and table attributes it is made of)
OWNER_DIRS = ("mechanism/grid/", "mechanism/table/", "mechanism/multi/", "mechanism/shuffle/")
OWNERS = {"mechanism/kinds.py"}
REMAINING = {}


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _name(node):
    return getattr(node, "id", getattr(node, "attr", ""))


def _is_kind(node):
    if isinstance(node, ast.Attribute) and node.attr == "kind":
        return True
    if isinstance(node, ast.Call) and _name(node.func) in ("getattr", "kind_of"):
        return _name(node.func) == "kind_of" or (
            len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "kind")
    return False


def probes(source: str) -> list:
    """(line, what) of every kind probe in a module's source, one a line."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left] + node.comparators
            if any(_is_kind(s) for s in sides) and any(_strings(s) & KIND_NAMES
                                                       for s in sides):
                out.add((node.lineno, "a kind compared with a kind's name"))
        elif isinstance(node, ast.Call):
            f = _name(node.func)
            if f == "is_table":
                out.add((node.lineno, "is_table()"))
            elif f == "getattr" and _is_kind(node):
                out.add((node.lineno, "getattr(..., 'kind')"))
            elif f == "isinstance" and len(node.args) == 2:
                arg = node.args[1]
                names = {_name(e) for e in (arg.elts if isinstance(arg, ast.Tuple) else [arg])}
                if names & PROFILE_CLASSES:
                    out.add((node.lineno, "isinstance(..., a profile class)"))
    return sorted(dict(sorted(out, reverse=True)).items())


def test_the_detector_finds_each_form():
    src = ("a = p.kind == 'multi'\nb = getattr(p, 'kind', 'grid') in ('table', 'x')\n"
           "c = is_table(p)\nd = isinstance(p, MultiProfile)\ne = kind_of(t) == 'shuffle'\n"
           "f = s.kind == 'adc'\ng = kinds.of(p).double_reports\n")
    assert [line for line, _ in probes(src)] == [1, 2, 3, 4, 5]


def test_no_kind_probe_outside_the_registry():
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
            if rel in OWNERS or rel.startswith(OWNER_DIRS):
                continue
            with open(path, encoding="utf-8") as fh:
                hits = probes(fh.read())
            if hits:
                found[rel] = hits
    over = {rel: hits for rel, hits in found.items() if len(hits) > REMAINING.get(rel, 0)}
    assert not over, "kind probes outside zeal.mechanism.kinds (ask kinds.of(profile)): " + \
        "; ".join("%s: %s" % (rel, ", ".join("line %d %s" % h for h in hits))
                  for rel, hits in over.items())
    under = {rel: n for rel, n in REMAINING.items() if len(found.get(rel, ())) < n}
    assert not under, "probes removed: lower REMAINING for %s" % under
