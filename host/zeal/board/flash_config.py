"""The device config that `zeal flash` writes (zeal_config.json): --config FILE with --sensor,
--watchdog-ms, --replay-file and --mqtt over it, checked as the board checks it; and what it
needs of the board's MicroPython (board_needs, which the probe looks for before a copy)."""
import json
import re
from fractions import Fraction

from ..errors import ZealError
from .flash_mqtt import check_mqtt_output, mqtt_output

BOARD_PROFILE = "zeal_profile.json"
BOARD_REPLAY = "zeal_replay.txt"
# RP2040's machine.WDT takes at most 8388 ms (its 24-bit counter at 2 ticks per us); ESP32
# allows more, but a config that must run on any board keeps to the smaller one.
WDT_MAX_MS = 8388

# The device config's keys (_DEFAULTS in the firmware's start-up module; a test keeps them
# equal).
CONFIG_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "sensor",
               "output", "watchdog_ms", "start_delay_ms", "crash_reset_ms", "profile", "seed",
               "vector_mode", "vector_key", "debug", "write_timeout_ms")
CONFIG_MAX = 1 << 16  # bytes: the device reads its config whole into RAM
_INT_KEYS = ("period_ms", "batch", "hello_every", "status_every", "max_reports", "watchdog_ms",
             "start_delay_ms", "crash_reset_ms", "write_timeout_ms")
SENSOR_FORMS = ("adc:PIN[:ATTEN], rp2040-temp, replay, callable:MODULE.FUNCTION, or a sensor "
                "object as JSON, e.g. '{\"kind\": \"gps\", \"box\": [\"-1\", \"1\", "
                "\"50\", \"52\"], \"order\": 12, \"uart\": {\"id\": 0}}'")
# the RP2040's internal temperature sensor is ADC channel 4 (not a pin)
RP2040_TEMP = {"kind": "adc", "channel": 4}
RP2040_TEMP_EXAMPLE = "firmware/examples/rp2040_temp.json"
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
# ESP32 machine.ADC.ATTN_* values; RP2040 has no attenuation (the firmware skips it there)
_ATTEN_NAMES = {"0db": 0, "2.5db": 1, "2_5db": 1, "6db": 2, "11db": 3}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# The GPS sensor (firmware/zealfw/src_gps.py checks the same on the board): a box bound is an
# exact decimal string of at most 20 characters; the Hilbert order 1..16 (4^16 - 1 < 2^32)
_GPS_KEYS = ("kind", "box", "order", "sentence", "uart", "file")
_GPS_UART_KEYS = ("id", "baudrate", "rx", "tx")
_GPS_DECIMAL = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?\Z")
GPS_ORDER_MAX = 16


def parse_sensor(spec):
    """The config's "sensor" object from a --sensor SPEC."""
    def bad(why):
        return ZealError("bad --sensor %r: %s (accepted: %s)" % (spec, why, SENSOR_FORMS))

    if (spec or "").strip().startswith("{"):  # a sensor object, checked as in a config
        try:
            sensor = json.loads(spec)
        except ValueError as exc:
            raise bad("not valid JSON: %s" % str(exc)[:80]) from None
        _check_sensor(sensor, "--sensor")
        return sensor
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
            "callable": ("module", "function"), "gps": ("box", "order")}.get(kind)
    if need is None:
        raise ZealError("%s: sensor kind must be adc, rp2040_temp, replay or callable, or gps "
                        "(a GPS module's NMEA sentences), not %r" % (where, kind))
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
    if kind in ("replay", "gps") and "file" in sensor:
        name = sensor["file"]
        if not isinstance(name, str) or not _FILE_NAME.match(name) or len(name) > 64:
            raise ZealError("%s: %s file must be a plain file name on the board, like "
                            "%s" % (where, kind, BOARD_REPLAY))
    if kind == "gps":
        check_gps_sensor(sensor, where)


def _gps_int(obj, key, lo, hi, where, what):
    v = obj[key]
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ZealError("%s: %s %s must be an integer in [%d, %d]" % (where, what, key, lo, hi))
    return v


