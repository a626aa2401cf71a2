"""The table sampler's host reference (mechanism.md, "Table profiles"): vectors, hand cases,
and a seeded statistical test against the exact law of zeal.mechanism.table."""
import json
import os
from fractions import Fraction

import pytest

from zeal.errors import InputError
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal.mechanism.table import mechanism as T
from zeal.mechanism.table import profile as TP
from zeal.mechanism.core.draws import reading_from_float32_bits, reading_from_float64_bits
from zeal.mechanism.grid.scalar import reading_from_raw
from zeal.mechanism.table.sampler import TableSampler
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder

from conftest import ROOT
from scipy import stats

W = 1 << 64

with open(os.path.join(ROOT, "shared_spec", "vectors", "tables.json")) as fh:
    DOC = json.load(fh)
PROFILES = {c["id"]: kinds.loads(c["file"].encode("ascii"))
            for c in DOC["cases"] if c["kind"] == "profile" and c["result"] == "valid"}
SAMPLES = [c for c in DOC["cases"] if c["kind"] == "sample"]


def decode(prof, item):
    if "float64" in item:
        return reading_from_float64_bits(int(item["float64"], 16))
    if "float32" in item:
        return reading_from_float32_bits(int(item["float32"], 16))
    return reading_from_raw(prof, item["raw"])


@pytest.mark.parametrize("case", SAMPLES, ids=[c["id"] for c in SAMPLES])
def test_sampler_vectors(case):
    prof = PROFILES[case["profile"]]
    src = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
           else ListWords(int(w, 16) for w in case["words"]))
    sampler = TableSampler(prof, src)
    got = []
    for item in case["inputs"]:
        rec = Recorder(src)
        got.append({"j": sampler.sample_exact(decode(prof, item), rec),
                    "words_used": len(rec.used)})
    assert got == case["expected"]
    assert sampler.clamped == case["clamped"]


def test_vectors_hold_the_required_readings():
    kinds = set()
    for case in SAMPLES:
        prof = PROFILES[case["profile"]]
        lo, hi = Fraction(prof.lo), Fraction(prof.hi)
        for item in case["inputs"]:
            kinds.add(next(iter(item)))
            x = decode(prof, item)
            if x < lo:
                kinds.add("below")
            elif x > hi:
                kinds.add("above")
            elif ((x - lo) * prof.anchors / (hi - lo)).denominator == 1 and lo < x < hi:
                kinds.add("inner anchor")
    assert kinds >= {"float64", "float32", "raw", "below", "above", "inner anchor"}
    assert any("words" in c for c in SAMPLES) and any("key" in c for c in SAMPLES)


def hand_profile():
    return TP.from_table(T.Table(-1, 1, 1, [[2, 1], [1, 2]]), epsilon=1.0)


def test_hand_words():
    """W = [[2, 1], [1, 2]] on [-1, 1]; d = floor(2^64/3) = (2^64 - 1)/3."""
    prof = hand_profile()
    d = W // 3
    assert 3 * d == W - 1
    # x = 0: pos = 1/2, digit 2^63: word 0 < digit -> row 1; u = 0 -> cell 0 (W[1][0] = 1 > 0)
    assert TableSampler(prof, ListWords([0, 0])).sample(0.0) == 0
    # row 1, u = 1: 1 + 2 > 1 at j = 1
    assert TableSampler(prof, ListWords([0, d])).sample(0.0) == 1
    # word 2^64 - 1 > digit -> row 0; u = (2^64-1)//d = 3 >= 3: rejected; u = 1 -> cell 0
    src = ListWords([W - 1, W - 1, d])
    assert TableSampler(prof, src).sample(0.0) == 0 and src.index == 3
    # row 0, u = 2: 2 + 1 > 2 at j = 1
    assert TableSampler(prof, ListWords([W - 1, 2 * d])).sample(0.0) == 1
    # pos = 1 at x = hi: one rounding word (remainder 0) even though the row is certain
    src = ListWords([W - 1, 0])
    s = TableSampler(prof, src)
    assert s.sample(1.0) == 0 and src.index == 2 and s.clamped == 0
    # x = 5 is clamped to hi (counted), x = Fraction(-7) to lo
    s = TableSampler(prof, ListWords([0, 2 * d, 0, 0]))
    assert s.sample(5.0) == 1 and s.sample_exact(Fraction(-7)) == 0 and s.clamped == 2


