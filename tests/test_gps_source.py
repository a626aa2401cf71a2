"""The GPS source (issue 24, item 4, first part): zealfw.src_gps turns a GPS module's NMEA
sentences into Hilbert indices, one reading per sentence of the chosen type (GGA or RMC).

(a) The source alone, on CPython and on the MicroPython unix ports (mp_port: the PyPI port and
    the float32 build): a receiver's output as it comes -- GGA, GSA, GSV, RMC, VTG, TXT, blank
    and garbled lines, a no-fix GGA (quality 0), a void RMC (status V), a bad checksum, bad
    fields, lines of exactly 96 bytes and longer -- gives exactly the host's sequence: for each
    sentence of the chosen type the Hilbert index of zeal.mechanism.locate.hilbert.Box (x =
    longitude, y = latitude, at order L) computed from the same coordinates, or a SourceError;
    nothing for any other line. The same on the serial input (with the control lines), from a
    file, and from a UART (a stand-in machine.UART: empty reads between bytes, a module that
    goes silent mid-line: a SourceError after the wait, then the line goes on).
(b) The real main loop (zealfw.main.run) on the unix ports, replaying sentences with a grid
    and a table profile over [0, 4^L - 1] with the identity calibration (made by `zeal
    profile --cal-gain 1 --cal-offset 0`): one report per GGA sentence, none for the rest,
    every report the host's sampler at the host's index (or at the public midpoint), the
    frames decoded by the host's zeal.wire.Decoder, and the bytes identical to the loop's
    under CPython with the same key. Other sentences do not show: streams that differ only in
    them make the same transcript byte for byte.
(c) The config: the board (a STATUS CONFIG) and `zeal flash` (zeal.board.flash_config) accept
    and refuse the same gps sensor objects.
"""
import io
import json
import math
import os
import sys
import types
from fractions import Fraction

import numpy as np
import pytest

from zeal import wire
from zeal.board import flash as D
from zeal.board import flash_config as FC
from zeal.errors import ZealError
from zeal.mechanism.core.words import CounterWords
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.locate.hilbert import Box
from zeal.mechanism.table import profile as TP
from zeal.mechanism.table.sampler import TableSampler

from conftest import ROOT
from mp_unix import marked, mp_port, run_mp  # noqa: F401
from test_firmware_loop import KEY, Text, parse_output, run_device, split
from test_transcript import assert_differ_in_one_report, run_cpython

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)
from zealfw import build, src_gps  # noqa: E402
from zealfw import wire as fw_wire  # noqa: E402
from zealfw.sources import SourceError  # noqa: E402

BOX = ["-0.5", "0.3", "51.3", "51.7"]   # lon_lo, lon_hi, lat_lo, lat_hi: around London
ERR = "E"


# ---- sentences as a receiver writes them ------------------------------------------------------
def checked(body):
    """$body*HH with the NMEA checksum: the XOR of the bytes between "$" and "*"."""
    x = 0
    for c in body.encode():
        x ^= c
    return "$%s*%02X" % (body, x)


def gga(lat="", ns="", lon="", ew="", q=1, t="123519.00", talker="GP"):
    return checked("%sGGA,%s,%s,%s,%s,%s,%d,08,0.9,545.4,M,46.9,M,,"
                   % (talker, t, lat, ns, lon, ew, q))


def rmc(lat="", ns="", lon="", ew="", status="A", t="123519.00", talker="GP"):
    return checked("%sRMC,%s,%s,%s,%s,%s,%s,0.004,77.52,091202,,,A"
                   % (talker, t, status, lat, ns, lon, ew))


def sized(make, total, *args, **kw):
    """The sentence make(*args) with its time field padded so the line is `total` bytes."""
    pad = 0
    while True:
        line = make(*args, t="123519." + "0" * pad, **kw)
        if len(line) >= total:
            assert len(line) == total
            return line
        pad += 1


def spoil(line):
    """The line with its checksum's last digit changed."""
    return line[:-1] + ("1" if line.endswith("0") else "0")


def degrees(field, hemi, dd):
    """The exact value of a ddmm.mmmm / dddmm.mmmm field, read here by hand."""
    v = Fraction(int(field[:dd])) + Fraction(field[dd:]) / 60
    return -v if hemi in "SW" else v


