"""`zeal stop`: give a streaming board's REPL back, watchdog or not (also flash's first step).

A board streaming Zeal frames ignores Ctrl-C; the line "!stop" makes it send STATUS STOPPED
and return to its REPL. A board whose watchdog runs cannot stop it: it sends STOPPED, then
HELD, and resets into a REPL held by a marker file; `stop_board` waits for the port to come
back and for the REPL to answer. `check_port` opens a port once (and stops its board).
"""
import json
import time
from dataclasses import dataclass, field

from ..errors import ZealError

STOP_LINE = b"\r\n!stop\r\n"
# STATUS codes stop_board waits for (shared_spec: STOPPED 4; HELD 7 = the board resets into a
# held REPL after a stop because its watchdog was running). Only Status.code is read, so any
# wire protocol whose Deframer yields Status objects will do.
STATUS_STOPPED = 4
STATUS_HELD = 7
PROMPT = b">>> "


def is_device_path(port):
    return port.startswith("/") and "://" not in port


def _serial_opener(baudrate):
    def open_port(port):
        import serial

        return serial.serial_for_url(port, baudrate=baudrate, timeout=0.1, write_timeout=2)
    open_port.real_port = True  # _open_once checks the name first (tests' fakes have none)
    return open_port


def _port_errors():
    try:
        import serial
    except ImportError:
        raise ZealError("pyserial is missing (pip install pyserial)") from None
    return (serial.SerialException, OSError, ValueError)


def _open_once(port, opener, check=True):
    from .devices import check_present

    if check:  # a real port (not a test's fake opener): the one missing-port message
        check_present(port)
    errors = _port_errors()
    try:
        return opener(port)
    except errors as exc:
        raise ZealError("cannot open %s: %s" % (port, exc)) from None


@dataclass
class StopResult:
    """What stop_board saw. state: "stopped" (STATUS STOPPED, then the REPL), "held" (STOPPED
    and HELD: the board reset into its held REPL, which answered), "repl" (the board was at its
    REPL already), "silent" (no answer within the wait). codes: STATUS codes seen."""
    state: str
    codes: list = field(default_factory=list)


def stop_board(port, *, wait=5.0, reappear=10.0, baudrate=115200, opener=None,
               clock=time.monotonic, sleep=time.sleep, out=None):
    """Give a board's REPL back, watchdog or not (`zeal stop`, and the first step of flash).

    Sends "!stop" and reads the line through zeal.wire's Deframer (only Status.code is used):
    a streaming board answers at its next sampling tick with STATUS STOPPED and returns to
    its REPL (prompt ">>> "); one whose watchdog runs sends STOPPED, then HELD, and resets
    (a machine.WDT cannot be stopped), coming back held in its REPL. The port vanishes while
    USB re-enumerates, so after HELD (or a port lost after STOPPED) it is closed at once and
    reopened every 0.2 s for up to `reappear` s, until the REPL answers a CR. A board already
    at its REPL prints a SyntaxError and the prompt. `wait` bounds the wait for the first
    answer: a board reads "!stop" once per sampling tick, so give more than its period_ms.
    `opener(port)` returns a pyserial-like object (read(n), write(b), flush(), close());
    tests pass a fake board. Raises ZealError (one line) for an unopenable port, a port lost
    before STOPPED, or a board that does not come back."""
    from .. import wire

    opener = opener or _serial_opener(baudrate)
    errors = _port_errors()
    ser = _open_once(port, opener, getattr(opener, "real_port", False))
    deframer = wire.Deframer()
    codes, tail = [], b""
    lost = False
    try:
        try:
            ser.write(STOP_LINE)
            ser.flush()
        except errors as exc:
            raise ZealError("cannot write to %s: %s" % (port, exc)) from None
        deadline = clock() + wait
        while clock() < deadline:
            try:
                chunk = ser.read(256)
            except errors:
                if STATUS_STOPPED in codes:  # reset before its HELD frame got out
                    lost = True
                    break
                raise ZealError("lost %s before the board answered \"!stop\"" % port) from None
            if not chunk:
                if tail.endswith(PROMPT):  # the prompt, and quiet after it
                    return StopResult("stopped" if STATUS_STOPPED in codes else "repl", codes)
                continue
            tail = (tail + chunk)[-64:]
            for frame in deframer.feed(chunk):
                if not isinstance(frame, wire.Status):
                    continue  # HELLO, sealed DATA
                codes.append(frame.code)
                if frame.code == STATUS_STOPPED:
                    # HELD, if any, follows at once; the REPL's banner and prompt take a moment
                    deadline = max(deadline, clock() + 3.0)
            if STATUS_HELD in codes:
                break
        else:
            if STATUS_STOPPED in codes:
                return StopResult("stopped", codes)  # STOPPED, prompt not seen
            return StopResult("silent", codes)
    finally:
        try:
            ser.close()  # at once: a port held open keeps its name from the re-enumerated board
        except errors:
            pass
    if out is not None:
        print("      %s: the watchdog was running; waiting for %s to reset into its REPL"
              % ("HELD" if not lost else "STOPPED and the port went away", port), file=out,
              flush=True)
    deadline = clock() + reappear
    while clock() < deadline:
        sleep(0.2)
        try:
            ser = opener(port)
        except errors:
            continue
        try:
            ser.write(b"\r")
            ser.flush()
            seen, until = b"", clock() + 1.0
            while clock() < until and not seen.endswith(PROMPT):
                seen = (seen + ser.read(64))[-64:]
            if seen.endswith(PROMPT):
                return StopResult("held", codes)
        except errors:
            pass  # still the old device going away, or the new one not ready
        finally:
            try:
                ser.close()
            except errors:
                pass
    raise ZealError("%s reset after STOPPED (its watchdog was running) but its REPL did not "
                    "answer within %g s" % (port, reappear))


def check_port(port, stop=True, wait=2.0):
    """Open `port` (a device path or pyserial URL) once. A missing or unopenable port is a
    ZealError with one line. With `stop`, stop the board as stop_board does (waiting up to
    `wait` s for an answer); returns True when its REPL answered."""
    if not stop:
        _open_once(port, _serial_opener(115200)).close()
        return False
    return stop_board(port, wait=wait).state != "silent"


def stop_text(result, port, wait):
    return {"stopped": "STOPPED: the board is at its REPL",
            "held": "STOPPED, HELD: the board reset (its watchdog was running) and is held "
                    "at its REPL",
            "repl": "the board is at its REPL",
            "silent": "no answer within %g s; carrying on" % wait}[result.state]


_STATE_TEXT = {
    "stopped": "%s: STOPPED; the board is at its REPL",
    "held": "%s: STOPPED, then HELD: its watchdog was running, so the board reset and is held "
            "at its REPL (it runs main.py again at its next reset)",
    "repl": "%s: the board is at its REPL (it was not streaming)"}


def cmd_stop(args):
    """`zeal stop`: one line (or with --json one object) for what happened; ZealError (exit 1)
    when the board is silent."""
    from .devices import resolve_port

    port = resolve_port(args.port)
    result = stop_board(port, wait=args.wait, baudrate=args.baud)
    if result.state == "silent":
        raise ZealError("no answer from %s within %g s (a streaming board reads \"!stop\" at "
                        "its next sampling tick: give --wait longer than its period_ms)"
                        % (port, args.wait))
    if args.json:
        print(json.dumps({"port": port, "state": result.state, "status_codes": result.codes,
                          "message": _STATE_TEXT[result.state] % port}, indent=1))
    else:
        print(_STATE_TEXT[result.state] % port)
    return 0
