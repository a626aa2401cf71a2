"""Multi-attribute profiles "zeal-multi/1": the header file, its checks, the reference sampler
and the payload codec (shared_spec/multi.md; the maths is zeal.mechanism.multi.mechanism's).

A multi profile is a header file plus one ordinary attribute profile file per numeric
attribute (grid "zeal-profile/1" or table "zeal-table/1"), beside it: header "X.json" ->
attribute i in "X.<i>.json". The header is a flat object in the profile-file grammar
(pfile.parse) with the keys
    format "zeal-multi/1", epsilon (total budget, float64 pattern), d (1..16), k (1..d),
    names (d names [A-Za-z0-9-]{1,16} joined by "."), attrs (d items joined by "."):
    "p" + the attribute file's 64-hex fingerprint (numeric), or "o" + c (2 lowercase hex
    digits, 2..63) + ratio_num (16 lowercase hex digits) (categorical, OUE with
    q = 2^32/(ratio_num + 2^32), p = 1/2), and fingerprint.
The file is written with "format" first (then the other keys sorted): the sniff rule looks
for `zeal-multi/1` in the first 503 bytes, and a sorted file puts attrs (up to 1055
characters) before it. The fingerprint is SHA-256 of the canonical bytes (sorted keys), as
for every profile.

The checks (host and device, in this order, ProfileError.reason):
    size, json, type (value kinds), type (an object), format, missing, unknown,
    type (d, k ints; epsilon pattern; fingerprint; names and attrs strings of [A-Za-z0-9+-./]),
    fingerprint, value (epsilon finite in (0, 20]; d in 1..16; k in 1..d; names: d items of
    [A-Za-z0-9-]{1,16}, distinct; attrs: d items, each p+64 hex or o+2 hex+16 hex with
    2 <= c <= 63), then for each numeric attribute i ascending: its file loads with its own
    check list (reason "attr<i>:<its reason>"; a file that is not there: "attr<i>:missing";
    a multi header as attribute: "attr<i>:format"), "attr" if its fingerprint is not the
    header's; privacy: k * epsilon_i <= epsilon exactly (numeric), 2^32 < ratio_num <=
    L(epsilon/k) 2^32 (OUE, L = exp_lower_bound on the exact rational epsilon/k).

API: `MultiProfile` (kind "multi", bits 0), `Oue(c, ratio_num)`, `build(specs, epsilon, k=None)`,
`from_multi(multi)`, `loads(header, fetch)`, `load(path)`, `attribute_path(path, i)`,
`is_multi_file(prefix)`, `MAX_MULTI_FILE`, `MultiSampler(profile, words).sample(tuple)`,
`parse_line(profile, line)` (a replay line), `pack_multi(profile, reports)`,
`unpack_multi(profile, payload, count)`, `PayloadError` (reason length/padding/grid).
"""
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from fractions import Fraction

from ...errors import InputError, ProfileError, ReportError
from ..core import pfile as P
from ..grid import profile as GP
from ..table import profile as TP
from ..core.floatbits import bits_to_float32, bits_to_float64, exact
from .mechanism import Categorical, Multi, Numeric, eq12_k, oue_ratio
from ..core.draws import bernoulli, uniform_below
from ..grid.scalar import ExactZeal
from ..table.sampler import TableSampler
from ..core.words import system_words

FORMAT = "zeal-multi/1"
SNIFF = FORMAT.encode("ascii")
SNIFF_BYTES = P.MAX_FILE + 1
D_MAX = 16
C_MIN, C_MAX = 2, 63
NAME_MAX = 16
OUE_ONE = 1 << 32
MAX_BATCH_BITS = (1662 - 4) * 8    # a DATA body is at most MAX_BODY = 1662 bytes (4 of header)

_INT_KEYS = ("d", "k")
_REQUIRED = ("format", "epsilon", "d", "k", "names", "attrs", "fingerprint")
_NAME = re.compile(r"[A-Za-z0-9-]{1,16}\Z")
_NUMERIC = re.compile(r"p[0-9a-f]{64}\Z")
_OUE = re.compile(r"o[0-9a-f]{2}[0-9a-f]{16}\Z")
_fail = P._fail


def is_multi_file(data: bytes) -> bool:
    """The sniff rule: the first 503 bytes hold b"zeal-multi/1"."""
    return SNIFF in bytes(data[:SNIFF_BYTES])


