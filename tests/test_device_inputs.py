"""Device inputs and outputs that real boards get wrong (issue 7 items 5, 6, 10, 12, 13, 14):

- bounded writes: a stalled output drops and counts frames, feeds the watchdog meanwhile,
  and resynchronises the line with a leading 0x00 after a cut frame;
- replay lines longer than the buffer are bad lines (replaced), never cut and parsed;
- every config key is type-checked: a wrong type (e.g. "profile": null) is STATUS CONFIG,
  also under boot(), never a crash; watchdog_ms above 8388 is refused;
- no writable filesystem for the seed file / no os.urandom: one clear CONFIG message;
- the control lines "!hello" and "!stop" on the input while another source samples, the
  hold after a stop with a watchdog (and its message when the hold file cannot be written);
- replay from a file on the board.
"""
import io
import json
import os
import struct
import sys
import types
from fractions import Fraction

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords

from conftest import HUMIDITY, ROOT
from test_firmware_loop import (FAKE_MACHINE, KEY, Data, Hello, Status, Text, decode, f64,
                                lows_of, midpoint, parse_output, run_device, want_lows)

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)

from zealfw import reference, wire  # noqa: E402
from zealfw import main as fw_main  # noqa: E402

VECTOR = {"vector_mode": True, "vector_key": KEY.hex()}
HAND = P.from_bits(*HUMIDITY, 1.0, 4)


# ---- bounded writes ---------------------------------------------------------------------------
class Stalling:
    """Takes everything, except while `stalled` (then each write returns `nothing`, 0 or None
    as a MicroPython UART on timeout); `take` bytes of the next write go through first."""

    def __init__(self, nothing=0):
        self.data = bytearray()
        self.stalled = False
        self.take = 0
        self.nothing = nothing
        self.calls = 0

    def write(self, buf):
        self.calls += 1
        if self.take:
            n = min(self.take, len(buf))
            self.data += bytes(buf[:n])
            self.take -= n
            return n
        if self.stalled:
            return self.nothing
        self.data += bytes(buf)
        return len(buf)


@pytest.mark.parametrize("nothing", [0, None])
def test_a_stalled_stream_drops_and_counts_frames_and_feeds_the_watchdog(nothing):
    fed = []
    out = Stalling(nothing)
    s = wire.Sender(out, 4, batch=2, fingerprint=HAND.fingerprint, hello_every=0,
                      write_timeout_ms=30, idle=lambda: fed.append(1))
    s.hello()
    for v in (1, 2, 3, 4):
        s.add(v)
    out.stalled = True
    s.flush()                      # DATA seq 1: not taken -> dropped
    assert s.frames_dropped == 1 and len(fed) >= 5    # fed about every millisecond
    out.stalled = False
    for v in (5, 6):
        s.add(v)
    s.flush()                      # DATA seq 2
    s.status(reference.STATUS_STOPPED, "stopped", ticks=6)
    items = parse_output(bytes(out.data))
    assert not [i for i in items if isinstance(i, Text)]
    data = [i for i in items if isinstance(i, Data)]
    assert [d.seq for d in data] == [0, 2]            # the host sees the gap
    st = [i for i in items if isinstance(i, Status)][0]
    assert (st.frames_dropped, st.ticks) == (1, 6)


def test_a_cut_frame_is_followed_by_a_resync_delimiter():
    out = Stalling()
    s = wire.Sender(out, 4, batch=2, fingerprint=HAND.fingerprint, hello_every=0,
                      write_timeout_ms=10)
    s.hello()
    s.add(1)
    s.add(2)
    s.flush()                      # DATA 0, whole
    s.add(3)
    s.add(4)
    out.take, out.stalled = 5, True
    s.flush()                      # DATA 1: 5 bytes out, then the stall -> cut, dropped
    out.stalled = False
    before = len(out.data)
    s.add(5)
    s.add(6)
    s.flush()                      # DATA 2 must start with 0x00
    assert out.data[before] == 0
    items = parse_output(bytes(out.data))
    data = [i for i in items if isinstance(i, Data)]
    assert [d.seq for d in data] == [0, 2] and data[1].lows == [5, 6]
    assert len([i for i in items if isinstance(i, Text)]) == 1   # the cut frame, refused
    assert s.frames_dropped == 1


