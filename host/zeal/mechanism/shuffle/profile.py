"""Shuffle profiles: the file format "zeal-shuffle/2" (shared_spec/shuffle.md, "Profile").

A shuffle profile fixes everything a device's local randomiser (zeal.mechanism.shuffle.mechanism,
seed 004) needs: d coordinates, levels k, t messages a reading, the configured batch of n
readings, the (epsilon, delta) the parameters were built for, the blanket probability
gamma = gamma_num / gamma_den, the certificate message_epsilon, and each coordinate's reading range (lo_c, hi_c), by which a
device maps its reading c to [0, 1]: (x - lo_c) / (hi_c - lo_c) exactly, clamped to [0, 1];
an invalid reading (NaN, an infinity, a bad replay field) becomes 1/2, the midpoint.

The file uses the grid profile's grammar (`pfile.parse`), character set, canonical form and
fingerprint rule. Its checks, in order and with the reason codes of profile.md:

    size, json, type (value kinds), format, missing, unknown, type (ints, hex patterns,
    fingerprint, ranges' characters), fingerprint,
    value (epsilon, delta, message_epsilon, d, levels, t, n, gamma, ranges: in that order),
    derived (message bits <= 52), privacy (shuffle_rule.refusal: the integer rule that proves
    (epsilon, delta) from gamma, message_epsilon, n, d, levels and t).

The device makes every check, the privacy rule included (firmware/zealfw/sgamma.py runs the
same integer steps), so it refuses exactly the files the host refuses. "zeal-shuffle/1"
files (t pairs linked in one message, whose gamma did not give the claimed guarantee for
t >= 2) are still recognised by the sniff rule and refused with reason "format".

Key "ranges" (the contract's draft called it "bounds"): keys are sorted in the file, and a
key sorting before "format" would push the format string past the 503 bytes the sniff rule
looks at once d is large; "ranges" sorts after it, so "zeal-shuffle/2" ends by byte ~200.

API: `ShuffleProfile` (kind "shuffle"; `.params` is the shuffle.Params the randomiser and the
analyzer take), `build(params, ranges)`, `build_from(epsilon=, delta=, n=, d=, k=, t=,
ranges=)`, `loads(bytes)`, `load(path)`, `from_dict(doc)`, `device_checks(doc)`,
`is_shuffle_file(prefix)`, `map_reading(profile, c, value)`, `ShuffleSampler(profile,
words).sample(readings) -> the t message ints`, `MAX_SHUFFLE_FILE`.
"""
import hashlib
import json
import math
from fractions import Fraction

from ...errors import ProfileError
from ..core import pfile as P
from . import mechanism as S
from . import rule as R
from ..core.floatbits import bits_to_float64, float64_to_bits, hex64

FORMAT = "zeal-shuffle/2"
OLD_FORMAT = "zeal-shuffle/1"     # linked messages: refused (format), see the docstring
SNIFF = b"zeal-shuffle/"          # both versions are shuffle files; the format check decides
SNIFF_BYTES = P.MAX_FILE + 1      # the sniff looks at the first 503 bytes
D_MAX = 64
LEVELS_MAX = 15
INT_LIMIT = 1 << 63               # n, gamma_num, gamma_den < 2^63
MESSAGE_BITS_MAX = 52             # one wire report (wire_format.md MAX_BITS)
EPS_MAX = S.EPS_MAX               # epsilon < 6: the paper's range

_INT_KEYS = ("d", "levels", "t", "n", "gamma_num", "gamma_den")
_HEX_KEYS = ("epsilon", "delta", "message_epsilon")
_REQUIRED = ("format", "d", "levels", "t", "n", "epsilon", "delta", "message_epsilon",
             "gamma_num", "gamma_den", "ranges", "fingerprint")
_RANGE_CHARS = frozenset("0123456789abcdefx.")
_fail = P._fail