GSA = checked("GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1")
GSV1 = checked("GPGSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45")
GSV2 = checked("GPGSV,2,2,08,15,64,021,44,17,11,276,38,19,05,123,40,24,70,245,47")
VTG = checked("GPVTG,054.7,T,034.4,M,005.5,N,010.2,K")
TXT = checked("GPTXT,01,01,02,ANTSTATUS=OK")

# positions (lat field, N/S, lon field, E/W): inside the box, outside (clamped), far away
PTS = {
    "london": ("5130.12345", "N", "00007.54321", "W"),
    "east": ("5122.50000", "N", "00014.25000", "E"),
    "west": ("5139.99000", "N", "00029.00100", "W"),
    "munich": ("4807.038", "N", "01131.000", "E"),          # east of and below the box
    "sydney": ("3352.12345", "S", "15112.54321", "W"),      # both hemispheres negative
    "corner": ("5141.00000", "N", "00017.99999", "E"),
    "green": ("5128.00000", "N", "00001.00000", "E"),
}


def pos(name):
    lat, ns, lon, ew = PTS[name]
    return degrees(lat, ns, 2), degrees(lon, ew, 3)


def entries():
    """(line, type, position): a receiver's output over ten seconds. type is the sentence type
    whose tick the line makes ("GGA", "RMC") or None (never a tick); position the exact
    (lat, lon) of a fix, or None for a sentence that is a SourceError."""
    p = PTS
    over_gga = sized(gga, 97, *p["west"])
    over_gsv = GSV1 + ",00,00,00,00,00,00,00,00,00,00,00,00,00"
    assert len(over_gsv) > 96
    return [
        # second 1: a fix
        (gga(*p["london"]), "GGA", pos("london")), (GSA, None, None), (GSV1, None, None),
        (GSV2, None, None), (rmc(*p["london"]), "RMC", pos("london")), (VTG, None, None),
        # second 2: no fix (GGA quality 0 and empty fields, RMC void)
        (gga(q=0), "GGA", None), (GSV1, None, None), (rmc(status="V"), "RMC", None),
        # second 3: a bad checksum, a good RMC; a TXT and a blank line between
        (spoil(gga(*p["east"])), "GGA", None), (TXT, None, None), ("", None, None),
        (rmc(*p["east"]), "RMC", pos("east")),
        # second 4: a GGA one byte too long (checksum good), an overlong GSV (skipped), a GGA
        # of exactly 96 bytes, an RMC with a bad checksum
        (over_gga, "GGA", None), (over_gsv, None, None),
        (sized(gga, 96, *p["west"]), "GGA", pos("west")),
        (spoil(rmc(*p["west"])), "RMC", None),
        # second 5: outside the box (clamped to the edge cells)
        (gga(*p["munich"]), "GGA", pos("munich")), (rmc(*p["munich"]), "RMC", pos("munich")),
        # second 6: southern and western hemispheres; a garbled line and a fix of quality 2
        (gga(*p["sydney"]), "GGA", pos("sydney")), ("xx$GPGGA,garbage", None, None),
        (rmc(*p["sydney"]), "RMC", pos("sydney")),
        (gga(*p["corner"], q=2), "GGA", pos("corner")), (rmc(*p["corner"]), "RMC", pos("corner")),
        # second 7: bad fields of the chosen type (67 minutes, hemisphere X): SourceErrors
        (gga("5167.000", "N", "00007.000", "W"), "GGA", None),
        (rmc("5130.000", "X", "00007.000", "W"), "RMC", None),
        # second 8: the GN talker (a multi-constellation receiver)
        (gga(*p["green"], talker="GN"), "GGA", pos("green")),
        (checked("GNGSV,1,1,01,01,40,083,46"), None, None),
        (rmc(*p["green"], talker="GN"), "RMC", pos("green")),
    ]


def host_index(order, lat, lon, box=BOX):
    """The Hilbert index of (lon, lat) by the host's Box at `order`, checked against the exact
    cell (so that no point here sits where the float box and the exact one part)."""
    b = Box(*(float(Fraction(v)) for v in box), order=order)
    cx, cy = b.cell([float(lon)], [float(lat)])
    lo = [Fraction(v) for v in box]
    side = 1 << order

    def exact(v, a, z):
        return min(max(math.floor((v - a) / (z - a) * side), 0), side - 1)

    assert (int(cx[0]), int(cy[0])) == (exact(lon, lo[0], lo[1]), exact(lat, lo[2], lo[3]))
    return int(np.asarray(b.index([float(lon)], [float(lat)])).reshape(-1)[0])


