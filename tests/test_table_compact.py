"""The compact table encoding, zeal-table/2 (zeal.mechanism.table.compact, profile.md).

Hand case first (the hand table W = [[2, 1], [1, 2]], written out below digit by digit), then
seeded random two-level tables: decode(encode(W)) == W, the run each row gets leaves no more
exceptions than any other run (brute force over every run), and the refusals (unequal totals,
too many exceptions, malformed strings) with their reason codes.
"""
import random

import pytest

from zeal.errors import ProfileError
from zeal.mechanism.table import compact as C
from zeal.mechanism.table import mechanism as TB
from zeal.mechanism.table import profile as TP


def test_the_hand_table_by_hand():
    # lo = (1, 1), hi = (2, 2); row 0 = (2, 1): the run of cell 0 -> a = 0, b = 1, k = 0;
    # row 1 = (1, 2): the run of cell 1 -> a = 1, b = 2, k = 0
    levels, rows = C.encode([[2, 1], [1, 2]])
    assert levels == "00000001" "00000002" "00000001" "00000002"
    assert rows == "00" "01" "00" "01" "02" "00"
    assert C.decode(levels, rows, 2, 2) == [[2, 1], [1, 2]]
    # one exception by hand: row 1 = (1, 2) written as the empty run (0, 0) with cell 1
    # listed at 2: the same weights
    assert C.decode(levels, "000100" "000001" "0100000002", 2, 2) == [[2, 1], [1, 2]]


def _two_level(rng, rows, n, off):
    lo = [rng.randrange(1000, 5000) for _ in range(n)]
    hi = [x * 2 for x in lo]
    out = []
    for _ in range(rows):
        a = rng.randrange(n + 1)
        b = rng.randrange(a, n + 1)
        row = [hi[j] if a <= j < b else lo[j] for j in range(n)]
        for j in rng.sample(range(n), off):
            row[j] = rng.randrange(lo[j], hi[j] + 1)
        out.append(row)
    # equal totals: the last cell takes up the difference
    top = max(sum(r) for r in out)
    for r in out:
        r[-1] += top - sum(r)
    return out


def _exceptions(row, lo, hi, a, b):
    return sum(row[j] != (hi[j] if a <= j < b else lo[j]) for j in range(len(row)))


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_and_the_fewest_exceptions(seed):
    rng = random.Random(seed)
    n, rows = rng.choice([(4, 5), (8, 9), (16, 17)])
    w = _two_level(rng, rows, n, off=rng.randrange(0, 2))
    try:
        levels, text = C.encode(w)
    except ProfileError as exc:
        assert "at most 4" in str(exc)
        return
    assert C.decode(levels, text, rows, n) == w
    lo, hi = C._levels(w, n)
    for row in w:
        a, b, out = C._row(row, lo, hi)
        best = min(_exceptions(row, lo, hi, x, y) for x in range(n + 1)
                   for y in range(x, n + 1))
        assert len(out) == best == _exceptions(row, lo, hi, a, b)


def test_refusals():
    with pytest.raises(ProfileError, match="same total"):
        C.encode([[2, 1], [1, 3]])
    # cells 0-4: 10 in rows 0 and 1, 20 in row 2, 15 in row 3: lo 10, hi 15 (the smaller of
    # the two most frequent above 10), so row 2 holds five cells off both levels
    w = [[10] * 5 + [50], [10] * 5 + [50], [20] * 5 + [0], [15] * 5 + [25]]
    with pytest.raises(ProfileError, match="at most 4"):
        C.encode(w)
    levels = "0000000100000002" * 2
    for rows, what in (("000100" "0102", "ends inside"), ("000100" "010200" "00", "more than"),
                       ("010000" "010200", "run"), ("000100" "010300", "run"),
                       ("000105" + "0000000002" * 5 + "010200", "more than 4"),
                       ("000002" "0100000001" "0000000002" "010200", "ascend")):
        with pytest.raises(ProfileError, match=what) as exc:
            C.decode(levels, rows, 2, 2)
        assert exc.value.reason == "value"
    with pytest.raises(ProfileError) as exc:
        C.decode(levels[:16], "000100010200", 2, 2)
    assert exc.value.reason == "value"


def test_a_profile_chooses_its_version():
    """Dense while (R + 1) N <= 320, compact above; either can be asked for; the two files of
    one table are different files (fingerprints) of the same table."""
    hand = TB.Table(-1, 1, 1, [[2, 1], [1, 2]])
    dense = TP.from_table(hand, epsilon=1.0)
    packed = TP.from_table(hand, epsilon=1.0, encoding="compact")
    assert (dense.format, packed.format) == ("zeal-table/1", "zeal-table/2")
    assert dense.weights == packed.weights and dense.fingerprint != packed.fingerprint
    assert TP.loads(packed.to_json()) == packed
    # the window table on 64 cells, window 16: R = 48 anchors, 49 x 64 weights, each row a
    # run of 16 cells at the upper level: only compact, with no exception
    pm = TB.pm(-1, 1, 1, cells=64, window=16, scale_bits=20)
    with pytest.raises(ProfileError, match="dense table profile holds at most"):
        TP.from_table(pm, epsilon=1.0, encoding="dense")
    prof = TP.from_table(pm, epsilon=1.0)
    assert prof.format == "zeal-table/2" and TP.loads(prof.to_json()).weights == pm.weights
    rows = prof.canonical()["rows"]
    assert len(rows) == 6 * 49 and rows[4:6] == "00"
