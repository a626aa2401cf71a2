"""The host package's layout (issue 8): imports point down the data flow, never back up.

Every module of host/zeal is parsed (AST, so function-level imports count too, and nothing is
imported). A module's layer is its sub-package (zeal.mechanism.grid.profile -> "mechanism"); the
top-level modules are layers of their own. The test fails on any import from a later layer
into an earlier one, and on any circle between modules (within a layer too).
"""
import ast
import os

import pytest

from conftest import ROOT

HOST = os.path.join(ROOT, "host")
PACKAGE = os.path.join(HOST, "zeal")

# The layer order, declared once: each layer may import only itself and the layers before
# it. It follows the data: errors and text (how device- or file-supplied text is shown; both
# shared by all), where the contract (shared_spec) is, the mechanism a reading goes through, the
# paper's float reference, the wire that carries reports, the board that sends them, their
# collection into a store, and the analysis of the store; the demo, the commands (one module
# each) and the command line on top.
# "zeal" is the package's __init__ (its version), which imports nothing.
LAYERS = ("zeal", "errors", "text", "contract", "mechanism", "paper", "wire", "board", "collect",
          "analysis", "demo", "live", "commands", "cli", "__main__")


def _modules():
    """{dotted module name: path} for every .py file of the package."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), HOST)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(folder, name)
    return out


MODULES = _modules()


def _is_package(module):
    return MODULES[module].endswith("__init__.py")


def _targets(module, node):
    """[(zeal module, name taken from it or None)] for an import node in `module`."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names if a.name.split(".")[0] == "zeal"]
    if node.level:
        base = module.split(".")
        if not _is_package(module):
            base = base[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if target.split(".")[0] != "zeal":
        return []
    # `from zeal.x import y`: y is a module when zeal.x.y is one, else a name in zeal.x
    return [(target + "." + a.name, None) if target + "." + a.name in MODULES
            else (target, a.name) for a in node.names]


def _resolve(module, node):
    """The zeal modules a `from ... import ...` or `import ...` node names, from `module`."""
    return [target for target, _ in _targets(module, node)]


def imports_of(module, source=None):
    """The zeal modules `module` imports anywhere in its source (top level or in functions)."""
    if source is None:
        with open(MODULES[module], encoding="utf-8") as fh:
            source = fh.read()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(_resolve(module, node))
    found.discard(module)
    return found


def layer(module):
    parts = module.split(".")
    return "zeal" if len(parts) == 1 else parts[1]


def upward_imports(graph):
    """[(importer, imported)] where the imported module's layer comes after the importer's."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted((a, b) for a, deps in graph.items() for b in deps
                  if rank[layer(b)] > rank[layer(a)])


def circles(graph):
    """The import circles of `graph` ({module: set of modules}), each as a list of modules."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def import_graph():
    return {m: imports_of(m) for m in MODULES}


def _names_bound(module):
    """Names a module binds at its top level (definitions, assignments, imports)."""
    with open(MODULES[module], encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def test_every_import_names_something_that_exists():
    """Each imported zeal module exists, and each name taken from a package is a sub-module
    or bound in its __init__ (a stale `from . import profile` after a move fails here, not only
    when its function first runs)."""
    assert {layer(m) for m in MODULES} <= set(LAYERS), sorted({layer(m) for m in MODULES}
                                                              - set(LAYERS))
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target, name in _targets(module, node):
                assert target in MODULES, (module, node.lineno, target)
                if name is not None and name != "*":
                    assert name in _names_bound(target), (module, node.lineno, target, name)


def test_imports_point_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_sub_packages_name_their_api():
    for m in MODULES:
        if _is_package(m) and m != "zeal":
            with open(MODULES[m], encoding="utf-8") as fh:
                doc = ast.get_docstring(ast.parse(fh.read()))
            assert doc and len(doc.splitlines()) >= 3, m


@pytest.mark.parametrize("module, source, problem", [
    # an upward import hidden in a function, as the old profile -> analysis one was
    ("zeal.mechanism.grid.profile", "def f():\n    from ...analysis import plots\n", "upward"),
    ("zeal.wire.codec", "from zeal.board import stop\n", "upward"),
    # a circle inside one layer (grid.exact already imports grid.profile)
    ("zeal.mechanism.grid.profile", "from . import exact\n", "circle"),
])
def test_the_checks_can_fail(module, source, problem):
    """A deliberately bad import is caught: the checks are not vacuous."""
    graph = import_graph()
    graph[module] = graph[module] | imports_of(module, source)
    if problem == "upward":
        assert upward_imports(graph)
    else:
        assert circles(graph)


DATABASE_MODULES = ("sqlite3", "psycopg")


def database_touches(module, source=None):
    """Where `module` reaches a database itself: an import of a database driver, or the
    store's engine (the attribute `_engine`, which holds the connection)."""
    if source is None:
        with open(MODULES[module], encoding="utf-8") as fh:
            source = fh.read()
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        if any(n.split(".")[0] in DATABASE_MODULES for n in names):
            found.append((module, node.lineno, "imports " + ", ".join(names)))
        if isinstance(node, ast.Attribute) and node.attr == "_engine":
            found.append((module, node.lineno, "reaches the store's engine"))
    return found


def test_only_the_store_touches_a_database():
    """The store (zeal.collect.store) is the one way to a database: no other module imports
    a driver or reaches the store's connection (issue 21)."""
    outside = [m for m in MODULES if not (m + ".").startswith("zeal.collect.store.")]
    assert [t for m in outside for t in database_touches(m)] == []
    # the check can fail
    assert database_touches("zeal.analysis.decode", "import sqlite3\n")
    assert database_touches("zeal.demo.shuffle", "def f(store):\n    store._engine.db\n")
