"""`zeal flash` and `zeal devices`: put the Zeal firmware on a MicroPython board; find boards.

What lands on the board (paths relative to its working directory, the root of its filesystem):

    lib/zealfw/*.mpy   the firmware package, compiled with mpy-cross (or *.py with --no-compile,
                       or when mpy-cross is missing); stale .py/.mpy files there are removed, as
                       a leftover foo.py would shadow the new foo.mpy
    zeal_profile.json  the profile, validated here first, written in canonical form
    zeal_config.json   the device config (keys: firmware/zealfw/main.py), from --config FILE
                       with --sensor SPEC over it
    zeal_replay.txt    with --replay-file FILE: the readings the replay source reads, one a
                       line (validated here first; see check_replay_file)
    main.py            firmware/board/main.py: runs zealfw.main.boot() after the reset

How flash talks to the board: one `python -m mpremote` command line (its CLI, not its Python
API), chaining commands with "+" so the board is opened once and the raw REPL entered once:

    mpremote connect PORT + exec PREPARE + fs cp PKG... :lib/zealfw/
             + fs cp STAGE/zeal_profile.json :zeal_profile.json + ... + fs cp main.py :main.py
             + reset

Why the CLI: it is mpremote's stable, documented interface (its transport classes say "the
API is going to change significantly"); `--dry-run` prints the very command line a user can
inspect; mpremote itself handles raw paste, chunking, skipping files whose SHA-256 already
matches, and a board that drops off USB on reset. What the CLI lacks is worked around here:
`fs mkdir` fails on an existing folder and would end the chain, so PREPARE (a short `exec`)
creates the folders and clears stale modules; mpremote's failures arrive as text (or a
traceback) and are mapped to one line. Before mpremote runs, the port is opened with pyserial
(a missing or busy port is a one-line error) and the board is stopped as `zeal stop` does
(stop_board): a board streaming Zeal frames ignores Ctrl-C, and the line "!stop" gives its
REPL back (a board at the REPL just prints a SyntaxError). A board whose watchdog runs cannot
stop it (a machine.WDT, once started, runs until reset): it sends STATUS STOPPED, then HELD,
and resets into its REPL, held there by a marker file; stop_board waits for the port to come
back and for the REPL to answer. Then one small `mpremote exec` (probe.probe_code) checks
that the board can write and remove a file, has os.urandom, and has every feature the config
asks for (board_needs: machine.WDT for watchdog_ms, machine.ADC for an adc sensor,
machine.UART for a uart output, socket for MQTT, ...), so a board without one is named in one
line, with what needs it and what to do instead, before anything is copied: not an
`[Errno 19]` half-way through the copy, nor a board that cannot start what it was flashed
for.

.mpy compatibility: bytecode-only .mpy files load on any MicroPython with the same .mpy
version (v6: MicroPython 1.19 and later; docs.micropython.org reference/mpyfiles). On older
firmware use --no-compile.

Its parts, each in its own module: flash_config (the device config and what it needs of the
board), flash_mqtt (the MQTT output), flash_replay (a --replay-file), flash_plan (the steps and
the mpremote command line); this module runs the plan and is the command.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading

from ..errors import ZealError
from .flash_config import (BOARD_REPLAY, CONFIG_KEYS, RP2040_TEMP, SENSOR_FORMS, WDT_MAX_MS,
                           board_needs, build_config, needs_text, parse_sensor)
from .flash_mqtt import BOARD_CA
from .flash_plan import STAGE, mpremote_argv, plan_flash
from .flash_replay import check_multi_replay_file, check_replay_file
from .probe import mpremote_error, run_probe
from .stop import is_device_path, stop_board, stop_text

# `zeal flash`'s API, importable from here wherever it is defined (commands/flash.py and the
# tests import these names from zeal.board.flash)
__all__ = ["BOARD_CA", "BOARD_REPLAY", "CONFIG_KEYS", "RP2040_TEMP", "SENSOR_FORMS", "STAGE",
           "WDT_MAX_MS", "board_needs", "build_config", "check_multi_replay_file",
           "check_replay_file", "cmd_flash", "flash", "parse_sensor", "plan_doc", "plan_flash",
           "run_mpremote"]


# ---- running it ------------------------------------------------------------------------------

def _have_mpremote():
    # whether the optional mpremote is installed, without importing it (find_spec)
    return importlib.util.find_spec("mpremote") is not None


def run_mpremote(argv, port, out, timeout=300, stage=None):
    """Run one mpremote command line, echoing its per-file lines; ZealError on failure."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, errors="replace", env=env)
    except OSError as exc:
        raise ZealError("cannot run mpremote: %s" % exc) from None
    killed = []
    watchdog = threading.Timer(timeout, lambda: (killed.append(1), proc.kill()))
    watchdog.start()
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            text = line.rstrip()
            if text.startswith(("cp ", "Up to date")):
                if stage:
                    text = text.replace(stage + os.sep, "")
                print("      " + text, file=out, flush=True)
        proc.wait()
    finally:
        watchdog.cancel()
        proc.stdout.close()
    if killed:
        raise ZealError("mpremote did not finish on %s within %d s" % (port, timeout))
    if proc.returncode != 0:
        raise ZealError(mpremote_error("".join(seen), port))


