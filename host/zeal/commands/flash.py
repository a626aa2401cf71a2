"""`zeal flash`: the firmware, a profile and a config onto a MicroPython board."""
from .common import non_negative_int, seconds_arg
from ..board.devices import PORT_HELP
from ..board.flash_config import BOARD_REPLAY, WDT_MAX_MS
from ..board.flash_mqtt import BOARD_CA


def add(sub):
    p = sub.add_parser(
        "flash", help="copy the firmware, a profile and a config to a MicroPython board",
        description="Validate the profile, compile the firmware with mpy-cross, copy it, the "
                    "profile, the config and main.py to the board with mpremote, and reset "
                    "it. Files on the board: lib/zealfw/, zeal_profile.json, "
                    "zeal_config.json, main.py.")
    p.add_argument("--port", required=True, metavar="PORT", help=PORT_HELP)
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="profile made by `zeal profile -o FILE`")
    p.add_argument("--sensor", metavar="SPEC",
                   help="adc:PIN[:ATTEN] (raw counts; the profile needs a calibration), "
                        "rp2040-temp (the RP2040's internal temperature sensor, ADC channel "
                        "4; profile: firmware/examples/rp2040_temp.json), replay (readings "
                        "from --replay-file, or sent over the line; the firmware's default), "
                        "callable:MODULE.FUNCTION (a driver on the board), or a sensor object "
                        "as JSON, e.g. a GPS module: '{\"kind\": \"gps\", \"box\": [LON_LO, "
                        "LON_HI, LAT_LO, LAT_HI], \"order\": L, \"uart\": {\"id\": 1}}' "
                        "(readings: the fix's Hilbert index; the profile over [0, 4^L - 1] with "
                        "--cal-gain 1 --cal-offset 0); default: the config's sensor, else "
                        "replay")
    p.add_argument("--config", metavar="FILE",
                   help="device config JSON (keys: see firmware/zealfw/main.py); --sensor "
                        "overrides its sensor (default: none; keys left out take the "
                        "firmware's defaults)")
    p.add_argument("--watchdog-ms", type=non_negative_int, metavar="MS",
                   help="machine.WDT timeout on the board, 1..%d (the RP2040's maximum), 0 for "
                        "none; a board without machine.WDT is refused before the copy; "
                        "overrides the config's watchdog_ms (default: the config's, else 0)"
                        % WDT_MAX_MS)
    p.add_argument("--replay-file", metavar="FILE",
                   help="readings for the replay sensor, one a line (16 hex digits: float64 "
                        "bits, 8: float32 bits, or a decimal raw count), copied to :%s; the "
                        "board replays them once, then stops (default: none)" % BOARD_REPLAY)
    g = p.add_argument_group("MQTT (a Wi-Fi board publishing to a broker; credentials are "
                             "read from files and never printed)")
    g.add_argument("--mqtt", metavar="URL",
                   help="the board publishes its frames to this broker instead of the serial "
                        "line: mqtt://HOST[:PORT] (mqtts:// for TLS); installs umqtt.simple "
                        "with mip (default: none, frames on the serial line)")
    g.add_argument("--mqtt-user", metavar="USER",
                   help="the board's broker user (with the deployment's ACL also its topic "
                        "id: zeal/USER/frames; default: none)")
    g.add_argument("--mqtt-password-file", metavar="FILE",
                   help="the broker password, the first line of FILE (default: none)")
    g.add_argument("--mqtt-ca", metavar="FILE",
                   help="the CA certificate (PEM or DER) the board checks the broker's TLS "
                        "certificate and host name against (mqtts://): copied to the board "
                        "as :%s (default: none, the broker is not checked)" % BOARD_CA)
    g.add_argument("--wifi", metavar="SSID", help="Wi-Fi network the board joins (default: "
                   "none, for a board already on a network)")
    g.add_argument("--wifi-password-file", metavar="FILE",
                   help="the Wi-Fi password, the first line of FILE (default: none)")
    p.add_argument("--stop-wait", type=seconds_arg, default=2.0, metavar="S",
                   help="seconds to wait for a streaming board to answer !stop (default "
                        "%(default)g; it reads the line once per sampling tick)")
    p.add_argument("--no-compile", action="store_true",
                   help="copy .py sources instead of .mpy (MicroPython older than 1.19)")
    p.add_argument("--dry-run", action="store_true",
                   help="print every step and command; touch no board")
    p.add_argument("--json", action="store_true",
                   help="with --dry-run: the plan as JSON (steps, exact argv lists, files); "
                        "otherwise: progress on stderr and the result as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..board.flash import cmd_flash

    return cmd_flash(args)
