"""The whole device transcript is private per reading (shared_spec/mechanism.md, "The whole
transcript"; DESIGN.md section 5).

The real firmware loop (`zealfw.main.run`) runs in vector mode (a given key, so a run is
reproducible) on two reading streams that differ in one reading, the second one holding a
reading that cannot be privatised (NaN, infinity, a bad line, an overlong line, a blank line,
a raw count without calibration, a sensor error, a value of the wrong type) or an
out-of-range one. The two transcripts must be identical in every byte except that one
report's m bits (and the CRC of its DATA frame, a function of them): the same frames in the
same order, the same lengths, sequence numbers, HELLO and STATUS bodies, and each frame
written at the same sampling tick. The loop runs under CPython (importing zealfw, with a recording output) and
under the MicroPython unix port (stdout compared the same way, and equal to CPython's).

A blank replay line, for every profile kind (grid, table, multi, shuffle): one tick like a
line of invalid values, the two transcripts equal byte for byte, frame by frame at the same
tick.

Then, exactly (Fractions): the replaced reading's report is the mechanism's report at the
public midpoint (lo + hi)/2 word for word, so its distribution is the mechanism's there, and
every report distribution, replaced or not, is within the profile's ratio P_hi/P_lo <= e^eps
of any other — the factor that bounds the whole transcript's ratio.
"""
import hashlib
import io
import json
import math
import os
import struct
import sys
import types
from fractions import Fraction

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.exact import ExactGrid
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords

from conftest import HUMIDITY, ROOT
from test_firmware_loop import (KEY, Data, Hello, Status, Text, f64, midpoint, parse_output,
                                run_device)

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)

from zealfw import main as fw_main  # noqa: E402  (CPython import of the device package)

BATCH = 4
# a schedule with every kind of frame: DATA, HELLO every 3 DATA frames, STATUS every 2,
# a HELLO asked for by the host mid-stream, the short flush at the end
CONFIG = {"batch": BATCH, "hello_every": 3, "status_every": 2, "period_ms": 0,
          "start_delay_ms": 0, "vector_mode": True, "vector_key": KEY.hex()}
N = 30
AT = 13  # the reading that differs (not at a batch edge: its frame is in the middle)
# H boot, D D S, D H (hello_every), D S, D H (the "!hello"), D S, D, short D H, S STOPPED
SCHEDULE = "HDDSDHDSDHDSDDHS"


def base_lines(prof):
    span = Fraction(prof.hi) - Fraction(prof.lo)
    xs = [float(Fraction(prof.lo) + span * ((7 * i) % N) / N) for i in range(N)]
    lines = [f64(x) for x in xs]
    lines.insert(21, "!hello")   # a host request between readings: a HELLO at the next tick
    return lines


def variant(lines, at, line):
    out = list(lines)
    out[at] = line
    return out


UNPRIVATISABLE = {
    "nan": f64(float("nan")),
    "inf": f64(float("inf")),
    "-inf": f64(float("-inf")),
    "nan32": "7fc00000",
    "bad-line": "zz",
    "overlong": "0" * 38 + "405",        # must not be cut to 40 characters and parsed
    "raw-without-calibration": "1234",
    "blank": "",                         # a missing reading: a tick like any other
    "blank-spaces": " \t\r ",
}
OUT_OF_RANGE = {"above": f64(1e6), "below": f64(-40.0), "huge": f64(1e300),
                "long-raw": "0" * 30 + "405"}


# ---- the loop under CPython, with the tick of every write recorded ---------------------------
class _Input(io.BytesIO):
    """The replay input; counts the lines the device has taken (= its sampling ticks, bar
    control lines, which the test places itself)."""

    def __init__(self, data):
        super().__init__(data)
        self.lines = 0

    def readinto(self, b):
        n = super().readinto(b)
        if n and b[0] == 10:
            self.lines += 1
        return n


class _Output:
    def __init__(self, inp):
        self.inp = inp
        self.writes = []   # (lines taken when written, bytes)

    def write(self, buf):
        self.writes.append((self.inp.lines, bytes(buf)))
        return len(buf)

    def stream(self):
        return b"".join(b for _, b in self.writes)

    def frames_at(self):
        """(tick, frame bytes) per frame: a frame is written whole by one write here."""
        return [(t, b) for t, b in self.writes]


