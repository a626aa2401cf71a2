"""The profile file, both kinds: grammar, shared checks, canonical form (profile.md).

What a grid profile (zeal.mechanism.grid.profile, "zeal-profile/1") and a table profile
(zeal.mechanism.table.profile, "zeal-table/1") share, in one place below both: the file
grammar (`parse`, the device's), the string, hex and rational checks, the checks 2-9 of
either list (`header_checks`) and the first value checks (`range_checks`), the canonical
bytes and fingerprint (`Canonical`, `canonical_json`), the certified lower bound of e^eps
(`exp_lower_bound`), `Calibration` and `epsilon_at_most`. Reason codes travel as
ProfileError.reason. zeal.mechanism.grid.profile re-exports every name, so callers keep importing
them from there; this module exists so that the table profile need not import the grid's
module, which dispatches to it.
"""
import hashlib
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from ...errors import ProfileError
from .floatbits import bits_to_float64, float64_to_bits, hex64

EPSILON_MAX = 20.0

MAX_FILE = 502      # bytes: the longest profile file the schema allows (profile.md)

MAX_RATIONAL = 64   # characters in cal_gain / cal_offset

_MAX_EXP10 = 64

_HEX_KEYS = ("epsilon", "hi", "lo")

_CAL_KEYS = ("cal_gain", "cal_offset")

_SAFE = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-./")

_HEXDIGITS = frozenset("0123456789abcdef")

_DIGITS = frozenset("0123456789")

_NUMBER_BYTES = frozenset(b"0123456789+-.eE")


def exp_lower_bound(eps: Fraction) -> Fraction:
    """A rational L <= e^eps for eps >= 0: a Taylor partial sum (every term is positive)."""
    total, term, k = Fraction(0), Fraction(1), 0
    while True:
        total += term
        k += 1
        term = term * eps / k
        if term * (1 << 128) < total:
            return total


@dataclass(frozen=True)
class Calibration:
    """Exact linear map from a raw integer count to a reading: x = offset + gain * raw."""

    gain: Fraction
    offset: Fraction

    @staticmethod
    def parse(text: str, what: str) -> Fraction:
        # The device refuses longer strings and larger decimal exponents (zealfw.profile);
        # the bound also keeps "1e999999" from becoming a million-digit integer here.
        if not isinstance(text, str) or len(text) > 64:
            raise ProfileError("%s must be an exact decimal or p/q of at most 64 characters"
                               % what)
        mant, _, exp = text.lower().partition("e")
        if exp and (not exp.lstrip("+-").isdigit() or abs(int(exp)) > 64):
            raise ProfileError("%s: decimal exponent must be within +-64, got %r" % (what, text))
        try:
            value = Fraction(text)
        except (ValueError, ZeroDivisionError, TypeError):
            raise ProfileError("%s must be an exact decimal or p/q, got %r" % (what, text)) from None
        return value


