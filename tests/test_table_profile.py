"""Table profiles ("zeal-table/1"): format, checks with reason codes, dispatch, exact figures.

shared_spec/profile.md ("Table profiles") and mechanism.md ("Table profiles") are the spec.
"""
import hashlib
import json
import math
import os
import random
from fractions import Fraction

import pytest

from zeal.errors import ProfileError
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal.mechanism.table import mechanism as T
from zeal.mechanism.table import profile as TP
from zeal.mechanism.core.floatbits import float64_to_bits

from conftest import ROOT

REASONS = ("size", "json", "type", "format", "missing", "unknown", "value", "fingerprint",
           "derived", "privacy", "unbiased")


def rehash(doc):
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    return dict(doc, fingerprint=hashlib.sha256(canon).hexdigest())


def joined(values):
    return "".join("%+d" % v for v in values)


def dump(doc):
    return (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()


def hexw(rows):
    return "".join("%08x" % w for row in rows for w in row)


@pytest.fixture(scope="module")
def pm_profile():
    return TP.build(-1.0, 1.0, 1.0, "pm", 3)


@pytest.fixture(scope="module")
def hand():
    return TP.from_table(T.Table(-1, 1, 1, [[2, 1], [1, 2]]), epsilon=1.0)


# ---- the hand case (mechanism.md, "Table profiles", worked by hand) -----------------------------
def test_hand_case(hand):
    # W = [[2, 1], [1, 2]] on [-1, 1], eps 1: column ratio (2/3)/(1/3) = 2 <= e.
    # Unbiased at x_0 = -1: (2 g0 + g1)/3 = -1; at x_1 = 1: (g0 + 2 g1)/3 = 1 -> g = (-3, 3);
    # a_j = (g_j - lo) Q/(hi - lo) = (g_j + 1)/2 with Q = 1 -> a = (-1, 2).
    assert (hand.values, hand.value_den, hand.anchors, hand.n_cells, hand.bits) == \
        ([-1, 2], 1, 1, 2, 1)
    assert hand.to_json().count('"values": "-1+2"') == 1
    assert [hand.output_value(j) for j in (0, 1)] == [-3, 3]
    t = hand.table
    assert t.privacy_ratio() == 2
    # V_0 = V_1 = 9 - 1 = 8, D = 2: Var(x) = 8 + 4 f(1 - f) (f = (x + 1)/2) = 9 - x^2,
    # Duchi's formula at ratio 2 (B = 3): worst 9 at x = 0.
    for x, want in ((-1, 8), (0, 9), (Fraction(1, 2), Fraction(35, 4)), (1, 8)):
        assert t.variance(x) == want
    assert hand.worst_variance() == 9
    assert t.distribution(0) == [Fraction(1, 2), Fraction(1, 2)]
    # the file round-trips through the grid module's loader (the sniff rule)
    assert kinds.loads(hand.to_json()).fingerprint == hand.fingerprint


# ---- round trip and dispatch -------------------------------------------------------------------
def test_round_trip_and_dispatch(pm_profile):
    text = pm_profile.to_json()
    back = TP.loads(text.encode())
    assert back == pm_profile and back.fingerprint == pm_profile.fingerprint
    assert back.canonical_bytes() == pm_profile.canonical_bytes()
    assert hashlib.sha256(back.canonical_bytes()).hexdigest() == json.loads(text)["fingerprint"]
    via = kinds.loads(text)
    assert via.kind == "table" and isinstance(via, TP.TableProfile)
    grid = P.from_bits(-1.0, 1.0, 1.0, 4)
    assert grid.kind == "grid" and kinds.loads(grid.to_json()) == grid
    assert back.k_lo == 0 and back.k_hi == back.n_cells - 1 and back.wire_base == 0


def test_load_reads_a_table_file(tmp_path, pm_profile):
    path = tmp_path / "t.json"
    path.write_text(pm_profile.to_json())
    assert kinds.load(str(path)).fingerprint == pm_profile.fingerprint
    assert TP.load(str(path)).fingerprint == pm_profile.fingerprint
    with pytest.raises(ProfileError, match="cannot read profile"):
        kinds.load(str(tmp_path / "none.json"))


def test_sniff_rule_looks_at_503_bytes(pm_profile):
    grid = P.from_bits(-1.0, 1.0, 1.0, 4).to_json()
    # a grid-looking file of 503+ bytes whose "zeal-table/1" sits after byte 503: a grid, so
    # the grid's 502-byte limit refuses it
    late = grid[:-2] + " " * (504 - len(grid)) + ',"x":"zeal-table/1"}\n'
    assert late.find("zeal-table/1") >= 503
    with pytest.raises(ProfileError) as exc:
        kinds.loads(late)
    assert exc.value.reason == "size"
    # the same marker within the first 503 bytes makes it a table file: refused by its format
    early = grid[:-2] + ',"x":"zeal-table/1"}\n'
    with pytest.raises(ProfileError) as exc:
        kinds.loads(early)
    assert exc.value.reason == "format"


def test_values_are_the_tables_output_values(pm_profile):
    t = pm_profile.table
    assert [pm_profile.output_value(j) for j in range(pm_profile.n_cells)] == t.output_values()
    assert pm_profile.worst_variance() == t.worst_variance()


# ---- MAX_TABLE_FILE ------------------------------------------------------------------------------
def test_max_table_file_recomputed():
    # profile.md: a file is "{\n", 13 members ' "key": value' joined by ",\n", "\n}\n".
    keys = ("anchors", "bits", "cal_gain", "cal_offset", "cells", "epsilon", "fingerprint",
            "format", "hi", "lo", "value_den", "values", "weights")
    overhead = 2 + 2 + 1 + 2 * (len(keys) - 1) + sum(1 + len(k) + 2 + 2 for k in keys)
    fixed = (2 * (64 + 2) + 3 * 20 + (64 + 2) + len('"zeal-table/1"') + 1   # bits <= 6
             + len(str(2 ** 63 - 1)))
    best = 0
    for n in range(2, 65):
        for r in range(1, 65):
            if (r + 1) * n <= 320:
                var = len(str(r)) + len(str(n)) + (20 * n + 2) + (8 * (r + 1) * n + 2)
                best = max(best, overhead + fixed + var)
    assert best == 4317
    # zeal-table/2 (levels and rows for weights: 14 keys), widest at N = R = 64 with 4
    # exceptions in every row: a record is 6 + 4 * 10 hex digits
    keys2 = tuple(k for k in keys if k != "weights") + ("levels", "rows")
    overhead2 = 2 + 2 + 1 + 2 * (len(keys2) - 1) + sum(1 + len(k) + 2 + 2 for k in keys2)
    var2 = 2 + 2 + (20 * 64 + 2) + (16 * 64 + 2) + (65 * 46 + 2)
    assert overhead2 + fixed + var2 == TP.MAX_TABLE_FILE == 5784
    # the marker lies within the sniffed 503 bytes even in the widest file
    doc = {"format": "zeal-table/1", "lo": "0x" + "f" * 16, "hi": "0x" + "f" * 16,
           "epsilon": "0x" + "f" * 16, "anchors": 64, "cells": 4, "bits": 2,
           "weights": "f" * 8, "values": "+1", "value_den": 2 ** 63 - 1,
           "cal_gain": "1" * 64, "cal_offset": "1" * 64, "fingerprint": "f" * 64}
    assert dump(doc).find(b"zeal-table/1") + 12 <= P.MAX_FILE + 1


def test_size_limit(pm_profile):
    text = pm_profile.to_json()
    pad = text[:-2] + " " * (TP.MAX_TABLE_FILE - len(text)) + text[-2:]
    assert len(pad) == TP.MAX_TABLE_FILE and TP.loads(pad) == pm_profile
    with pytest.raises(ProfileError) as exc:
        kinds.loads(text[:-2] + " " * (TP.MAX_TABLE_FILE + 1 - len(text)) + text[-2:])
    assert exc.value.reason == "size"


# ---- every reason code ---------------------------------------------------------------------------
def tamper_cases(base, small):
    """(reason, file bytes) for every check of the list, each past the earlier checks."""
    good = dump(base).decode()
    rh = rehash
    a = TP._parse_values(base["values"], base["cells"])
    yield "size", good[:-2] + " " * (TP.MAX_TABLE_FILE + 1 - len(good)) + good[-2:]
    yield "json", good.replace('"bits": ', '"bits": 1,\n "bits": ', 1)
    yield "json", good.replace("{", "{\x01", 1)
    yield "type", good.replace('"cells": %d' % base["cells"], '"cells": true', 1)
    yield "type", good.replace('"cells": %d' % base["cells"], '"cells": 0%d' % base["cells"], 1)
    yield "format", dump(rh(dict(base, format="zeal-table/3")))
    yield "missing", dump({k: v for k, v in base.items() if k != "weights"})
    yield "missing", dump(rh(dict(base, cal_offset="0")))
    yield "unknown", dump(rh(dict(base, exponent=3)))
    yield "type", dump(rh(dict(base, bits=str(base["bits"]))))
    yield "type", dump(rh(dict(base, lo="0X" + base["lo"][2:])))
    yield "type", dump(dict(base, fingerprint=base["fingerprint"].upper()))
    yield "type", dump(rh(dict(base, weights=base["weights"].replace("0", "g", 1))))
    yield "type", dump(rh(dict(base, values=base["values"] + "e1")))
    yield "value", dump(rh(dict(base, cal_gain="1/0", cal_offset="0")))
    yield "fingerprint", dump(dict(base, values=joined([a[0] + 1] + a[1:])))
    yield "value", dump(rh(dict(base, hi="0x7ff0000000000000")))
    yield "value", dump(rh(dict(base, hi=base["lo"])))
    yield "value", dump(rh(dict(base, epsilon="0x%016x" % float64_to_bits(-1.0))))
    yield "value", dump(rh(dict(base, anchors=0)))
    yield "value", dump(rh(dict(base, cells=65)))
    yield "value", dump(rh(dict(base, anchors=63, cells=6)))
    yield "value", dump(rh(dict(base, weights=base["weights"] + "00000001")))
    yield "value", dump(rh(dict(base, values=joined(a + [0]))))
    yield "value", dump(rh(dict(base, values="+" + str(2 ** 63) + base["values"][2:])))
    yield "value", dump(rh(dict(small, values="-1+0002")))
    yield "value", dump(rh(dict(small, value_den=2 ** 63)))
    yield "value", dump(rh(dict(small, weights=hexw([[2 ** 32 - 1, 2], [1, 2]]))))
    yield "value", dump(rh(dict(small, weights=hexw([[0, 0], [1, 2]]))))
    yield "derived", dump(rh(dict(small, bits=0)))
    yield "privacy", dump(rh(dict(small, weights=hexw([[1, 0], [1, 2]]))))
    yield "privacy", dump(rh(dict(small, weights=hexw([[11, 4], [4, 11]]))))   # 11/4 > e
    yield "unbiased", dump(rh(dict(small, values="-1+1")))


def test_every_reason_code_refused(pm_profile, hand):
    base = json.loads(pm_profile.to_json())
    small = json.loads(hand.to_json())
    seen = set()
    for reason, text in tamper_cases(base, small):
        data = text if isinstance(text, bytes) else text.encode("latin-1")
        with pytest.raises(ProfileError) as exc:
            kinds.loads(data)
        assert exc.value.reason == reason, (reason, str(exc.value))
        assert "\n" not in str(exc.value)
        seen.add(reason)
    assert seen == set(REASONS)


def test_privacy_bound_is_exactly_L():
    # a 2-cell table at ratio exactly L (the certified bound of e^eps) passes, one above fails
    eps = 1.0
    lb = P.exp_lower_bound(Fraction(eps))
    # rows (k, d) and (d, k) with k/d <= L: the best 16-bit ratio below L, and one above it
    d = 1 << 16
    k = math.floor(lb * d)
    for kk, ok in ((k, True), (k + 1, False)):
        t = T.Table(-1, 1, eps, [[kk, d], [d, kk]], check=False)
        small = {"format": "zeal-table/1", "lo": "0x%016x" % float64_to_bits(-1.0),
                 "hi": "0x%016x" % float64_to_bits(1.0),
                 "epsilon": "0x%016x" % float64_to_bits(eps), "anchors": 1, "cells": 2,
                 "bits": 1, "weights": hexw([[kk, d], [d, kk]])}
        # a_j = (g_j + 1)/2 with g = -+(k+d)/(k-d): Q = 2(k-d)
        q = 2 * (kk - d)
        small.update(values=joined([(kk - d) - (kk + d), (kk - d) + (kk + d)]), value_den=q)
        if ok:
            assert t.is_private()
            assert kinds.loads(dump(rehash(small))).table.privacy_ratio() == Fraction(kk, d)
        else:
            assert not t.is_private()
            with pytest.raises(ProfileError) as exc:
                kinds.loads(dump(rehash(small)))
            assert exc.value.reason == "privacy"


def test_checks_agree_with_the_exact_table():
    """Seeded random small tables: the integer checks (cross-multiplication) give the verdict
    the Fraction analysis of zeal.mechanism.table.mechanism gives, for privacy and unbiasedness."""
    rng = random.Random(1010)
    verdicts = {"privacy": 0, "unbiased": 0, None: 0}
    for _ in range(400):
        r = rng.randint(1, 3)
        n = rng.randint(2, 4)
        eps = rng.choice((0.5, 1.0, 2.0))
        if rng.random() < 0.5:
            # a Duchi-like table (rows mix (k, d) and (d, k), k/d near e^eps, some columns
            # unused), with its unbiased values, sometimes nudged by one unit
            k, d = rng.choice(((3, 2), (2, 1), (5, 2), (7, 1), (8, 1)))
            cols = sorted(rng.sample(range(n), 2))
            rows = [[0] * n for _ in range(r + 1)]
            for s in range(r + 1):
                rows[s][cols[0]] = (r - s) * k + s * d
                rows[s][cols[1]] = (r - s) * d + s * k
            # g = -+(k+d)/(k-d), a_j = (g_j + 1)/2 * Q with Q = 2(k-d)
            q = 2 * (k - d)
            a = [rng.randint(-5, 5) for _ in range(n)]
            a[cols[0]], a[cols[1]] = (k - d) - (k + d), (k - d) + (k + d)
            if rng.random() < 0.3:
                a[cols[rng.randint(0, 1)]] += rng.choice((-1, 1))
        else:
            rows = [[rng.choice((0, 1, 2, 3, 5, 8)) for c in range(n)] for _ in range(r + 1)]
            for row in rows:
                if not sum(row):
                    row[0] = 1
            q = rng.choice((1, 2, 6))
            a = [rng.randint(-3 * q, 4 * q) for _ in range(n)]
        t = T.Table(-1, 1, eps, rows, check=False)
        g = [Fraction(-1) + 2 * Fraction(v, q) for v in a]
        if not t.is_private():
            want = "privacy"
        elif any(sum(p * v for p, v in zip(t.probs[k], g)) != t.anchor(k) for k in range(r + 1)):
            want = "unbiased"
        else:
            want = None
        doc = rehash({"format": "zeal-table/1", "lo": "0xbff0000000000000",
                      "hi": "0x3ff0000000000000", "epsilon": "0x%016x" % float64_to_bits(eps),
                      "anchors": r, "cells": n, "bits": TP.bits_for(n), "weights": hexw(rows),
                      "values": joined(a), "value_den": q})
        try:
            kinds.loads(dump(doc))
            got = None
        except ProfileError as exc:
            got = exc.reason
        assert got == want, (rows, a, q, eps)
        verdicts[want] += 1
    # every verdict occurs often: the comparison has teeth
    assert min(verdicts.values()) >= 40, verdicts


# ---- constructors --------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism, bits, eps", [
    ("duchi", 1, 0.5), ("pm", 2, 1.0), ("pm", 4, 4.0), ("pm-sub", 3, 2.0), ("hm", 3, 2.0),
    ("hm", 4, 0.5), ("three-outputs", 2, 1.0), ("three-outputs", 2, 4.0),
    ("three-outputs-lp", 2, 1.0), ("n-output-lp", 3, 1.0), ("optimal", 3, 2.0)])
