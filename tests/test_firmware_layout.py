"""The firmware package's layout (issue 20): no import circle between the modules of
firmware/zealfw.

Every module is parsed (AST: imports inside functions count too, as the firmware imports its
start-up stages and set-up modules lazily on purpose). The set-up modules take what they need
from the sampling path's modules as arguments (zealfw.mech_setup's init_zeal, zealfw.wire_setup's
stop_with_status), and the start-up stages get `forget` from the package itself, so the
graph runs one way: main -> start stages -> set-up -> sampling path.

No module reads another module's private (underscore) attribute: no `from .m import _x`, no
`m._x`, no `obj._x` of an object of another module's class (what a module reads of an object
other than `self` must be public, unless the module itself stores that attribute).
"""
import ast
import os

import pytest

from conftest import ROOT
from test_layout import circles

PACKAGE = os.path.join(ROOT, "firmware", "zealfw")
MODULES = sorted(n[:-3] for n in os.listdir(PACKAGE) if n.endswith(".py"))


def imports_of(module, source=None):
    """The zealfw modules `module` imports anywhere in its source ("__init__" for the
    package itself)."""
    if source is None:
        with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as fh:
            source = fh.read()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "zealfw":
                    found.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1 or (node.level == 0 and node.module
                                   and node.module.split(".")[0] == "zealfw"):
                mod = node.module if node.level == 1 else ".".join(node.module.split(".")[1:])
                if mod:
                    found.add(mod.split(".")[0])
                else:  # from . import x: a module, or a name of the package's __init__
                    found.update(a.name if a.name in MODULES else "__init__"
                                 for a in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "__import__" and node.args
              and _dynamic_zealfw(node.args[0])):
            found.update(named_modules())
    found.discard(module)
    return found


def _dynamic_zealfw(arg):
    # __import__("zealfw." + name, ...): a module named at run time
    return (isinstance(arg, ast.BinOp) and isinstance(arg.left, ast.Constant)
            and arg.left.value == "zealfw.")


def named_modules():
    """Every zealfw module some string literal of the package names ("build", "tsample", ...):
    what an __import__("zealfw." + name) may import (the start's stages and the samplers are
    named by each kind's loader, the loaders by zealfw.start.prepare's sniff). Over-approximated on purpose:
    a module that imports by name counts as importing all of them."""
    names = set()
    for m in MODULES:
        with open(os.path.join(PACKAGE, m + ".py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        names.update(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and n.value in MODULES)
    return names


def import_graph():
    return {m: imports_of(m) for m in MODULES}


def test_the_start_imports_its_stages_by_name():
    # main.run imports the loader start.prepare's sniff names and the stage and sampler the loader
    # names: the graph counts them (else a circle through them would go unseen)
    assert {"build", "mstart", "profile", "tprofile", "mprofile", "sprofile", "mechanism",
            "tsample", "msample", "srand"} <= imports_of("main")


def test_every_import_names_a_module():
    graph = import_graph()
    assert all(t in MODULES for deps in graph.values() for t in deps), graph


def test_no_import_circles_in_the_firmware():
    assert circles(import_graph()) == []


@pytest.mark.parametrize("module,source", [
    # the set-up module reaching back into the sampling path it sets up
    ("mech_setup", "from .mechanism import Uniform\n"),
    # a stage taking a helper from the loop that imports it
    ("build", "def f():\n    from .main import run\n"),
])
def test_the_check_can_fail(module, source):
    graph = import_graph()
    graph[module] = graph[module] | imports_of(module, source)
    assert circles(graph)


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def private_reads(module, source=None):
    """Where `module` reads a private attribute of another module: an import of a private
    name from a zealfw module (or the package), or a load of `x._a` with x not `self` and
    `_a` neither defined nor stored by this module ("module:line what")."""
    if source is None:
        with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as fh:
            source = fh.read()
    tree = ast.parse(source)
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
                node.level == 1 or (node.module or "").split(".")[0] == "zealfw"):
            found += ["%s:%d from %s import %s" % (module, node.lineno, node.module or ".",
                                                   a.name)
                      for a in node.names if _private(a.name)]
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
              and _private(node.attr) and node.attr not in own
              and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
            found.append("%s:%d %s.%s" % (module, node.lineno, ast.unparse(node.value),
                                          node.attr))
    return found


def test_no_module_reads_another_modules_private_attribute():
    assert [f for m in MODULES for f in private_reads(m)] == []


@pytest.mark.parametrize("module,source", [
    ("tsample", "from . import mechanism\nu = mechanism._Uniform(3)\n"),
    ("profile", "from .pfile import _f64\n"),
    ("main", "def f(sender):\n    return sender._since_hello\n"),
    ("main", "from . import _forget\n"),
])
def test_the_private_check_can_fail(module, source):
    assert private_reads(module, source)


# ---- no kind probe in the main loop --------------------------------------------------------------
# The loop asks the loader's record (the start's last stage, the sampler's module, the
# numbers by name: zealfw.profile.numbers) and the
# sampler (reports a tick, perturb_*, low), never which kind it runs: no type() or
# isinstance(), no hasattr() and no getattr() with a default on anything but the source (a
# source may have no close()), and `is None` only on the loop's own optional parts: the
# control watch, a pending SENSOR status, the watchdog, the keyboard interrupt, a source's
# close and the end of the readings (a source's read() returns None when the replay ends).
OPTIONAL = {"control", "sensor_msg", "wdt", "kbd", "close", "value"}


def kind_probes(source):
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in ("type", "isinstance", "hasattr") or (
                    name == "getattr" and len(node.args) > 2
                    and not (isinstance(node.args[0], ast.Name)
                             and node.args[0].id == "source")):
                found.append("%d: %s()" % (node.lineno, name))
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if (isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant)
                        and right.value is None
                        and not (isinstance(node.left, ast.Name)
                                 and node.left.id in OPTIONAL)):
                    found.append("%d: %s" % (node.lineno, ast.unparse(node)))
    return found


def test_no_kind_probe_in_the_main_loop():
    with open(os.path.join(PACKAGE, "main.py"), encoding="utf-8") as fh:
        assert kind_probes(fh.read()) == []


@pytest.mark.parametrize("source", [
    "if type(p) is int:\n    pass\n",
    "if p is None:\n    pass\n",
    "Zeal = getattr(prof, 'table', None)\n",
    "if isinstance(Zeal, tuple):\n    pass\n",
])
def test_the_kind_probe_check_can_fail(source):
    assert kind_probes(source)