def check_gps_sensor(sensor, where="config"):
    """The GPS sensor object as the board checks it (zealfw.src_gps), as ZealError:
    {"kind": "gps", "box": [LON_LO, LON_HI, LAT_LO, LAT_HI] (exact decimal strings, lo < hi),
    "order": 1..16, optional "sentence" ("GGA", the default, or "RMC"), and "uart": {"id",
    optional "baudrate" (9600), "rx", "tx"} for a module on a UART, or "file": a file of
    sentences on the board, or neither (sentences on the serial line). Returns the box as
    Fractions (lon_lo, lon_hi, lat_lo, lat_hi)."""
    unknown = sorted(set(sensor) - set(_GPS_KEYS))
    if unknown:
        raise ZealError("%s: unknown gps sensor key(s) %s (known: %s)"
                        % (where, ", ".join(map(str, unknown)), ", ".join(_GPS_KEYS)))
    box = sensor.get("box")
    if not isinstance(box, list) or len(box) != 4 or not all(
            isinstance(b, str) and len(b) <= 20 and _GPS_DECIMAL.match(b) for b in box):
        raise ZealError("%s: gps box must be [LON_LO, LON_HI, LAT_LO, LAT_HI], each an exact "
                        "decimal string like \"-0.5\" (at most 20 characters)" % where)
    bounds = tuple(Fraction(b) for b in box)
    if not (bounds[0] < bounds[1] and bounds[2] < bounds[3]):
        raise ZealError("%s: gps box needs LON_LO < LON_HI and LAT_LO < LAT_HI" % where)
    _gps_int(sensor, "order", 1, GPS_ORDER_MAX, where, "gps")
    if sensor.get("sentence", "GGA") not in ("GGA", "RMC"):
        raise ZealError("%s: gps sentence must be \"GGA\" or \"RMC\"" % where)
    uart = sensor.get("uart")
    if uart is not None:
        if "file" in sensor:
            raise ZealError("%s: gps takes a uart or a file, not both" % where)
        if not isinstance(uart, dict) or "id" not in uart:
            raise ZealError("%s: gps uart must be an object with an \"id\", like "
                            "{\"id\": 0, \"rx\": 1, \"tx\": 0}" % where)
        unknown = sorted(set(uart) - set(_GPS_UART_KEYS))
        if unknown:
            raise ZealError("%s: unknown gps uart key(s) %s (known: %s)"
                            % (where, ", ".join(map(str, unknown)), ", ".join(_GPS_UART_KEYS)))
        _gps_int(uart, "id", 0, 255, where, "gps uart")
        if "baudrate" in uart:
            _gps_int(uart, "baudrate", 1, 0x3FFFFFFF, where, "gps uart")
        for pin in ("rx", "tx"):
            v = uart.get(pin)
            if v is not None and not ((isinstance(v, int) and not isinstance(v, bool)
                                       and v >= 0) or (isinstance(v, str) and _NAME.match(v))):
                raise ZealError("%s: gps uart %s must be a pin number or name" % (where, pin))
    return bounds


def sensor_kind(cfg):
    """"adc", "replay", "callable", "gps" (the alias rp2040_temp is an adc) for a built
    config."""
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
    spec = doc.get("sensor", {})
    gps_uart = spec.get("uart") if spec.get("kind") == "gps" else None
    out = doc.get("output", {})  # (the firmware's output uart defaults to id 1)
    if gps_uart is not None and out.get("kind") == "uart" and out.get("id", 1) == gps_uart["id"]:
        raise ZealError("%s: the gps sensor and the uart output both use UART %d"
                        % (where, gps_uart["id"]))
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
    if spec.get("kind") == "gps" and "uart" in spec:  # zealfw/src_gps.py: machine.UART(id, ..)
        need("machine.UART", "the gps sensor's uart", "flash with another --sensor")
        if "tx" in spec["uart"] or "rx" in spec["uart"]:
            need("machine.Pin", "the gps sensor's uart", "flash with another --sensor")
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


def needs_text(needs):
    names = ["os.urandom"] + list(needs)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]

