"""Multi-attribute profiles (zeal-multi/1): the vectors against the host reference, the check
list, the privacy check against multi.Multi's exact certificate, the reference sampler word
for word against multi.sample_report, the payload codec, files beside the header."""
import json
import os
import random
from fractions import Fraction as F

import pytest

from conftest import ROOT
from zeal.errors import ProfileError
from zeal.mechanism.multi import mechanism as multi, profile as MP
from zeal.mechanism.grid import profile as GP
from zeal.mechanism import kinds
from zeal.mechanism.multi.mechanism import Categorical, Numeric
from zeal.mechanism.core.pfile import exp_lower_bound
from zeal.mechanism.kinds import load as load_any, loads as loads_any, sniff
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder

VECTORS = os.path.join(ROOT, "shared_spec", "vectors", "multi.json")


def _cases():
    with open(VECTORS) as fh:
        return json.load(fh)["cases"]


CASES = _cases()
PROFILES = {c["id"]: c for c in CASES if c["kind"] == "profile" and c["result"] == "valid"}


def _load(case):
    files = case["attributes"]
    return loads_any(case["header"].encode("ascii"), lambda i, fp: files.get(str(i)))


def test_vector_set_covers_the_contract():
    reasons = {c["reason"] for c in CASES if c["kind"] == "profile" and c["result"] == "invalid"}
    for r in ("size", "json", "type", "format", "missing", "unknown", "fingerprint", "value",
              "attr", "privacy", "attr1:missing", "attr0:fingerprint", "attr0:derived"):
        assert r in reasons
    kinds = {c["kind"] for c in CASES}
    assert kinds == {"profile", "sample", "payload"}
    assert len(PROFILES) >= 5


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "profile"],
                         ids=lambda c: c["id"])
def test_profile_vectors(case):
    assert sniff(case["header"]).name == "multi"
    if case["result"] == "valid":
        prof = _load(case)
        assert prof.fingerprint == case["fingerprint"]
        assert prof.canonical_bytes().decode() == case["canonical"]
        assert (prof.d, prof.k, prof.index_bits) == (case["d"], case["k"], case["index_bits"])
        assert prof.to_json() == case["header"]
        assert len(case["header"]) <= MP.MAX_MULTI_FILE
        # the header names each attribute file by its fingerprint
        items = json.loads(case["header"])["attrs"].split(".")
        for i, text in case["attributes"].items():
            assert items[int(i)] == "p" + kinds.loads(text).fingerprint
    else:
        with pytest.raises(ProfileError) as info:
            _load(case)
        assert info.value.reason == case["reason"]


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "sample"],
                         ids=lambda c: c["id"])
def test_sample_vectors(case):
    prof = _load(PROFILES[case["profile"]])
    src = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
           else ListWords([int(w, 16) for w in case["words"]]))
    sampler = MP.MultiSampler(prof, src)
    for line, want in zip(case["lines"], case["expected"]):
        rec = Recorder(src)
        rep = sampler.sample(line, rec)
        assert [[j, y] for j, y in rep] == want["report"]
        assert len(rec.used) == want["words_used"]
    assert (sampler.replaced, sampler.clamped) == (case["replaced"], case["clamped"])


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"] == "payload"],
                         ids=lambda c: c["id"])
def test_payload_vectors(case):
    prof = _load(PROFILES[case["profile"]])
    payload = bytes.fromhex(case["payload"])
    if case["result"] == "valid":
        reports = [[tuple(p) for p in r] for r in case["reports"]]
        assert MP.pack_multi(prof, reports) == payload
        assert MP.unpack_multi(prof, payload, case["count"]) == reports
        assert len(payload) == (case["bits"] + 7) // 8
    else:
        with pytest.raises(MP.PayloadError) as info:
            MP.unpack_multi(prof, payload, case["count"])
        assert info.value.reason == case["reason"]


def test_sampler_word_for_word_against_multi_sample_report():
    """The MultiSampler (grid: ExactZeal, table: TableSampler, OUE) and multi.sample_report on
    the profile's Multi take the same words and give the same reports."""
    for case in PROFILES.values():
        prof = _load(case)
        m = prof.multi()
        rng = random.Random(case["id"])
        a, b = CounterWords(bytes(32)), CounterWords(bytes(32))
        sampler = MP.MultiSampler(prof, a)
        for _ in range(200):
            row = []
            for att in prof.attributes:
                if att.kind == "oue":
                    row.append(rng.randrange(att.c))
                else:
                    row.append(F(rng.uniform(att.lo - 1, att.hi + 1)))
            ra, rb = Recorder(a), Recorder(b)
            assert sampler.sample(row, ra) == multi.sample_report(m, row, rb)
            assert ra.used == rb.used