def attribute_path(path, i: int) -> str:
    """Attribute i's file beside the header: "X.json" -> "X.<i>.json" (any other extension
    likewise: "X.ext" -> "X.<i>.ext"; no extension: "X" -> "X.<i>")."""
    root, ext = os.path.splitext(str(path))
    return "%s.%d%s" % (root, i, ext)


@dataclass(frozen=True)
class Oue:
    """A categorical attribute: c values, OUE with q = 2^32/(ratio_num + 2^32), p = 1/2."""

    c: int
    ratio_num: int
    kind = "oue"

    @property
    def bits(self) -> int:          # the value field: the c-bit vector
        return self.c

    @property
    def item(self) -> str:
        return "o%02x%016x" % (self.c, self.ratio_num)


def _header_text(doc: dict) -> str:
    """The file text: "format" first, then the other keys sorted (indent 1, as every profile)."""
    keys = ["format"] + sorted(k for k in doc if k != "format")
    return "{\n" + ",\n".join(' %s: %s' % (json.dumps(k), json.dumps(doc[k])) for k in keys) \
        + "\n}\n"


def _max_multi_file() -> int:
    """The longest header the limits allow: d = 16 numeric attributes, 16-character names."""
    doc = {"format": FORMAT, "epsilon": "0x" + "f" * 16, "d": D_MAX, "k": D_MAX,
           "names": ".".join(["x" * NAME_MAX] * D_MAX),
           "attrs": ".".join(["p" + "f" * 64] * D_MAX), "fingerprint": "f" * 64}
    return len(_header_text(doc))


MAX_MULTI_FILE = _max_multi_file()    # 1522 bytes (multi.md)


