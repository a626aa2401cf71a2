"""Load and check a table profile, "zeal-table/1" (dense) or "zeal-table/2" (compact), on the
device (shared_spec/profile.md).

A table profile holds R+1 anchor rows over [lo, hi] and N output cells with integer weights
W[r][j] (zealfw.tsample samples it). The file grammar, the string character set, the float64
hex patterns, the calibration rationals and the fingerprint rule are those of the grid
profile: this module reuses zealfw.profile's parser and helpers (imported, not copied) and
the host (host/zeal/mechanism/table/profile.py) makes the same checks in the same order with
the same reason codes (the shared pieces live in zealfw.pfile, so that zealfw.main can load
a table without the grid's checks in memory):
  size         the file is longer than _MAX_TABLE_FILE (5784) bytes, the longest table the
               limits allow as the host writes it (either version)
  json, type   the grammar and the value kinds, as zealfw.profile
  format       "format" is neither "zeal-table/1" nor "zeal-table/2"
  missing      a required key is absent, or only one of cal_gain/cal_offset
  unknown      a key the schema does not know
  type         anchors, cells, bits, value_den not ints; lo/hi/epsilon not "0x" + 16
               lowercase hex digits; the fingerprint not 64 lowercase hex digits; weights
               (levels, rows) not only [0-9a-f]; values not only [0-9+-]
  value        a calibration that is not an exact decimal or p/q (as the grid)
  fingerprint  SHA-256 of the canonical bytes (hashed here piece by piece) differs
  value        lo/hi/epsilon not finite, lo >= hi, epsilon not in (0, 20]; R not in
               [1, 64]; N not in [2, 64]; (R+1) N > 320; len(weights) != 8 (R+1) N; values
               not exactly N signed decimals ("+"/"-" mandatory, no leading zeros, no "-0")
               with |a_j| < 2^63; value_den Q not in [1, 2^63); compact: len(levels) !=
               16 N, rows not R + 1 well-formed records (_compact); a row total outside
               [1, 2^32]; compact: a row total other than row 0's
  derived      bits != max(1, bit_length(N - 1))
  privacy      a column zero in one row and not in another, or max_r W[r][j]/S_r >
               L min_r W[r][j]/S_r, L the certified Taylor lower bound of e^eps
               (cross-multiplied in integers)
  unbiased     R sum_j W[r][j] a_j != r S_r Q for some anchor r (E[g | x_r] != x_r)
  missing_file, io   as zealfw.profile
Heap (the whole loop from .mpy on the unix port, tools/bench_heap.py, smallest heap in which
400 reports complete; tests/test_table_device.py pins the 4-bit design's): the designer's
compact 4-bit table (65 anchors, 16 cells) 43 KiB on the PyPI port, 46 on the float32 build
(no frozen modules: the names the PyPI port holds frozen are interned at run time); its 6-bit
table 45 and 45; the largest dense table ((R+1) N = 320) 43 and 44. A compact file's checks
are zealfw.tcompact's, imported only for one.
The table's extra bytes: at load, this module and zealfw.pfile (~12.6 KiB with their names)
with the file buffer and the weights (dense: one contiguous block of 8 (R+1) N hex digits,
the scarce thing in a fragmented heap; compact: the levels and records, ~1.2 KB for the
designs); while sampling, zealfw.tsample (~0.9 KiB) and zealfw.trows, the weights (dense:
4 (R+1) N bytes; compact: 8 N bytes of levels, the records, 2 bytes a row of offsets and one
buffer of 4 N bytes for the drawn row) and the rows' UNIFORM constants (~70 bytes a row
dense; one for a compact table's one total) on top of the grid's sampling path. The loaders
are never in memory together (zealfw.main frees zealfw.profile before loading this one, and
this one before the sampler). Lists of R + 1 entries are made at their size: grown by
appends they are moved into ever larger blocks, which a fragmented heap may lack.
Integers only (the AST float ban covers this module). The weights are kept as one bytes
object (4 bytes per weight, big-endian); the output values are read only for the
unbiasedness check.
"""
import hashlib
from binascii import hexlify, unhexlify

from .pfile import (ProfileError, bit_length, check_hex, check_string, f64,
                    exp_lower_bound, parse, parse_rational, rational_text, read)
