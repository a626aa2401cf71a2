"""Load and check `zeal_profile.json` on the device (shared_spec/profile.md).

The device never parses a JSON float into a parameter (its floats are 32-bit): the profile's
canonical form holds only ints and ASCII strings, and floats are float64 bit patterns as
"0x" + 16 hex digits, decoded here to exact rationals with integers.

The file is read with the profile file grammar (profile.md), not with `json`: MicroPython's
json accepts "04", missing commas and colons, trailing commas and "\\x" escapes that CPython
refuses, so host and device would disagree on what a valid file is. The host's loader
(host/zeal/mechanism/grid/profile.py) runs the same grammar and the same checks, in the same order, with the
same reason codes: the profile-check list of profile.md. Each failure is a ProfileError:
  size         the file is longer than _MAX_FILE (502) bytes, the longest profile the schema
               allows as `zeal profile -o` writes it
  json         not the grammar: a byte outside printable ASCII/space/tab/CR/LF, not one flat
               object, a backslash escape, a duplicated key, data after the object
  type         a value that is neither a string nor an integer as JSON writes it (a float,
               "04", "+4", true/false/null, an array, an object)
  format       the "format" string is not "zeal-profile/1" (or absent)
  missing      a required key is absent, or only one of cal_gain/cal_offset is present
  unknown      a key the schema does not know
  type         ints must be ints (not bool, not float), strings only from [A-Za-z0-9+-./],
               hex patterns exactly "0x" + 16 lowercase hex digits, the fingerprint 64
               lowercase hex digits
  value        a calibration that is not an exact decimal or p/q of at most 64 characters
               with a decimal exponent within +-64
  fingerprint  SHA-256 of the canonical bytes (rebuilt here by hand) differs
  value        lo/hi not finite or lo >= hi, epsilon not finite or not in (0, 20], exponent
               outside [-1022, 1023], N not in [2, 2^52 - 1], Nc not in [1, N - 1],
               T not in (0, 2^64)
  derived      bits != bit_length(N) (every k then fits the announced m bits), or T is not
               the largest integer with T*No <= L*(2^64 - T)*Nc for the certified lower
               bound L of e^eps (the same Taylor partial sum as the host): P_hi/P_lo <= L
  privacy      not T*No > (2^64 - T)*Nc, i.e. not P_hi > P_lo. Without it the ratio that
               bounds the loss is P_lo/P_hi, which nothing bounds by e^eps (a profile at
               eps = 1e-6, N = 4502511373889014, Nc = 1 has loss ~242 eps); with equality
               the slope s is 0 and the estimator is undefined.
  missing_file the file does not exist (the main loop reports NO_PROFILE)
  io           unreadable
Together these make the device refuse every profile that is not eps-LDP or whose reports
would leave the announced grid. N, Nc and E (utility, not privacy) are left to the host, which
needs exp to 60 digits: a profile that differs from the host's only there is private.
"""
import hashlib
from binascii import hexlify

from .pfile import (ProfileError, bit_length, check_hex, check_string, f64,  # noqa: F401
                    exp_lower_bound, parse, parse_rational, rational_text, read)

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

# Names: every global name (and parameter name) of a module loaded from .mpy is interned
# and kept for good, even after the module is freed; so the key tables are locals of
# from_doc, and the format and default path are written where they are used. The grammar,
# the string checks and the exact helpers live in zealfw.pfile (shared with zealfw.tprofile)
# and are re-exported here.

# The longest file the schema allows, as the host writes it (json.dumps(indent=1) + "\n"):
# 12 keys, ints at their widest (exponent -1022, bits 52, N and Nc 16 digits, T 20 digits),
# three hex patterns, both calibrations at 64 characters, the fingerprint. 502 bytes;
# tests/test_profile_agreement.py recomputes it.
_MAX_FILE = const(502)
_MAX_ANY = const(5784)        # = zealfw.tprofile._MAX_TABLE_FILE, the longest of either kind
_K_HI = const((1 << 52) - 2)
_N_MAX = const((1 << 52) - 1)
_WORD_BITS = const(64)
_WORD = const(1 << 64)
_EPS_MAX = const(20)