def expected(sentence, order, es=None):
    return [ERR if p is None else host_index(order, *p)
            for _, typ, p in (es or entries()) if typ == sentence]


def replay(lines):
    """The receiver's bytes: each line ends in CR LF."""
    return "".join(line + "\r\n" for line in lines).encode()


def spec(order, sentence="GGA", **kw):
    return dict({"kind": "gps", "box": BOX, "order": order, "sentence": sentence}, **kw)


def readings(src, limit=None):
    out = []
    while limit is None or len(out) < limit:
        try:
            v = src.read()
        except SourceError:
            out.append(ERR)
            continue
        if v is None:
            break
        assert src.kind == 0        # a raw count: the profile's calibration
        out.append(v)
    return out


# ---- (a) the source -------------------------------------------------------------------------
def test_the_sentences_are_what_they_claim():
    es = entries()
    assert {len(line) for line, _, _ in es} >= {96, 97}
    assert checked("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,") == \
        "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"  # the textbook's
    # the host's expectation moves: different cells, clamped corners at order 5
    want = expected("GGA", 5)
    assert len(set(v for v in want if v != ERR)) >= 5 and want.count(ERR) == 4
    assert host_index(5, *pos("sydney")) == 0   # cell (0, 0): the curve's start
    assert expected("RMC", 5).count(ERR) == 3


@pytest.mark.parametrize("sentence", ["GGA", "RMC"])
@pytest.mark.parametrize("order", [1, 5, 16])
def test_readings_on_cpython_are_the_hosts(sentence, order):
    src = build.source_from_config(spec(order, sentence),
                                   io.BytesIO(replay(e[0] for e in entries())))
    assert readings(src) == expected(sentence, order)
    assert src.stopped and not src.from_file


def test_the_check_can_fail():
    # the wrong box, the wrong axis order, the wrong type: each gives another sequence
    data = replay(e[0] for e in entries())
    got = readings(src_gps.Source(spec(5), io.BytesIO(data)))
    assert got == expected("GGA", 5)
    swapped = readings(src_gps.Source(dict(spec(5), box=["51.3", "51.7", "-0.5", "0.3"]),
                                      io.BytesIO(data)))
    assert swapped != got
    assert readings(src_gps.Source(spec(5, "RMC"), io.BytesIO(data))) != got


def test_control_lines_on_the_input_and_none_in_a_file(tmp_path):
    lines = [e[0] for e in entries()]
    stream = lines[:9] + ["!hello"] + lines[9:20] + ["!stop"] + lines[20:]
    want_all = expected("GGA", 5)
    n_before = sum(1 for e in entries()[:20] if e[1] == "GGA")
    src = src_gps.Source(spec(5), io.BytesIO(replay(stream)))
    assert readings(src) == want_all[:n_before]
    assert src.hello_requested and src.stopped
    (tmp_path / "gps.txt").write_bytes(replay(stream))
    src = src_gps.Source(spec(5, file=str(tmp_path / "gps.txt")))
    assert src.from_file
    assert readings(src) == want_all          # "!" lines are no sentence: skipped
    assert not src.hello_requested and src._file is None   # closed at the end


BOARD_SCRIPT = """
import json, sys
from zealfw.src_gps import Source
from zealfw.sources import SourceError
res = {}
for sentence in ("GGA", "RMC"):
    for order in (1, 5, 16):
        spec = {"kind": "gps", "box": %r, "order": order, "sentence": sentence}
        for where in ("file", "input"):
            if where == "file":
                s = dict(spec)
                s["file"] = "gps.txt"
                src = Source(s)
            else:
                if (sentence, order) != ("GGA", 16):
                    continue
                src = Source(spec, sys.stdin.buffer)
            out = []
            while True:
                try:
                    v = src.read()
                except SourceError:
                    out.append("E")
                    continue
                if v is None:
                    break
                out.append(v)
            res["%%s/%%d/%%s" %% (sentence, order, where)] = out
            res["hello/" + where] = src.hello_requested
print("@@" + json.dumps(res))
""" % (BOX,)


