"""The scalar exact mechanism with crafted words: every branch derived by hand."""
from fractions import Fraction

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal.errors import InputError, ReportError
from zeal.mechanism.core.floatbits import float64_to_bits
from zeal.mechanism.core.draws import (
    bernoulli, reading, reading_from_float32_bits, reading_from_float64_bits, uniform_below)
from zeal.mechanism.grid.scalar import ExactZeal, reading_from_raw
from zeal.mechanism.core.words import ListWords

W = 2 ** 64
TOP = W - 1


def test_uniform_below_boundaries():
    q = W // 3                                  # 6148914691236517205; 3q = 2^64 - 1
    assert uniform_below(3, ListWords([0])) == 0
    assert uniform_below(3, ListWords([q - 1])) == 0
    assert uniform_below(3, ListWords([q])) == 1
    assert uniform_below(3, ListWords([3 * q - 1])) == 2
    q9 = W // 9                                 # 9*q9 = 2^64 - 7: the top 7 words reject
    assert uniform_below(9, ListWords([9 * q9, 8 * q9])) == 8
    assert uniform_below(9, ListWords([TOP, TOP - 6, 5])) == 0
    assert uniform_below(1, ListWords([TOP])) == 0


def test_uniform_below_consumes_exactly_its_words():
    src = ListWords([W // 9 * 9, 0, 123])
    assert uniform_below(9, src) == 0 and src.index == 2


def test_bernoulli_digit_comparison():
    half = 2 ** 63                              # 1/2 = 0.8000...0 in base 2^64
    assert bernoulli(1, 2, ListWords([half - 1])) == 1
    assert bernoulli(1, 2, ListWords([half])) == 0        # U >= 1/2 once the tail is 0
    assert bernoulli(1, 2, ListWords([half + 1])) == 0
    third = W // 3                              # 1/3 = 0.5555... repeating digit
    assert bernoulli(1, 3, ListWords([third, third, third - 1])) == 1
    assert bernoulli(1, 3, ListWords([third, third + 1])) == 0
    assert bernoulli(0, 7, ListWords([0])) == 0 and bernoulli(0, 7, ListWords([TOP])) == 0
    assert bernoulli(6, 7, ListWords([0])) == 1


HAND = dict(lo=20.0, hi=80.0, epsilon=1.0, bits=4)   # N=15, Nc=6, No=9 (test_profile)


def test_hand_derived_reports():
    prof = P.from_bits(**HAND)
    mech = ExactZeal(profile=prof, words=ListWords([]))
    # x = 50: pos = (50-20)*9/60 = 4.5 exactly; rounding digit = 2^63.
    # words 0,0,0: U < 1/2 -> jL = 5; 0 < T -> window; u = 0 -> j = 5.
    assert mech.sample_offset(Fraction(50), ListWords([0, 0, 0])) == 5
    # words TOP,TOP,TOP,0: jL = 4; TOP >= T -> outside; TOP // (2^64//9) = 9 rejected;
    # then u = 0 < jL -> j = 0.
    assert mech.sample_offset(Fraction(50), ListWords([TOP, TOP, TOP, 0])) == 0
    # outside branch with u >= jL skips the window: u = 4 -> j = 4 + Nc = 10.
    assert mech.sample_offset(Fraction(50), ListWords([TOP, TOP, 4 * (W // 9)])) == 10
    # x = lo: pos 0, jL = 0 whatever the word; window draw u=5 (last window cell)
    assert mech.sample_offset(Fraction(20), ListWords([0, 0, 5 * (W // 6)])) == 5
    # x = hi: pos = 9, jL = 9, window cells 9..14
    assert mech.sample_offset(Fraction(80), ListWords([0, 0, 5 * (W // 6)])) == 14
    k = mech.perturb(50.0, ListWords([0, 0, 0]))
    assert k == 2 ** 52 - 16 + 5
    assert reports.to_low(prof, k) == 5
    assert reports.to_bits(prof, k) == (1079 << 52) | k        # 56 + 1023 = 1079
    assert reports.to_value(prof, k) == 2 ** 56 + (2 ** 52 - 11) * 16


def test_clamping_is_counted_and_exact():
    prof = P.from_bits(**HAND)
    mech = ExactZeal(profile=prof, words=ListWords([]))
    assert mech.sample_offset(Fraction(-5), ListWords([0, TOP, 0])) == 6   # as x = lo
    assert mech.sample_offset(Fraction(99), ListWords([0, TOP, 0])) == 0   # as x = hi
    assert mech.clamped == 2


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_rejected(value):
    with pytest.raises(InputError):
        reading(value)
    with pytest.raises(InputError):
        reading_from_float64_bits(float64_to_bits(value))


def test_float32_and_raw_readings_are_exact():
    assert reading_from_float32_bits(0x420E51EC) == Fraction(0x8E51EC, 2 ** 23) * 32  # 35.58f
    assert reading_from_float32_bits(0x3F800000) == 1
    with pytest.raises(InputError):
        reading_from_float32_bits(0x7FC00000)
    cal = P.Calibration(Fraction(33, 40950), Fraction(0))      # 3.3 V / 4095 counts / 0.1
    prof = P.from_bits(0.0, 3.3, 1.0, 8, calibration=cal)
    assert reading_from_raw(prof, 4095) == Fraction(33, 10)
    with pytest.raises(InputError, match="calibration"):
        reading_from_raw(P.from_bits(**HAND), 1)


def test_reports_decode_and_reject():
    prof = P.from_bits(**HAND)
    for k in (prof.k_lo, prof.k_lo + 7, prof.k_hi):
        assert reports.from_bits(prof, reports.to_bits(prof, k)) == k
        assert reports.from_low(prof, reports.to_low(prof, k)) == k
        assert reports.parse_line(prof, "%016x" % reports.to_bits(prof, k)) == k
        assert reports.parse_line(prof, str(reports.to_low(prof, k))) == k
        value = reports.value_of_bits(reports.to_bits(prof, k))
        assert reports.parse_line(prof, repr(value)) == k
    with pytest.raises(ReportError):
        reports.from_low(prof, 15)               # k = 2^52 - 1: never produced
    with pytest.raises(ReportError):
        reports.from_low(prof, 16)
    with pytest.raises(ReportError):
        reports.from_bits(prof, (1078 << 52) | prof.k_lo)   # another exponent
    with pytest.raises(ReportError):
        reports.parse_line(prof, "hello")


def test_sixteen_digit_low_values_parse_as_low_bits():
    """At m = 52 the transmitted value can have 16 decimal digits, like a bit pattern."""
    prof = P.from_bits(23.5, 83.9, 1.0, 52)
    k = prof.k_hi
    low = reports.to_low(prof, k)
    assert len(str(low)) == 16
    assert reports.parse_line(prof, str(low)) == k
    assert reports.parse_line(prof, "%016x" % reports.to_bits(prof, k)) == k
