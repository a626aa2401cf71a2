"""`zeal devices`: serial ports that look like MicroPython boards (USB VID/PID, descriptions)."""
import json
import os
import sys

from ..errors import ZealError

AUTO = "auto"
PORT_HELP = ("serial port or pyserial URL (/dev/ttyACM0, socket://HOST:PORT, ...), or 'auto': "
             "the one board `zeal devices` lists")

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


def resolve_port(port, *, out=None):
    """The port to use for --port PORT: PORT itself, or for "auto" the one board that
    `zeal devices` lists (a line on `out` names it). No board, or several: ZealError naming
    what was found."""
    if port != AUTO:
        return port
    rows = list_devices()
    if len(rows) == 1:
        print("zeal: --port auto: %s (%s)" % (rows[0]["device"], rows[0]["why_matched"]),
              file=out or sys.stderr, flush=True)
        return rows[0]["device"]
    if not rows:
        others = [r["device"] for r in list_devices(all_ports=True)]
        raise ZealError("--port auto: no MicroPython board found%s; give --port PORT"
                        % (" (other serial ports: %s)" % ", ".join(others) if others else
                           " and no serial port at all"))
    raise ZealError("--port auto: %d boards found (%s); give one with --port PORT"
                    % (len(rows), ", ".join(r["device"] for r in rows)))


def check_present(port):
    """ZealError with the one missing-port message (zeal.wire.transport.missing_port) when
    `port` is a device path that does not exist, or "cannot open PORT: why" when it can
    never be a port (a directory, a regular file, an unknown URL scheme)."""
    from ..wire.transport import missing_port, never_a_port

    why = never_a_port(port)
    if why:
        raise ZealError("cannot open %s: %s" % (port, why))
    if "://" not in port and os.sep in port and not os.path.exists(port):
        raise ZealError(missing_port(port))


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