from .trows import word as _w

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner and the agreement tests run here too
    def const(x):
        return x

# The longest table file the limits allow as the host writes it (json.dumps(sort_keys=True,
# indent=1) + "\n"): N = 64 and R = 4 (so (R+1) N = 320: 2560 hex digits of weights), 64
# values of 20 characters, value_den 19 digits, both calibrations at 64 characters, the
# three hex patterns and the fingerprint. Recomputed by tests/test_table_device.py.
_MAX_TABLE_FILE = const(5784)
_MAX_ANCHORS = const(64)
_MAX_CELLS = const(64)
_MAX_WEIGHTS = const(320)     # (R + 1) N
_ROW_MAX = const(1 << 32)     # a row total S_r <= 2^32 (UNIFORM(S_r) needs S_r <= 2^64)
_A_MAX = const(1 << 63)       # |a_j| < 2^63, 1 <= Q < 2^63
_EPS_MAX = const(20)


class Table:
    """A checked table profile. lo, hi, epsilon: exact (num, den); anchors R; n_cells N;
    bits m; weights: bytes, W[r][j] big-endian at 4 (r N + j), or for a compact table
    (levels, records, offsets: 2 bytes a row); sums: the row totals S_r (a compact table: its
    one total);
    cal: (c0, c1, cd) with reading = (c0 + c1 raw) / cd, or None."""

    def __init__(self):
        self.lo = self.hi = self.epsilon = self.cal = self.sums = None
        self.anchors = self.n_cells = self.bits = 0
        self.weights = b""
        self.fingerprint = ""


# Names: every global, attribute and parameter name (and short string) of a module loaded
# from .mpy is interned for good, and on the unix port the firmware's names sit just below
# the size at which the name pool doubles (~3.7 KB at once): this module adds only the names
# it cannot avoid (helpers are inlined, iteration is over bytes: indexing a str interns
# each character).
def load(path):
    """The checked table profile from a file on the device filesystem: at most
    _MAX_TABLE_FILE + 1 bytes are read into one buffer (one more than a table can be, to
    tell "too long"), parsed, and dropped before the checks."""
    buf, n = read(path, _MAX_TABLE_FILE + 1)
    if n > _MAX_TABLE_FILE:
        raise ProfileError("size", "table profile is larger than %d bytes" % _MAX_TABLE_FILE)
    # through a memoryview: a string value is copied once (str of a view), not twice (a
    # slice, then its str); the weights are the largest
    doc = parse(memoryview(buf), n)
    buf = None
    return from_doc(doc)


def numbers(path):
    """zealfw.profile.numbers for a table profile (zealfw.main calls it with this module
    alone in memory and frees it after): the same (kind, err) -- sampler zealfw.tsample,
    with the grid's names lo, hi, n_cells = R + 1, n_window = 1,
    threshold = 1 (unused), k_lo = exponent = 0, bits, cal, fingerprint -- n_cells -
    n_window = R is the position's steps for zealfw.mech_setup.init_zeal -- and table =
    (weights, N, [S_r])."""
    try:
        p = load(path)
    except ProfileError as exc:
        return (None, (), ()), (1 if exc.reason == "missing_file" else 2, str(exc))
    return ("tsample", ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo",
                        "exponent", "bits", "cal", "fingerprint", "table"),
            (p.lo, p.hi, p.anchors + 1, 1, 1, 0, 0, p.bits, p.cal, p.fingerprint,
             (p.weights, p.n_cells, p.sums))), None


def loads(text, n=None):
    """The checked table profile from the file's bytes (or its first n bytes)."""
    if isinstance(text, str):
        text = text.encode()
    if n is None:
        n = len(text)
    if n > _MAX_TABLE_FILE:
        raise ProfileError("size", "table profile is larger than %d bytes" % _MAX_TABLE_FILE)
    return from_doc(parse(text, n))