def test_a_trickling_stream_loses_nothing():
    """A slow stream that takes a byte at a time, with zero-writes between, within the
    timeout: every frame arrives whole."""

    class Trickle:
        def __init__(self):
            self.data, self.calls = bytearray(), 0

        def write(self, buf):
            self.calls += 1
            if self.calls % 3 == 0:
                return 0
            self.data += bytes(buf[:1])
            return 1

    out = Trickle()
    s = wire.Sender(out, 4, batch=8, fingerprint=HAND.fingerprint, hello_every=2)
    s.hello()
    for v in range(40):
        s.add(v & 15)
    s.flush()
    items = parse_output(bytes(out.data))
    assert sum(d.count for d in items if isinstance(d, Data)) == 40 and s.frames_dropped == 0


def test_the_loop_keeps_sampling_through_a_stalled_host(tmp_path, monkeypatch):
    """The whole loop (CPython import) with an output that stalls for a stretch: every tick
    still makes its report, the lost frames are counted in STATUS, the watchdog is fed while
    the writes wait, and the end of streaming with a watchdog holds and resets."""
    log = types.SimpleNamespace(fed=0, reset=0)

    class WDT:
        def __init__(self, timeout):
            pass

        def feed(self):
            log.fed += 1

    def reset():
        log.reset += 1

    monkeypatch.setitem(sys.modules, "machine",
                        types.SimpleNamespace(WDT=WDT, reset=reset, unique_id=lambda: b"dev1"))
    monkeypatch.setattr(fw_main, "HOLD_PATH", str(tmp_path / "zeal_hold"))
    (tmp_path / "zeal_profile.json").write_text(HAND.to_json())
    cfg = dict(VECTOR, batch=2, hello_every=0, status_every=0, period_ms=0, max_reports=12,
               watchdog_ms=1000, write_timeout_ms=20, profile=str(tmp_path / "zeal_profile.json"),
               sensor={"kind": "callable", "module": "fakesensor2", "function": "read"})
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    out = Stalling()
    n = [0]

    def read():
        n[0] += 1
        out.stalled = 4 <= n[0] <= 7     # the host stops reading for a while
        return 50
    monkeypatch.setitem(sys.modules, "fakesensor2", types.SimpleNamespace(read=read))
    ticks = fw_main.run(str(tmp_path / "zeal_config.json"), out=out, inp=None)
    assert ticks == 12
    items = parse_output(bytes(out.data))
    data = [i for i in items if isinstance(i, Data)]
    statuses = [i for i in items if isinstance(i, Status)]
    # DATA 1 and 2 go out at the starts of ticks 5 and 7, after readings 4 and 6 stalled the
    # host: dropped, their sequence numbers used
    assert [d.seq for d in data] == [0, 3, 4, 5]
    assert [s.code for s in statuses] == ["STOPPED", "HELD"]
    assert statuses[0].frames_dropped == 2 and statuses[0].ticks == 12
    assert log.fed > 12 + 2 * 10    # the ticks' feeds plus the waits (~1 per ms)
    assert log.reset == 1 and (tmp_path / "zeal_hold").exists()


def test_hold_without_a_writable_filesystem_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "machine", types.SimpleNamespace(
        WDT=lambda timeout: types.SimpleNamespace(feed=lambda: None), reset=lambda: None))
    monkeypatch.setattr(fw_main, "HOLD_PATH", str(tmp_path / "no-such-dir" / "zeal_hold"))
    (tmp_path / "zeal_profile.json").write_text(HAND.to_json())
    cfg = dict(VECTOR, batch=2, period_ms=0, watchdog_ms=500,
               profile=str(tmp_path / "zeal_profile.json"))
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    out = io.BytesIO()
    fw_main.run(str(tmp_path / "zeal_config.json"), out=out,
                inp=io.BytesIO(b"%s\n!stop\n" % f64(50.0).encode()))
    statuses = [i for i in parse_output(out.getvalue()) if isinstance(i, Status)]
    assert [s.code for s in statuses] == ["STOPPED", "HELD"]
    assert "no writable filesystem" in statuses[1].message


# ---- replay lines -----------------------------------------------------------------------------
def test_overlong_replay_lines_are_refused_not_truncated(tmp_path):
    cal = P.Calibration(Fraction(1), Fraction(0))
    prof = P.from_bits(*HUMIDITY, 1.0, 8, calibration=cal)
    lines = ["0" * 37 + "405",            # 40 characters: the count 405, clamped to hi
             "0" * 38 + "405",            # 41: a bad line -> the midpoint's report
             "4" + "0" * 200,             # far too long
             "40", "  41  ", f64(50.0)]
    _, data, statuses = decode(run_device(tmp_path, lines, prof=prof, config=VECTOR))
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    mid = midpoint(prof)
    want = [mech.sample_offset(x) for x in (Fraction(405), mid, mid, Fraction(40), Fraction(41),
                                            Fraction(50))]
    assert lows_of(data) == want_lows(prof, want)
    assert statuses[-1].ticks == 6


