"""Profiles: the public parameters a device and the host share.

A profile fixes the reading range [lo, hi], the budget epsilon and the binade exponent E
(equivalently the bits per report m). From these the exact integer grid follows
(shared_spec/mechanism.md, section "Grid"):

    ulp = 2^(E-52)
    N   = round(2C / ulp)            cells, k in [k_lo, k_hi], k_hi = 2^52 - 2
    Nc  = max(1, round((C - h)/ulp)) cells in the central window, No = N - Nc
    T   = max{T : T*No <= L*(2^64 - T)*Nc},  L a certified lower bound of e^eps
    m   = bit_length(N)              so that every k shares its top 52 - m mantissa bits

The canonical form holds only integers and strings (no floats: a device with 32-bit floats
must not parse them); the fingerprint is SHA-256 of that canonical JSON.

Built here for a given E (`from_exponent`) or m (`from_bits`), and loaded (`load`, `loads`);
choosing m automatically needs the exact variance, so `auto` and `build` live in
zeal.mechanism.choose.
"""
import hashlib
import json
import math
from dataclasses import dataclass
from decimal import Context, Decimal, ROUND_HALF_EVEN
from fractions import Fraction

from ..errors import ProfileError
from .floatbits import bits_to_float64, float64_to_bits, hex64, parse_hex64

FORMAT = "zeal-profile/1"
MANTISSA_BITS = 52
WORD = 1 << 64
K_HI = (1 << MANTISSA_BITS) - 2
EPSILON_MAX = 20.0
# Below 2^-64 no grid is private: T*No > (2^64 - T)*Nc needs T above 2^64*Nc/N by at least 1,
# and the certified T exceeds it by about 2^64 (Nc No / N^2)(L - 1) <= 2^62 eps (profile.md).
EPSILON_MIN = 2.0 ** -64
# "auto" picks the smallest m whose exact variance is at most this factor of the continuous
# piecewise mechanism's, at every input: no user loses more than 1% utility against PM.
AUTO_VARIANCE_SLACK = 1.01
_DEC = Context(prec=60, rounding=ROUND_HALF_EVEN)


def exp_lower_bound(eps: Fraction) -> Fraction:
    """A rational L <= e^eps for eps >= 0: a Taylor partial sum (every term is positive)."""
    total, term, k = Fraction(0), Fraction(1), 0
    while True:
        total += term
        k += 1
        term = term * eps / k
        if term * (1 << 128) < total:
            return total


def _round(d: Decimal) -> int:
    return int(d.to_integral_value(rounding=ROUND_HALF_EVEN, context=_DEC))


@dataclass(frozen=True)
class Continuous:
    """The continuous piecewise mechanism's constants, to 60 significant digits."""

    h: Decimal
    hbar: Decimal
    a: Decimal  # e^(eps/2)
    c: Decimal

    @classmethod
    def of(cls, lo: float, hi: float, eps: float) -> "Continuous":
        lo_d, hi_d = Decimal(lo), Decimal(hi)  # exact conversions
        h = _DEC.divide(_DEC.subtract(hi_d, lo_d), 2)
        hbar = _DEC.divide(_DEC.add(hi_d, lo_d), 2)
        a = _DEC.exp(_DEC.divide(Decimal(eps), 2))
        c = _DEC.divide(_DEC.multiply(h, a + 1), a - 1)
        return cls(h=h, hbar=hbar, a=a, c=c)

    def e_enc(self) -> int:
        """Smallest E with 2C <= 2^E (paper Thm 3.5: ceil(log2(2C)))."""
        two_c = 2 * self.c
        # a first guess from the decimal exponent (float(two_c) overflows beyond 1.8e308),
        # then exact steps to the one E with 2^(E-1) < 2C <= 2^E
        e = math.floor(two_c.adjusted() * math.log2(10))
        while Decimal(2) ** e < two_c:
            e += 1
        while Decimal(2) ** (e - 1) >= two_c:
            e -= 1
        return e

    def cells(self, exponent: int) -> tuple:
        """(N, Nc) for the binade of exponent E."""
        scale = Decimal(2) ** (MANTISSA_BITS - exponent)
        n = _round(_DEC.multiply(2 * self.c, scale))
        nc = max(1, _round(_DEC.multiply(self.c - self.h, scale)))
        return n, nc