def test_build_every_mechanism(mechanism, bits, eps):
    prof = TP.build(-1.0, 1.0, eps, mechanism, bits)
    back = kinds.loads(prof.to_json())
    assert back == prof and len(prof.to_json()) <= TP.MAX_TABLE_FILE
    assert prof.bits <= max(bits, 1) and prof.n_cells <= 1 << prof.bits
    t = prof.table
    assert t.privacy_ratio() <= P.exp_lower_bound(Fraction(prof.epsilon))
    for r in range(prof.anchors + 1):       # exactly unbiased at every anchor
        assert sum(p * g for p, g in zip(t.probs[r], t.output_values())) == t.anchor(r)
    assert all(sum(row) <= 1 << 32 for row in prof.weights)
    if mechanism.startswith("three-outputs"):
        assert (prof.n_cells, prof.anchors) == (3, 2)
    if mechanism == "n-output-lp":
        assert prof.anchors + 1 == prof.n_cells == 1 << bits
    if mechanism in ("pm", "pm-sub"):
        # the window family's N/Nc = t + 1: t = e^(eps/2) (PM) or e^(eps/3) (PM-SUB)
        n = prof.n_cells
        t_par = math.exp(eps / (2 if mechanism == "pm" else 3))
        assert prof.anchors == n - min(n - 2, max(1, round(n / (t_par + 1))))
    if mechanism == "duchi" or (mechanism == "hm" and eps < 0.61):
        # Duchi at ratio L_s: worst variance h^2 B^2, B = (L_s + 1)/(L_s - 1), at the middle
        ls = Fraction(prof.weights[0][0], prof.weights[0][1])
        assert prof.n_cells == 2 and ls <= P.exp_lower_bound(Fraction(eps))
        assert prof.worst_variance() == ((ls + 1) / (ls - 1)) ** 2