def run_cpython(tmp_path, prof, lines, config=CONFIG):
    (tmp_path / "zeal_profile.json").write_text(prof.to_json())
    cfg = dict(config, profile=str(tmp_path / "zeal_profile.json"),
               seed=str(tmp_path / "zeal_seed.bin"))
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    inp = _Input(("\n".join(lines) + "\n").encode())
    out = _Output(inp)
    fw_main.run(str(tmp_path / "zeal_config.json"), out=out, inp=inp)
    return out


def assert_differ_in_one_report(a_items, b_items, index):
    """Two parsed transcripts: equal item by item, but for the report at `index` (counted
    over all DATA frames) whose m bits may differ."""
    assert [type(i) for i in a_items] == [type(i) for i in b_items]
    assert not [i for i in a_items if isinstance(i, Text)]
    seen = 0
    for x, y in zip(a_items, b_items):
        if isinstance(x, Data):
            assert (x.flags, x.seq, x.count, len(x.raw)) == (y.flags, y.seq, y.count, len(y.raw))
            for k, (u, v) in enumerate(zip(x.lows, y.lows)):
                if seen + k != index:
                    assert u == v, "report %d differs" % (seen + k)
            seen += x.count
        else:
            assert x.raw == y.raw      # HELLO and STATUS bodies, byte for byte


def reading_index(lines, at):
    """The report index of line `at` (control lines make no report)."""
    return sum(1 for ln in lines[:at] if not ln.startswith("!"))


@pytest.fixture(scope="module")
def prof():
    return P.from_bits(*HUMIDITY, 1.0, 4)


@pytest.mark.parametrize("name", sorted(UNPRIVATISABLE) + sorted(OUT_OF_RANGE))
def test_cpython_transcripts_differ_only_in_that_report(tmp_path, prof, name):
    lines = base_lines(prof)
    line = {**UNPRIVATISABLE, **OUT_OF_RANGE}[name]
    a = run_cpython(tmp_path, prof, lines)
    b = run_cpython(tmp_path, prof, variant(lines, AT, line))
    ai, bi = parse_output(a.stream()), parse_output(b.stream())
    assert_differ_in_one_report(ai, bi, reading_index(lines, AT))
    # every frame leaves at the same sampling tick, with the same length
    fa, fb = a.frames_at(), b.frames_at()
    assert [(t, len(x)) for t, x in fa] == [(t, len(x)) for t, x in fb]
    # and the schedule is the one the config says: 30 readings, batch 4 -> 7 full frames and
    # a short one; HELLO at boot, after DATA 3 and 6, and on request; STATUS after DATA 2,4,6
    kinds = [type(i).__name__[0] for i in ai]
    assert "".join(kinds) == SCHEDULE
    assert kinds.count("D") == 8 and kinds.count("H") == 4 and kinds.count("S") == 4
    assert sum(i.count for i in ai if isinstance(i, Data)) == N
    assert [i.ticks for i in ai if isinstance(i, Status)][-1] == N


def test_replaced_report_is_the_midpoint_report(tmp_path, prof):
    """The device's report for an unprivatisable reading is, word for word, the reference
    mechanism's report at (lo + hi)/2: the same function of the same words."""
    lines = base_lines(prof)
    out = run_cpython(tmp_path, prof, variant(lines, AT, UNPRIVATISABLE["nan"]))
    got = [v for i in parse_output(out.stream()) if isinstance(i, Data) for v in i.lows]
    mech = ExactZeal(profile=prof, words=CounterWords(KEY))
    readings = [ln for ln in variant(lines, AT, UNPRIVATISABLE["nan"]) if not ln.startswith("!")]
    want = []
    for ln in readings:
        x = struct.unpack("<d", struct.pack("<Q", int(ln, 16)))[0]
        want.append(mech.sample_offset(Fraction(x) if math.isfinite(x) else midpoint(prof)))
    mask = (1 << prof.bits) - 1
    assert got == [(prof.k_lo + j) & mask for j in want]


