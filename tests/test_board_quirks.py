"""Real-board quirks (issue 7, items 12-14) on the host side: the RP2040 watchdog limit,
`zeal stop` / `zeal flash` on a board whose watchdog runs (STOPPED, HELD, reset, port gone and
back), the RP2040 temperature sensor and its ready profile, replay readings from a file on the
board, and a board without a writable filesystem or os.urandom.

The board's side is played by fakes: a pyserial-like object driven by a fake clock (every
path, deterministic), a pty behind a symlink that vanishes and comes back (real pyserial, real
timing), a fake mpremote command, a fake mpremote transport, and the raw-REPL emulator of
test_conformance.py with its filesystem or os.urandom taken away (real mpremote).
"""
import io
import json
import os
import pty
import struct
import sys
import threading
import time
import tty
from fractions import Fraction
from types import SimpleNamespace

import pytest

from zeal.board import conformance as C
from zeal.board import flash as D
from zeal.board import probe as PR
from zeal.board import stop as S
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal import wire
from zeal.errors import ZealError

from conftest import HUMIDITY, ROOT

EXAMPLE = os.path.join(ROOT, "firmware", "examples", "rp2040_temp.json")


from test_deploy import one_line_error, zeal_main  # noqa: E402  (the real CLI, in process)


@pytest.fixture
def prof_file(tmp_path):
    path = tmp_path / "hum.json"
    path.write_text(P.from_bits(*HUMIDITY, 1.0, 8).to_json())
    return path


@pytest.fixture
def cal_prof_file(tmp_path):
    prof = P.from_bits(0.0, 3.3, 1.0, 8, calibration=P.Calibration(Fraction(33, 655350),
                                                                   Fraction(0)))
    path = tmp_path / "adc.json"
    path.write_text(prof.to_json())
    return path


# ---- item 12: the watchdog limit -------------------------------------------------------------
def test_watchdog_limit_is_the_rp2040s():
    assert D.WDT_MAX_MS == 8388
    assert D.build_config(None, {"watchdog_ms": 8388}) == {"watchdog_ms": 8388}
    assert D.build_config(None, None, watchdog_ms=8388) == {"watchdog_ms": 8388}
    assert D.build_config(None, {"watchdog_ms": 9000}, watchdog_ms=0) == {"watchdog_ms": 0}
    for kwargs, where in (({"config": {"watchdog_ms": 8389}}, "config"),
                          ({"watchdog_ms": 8389}, "--watchdog-ms"),
                          ({"config": {"watchdog_ms": 10}, "watchdog_ms": 60000},
                           "--watchdog-ms")):
        with pytest.raises(ZealError) as info:
            D.build_config(None, **kwargs)
        msg = str(info.value)
        assert msg.startswith(where + ": watchdog_ms") and "8388" in msg and "\n" not in msg


