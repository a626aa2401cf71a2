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
"""
import hashlib
import json
import math
from dataclasses import dataclass
from decimal import Context, Decimal, ROUND_HALF_EVEN
from fractions import Fraction

from .errors import ProfileError
from .floatbits import bits_to_float64, float64_to_bits, hex64, parse_hex64

FORMAT = "zeal-profile/1"
MANTISSA_BITS = 52
WORD = 1 << 64
K_HI = (1 << MANTISSA_BITS) - 2
EPSILON_MAX = 20.0
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
        e = math.floor(math.log2(float(two_c)))
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


@dataclass(frozen=True)
class Profile:
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
        core = {
            "format": FORMAT,
            "lo": hex64(float64_to_bits(self.lo)),
            "hi": hex64(float64_to_bits(self.hi)),
            "epsilon": hex64(float64_to_bits(self.epsilon)),
            "exponent": self.exponent,
            "bits": self.bits,
            "n_cells": self.n_cells,
            "n_window": self.n_window,
            "threshold": self.threshold,
        }
        if self.calibration is not None:
            core["cal_gain"] = str(self.calibration.gain)
            core["cal_offset"] = str(self.calibration.offset)
        return core

    def canonical_bytes(self) -> bytes:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True).encode("ascii")

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.canonical_bytes()).hexdigest()

    def to_json(self) -> str:
        doc = dict(self.canonical())
        doc["fingerprint"] = self.fingerprint
        return json.dumps(doc, sort_keys=True, indent=1) + "\n"


# ---- construction ---------------------------------------------------------------------------
def _check_parameters(lo, hi, epsilon) -> None:
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


def exponent_range(cont: Continuous) -> tuple:
    """(E_min, E_max): E_min = E_U^enc; E_max the last exponent with a valid grid."""
    e_min = cont.e_enc()
    if e_min < -1000 or e_min > 1000:
        raise ProfileError("range width is outside what the float64 grid can hold")
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
    if t * (n - nc) < (WORD - t) * nc:  # P_hi >= P_lo, assumed by the privacy proof
        raise ProfileError("epsilon %r is too small for a grid of %d cells" % (epsilon, n))
    return Profile(lo=float(lo), hi=float(hi), epsilon=float(epsilon), exponent=exponent,
                   bits=n.bit_length(), n_cells=n, n_window=nc, threshold=t,
                   calibration=calibration)


def from_exponent(lo, hi, epsilon, exponent, *, calibration=None) -> Profile:
    _check_parameters(lo, hi, epsilon)
    if isinstance(exponent, bool) or not isinstance(exponent, int):
        raise ProfileError("exponent must be an integer, got %r" % (exponent,))
    return _build(lo, hi, epsilon, exponent, calibration)


def bits_range(lo, hi, epsilon) -> tuple:
    """(m_min, m_max) valid for this range and budget."""
    _check_parameters(lo, hi, epsilon)
    cont = Continuous.of(lo, hi, epsilon)
    e_min, e_max = exponent_range(cont)
    return cont.cells(e_max)[0].bit_length(), cont.cells(e_min)[0].bit_length()


def from_bits(lo, hi, epsilon, bits, *, calibration=None) -> Profile:
    """The finest grid (smallest E) whose reports fit in `bits` bits."""
    _check_parameters(lo, hi, epsilon)
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


def auto(lo, hi, epsilon, *, calibration=None, slack=AUTO_VARIANCE_SLACK) -> Profile:
    """Smallest m whose exact variance is <= slack x the continuous PM's at every input."""
    from .analysis import worst_variance_ratio  # analysis imports this module

    m_min, m_max = bits_range(lo, hi, epsilon)
    for m in range(m_min, m_max + 1):
        prof = from_bits(lo, hi, epsilon, m, calibration=calibration)
        if prof.n_cells > 1 << 22:  # the grid is then far finer than any rounding effect
            return prof
        if worst_variance_ratio(prof)[1] <= slack:
            return prof
    return from_bits(lo, hi, epsilon, m_max, calibration=calibration)


def build(lo, hi, epsilon, *, bits="auto", exponent=None, calibration=None) -> Profile:
    """One entry point for the CLI: by exponent, by bits, or automatic."""
    if exponent is not None:
        return from_exponent(lo, hi, epsilon, exponent, calibration=calibration)
    if bits in (None, "auto"):
        return auto(lo, hi, epsilon, calibration=calibration)
    return from_bits(lo, hi, epsilon, bits, calibration=calibration)


# ---- loading --------------------------------------------------------------------------------
_INT_KEYS = ("exponent", "bits", "n_cells", "n_window", "threshold")
_REQUIRED = ("format", "lo", "hi", "epsilon") + _INT_KEYS + ("fingerprint",)


def from_dict(doc) -> Profile:
    if not isinstance(doc, dict):
        raise ProfileError("a profile is a JSON object")
    if doc.get("format") != FORMAT:
        raise ProfileError("unsupported profile format %r (this version reads %r)"
                           % (doc.get("format"), FORMAT))
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise ProfileError("profile is missing %s" % ", ".join(missing))
    known = set(_REQUIRED) | {"cal_gain", "cal_offset"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ProfileError("profile has unknown keys: %s" % ", ".join(unknown))
    try:
        lo, hi, eps = (bits_to_float64(parse_hex64(doc[k])) for k in ("lo", "hi", "epsilon"))
    except ValueError as exc:
        raise ProfileError("profile: %s" % exc) from None
    for key in _INT_KEYS:
        if isinstance(doc[key], bool) or not isinstance(doc[key], int):
            raise ProfileError("profile: %s must be an integer" % key)
    calibration = None
    if ("cal_gain" in doc) != ("cal_offset" in doc):
        raise ProfileError("profile: cal_gain and cal_offset go together")
    if "cal_gain" in doc:
        calibration = Calibration(Calibration.parse(doc["cal_gain"], "cal_gain"),
                                  Calibration.parse(doc["cal_offset"], "cal_offset"))
    rebuilt = from_exponent(lo, hi, eps, doc["exponent"], calibration=calibration)
    for key in _INT_KEYS:
        if doc[key] != getattr(rebuilt, key):
            raise ProfileError("profile: %s is %r but the parameters give %r"
                               % (key, doc[key], getattr(rebuilt, key)))
    if doc["fingerprint"] != rebuilt.fingerprint:
        raise ProfileError("profile fingerprint does not match its contents "
                           "(the file was edited or corrupted)")
    return rebuilt


def loads(text: str) -> Profile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError("profile is not valid JSON: %s" % exc) from None
    return from_dict(doc)


def load(path) -> Profile:
    try:
        with open(path, "r", encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None
    except UnicodeDecodeError:
        raise ProfileError("profile %s is not UTF-8 text" % path) from None
    return loads(text)