def test_a_sensor_error_is_a_replaced_reading(tmp_path, prof, monkeypatch):
    """The callable source: a driver's exception or a value of the wrong type makes the
    same transcript as a normal reading but for that report."""
    values = [Fraction(prof.lo) + (Fraction(prof.hi) - Fraction(prof.lo)) * i / 20
              for i in range(20)]

    def make(bad):
        calls = [0]

        def read():
            i = calls[0]
            calls[0] += 1
            if i == AT and bad == "error":
                raise OSError("i2c timeout")
            if i == AT and bad == "type":
                return "21.5"
            return float(values[i % 20])   # a float: packed to float32 by the source
        return read, calls

    transcripts = []
    for bad in (None, "error", "type"):
        read, calls = make(bad)
        monkeypatch.setitem(sys.modules, "fakesensor", types.SimpleNamespace(read=read))
        cfg = dict(CONFIG, max_reports=20,
                   sensor={"kind": "callable", "module": "fakesensor", "function": "read"})
        (tmp_path / "zeal_profile.json").write_text(prof.to_json())
        cfg.update(profile=str(tmp_path / "zeal_profile.json"))
        (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
        writes = []

        class Out:
            def write(self, buf):
                writes.append((calls[0], bytes(buf)))
                return len(buf)

        fw_main.run(str(tmp_path / "zeal_config.json"), out=Out(), inp=None)
        transcripts.append(writes)
    base = parse_output(b"".join(b for _, b in transcripts[0]))
    for other in transcripts[1:]:
        assert [(t, len(b)) for t, b in other] == [(t, len(b)) for t, b in transcripts[0]]
        assert_differ_in_one_report(base, parse_output(b"".join(b for _, b in other)), AT)


@pytest.mark.parametrize("name", ["nan", "overlong", "raw-without-calibration", "blank",
                                  "above"])
def test_micropython_transcripts_differ_only_in_that_report(mp_port, tmp_path, prof, name):
    """The same on the MicroPython unix port, whose bytes also equal CPython's."""
    lines = base_lines(prof)
    line = {**UNPRIVATISABLE, **OUT_OF_RANGE}[name]
    cfg = {k: v for k, v in CONFIG.items()}
    outs = []
    for ls in (lines, variant(lines, AT, line)):
        outs.append(run_device(tmp_path, ls, prof=prof, config=cfg))
    assert_differ_in_one_report(parse_output(outs[0]), parse_output(outs[1]),
                                reading_index(lines, AT))
    cpy = run_cpython(tmp_path, prof, variant(lines, AT, line)).stream()
    assert outs[1] == cpy


def test_public_parts_do_not_depend_on_the_readings(tmp_path, prof):
    """HELLO and STATUS bodies of two runs with entirely different readings are equal byte
    for byte (nonce, next_seq, ticks, frames_dropped, zero counters)."""
    lines = base_lines(prof)
    other = [UNPRIVATISABLE["nan"] if not ln.startswith("!") else ln for ln in lines]
    a = parse_output(run_cpython(tmp_path, prof, lines).stream())
    b = parse_output(run_cpython(tmp_path, prof, other).stream())
    pick = lambda items: [i.raw for i in items if isinstance(i, (Hello, Status))]  # noqa: E731
    assert pick(a) == pick(b) and len(pick(a)) == 8
    h = [i for i in a if isinstance(i, Hello)]
    assert h[0].nonce == hashlib.sha256(b"zeal-nonce" + KEY).digest()[:8]
    assert [x.next_seq for x in h] == [0, 3, 5, 8]
    assert all(s.replaced == 0 and s.clamped == 0 for s in a if isinstance(s, Status))


# ---- exact: the replaced report's law, and the per-report factor ------------------------------
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_replaced_report_law_is_the_mechanism_at_the_midpoint(tmp_path, bits):
    """For 64 keys the device's report for NaN equals the reference's report at the midpoint
    with the same words (a coupling: equal as random variables, so equal in law). That law,
    exactly, is ExactGrid.distribution(mid); against every input x of a fine grid over and
    beyond [lo, hi] each column's ratio is at most P_hi/P_lo, and P_hi/P_lo is below the
    certified lower bound of e^eps."""
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    mid = midpoint(prof)
    cfg = dict(CONFIG, batch=1, hello_every=0, status_every=0)
    for seed in range(64):
        key = hashlib.sha256(b"transcript:%d" % seed).digest()
        out = run_cpython(tmp_path, prof, [f64(float("nan"))], dict(cfg, vector_key=key.hex()))
        got = [v for i in parse_output(out.stream()) if isinstance(i, Data) for v in i.lows]
        j = ExactZeal(profile=prof, words=CounterWords(key)).sample_offset(mid)
        assert got == [(prof.k_lo + j) & ((1 << bits) - 1)]
    g = ExactGrid(prof)
    law = g.distribution(mid)
    assert sum(law.values()) == 1
    assert all(g.p_lo <= p <= g.p_hi for p in law.values())
    lo, hi = Fraction(prof.lo), Fraction(prof.hi)
    worst = Fraction(1)
    for i in range(-8, 73):
        x = lo + (hi - lo) * i / 64          # includes readings clamped below and above
        other = g.distribution(x)
        for j in law:
            worst = max(worst, law[j] / other[j], other[j] / law[j])
    assert worst <= g.privacy_ratio
    assert g.privacy_ratio <= P.exp_lower_bound(Fraction(prof.epsilon))


# ---- every tick makes a report: blank replay lines, every profile kind ------------------------
# A blank replay line is a missing reading: it makes its tick's report(s) from the public value,
# exactly as a line of invalid values does (NaN in every field). Were it skipped, every later
# report and frame would shift and the stream would show where the gaps are. The two files
# below differ only in those lines, so the device's transcripts must be equal byte for byte
# (vector mode: a fixed key), each frame written at the same tick.
KINDS = ["grid", "table", "multi", "shuffle"]
# line index -> blank form: empty, spaces and tabs, a lone CR (the device ignores CR), and
# the last line (a blank line after the final reading, not the LF that ends the file)
BLANKS = {0: "", 6: " \t ", 13: "\r", 14: "", N - 1: "  "}


def kind_profile(kind):
    """A profile of the kind, made by the host API the device tests use."""
    if kind == "grid":
        return P.from_bits(*HUMIDITY, 1.0, 4)
    if kind == "table":
        from zeal.mechanism.table import profile as TP
        return TP.build(-1.0, 1.0, 1.0, "pm", 3)
    if kind == "multi":
        from zeal.mechanism.multi import profile as MP
        from zeal.mechanism.multi.mechanism import Categorical, Numeric
        return MP.build([Numeric("temp", -10.0, 40.0), Categorical("state", 3),
                         Numeric("hum", 0.0, 100.0, mechanism="pm")], 2.0, k=2)
    from zeal.mechanism.shuffle import profile as SP
    return SP.build_from(epsilon="0.99", delta="1e-6", n=100000, d=3, k=3,
                         ranges=[(0, 1), (-10, 40), (0, 100)])


def kind_lines(kind, prof):
    """N replay lines of valid readings across the profile's range(s), and the line of
    invalid values that a blank line must equal (NaN in every field)."""
    nan = f64(float("nan"))
    if kind in ("grid", "table"):
        lo, hi = Fraction(prof.lo), Fraction(prof.hi)
        return [f64(float(lo + (hi - lo) * ((7 * i) % N) / N)) for i in range(N)], nan
    if kind == "multi":
        def field(a, i):
            if a.kind == "oue":
                return str(i % a.c)
            lo, hi = Fraction(a.lo), Fraction(a.hi)
            return f64(float(lo + (hi - lo) * ((7 * i) % N) / N))
        rows = [",".join(field(a, i + j) for j, a in enumerate(prof.attributes))
                for i in range(N)]
        return rows, ",".join([nan] * prof.d)
    rows = [",".join(f64(float(Fraction(lo) + (Fraction(hi) - Fraction(lo)) * ((7 * i + j) % N)
                                / N)) for j, (lo, hi) in enumerate(prof.ranges))
            for i in range(N)]
    return rows, ",".join([nan] * prof.d)


def write_profile(tmp_path, prof):
    path = tmp_path / "zeal_profile.json"
    if hasattr(prof, "write"):  # a multi header and its attribute files beside it
        prof.write(str(path))
    else:
        path.write_text(prof.to_json())


def frame_list(out):
    """(type, DATA count, body length) per frame and the last STATUS's ticks, read without a
    profile (a multi HELLO says bits = 0); the run must have ended with STATUS STOPPED."""
    from cobs import cobs

    frames, status = [], None
    for run in out.split(b"\x00"):
        if not run:
            continue
        body = cobs.decode(run)[:-4]
        t = body[0] & 0x0F
        frames.append((t, body[3] if t == 2 else None, len(body)))
        if t == 3:
            status = (body[1], struct.unpack_from("<I", body, 2)[0], body[18:])
    assert status is not None and status[0] == 4, status  # STOPPED, not a refused profile
    return frames, status[1]


def blank_and_invalid(kind, prof, control=True):
    """The file with blank lines and the same file with those lines of invalid values."""
    lines, invalid = kind_lines(kind, prof)
    blank, nan = list(lines), list(lines)
    for i, form in BLANKS.items():
        blank[i], nan[i] = form, invalid
    if control:  # a host's HELLO request between readings, on the serial input only
        blank.insert(21, "!hello")
        nan.insert(21, "!hello")
    return blank, nan


def reports_of(frames):
    return sum(c for t, c, _ in frames if t == 2)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["input", "file"])