def flash(port, profile_path, sensor=None, config=None, compile=True, *, dry_run=False,
          out=None, mpy_cross=None, firmware=None, timeout=300, stop_wait=2.0,
          watchdog_ms=None, replay_file=None, result_out=None, mqtt=None):
    """Compile, stage and copy the firmware, profile and config to the board on `port`, then
    reset it. With dry_run, print every step and command on `out` (default stdout: the plan
    is the result) and touch no board. Otherwise progress goes to `out` (default stderr) and
    the closing "flashed ..." line to `result_out` (None: to `out`; False: not printed). Returns the steps
    (with the real stage folder when not a dry run)."""
    from .devices import check_present
    from .firmware import ConformanceError, compile_tree

    out = out or (sys.stdout if dry_run else sys.stderr)  # the plan is a result; progress not
    if dry_run:
        steps = plan_flash(port, profile_path, sensor, config, compile, mpy_cross=mpy_cross,
                           firmware=firmware, watchdog_ms=watchdog_ms, replay_file=replay_file,
                           stop_wait=stop_wait, mqtt=mqtt)
        print("zeal flash --dry-run: nothing is sent to %s" % port, file=out)
        if is_device_path(port) and not os.path.exists(port):
            print("note: %s does not exist now" % port, file=out)
        if not _have_mpremote():
            print("note: mpremote is not installed (pip install mpremote)", file=out)
        _print_steps(steps, out)
        print("%s: a temporary folder made when flashing" % STAGE, file=out)
        print("files on the board:", file=out)
        for local, remote in steps[-1].files:
            print("  :%-26s <- %s" % (remote, local), file=out)
        return steps

    if not _have_mpremote():
        raise ZealError("zeal flash needs mpremote: pip install mpremote "
                        "(or pip install 'zeal-mcu[deploy]')")
    with tempfile.TemporaryDirectory(prefix="zeal-flash-") as stage:
        steps = plan_flash(port, profile_path, sensor, config, compile, stage=stage,
                           mpy_cross=mpy_cross, firmware=firmware, watchdog_ms=watchdog_ms,
                           replay_file=replay_file, stop_wait=stop_wait, mqtt=mqtt)
        check_present(port)  # before any work: the one missing-port message
        work = [s for s in steps if s.kind != "note"]
        for s in steps:
            if s.kind == "note":
                print("note: " + s.label, file=out)
        for i, step in enumerate(work, 1):
            print("[%d/%d] %s" % (i, len(work), step.label), file=out, flush=True)
            if step.kind == "compile":
                try:
                    compile_tree(stage, sources=step.sources, mpy_cross=step.tool)
                except ConformanceError as exc:
                    raise ZealError(str(exc)) from None
            elif step.kind == "write":
                if isinstance(step.data, bytes):  # the CA certificate (DER)
                    with open(step.path, "wb") as fh:
                        fh.write(step.data)
                else:
                    with open(step.path, "w", encoding="utf-8", newline="\n") as fh:
                        fh.write(step.data)
            elif step.kind == "port":
                print("      " + stop_text(stop_board(step.port, wait=step.wait, out=out),
                                            step.port, step.wait), file=out, flush=True)
            elif step.kind == "probe":
                arch = run_probe(step.argv, step.port, timeout=timeout, needs=step.needs)
                print("      the board can write files and has %s" % needs_text(step.needs),
                      file=out)
            elif step.kind == "native":
                _compile_native(step, arch, stage, steps[-1], out)
            elif step.kind == "mpremote":
                run_mpremote(step.argv, step.port, out, timeout=timeout, stage=stage)
        if result_out is not False:
            print("flashed %s: %d files; the board resets and runs main.py"
                  % (port, len(steps[-1].files)), file=result_out or out)
    return steps


