"""The GPS source's parts on the board (issue 24): NMEA fixes (zealfw.nmea) and the integer
Hilbert index (zealfw.hilbert), on CPython and on the MicroPython unix port (mp_port: the
PyPI port and the float32 build), against hand-worked values and the host's library.

The sentences: the NMEA 0183 textbook examples (GGA and RMC at 48 07.038' N, 11 31.000' E,
checksums 47 and 6A) and lines as a u-blox receiver writes them (GN talker, southern and
western hemispheres, no-fix GGA and void RMC)."""
import json
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

from conftest import ROOT
from mp_unix import marked, mp_port, run_mp  # noqa: F401

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)
from zealfw import hilbert as FH  # noqa: E402
from zealfw import nmea  # noqa: E402


def _checked(body):
    x = 0
    for c in body.encode():
        x ^= c
    return "$%s*%02X" % (body, x)


GOOD = {
    # 48 + 7.038/60 = 48.1173 N; 11 + 31/60 = 11.516666... E
    "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47":
        (Fraction(48) + Fraction(7038, 60000), Fraction(11) + Fraction(31, 60)),
    "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A":
        (Fraction(48) + Fraction(7038, 60000), Fraction(11) + Fraction(31, 60)),
    _checked("GNRMC,083559.00,A,3352.12345,S,15112.54321,W,0.004,77.52,091202,,,A"):
        (-(Fraction(33) + Fraction(5212345, 100000 * 60)),
         -(Fraction(151) + Fraction(1254321, 100000 * 60))),
}
NO_FIX = [
    _checked("GNGGA,092725.00,,,,,0,00,99.99,,,,,,"),
    _checked("GPRMC,092725.00,V,,,,,,,,,,N"),
    _checked("GPGGA,123519,4807.038,N,01131.000,E,0,00,,,M,,M,,"),
]
BAD = [
    "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48",   # checksum
    "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",      # none
    _checked("GPRMC,123519,A,4807.038,X,01131.000,E,022.4,084.4,230394,003.1,W"),
    _checked("GPRMC,123519,A,48a7.038,N,01131.000,E,022.4,084.4,230394,003.1,W"),
    _checked("GPRMC,123519,A,4867.038,N,01131.000,E,022.4,084.4,230394,003.1,W"),  # 67'
    "GPGGA,123519*00",
]
OTHER = [_checked("GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00")]


def _as_fraction(pair):
    return Fraction(pair[0], pair[1])


def test_fixes_on_cpython():
    for line, (lat, lon) in GOOD.items():
        got = nmea.fix(line + "\r\n")
        assert (_as_fraction(got[0]), _as_fraction(got[1])) == (lat, lon), line
    for line in NO_FIX:
        with pytest.raises(nmea.SourceError, match="no fix"):
            nmea.fix(line)
    for line in BAD:
        with pytest.raises(nmea.SourceError):
            nmea.fix(line)
    assert nmea.fix(OTHER[0]) is None


SCRIPT = """
import json
from zealfw import nmea, hilbert
cases = json.loads(%r)
out = {}
for line in cases:
    try:
        got = nmea.fix(line)
        out[line] = "none" if got is None else [list(got[0]), list(got[1])]
    except nmea.SourceError as e:
        out[line] = "error:" + str(e)
grid = [hilbert.index(x, y, 3) for x in range(8) for y in range(8)]
cells = [hilbert.cell(n, d, (-180, 1), (180, 1), 16) for n, d in ((-180, 1), (179, 1), (1, 3), (-1, 7), (181, 1))]
print("@@" + json.dumps({"fixes": out, "grid": grid, "cells": cells}))
"""


def test_the_board_parses_the_same(mp_port, tmp_path):
    lines = list(GOOD) + NO_FIX + BAD + OTHER
    (res,) = marked(run_mp(SCRIPT % json.dumps(lines), str(tmp_path)))
    for line in lines:
        try:
            got = nmea.fix(line)
            want = "none" if got is None else [list(got[0]), list(got[1])]
        except nmea.SourceError as exc:
            want = "error:" + str(exc)
        assert res["fixes"][line] == want, line
    assert res["grid"] == [FH.index(x, y, 3) for x in range(8) for y in range(8)]
    assert res["cells"] == [FH.cell(n, d, (-180, 1), (180, 1), 16)
                            for n, d in ((-180, 1), (179, 1), (1, 3), (-1, 7), (181, 1))]


def test_the_board_curve_is_the_hosts():
    import hilbert

    for order in (1, 2, 3, 6):
        n = 1 << order
        pts = np.array([(x, y) for x in range(n) for y in range(n)])
        assert list(hilbert.encode(pts, 2, order)) == [FH.index(x, y, order) for x, y in pts]
    # cells by hand: 2^16 cells over [-180, 180]: -180 -> 0, 179 -> floor(359 65536 / 360) =
    # floor(65353.96) = 65353, 1/3 -> floor(541 65536 / 1080) = 32828, 181 clamped to 65535
    assert FH.cell(-180, 1, (-180, 1), (180, 1), 16) == 0
    assert FH.cell(179, 1, (-180, 1), (180, 1), 16) == 65353
    assert FH.cell(1, 3, (-180, 1), (180, 1), 16) == 32828
    assert FH.cell(181, 1, (-180, 1), (180, 1), 16) == 65535
