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
zeal.mechanism.grid.choose.
"""
import math
from dataclasses import dataclass
from decimal import Context, Decimal, ROUND_HALF_EVEN
from fractions import Fraction

from ...errors import ProfileError
from ..core.pfile import (  # noqa: F401  (the public names are re-exported from here)
    EPSILON_MAX, MAX_FILE, MAX_RATIONAL, Calibration, Canonical, canonical_json, epsilon_at_most,
    exp_lower_bound, header_checks, parameters, parse, parse_rational, range_checks, range_fields,
    read_file, with_calibration, _fail)

FORMAT = "zeal-profile/1"
MANTISSA_BITS = 52
WORD = 1 << 64
K_HI = (1 << MANTISSA_BITS) - 2
# Below 2^-64 no grid is private: T*No > (2^64 - T)*Nc needs T above 2^64*Nc/N by at least 1,
# and the certified T exceeds it by about 2^64 (Nc No / N^2)(L - 1) <= 2^62 eps (profile.md).
EPSILON_MIN = 2.0 ** -64
# "auto" picks the smallest m whose exact variance is at most this factor of the continuous
# piecewise mechanism's, at every input: no user loses more than 1% utility against PM.
AUTO_VARIANCE_SLACK = 1.01
_DEC = Context(prec=60, rounding=ROUND_HALF_EVEN)


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


def _grid_or_error(cont: Continuous, exponent: int) -> tuple:
    n, nc = cont.cells(exponent)
    if n > K_HI + 1:
        raise ProfileError("exponent %d leaves no room for the grid" % exponent)
    if n < 2 or n - nc < 1:
        raise ProfileError("exponent %d gives a grid of %d cell(s); at least 2 are needed "
                           "(one in the window, one outside)" % (exponent, n))
    return n, nc


@dataclass(frozen=True)
class Profile(Canonical):
    kind = "grid"   # class attributes, not fields: table profiles have kind "table"
    MAX_BYTES = MAX_FILE

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


def _parameters(lo, hi, epsilon) -> tuple:
    """(lo, hi, epsilon) as floats, epsilon rounded down from an exact decimal; ProfileError
    for anything a grid profile cannot hold (pfile.parameters, then the grid's smallest eps)."""
    lo, hi, epsilon = parameters(lo, hi, epsilon)
    if epsilon < EPSILON_MIN:
        raise ProfileError("epsilon %r is too small for any grid: below 2^-64 (about %.2g) the "
                           "64-bit threshold T cannot make P_hi > P_lo" % (epsilon, EPSILON_MIN))
    return lo, hi, epsilon


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
_N_MAX = (1 << MANTISSA_BITS) - 1


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
    """A checked window-grid profile from a file's bytes (or text): the device's grammar and
    checks. A file of any kind loads through the registry (zeal.mechanism.kinds.loads: the
    sniff rule of profile.md)."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")  # non-ASCII: bytes >= 0x80, "json"
    text = bytes(text)
    if len(text) > MAX_FILE:
        raise _fail("size", "profile is longer than %d bytes, the longest a device reads"
                    % MAX_FILE)
    return from_dict(parse(text))


def load(path):
    data = read_file(path, MAX_FILE)
    return loads(data)
