"""Load and check a shuffle profile, "zeal-shuffle/2", on the device (shared_spec/shuffle.md,
the profile section; host: host/zeal/mechanism/shuffle/profile.py, `device_checks`).

The file grammar, the character set, the float64 hex patterns and the fingerprint rule are
the grid profile's (zealfw.pfile). Checks, in the host's order, with its reason codes:
  size         longer than _MAX_SHUFFLE_FILE (2802) bytes (the host's MAX_SHUFFLE_FILE)
  json, type   the grammar and the value kinds (zealfw.pfile.parse)
  format       "format" is not "zeal-shuffle/2" ("zeal-shuffle/1", t pairs linked in one
               message, with its own message: withdrawn, see shuffle.md "Messages")
  missing      a required key is absent
  unknown      a key the schema does not know
  type         d, levels, t, n, gamma_num, gamma_den not ints; epsilon, delta,
               message_epsilon not "0x" + 16 lowercase hex digits; the fingerprint not 64;
               ranges not a string of [0-9a-fx.]
  fingerprint  SHA-256 of the canonical bytes differs
  value        epsilon not in (0, 6), delta not in (0, 1), message_epsilon not in (0, 1],
               d not in [1, 64], levels not in [1, 15], t not in [1, d], n not in
               [2, 2^63), not 0 < gamma_num < gamma_den < 2^63, ranges not 2d patterns
               "0x" + 16 lowercase hex joined by ".", a bound not finite, lo_c >= hi_c (in
               that order)
  derived      ceil(log2 d) + ceil(log2(levels + 1)) > 52 (cannot happen within the value
               limits: at most 10 bits; kept as the host keeps it)
  privacy      the integer privacy rule refuses (zealfw.sgamma, the twin of the host's
               shuffle_rule: gamma, message_epsilon, n, d, levels and t must prove
               (epsilon, delta)); the message is the host's
  missing_file, io   as zealfw.profile
Every check is the host's too, the privacy rule included: the device refuses exactly the
files the host refuses. zealfw.sgamma is imported only here, at the end of the checks;
zealfw.mstart frees it before the Sender is made.
Integers only (the AST float ban covers this module).
"""
import hashlib
from binascii import hexlify

from .pfile import ProfileError, bit_length, check_hex, check_string, f64, parse, read

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner and the tests run here too
    def const(x):
        return x

_MAX_SHUFFLE_FILE = const(2802)
_D_MAX = const(64)
_LEVELS_MAX = const(15)
_INT_LIMIT = const(1 << 63)
_BITS_MAX = const(52)
_EPS_MAX = const(6)


def load(path):
    """The checked shuffle profile's fields from a file (at most _MAX_SHUFFLE_FILE + 1
    bytes read)."""
    buf, n = read(path, _MAX_SHUFFLE_FILE + 1)
    return loads(buf, n)


def loads(text, n=None):
    """The fields of a checked shuffle profile from the file's bytes (or its first n):
    (d, levels, t, gamma_num, gamma_den, ranges [(lo, hi) exact (num, den) pairs], bits,
    fingerprint); bits is one message's (one wire report's), P = ceil(log2 d) +
    ceil(log2(levels + 1)): a reading sends t of them."""
    if isinstance(text, str):
        text = text.encode()
    if n is None:
        n = len(text)
    if n > _MAX_SHUFFLE_FILE:
        raise ProfileError("size", "shuffle profile is larger than %d bytes" % _MAX_SHUFFLE_FILE)
    return from_doc(parse(memoryview(text), n))


def numbers(path):
    """For zealfw.main.run, the same (kind, err) as zealfw.profile.numbers: sampler
    zealfw.srand, with fields (as loads gives them), fingerprint, bits
    (one message's), reports = t (messages) a tick and cats = None (no categorical field);
    the sampler's module holds the board's Sender (zealfw.wire's: zealfw.mstart imports the
    randomiser with it, at the stage; imported later, in the loop, it left the costliest
    privacy check's start short of heap)."""
    try:
        f = load(path)
    except ProfileError as exc:
        return (None, (), ()), (1 if exc.reason == "missing_file" else 2, str(exc))
    return ("srand", ("fields", "fingerprint", "bits", "reports", "cats"),
            (f, f[-1], f[-2], f[2], None)), None