def _compile_native(step, arch, stage, copy, out):
    """The native modules for the board's architecture `arch` (the probe's), or, on a board
    that runs no native code, none: they are then left out of the `copy` step (the firmware
    falls back to hashlib, zealfw/words.py)."""
    from .firmware import ConformanceError, compile_tree

    if arch is None:
        gone = {os.path.join(stage, *rel[:-3].split("/")) + ".mpy" for rel, _ in step.sources}
        pkg_files, root_files, mip = copy.parts
        pkg_files = [p for p in pkg_files if p not in gone]
        copy.parts = (pkg_files, root_files, mip)
        copy.argv = mpremote_argv(copy.port, pkg_files, root_files, mip)
        copy.files = [f for f in copy.files if f[0] not in gone]
        print("      the board runs no native code: left out (its generator allocates ~190 "
              "B more a report)", file=out)
        return
    try:
        compile_tree(stage, sources=step.sources, mpy_cross=step.tool, arch=arch)
    except ConformanceError as exc:
        raise ZealError(str(exc)) from None
    print("      for %s" % arch, file=out)


def _print_steps(steps, out):
    work = [s for s in steps if s.kind != "note"]
    for s in steps:
        if s.kind == "note":
            print("note: " + s.label, file=out)
    for i, step in enumerate(work, 1):
        print("[%d/%d] %s" % (i, len(work), step.label), file=out)
        for line in step.lines():
            print("      " + line, file=out)


# ---- command line ----------------------------------------------------------------------------
def plan_doc(port, steps):
    """The plan of `zeal flash --dry-run --json`: notes, numbered steps with their exact
    commands (argv lists) or file contents, and the files that land on the board."""
    work = [s for s in steps if s.kind != "note"]
    doc = {"port": port, "dry_run": True,
           "port_exists": not (is_device_path(port) and not os.path.exists(port)),
           "mpremote_installed": _have_mpremote(),
           "notes": [s.label for s in steps if s.kind == "note"], "steps": []}
    for i, step in enumerate(work, 1):
        item = {"step": i, "kind": step.kind, "label": step.label}
        if step.kind == "compile":
            item["commands"] = [list(c) for c in step.commands]
        elif step.kind in ("mpremote", "probe"):
            item["argv"] = list(step.argv)
            if step.kind == "probe":
                item["needs"] = list(step.needs)  # besides a filesystem and os.urandom
        elif step.kind == "write":
            item["board_file"] = os.path.basename(step.path)
            if step.show:
                item["text"] = step.shown or step.data
        elif step.kind == "port":
            item["wait_s"] = step.wait
        doc["steps"].append(item)
    doc["files"] = [{"board": remote, "local": local} for local, remote in steps[-1].files]
    doc["stage"] = "%s: a temporary folder made when flashing" % STAGE
    return doc


def cmd_flash(args):
    from .devices import resolve_port

    port = resolve_port(args.port)
    mqtt = None
    if args.mqtt is not None:
        mqtt = {"url": args.mqtt, "user": args.mqtt_user,
                "password_file": args.mqtt_password_file, "wifi": args.wifi,
                "wifi_password_file": args.wifi_password_file, "ca_file": args.mqtt_ca}
    elif any(v is not None for v in (args.mqtt_user, args.mqtt_password_file, args.wifi,
                                      args.wifi_password_file, args.mqtt_ca)):
        raise ZealError("--wifi, --mqtt-user, --mqtt-ca and the password files need --mqtt URL")
    if args.dry_run and args.json:
        steps = plan_flash(port, args.profile, args.sensor, args.config, not args.no_compile,
                           watchdog_ms=args.watchdog_ms, replay_file=args.replay_file,
                           stop_wait=args.stop_wait, mqtt=mqtt)
        print(json.dumps(plan_doc(port, steps), indent=1))
        return 0
    steps = flash(port, args.profile, sensor=args.sensor, config=args.config,
                  compile=not args.no_compile, dry_run=args.dry_run,
                  watchdog_ms=args.watchdog_ms, replay_file=args.replay_file,
                  stop_wait=args.stop_wait, result_out=False if args.json else sys.stdout,
                  mqtt=mqtt)
    if args.json and not args.dry_run:
        print(json.dumps({"port": port, "flashed": True,
                          "files": [remote for _, remote in steps[-1].files]}, indent=1))
    return 0