class Profile:
    """A checked profile. lo, hi, epsilon: exact (num, den); cal: (c0, c1, cd) with
    reading = (c0 + c1 * raw) / cd, or None."""

    def __init__(self):
        self.lo = self.hi = self.epsilon = None
        self.exponent = self.bits = self.n_cells = self.n_window = self.threshold = 0
        self.cal = None
        self.canonical = b""
        self.fingerprint = ""

    @property
    def k_lo(self):
        return _K_HI - self.n_cells + 1


def threshold(n, c, a, b):
    """floor(L * 2^64 * Nc / (No + L * Nc)) for N = n, Nc = c, No = N - Nc and L the lower
    bound of e^(a/b): the largest T with T*No <= L*(2^64 - T)*Nc."""
    s, d = exp_lower_bound(a, b)
    return ((s * c) << _WORD_BITS) // ((n - c) * d + s * c)


# ---- loading ---------------------------------------------------------------------------------
def load(path="zeal_profile.json"):
    """The checked profile from a file on the device filesystem. Reads at most _MAX_FILE + 1
    bytes into one buffer (one more than a profile can be, to tell "too long"); a table
    profile (the dispatch rule of profile.md: "zeal-table/" within those bytes) is read
    again by zealfw.tprofile, with its own bound."""
    buf, n = read(path, _MAX_FILE + 1)
    if buf.find(b"zeal-table/", 0, n) >= 0:
        buf = None
        from . import tprofile

        return tprofile.load(path)
    return loads(buf, n)


def loads(text, n=None):
    """The checked profile from the file's bytes (or its text); n: of its first n bytes. A
    table profile goes to zealfw.tprofile."""
    if isinstance(text, str):
        # a text longer than the longest table file is refused by either kind's size check:
        # refused here before its bytes are copied (a board's heap); its characters are at
        # most its bytes
        if len(text) > _MAX_ANY:
            raise ProfileError("size", "profile file is larger than %d bytes" % _MAX_ANY)
        text = text.encode()  # a non-ASCII character becomes bytes >= 0x80: "json"
    if n is None:
        n = len(text)
    # the dispatch rule of profile.md: "zeal-table/" within the first _MAX_FILE + 1 bytes
    if text.find(b"zeal-table/", 0, n if n <= _MAX_FILE else _MAX_FILE + 1) >= 0:
        from . import tprofile

        return tprofile.loads(text, n)
    if n > _MAX_FILE:
        raise ProfileError("size", "profile file is larger than %d bytes" % _MAX_FILE)
    return from_doc(parse(text, n))