def test_readings_on_the_board_are_the_hosts(mp_port, tmp_path):
    lines = [e[0] for e in entries()]
    (tmp_path / "gps.txt").write_bytes(replay(lines))
    stream = lines[:9] + ["!hello"] + lines + ["!stop"] + lines
    (res,) = marked(run_mp(BOARD_SCRIPT, str(tmp_path), stdin=replay(stream)))
    for sentence in ("GGA", "RMC"):
        for order in (1, 5, 16):
            assert res["%s/%d/file" % (sentence, order)] == expected(sentence, order)
    want = expected("GGA", 16)
    n9 = sum(1 for e in entries()[:9] if e[1] == "GGA")
    assert res["GGA/16/input"] == want[:n9] + want     # up to "!stop"
    assert res["hello/input"] is True and res["hello/file"] is False


# ---- (a) a module on a UART -----------------------------------------------------------------
FAKE_MACHINE = """
# machine.UART with a GPS module on it: the bytes of gps.txt, up to 5 a read, an empty read
# (None, as a UART with nothing yet) every third call, then silence
uart_args = []
class Pin:
    def __init__(self, n):
        self.n = n
class UART:
    def __init__(self, uid, baudrate=None, rx=None, tx=None):
        uart_args.append([uid, baudrate, rx.n if rx else None, tx.n if tx else None])
        with open("gps.txt", "rb") as fh:
            self.data = fh.read()
        self.i = 0
        self.calls = 0
    def readinto(self, buf):
        self.calls += 1
        if self.calls % 3 == 0 or self.i >= len(self.data):
            return None
        n = 0
        while n < len(buf) and n < 5 and self.i < len(self.data):
            buf[n] = self.data[self.i]
            n += 1
            self.i += 1
        return n
"""

UART_SCRIPT = """
import json
import machine
from zealfw.src_gps import Source
from zealfw.sources import SourceError
from zealfw import wire
src = Source({"kind": "gps", "box": %r, "order": 12,
              "uart": {"id": 1, "rx": 5, "tx": 4}})
out = []
for i in range(%d):
    t0 = wire.ticks_ms()
    try:
        out.append(src.read())
    except SourceError as e:
        out.append("E:" + str(e))
waited = wire.ticks_diff(wire.ticks_ms(), t0)
print("@@" + json.dumps({"out": out, "args": machine.uart_args, "waited": waited,
                         "from_file": src.from_file}))
"""


def test_a_module_on_a_uart_on_the_board(mp_port, tmp_path):
    """The stand-in module's bytes arrive a few at a time with empty reads between: the same
    readings as a replay; then it goes silent and a read gives up after WAIT_MS (a
    SourceError, so the loop ticks on: watchdog fed, "!stop" read)."""
    es = entries()
    (tmp_path / "gps.txt").write_bytes(replay(e[0] for e in es))
    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    want = expected("GGA", 12)
    (res,) = marked(run_mp(UART_SCRIPT % (BOX, len(want) + 1), str(tmp_path),
                           path=FIRMWARE + os.pathsep + str(tmp_path)))
    assert res["args"] == [[1, 9600, 5, 4]]          # the default baud rate of GPS modules
    assert [v if isinstance(v, int) else "E" for v in res["out"][:-1]] == want
    assert res["out"][-1] == "E:no GPS sentence"
    assert 2500 <= res["waited"] < 4000
    assert res["from_file"] is True                  # the loop watches the serial input


class _Clock:
    def __init__(self):
        self.t = 0

    def ticks(self):
        return self.t

    def sleep(self, ms):
        self.t += ms


class _ScriptedUART:
    """Chunks of bytes, one byte a read, and silences (an int: ms with nothing to read)."""

    def __init__(self, chunks, clock):
        self.chunks = list(chunks)
        self.clock = clock
        self.quiet_from = None

    def readinto(self, buf):
        while self.chunks and isinstance(self.chunks[0], int):
            if self.quiet_from is None:
                self.quiet_from = self.clock.t
            if self.clock.t - self.quiet_from < self.chunks[0]:
                return None
            self.chunks.pop(0)
            self.quiet_from = None
        if not self.chunks:
            return None
        buf[0] = self.chunks[0][0]
        self.chunks[0] = self.chunks[0][1:]
        if not self.chunks[0]:
            self.chunks.pop(0)
        return 1