def test_privacy_check_agrees_with_the_exact_certificate():
    """Every valid profile's Multi is private by the exact certificate (product of the k
    largest ratios <= prod L(eps_j) <= L(eps)); and the header's OUE check accepts ratio_num
    exactly when multi's certificate does, on both sides of the bound."""
    for case in PROFILES.values():
        prof = _load(case)
        m = prof.multi()
        assert m.is_private()
        cert = m.privacy_certificate()
        assert cert["budget_sum"] <= F(prof.epsilon)
        assert m.privacy_ratio() <= exp_lower_bound(F(prof.epsilon))
    eps = 1.0
    limit = exp_lower_bound(F(eps) / 2) * (1 << 32)
    for ratio_num in (int(limit) - 1, int(limit), int(limit) + 1, (1 << 32) + 1, 1 << 32):
        att = [Numeric("a", 0.0, 1.0), Categorical("b", ("x", "y", "z"), ratio_num=None)]
        prof = MP.build(att, eps, k=2)
        p2 = MP.MultiProfile(epsilon=eps, k=2, names=prof.names,
                             attributes=[prof.attributes[0], MP.Oue(3, ratio_num)])
        files = {0: prof.attributes[0].to_json()}
        try:
            MP.loads(p2.to_json(), lambda i, fp: files.get(i))
            header_ok = True
        except ProfileError as exc:
            assert exc.reason == "privacy"
            header_ok = False
        try:
            multi_ok = multi.Multi([Numeric("a", 0.0, 1.0, mechanism=prof.attributes[0]),
                                    Categorical("b", ("x", "y", "z"), ratio_num=ratio_num)],
                                   eps, k=2).is_private()
        except ProfileError:
            multi_ok = False
        assert header_ok == multi_ok == ((1 << 32) < ratio_num <= limit)


def test_files_beside_the_header(tmp_path):
    prof = MP.build([Numeric("t", -40.0, 85.0, bits=6), Categorical("s", 4),
                     Numeric("h", 0.0, 100.0, bits=3, mechanism="pm")], 3.0, k=3)
    path = tmp_path / "zeal_profile.json"
    written = prof.write(path)
    assert sorted(os.path.basename(p) for p in written) == [
        "zeal_profile.0.json", "zeal_profile.2.json", "zeal_profile.json"]
    assert load_any(str(path)) == prof
    assert MP.load(str(path)).fingerprint == prof.fingerprint
    os.remove(tmp_path / "zeal_profile.2.json")
    with pytest.raises(ProfileError) as info:
        load_any(str(path))
    assert info.value.reason == "attr2:missing"


def test_payload_round_trip_random():
    prof = _load(PROFILES["m-d16-k16"])
    rng = random.Random(7)
    for count in (1, 2, 5, prof.max_batch()):
        reports = []
        for _ in range(count):
            rep = []
            for j in range(prof.d):
                att = prof.attributes[j]
                hi = (1 << att.c) if att.kind == "oue" else att.n_cells
                rep.append((j, rng.randrange(hi)))
            reports.append(rep)
        payload = MP.pack_multi(prof, reports)
        assert MP.unpack_multi(prof, payload, count) == reports
        assert len(payload) <= 1658
        bits = sum(MP.report_bits(prof, r) for r in reports)
        assert len(payload) == (bits + 7) // 8


def test_build_errors_are_one_line():
    with pytest.raises(ProfileError, match="name"):
        MP.build([Numeric("bad_name", 0.0, 1.0)], 1.0)
    with pytest.raises(ProfileError, match="values"):
        MP.build([Categorical("c", 64)], 1.0)
    with pytest.raises(ProfileError, match="k must be"):
        MP.build([Numeric("a", 0.0, 1.0)], 1.0, k=2)
    with pytest.raises(ProfileError, match="1 to 16"):
        MP.build([Numeric("a%d" % i, 0.0, 1.0) for i in range(17)], 1.0)


def test_sniff_and_grid_table_unchanged():
    grid = GP.from_bits(0.0, 1.0, 1.0, 4)
    assert sniff(grid.to_json()).name == "grid"
    assert loads_any(grid.to_json()) == grid
    with pytest.raises(ProfileError) as info:
        loads_any(_load(PROFILES["m-aarhus"]).to_json())   # no attribute files
    assert info.value.reason == "attr0:missing"