def _max_file() -> int:
    """An upper bound of any file the checks accept, as the host writes it: every field at
    its widest (d = 64 so 128 range patterns, 2-digit d/levels/t, 19-digit n and gamma)."""
    doc = {"format": FORMAT, "d": 64, "levels": 15, "t": 64, "n": INT_LIMIT - 1,
           "epsilon": "0x" + "f" * 16, "delta": "0x" + "f" * 16,
           "message_epsilon": "0x" + "f" * 16, "gamma_num": INT_LIMIT - 1, "gamma_den": INT_LIMIT - 1,
           "ranges": ".".join(["0x" + "f" * 16] * (2 * D_MAX)), "fingerprint": "f" * 64}
    return len(json.dumps(doc, sort_keys=True, indent=1) + "\n")


MAX_SHUFFLE_FILE = _max_file()    # 2802 bytes (shuffle.md)


def is_shuffle_file(data: bytes) -> bool:
    """The sniff rule: the first 503 bytes hold b"zeal-shuffle/" (either version)."""
    return SNIFF in bytes(data[:SNIFF_BYTES])


def _hexf(x: float) -> str:
    return hex64(float64_to_bits(float(x)))


def _unhex(text: str) -> float:
    return bits_to_float64(int(text[2:], 16))


def float_at_most(value, what) -> float:
    """The largest float64 <= value (exact for floats; decimals, Fractions, strings rounded
    down), so a stored epsilon or delta never claims less than was asked for... by more."""
    try:
        return P.epsilon_at_most(value)
    except ProfileError as exc:
        raise ProfileError(str(exc).replace("epsilon", what)) from None


# ---- the profile ----------------------------------------------------------------------------
class ShuffleProfile(P.Canonical):
    """A checked shuffle profile (build with build/build_from/loads; do not mutate)."""

    kind = "shuffle"
    format = FORMAT
    MAX_BYTES = MAX_SHUFFLE_FILE
    k_lo = 0
    wire_base = 0
    calibration = None

    def __init__(self, *, epsilon, delta, message_epsilon, d, levels, t, n, gamma_num,
                 gamma_den, ranges):
        self.epsilon, self.delta = float(epsilon), float(delta)
        self.message_epsilon = float(message_epsilon)
        self.d, self.levels, self.t, self.n = int(d), int(levels), int(t), int(n)
        self.gamma_num, self.gamma_den = int(gamma_num), int(gamma_den)
        self.ranges = [(float(lo), float(hi)) for lo, hi in ranges]
        self._params = None

    @property
    def gamma(self) -> Fraction:
        return Fraction(self.gamma_num, self.gamma_den)

    @property
    def coord_bits(self) -> int:
        return (self.d - 1).bit_length()

    @property
    def level_bits(self) -> int:
        return self.levels.bit_length()

    @property
    def bits(self) -> int:
        """Bits of one message = one wire report: ceil(log2 d) + ceil(log2(k + 1)); a
        reading sends t of them."""
        return self.coord_bits + self.level_bits

    @property
    def reports_per_reading(self) -> int:
        return self.t

    @property
    def k_hi(self) -> int:
        return (1 << self.bits) - 1

    @property
    def n_cells(self) -> int:
        """Every m-bit value is a report the wire can carry (the analyzer refuses messages
        no randomiser sends); wire decoders check reports against [0, n_cells)."""
        return 1 << self.bits

    @property
    def params(self) -> S.Params:
        """The shuffle.Params of this profile: its stored (epsilon, delta) as exact rationals
        and its stored gamma (which the analyzer debiases with)."""
        if self._params is None:
            eps, dlt = Fraction(self.epsilon), Fraction(self.delta)
            e_m = Fraction(self.message_epsilon)
            regime = "balle-t1" if self.t == 1 else ("basic" if self.t * e_m <= eps
                                                     else "advanced")
            self._params = S.Params(epsilon=eps, delta=dlt, n=self.n, d=self.d,
                                    k=self.levels, t=self.t, gamma=self.gamma, regime=regime,
                                    epsilon_message=e_m)
        return self._params

    def canonical(self) -> dict:
        return {"format": FORMAT, "d": self.d, "levels": self.levels, "t": self.t,
                "n": self.n, "epsilon": _hexf(self.epsilon), "delta": _hexf(self.delta),
                "message_epsilon": _hexf(self.message_epsilon),
                "gamma_num": self.gamma_num, "gamma_den": self.gamma_den,
                "ranges": ".".join(_hexf(v) for lo_hi in self.ranges for v in lo_hi)}

    def __eq__(self, other):
        return isinstance(other, ShuffleProfile) and self.canonical() == other.canonical()

    def __hash__(self):
        return hash(self.fingerprint)

    def __repr__(self):
        return ("ShuffleProfile(d=%d, levels=%d, t=%d, n=%d, epsilon=%r, delta=%r, gamma=%s)"
                % (self.d, self.levels, self.t, self.n, self.epsilon, self.delta, self.gamma))


