"""Profiles: hand-derived grids, validation, canonical form and fingerprint (all exact)."""
import hashlib
import json
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import choose
from zeal.mechanism.grid.exact import worst_variance_ratio
from zeal.errors import ProfileError

from conftest import HUMIDITY


def test_hand_derived_small_grid():
    # lo=20, hi=80, eps=1: h=30, a=e^0.5=1.6487212707, C = 30*2.6487212707/0.6487212707
    # = 122.4897. With m=4 bits: ulp 2^(E-52); E=56 -> ulp 16, 2C/16 = 15.31 -> N=15 <= 15;
    # E=55 -> ulp 8, N = round(30.6) = 31 > 15. Window: (C-h)/16 = 92.49/16 = 5.78 -> Nc=6.
    prof = P.from_bits(20.0, 80.0, 1.0, 4)
    assert (prof.exponent, prof.n_cells, prof.n_window, prof.n_outside) == (56, 15, 6, 9)
    assert prof.k_lo == 2 ** 52 - 16 and prof.k_hi == 2 ** 52 - 2
    # T = floor(2^64 * 6e / (9 + 6e)) = 16.30969/25.30969 * 2^64 ~ 0.644405 * 2^64: check both defining inequalities
    # against an enclosure of e that does not use the code's Taylor bound.
    e_lo = Fraction("2.71828182845904523536028747135")  # e to 30 digits, rounded down
    e_hi = e_lo + Fraction(1, 10 ** 29)
    t = prof.threshold
    assert t * 9 <= e_lo * (2 ** 64 - t) * 6
    assert (t + 1) * 9 > e_hi * (2 ** 64 - t - 1) * 6
    assert abs(t / 2 ** 64 - 0.644405) < 1e-6


def test_humidity_exponents_and_bits():
    lo, hi = HUMIDITY
    cont = P.Continuous.of(lo, hi, 1.0)
    assert cont.e_enc() == 8  # ceil(log2(2C)) = ceil(log2(246.61)) = 8
    assert P.bits_range(lo, hi, 1.0) == (2, 52)
    previous = None
    for m in range(2, 53):
        prof = P.from_bits(lo, hi, 1.0, m)
        assert prof.bits == m
        assert prof.n_cells < 2 ** m  # k_lo >= wire_base: every k shares the top 52-m bits
        assert prof.k_lo >= prof.wire_base
        if previous is not None:
            assert prof.exponent < previous
        previous = prof.exponent
    # at E_enc the grid nearly fills the binade: 2C/2^(8-52) = 246.61 * 2^44 cells
    assert P.from_exponent(lo, hi, 1.0, 8).bits == 52


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(lo=5.0, hi=5.0, epsilon=1.0, exponent=60), "range is empty"),
    (dict(lo=6.0, hi=5.0, epsilon=1.0, exponent=60), "range is empty"),
    (dict(lo=float("nan"), hi=5.0, epsilon=1.0, exponent=60), "finite"),
    (dict(lo=0.0, hi=float("inf"), epsilon=1.0, exponent=60), "finite"),
    (dict(lo=0.0, hi=1.0, epsilon=0.0, exponent=60), "epsilon"),
    (dict(lo=0.0, hi=1.0, epsilon=-1.0, exponent=60), "epsilon"),
    (dict(lo=0.0, hi=1.0, epsilon=float("nan"), exponent=60), "finite"),
    (dict(lo=23.5, hi=83.9, epsilon=1.0, exponent=7), "out of range"),   # below E_enc = 8
    (dict(lo=23.5, hi=83.9, epsilon=1.0, exponent=200), "out of range"),
    (dict(lo=23.5, hi=83.9, epsilon=1.0, exponent=8.5), "integer"),
])
def test_bad_parameters_raise_profile_error(kwargs, fragment):
    with pytest.raises(ProfileError, match=fragment):
        P.from_exponent(**kwargs)


@pytest.mark.parametrize("bits", [0, 1, 53, 64])
def test_bits_out_of_range(bits):
    with pytest.raises(ProfileError, match="out of range"):
        P.from_bits(23.5, 83.9, 1.0, bits)


def test_canonical_form_round_trip_and_fingerprint():
    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    doc = json.loads(prof.to_json())
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    assert all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in core.values())
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    assert doc["fingerprint"] == hashlib.sha256(canon).hexdigest()
    assert P.loads(prof.to_json()) == prof
    other = P.from_bits(23.5, 83.9, 1.0, 5)
    assert other.fingerprint != prof.fingerprint


def rehashed(doc: dict) -> dict:
    """doc with its fingerprint recomputed as a device does: the canonical bytes of every key
    but the fingerprint, calibrations reduced, strings verbatim. A tampered profile built with
    it passes the fingerprint check, so the check under test is the one that refuses it."""
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    for key in ("cal_gain", "cal_offset"):
        if isinstance(core.get(key), str):
            try:
                core[key] = str(Fraction(core[key]))
            except (ValueError, ZeroDivisionError):
                pass
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    return dict(doc, fingerprint=hashlib.sha256(canon).hexdigest())