def test_build_range_and_calibration():
    cal = P.Calibration(Fraction(33, 40950), Fraction(0))
    prof = TP.build(0.0, 3.3, 1.0, "pm", 3, calibration=cal)
    back = kinds.loads(prof.to_json())
    assert back.calibration == cal and back.lo == 0.0 and back.hi == 3.3
    assert '"cal_gain": "11/13650"' in prof.to_json()
    # range scaling: the normalised worst variance is the same on [-1, 1]
    unit = TP.build(-1.0, 1.0, 1.0, "pm", 3)
    assert prof.worst_variance() / (Fraction(3.3) / 2) ** 2 == unit.worst_variance()


def test_build_refuses_bad_inputs():
    for args, what in (((1.0, -1.0, 1.0, "pm", 3), "range"), ((-1.0, 1.0, 0.0, "pm", 3), "eps"),
                       ((-1.0, 1.0, 1.0, "laplace", 3), "mechanism"),
                       ((-1.0, 1.0, 1.0, "pm", 7), "bits"), ((-1.0, 1.0, 1.0, "pm", 1), "pm"),
                       ((-1.0, 1.0, 1.0, "n-output-lp", 5), "n-output-lp"),
                       ((-1.0, 1.0, 1.0, "n-output", 4), "n-output as published")):
        with pytest.raises(ProfileError) as exc:
            TP.build(*args)
        assert "\n" not in str(exc.value), what


