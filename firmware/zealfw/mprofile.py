"""Load and check a multi-attribute header, "zeal-multi/1", and its attribute files on the
device (shared_spec/multi.md; host: host/zeal/mechanism/multi/profile.py, same checks, same
order, same reason codes).

The header is a flat profile file (zealfw.pfile's grammar) with format, epsilon, d, k,
names, attrs and fingerprint. attrs holds d items joined by ".": "p" + the 64-hex
fingerprint of a numeric attribute's own profile file (grid or table, in "X.<i>.json" beside
the header "X.json"), or "o" + c (2 hex digits) + ratio_num (16 hex digits) for a
categorical attribute (OUE). Checks:
  size         the header is longer than _MAX_MULTI_FILE (1522) bytes
  json, type   the grammar and the value kinds
  format, missing, unknown
  type         d, k not ints; epsilon not a "0x" + 16 lowercase hex pattern; names, attrs
               not strings of [A-Za-z0-9+-./]; the fingerprint not 64 lowercase hex digits
  fingerprint  SHA-256 of the canonical bytes differs
  value        epsilon not finite in (0, 20]; d not in [1, 16]; k not in [1, d]; names not d
               distinct items of [A-Za-z0-9-]{1,16}; attrs not d items "p" + 64 hex or
               "o" + 2 hex + 16 hex with 2 <= c <= 63
  attr<i>:<r>  numeric attribute i, ascending: its file fails its own check list with
               reason r (zealfw.profile / zealfw.tprofile); "attr<i>:missing" when it cannot
               be read, "attr<i>:format" when it is a multi header
  attr         its fingerprint is not the one the header names (checked right after it loads)
  privacy      a numeric attribute with k epsilon_i > epsilon, or an OUE attribute without
               2^32 < ratio_num <= L(epsilon/k) 2^32 (L: the certified Taylor lower bound)
  missing_file, io   the header itself, as zealfw.profile
Integers only (the AST float ban covers this module).
"""
import hashlib
from binascii import hexlify

from .pfile import (ProfileError, check_hex, check_string, f64, exp_lower_bound, parse,
                    read)

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner and the tests run here too
    def const(x):
        return x

_MAX_MULTI_FILE = const(1522)
_MAX_ATTR_FILE = const(5784)   # = zealfw.tprofile._MAX_TABLE_FILE, the longest attribute file
_D_MAX = const(16)
_EPS_MAX = const(20)
_ONE = const(1 << 32)
_SNIFF = const(503)


def attr_path(path, i):
    """Attribute i's file beside the header: "X.json" -> "X.<i>.json" (no extension:
    "X" -> "X.<i>")."""
    slash = path.rfind("/") + 1
    dot = path.rfind(".")
    while slash < dot and path[slash] == ".":  # leading dots are not an extension
        slash += 1
    if dot <= slash:
        return "%s.%d" % (path, i)
    return "%s.%d%s" % (path[:dot], i, path[dot:])


def load(path):
    """The checked multi profile's fields (loads) from the header file and its attribute
    files beside it."""
    buf, n = read(path, _MAX_MULTI_FILE + 1)
    if n > _MAX_MULTI_FILE:
        raise ProfileError("size", "multi header is larger than %d bytes" % _MAX_MULTI_FILE)
    doc = parse(buf, n)
    buf = None

    def fetch(i):
        try:
            return read(attr_path(path, i), _MAX_ATTR_FILE + 1)
        except ProfileError:
            return None
    return from_doc(doc, fetch)


def loads(text, fetch, n=None):
    """The fields of a checked multi profile from the header's bytes; fetch(i) gives
    attribute i's file as (bytes, n) or bytes, or None when there is none."""
    if isinstance(text, str):
        text = text.encode()
    if n is None:
        n = len(text)
    if n > _MAX_MULTI_FILE:
        raise ProfileError("size", "multi header is larger than %d bytes" % _MAX_MULTI_FILE)
    return from_doc(parse(text, n), fetch)


def numbers(path):
    """For zealfw.main.run, the same (kind, err) as zealfw.profile.numbers: sampler
    zealfw.msample, with fields (as load gives them), fingerprint,
    bits (the longest report's), reports = 1 a tick and cats (per attribute: a categorical
    attribute's number of values, read as digits only, else 0); the sampler's module holds
    the board's Sender (of variable-length reports). NO_PROFILE for a missing header. (Every
    string here is interned when the module is loaded, by the conformance runner too: the
    names are ones the firmware has anyway.)"""
    try:
        f = load(path)
    except ProfileError as exc:
        return (None, (), ()), (1 if exc.reason == "missing_file" else 2, str(exc))
    return ("msample", ("fields", "fingerprint", "bits", "reports", "cats"),
            (f, f[-1], f[-2], 1, [a[0] if len(a) == 2 else 0 for a in f[3]])), None


def _items(text, d, what):
    out = text.split(".")
    if len(out) != d:
        raise ProfileError("value", "%s must hold d items joined by '.'" % what)
    return out


def _attribute(i, fp, fetch):
    """Attribute i's checked profile (zealfw.profile / tprofile object)."""
    got = fetch(i)
    if got is None:
        raise ProfileError("attr%d:missing" % i, "attribute %d's profile file is missing" % i)
    if type(got) is tuple:
        buf, n = got
    else:
        buf = got
        n = len(got)
    from . import profile

    try:
        if buf.find(b"zeal-multi/1", 0, n if n < _SNIFF else _SNIFF) >= 0:
            raise ProfileError("format", "an attribute file is a grid or table profile")
        p = profile.loads(buf, n)
    except ProfileError as exc:
        raise ProfileError("attr%d:%s" % (i, exc.reason), "attribute %d: %s" % (i, exc))
    if p.fingerprint != fp:
        raise ProfileError("attr", "attribute %d's file is not the one the header names" % i)
    return p