def from_doc(doc):
    """Check a parsed table profile object; a Table, or ProfileError."""
    ints = ("anchors", "bits", "cells", "value_den")
    cals = ("cal_gain", "cal_offset")
    if type(doc) is not dict:
        raise ProfileError("type", "a profile is a JSON object")
    fmt = doc.get("format")
    if fmt != "zeal-table/1" and fmt != "zeal-table/2":
        raise ProfileError("format", "unsupported table format (this firmware reads "
                                     "zeal-table/1 and zeal-table/2)")
    dense = fmt == "zeal-table/1"
    # the weights: dense, or two levels per cell and the rows' records (zealfw.trows)
    wkeys = ("weights",) if dense else ("levels", "rows")
    required = ("format", "lo", "hi", "epsilon", "anchors", "cells", "bits",
                "values", "value_den", "fingerprint") + wkeys
    for key in required:
        if key not in doc:
            raise ProfileError("missing", "profile is missing %s" % key)
    has_cal = cals[0] in doc
    if has_cal != (cals[1] in doc):
        raise ProfileError("missing", "cal_gain and cal_offset go together")
    for key in doc:
        if key not in required and key not in cals:
            raise ProfileError("unknown", "profile has an unknown key")
    for key in ints:
        if type(doc[key]) is not int:
            raise ProfileError("type", "%s must be an integer" % key)
    for key in ("lo", "hi", "epsilon"):
        check_hex(key, doc[key], 16)
    check_hex("fingerprint", doc["fingerprint"], 64)
    for key in wkeys + ("values",):
        check_string(key, doc[key])
        allowed = b"0123456789+-" if key == "values" else b"0123456789abcdef"
        for ch in doc[key].encode():
            if ch not in allowed:
                raise ProfileError("type", "%s has a character outside its alphabet" % key)
    canon_cal = {}
    cal = None
    if has_cal:
        for key in cals:
            check_string(key, doc[key])
            canon_cal[key] = parse_rational(doc[key])
        gn, gd = canon_cal["cal_gain"]
        on, od = canon_cal["cal_offset"]
        cal = (on * gd, gn * od, od * gd)

    # the fingerprint: SHA-256 of the canonical bytes (sorted keys, "key":value, no spaces;
    # the character checks above mean no string needs escaping), fed piece by piece: the
    # long weights and values strings are not copied on MicroPython, whose hashlib takes a
    # str (CPython's wants bytes)
    h = hashlib.sha256()
    try:
        h.update("")
        enc = False
    except TypeError:
        enc = True
    sep = b"{"
    for key in sorted(doc):
        if key == "fingerprint":
            continue
        h.update(sep)
        sep = b","
        value = doc[key]
        if key in canon_cal:
            value = rational_text(canon_cal[key][0], canon_cal[key][1])
        if type(value) is int:
            h.update(('"%s":%d' % (key, value)).encode())
        else:
            h.update(b'"')
            h.update(key.encode())
            h.update(b'":"')
            h.update(value.encode() if enc else value)
            h.update(b'"')
    h.update(b"}")
    digest = hexlify(h.digest()).decode()
    if digest != doc["fingerprint"]:
        raise ProfileError("fingerprint", "profile fingerprint does not match its contents")

    lo = f64(doc["lo"])
    hi = f64(doc["hi"])
    eps = f64(doc["epsilon"])
    if not lo[0] * hi[1] < hi[0] * lo[1]:
        raise ProfileError("value", "lo must be below hi")
    if not 0 < eps[0] <= _EPS_MAX * eps[1]:
        raise ProfileError("value", "epsilon must be in (0, 20]")
    rr = doc["anchors"]
    n = doc["cells"]
    q = doc["value_den"]
    bits = doc["bits"]
    if not 1 <= rr <= _MAX_ANCHORS or not 2 <= n <= _MAX_CELLS or (
            dense and (rr + 1) * n > _MAX_WEIGHTS):
        raise ProfileError("value", "a table needs 1 <= R <= 64, 2 <= N <= 64, (R+1) N <= 320")
    if dense and len(doc["weights"]) != 8 * (rr + 1) * n:
        raise ProfileError("value", "weights must hold 8 (R+1) N hex digits")
    # values: N signed decimals, "+" or "-" then digits without leading zeros ("+0" for zero,
    # "-0" refused), |a_j| < 2^63; read as bytes (0x2B "+", 0x2D "-", 0x30 "0")
    text = doc["values"].encode()
    a = []
    i = 0
    end = len(text)
    while i < end and len(a) <= n:
        c = text[i]
        if c != 0x2B and c != 0x2D:
            raise ProfileError("value", "every value needs a sign")
        j = i + 1
        while j < end and text[j] != 0x2B and text[j] != 0x2D:
            j += 1
        if j == i + 1 or (text[i + 1] == 0x30 and (j > i + 2 or c == 0x2D)):
            raise ProfileError("value", "a value with leading zeros, no digits or -0")
        v = int(text[i + 1:j])
        if v >= _A_MAX:
            raise ProfileError("value", "a value of 2^63 or more")
        a.append(-v if c == 0x2D else v)
        i = j
    if i < end or len(a) != n:
        raise ProfileError("value", "values must hold exactly cells signed integers")
    text = None
    if not 1 <= q < _A_MAX:
        raise ProfileError("value", "value_den must be in [1, 2^63)")
    if dense:
        w = unhexlify(doc["weights"])
        row = None
    else:
        # the compact version's code is loaded only for a compact file (a board's heap)
        from .tcompact import records, checks, expand
        w = records(doc["levels"], doc["rows"], rr + 1, n)
        row = bytearray(n << 2)
    # lists made at their size: a list grown by appends is moved into ever larger blocks,
    # which a fragmented heap may not have (measured: 1 KiB refused at 32 KiB); a compact
    # table keeps one total (its rows share it)
    sums = [0] * (rr + 1 if row is None else 1)
    for r in range(rr + 1):
        if row is None:
            o = r * n
        else:
            expand(w[0], w[1], (w[2][r << 1] << 8) | w[2][(r << 1) + 1], n, row)
            o = 0
        s = 0
        for j in range(o, o + n):
            s += _w(w if row is None else row, j)
        if not 1 <= s <= _ROW_MAX:
            raise ProfileError("value", "every row total must be in [1, 2^32]")
        if row is not None and r and s != sums[0]:
            raise ProfileError("value", "a compact table's rows must have one total")
        sums[0 if row is not None else r] = s
    m = bit_length(n - 1)
    if bits != (m if m > 1 else 1):
        raise ProfileError("derived", "bits must be max(1, bit_length(cells - 1))")

    if row is not None:
        checks(w, n, rr, a, q, sums[0], eps, row)
        row = None
    else:
        _dense_checks(w, n, rr, a, q, sums, eps)
    p = Table()
    p.lo = lo
    p.hi = hi
    p.epsilon = eps
    p.anchors = rr
    p.n_cells = n
    p.bits = bits
    p.weights = w
    p.sums = sums
    p.cal = cal
    p.fingerprint = digest
    return p