def test_from_table_refusals():
    with pytest.raises(ProfileError, match="float64"):
        TP.from_table(T.Table(0, Fraction(1, 3), 1, [[2, 1], [1, 2]]))
    with pytest.raises(ProfileError, match="2\\^32"):
        TP.from_table(T.Table(-1, 1, 1, [[2 ** 32, 2 ** 31], [2 ** 31, 2 ** 32]]))
    wide = [[1] * 65, [1] * 65]
    with pytest.raises(ProfileError, match="cells"):
        TP.from_table(T.Table(-1, 1, 1, wide, values=[-1] * 65, check=False))
    # a smaller stored epsilon than the table's ratio needs: the privacy check refuses it
    with pytest.raises(ProfileError, match="privacy ratio"):
        TP.from_table(T.Table(-1, 1, 1, [[2, 1], [1, 2]]), epsilon=0.5)


def test_vectors_cover_every_reason_code():
    with open(os.path.join(ROOT, "shared_spec", "vectors", "tables.json")) as fh:
        doc = json.load(fh)
    assert doc["count"] == len(doc["cases"])
    reasons = {c["reason"] for c in doc["cases"] if c["result"] == "invalid"}
    assert reasons == set(REASONS)
    for case in doc["cases"]:
        if case["kind"] != "profile":
            continue
        if case["result"] == "valid":
            prof = kinds.loads(case["file"].encode("ascii"))
            assert prof.fingerprint == case["fingerprint"] and prof.kind == "table"
            assert prof.canonical_bytes().decode() == case["canonical"]
        else:
            with pytest.raises(ProfileError) as exc:
                kinds.loads(case["file"].encode("ascii"))
            assert exc.value.reason == case["reason"], case["id"]