def test_flash_refuses_a_long_watchdog_in_one_line(tmp_path, prof_file, capsys):
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--watchdog-ms", "9000", "--dry-run"])
    assert "--watchdog-ms: watchdog_ms 9000 is above 8388" in err
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"watchdog_ms": 20000}))
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--config", str(conf), "--dry-run"])
    assert "config %s: watchdog_ms 20000 is above 8388" % conf in err
    assert zeal_main(["flash", "--port", "/dev/ttyACM0", "--profile", str(prof_file),
                      "--watchdog-ms", "8000", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert '"watchdog_ms": 8000' in out and "held REPL" in out


# ---- item 12: stop through STOPPED / HELD / reset --------------------------------------------
def status_frame(code, message=b""):
    """A STATUS frame as the board sends it (leading delimiter), counters zero. Built from the
    wire module's own header size and CRC, so it holds for protocol 1 and 2 alike."""
    body = bytes([0x03, code]) + bytes(wire.STATUS_HEADER - 2) + message
    run = wire.cobs_encode(body + struct.pack("<I", wire.crc32(body)))
    return b"\x00" + run + b"\x00"


def test_status_frames_decode_with_the_codes_stop_board_reads():
    for code in (S.STATUS_STOPPED, S.STATUS_HELD):
        frames = wire.Deframer().feed(status_frame(code, b"stopped"))
        assert len(frames) == 1 and isinstance(frames[0], wire.Status)
        assert frames[0].code == code
    assert wire.STATUS_CODES[S.STATUS_STOPPED] == "STOPPED"
    if S.STATUS_HELD in wire.STATUS_CODES:  # protocol 2
        assert wire.STATUS_CODES[S.STATUS_HELD] == "HELD"


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class Gone(OSError):
    """What pyserial raises for a port that vanished (SerialException is an OSError)."""


class FakeSerial:
    """The board's side of one opening of the port. `script` maps what the host wrote to what
    the board sends; every read takes 0.1 s of fake time (pyserial's timeout) and returns what
    is due. `vanish_after`: reads after this many bytes were sent raise Gone (USB reset)."""

    def __init__(self, clock, board):
        self.clock, self.board = clock, board
        self.pending = b""
        self.written = b""
        self.closed = False

    def write(self, data):
        if self.closed:
            raise ValueError("closed")
        self.written += data
        self.pending += self.board.answer(self, data)
        return len(data)

    def flush(self):
        pass

    def read(self, n):
        self.clock.t += 0.1
        if self.board.vanished(self):
            raise Gone(5, "device reports readiness to read but returned no data")
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def close(self):
        self.closed = True


class Board:
    """A board for stop_board: `mode` "repl" (at its REPL), "stream" (streaming, no watchdog),
    "watchdog" (streaming with a watchdog: STOPPED, HELD, reset), "watchdog-lost-held" (the
    reset cuts the line before HELD leaves), "silent", "dies" (the port vanishes at once).
    After a reset the port is absent for `absent_s` of fake time (opening fails), then the
    board answers at its REPL, unless `comes_back` is False."""

    def __init__(self, clock, mode, absent_s=1.5, comes_back=True):
        self.clock, self.mode = clock, mode
        self.absent_s, self.comes_back = absent_s, comes_back
        self.reset_at = None
        self.opened = []

    def open(self, port):
        if self.reset_at is not None:
            if not self.comes_back or self.clock.t < self.reset_at + self.absent_s:
                raise Gone(2, "could not open port %s: No such file or directory" % port)
        if self.opened and not all(s.closed for s in self.opened):
            # a port still held open keeps the re-enumerated board from its name
            raise AssertionError("the old port was not closed before reopening")
        ser = FakeSerial(self.clock, self)
        self.opened.append(ser)
        return ser

    def vanished(self, ser):
        return self.reset_at is not None and ser is self.opened[0] and \
            self.clock.t >= self.reset_at

    def answer(self, ser, data):
        if ser is not self.opened[0]:  # after the reset: the held REPL
            return b"\r\n>>> " if b"\r" in data else b""
        if b"!stop" not in data:
            return b""
        if self.mode == "repl":
            return (b"\r\n!stop\r\nTraceback (most recent call last):\r\n  File \"<stdin>\", "
                    b"line 1\r\nSyntaxError: invalid syntax\r\n>>> ")
        if self.mode == "silent":
            return b""
        if self.mode == "dies":
            self.reset_at = self.clock.t
            return b""
        data_noise = b"\x17\x02\x99\xff>>> \x01"  # part of a DATA run, a prompt-like tail
        stopped = data_noise + status_frame(S.STATUS_STOPPED, b"stopped")
        if self.mode == "stream":
            return stopped + b"MicroPython v1.24.0 on 2024-10-25; Raspberry Pi Pico\r\n>>> "
        self.reset_at = self.clock.t + 0.3
        if self.mode == "watchdog":
            return stopped + status_frame(S.STATUS_HELD, b"held: watchdog running")
        return stopped  # "watchdog-lost-held"


def run_stop(mode, **kwargs):
    clock = Clock()
    board = Board(clock, mode, **{k: kwargs.pop(k) for k in ("absent_s", "comes_back")
                                  if k in kwargs})
    out = io.StringIO()
    result = S.stop_board("fake://board", opener=board.open, clock=clock, sleep=clock.sleep,
                          out=out, **kwargs)
    return result, board, clock, out.getvalue()


def test_stop_a_board_at_its_repl():
    result, board, clock, _ = run_stop("repl")
    assert result.state == "repl" and result.codes == []
    assert len(board.opened) == 1 and board.opened[0].written == S.STOP_LINE
    assert board.opened[0].closed and clock.t < 1


def test_stop_a_streaming_board_without_watchdog():
    result, board, clock, _ = run_stop("stream")
    assert result.state == "stopped" and result.codes == [S.STATUS_STOPPED]
    assert len(board.opened) == 1 and board.opened[0].closed


@pytest.mark.parametrize("mode", ["watchdog", "watchdog-lost-held"])
def test_stop_a_board_whose_watchdog_runs(mode):
    """STOPPED (and HELD, unless the reset cut it off): the port is closed at once, reopened
    while it is absent (failing), and the held REPL must answer a CR."""
    result, board, clock, out = run_stop(mode, absent_s=1.5, reappear=10)
    assert result.state == "held"
    want = [S.STATUS_STOPPED, S.STATUS_HELD] if mode == "watchdog" else [S.STATUS_STOPPED]
    assert result.codes == want
    assert len(board.opened) == 2 and all(s.closed for s in board.opened)
    assert board.opened[1].written == b"\r"
    assert clock.t >= board.reset_at + board.absent_s  # it waited for the port to come back
    assert "waiting for fake://board to reset into its REPL" in out


def test_stop_gives_up_in_one_line_when_the_board_does_not_come_back():
    with pytest.raises(ZealError) as info:
        run_stop("watchdog", comes_back=False, reappear=4)
    assert str(info.value) == ("fake://board reset after STOPPED (its watchdog was running) "
                               "but its REPL did not answer within 4 s")


def test_stop_silent_and_lost_ports():
    result, board, clock, _ = run_stop("silent", wait=2)
    assert result.state == "silent" and 2 <= clock.t < 2.5 and board.opened[0].closed
    with pytest.raises(ZealError, match=r'^lost fake://board before the board answered "!stop"$'):
        run_stop("dies")


def test_zeal_stop_command(monkeypatch, capsys):
    """cmd_stop through the parser the command table builds (zeal.commands.stop)."""
    import argparse

    from zeal.commands import stop as stop_command

    parser = argparse.ArgumentParser(prog="zeal")
    stop_command.add(parser.add_subparsers())
    for mode, needle in (("watchdog", "STOPPED, then HELD"), ("stream", "STOPPED; the board"),
                         ("repl", "was not streaming")):
        clock = Clock()
        board = Board(clock, mode)
        monkeypatch.setattr(S, "_serial_opener", lambda baud, board=board: board.open)
        monkeypatch.setattr(S.time, "monotonic", clock)
        monkeypatch.setattr(S.time, "sleep", clock.sleep)
        args = parser.parse_args(["stop", "--port", "fake://x", "--wait", "3"])
        # stop_board's clock/sleep defaults were bound at definition: pass through the fakes
        monkeypatch.setattr(S, "stop_board", _with_clock(S.stop_board, clock))
        assert args.func(args) == 0
        assert needle in capsys.readouterr().out
        monkeypatch.undo()
    clock = Clock()
    board = Board(clock, "silent")
    monkeypatch.setattr(S, "_serial_opener", lambda baud: board.open)
    monkeypatch.setattr(S, "stop_board", _with_clock(S.stop_board, clock))
    args = parser.parse_args(["stop", "--port", "fake://x", "--wait", "1"])
    with pytest.raises(ZealError, match="no answer from fake://x within 1 s"):
        args.func(args)


def _with_clock(fn, clock):
    def wrapped(*a, **k):
        return fn(*a, clock=clock, sleep=clock.sleep, **k)
    return wrapped


def test_stop_a_missing_port_is_one_line(tmp_path):
    with pytest.raises(ZealError, match="^no port .*no-such-port \\(is the board plugged in"):
        S.stop_board(str(tmp_path / "no-such-port"))


@pytest.mark.slow
def test_stop_through_a_port_that_vanishes_and_comes_back(tmp_path):
    """Real pyserial on real ptys: the port is a symlink (as udev's /dev/serial/by-id). On
    "!stop" the board sends STOPPED and HELD, its pty goes away (the symlink is removed, the
    master closed), and 1 s later a new pty appears under the same name and answers a CR with
    the prompt."""
    link = tmp_path / "ttyBOARD"
    ptys = []
    got = {"first": bytearray(), "second": bytearray()}

    def new_pty():
        master, slave = pty.openpty()
        tty.setraw(slave)
        ptys.append((master, slave))
        if link.is_symlink():
            link.unlink()
        link.symlink_to(os.ttyname(slave))
        return master

    def board():
        master = new_pty()
        while b"!stop" not in got["first"]:
            got["first"].extend(os.read(master, 64))
        os.write(master, status_frame(S.STATUS_STOPPED, b"stopped") +
                 status_frame(S.STATUS_HELD, b"held"))
        time.sleep(0.2)
        link.unlink()  # USB re-enumeration: the name goes away
        os.close(master)
        time.sleep(1.0)
        master = new_pty()
        while b"\r" not in got["second"]:
            got["second"].extend(os.read(master, 64))
        os.write(master, b"\r\n>>> ")

    t = threading.Thread(target=board, daemon=True)
    t.start()
    try:
        while not link.is_symlink():
            time.sleep(0.01)
        start = time.monotonic()
        result = S.stop_board(str(link), wait=10, reappear=10)
        assert result.state == "held" and result.codes == [S.STATUS_STOPPED, S.STATUS_HELD]
        assert 1.0 <= time.monotonic() - start < 8
        assert bytes(got["first"]) == S.STOP_LINE and bytes(got["second"]) == b"\r"
        t.join(5)
    finally:
        for master, slave in ptys:
            for fd in (master, slave):
                try:
                    os.close(fd)
                except OSError:
                    pass


# ---- item 13: the RP2040 temperature sensor --------------------------------------------------
def test_rp2040_temp_sensor_spec_and_config(cal_prof_file, prof_file, capsys):
    assert D.parse_sensor("rp2040-temp") == {"kind": "adc", "channel": 4}
    with pytest.raises(ZealError, match="takes no arguments"):
        D.parse_sensor("rp2040-temp:4")
    assert D.build_config(None, {"sensor": {"kind": "rp2040_temp"}}) == {
        "sensor": {"kind": "rp2040_temp"}}
    assert D.build_config(None, {"sensor": {"kind": "adc", "channel": 4}})["sensor"] == \
        D.RP2040_TEMP
    for bad, needle in (({"kind": "adc", "pin": 26, "channel": 4}, "not both"),
                        ({"kind": "adc"}, "needs pin"),
                        ({"kind": "adc", "channel": "4"}, "integer 0..15"),
                        ({"kind": "adc", "channel": True}, "integer 0..15")):
        with pytest.raises(ZealError, match=needle):
            D.build_config(None, {"sensor": bad})
    steps = D.plan_flash("/dev/ttyACM0", EXAMPLE, sensor="rp2040-temp")
    cfg = [s for s in steps if s.kind == "write"][1]
    assert json.loads(cfg.data) == {"sensor": {"kind": "adc", "channel": 4}}
    assert "rp2040 temperature" in cfg.label
    # a profile without a calibration is refused, naming the ready one
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--sensor", "rp2040-temp", "--dry-run"])
    assert "needs a calibration" in err and "firmware/examples/rp2040_temp.json" in err


def test_rp2040_temp_example_calibration_from_the_datasheet():
    """T = 27 - (V - 0.706)/0.001721 with V = raw*3.3/65535 (RP2040 datasheet), exactly."""
    v_per_count = Fraction("3.3") / 65535
    gain = -v_per_count / Fraction("0.001721")
    offset = 27 + Fraction("0.706") / Fraction("0.001721")
    assert (gain, offset) == (Fraction(-220000, 7519049), Fraction(752467, 1721))
    prof = kinds.load(EXAMPLE)
    assert prof.calibration.gain == gain and prof.calibration.offset == offset
    for raw in (0, 12039, 14000, 15627, 65535):
        v = raw * v_per_count
        assert offset + gain * raw == 27 - (v - Fraction("0.706")) / Fraction("0.001721")
    assert (prof.lo, prof.hi, prof.epsilon) == (-20.0, 85.0, 1.0)
    # canonical: the file is exactly what `zeal profile` writes
    with open(EXAMPLE) as fh:
        assert fh.read() == prof.to_json()


def test_rp2040_temp_example_loads_on_the_device(mp_port):
    if C.locate_micropython() is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    with open(EXAMPLE) as fh:
        doc = json.load(fh)
    mp = C.open_target("micropython")
    try:
        got = mp.request({"suite": "profiles", "id": "rp2040", "case": {}, "profile": doc})
        # raw counts through the device's calibration, bit-exact with the host
        req = {"suite": "mechanism", "id": "rp2040-raw", "profile": doc,
               "case": {"inputs": [{"raw": r} for r in (12039, 14000, 15627, 0, 65535)],
                        "key": "00" * 32}}
        dev = mp.request(req)
    finally:
        mp.close()
    assert got["ok"], got
    assert got["result"]["fingerprint"] == doc["fingerprint"] == kinds.load(EXAMPLE).fingerprint
    assert dev == C.HostImpl().request(req) and dev["ok"]


def test_examples_readme_shows_the_command_that_made_the_profile(tmp_path, capsys):
    # run the README's command as written (output redirected) and compare with the shipped file
    import shlex

    with open(os.path.join(ROOT, "firmware", "examples", "README.md")) as fh:
        text = fh.read()
    blocks = [b.split("```", 1)[0] for b in text.split("```sh\n")[1:]]
    command = next(b for b in blocks if b.startswith("zeal profile")).replace("\\\n", " ")
    argv = shlex.split(command)
    assert argv[:2] == ["zeal", "profile"] and "rp2040_temp.json" in argv[-1]
    out = tmp_path / "made.json"
    assert zeal_main(argv[1:-1] + [str(out)]) == 0
    capsys.readouterr()
    with open(EXAMPLE) as fh:
        assert out.read_text() == fh.read()


# ---- item 13: replay readings from a file on the board ---------------------------------------
def test_replay_file_validation(tmp_path):
    good = tmp_path / "r.txt"
    good.write_bytes(b"4044000000000000\r\n\n  42200000 \n+12345678\n-17\n12345\n"
                     b"\t-1234567\n+123456789012345\n")
    text, n = D.check_replay_file(str(good))
    # the blank line is kept (a tick of the public value on the board), trimmed to ""
    assert n == 8 and text == ("4044000000000000\n\n42200000\n+12345678\n-17\n12345\n"
                               "-1234567\n+123456789012345\n")
    # the final LF (CRLF) ends the last line; only a line after it is one more (blank) line
    for data, lines in ((b"1\n", ["1"]), (b"1", ["1"]), (b"1\r\n\r", ["1"]),
                        (b"1\n\n", ["1", ""]), (b"1\n \t", ["1", ""]),
                        (b"\r\n1\n", ["", "1"])):
        good.write_bytes(data)
        assert D.check_replay_file(str(good)) == ("".join(x + "\n" for x in lines), len(lines))
    cases = [
        (b"4044000000000000\n" + b"0" * 38 + b"405\n", 2, "41 characters, the board takes at "
                                                      "most 40"),
        (b"1\n2\n40440000000000g0\n", 3, "is a float64 bit pattern: 16 hex digits"),
        (b"1234567x\n", 1, "is a float32 bit pattern: 8 hex digits"),
        (b"12\f\n", 1, "is not a reading"),  # the device trims only spaces and tabs
        (b"40.5\n", 1, "is not a reading"),
        (b"!stop\n", 1, "is not a reading"),
        (b"nan\n", 1, "is not a reading"),
        (b"1\n\xc2\xb0C\n", 2, "not ASCII"),
    ]
    for data, line, needle in cases:
        bad = tmp_path / "bad.txt"
        bad.write_bytes(data)
        with pytest.raises(ZealError) as info:
            D.check_replay_file(str(bad))
        msg = str(info.value)
        assert msg.startswith("replay file %s line %d: " % (bad, line)) and needle in msg, msg
        assert "\n" not in msg
    raw = tmp_path / "raw.txt"
    raw.write_text("4044000000000000\n1200\n")
    with pytest.raises(ZealError, match="line 2: '1200' is a raw count, and the profile has "
                                        "no calibration"):
        D.check_replay_file(str(raw), calibrated=False)
    empty = tmp_path / "empty.txt"
    for data in ("", "\n\n"):
        empty.write_text(data)
        with pytest.raises(ZealError, match="holds no readings"):
            D.check_replay_file(str(empty))
    with pytest.raises(ZealError, match="cannot read replay file"):
        D.check_replay_file(str(tmp_path / "missing.txt"))


def test_tuple_replay_files_keep_blank_lines(tmp_path):
    """Multi and shuffle replay files: a blank line is kept (the board's tick with every value
    invalid), only a wrong field count is refused; a shuffle file goes through the tuple
    check in the plan, not the single-reading one."""
    from zeal.mechanism.multi import profile as MP
    from zeal.mechanism.shuffle import profile as SP
    from zeal.mechanism.multi.mechanism import Categorical, Numeric

    multi = MP.build([Numeric("a", 0.0, 1.0), Categorical("b", 3)], 1.0)
    shuffle = SP.build_from(epsilon="0.99", delta="1e-6", n=100000, d=3, k=3)
    f = tmp_path / "r.txt"
    for prof, line, noun in ((multi, "3fe0000000000000, 2", "attributes"),
                             (shuffle, "3fe0000000000000,00000000,zz", "coordinates")):
        f.write_bytes(("%s\r\n \r\n\n%s\n" % (line, line)).encode())
        assert D.check_multi_replay_file(str(f), prof) == ("%s\n\n\n%s\n" % (line, line), 4)
        f.write_text(line + "\n1\n")
        with pytest.raises(ZealError, match="line 2: 1 fields, the profile has %d %s"
                                            % (prof.d, noun)):
            D.check_multi_replay_file(str(f), prof)
        f.write_text("\n \n")
        with pytest.raises(ZealError, match="holds no readings"):
            D.check_multi_replay_file(str(f), prof)
    path = tmp_path / "s.json"
    path.write_text(shuffle.to_json())
    f.write_text("3fe0000000000000,3fe0000000000000,3fe0000000000000\n\n")
    steps = D.plan_flash("/dev/ttyACM0", str(path), replay_file=str(f))
    write = [s for s in steps if s.kind == "write" and s.path.endswith("zeal_replay.txt")][0]
    assert write.data == "3fe0000000000000,3fe0000000000000,3fe0000000000000\n\n"
    assert "2 readings" in write.label and "1 of them blank" in write.label


def test_replay_file_in_the_plan(tmp_path, prof_file, capsys):
    readings = tmp_path / "readings.txt"
    readings.write_text("4044000000000000\n4049000000000000\r\n")
    steps = D.plan_flash("/dev/ttyACM0", str(prof_file), replay_file=str(readings))
    writes = [s for s in steps if s.kind == "write"]
    assert json.loads(writes[1].data) == {"sensor": {"kind": "replay",
                                                     "file": "zeal_replay.txt"}}
    assert writes[2].path == os.path.join(D.STAGE, "zeal_replay.txt")
    assert writes[2].data == "4044000000000000\n4049000000000000\n"
    assert "2 readings" in writes[2].label
    mp = [s for s in steps if s.kind == "mpremote"][0]
    remotes = [r for _, r in mp.files]
    assert remotes[-4:] == ["zeal_profile.json", "zeal_config.json", "zeal_replay.txt",
                            "main.py"]
    assert ":zeal_replay.txt" in mp.argv
    assert not any("--replay-file" in s.label for s in steps if s.kind == "note")
    # through the CLI, dry run
    assert zeal_main(["flash", "--port", "/dev/ttyACM0", "--profile", str(prof_file),
                      "--replay-file", str(readings), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ":zeal_replay.txt" in out and '"file": "zeal_replay.txt"' in out
    # a file for another sensor, a bad line: one line each
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--sensor", "callable:m.f", "--replay-file",
                                  str(readings), "--dry-run"])
    assert "--replay-file needs the replay sensor" in err
    readings.write_text("4044000000000000\nhello\n")
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--replay-file", str(readings), "--dry-run"])
    assert "line 2: 'hello' is not a reading" in err


def test_replay_file_named_in_a_config(prof_file):
    steps = D.plan_flash("/dev/ttyACM0", str(prof_file),
                         config={"sensor": {"kind": "replay", "file": "day1.txt"}})
    assert any("reads :day1.txt, which must already be on the board" in s.label
               for s in steps if s.kind == "note")
    for name in ("../x", "/abs", "a b", "", 7):
        with pytest.raises(ZealError, match="plain file name"):
            D.build_config(None, {"sensor": {"kind": "replay", "file": name}})


# ---- item 14: a board without a writable filesystem or os.urandom ----------------------------
@pytest.mark.parametrize("output, problems", [
    ("ZEAL-PROBE ok\r\n", []),
    ("noise\r\nZEAL-PROBE fs=19\r\n", ["no filesystem is mounted (OSError 19, ENODEV)"]),
    ("ZEAL-PROBE fs=30\n", ["its filesystem is read-only (OSError 30, EROFS)"]),
    ("ZEAL-PROBE fs=28\n", ["its filesystem is full (OSError 28, ENOSPC)"]),
    ("ZEAL-PROBE fs=99\n", ["its filesystem is not writable (OSError 99)"]),
    ("ZEAL-PROBE urandom=AttributeError\n", ["its MicroPython has no os.urandom"]),
    ("ZEAL-PROBE urandom=short\n", ["os.urandom fails (short)"]),
    ("ZEAL-PROBE fs=19 urandom=AttributeError\n",
     ["no filesystem is mounted (OSError 19, ENODEV)", "its MicroPython has no os.urandom"]),
    ("Traceback (most recent call last):\nOSError: [Errno 19] ENODEV\n", None),
    ("", None),
])
def test_probe_output_mapping(output, problems):
    assert PR.probe_problems(output) == problems


def test_probe_code_runs_on_the_unix_port(mp_port, tmp_path):
    """The probe is valid MicroPython and passes where a filesystem and os.urandom exist; with
    os.urandom taken away it says so."""
    import subprocess

    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    done = subprocess.run([mp, "-c", PR.PROBE_CODE], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and PR.probe_problems(done.stdout) == [], done
    assert os.listdir(tmp_path) == []  # the probe file was removed
    no_urandom = "import os\ndel os.urandom\n" + PR.PROBE_CODE
    done = subprocess.run([mp, "-c", no_urandom], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    if done.returncode == 0:  # a port whose os module cannot lose attributes says nothing
        assert PR.probe_problems(done.stdout) in ([], ["its MicroPython has no os.urandom"])


def _fake_mpremote(tmp_path, stdout, code=0):
    """An argv that behaves like `python -m mpremote connect PORT + exec PROBE` on a board
    that prints `stdout` and exits with `code`."""
    script = tmp_path / "fake_mpremote.py"
    script.write_text("import sys\nsys.stdout.write(%r)\nsys.exit(%d)\n" % (stdout, code))
    return [sys.executable, str(script)]


def test_run_probe_maps_the_board_to_one_line(tmp_path):
    PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE ok\r\n"), "/dev/ttyACM0")
    for stdout, code, want in (
            ("ZEAL-PROBE fs=19\r\n", 0,
             "the board on /dev/ttyACM0 cannot run Zeal: no filesystem is mounted (OSError 19, "
             "ENODEV) (Zeal needs a writable filesystem; use a MicroPython build that has it)"),
            ("ZEAL-PROBE urandom=AttributeError\r\n", 0,
             "the board on /dev/ttyACM0 cannot run Zeal: its MicroPython has no os.urandom "
             "(Zeal needs os.urandom for its generator key; use a MicroPython build that has "
             "it)"),
            ("Traceback (most recent call last):\r\n  File \"<stdin>\", line 3\r\n"
             "OSError: [Errno 19] ENODEV\r\n", 1,
             "mpremote failed on /dev/ttyACM0: OSError: [Errno 19] ENODEV (the board has no "
             "filesystem mounted, ENODEV)"),
            ("mpremote: failed to access /dev/ttyACM0 (it may be in use by another program)\n",
             1, "mpremote failed on /dev/ttyACM0: failed to access /dev/ttyACM0 (it may be in "
                "use by another program)"),
            ("hello\n", 0, "mpremote on /dev/ttyACM0: the board did not answer the probe "
                           "(output: hello |)")):
        with pytest.raises(ZealError) as info:
            PR.run_probe(_fake_mpremote(tmp_path, stdout, code), "/dev/ttyACM0")
        assert str(info.value) == want


class FakeTransport:
    """mpremote's SerialTransport as BoardImpl uses it, on a board whose probe prints
    `answer` (or raises TransportExecError with `error`). Records what was attempted."""
    answer = b"ZEAL-PROBE ok\r\n"
    error = None
    log = []

    def __init__(self, port, baudrate=115200):
        self.serial = SimpleNamespace(write=lambda b: None, flush=lambda: None)
        FakeTransport.log = ["open"]

    def enter_raw_repl(self, soft_reset=True):
        self.log.append("raw")

    def exec(self, code):
        from mpremote.transport import TransportExecError

        self.log.append("exec:probe" if "ZEAL-PROBE" in code else "exec")
        if self.error:
            raise TransportExecError(b"", self.error)
        return self.answer

    def fs_exists(self, path):
        self.log.append("fs")
        raise OSError(19, "ENODEV")

    def exit_raw_repl(self):
        self.log.append("exit")

    def close(self):
        self.log.append("close")


@pytest.mark.parametrize("answer, error, want", [
    (b"ZEAL-PROBE fs=19\r\n", None, "board on fake cannot run Zeal: no filesystem is mounted "
                                    "(OSError 19, ENODEV) (Zeal needs a writable filesystem; "
                                    "use a MicroPython build that has it)"),
    (b"ZEAL-PROBE fs=30 urandom=AttributeError\r\n", None,
     "board on fake cannot run Zeal: its filesystem is read-only (OSError 30, EROFS); its "
     "MicroPython has no os.urandom (Zeal needs a writable filesystem and os.urandom for its "
     "generator key; use a MicroPython build that has them)"),
    (b"", "Traceback (most recent call last):\r\nMemoryError: memory allocation failed\r\n",
     "board on fake did not answer the probe: MemoryError: memory allocation failed"),
])
def test_conformance_board_probe_is_one_line(monkeypatch, answer, error, want):
    pytest.importorskip("mpremote")
    import mpremote.transport_serial

    monkeypatch.setattr(mpremote.transport_serial, "SerialTransport", FakeTransport)
    monkeypatch.setattr(FakeTransport, "answer", answer)
    monkeypatch.setattr(FakeTransport, "error", error)
    with pytest.raises(C.ConformanceError) as info:
        C.BoardImpl("fake")
    assert str(info.value) == want
    assert "fs" not in FakeTransport.log  # refused before any copy
    assert FakeTransport.log[:3] == ["open", "raw", "exec:probe"]


# ---- item 14 end to end: real mpremote, the raw-REPL emulator without a filesystem -----------
NO_FS = r"""
import builtins as _b, errno as _e, os as _o
def _nodev(*a, **k):
    raise OSError(_e.ENODEV, "ENODEV")
for _n in ("mkdir", "listdir", "remove", "rename", "stat", "rmdir", "ilistdir"):
    setattr(_o, _n, _nodev)
_b.open = _nodev
"""
NO_URANDOM = "import os as _o\ndel _o.urandom\n"


class QuirkyBoard:
    def __init__(self, tmp_path, prelude):
        import subprocess
        from test_conformance import FAKE_BOARD

        master, self.slave = pty.openpty()
        tty.setraw(self.slave)
        script = tmp_path / "fake_board.py"
        # the emulator's own imports first, then the board's quirk
        head, _, rest = FAKE_BOARD.partition("os.chdir(sys.argv[1])\n")
        script.write_text(head + "os.chdir(sys.argv[1])\n" + prelude + rest)
        self.fs = tmp_path / "fs"
        self.fs.mkdir()
        self.proc = subprocess.Popen([sys.executable, str(script), str(self.fs)], stdin=master,
                                     stdout=master, env=dict(os.environ, PYTHONPATH=""))
        os.close(master)
        self.port = os.ttyname(self.slave)
        self.watchdog = threading.Timer(120, self.proc.kill)
        self.watchdog.start()

    def close(self):
        self.watchdog.cancel()
        self.proc.kill()
        self.proc.wait()
        os.close(self.slave)


@pytest.mark.slow
@pytest.mark.parametrize("prelude, needle", [
    (NO_FS, "no filesystem is mounted (OSError 19, ENODEV)"),
    (NO_URANDOM, "its MicroPython has no os.urandom"),
])
def test_flash_and_conformance_on_a_quirky_board(tmp_path, prof_file, capsys, prelude, needle):
    pytest.importorskip("mpremote")
    board = QuirkyBoard(tmp_path, prelude)
    try:
        # progress goes to stderr, then the one error line; nothing on stdout
        code = zeal_main(["flash", "--port", board.port, "--profile", str(prof_file),
                          "--no-compile", "--stop-wait", "0.1"])
        out, err = capsys.readouterr()
        assert code == 1 and out == "" and "Traceback" not in err, (out, err)
        assert all(line.startswith(("note: ", "[", " ")) for line in err.splitlines()[:-1])
        err = err.splitlines()[-1]
        assert err.startswith("zeal: the board on %s cannot run Zeal: " % board.port), err
        assert needle in err and "Errno" not in err
        # (zeal conformance announces each target on stderr first; then the one error line)
        code = zeal_main(["conformance", "--target", "board", "--port", board.port, "--suite",
                          "generator"])
        out, err = capsys.readouterr()
        assert code == 1 and "Traceback" not in out + err and "Errno" not in err
        assert err.splitlines() == ["running the vectors on board ...",
                                    err.splitlines()[-1]], err
        assert err.splitlines()[-1].startswith("zeal: board: board on %s cannot run Zeal: "
                                               % board.port), err
        assert needle in err
        assert list(board.fs.iterdir()) == []  # nothing was copied
    finally:
        board.close()


# ---- item 13 end to end: a replay file flashed, then booted ----------------------------------
@pytest.mark.slow
def test_flash_a_replay_file_and_boot_it(mp_port, tmp_path, prof_file):
    """`zeal flash --replay-file` through real mpremote into the raw-REPL emulator; the board's
    files then boot on the MicroPython unix port with nothing on stdin: every reading of the
    file becomes a report, then the board stops."""
    import subprocess

    pytest.importorskip("mpremote")
    from test_deploy import FakeBoard

    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    values = (30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 25.0, 35.0, 45.0)
    readings = tmp_path / "readings.txt"
    readings.write_text("\r\n".join(struct.pack(">d", x).hex() for x in values) + "\r\n\r\n")
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"start_delay_ms": 0, "period_ms": 0, "batch": 4}))
    board = FakeBoard(tmp_path)
    try:
        out = io.StringIO()
        D.flash(board.port, str(prof_file), config=str(conf), replay_file=str(readings),
                compile=False, out=out, stop_wait=0.05, timeout=240)
        # the last CRLF ends the last reading's line, the CRLF after it is a blank line: a
        # tick of the public value, copied as an empty line
        assert ("write zeal_replay.txt: %d readings from %s, 1 of them blank"
                % (len(values) + 1, readings)) in out.getvalue()
        assert (board.fs / "zeal_replay.txt").read_text() == "".join(
            struct.pack(">d", x).hex() + "\n" for x in values) + "\n"
        assert json.loads((board.fs / "zeal_config.json").read_text())["sensor"] == {
            "kind": "replay", "file": "zeal_replay.txt"}
        done = subprocess.run([mp, "main.py"], cwd=board.fs, capture_output=True, timeout=120,
                              stdin=subprocess.DEVNULL,
                              env=dict(os.environ, MICROPYPATH=str(board.fs / "lib")))
    finally:
        board.close()
    assert done.returncode == 0, done.stderr.decode()
    events = wire.Decoder([kinds.load(str(prof_file))]).feed(done.stdout)
    batches = [e for e in events if isinstance(e, wire.Batch)]
    statuses = [e for e in events if isinstance(e, wire.Status)]
    assert sum(len(b) for b in batches) == len(values) + 1
    assert statuses and statuses[-1].code_name == "STOPPED"