def test_micropython_blank_lines_make_their_ticks(mp_port, tmp_path, kind, where):
    """On the MicroPython unix port, replay on the serial input and from a file on the
    board: a blank line is one tick, its transcript byte for byte that of an invalid line."""
    prof = kind_profile(kind)
    blank, nan = blank_and_invalid(kind, prof, control=where == "input")
    outs = []
    for lines in (blank, nan):
        write_profile(tmp_path, prof)
        if where == "input":
            outs.append(run_device(tmp_path, lines, config=CONFIG))
        else:
            # "\n".join + "\n": the final LF ends the last (blank) line, no tick after it
            (tmp_path / "zeal_replay.txt").write_bytes(("\n".join(lines) + "\n").encode())
            outs.append(run_device(tmp_path, [], config=dict(
                CONFIG, sensor={"kind": "replay", "file": "zeal_replay.txt"})))
    fb, ticks_b = frame_list(outs[0])
    fn, ticks_n = frame_list(outs[1])
    assert fb == fn and ticks_b == ticks_n
    assert outs[0] == outs[1]
    if kind == "shuffle":
        # (the reports per tick are the shuffle spec's business: compare with a one-line run)
        one = run_device(tmp_path, [nan[1]], config=CONFIG)
        per_tick = reports_of(frame_list(one)[0])
        assert per_tick >= 1 and reports_of(fb) == N * per_tick
    else:
        assert ticks_b == N and reports_of(fb) == N


@pytest.mark.parametrize("kind", KINDS)
def test_cpython_blank_lines_keep_every_frame_at_its_tick(mp_port, tmp_path, kind):
    """The loop under CPython with the tick of every write recorded: with blank lines every
    frame is written at the same tick, with the same bytes, as with invalid lines; the
    MicroPython run's bytes equal CPython's."""
    prof = kind_profile(kind)
    blank, nan = blank_and_invalid(kind, prof)
    runs = []
    for lines in (blank, nan):
        write_profile(tmp_path, prof)
        cfg = dict(CONFIG, profile=str(tmp_path / "zeal_profile.json"),
                   seed=str(tmp_path / "zeal_seed.bin"))
        (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
        inp = _Input(("\n".join(lines) + "\n").encode())
        out = _Output(inp)
        fw_main.run(str(tmp_path / "zeal_config.json"), out=out, inp=inp)
        runs.append(out)
    assert runs[0].frames_at() == runs[1].frames_at()
    frames, ticks = frame_list(runs[0].stream())
    assert reports_of(frames) >= N and (kind == "shuffle" or ticks == N)
    write_profile(tmp_path, prof)
    assert run_device(tmp_path, blank, config=CONFIG) == runs[0].stream()