def threshold(n: int, nc: int, eps: Fraction) -> int:
    """Largest T with T*No <= L*(2^64 - T)*Nc, L = exp_lower_bound(eps)."""
    no = n - nc
    lb = exp_lower_bound(eps)
    return math.floor(lb * WORD * nc / (no + lb * nc))


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


def _grid_or_error(cont: Continuous, exponent: int) -> tuple:
    n, nc = cont.cells(exponent)
    if n > K_HI + 1:
        raise ProfileError("exponent %d leaves no room for the grid" % exponent)
    if n < 2 or n - nc < 1:
        raise ProfileError("exponent %d gives a grid of %d cell(s); at least 2 are needed "
                           "(one in the window, one outside)" % (exponent, n))
    return n, nc


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
        return hashlib.sha256(self.canonical_bytes()).hexdigest()

    def to_json(self) -> str:
        """The profile file; refused if longer than a device reads (MAX_BYTES)."""
        doc = dict(self.canonical())
        doc["fingerprint"] = self.fingerprint
        text = json.dumps(doc, sort_keys=True, indent=1) + "\n"
        if len(text) > self.MAX_BYTES:
            raise ProfileError("the profile file would be %d bytes; a device reads at most %d"
                               % (len(text), self.MAX_BYTES))
        return text


@dataclass(frozen=True)
class Profile(Canonical):
    kind = "grid"   # a class attribute, not a field: table profiles have kind "table"

    lo: float
    hi: float
    epsilon: float
    exponent: int
    bits: int
    n_cells: int
    n_window: int
    threshold: int
    calibration: Calibration = None

    # ---- derived integers -------------------------------------------------------------
    @property
    def n_outside(self) -> int:
        return self.n_cells - self.n_window

    @property
    def k_lo(self) -> int:
        return K_HI - self.n_cells + 1

    @property
    def k_hi(self) -> int:
        return K_HI

    @property
    def wire_base(self) -> int:
        """k of the transmitted value 0: all k share the bits above the low m."""
        return (1 << MANTISSA_BITS) - (1 << self.bits)

    @property
    def high_bits(self) -> int:
        """The 64-bit pattern every report shares (sign, exponent, top mantissa bits)."""
        return ((self.exponent + 1023) << MANTISSA_BITS) | self.wire_base

    @property
    def ulp(self) -> Fraction:
        return Fraction(2) ** (self.exponent - MANTISSA_BITS)

    @property
    def continuous(self) -> Continuous:
        return Continuous.of(self.lo, self.hi, self.epsilon)

    # ---- canonical form -----------------------------------------------------------------
    def canonical(self) -> dict:
        core = dict(range_fields(FORMAT, self.lo, self.hi, self.epsilon), **{
            "exponent": self.exponent,
            "bits": self.bits,
            "n_cells": self.n_cells,
            "n_window": self.n_window,
            "threshold": self.threshold,
        })
        return with_calibration(core, self.calibration)


# ---- construction ---------------------------------------------------------------------------
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


def _parameters(lo, hi, epsilon) -> tuple:
    """(lo, hi, epsilon) as floats, epsilon rounded down from an exact decimal; ProfileError
    for anything a profile cannot hold."""
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
    if epsilon < EPSILON_MIN:
        raise ProfileError("epsilon %r is too small for any grid: below 2^-64 (about %.2g) the "
                           "64-bit threshold T cannot make P_hi > P_lo" % (epsilon, EPSILON_MIN))
    if not math.isfinite(hi - lo):
        raise ProfileError("range [%r, %r] is too wide for float64" % (lo, hi))
    return float(lo), float(hi), epsilon


def is_private(n: int, nc: int, t: int, eps) -> bool:
    """The device's privacy conditions on the integers (profile.md, the profile-check list):
    1 <= Nc < N, 0 < T < 2^64, T the certified threshold for eps (P_hi/P_lo <= L <= e^eps)
    and T*No > (2^64 - T)*Nc strictly (P_hi > P_lo)."""
    return (1 <= nc < n and 0 < t < WORD and t == threshold(n, nc, Fraction(eps))
            and t * (n - nc) > (WORD - t) * nc)