# ---- readings -------------------------------------------------------------------------------
def map_reading(profile: ShuffleProfile, c: int, value) -> Fraction:
    """Reading c (a float, int or Fraction) -> the exact rational in [0, 1] the randomiser
    takes: (x - lo_c)/(hi_c - lo_c), clamped; NaN, an infinity or anything not a number (an
    invalid reading) -> 1/2."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        return Fraction(1, 2)
    if isinstance(value, float) and not math.isfinite(value):
        return Fraction(1, 2)
    lo, hi = (Fraction(v) for v in profile.ranges[c])
    pos = (Fraction(value) - lo) / (hi - lo)
    return min(max(pos, Fraction(0)), Fraction(1))


def map_readings(profile: ShuffleProfile, readings) -> list:
    """A reading tuple -> d rationals in [0, 1]; a tuple of the wrong length makes every
    coordinate invalid (1/2), as a replay line with the wrong number of fields does."""
    readings = list(readings) if isinstance(readings, (list, tuple)) else []
    if len(readings) != profile.d:
        return [Fraction(1, 2)] * profile.d
    return [map_reading(profile, c, v) for c, v in enumerate(readings)]


class ShuffleSampler:
    """The host reference of a shuffle board: readings -> t messages (t wire reports)."""

    def __init__(self, profile: ShuffleProfile, words):
        self.profile = profile
        self.words = words

    def pairs(self, readings) -> list:
        p = self.profile
        return S.randomise(p.params, map_readings(p, readings), self.words)

    def sample(self, readings) -> list:
        """The t message integers, in the order the device sends them as reports."""
        p = self.profile.params
        return [S.encode_message(p, pair) for pair in self.pairs(readings)]


# ---- the checks -----------------------------------------------------------------------------
def _types(doc):
    """Check 7: ints, hex patterns, fingerprint, ranges' characters."""
    if type(doc) is not dict:
        raise _fail("type", "a profile is a JSON object")
    for key in _INT_KEYS:
        if type(doc[key]) is not int:
            raise _fail("type", "shuffle profile: %s must be an integer" % key)
    for key in _HEX_KEYS:
        P._check_hex(key, doc[key], 16, "0x", "a 64-bit pattern")
    P._check_hex("fingerprint", doc["fingerprint"], 64, "", "a SHA-256 digest")
    P._check_string("ranges", doc["ranges"])
    if not set(doc["ranges"]) <= _RANGE_CHARS:
        raise _fail("type", "shuffle profile: ranges holds only 0x patterns joined by '.'")


def _ranges(text: str, d: int) -> list:
    parts = text.split(".")
    if len(parts) != 2 * d:
        raise _fail("value", "shuffle profile: ranges must hold 2d = %d patterns" % (2 * d))
    for part in parts:
        if len(part) != 18 or part[:2] != "0x" or not set(part[2:]) <= P._HEXDIGITS:
            raise _fail("value", "shuffle profile: each range bound is '0x' and 16 lowercase "
                        "hex digits")
    vals = [_unhex(p) for p in parts]
    out = []
    for c in range(d):
        lo, hi = vals[2 * c], vals[2 * c + 1]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise _fail("value", "shuffle profile: range %d must be finite" % c)
        if not lo < hi:
            raise _fail("value", "shuffle profile: range %d needs lo < hi" % c)
        out.append((lo, hi))
    return out


