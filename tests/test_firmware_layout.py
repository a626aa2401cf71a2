"""The firmware package's layout (issue 20): no import circle between the modules of
firmware/zealfw.

Every module is parsed (AST: imports inside functions count too, as the firmware imports its
start-up stages and set-up modules lazily on purpose). The set-up modules take what they need
from the sampling path's modules as arguments (zealfw.mech_setup's init_zeal, zealfw.wire_setup's
stop_with_status), and the start-up stages get `_forget` from the package itself, so the
graph runs one way: main -> start stages -> set-up -> sampling path.
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
    found.discard(module)
    return found


def import_graph():
    return {m: imports_of(m) for m in MODULES}


def test_every_import_names_a_module():
    graph = import_graph()
    assert all(t in MODULES for deps in graph.values() for t in deps), graph


def test_no_import_circles_in_the_firmware():
    assert circles(import_graph()) == []


@pytest.mark.parametrize("module,source", [
    # the set-up module reaching back into the sampling path it sets up
    ("mech_setup", "from .mechanism import _Uniform\n"),
    # a stage taking a helper from the loop that imports it
    ("build", "def f():\n    from .main import run\n"),
])
def test_the_check_can_fail(module, source):
    graph = import_graph()
    graph[module] = graph[module] | imports_of(module, source)
    assert circles(graph)