def test_a_silent_module_mid_line_on_cpython(monkeypatch):
    """A pause shorter than the wait is no tick; a silence mid-sentence gives a SourceError
    after WAIT_MS, and the sentence then goes on where it stopped."""
    clock = _Clock()
    made = []
    feed = []

    def uart(uid, **kw):
        made.append((uid, kw["baudrate"], kw["rx"].n, "tx" in kw))
        return _ScriptedUART(feed, clock)

    monkeypatch.setitem(sys.modules, "machine", types.SimpleNamespace(
        Pin=lambda n: types.SimpleNamespace(n=n), UART=uart))
    monkeypatch.setattr(fw_wire, "ticks_ms", clock.ticks)
    monkeypatch.setattr(fw_wire, "sleep_ms", clock.sleep)
    one = (gga(*PTS["london"]) + "\r\n").encode()
    two = (gga(*PTS["east"]) + "\r\n").encode()
    london, east = host_index(8, *pos("london")), host_index(8, *pos("east"))
    # a GSV and a 1 s pause between two GGA sentences: two readings, no SourceError
    feed[:] = [one, GSV1.encode() + b"\r\n", 1000, two]
    src = src_gps.Source(spec(8, uart={"id": 2, "baudrate": 38400, "rx": 9}))
    assert made == [(2, 38400, 9, False)] and src.from_file
    assert [src.read(), src.read()] == [london, east]
    # silent for 3 s in the middle of a sentence: a SourceError after the wait, then the
    # rest of the same sentence is its reading
    feed[:] = [two[:30], 3000, two[30:]]
    src = src_gps.Source(spec(8, uart={"id": 2, "rx": 9}))
    assert made[-1] == (2, 9600, 9, False)
    t0 = clock.t
    with pytest.raises(SourceError, match="no GPS sentence"):
        src.read()
    assert 2500 <= clock.t - t0 <= 2502
    assert src.read() == east
    t0 = clock.t
    with pytest.raises(SourceError, match="no GPS sentence"):   # silent for good
        src.read()
    assert 2500 <= clock.t - t0 <= 2502


# ---- (b) the main loop ----------------------------------------------------------------------
ORDER = 3   # 64 cells: the profile's range is [0, 63]
CONFIG = {"batch": 4, "hello_every": 2, "status_every": 3, "period_ms": 0,
          "start_delay_ms": 0, "vector_mode": True, "vector_key": KEY.hex()}


def identity_profile(tmp_path, kind):
    """The profile over [0, 4^L - 1] with the identity calibration, as a user makes it."""
    from zeal.cli import main

    path = tmp_path / ("gps-%s.json" % kind)
    argv = ["profile", "--range", "0", str(4 ** ORDER - 1), "--epsilon", "1", "--cal-gain",
            "1", "--cal-offset", "0", "-o", str(path)]
    if kind == "table":
        argv += ["--mechanism", "pm", "--bits", "3"]
    assert main(argv) == 0
    prof = (P if kind == "grid" else TP).load(str(path))
    assert (Fraction(prof.lo), Fraction(prof.hi)) == (0, 4 ** ORDER - 1)
    assert (prof.calibration.gain, prof.calibration.offset) == (1, 0)
    return prof


def host_offsets(prof, xs):
    mid = (Fraction(prof.lo) + Fraction(prof.hi)) / 2
    xs = [mid if x == ERR else Fraction(x) for x in xs]
    if isinstance(prof, P.Profile):
        mech = ExactZeal(profile=prof, words=CounterWords(KEY))
        return [mech.sample_offset(x) for x in xs]
    host = TableSampler(prof, CounterWords(KEY))
    return [host.sample_exact(x) for x in xs]


def loop_lines():
    lines = [e[0] for e in entries()]
    return lines[:9] + ["!hello"] + lines[9:]


@pytest.mark.parametrize("kind", ["grid", "table"])
def test_the_loop_reports_once_per_gga_sentence(mp_port, tmp_path, kind):
    prof = identity_profile(tmp_path, kind)
    cfg = dict(CONFIG, sensor={"kind": "gps", "box": BOX, "order": ORDER})
    lines = loop_lines()
    out = run_device(tmp_path, lines, prof=prof, config=cfg)
    items = parse_output(out)
    assert not [i for i in items if isinstance(i, Text)]
    hellos, data, statuses = split(items)
    want_h = expected("GGA", ORDER)
    n = len(want_h)
    assert n == sum(1 for e in entries() if e[1] == "GGA") == 10
    assert statuses[-1].code == "STOPPED" and statuses[-1].ticks == n
    assert sum(d.count for d in data) == n
    assert hellos[0].fingerprint == bytes.fromhex(prof.fingerprint)[:8]
    # HELLO at boot and for the "!hello" (read by the source, within the first batch), two
    # DATA of 4, HELLO (hello_every 2), the short DATA, the closing HELLO, STATUS STOPPED
    assert "".join(type(i).__name__[0] for i in items) == "HHDDHDHS"
    want = host_offsets(prof, want_h)
    # the host's own decoder reads the frames: one batch per DATA frame, the host's reports
    events = wire.Decoder([prof], vectors=True).feed(out)
    batches = [e for e in events if isinstance(e, wire.Batch)]
    assert all(b.profile.fingerprint == prof.fingerprint for b in batches)
    assert [int(v) for b in batches for v in b.offsets] == want
    assert len(batches) == len(data) == 3
    # and the loop under CPython writes the same bytes
    assert run_cpython(tmp_path, prof, lines, cfg).stream() == out