def exponent_range(cont: Continuous) -> tuple:
    """(E_min, E_max): E_min = E_U^enc; E_max the last exponent with a valid grid."""
    e_min = cont.e_enc()
    if e_min > 1022:
        raise ProfileError("the mechanism's output range 2C = %s (the range's width times "
                           "(a+1)/(a-1), a = e^(epsilon/2)) is above 2^1022 (about 4.49e+307), "
                           "the widest float64 binade a grid may use: narrow the range or "
                           "raise epsilon" % format(2 * cont.c, ".3e"))
    if e_min < -1000:
        raise ProfileError("range width %s is below what the float64 grid can hold"
                           % format(2 * cont.h, ".3e"))
    e = e_min
    while True:
        n, nc = cont.cells(e + 1)
        if n < 2 or n - nc < 1 or e + 1 > 1022:
            return e_min, e
        e += 1


def _build(lo, hi, epsilon, exponent, calibration) -> Profile:
    cont = Continuous.of(lo, hi, epsilon)
    e_min, e_max = exponent_range(cont)
    if not e_min <= exponent <= e_max:
        raise ProfileError("exponent %d is out of range for this profile: valid exponents are "
                           "%d (E_U^enc) to %d" % (exponent, e_min, e_max))
    n, nc = _grid_or_error(cont, exponent)
    t = threshold(n, nc, Fraction(epsilon))
    if not t * (n - nc) > (WORD - t) * nc:  # P_hi > P_lo, strictly: the proof needs it
        raise ProfileError("epsilon %r is too small for a grid of %d cells" % (epsilon, n))
    if calibration is not None:
        for what, value in (("cal_gain", calibration.gain), ("cal_offset", calibration.offset)):
            if len(str(value)) > MAX_RATIONAL:
                raise ProfileError("%s reduced is %s: longer than the %d characters a device "
                                   "reads" % (what, value, MAX_RATIONAL))
    return Profile(lo=float(lo), hi=float(hi), epsilon=float(epsilon), exponent=exponent,
                   bits=n.bit_length(), n_cells=n, n_window=nc, threshold=t,
                   calibration=calibration)


def from_exponent(lo, hi, epsilon, exponent, *, calibration=None) -> Profile:
    lo, hi, epsilon = _parameters(lo, hi, epsilon)
    if isinstance(exponent, bool) or not isinstance(exponent, int):
        raise ProfileError("exponent must be an integer, got %r" % (exponent,))
    return _build(lo, hi, epsilon, exponent, calibration)


def bits_range(lo, hi, epsilon) -> tuple:
    """(m_min, m_max) valid for this range and budget."""
    lo, hi, epsilon = _parameters(lo, hi, epsilon)
    cont = Continuous.of(lo, hi, epsilon)
    e_min, e_max = exponent_range(cont)
    return cont.cells(e_max)[0].bit_length(), cont.cells(e_min)[0].bit_length()


def from_bits(lo, hi, epsilon, bits, *, calibration=None) -> Profile:
    """The finest grid (smallest E) whose reports fit in `bits` bits."""
    lo, hi, epsilon = _parameters(lo, hi, epsilon)
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise ProfileError("bits must be an integer, got %r" % (bits,))
    cont = Continuous.of(lo, hi, epsilon)
    e_min, e_max = exponent_range(cont)
    m_min, m_max = cont.cells(e_max)[0].bit_length(), cont.cells(e_min)[0].bit_length()
    if not m_min <= bits <= m_max:
        raise ProfileError("bits %d is out of range for this profile: valid bits per report "
                           "are %d to %d" % (bits, m_min, m_max))
    for e in range(e_min, e_max + 1):
        if cont.cells(e)[0].bit_length() <= bits:
            return _build(lo, hi, epsilon, e, calibration)
    raise ProfileError("no exponent gives %d bits per report" % bits)  # unreachable by m_min