def from_doc(doc):
    """Check a parsed profile object and return a Profile (ProfileError otherwise)."""
    ints = ("bits", "exponent", "n_cells", "n_window", "threshold")
    hexes = ("epsilon", "hi", "lo")
    cals = ("cal_gain", "cal_offset")
    required = ("format", "lo", "hi", "epsilon", "exponent", "bits", "n_cells", "n_window",
                "threshold", "fingerprint")
    if type(doc) is not dict:
        raise ProfileError("type", "a profile is a JSON object")
    if doc.get("format") != "zeal-profile/1":
        raise ProfileError("format", "unsupported profile format (this firmware reads "
                                     "zeal-profile/1)")
    for key in required:
        if key not in doc:
            raise ProfileError("missing", "profile is missing %s" % key)
    has_cal = (cals[0] in doc, cals[1] in doc)
    if has_cal[0] != has_cal[1]:
        raise ProfileError("missing", "cal_gain and cal_offset go together")
    for key in doc:
        if key not in required and key not in cals:
            raise ProfileError("unknown", "profile has an unknown key")
    for key in ints:
        if type(doc[key]) is not int:
            raise ProfileError("type", "%s must be an integer" % key)
    for key in hexes:
        check_hex(key, doc[key], 16)
    check_hex("fingerprint", doc["fingerprint"], 64)
    canon_cal = {}
    rationals = {}
    if has_cal[0]:
        for key in cals:
            check_string(key, doc[key])
            r = parse_rational(doc[key])
            rationals[key] = r
            canon_cal[key] = rational_text(r[0], r[1])

    # canonical bytes: sorted keys, "key":value, ints bare, strings quoted, no spaces. The
    # character checks above mean no string needs escaping, so this equals the host's
    # json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True).
    parts = []
    for key in sorted(doc):
        if key == "fingerprint":
            continue
        value = doc[key]
        if key in canon_cal:
            value = canon_cal[key]
        if type(value) is int:
            parts.append('"%s":%d' % (key, value))
        else:
            parts.append('"%s":"%s"' % (key, value))
    canonical = ("{%s}" % ",".join(parts)).encode()
    digest = hexlify(hashlib.sha256(canonical).digest()).decode()
    if digest != doc["fingerprint"]:
        raise ProfileError("fingerprint", "profile fingerprint does not match its contents")

    p = Profile()
    p.canonical = canonical
    p.fingerprint = digest
    lo = f64(doc["lo"])
    hi = f64(doc["hi"])
    eps = f64(doc["epsilon"])
    if not lo[0] * hi[1] < hi[0] * lo[1]:
        raise ProfileError("value", "lo must be below hi")
    if not 0 < eps[0] <= _EPS_MAX * eps[1]:
        raise ProfileError("value", "epsilon must be in (0, 20]")
    e = doc["exponent"]
    n = doc["n_cells"]
    nc = doc["n_window"]
    t = doc["threshold"]
    bits = doc["bits"]
    if not -1022 <= e <= 1023:
        raise ProfileError("value", "exponent outside the float64 range")
    if not 2 <= n <= _N_MAX or not 1 <= nc < n:
        raise ProfileError("value", "grid needs 2 <= N < 2^52 and 1 <= Nc < N")
    if not 0 < t < _WORD:
        raise ProfileError("value", "threshold must be in (0, 2^64)")
    if bits != bit_length(n):
        raise ProfileError("derived", "bits must be the bit length of n_cells")
    if t != threshold(n, nc, eps[0], eps[1]):
        raise ProfileError("derived", "threshold is not the certified one for epsilon")
    if not t * (n - nc) > (_WORD - t) * nc:
        raise ProfileError("privacy", "P_hi > P_lo fails: epsilon is too small for this grid")
    p.lo = lo
    p.hi = hi
    p.epsilon = eps
    p.exponent = e
    p.bits = bits
    p.n_cells = n
    p.n_window = nc
    p.threshold = t
    if has_cal[0]:
        gn, gd = rationals["cal_gain"]
        on, od = rationals["cal_offset"]
        p.cal = (on * gd, gn * od, od * gd)
    return p


# ---- the device's start ----------------------------------------------------------------------
def numbers(path):
    """For zealfw.main.run, which calls it for a grid profile (the sniff in
    zealfw.start.prepare) with this module alone loaded and frees it after. Every kind's loader returns the same: (kind,
    None), kind = (sampler, names, values): the sampler's module (here zealfw.mechanism,
    whose Zeal(prof, words) the loop feeds), and the numbers the start's last stage and the
    sampler read as prof's attributes `names`, among them bits (a report's width) and
    fingerprint (both in HELLO); here lo, hi, n_cells, n_window, threshold, k_lo, exponent,
    bits, cal, fingerprint. Plain data only, nothing that refers back to this module. Or
    ((None, (), ()), (STATUS code, message)): NO_PROFILE (1) for a missing file, else
    BAD_PROFILE (2). (The start's last stage is named by the sniff in zealfw.start.prepare: a
    string here would be interned whenever this module is loaded, by the conformance runner
    too, whose multi suite on the emulated board has no name to spare.)"""
    try:
        buf, n = read(path, _MAX_FILE + 1)
        p = loads(buf, n)
    except ProfileError as exc:
        return (None, (), ()), (1 if exc.reason == "missing_file" else 2, str(exc))
    return ("mechanism", ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo",
                          "exponent", "bits", "cal", "fingerprint"),
            (p.lo, p.hi, p.n_cells, p.n_window, p.threshold, p.k_lo, p.exponent, p.bits,
             p.cal, p.fingerprint)), None