def test_the_loop_can_be_told_apart_by_its_readings(tmp_path):
    """The comparison above can fail: a box that puts every fix in one corner cell (all
    clamped) gives other reports."""
    prof = identity_profile(tmp_path, "grid")
    lines = loop_lines()
    a = run_cpython(tmp_path, prof, lines, dict(CONFIG, sensor=spec(ORDER))).stream()
    b = run_cpython(tmp_path, prof, lines, dict(CONFIG, sensor=dict(
        spec(ORDER), box=["10", "20", "0", "10"]))).stream()
    assert len(a) == len(b) and a != b


def _quiet(es):
    """The same GGA sentences with nothing else between them."""
    return [(line, typ, p) for line, typ, p in es if typ == "GGA"]


def _noisy(es):
    """The same GGA sentences with more satellites in view (GSV), other types and garbage."""
    out = []
    for i, e in enumerate(es):
        out.append(e)
        out += [(GSV1, None, None), (GSV2, None, None)] * (i % 3)
        out += [(VTG, None, None), ("", None, None), ("$GPGGA", None, None)][:i % 4]
    return out


def test_other_sentences_do_not_show(mp_port, tmp_path):
    """How many GSV (satellites in view: it depends on the sky, hence on where the board
    is), RMC or other lines come between the GGA sentences changes nothing in the transcript:
    ticks follow the GGA sentences only. ("$GPGGA," is a GGA: a tick, here a SourceError,
    in both streams; "$GPGGA" without its comma is no sentence of any type.)"""
    prof = identity_profile(tmp_path, "grid")
    cfg = dict(CONFIG, sensor=spec(ORDER))
    es = _quiet(entries())
    es = es[:3] + [("$GPGGA,", "GGA", None)] + es[3:]
    noisy = [e[0] for e in _noisy(es)]
    quiet = [e[0] for e in es]
    assert len(noisy) > 2 * len(quiet)
    a = run_cpython(tmp_path, prof, quiet, cfg).stream()
    assert run_cpython(tmp_path, prof, noisy, cfg).stream() == a
    assert run_device(tmp_path, noisy, prof=prof, config=cfg) == a
    ticks = [i for i in parse_output(a) if hasattr(i, "ticks")][-1].ticks
    assert ticks == len(es)


def test_a_fix_and_no_fix_differ_in_that_report_only(tmp_path):
    """A GGA without a fix makes its tick's report from the public midpoint: the transcript
    differs from one with a fix in that report's bits only."""
    prof = identity_profile(tmp_path, "grid")
    cfg = dict(CONFIG, sensor=spec(ORDER))
    lines = loop_lines()
    at = lines.index(gga(*PTS["munich"]))
    other = list(lines)
    other[at] = gga(q=0)
    a = parse_output(run_cpython(tmp_path, prof, lines, cfg).stream())
    b = parse_output(run_cpython(tmp_path, prof, other, cfg).stream())
    index = sum(1 for line in lines[:at] if line.startswith("$GPGGA,")
                or line.startswith("$GNGGA,"))    # the report of line `at`
    assert_differ_in_one_report(a, b, index)
    assert a != b