class MultiProfile(P.Canonical):
    """A checked multi profile: `attributes[i]` is a grid Profile, a TableProfile or an Oue."""

    kind = "multi"
    format = FORMAT
    bits = 0                     # HELLO announces 0: reports have variable length
    MAX_BYTES = MAX_MULTI_FILE
    calibration = None

    def __init__(self, *, epsilon, k, names, attributes):
        self.epsilon = float(epsilon)
        self.k = k
        self.names = list(names)
        self.attributes = list(attributes)
        self.d = len(self.attributes)
        self._multi = None

    # ---- layout -------------------------------------------------------------------------------
    @property
    def index_bits(self) -> int:
        """ceil(log2 d): 0 when d = 1."""
        return (self.d - 1).bit_length()

    def value_bits(self, j: int) -> int:
        return self.attributes[j].bits

    def max_report_bits(self) -> int:
        """The longest report: k index fields and the k widest value fields."""
        widths = sorted((a.bits for a in self.attributes), reverse=True)[:self.k]
        return self.k * self.index_bits + sum(widths)

    def max_batch(self) -> int:
        """The most reports a DATA frame may carry: 255, and the longest reports within
        the 1658 payload bytes of MAX_BODY."""
        return max(1, min(255, MAX_BATCH_BITS // self.max_report_bits()))

    def is_numeric(self, j: int) -> bool:
        return self.attributes[j].kind != "oue"

    def midpoint(self, j: int) -> Fraction:
        a = self.attributes[j]
        return (Fraction(a.lo) + Fraction(a.hi)) / 2

    # ---- canonical form and files ----------------------------------------------------------------
    def canonical(self) -> dict:
        return {"format": FORMAT,
                "epsilon": P.hex64(P.float64_to_bits(self.epsilon)),
                "d": self.d, "k": self.k, "names": ".".join(self.names),
                "attrs": ".".join(("p" + a.fingerprint) if a.kind != "oue" else a.item
                                  for a in self.attributes)}

    def to_json(self) -> str:
        doc = dict(self.canonical(), fingerprint=self.fingerprint)
        text = _header_text(doc)
        if len(text) > MAX_MULTI_FILE:   # unreachable by the limits; kept as a guard
            raise ProfileError("the multi header would be %d bytes; a device reads at most %d"
                               % (len(text), MAX_MULTI_FILE))
        return text

    def value_limits(self) -> list:
        """Per attribute, how many values its reports take (0..limit-1): a categorical
        attribute's 2^c OUE bit patterns, a numeric one's cells."""
        return [_value_limit(a) for a in self.attributes]

    def attribute_files(self) -> dict:
        """{i: file text} of the numeric attributes."""
        return {i: a.to_json() for i, a in enumerate(self.attributes) if a.kind != "oue"}

    def write(self, path) -> list:
        """Write the header to `path` and each numeric attribute's file beside it; the paths."""
        out = []
        try:
            for i, text in self.attribute_files().items():
                out.append(attribute_path(path, i))
                with open(out[-1], "w") as fh:
                    fh.write(text)
            with open(path, "w") as fh:
                fh.write(self.to_json())
        except OSError as exc:
            raise ProfileError("cannot write profile %s: %s"
                               % (exc.filename or path, exc.strerror or exc)) from None
        return [str(path)] + out

    # ---- the exact maths ----------------------------------------------------------------------
    def multi(self) -> Multi:
        """The same mechanism as a zeal.mechanism.multi.Multi (privacy certificate, variances,
        estimators). Categorical domains are the value indices "0" .. "c-1"."""
        if self._multi is None:
            atts = []
            for name, a in zip(self.names, self.attributes):
                if a.kind == "oue":
                    atts.append(Categorical(name, tuple(str(v) for v in range(a.c)),
                                            ratio_num=a.ratio_num))
                else:
                    atts.append(Numeric(name, a.lo, a.hi, bits=a.bits, mechanism=a))
            self._multi = Multi(atts, self.epsilon, k=self.k)
        return self._multi

    def __eq__(self, other):
        return isinstance(other, MultiProfile) and self.fingerprint == other.fingerprint

    def __hash__(self):
        return hash(self.fingerprint)

    def __repr__(self):
        return "MultiProfile(epsilon=%r, d=%d, k=%d, names=%r)" % (
            self.epsilon, self.d, self.k, self.names)


# ---- the checks ---------------------------------------------------------------------------------
def _more_types(doc):
    P._check_hex("epsilon", doc["epsilon"], 16, "0x", "a 64-bit pattern")
    for key in ("names", "attrs"):
        P._check_string(key, doc[key])


def header_checks(doc) -> dict:
    """The header's own checks (everything before the attribute files): format ... value.
    Returns {epsilon, d, k, names, items}."""
    if type(doc) is not dict:
        raise _fail("type", "a profile is a JSON object")
    if doc.get("format") != FORMAT:
        raise _fail("format", "unsupported profile format %r (this version reads %r)"
                    % (doc.get("format"), FORMAT))
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise _fail("missing", "multi profile is missing %s" % ", ".join(missing))
    unknown = sorted(k for k in doc if k not in _REQUIRED)
    if unknown:
        raise _fail("unknown", "multi profile has unknown keys: %s" % ", ".join(map(str, unknown)))
    for key in _INT_KEYS:
        if type(doc[key]) is not int:
            raise _fail("type", "multi profile: %s must be an integer" % key)
    _more_types(doc)
    P._check_hex("fingerprint", doc["fingerprint"], 64, "", "a SHA-256 digest")
    canon = {k: v for k, v in doc.items() if k != "fingerprint"}
    if hashlib.sha256(P.canonical_json(canon)).hexdigest() != doc["fingerprint"]:
        raise _fail("fingerprint", "multi profile fingerprint does not match its contents "
                    "(the file was edited or corrupted)")
    eps = bits_to_float64(int(doc["epsilon"][2:], 16))
    if not (math.isfinite(eps) and 0 < eps <= P.EPSILON_MAX):
        raise _fail("value", "multi profile: epsilon must be finite and in (0, %g]"
                    % P.EPSILON_MAX)
    d, k = doc["d"], doc["k"]
    if not 1 <= d <= D_MAX:
        raise _fail("value", "multi profile: d must be in [1, %d]" % D_MAX)
    if not 1 <= k <= d:
        raise _fail("value", "multi profile: k must be in [1, d]")
    names = doc["names"].split(".")
    if len(names) != d or not all(_NAME.match(n) for n in names):
        raise _fail("value", "multi profile: names must be d names of 1 to %d characters "
                    "[A-Za-z0-9-] joined by '.'" % NAME_MAX)
    if len(set(names)) != d:
        raise _fail("value", "multi profile: attribute names must be distinct")
    items = doc["attrs"].split(".")
    if len(items) != d:
        raise _fail("value", "multi profile: attrs must hold d items joined by '.'")
    parsed = []
    for i, item in enumerate(items):
        if _NUMERIC.match(item):
            parsed.append(("p", item[1:]))
        elif _OUE.match(item):
            c, ratio_num = int(item[1:3], 16), int(item[3:], 16)
            if not C_MIN <= c <= C_MAX:
                raise _fail("value", "multi profile: attribute %d has %d values; a categorical "
                            "attribute has %d to %d" % (i, c, C_MIN, C_MAX))
            parsed.append(("o", Oue(c, ratio_num)))
        else:
            raise _fail("value", "multi profile: attrs item %d must be p + 64 hex digits or "
                        "o + 2 + 16 hex digits" % i)
    return {"epsilon": eps, "d": d, "k": k, "names": names, "items": parsed}


def _attribute(i, fp, fetch):
    text = fetch(i, fp)
    if text is None:
        raise _fail("attr%d:missing" % i, "multi profile: attribute %d's profile file is "
                    "missing" % i)
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    text = bytes(text)
    try:
        if is_multi_file(text):
            raise _fail("format", "an attribute file is a grid or table profile, not a multi "
                        "header")
        prof = TP.loads(text) if TP.is_table_file(text) else GP.loads(text)
    except ProfileError as exc:
        raise _fail("attr%d:%s" % (i, getattr(exc, "reason", "value")),
                    "multi profile: attribute %d: %s" % (i, exc)) from None
    if prof.fingerprint != fp:
        raise _fail("attr", "multi profile: attribute %d's file has fingerprint %s, the header "
                    "names %s" % (i, prof.fingerprint[:16], fp[:16]))
    return prof


def privacy_checks(epsilon: float, k: int, attributes) -> None:
    """k eps_i <= eps (numeric), 2^32 < ratio_num <= L(eps/k) 2^32 (OUE), exactly."""
    eps = Fraction(epsilon)
    share = eps / k
    limit = None
    for i, a in enumerate(attributes):
        if a.kind == "oue":
            if limit is None:
                limit = P.exp_lower_bound(share) * OUE_ONE
            if not OUE_ONE < a.ratio_num <= limit:
                raise _fail("privacy", "multi profile: attribute %d's OUE ratio_num must be in "
                            "(2^32, L(epsilon/k) 2^32]" % i)
        elif k * Fraction(a.epsilon) > eps:
            raise _fail("privacy", "multi profile: attribute %d's epsilon %r is above "
                        "epsilon/k" % (i, a.epsilon))


def from_dict(doc, fetch) -> MultiProfile:
    """A checked multi profile from the parsed header; fetch(i, fingerprint) gives attribute
    i's file bytes (or None when there is none)."""
    h = header_checks(doc)
    atts = [(_attribute(i, v, fetch) if kind == "p" else v)
            for i, (kind, v) in enumerate(h["items"])]
    privacy_checks(h["epsilon"], h["k"], atts)
    prof = MultiProfile(epsilon=h["epsilon"], k=h["k"], names=h["names"], attributes=atts)
    if prof.fingerprint != doc["fingerprint"]:  # implied by the checks; kept as a guard
        raise _fail("fingerprint", "multi profile fingerprint does not match its contents")
    return prof


def loads(text, fetch) -> MultiProfile:
    """A checked multi profile from the header's bytes (or text) and fetch(i, fingerprint)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if len(text) > MAX_MULTI_FILE:
        raise _fail("size", "multi profile header is longer than %d bytes, the longest a "
                    "device reads" % MAX_MULTI_FILE)
    return from_dict(P.parse(bytes(text)), fetch)


def file_fetcher(path):
    """fetch(i, fingerprint) reading attribute_path(path, i) (None when it cannot be read)."""
    def fetch(i, _fp):
        try:
            with open(attribute_path(path, i), "rb") as fh:
                return fh.read(TP.MAX_TABLE_FILE + 1)
        except OSError:
            return None
    return fetch


def load(path) -> MultiProfile:
    data = P.read_file(path, MAX_MULTI_FILE)
    return loads(data, file_fetcher(path))


# ---- building -----------------------------------------------------------------------------------
def _check_name(name):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProfileError("attribute name %r must be 1 to %d characters of A-Z a-z 0-9 -"
                           % (name, NAME_MAX))


def build(specs, epsilon, *, k=None) -> MultiProfile:
    """A multi profile from attribute specs: multi.Numeric(name, lo, hi, bits="auto",
    mechanism="grid" or a table kind of table_profile.MECHANISMS) and multi.Categorical(name,
    domain) (or an int c for the domain size). k defaults to Eq. 12. Each numeric attribute is
    built at eps_a = the largest float64 <= eps/k; OUE at ratio_num = floor(L(eps/k) 2^32)."""
    specs = list(specs)
    if not 1 <= len(specs) <= D_MAX:
        raise ProfileError("a multi profile has 1 to %d attributes, got %d" % (D_MAX, len(specs)))
    eps_f = P.epsilon_at_most(epsilon)
    if not (math.isfinite(eps_f) and 0 < eps_f <= P.EPSILON_MAX):
        raise ProfileError("epsilon must be in (0, %g], got %r" % (P.EPSILON_MAX, epsilon))
    eps = Fraction(eps_f)
    d = len(specs)
    k = eq12_k(eps, d) if k is None else k
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d:
        raise ProfileError("k must be an integer in [1, d = %d], got %r" % (d, k))
    share = eps / k
    names, atts = [], []
    for spec in specs:
        _check_name(spec.name)
        names.append(spec.name)
        if spec.kind == "categorical":
            c = spec.domain if isinstance(spec.domain, int) else len(tuple(spec.domain))
            if not C_MIN <= c <= C_MAX:
                raise ProfileError("attribute %s: a categorical attribute has %d to %d values, "
                                   "got %d" % (spec.name, C_MIN, C_MAX, c))
            ratio_num = spec.ratio_num if spec.ratio_num is not None else int(
                oue_ratio(share) * OUE_ONE)
            if not ratio_num > OUE_ONE:
                raise ProfileError("attribute %s: epsilon/k = %s is too small for OUE at 2^-32"
                                   % (spec.name, float(share)))
            atts.append(Oue(c, ratio_num))
            continue
        eps_a = P.epsilon_at_most(share)
        mech = spec.mechanism
        try:
            if mech == "grid":
                from ..grid.choose import build as build_grid
                atts.append(build_grid(spec.lo, spec.hi, eps_a, bits=spec.bits))
            elif mech in TP.MECHANISMS:
                bits = 4 if spec.bits in (None, "auto") else spec.bits
                atts.append(TP.build(spec.lo, spec.hi, eps_a, mech, bits))
            else:
                raise ProfileError("unknown mechanism %r (grid or %s)"
                                   % (mech, ", ".join(TP.MECHANISMS)))
        except ProfileError as exc:
            raise ProfileError("attribute %s: %s" % (spec.name, exc)) from None
    if len(set(names)) != d:
        raise ProfileError("attribute names must be distinct")
    privacy_checks(eps_f, k, atts)
    prof = MultiProfile(epsilon=eps_f, k=k, names=names, attributes=atts)
    fetch = {fp: text for fp, text in ((a.fingerprint, a.to_json()) for a in atts
                                        if a.kind != "oue")}
    return loads(prof.to_json(), lambda i, fp: fetch.get(fp))   # every check, as a device


def from_multi(m: Multi) -> MultiProfile:
    """The profile of a zeal.mechanism.multi.Multi: grid parts as they are, tables through
    table_profile.from_table, categorical parts at the Multi's ratio (checked as loaded)."""
    atts = []
    for part in m.parts:
        if part.attr.kind == "categorical":
            atts.append(Oue(part.cells, int(part.ratio * OUE_ONE)))
        elif part.table is None:
            atts.append(part.profile)
        else:
            atts.append(TP.from_table(part.table))
    prof = MultiProfile(epsilon=float(m.epsilon), k=m.k, names=[a.name for a in m.attributes],
                        attributes=atts)
    fetch = {a.fingerprint: a.to_json() for a in atts if a.kind != "oue"}
    return loads(prof.to_json(), lambda i, fp: fetch.get(fp))


# ---- readings -----------------------------------------------------------------------------------
def _numeric_field(field: str, attr):
    """One numeric field in the single replay syntax: 16 hex digits (float64 pattern), 8
    (float32), or a decimal integer (raw count through the attribute's calibration). None if
    it is not one of these, not finite, or raw without a calibration."""
    try:
        if len(field) == 16 and all(c in "0123456789abcdefABCDEF" for c in field):
            v = bits_to_float64(int(field, 16))
        elif len(field) == 8 and all(c in "0123456789abcdefABCDEF" for c in field):
            v = bits_to_float32(int(field, 16))
        else:
            body = field[1:] if field[:1] in "+-" else field
            if not body or not all(c in "0123456789" for c in body):
                return None
            cal = getattr(attr, "calibration", None)
            if cal is None:
                return None
            return cal.offset + cal.gain * int(field)
    except ValueError:
        return None
    return exact(v) if math.isfinite(v) else None


def parse_line(profile: MultiProfile, line) -> list:
    """A multi replay line -> d readings (None for an invalid field): d comma-separated
    fields, spaces around each ignored; numeric in the single replay syntax, categorical a
    decimal integer 0..c-1 (digits only). A wrong number of fields: every attribute None."""
    if isinstance(line, (bytes, bytearray)):
        line = bytes(line).decode("ascii", "replace")
    fields = line.strip().split(",")
    if len(fields) != profile.d:
        return [None] * profile.d
    out = []
    for a, field in zip(profile.attributes, fields):
        field = field.strip(" ")
        if a.kind == "oue":
            ok = field and all(c in "0123456789" for c in field) and int(field) < a.c
            out.append(int(field) if ok else None)
        else:
            out.append(_numeric_field(field, a))
    return out


def _valid_numeric(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return exact(value) if math.isfinite(value) else None
    try:                                    # numpy scalars
        f = float(value)
    except (TypeError, ValueError):
        return None
    return exact(f) if math.isfinite(f) else None


# ---- the reference sampler ----------------------------------------------------------------------
class MultiSampler:
    """`MultiSampler(profile, words).sample(readings) -> [(j, y_j)]`, ascending j: the word
    contract of multi.md (subset by a partial Fisher-Yates, then each sampled attribute's own
    sampler). readings: a tuple of d values (numeric: float, int, Fraction; categorical: an
    int 0..c-1), or a replay line (str). Invalid values are replaced before any word is drawn
    (numeric: the attribute's (lo + hi)/2, categorical: 0), counted in `replaced`;
    `clamped` counts numeric readings clamped to [lo, hi]."""

    def __init__(self, profile: MultiProfile, words=None):
        if not isinstance(profile, MultiProfile):
            raise TypeError("profile must be a zeal.mechanism.multi.profile.MultiProfile")
        self.profile = profile
        self.words = words if words is not None else system_words()
        self.replaced = 0
        self._samplers = []
        for a in profile.attributes:
            if a.kind == "oue":
                self._samplers.append(None)
            elif a.kind == "table":
                self._samplers.append(TableSampler(a, self.words))
            else:
                self._samplers.append(ExactZeal(profile=a, words=self.words))

    @property
    def clamped(self) -> int:
        return sum(s.clamped for s in self._samplers if s is not None)

    def readings(self, values) -> list:
        """The d readings actually privatised (invalid ones replaced)."""
        prof = self.profile
        if isinstance(values, (str, bytes, bytearray)):
            values = parse_line(prof, values)
        values = list(values) if values is not None else []
        if len(values) != prof.d:
            values = [None] * prof.d
        out = []
        for j, (a, v) in enumerate(zip(prof.attributes, values)):
            if a.kind == "oue":
                ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v < a.c
                if not ok:
                    try:
                        ok = int(v) == v and 0 <= int(v) < a.c  # numpy integers
                        v = int(v) if ok else v
                    except (TypeError, ValueError, OverflowError):
                        ok = False
                out.append(int(v) if ok else 0)
            else:
                x = _valid_numeric(v)
                out.append(prof.midpoint(j) if x is None else x)
                ok = x is not None
            if not ok:
                self.replaced += 1
        return out

    def sample(self, values, words=None) -> list:
        words = words if words is not None else self.words
        prof = self.profile
        xs = self.readings(values)
        perm = list(range(prof.d))
        for i in range(prof.k):
            r = i + uniform_below(prof.d - i, words)
            perm[i], perm[r] = perm[r], perm[i]
        out = []
        for j in sorted(perm[:prof.k]):
            a = prof.attributes[j]
            if a.kind == "oue":
                y = 0
                for v in range(a.c):
                    bit = (bernoulli(1, 2, words) if v == xs[j]
                           else bernoulli(OUE_ONE, a.ratio_num + OUE_ONE, words))
                    y |= bit << v
            elif a.kind == "table":
                y = self._samplers[j].sample_exact(xs[j], words)
            else:
                y = self._samplers[j].sample_offset(xs[j], words)
            out.append((j, y))
        return out


# ---- the payload --------------------------------------------------------------------------------
class PayloadError(ReportError):
    """A multi payload that does not belong to the profile: reason length, padding or grid."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _value_limit(a) -> int:
    return (1 << a.c) if a.kind == "oue" else a.n_cells


def check_report(profile: MultiProfile, report) -> list:
    """A report as [(j, y)]: k pairs, j strictly ascending below d, y a value of attribute j."""
    pairs = [(int(j), int(y)) for j, y in report]
    if len(pairs) != profile.k:
        raise PayloadError("grid", "a report has %d pairs; the profile's k is %d"
                           % (len(pairs), profile.k))
    last = -1
    for j, y in pairs:
        if not last < j < profile.d:
            raise PayloadError("grid", "attribute indices must ascend below d = %d" % profile.d)
        if not 0 <= y < _value_limit(profile.attributes[j]):
            raise PayloadError("grid", "value %d is not a report of attribute %d" % (y, j))
        last = j
    return pairs


def pack_multi(profile: MultiProfile, reports) -> bytes:
    """Reports -> the DATA payload: per pair the index field (ceil(log2 d) bits) then the
    value field (the attribute's m bits, or c for OUE), each appended at the next bit position
    with its least significant bit first (as pack_reports appends m-bit reports), the stream
    read as a little-endian integer and padded with zero bits to a whole byte."""
    acc, pos = 0, 0
    ib = profile.index_bits
    for report in reports:
        for j, y in check_report(profile, report):
            acc |= j << pos
            pos += ib
            acc |= y << pos
            pos += profile.attributes[j].bits
    return acc.to_bytes((pos + 7) // 8, "little")


def unpack_multi(profile: MultiProfile, payload: bytes, count: int) -> list:
    """The DATA payload -> `count` reports [(j, y)]. PayloadError: "length" (the payload ends
    inside a report, or has bytes beyond the last report's), "padding" (a non-zero bit after
    the last report), "grid" (indices not ascending below d, a value not of its attribute)."""
    payload = bytes(payload)
    total = len(payload) * 8
    acc = int.from_bytes(payload, "little")
    ib, imask = profile.index_bits, (1 << profile.index_bits) - 1
    d, k = profile.d, profile.k
    pos, out = 0, []
    for _ in range(count):
        report, last = [], -1
        for _ in range(k):
            if pos + ib > total:
                raise PayloadError("length", "the DATA payload ends inside a report")
            j = (acc >> pos) & imask
            pos += ib
            if not last < j < d:
                raise PayloadError("grid", "attribute index %d after %d (d = %d): not "
                                   "ascending below d" % (j, last, d))
            a = profile.attributes[j]
            if pos + a.bits > total:
                raise PayloadError("length", "the DATA payload ends inside a report")
            y = (acc >> pos) & ((1 << a.bits) - 1)
            pos += a.bits
            if y >= _value_limit(a):
                raise PayloadError("grid", "value %d is not a report of attribute %d" % (y, j))
            report.append((j, y))
            last = j
        out.append(report)
    if (pos + 7) // 8 != len(payload):
        raise PayloadError("length", "DATA payload of %d bytes; its %d reports use %d bits"
                           % (len(payload), count, pos))
    if acc >> pos:
        raise PayloadError("padding", "non-zero padding bits after the last report")
    return out


def report_bits(profile: MultiProfile, report) -> int:
    """The bits one report takes in the payload (before the frame's padding)."""
    return sum(profile.index_bits + profile.attributes[j].bits for j, _ in report)


__all__ = ["FORMAT", "MAX_MULTI_FILE", "MultiProfile", "Oue", "MultiSampler", "PayloadError",
           "attribute_path", "build", "check_report", "file_fetcher", "from_dict", "from_multi",
           "is_multi_file", "load", "loads", "pack_multi", "parse_line", "report_bits",
           "unpack_multi", "InputError"]