def test_replay_from_a_file_on_the_board(tmp_path):
    xs = [30.0, 45.5, float("nan"), 70.25, 99.0]
    (tmp_path / "zeal_replay.txt").write_text("".join(f64(x) + "\n" for x in xs) + "!hello\n")
    out = run_device(tmp_path, [], prof=HAND,
                     config=dict(VECTOR, sensor={"kind": "replay", "file": "zeal_replay.txt"}))
    hellos, data, statuses = decode(out)
    mech = ExactZeal(profile=HAND, words=CounterWords(KEY))
    mid = midpoint(HAND)
    want = [mech.sample_offset(Fraction(x) if x == x else mid) for x in xs]
    want.append(mech.sample_offset(mid))   # in a file "!hello" is no control: a bad line
    assert lows_of(data) == want_lows(HAND, want)
    # the boot HELLO and the closing one after the last DATA (a late collector's resolve)
    assert len(hellos) == 2 and statuses[-1].ticks == 6
    assert hellos[-1].next_seq == len(data)


def test_replay_file_missing_is_a_config_error(tmp_path):
    out = run_device(tmp_path, [], prof=HAND,
                     config=dict(VECTOR, sensor={"kind": "replay", "file": "nope.txt"}))
    _, data, statuses = decode(out)
    assert data == [] and [s.code for s in statuses] == ["CONFIG"]
    assert "nope.txt" in statuses[0].message


def test_hello_request_in_the_replay_stream(tmp_path):
    lines = [f64(40.0)] * 3 + ["!hello"] + [f64(41.0)] * 3 + ["!stop"]
    items = parse_output(run_device(tmp_path, lines, prof=HAND, config=dict(VECTOR, batch=2)))
    kinds = "".join(type(i).__name__[0] for i in items)
    # boot HELLO; D0 at the start of tick 3; "!hello" is read with reading 4, so at the start
    # of tick 5 the full batch goes out (D1), then the HELLO; D2 at tick 7, whose read is
    # "!stop"; then the closing HELLO (DATA went out since the last one) and STOPPED
    assert kinds == "HDDHDHS"
    assert [i.next_seq for i in items if isinstance(i, Hello)] == [0, 2, 3]


# ---- control lines while another source samples ------------------------------------------------
SENSOR = """
n = [0]
def read():
    n[0] += 1
    return 21.5 + n[0]
"""


def test_hello_and_stop_lines_on_the_input(tmp_path):
    (tmp_path / "fakesensor.py").write_text(SENSOR)
    cfg = dict(VECTOR, batch=2, sensor={"kind": "callable", "module": "fakesensor",
                                        "function": "read"})
    items = parse_output(run_device(tmp_path, ["!hel", "!hello", "junk", "!stop"], prof=HAND,
                                    config=cfg))
    kinds = "".join(type(i).__name__[0] for i in items)
    # boot HELLO; the first tick's poll reads up to "!hello" (a partial "!hel" matches
    # nothing) -> HELLO, one reading; the second tick's poll reads "junk" and "!stop"; the
    # short batch, the closing HELLO, STOPPED
    assert kinds == "HHDHS"
    st = items[-1]
    assert st.code == "STOPPED" and st.ticks == 1


def test_stop_with_a_watchdog_holds_then_boot_stays_in_the_repl(tmp_path):
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    (tmp_path / "fakesensor.py").write_text(SENSOR)
    cfg = dict(VECTOR, batch=2, watchdog_ms=2000,
               sensor={"kind": "callable", "module": "fakesensor", "function": "read"})
    done = run_device(tmp_path, ["!stop"], prof=HAND, config=cfg,
                      code="import zealfw.main as m; m.boot()", check=False)
    assert done.returncode == 0, done.stderr.decode()
    _, data, statuses = decode(done.stdout)
    assert [s.code for s in statuses] == ["STOPPED", "HELD"]
    assert statuses[0].ticks == 0 and data == []
    assert (tmp_path / "zeal_hold").exists() and (tmp_path / "reset.log").exists()
    again = run_device(tmp_path, [], prof=HAND, config=cfg,
                       code="import zealfw.main as m; m.boot()", check=False)
    assert again.returncode == 0 and decode(again.stdout) == ([], [], [])
    assert b"held" in again.stdout and not (tmp_path / "zeal_hold").exists()


