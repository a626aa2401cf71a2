"""`zeal collect`: frames from serial ports or an MQTT broker into a store."""
from .common import positive

# zeal.wire.transport.DEFAULT_BAUD, kept here so that building the parser imports no wire
# code (tests/test_cli_fast.py checks the two agree)
DEFAULT_BAUD = 115200


def _mqtt_arguments(p) -> None:
    """The MQTT options of `zeal collect` (run by zeal.collect.mqtt.cmd_collect_mqtt)."""
    g = p.add_argument_group("MQTT (a fleet: boards publish to a broker)")
    g.add_argument("--mqtt", metavar="URL",
                   help="collect from an MQTT broker instead of serial ports: "
                        "mqtt://[USER[:PASS]@]HOST:PORT (mqtts:// for TLS); the devices "
                        "publish on zeal/<device-id>/frames")
    g.add_argument("--topic", default="zeal/+/frames", metavar="FILTER",
                   help="topic filter of the frames (default %(default)s)")
    g.add_argument("--group", metavar="NAME",
                   help="share the messages with the other collectors of group NAME (an MQTT "
                        "v5 shared subscription: each message goes to one of them)")
    g.add_argument("--client-id", metavar="ID",
                   help="this collector's MQTT client id, the name of its session on the "
                        "broker: one per collector, the same again after a restart (default "
                        "zeal-HOSTNAME-GROUP)")
    g.add_argument("--password-file", metavar="FILE",
                   help="read the broker password from FILE (first line) instead of the URL")
    g.add_argument("--topic-map", metavar="FILE",
                   help="which device ids each topic may announce, for a fleet whose topic "
                        "ids are not device ids: lines 'TOPIC-ID DEVICE-ID' (the id in hex "
                        "or as text; a topic on several lines may announce each). A HELLO "
                        "naming a device its topic does not stand for is refused with its "
                        "frames (counted: id_mismatch). Default: a topic id stands for the "
                        "device id in hex or, for a printable id, its text")
    g.add_argument("--ca-file", metavar="FILE",
                   help="CA certificate(s) the broker's TLS certificate is checked against "
                        "(mqtts://; default: the system's)")


def add(sub):
    p = sub.add_parser(
        "collect", help="read frames from serial ports into a SQLite database",
        description="Read Zeal frames from one or more serial ports (pyserial URLs: "
                    "/dev/ttyACM0, a pty path, socket://host:port) and store them in a SQLite "
                    "database. A frame counts as stored once committed (every 0.2 s). "
                    "Ctrl-C stops cleanly.")
    p.add_argument("--port", action="append", default=[], metavar="URL",
                   help="serial port or pyserial URL (/dev/ttyACM0, a pty path, "
                        "socket://HOST:PORT), or 'auto': the one board `zeal devices` lists; "
                        "repeatable. A port absent at the start is waited for. Or --mqtt")
    p.add_argument("--db", required=True, metavar="FILE|URL",
                   help="SQLite database file (created if missing; an existing one is added "
                        "to) or postgresql://USER@HOST:PORT/DBNAME (an existing database; "
                        "several collectors may write one)")
    p.add_argument("--profile", action="append", default=[], metavar="FILE",
                   help="profile file the devices use (repeatable; profiles already in the "
                        "database are known too; default: none)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--duration", type=positive(float), metavar="S",
                   help="stop after S seconds (default: run until stopped)")
    g.add_argument("--reports", type=positive(int), metavar="N",
                   help="stop once at least N reports are stored (default: no limit)")
    p.add_argument("--until-stopped", action="store_true",
                   help="stop once every device has sent STATUS STOPPED (after `zeal stop` "
                        "or the end of a replay)")
    p.add_argument("--keep-vector", action="store_true",
                   help="store VECTOR (test-key) frames too, marked vector=1")
    p.add_argument("--verbose", action="store_true",
                   help="also show the periodic STATUS OK heartbeats (device STATUS messages "
                        "of any other kind are always shown as they arrive)")
    p.add_argument("--baud", type=int, default=DEFAULT_BAUD, metavar="BAUD",
                   help="line speed for a UART link; USB boards, ptys and sockets ignore it "
                        "(default %(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print the summary as JSON on stdout (progress stays on stderr)")
    p.add_argument("--store-wait", type=positive(float), metavar="S",
                   help="give up once the database has been unavailable (locked, disk full, "
                        "a PostgreSQL server away) for S seconds, saying how many frames read "
                        "were not committed (default: keep what was read and retry until it "
                        "is back, or Ctrl-C)")
    _mqtt_arguments(p)
    p.epilog = ("Exit status: 0 collected; 1 a user mistake or a database/port error (a port "
                "absent for the whole run included); "
                "3 a device reported an error STATUS (NO_PROFILE, BAD_PROFILE, CONFIG, CRASH) "
                "and sent no data; 4 a port's reader failed unexpectedly (reported, retried: "
                "data may be missing).")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    if args.mqtt is not None:   # a broker instead of serial ports
        from ..collect.mqtt import cmd_collect_mqtt

        return cmd_collect_mqtt(args)
    from ..collect.collector import cmd_collect

    return cmd_collect(args)