def from_doc(doc, fetch):
    """Check a parsed header and its attribute files. The fields: (d, k, index bits,
    [attribute], longest report's bits, fingerprint); an attribute is (c, ratio_num) for
    OUE, else the 11 fields zealfw.main's samplers read (lo, hi, n_cells, n_window,
    threshold, k_lo, exponent, bits, cal, fingerprint, table) -- for a table n_cells = R + 1,
    n_window = 1, k_lo = 0, table = (weights, N, [S_r]), as zealfw.tprofile.numbers sets them."""
    required = ("format", "epsilon", "d", "k", "names", "attrs", "fingerprint")
    if type(doc) is not dict:
        raise ProfileError("type", "a profile is a JSON object")
    if doc.get("format") != "zeal-multi/1":
        raise ProfileError("format", "unsupported profile format (this firmware reads "
                                     "zeal-multi/1)")
    for key in required:
        if key not in doc:
            raise ProfileError("missing", "multi header is missing %s" % key)
    for key in doc:
        if key not in required:
            raise ProfileError("unknown", "multi header has an unknown key")
    for key in ("d", "k"):
        if type(doc[key]) is not int:
            raise ProfileError("type", "%s must be an integer" % key)
    check_hex("epsilon", doc["epsilon"], 16)
    check_string("names", doc["names"])
    check_string("attrs", doc["attrs"])
    check_hex("fingerprint", doc["fingerprint"], 64)
    parts = []
    for key in sorted(doc):
        if key == "fingerprint":
            continue
        value = doc[key]
        if type(value) is int:
            parts.append('"%s":%d' % (key, value))
        else:
            parts.append('"%s":"%s"' % (key, value))
    digest = hexlify(hashlib.sha256(("{%s}" % ",".join(parts)).encode()).digest()).decode()
    parts = None
    if digest != doc["fingerprint"]:
        raise ProfileError("fingerprint", "profile fingerprint does not match its contents")
    ea, eb = f64(doc["epsilon"])
    if not 0 < ea <= _EPS_MAX * eb:
        raise ProfileError("value", "epsilon must be in (0, 20]")
    d = doc["d"]
    k = doc["k"]
    if not 1 <= d <= _D_MAX:
        raise ProfileError("value", "d must be in [1, 16]")
    if not 1 <= k <= d:
        raise ProfileError("value", "k must be in [1, d]")
    names = _items(doc["names"], d, "names")
    for i in range(d):
        nm = names[i]
        if not 1 <= len(nm) <= 16:
            raise ProfileError("value", "a name has 1 to 16 characters")
        for ch in nm.encode():
            if ch in b"+/":
                raise ProfileError("value", "a name holds only [A-Za-z0-9-]")
        if nm in names[:i]:
            raise ProfileError("value", "attribute names must be distinct")
    names = None
    items = _items(doc["attrs"], d, "attrs")
    for i in range(d):
        it = items[i].encode()
        ok = len(it) == (65 if it[:1] == b"p" else 19) and it[:1] in (b"p", b"o")
        for ch in it[1:]:
            if ch not in b"0123456789abcdef":
                ok = False
        if not ok:
            raise ProfileError("value", "attrs item %d must be p + 64 hex digits or "
                                        "o + 2 + 16 hex digits" % i)
        if it[:1] == b"o":
            c = int(it[1:3], 16)
            if not 2 <= c <= 63:
                raise ProfileError("value", "a categorical attribute has 2 to 63 values")
            items[i] = (c, int(it[3:], 16))
    doc = None
    eps = []  # the numeric attributes' epsilons, for the privacy checks below
    widths = []
    for i in range(d):
        it = items[i]
        if type(it) is tuple:
            eps.append(None)
            widths.append(it[0])
            continue
        p = _attribute(i, it[1:], fetch)
        eps.append(p.epsilon)
        widths.append(p.bits)
        if hasattr(p, "sums"):  # a table (zealfw.tprofile.Table)
            items[i] = (p.lo, p.hi, p.anchors + 1, 1, 1, 0, 0, p.bits, p.cal, p.fingerprint,
                        (p.weights, p.n_cells, p.sums))
        else:
            items[i] = (p.lo, p.hi, p.n_cells, p.n_window, p.threshold, p.k_lo, p.exponent,
                        p.bits, p.cal, p.fingerprint, None)
        p = None
    ls = None
    for i in range(d):
        e = eps[i]
        if e is None:
            if ls is None:  # L(epsilon/k), the certified lower bound of e^(epsilon/k)
                ls, ld = exp_lower_bound(ea, eb * k)
            rn = items[i][1]
            if not _ONE < rn or rn * ld > ls * _ONE:
                raise ProfileError("privacy", "attribute %d's OUE ratio must be in (2^32, "
                                              "L(epsilon/k) 2^32]" % i)
        elif k * e[0] * eb > ea * e[1]:
            raise ProfileError("privacy", "attribute %d's epsilon is above epsilon/k" % i)
    ib = 0
    while (d - 1) >> ib:
        ib += 1
    widths.sort()
    top = 0
    for w in widths[d - k:]:
        top += w
    return d, k, ib, items, k * ib + top, digest