def test_bad_inputs():
    prof = hand_profile()
    s = TableSampler(prof, ListWords([]))
    for bad in (float("nan"), float("inf"), "1", True, None):
        with pytest.raises(InputError):
            s.sample(bad)
    with pytest.raises(TypeError):
        TableSampler(P.from_bits(-1.0, 1.0, 1.0, 4), ListWords([]))


def counts(prof, x, n, key):
    s = TableSampler(prof, CounterWords(key))
    src = s.words
    rec = Recorder(src)
    c = [0] * prof.n_cells
    for _ in range(n):
        c[s.sample_exact(x, rec)] += 1
    return c, len(rec.used)


def binned(c, probs, n):
    """(observed, expected) with every cell of expected count < 20 merged into one bin (and
    that bin into the smallest other one if its expected count is below 5): Pearson's chi^2
    is then close to its limit law. Cells of probability 0 must be empty (checked apart)."""
    big = [j for j, p in enumerate(probs) if n * p >= 20]
    rest = [j for j, p in enumerate(probs) if 0 < n * p < 20]
    obs = [c[j] for j in big]
    exp = [n * probs[j] for j in big]
    if rest:
        ro, re_ = sum(c[j] for j in rest), sum(n * probs[j] for j in rest)
        if re_ >= 5:
            obs.append(ro)
            exp.append(re_)
        else:
            k = min(range(len(exp)), key=lambda i: exp[i])
            obs[k] += ro
            exp[k] += re_
    return obs, exp


def chi2_test(c, probs, n, level=1e-6):
    """(statistic, critical value at `level`) for observed counts c against the law probs."""
    obs, exp = binned(c, probs, n)
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
    return float(stat), float(stats.chi2.isf(level, len(obs) - 1))


def test_sampler_matches_the_exact_law():
    """Seeded: 20000 reports at each of three readings of two profiles (one between anchors
    with an odd mixing weight, one exactly at an inner anchor, one clamped), Pearson's chi^2
    (cells of small expected count binned, `binned`) against Table.distribution at the 1e-6
    level of its limit law: false-failure rate about 6e-6 in all (union bound; the keys are
    fixed, so the run is deterministic). Every report reads exactly two
    words unless a rejection (probability S_r/2^64 <= 2^-32 per draw) or a tie (2^-64)
    occurs: false failure <= 1.2e5 * 2^-31 < 6e-5."""
    n = 20000
    profs = [PROFILES["t-optimal-3bit-adc"], PROFILES["t-hm-3bit"]]
    for i, prof in enumerate(profs):
        lo, hi = Fraction(prof.lo), Fraction(prof.hi)
        step = (hi - lo) / prof.anchors
        xs = [lo + step * Fraction(7, 3), lo + step * 2, hi + 1]
        for k, x in enumerate(xs):
            probs = prof.table.distribution(x)
            c, used = counts(prof, x, n, bytes([i, k]) * 16)
            stat, limit = chi2_test(c, probs, n)
            assert stat < limit, (prof, x, c)
            assert all(c[j] == 0 for j, p in enumerate(probs) if p == 0)
            assert used == 2 * n


def test_the_statistic_can_fail():
    """The same test rejects a sampler that skips the stochastic rounding (always row
    floor(pos)): halfway between two anchors its law differs from the mixture."""
    prof = PROFILES["t-hm-3bit"]
    lo, hi = Fraction(prof.lo), Fraction(prof.hi)
    step = (hi - lo) / prof.anchors
    x = lo + step * Fraction(5, 2)
    n = 20000
    c, _ = counts(prof, x, n, b"\x07" * 32)
    stat, limit = chi2_test(c, prof.table.distribution(lo + step * 2), n)
    assert stat > limit
    stat, limit = chi2_test(c, prof.table.distribution(x), n)
    assert stat < limit