# ---- config ----------------------------------------------------------------------------------
BAD_CONFIGS = {
    "profile-null": ({"profile": None}, "profile"),
    "seed-number": ({"seed": 5}, "seed"),
    "batch-string": ({"batch": "8"}, "batch"),
    "batch-bool": ({"batch": True}, "batch"),
    "period-float": ({"period_ms": 10.5}, "period_ms"),
    "debug-string": ({"debug": "yes"}, "debug"),
    "vector-mode-int": ({"vector_mode": 1}, "vector_mode"),
    "vector-key-int": ({"vector_key": 5}, "vector_key"),
    "sensor-string": ({"sensor": "adc"}, "sensor"),
    "sensor-no-kind": ({"sensor": {}}, "sensor"),
    "output-null": ({"output": None}, "output"),
    "write-timeout-negative": ({"write_timeout_ms": -1}, "write_timeout_ms"),
    "watchdog-too-long": ({"watchdog_ms": 8389}, "8388"),
    "hello-every-too-big": ({"hello_every": 65536}, "hello_every"),
    "unknown-key": ({"colour": "red"}, "colour"),
    "vector-key-short": ({"vector_mode": True, "vector_key": "abcd"}, "vector_key"),
    "adc-without-pin": ({"sensor": {"kind": "adc"}}, "pin"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_every_wrongly_typed_config_value_is_status_config(tmp_path, name):
    cfg, word = BAD_CONFIGS[name]
    done = run_device(tmp_path, [f64(50.0)], prof=HAND, config=cfg,
                      code="import zealfw.main as m; m.boot()", check=False)
    assert done.returncode == 0, done.stderr.decode()      # boot() returned: no CRASH loop
    _, data, statuses = decode(done.stdout)
    assert data == [] and [s.code for s in statuses] == ["CONFIG"]
    assert word in statuses[0].message


def test_watchdog_at_the_rp2040_maximum_is_accepted(tmp_path):
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    _, data, statuses = decode(run_device(tmp_path, [f64(50.0)], prof=HAND,
                                          config=dict(VECTOR, watchdog_ms=8388)))
    assert [s.code for s in statuses] == ["STOPPED", "HELD"]


def test_no_writable_filesystem_for_the_seed_is_one_clear_line(tmp_path):
    out = run_device(tmp_path, [f64(50.0)], prof=HAND,
                     config={"seed": "no-such-dir/zeal_seed.bin"})
    _, data, statuses = decode(out)
    assert data == [] and [s.code for s in statuses] == ["CONFIG"]
    assert statuses[0].message == "no writable filesystem for the seed file " \
                                  "no-such-dir/zeal_seed.bin"


def test_missing_urandom_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "urandom")
    (tmp_path / "zeal_profile.json").write_text(HAND.to_json())
    (tmp_path / "zeal_config.json").write_text(json.dumps(
        {"profile": str(tmp_path / "zeal_profile.json"), "seed": str(tmp_path / "s.bin")}))
    out = io.BytesIO()
    assert fw_main.run(str(tmp_path / "zeal_config.json"), out=out, inp=io.BytesIO()) == 0
    statuses = [i for i in parse_output(out.getvalue()) if isinstance(i, Status)]
    assert [(s.code, s.message) for s in statuses] == [("CONFIG", "os.urandom is missing")]


def test_config_keys_documented_at_the_top_of_main():
    with open(os.path.join(FIRMWARE, "zealfw", "main.py")) as fh:
        head = fh.read().split("import sys")[0]
    from zealfw import start as fw_start  # the defaults live with the boot-time code

    for key in fw_start._DEFAULTS:
        assert "#   %s " % key in head, key


def test_a_port_without_unique_id_keeps_a_random_id_of_its_own(tmp_path, monkeypatch):
    # CPython has no machine module, as the unix port has no machine.unique_id(): the id is
    # made at random once per filesystem and kept (a fixed fallback merged such boards).
    from zealfw import start

    ids = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        config = str(tmp_path / folder / "zeal_config.json")
        first = start.device_id(config)
        assert len(first) == 8 and start.device_id(config) == first  # kept across boots
        assert (tmp_path / folder / "zeal_id.bin").read_bytes() == first
        ids.append(first)
    assert ids[0] != ids[1]  # 2^-64 chance of a false failure
