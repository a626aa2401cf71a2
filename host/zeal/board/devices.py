"""`zeal devices`: serial ports that look like MicroPython boards (USB VID/PID, descriptions)."""
import json
import sys

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
    """Add `zeal devices` to the CLI's sub-command table."""
    p = subparsers.add_parser(
        "devices", help="list serial ports that look like MicroPython boards",
        description="List serial ports whose USB VID/PID belongs to common MicroPython "
                    "boards or USB-UART bridges, or that say MicroPython.")
    p.add_argument("--all", action="store_true", help="list every serial port")
    p.add_argument("--json", action="store_true", help="print rows as JSON")
    p.set_defaults(func=cmd_devices)