def device_checks(doc) -> dict:
    """Every check the device makes, in order (module docstring). Returns the decoded fields;
    ProfileError with .reason otherwise."""
    if type(doc) is not dict:
        raise _fail("type", "a profile is a JSON object")
    if doc.get("format") == OLD_FORMAT:
        raise _fail("format", "a zeal-shuffle/1 profile (t pairs linked in one message, whose "
                    "gamma did not give the claimed (epsilon, delta) for t >= 2) is no longer "
                    "accepted: make a new one with zeal profile --shuffle")
    if doc.get("format") != FORMAT:
        raise _fail("format", "unsupported profile format %r (this version reads %r)"
                    % (doc.get("format"), FORMAT))
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise _fail("missing", "shuffle profile is missing %s" % ", ".join(missing))
    unknown = sorted(k for k in doc if k not in _REQUIRED)
    if unknown:
        raise _fail("unknown", "shuffle profile has unknown keys: %s"
                    % ", ".join(map(str, unknown)))
    _types(doc)
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    if hashlib.sha256(P.canonical_json(core)).hexdigest() != doc["fingerprint"]:
        raise _fail("fingerprint", "shuffle profile fingerprint does not match its contents "
                    "(the file was edited or corrupted)")
    eps, dlt = _unhex(doc["epsilon"]), _unhex(doc["delta"])
    if not (math.isfinite(eps) and 0 < eps < EPS_MAX):
        raise _fail("value", "shuffle profile: epsilon must be in (0, %d)" % EPS_MAX)
    if not (math.isfinite(dlt) and 0 < dlt < 1):
        raise _fail("value", "shuffle profile: delta must be in (0, 1)")
    e_m = _unhex(doc["message_epsilon"])
    if not (math.isfinite(e_m) and 0 < e_m <= 1):
        raise _fail("value", "shuffle profile: message_epsilon must be in (0, 1]")
    d, k, t, n = doc["d"], doc["levels"], doc["t"], doc["n"]
    if not 1 <= d <= D_MAX:
        raise _fail("value", "shuffle profile: d must be in [1, %d]" % D_MAX)
    if not 1 <= k <= LEVELS_MAX:
        raise _fail("value", "shuffle profile: levels must be in [1, %d]" % LEVELS_MAX)
    if not 1 <= t <= d:
        raise _fail("value", "shuffle profile: t must be in [1, d]")
    if not 2 <= n < INT_LIMIT:
        raise _fail("value", "shuffle profile: n must be in [2, 2^63)")
    g_num, g_den = doc["gamma_num"], doc["gamma_den"]
    if not 0 < g_num < g_den < INT_LIMIT:
        raise _fail("value", "shuffle profile: gamma needs 0 < gamma_num < gamma_den < 2^63")
    ranges = _ranges(doc["ranges"], d)
    bits = (d - 1).bit_length() + k.bit_length()
    if bits > MESSAGE_BITS_MAX:  # d <= 64, k <= 15: at most 10 bits; kept for the contract
        raise _fail("derived", "shuffle profile: a message needs %d bits; one report holds at "
                    "most %d" % (bits, MESSAGE_BITS_MAX))
    why = R.refusal(_exact_pair(eps), _exact_pair(dlt), _exact_pair(e_m), n, d, k, t,
                    (g_num, g_den))
    if why is not None:
        raise _fail("privacy", "shuffle profile: %s" % why)
    return {"epsilon": eps, "delta": dlt, "message_epsilon": e_m, "d": d, "levels": k, "t": t,
            "n": n, "gamma_num": g_num, "gamma_den": g_den, "ranges": ranges}


def _exact_pair(x: float) -> tuple:
    return x.as_integer_ratio()


def from_dict(doc) -> ShuffleProfile:
    """A checked shuffle profile from its parsed object (the device's checks, then the
    host's privacy check)."""
    prof = ShuffleProfile(**device_checks(doc))
    if prof.fingerprint != doc["fingerprint"]:  # implied by the checks; kept as a guard
        raise _fail("fingerprint", "shuffle profile fingerprint does not match its contents")
    return prof