# ---- (c) the config, on the board and in `zeal flash` -----------------------------------------
GOOD = [
    {"box": ["-180", "180", "-90", "90"], "order": 16},
    {"box": ["+0.5", "0.75", "-1", "1.000001"], "order": 1, "sentence": "RMC"},
    {"box": BOX, "order": 12, "file": "zeal_gps.txt"},
    {"box": BOX, "order": 12, "uart": {"id": 0}},
    {"box": BOX, "order": 12, "uart": {"id": 1, "baudrate": 115200, "rx": 5, "tx": "GP4"}},
]
BAD = [
    ({"box": BOX[:3], "order": 5}, "box"),
    ({"box": [-0.5, 0.3, 51.3, 51.7], "order": 5}, "decimal"),
    ({"box": ["0.3", "-0.5", "51.3", "51.7"], "order": 5}, "box needs"),
    ({"box": ["-0.5", "0.3", "51.7", "51.7"], "order": 5}, "box needs"),
    ({"box": ["-0.5", "0.3", "5e1", "51.7"], "order": 5}, "decimal"),
    ({"box": ["-.5", "0.3", "51.3", "51.7"], "order": 5}, "decimal"),
    ({"box": ["-0.5", "3.", "51.3", "51.7"], "order": 5}, "decimal"),
    ({"box": ["", "0.3", "51.3", "51.7"], "order": 5}, "decimal"),
    ({"box": ["-0." + "1" * 19, "0.3", "51.3", "51.7"], "order": 5}, "decimal"),
    ({"box": ["-0.5", "0.3", "\u0665\u0661.3", "51.7"], "order": 5}, "decimal"),
    ({"box": BOX, "order": 0}, "order"),
    ({"box": BOX, "order": 17}, "order"),
    ({"box": BOX, "order": True}, "order"),
    ({"box": BOX, "order": "5"}, "order"),
    ({"box": BOX}, "order"),
    ({"order": 5}, "box"),
    ({"box": BOX, "order": 5, "sentence": "GSV"}, "sentence"),
    ({"box": BOX, "order": 5, "sentence": "gga"}, "sentence"),
    ({"box": BOX, "order": 5, "sentance": "RMC"}, "unknown"),
    ({"box": BOX, "order": 5, "uart": 1}, "uart"),
    ({"box": BOX, "order": 5, "uart": {"baudrate": 9600}}, "id"),
    ({"box": BOX, "order": 5, "uart": {"id": -1}}, "id"),
    ({"box": BOX, "order": 5, "uart": {"id": 1, "baudrate": 0}}, "baudrate"),
    ({"box": BOX, "order": 5, "uart": {"id": 1, "speed": 9600}}, "unknown"),
    ({"box": BOX, "order": 5, "uart": {"id": 1, "rx": True}}, "rx"),
    ({"box": BOX, "order": 5, "uart": {"id": 1, "tx": -3}}, "tx"),
    ({"box": BOX, "order": 5, "uart": {"id": 1}, "file": "g.txt"}, "not both"),
    ({"box": BOX, "order": 5, "file": ""}, "file"),
]


def _fake_machine(monkeypatch):
    made = []

    class UART:
        def __init__(self, uid, **kw):
            made.append((uid, kw))

        def readinto(self, buf):
            return None

    monkeypatch.setitem(sys.modules, "machine", types.SimpleNamespace(
        Pin=lambda n: ("pin", n), UART=UART))
    return made


@pytest.mark.parametrize("doc", GOOD, ids=range(len(GOOD)))
def test_good_configs_on_the_board_and_the_host(monkeypatch, tmp_path, doc):
    sensor = dict(doc, kind="gps")
    if "file" in doc:
        monkeypatch.chdir(tmp_path)
        (tmp_path / doc["file"]).write_bytes(b"")
    made = _fake_machine(monkeypatch)
    src = build.source_from_config(sensor, io.BytesIO(b""))
    assert src.kind == 0
    if "uart" not in doc:       # nothing to replay: the end at once
        assert src.read() is None
    src.close()
    if "uart" in doc:
        uid, kw = made[0]
        assert uid == doc["uart"]["id"]
        assert kw["baudrate"] == doc["uart"].get("baudrate", 9600)
        assert [k for k in ("rx", "tx") if k in kw] == [k for k in ("rx", "tx")
                                                        if k in doc["uart"]]
    cfg = D.build_config(None, {"sensor": sensor})
    assert cfg["sensor"] == sensor
    assert D.build_config(json.dumps(sensor))["sensor"] == sensor   # --sensor '{...}'