# ---- loading --------------------------------------------------------------------------------
# The device's rules (firmware/zealfw/profile.py), ported line for line: the same grammar, the
# same checks in the same order, the same reason codes (ProfileError.reason). Only the
# derivation of N, Nc and E from lo, hi, epsilon (exp to 60 digits) is the host's alone; it
# bears on utility, not on privacy (profile.md, "the profile-check list").
_INT_KEYS = ("bits", "exponent", "n_cells", "n_window", "threshold")
_REQUIRED = ("format", "lo", "hi", "epsilon") + _INT_KEYS + ("fingerprint",)
MAX_FILE = 502      # bytes: the longest profile file the schema allows (profile.md)
Profile.MAX_BYTES = MAX_FILE
MAX_RATIONAL = 64   # characters in cal_gain / cal_offset
_MAX_EXP10 = 64
_N_MAX = (1 << MANTISSA_BITS) - 1
_HEX_KEYS = ("epsilon", "hi", "lo")
_CAL_KEYS = ("cal_gain", "cal_offset")
_SAFE = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-./")
_HEXDIGITS = frozenset("0123456789abcdef")
_DIGITS = frozenset("0123456789")
_NUMBER_BYTES = frozenset(b"0123456789+-.eE")


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


def device_checks(doc) -> dict:
    """Every check the device makes (firmware/zealfw/profile.py from_doc), in its order and
    with its reason codes. Returns the decoded fields; ProfileError (with .reason) otherwise."""
    calibration = header_checks(doc, FORMAT, _REQUIRED, _INT_KEYS)
    lo, hi, eps = range_checks(doc)
    e, n, nc, t, bits = (doc[k] for k in ("exponent", "n_cells", "n_window", "threshold", "bits"))
    if not -1022 <= e <= 1023:
        raise _fail("value", "profile: exponent outside the float64 range")
    if not 2 <= n <= _N_MAX or not 1 <= nc < n:
        raise _fail("value", "profile: grid needs 2 <= N < 2^52 and 1 <= Nc < N")
    if not 0 < t < WORD:
        raise _fail("value", "profile: threshold must be in (0, 2^64)")
    if bits != n.bit_length():
        raise _fail("derived", "profile: bits is %r but n_cells gives %r" % (bits, n.bit_length()))
    if t != threshold(n, nc, Fraction(eps)):
        raise _fail("derived", "profile: threshold is %r but the certified one for epsilon is %r"
                    % (t, threshold(n, nc, Fraction(eps))))
    if not t * (n - nc) > (WORD - t) * nc:
        raise _fail("privacy", "profile: P_hi > P_lo fails (T*No <= (2^64 - T)*Nc): epsilon "
                    "is too small for this grid")
    return {"lo": lo, "hi": hi, "epsilon": eps, "calibration": calibration}


def from_dict(doc) -> Profile:
    """A checked profile: the device's checks, then the host's derivation of N, Nc and E."""
    fields = device_checks(doc)
    try:
        rebuilt = from_exponent(fields["lo"], fields["hi"], fields["epsilon"], doc["exponent"],
                                calibration=fields["calibration"])
    except ProfileError as exc:
        raise _fail("derived", "profile: %s" % exc) from None
    for key in _INT_KEYS:
        if doc[key] != getattr(rebuilt, key):
            raise _fail("derived", "profile: %s is %r but the parameters give %r"
                        % (key, doc[key], getattr(rebuilt, key)))
    if doc["fingerprint"] != rebuilt.fingerprint:  # implied by the above; kept as a guard
        raise _fail("fingerprint", "profile fingerprint does not match its contents")
    return rebuilt


def loads(text):
    """A checked profile from a file's bytes (or text): the device's grammar and checks.

    The sniff rule (profile.md): if the first 503 bytes hold b"zeal-table/1" the file is a
    table profile (zeal.mechanism.table_profile, its limits and checks); otherwise a grid.
    """
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")  # non-ASCII: bytes >= 0x80, "json"
    text = bytes(text)
    from . import table_profile  # lazy: table_profile imports this module
    if table_profile.is_table_file(text):
        return table_profile.loads(text)
    if len(text) > MAX_FILE:
        raise _fail("size", "profile is longer than %d bytes, the longest a device reads"
                    % MAX_FILE)
    return from_dict(parse(text))


def load(path):
    from .table_profile import MAX_TABLE_FILE
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TABLE_FILE + 1)
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None
    return loads(data)