def loads(text) -> ShuffleProfile:
    """A checked shuffle profile from a file's bytes (or text)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if len(text) > MAX_SHUFFLE_FILE:
        raise _fail("size", "shuffle profile is longer than %d bytes, the longest a device "
                    "reads" % MAX_SHUFFLE_FILE)
    return from_dict(P.parse(bytes(text)))


def load(path) -> ShuffleProfile:
    data = P.read_file(path, MAX_SHUFFLE_FILE)
    return loads(data)


# ---- construction ---------------------------------------------------------------------------
def _check_ranges(ranges, d) -> list:
    try:
        ranges = [tuple(r) for r in ranges]
    except TypeError:
        raise ProfileError("ranges must be d (lo, hi) pairs") from None
    if len(ranges) != d or any(len(r) != 2 for r in ranges):
        raise ProfileError("ranges must be %d (lo, hi) pairs (one per coordinate), got %d"
                           % (d, len(ranges)))
    out = []
    for c, (lo, hi) in enumerate(ranges):
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ProfileError("range %d: bounds must be finite numbers, got %r" % (c, v))
            if float(v) != v:
                raise ProfileError("range %d: bound %r is not a float64 exactly" % (c, v))
        if not lo < hi:
            raise ProfileError("range %d is empty: lo (%r) must be below hi (%r)" % (c, lo, hi))
        out.append((float(lo), float(hi)))
    return out


def build(params: S.Params, ranges) -> ShuffleProfile:
    """The profile of `params` (shuffle.gamma_for) with per-coordinate reading ranges.

    epsilon and delta are stored as the largest float64 at most the exact ones; gamma_for is
    re-run at the stored pair and the larger gamma kept (with that run's message epsilon),
    so the stored numbers always pass the privacy rule (gamma only grows: more blanket)."""
    if not isinstance(params, S.Params):
        raise ProfileError("build takes a shuffle.Params (shuffle.gamma_for)")
    ranges = _check_ranges(ranges, params.d)
    if not 1 <= params.d <= D_MAX:
        raise ProfileError("a shuffle profile holds d in [1, %d], got %d" % (D_MAX, params.d))
    if not 1 <= params.k <= LEVELS_MAX:
        raise ProfileError("a shuffle profile holds levels in [1, %d], got %d"
                           % (LEVELS_MAX, params.k))
    if params.n >= INT_LIMIT:
        raise ProfileError("n must be below 2^63")
    eps = float_at_most(params.epsilon, "epsilon")
    dlt = float_at_most(params.delta, "delta")
    if not 0 < dlt:
        raise ProfileError("delta %s has no positive float64 at or below it" % params.delta)
    try:
        again = S.gamma_for(epsilon=Fraction(eps), delta=Fraction(dlt), n=params.n, d=params.d,
                            k=params.k, t=params.t)
    except S.ShuffleError as exc:
        raise ProfileError(str(exc)) from None
    gamma = max(params.gamma, again.gamma)
    prof = ShuffleProfile(epsilon=eps, delta=dlt, message_epsilon=float(again.epsilon_message),
                          d=params.d, levels=params.k, t=params.t,
                          n=params.n, gamma_num=gamma.numerator, gamma_den=gamma.denominator,
                          ranges=ranges)
    doc = dict(prof.canonical(), fingerprint=prof.fingerprint)
    try:
        return from_dict(doc)
    except ProfileError as exc:
        raise ProfileError("the shuffle profile fails its checks: %s" % exc) from None


def build_from(*, epsilon, delta, n, d, k, t=1, ranges=None) -> ShuffleProfile:
    """gamma_for then build; epsilon and delta may be decimal strings (rounded down to
    float64 first). ranges default to [0, 1] for every coordinate. ProfileError (one line)
    for anything outside the paper's range or the file's limits."""
    eps = float_at_most(epsilon, "epsilon")
    dlt = float_at_most(delta, "delta")
    if ranges is None:
        ranges = [(0.0, 1.0)] * (d if isinstance(d, int) and 0 < d <= D_MAX else 0)
    try:
        params = S.gamma_for(epsilon=Fraction(eps) if math.isfinite(eps) else eps,
                             delta=Fraction(dlt) if math.isfinite(dlt) else dlt,
                             n=n, d=d, k=k, t=t)
    except S.ShuffleError as exc:
        raise ProfileError(str(exc)) from None
    return build(params, ranges)