def _tampered(prof, rehash=False, **changes):
    doc = json.loads(prof.to_json())
    doc.update(changes)
    return json.dumps(rehashed(doc) if rehash else doc)


@pytest.mark.parametrize("changes, rehash, reason, fragment", [
    (dict(threshold=12345), True, "derived", "threshold"),
    (dict(threshold=12345), False, "fingerprint", "fingerprint does not match"),
    (dict(n_cells=14), True, "derived", "threshold"),   # T is re-derived from N first
    (dict(fingerprint="0" * 64), False, "fingerprint", "fingerprint does not match"),
    (dict(format="zeal-profile/0"), True, "format", "format"),
    (dict(extra=1), True, "unknown", "unknown keys"),
    (dict(lo="0x40"), True, "type", "64-bit pattern"),
    (dict(exponent="56"), True, "type", "integer"),
    (dict(cal_gain="1/0", cal_offset="0"), True, "value", "cal_gain"),
])
def test_tampered_profiles_are_rejected(changes, rehash, reason, fragment):
    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    with pytest.raises(ProfileError, match=fragment) as info:
        P.loads(_tampered(prof, rehash, **changes))
    assert info.value.reason == reason


def test_n_cells_edited_consistently_is_refused_by_the_host_only():
    """N, Nc and E are the host's to derive (utility, not privacy): a profile whose integers
    are consistent with each other but not with lo, hi, epsilon is refused as "derived"."""
    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    n = prof.n_cells - 1
    t = P.threshold(n, prof.n_window, Fraction(prof.epsilon))
    with pytest.raises(ProfileError, match="n_cells is 14 but the parameters give 15") as info:
        P.loads(_tampered(prof, True, n_cells=n, threshold=t))
    assert info.value.reason == "derived"


def test_edited_parameter_breaks_fingerprint():
    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    moved = P.from_bits(23.5, 84.0, 1.0, 4)
    doc = json.loads(prof.to_json())
    doc["hi"] = json.loads(moved.to_json())["hi"]
    doc.update({k: getattr(moved, k) for k in ("n_cells", "n_window", "threshold", "exponent")})
    with pytest.raises(ProfileError, match="fingerprint"):
        P.loads(json.dumps(doc))


def test_missing_and_unreadable(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        P.load(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ProfileError, match="not valid JSON"):
        P.load(bad)
    with pytest.raises(ProfileError, match="missing"):
        P.loads(json.dumps({"format": P.FORMAT}))


def test_calibration_is_part_of_the_fingerprint():
    cal = P.Calibration(Fraction("0.01"), Fraction(-40))
    a = P.from_bits(-40.0, 125.0, 1.0, 8, calibration=cal)
    b = P.from_bits(-40.0, 125.0, 1.0, 8)
    assert a.fingerprint != b.fingerprint
    assert P.loads(a.to_json()).calibration == cal


def test_exp_lower_bound_is_below_e():
    getcontext().prec = 60
    for eps in (0.5, 1.0, 2.0, 4.0, 20.0):
        bound = P.exp_lower_bound(Fraction(eps))
        # Decimal.exp is correctly rounded; minus a margin far above its error
        exact = Fraction(Decimal(eps).exp()) - Fraction(1, 10 ** 45)
        assert bound <= exact and exact - bound < Fraction(1, 10 ** 30) * exact


def test_auto_is_the_smallest_m_within_one_percent():
    lo, hi = HUMIDITY
    for eps in (0.5, 1.0, 2.0, 4.0):
        prof = choose.auto(lo, hi, eps)
        assert worst_variance_ratio(prof)[1] <= P.AUTO_VARIANCE_SLACK
        for m in range(2, prof.bits):
            assert worst_variance_ratio(P.from_bits(lo, hi, eps, m))[1] > P.AUTO_VARIANCE_SLACK
    assert choose.auto(lo, hi, 1.0).bits == 4
    assert math.isclose(choose.auto(lo, hi, 1.0).ulp, 2.0 ** 4)


@pytest.mark.parametrize("lo, hi", [(0.0, 1e-300), (-3e-200, 5e-200), (1e290, 3e290)])
def test_extreme_ranges_keep_the_variance_comparison_finite(lo, hi):
    """The ratio to PM is scale-free; tiny and huge ranges must not under/overflow to NaN."""
    prof = choose.auto(lo, hi, 1.0)
    low, high = worst_variance_ratio(prof)
    assert math.isfinite(low) and math.isfinite(high) and high <= P.AUTO_VARIANCE_SLACK
    same_shape = P.from_bits(23.5, 83.9, 1.0, prof.bits)
    if (same_shape.n_cells, same_shape.n_window) == (prof.n_cells, prof.n_window):
        assert math.isclose(high, worst_variance_ratio(same_shape)[1], rel_tol=1e-9)


@pytest.mark.parametrize("text", ["1e999999", "1" * 65, "2e65"])
def test_calibration_strings_are_bounded_like_on_the_device(text):
    with pytest.raises(ProfileError, match="cal_gain"):
        P.Calibration.parse(text, "cal_gain")