def from_doc(doc):
    ints = ("d", "levels", "t", "n", "gamma_num", "gamma_den")
    required = ("format", "d", "levels", "t", "n", "epsilon", "delta", "message_epsilon",
                "gamma_num", "gamma_den", "ranges", "fingerprint")
    if type(doc) is not dict:
        raise ProfileError("type", "a profile is a JSON object")
    if doc.get("format") == "zeal-shuffle/1":
        raise ProfileError("format", "a zeal-shuffle/1 profile (t pairs linked in one message, "
                                     "whose gamma did not give the claimed (epsilon, delta) for "
                                     "t >= 2) is no longer accepted: make a new one")
    if doc.get("format") != "zeal-shuffle/2":
        raise ProfileError("format", "unsupported profile format (this firmware reads "
                                     "zeal-shuffle/2)")
    for key in required:
        if key not in doc:
            raise ProfileError("missing", "shuffle profile is missing %s" % key)
    for key in doc:
        if key not in required:
            raise ProfileError("unknown", "shuffle profile has an unknown key")
    for key in ints:
        if type(doc[key]) is not int:
            raise ProfileError("type", "%s must be an integer" % key)
    check_hex("epsilon", doc["epsilon"], 16)
    check_hex("delta", doc["delta"], 16)
    check_hex("message_epsilon", doc["message_epsilon"], 16)
    check_hex("fingerprint", doc["fingerprint"], 64)
    text = doc["ranges"]
    check_string("ranges", text)
    for ch in text.encode():
        if ch not in b"0123456789abcdefx.":
            raise ProfileError("type", "ranges holds only 0x patterns joined by '.'")
    # the fingerprint: SHA-256 of the canonical bytes (sorted keys, no spaces), piece by piece
    h = hashlib.sha256()
    sep = b"{"
    for key in sorted(doc):
        if key == "fingerprint":
            continue
        h.update(sep)
        sep = b","
        value = doc[key]
        if type(value) is int:
            h.update(('"%s":%d' % (key, value)).encode())
        else:
            h.update(('"%s":"' % key).encode())
            h.update(value.encode())
            h.update(b'"')
    h.update(b"}")
    digest = hexlify(h.digest()).decode()
    if digest != doc["fingerprint"]:
        raise ProfileError("fingerprint", "profile fingerprint does not match its contents")
    eps = f64(doc["epsilon"])
    if not 0 < eps[0] < _EPS_MAX * eps[1]:
        raise ProfileError("value", "epsilon must be in (0, 6)")
    delta = f64(doc["delta"])
    if not 0 < delta[0] < delta[1]:
        raise ProfileError("value", "delta must be in (0, 1)")
    e_m = f64(doc["message_epsilon"])
    if not 0 < e_m[0] <= e_m[1]:
        raise ProfileError("value", "message_epsilon must be in (0, 1]")
    d = doc["d"]
    k = doc["levels"]
    t = doc["t"]
    n = doc["n"]
    if not 1 <= d <= _D_MAX:
        raise ProfileError("value", "d must be in [1, 64]")
    if not 1 <= k <= _LEVELS_MAX:
        raise ProfileError("value", "levels must be in [1, 15]")
    if not 1 <= t <= d:
        raise ProfileError("value", "t must be in [1, d]")
    if not 2 <= n < _INT_LIMIT:
        raise ProfileError("value", "n must be in [2, 2^63)")
    gn = doc["gamma_num"]
    gd = doc["gamma_den"]
    if not 0 < gn < gd < _INT_LIMIT:
        raise ProfileError("value", "gamma needs 0 < gamma_num < gamma_den < 2^63")
    # ranges: 2d patterns of 18 characters joined by "." (the characters are checked above)
    if len(text) != 19 * 2 * d - 1:
        raise ProfileError("value", "ranges must hold 2d patterns '0x' + 16 hex digits")
    ranges = []
    lo = None
    for i in range(2 * d):
        o = 19 * i
        if (text[o:o + 2] != "0x" or (i and text[o - 1] != ".")
                or text.find("x", o + 2, o + 18) >= 0 or text.find(".", o, o + 18) >= 0):
            raise ProfileError("value", "ranges must hold 2d patterns '0x' + 16 hex digits")
        v = f64(text[o:o + 18])  # "value" for NaN and infinities
        if lo is None:
            lo = v
        else:
            if not lo[0] * v[1] < v[0] * lo[1]:
                raise ProfileError("value", "every range needs lo < hi")
            ranges.append((lo, v))
            lo = None
    bits = bit_length(d - 1) + bit_length(k)  # one message: a coordinate and a level
    if bits > _BITS_MAX:
        raise ProfileError("derived", "a message needs more than 52 bits")
    doc = text = None  # the rule's big ints need the room more than the parsed file
    from .sgamma import refusal

    why = refusal(eps, delta, e_m, n, d, k, t, (gn, gd))
    if why is not None:
        raise ProfileError("privacy", "shuffle profile: " + why)
    return d, k, t, gn, gd, ranges, bits, digest