def read_file(path, limit: int) -> bytes:
    """A profile file's first limit + 1 bytes (one more than any file of its kind holds, so
    that the kind's size check sees an overlong file); ProfileError if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit + 1)
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None


def canonical_json(core: dict) -> bytes:
    """The canonical bytes of a profile object (profile.md): sorted keys, no spaces, ASCII."""
    return json.dumps(core, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def range_fields(fmt: str, lo: float, hi: float, epsilon: float) -> dict:
    """The keys both kinds share: format, and lo, hi, epsilon as float64 bit patterns."""
    return {"format": fmt, "lo": hex64(float64_to_bits(lo)), "hi": hex64(float64_to_bits(hi)),
            "epsilon": hex64(float64_to_bits(epsilon))}


def with_calibration(core: dict, calibration) -> dict:
    """core plus cal_gain/cal_offset in their reduced form when there is a calibration."""
    if calibration is not None:
        core["cal_gain"] = str(calibration.gain)
        core["cal_offset"] = str(calibration.offset)
    return core


class Canonical:
    """Canonical bytes, fingerprint and file text of any profile kind from its canonical();
    MAX_BYTES is the longest file of the kind (to_json refuses a longer one)."""

    MAX_BYTES = None

    def canonical_bytes(self) -> bytes:
        return canonical_json(self.canonical())

    @property
    def fingerprint(self) -> str:
        # Kept once made: a profile is a value, never changed in what canonical() reads, and
        # the collector asks for it once per stored frame (8 us each time, measured).
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            fp = self.__dict__["_fingerprint"] = hashlib.sha256(
                self.canonical_bytes()).hexdigest()
        return fp

    def to_json(self) -> str:
        """The profile file; refused if longer than a device reads (MAX_BYTES)."""
        doc = dict(self.canonical())
        doc["fingerprint"] = self.fingerprint
        text = json.dumps(doc, sort_keys=True, indent=1) + "\n"
        if len(text) > self.MAX_BYTES:
            raise ProfileError("the profile file would be %d bytes; a device reads at most %d"
                               % (len(text), self.MAX_BYTES))
        return text


def epsilon_at_most(value) -> float:
    """The float64 epsilon a profile stores for the budget the user gave.

    A float is taken as it is (its value is exact). A decimal string ("0.1"), Decimal or
    Fraction is exact too, but its nearest float64 may lie above it (float64(0.1) exceeds
    1/10 by about 5.6e-18): the profile then stores the largest float64 <= the exact value,
    so the certified threshold, and the guarantee, hold for a budget <= the one typed.
    """
    if isinstance(value, bool):
        raise ProfileError("epsilon must be a number, got %r" % (value,))
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 100:
            raise ProfileError("epsilon must be a decimal number of at most 100 characters")
        try:
            # p/q as a Fraction (at most 100 characters: no huge integers); else a decimal
            value = Fraction(text) if "/" in text else Decimal(text)
        except (ArithmeticError, ValueError):
            raise ProfileError("epsilon must be a decimal number or p/q, got %r"
                               % (value,)) from None
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ProfileError("epsilon must be finite, got %s" % value)
        # below the smallest subnormal the largest float64 under it is 0 (refused below); the
        # bound also keeps "1e-999999999" from becoming a huge integer
        if value.adjusted() < -400 or value.adjusted() > 400:
            return 0.0 if value.adjusted() < -400 else math.inf
        value = Fraction(value)
    if not isinstance(value, Fraction):
        raise ProfileError("epsilon must be a number, got %r" % (value,))
    try:
        f = float(value)  # correctly rounded to nearest
    except OverflowError:
        return math.inf
    if Fraction(f) > value:
        f = math.nextafter(f, -math.inf)
    return f


def _fail(reason: str, msg: str) -> ProfileError:
    err = ProfileError(msg)
    err.reason = reason
    return err


def _json_error(what: str) -> ProfileError:
    return _fail("json", "profile is not valid JSON for a profile (%s)" % what)


def _ws(buf, i, n):
    while i < n and buf[i] in b" \t\n\r":
        i += 1
    return i


def _string(buf, i, n):
    if i >= n or buf[i] != 0x22:
        raise _json_error("a string was expected")
    j = i + 1
    while j < n and buf[j] != 0x22:
        if buf[j] == 0x5C:
            raise _json_error("a backslash escape")
        j += 1
    if j >= n:
        raise _json_error("an unterminated string")
    return buf[i + 1:j].decode("ascii"), j + 1


def _value(buf, i, n):
    if i < n and buf[i] == 0x22:
        return _string(buf, i, n)
    j = i
    while j < n and buf[j] in _NUMBER_BYTES:
        j += 1
    tok = buf[i:j].decode("ascii")
    digits = tok[1:] if tok[:1] == "-" else tok
    if not (digits and set(digits) <= _DIGITS) or (digits[0] == "0" and len(digits) > 1):
        raise _fail("type", "profile: a value that is not a string or an integer")
    return int(tok), j


def parse(buf: bytes) -> dict:
    """The object of a profile file, by the grammar of profile.md (the device's parse)."""
    n = len(buf)
    for c in buf:
        if c > 0x7E or (c < 0x20 and c not in (0x09, 0x0A, 0x0D)):
            raise _json_error("a byte outside printable ASCII")
    i = _ws(buf, 0, n)
    if i >= n or buf[i] != 0x7B:
        raise _json_error("an object was expected")
    doc = {}
    i = _ws(buf, i + 1, n)
    if i < n and buf[i] == 0x7D:
        i += 1
    else:
        while True:
            key, i = _string(buf, i, n)
            i = _ws(buf, i, n)
            if i >= n or buf[i] != 0x3A:
                raise _json_error("':' was expected")
            value, i = _value(buf, _ws(buf, i + 1, n), n)
            if key in doc:
                raise _json_error("a duplicated key")
            doc[key] = value
            i = _ws(buf, i, n)
            if i < n and buf[i] == 0x2C:
                i = _ws(buf, i + 1, n)
            elif i < n and buf[i] == 0x7D:
                i += 1
                break
            else:
                raise _json_error("',' or '}' was expected")
    if _ws(buf, i, n) != n:
        raise _json_error("data after the object")
    return doc


def _check_string(key, value):
    if type(value) is not str:
        raise _fail("type", "profile: %s must be a string" % key)
    if not set(value) <= _SAFE:
        raise _fail("type", "profile: %s has a character outside [A-Za-z0-9+-./]" % key)


def _check_hex(key, value, ndigits, prefix, what):
    _check_string(key, value)
    body = value[len(prefix):] if value.startswith(prefix) else None
    if body is None or len(body) != ndigits or not set(body) <= _HEXDIGITS:
        raise _fail("type", "profile: %s must be %s (%s and %d lowercase hex digits)"
                    % (key, what, prefix or "no prefix", ndigits))


def parse_rational(text: str, what: str) -> Fraction:
    """The device's parse_rational: "p/q", "-40", "0.01", "1.5e-3" (what Fraction accepts,
    minus whitespace and underscores, which the character check refuses first)."""
    def digits(part):
        if not part or not set(part) <= _DIGITS:
            raise _fail("value", "%s must be an exact decimal or p/q, got %r" % (what, text))
        return int(part)

    if len(text) > MAX_RATIONAL:
        raise _fail("value", "%s must be an exact decimal or p/q of at most %d characters"
                    % (what, MAX_RATIONAL))
    s, neg = text, False
    if s and s[0] in "+-":
        neg, s = s[0] == "-", s[1:]
    if "/" in s:
        num_t, _, den_t = s.partition("/")
        num, den = digits(num_t), digits(den_t)
        if den == 0:
            raise _fail("value", "%s has a zero denominator" % what)
    else:
        exp = 0
        cut = s.find("e")
        if cut < 0:
            cut = s.find("E")
        if cut >= 0:
            tail, sign = s[cut + 1:], 1
            if tail and tail[0] in "+-":
                sign, tail = (-1 if tail[0] == "-" else 1), tail[1:]
            exp = sign * digits(tail)
            if abs(exp) > _MAX_EXP10:
                raise _fail("value", "%s: decimal exponent must be within +-%d, got %r"
                            % (what, _MAX_EXP10, text))
            s = s[:cut]
        whole, _, frac = s.partition(".")
        if not whole and not frac:
            raise _fail("value", "%s must be an exact decimal or p/q, got %r" % (what, text))
        num, den = digits(whole + frac), 10 ** len(frac)
        if exp >= 0:
            num *= 10 ** exp
        else:
            den *= 10 ** -exp
    value = Fraction(num, den)
    return -value if neg else value


def header_checks(doc, fmt, required, int_keys, what="profile", more_types=None):
    """Checks 2-9 of either kind's list (profile.md), in order: object, format, missing,
    unknown, types (ints, lo/hi/epsilon, fingerprint, then `more_types(doc)`), calibration
    values, fingerprint. Returns the calibration (Calibration or None)."""
    if type(doc) is not dict:
        raise _fail("type", "a profile is a JSON object")
    if doc.get("format") != fmt:
        raise _fail("format", "unsupported profile format %r (this version reads %r)"
                    % (doc.get("format"), fmt))
    missing = [k for k in required if k not in doc]
    if missing:
        raise _fail("missing", "%s is missing %s" % (what, ", ".join(missing)))
    has_cal = _CAL_KEYS[0] in doc
    if has_cal != (_CAL_KEYS[1] in doc):
        raise _fail("missing", "%s: cal_gain and cal_offset go together" % what)
    unknown = sorted(k for k in doc if k not in required and k not in _CAL_KEYS)
    if unknown:
        raise _fail("unknown", "%s has unknown keys: %s" % (what, ", ".join(map(str, unknown))))
    for key in int_keys:
        if type(doc[key]) is not int:
            raise _fail("type", "%s: %s must be an integer" % (what, key))
    for key in _HEX_KEYS:
        _check_hex(key, doc[key], 16, "0x", "a 64-bit pattern")
    _check_hex("fingerprint", doc["fingerprint"], 64, "", "a SHA-256 digest")
    if more_types is not None:
        more_types(doc)
    cal = {}
    if has_cal:
        for key in _CAL_KEYS:
            _check_string(key, doc[key])
            cal[key] = parse_rational(doc[key], key)
    canon = {k: (str(cal[k]) if k in cal else v) for k, v in doc.items() if k != "fingerprint"}
    if hashlib.sha256(canonical_json(canon)).hexdigest() != doc["fingerprint"]:
        raise _fail("fingerprint", "%s fingerprint does not match its contents "
                    "(the file was edited or corrupted)" % what)
    return Calibration(cal["cal_gain"], cal["cal_offset"]) if has_cal else None


def range_checks(doc, what="profile") -> tuple:
    """The first value checks of either kind: lo, hi, epsilon finite, lo < hi, 0 < eps <= 20.
    Returns (lo, hi, epsilon) as floats."""
    lo, hi, eps = (bits_to_float64(int(doc[k][2:], 16)) for k in ("lo", "hi", "epsilon"))
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(eps)):
        raise _fail("value", "%s: lo, hi and epsilon must be finite" % what)
    if not lo < hi:
        raise _fail("value", "%s: lo must be below hi" % what)
    if not 0 < eps <= EPSILON_MAX:
        raise _fail("value", "%s: epsilon must be in (0, %g]" % (what, EPSILON_MAX))
    return lo, hi, eps


def parameters(lo, hi, epsilon) -> tuple:
    """(lo, hi, epsilon) as floats, epsilon rounded down from an exact decimal
    (`epsilon_at_most`); ProfileError for anything a profile of either kind cannot hold."""
    epsilon = epsilon_at_most(epsilon)
    for name, value in (("lo", lo), ("hi", hi), ("epsilon", epsilon)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ProfileError("%s must be a number, got %r" % (name, value))
        if not math.isfinite(value):
            raise ProfileError("%s must be finite, got %r" % (name, value))
    if not lo < hi:
        raise ProfileError("range is empty: lo (%r) must be below hi (%r)" % (lo, hi))
    if not 0 < epsilon <= EPSILON_MAX:
        raise ProfileError("epsilon must be in (0, %g], got %r" % (EPSILON_MAX, epsilon))
    if not math.isfinite(hi - lo):
        raise ProfileError("range [%r, %r] is too wide for float64" % (lo, hi))
    return float(lo), float(hi), epsilon