@pytest.mark.parametrize("doc,needle", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_configs_are_refused_on_the_board_and_the_host(monkeypatch, doc, needle):
    sensor = dict(doc, kind="gps")
    _fake_machine(monkeypatch)
    with pytest.raises(ValueError) as info:       # zealfw.build: a STATUS CONFIG
        build.source_from_config(sensor, io.BytesIO(b""))
    assert needle in str(info.value)
    with pytest.raises(ZealError) as info:
        D.build_config(None, {"sensor": sensor})
    assert needle in str(info.value)
    with pytest.raises(ZealError):
        D.parse_sensor(json.dumps(sensor))


@pytest.mark.parametrize("sensor,needle", [
    (spec(5, box=["0.3", "-0.5", "51.3", "51.7"]), "gps box needs lon_lo < lon_hi"),
    (spec(5, uart={"id": 1}), "UART"),                # the unix port has no machine.UART
    (spec(5, file="missing.txt"), "gps file missing.txt cannot be opened"),
])
def test_a_bad_gps_config_stops_the_board_with_status_config(mp_port, tmp_path, sensor, needle):
    prof = identity_profile(tmp_path, "grid")
    out = run_device(tmp_path, [gga(*PTS["london"])], prof=prof,
                     config=dict(CONFIG, sensor=sensor))
    _, data, statuses = split(parse_output(out))
    assert data == [] and [s.code for s in statuses] == ["CONFIG"]
    assert needle in statuses[0].message


def test_flash_takes_the_gps_sensor(tmp_path):
    prof = identity_profile(tmp_path, "grid")
    sensor = spec(ORDER, uart={"id": 0, "rx": 1, "tx": 0})
    steps = D.plan_flash("/dev/ttyACM0", str(tmp_path / "gps-grid.json"),
                         sensor=json.dumps(sensor))
    cfg = json.loads([s for s in steps if s.kind == "write"][1].data)
    assert cfg == {"sensor": sensor}
    needs = D.board_needs(cfg)
    assert "machine.UART" in needs and "machine.Pin" in needs
    assert D.board_needs({"sensor": spec(ORDER)}) == {}
    assert prof.calibration is not None
    # a config file's sensor object, checked as the board checks it
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"sensor": sensor, "period_ms": 0}))
    assert D.build_config(None, str(conf))["sensor"] == sensor
    # the gps module and the uart output on one UART: refused
    with pytest.raises(ZealError, match="both use UART 0"):
        D.build_config(None, {"sensor": sensor, "output": {"kind": "uart", "id": 0}})
    with pytest.raises(ZealError, match="not valid JSON"):
        D.parse_sensor('{"kind": "gps", ')
    with pytest.raises(ZealError, match="sensor kind must be"):
        D.parse_sensor('{"kind": "i2c"}')
    # the exact box, as the host reads it back
    assert FC.check_gps_sensor(sensor) == tuple(Fraction(v) for v in BOX)


def test_the_board_index_is_the_hosts_over_a_grid_of_points():
    """Beyond the sentences: many exact points through the board's cell and curve (what the
    source computes from a fix) against the host's Box, at several orders."""
    from zealfw import hilbert as FH

    rng = np.random.default_rng(24)
    lo = [Fraction(v) for v in BOX]
    box = tuple((v.numerator, v.denominator) for v in lo)
    for order in (1, 4, 9, 16):
        for _ in range(200):
            # a ddmm.mmmmm-style rational: 1/6,000,000 of a degree
            lon = Fraction(int(rng.integers(-4_000_000, 2_500_000)), 6_000_000)
            lat = Fraction(int(rng.integers(307_000_000, 311_000_000)), 6_000_000)
            x = FH.cell(lon.numerator, lon.denominator, box[0], box[1], order)
            y = FH.cell(lat.numerator, lat.denominator, box[2], box[3], order)
            assert FH.index(x, y, order) == host_index(order, lat, lon)


def test_flash_refuses_a_profile_that_does_not_take_the_hilbert_index(tmp_path):
    from zeal.cli import main

    identity_profile(tmp_path, "grid")
    sensor = json.dumps(spec(ORDER))
    D.plan_flash("/dev/ttyACM0", str(tmp_path / "gps-grid.json"), sensor=sensor)  # accepted
    top = str(4 ** ORDER - 1)
    for i, args in enumerate((["--range", "0", top],                        # no calibration
                              ["--range", "0", str(4 ** ORDER), "--cal-gain", "1",
                               "--cal-offset", "0"],                       # not the range
                              ["--range", "0", top, "--cal-gain", "2", "--cal-offset", "0"])):
        wrong = tmp_path / ("wrong%d.json" % i)
        assert main(["profile", *args, "--epsilon", "1", "-o", str(wrong)]) == 0
        with pytest.raises(ZealError, match="sensor gps gives the Hilbert index"):
            D.plan_flash("/dev/ttyACM0", str(wrong), sensor=sensor)