def _dense_checks(w, n, rr, a, q, sums, eps):
    """Checks 12 and 13 on a dense table."""
    # privacy: per column, all zero or all positive with max/min of W[r][j]/S_r <= L, by
    # cross-multiplication (W[a][j]/S_a > W[b][j]/S_b <=> W[a][j] S_b > W[b][j] S_a)
    ls, ld = exp_lower_bound(eps[0], eps[1])
    for j in range(n):
        zeros = 0
        for r in range(rr + 1):
            if _w(w, r * n + j) == 0:
                zeros += 1
        if zeros == rr + 1:
            continue  # a cell no row uses
        if zeros:
            raise ProfileError("privacy", "a column is zero in one row and not in another")
        top = bot = 0
        for r in range(1, rr + 1):
            v = _w(w, r * n + j)
            if v * sums[top] > _w(w, top * n + j) * sums[r]:
                top = r
            if v * sums[bot] < _w(w, bot * n + j) * sums[r]:
                bot = r
        if _w(w, top * n + j) * sums[bot] * ld > ls * _w(w, bot * n + j) * sums[top]:
            raise ProfileError("privacy", "a column ratio exceeds the certified bound of "
                                          "e^epsilon")

    # unbiased at every anchor: E[g | x_r] = x_r, with g_j = lo + (hi - lo) a_j / Q and
    # x_r = lo + r (hi - lo) / R: R sum_j W[r][j] a_j == r S_r Q
    for r in range(rr + 1):
        t = 0
        for j in range(n):
            t += _w(w, r * n + j) * a[j]
        if rr * t != r * sums[r] * q:
            raise ProfileError("unbiased", "the output values are biased at an anchor")

