"""NMEA 0183 fixes for a GPS source (issue 24): the position of a GGA or RMC sentence, exactly.

A GPS module sends lines like
    $GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47
    $GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A
(any two-letter talker: GP, GN, GL, GA, BD ...). `fix(line)` checks the line -- "$", the
checksum (the XOR of the bytes between "$" and "*", two hex digits) -- and returns
    None                  a sentence of another type (not a reading: no tick)
    (lat, lon)            each an exact (num, den) in degrees, north and east positive
or raises SourceError (zealfw.sources: the invalid-reading rule, so the tick still makes its
report and a missing fix does not show) for a bad checksum, a malformed field, or no fix:
GGA's fix quality 0 or RMC's status V, or empty coordinates.
Coordinates are ddmm.mmmm (latitude) and dddmm.mmmm (longitude): value = d + m / 60, kept as
(d 60 10^k + M) / (60 10^k) for M the minutes' digits without the point (k decimals). Integers
only (no float on the board: a float32 board would round the minutes).
"""
from .sources import SourceError


def _hexval(c):
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1


def _coord(field, hemi, deg_digits, neg):
    """(num, den) of a ddmm.mmmm field and its hemisphere letter, or SourceError."""
    if not field or not hemi:
        raise SourceError("no fix")
    dot = field.find(b".")
    whole = field if dot < 0 else field[:dot]
    frac = b"" if dot < 0 else field[dot + 1:]
    if len(whole) != deg_digits + 2 or not (whole + frac).isdigit():
        raise SourceError("bad coordinate")
    deg = int(whole[:deg_digits])
    scale = 10 ** len(frac)
    minutes = int(whole[deg_digits:] + frac)
    if minutes >= 60 * scale:
        raise SourceError("bad coordinate")
    num = deg * 60 * scale + minutes
    den = 60 * scale
    if hemi == neg:
        num = -num
    elif hemi != (b"N" if neg == b"S" else b"E"):
        raise SourceError("bad hemisphere")
    return num, den


def fix(line):
    """The fix of one NMEA sentence (bytes or str, with or without CR LF); see the module."""
    if isinstance(line, str):
        line = line.encode()
    line = line.strip()
    if len(line) < 9 or line[0] != 36:  # "$"
        raise SourceError("not an NMEA sentence")
    star = line.rfind(b"*")
    if star < 0 or star + 3 != len(line):
        raise SourceError("no checksum")
    want = (_hexval(line[star + 1]) << 4) | _hexval(line[star + 2])
    if _hexval(line[star + 1]) < 0 or _hexval(line[star + 2]) < 0:
        raise SourceError("bad checksum")
    x = 0
    for c in line[1:star]:
        x ^= c
    if x != want:
        raise SourceError("bad checksum")
    f = line[1:star].split(b",")
    kind = f[0][2:]
    if kind == b"GGA":
        if len(f) < 7:
            raise SourceError("short GGA")
        if f[6] in (b"", b"0"):
            raise SourceError("no fix")
        lat, lon = (f[2], f[3]), (f[4], f[5])
    elif kind == b"RMC":
        if len(f) < 7:
            raise SourceError("short RMC")
        if f[2] != b"A":
            raise SourceError("no fix")
        lat, lon = (f[3], f[4]), (f[5], f[6])
    else:
        return None
    return _coord(lat[0], lat[1], 2, b"S"), _coord(lon[0], lon[1], 3, b"W")