# ---- ranges near float64's limits (issue 17) --------------------------------------------------
def test_bernstein_halfwidth_does_not_overflow_on_the_way():
    """V ~ (hi - lo)^2 is past float64 for ranges wider than ~1e154; the half-width is
    homogeneous (V -> 4^e V, M -> 2^e M gives 2^e lam), so it is computed on scaled inputs:
    the float64 formula's value where that one is finite, 2^e times it beyond, inf only where
    lam itself is past float64."""
    import math

    for n, v, m in ((300, F(12443), F(250)), (1, F(7, 3), F(1, 5)),
                    (10 ** 6, F(1, 10 ** 9), F(3))):
        big_l = math.log(2 / (1 - 0.99))
        b = big_l * float(m) / 3
        plain = (b + math.sqrt(b * b + 2 * n * big_l * float(v))) / n
        assert multi.bernstein_halfwidth(n, v, m) == plain
        for e in (600, 1000, -600):
            assert multi.bernstein_halfwidth(n, v * F(4) ** e, m * F(2) ** e) \
                == math.ldexp(plain, e)
    assert multi.bernstein_halfwidth(4, F(10) ** 620, F(10) ** 309) == math.inf
    assert multi.bernstein_halfwidth(5, F(0), F(0)) == 0.0


def _wide(spec, k=2):
    from zeal.analysis.multi_cli import parse_attribute

    return MP.build([parse_attribute("t:-40:85"), parse_attribute(spec), Categorical("s", 3)],
                    2.0, k=k)


@pytest.mark.parametrize("spec", ["b:-8e307:8e307:pm", "b:-1e300:1e300:hm:3",
                                  "b:0:5e-324:duchi"])
def test_bulk_sampler_on_a_range_near_float64s_limits(spec):
    """The statistical-mode table sampler places a reading at (x - lo) R / (hi - lo): for
    hi - lo = 1.6e308, (x - lo) R overflowed to inf (an IndexError, or garbage rows). Readings
    at lo and hi draw from the first and the last anchor row's law only."""
    import numpy as np

    prof = _wide(spec)
    m = prof.multi()
    part = m.parts[1]
    tab = part.table
    lo, hi = float(part.lo), float(part.hi)
    rng = np.random.default_rng(5)
    for x, row in ((lo, 0), (hi, tab.anchors)):
        cells = part.sample_bulk(np.full(400, x), rng)
        support = {j for j, w in enumerate(tab.weights[row]) if w}
        assert set(cells.tolist()) <= support and len(set(cells.tolist())) > 1, (x, row)
    rows = np.array([[1.0, v, 1] for v in (lo, hi, lo / 2 + hi / 2)] * 50)
    idx, val = multi.sample_bulk(m, rows, rng)
    assert idx.shape == val.shape == (150, 2)
    limits = np.array([MP._value_limit(a) for a in prof.attributes])
    assert ((val >= 0) & (val < limits[idx])).all()


def test_estimates_of_a_range_near_the_top_of_float64():
    """MultiEstimator: the exact mean as a float64, or None where float64 cannot hold it;
    each interval end likewise (it used to raise OverflowError)."""
    import numpy as np

    prof = _wide("b:1e308:1.7976931348623157e308:hm")
    est = multi.MultiEstimator(prof.multi())
    seen = set()
    for cell in range(prof.attributes[1].n_cells):
        idx, val = np.array([[0, 1]] * 3), np.array([[3, cell]] * 3)
        b = est.summarize(idx, val)[1]
        try:
            mean = float(est.mean_exact(1, idx, val))
        except OverflowError:
            mean = None
        assert b.mean == mean
        assert b.ci99 == (None, None)     # the half-width at n = 3 is past float64
        seen.add(b.mean is None)
        json.dumps(b.as_dict(), allow_nan=False)
    assert seen == {True, False}


@pytest.mark.parametrize("spec", ["b:-1e300:1e300:pm:3", "b:-8e307:8e307:duchi",
                                  "b:1e308:1.7976931348623157e308:hm", "b:-1e160:1e160"])
def test_a_wide_multi_profile_loads_on_the_device(mp_port, tmp_path, spec):
    """What the host writes for such a range, the device's loader (zealfw.mprofile) accepts
    with the host's fingerprint, under CPython and on the MicroPython unix port."""
    import sys

    from mp_unix import marked, run_mp

    fw = os.path.join(ROOT, "firmware")
    if fw not in sys.path:
        sys.path.insert(0, fw)
    from zealfw import mprofile as FM

    prof = _wide(spec)
    files = {i: t.encode() for i, t in prof.attribute_files().items()}
    fields = FM.loads(prof.to_json().encode(), lambda i: files.get(i))
    assert fields[-1] == prof.fingerprint
    prof.write(str(tmp_path / "p.json"))
    script = ("from zealfw import mprofile\n"
              "print('@@\"%s\"' % mprofile.load('p.json')[-1])\n")
    assert marked(run_mp(script, str(tmp_path))) == [prof.fingerprint]
