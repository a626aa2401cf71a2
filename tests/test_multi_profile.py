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
from zeal.mechanism import multi, multi_profile as MP, profile as GP
from zeal.mechanism.multi import Categorical, Numeric
from zeal.mechanism.pfile import exp_lower_bound
from zeal.mechanism.profiles import kind_of, load_any, loads_any
from zeal.mechanism.words import CounterWords, ListWords, Recorder

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
    assert kind_of(case["header"]) == "multi"
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
            assert items[int(i)] == "p" + GP.loads(text).fingerprint
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
    assert kind_of(grid.to_json()) == "grid"
    assert loads_any(grid.to_json()) == grid
    with pytest.raises(ProfileError) as info:
        loads_any(_load(PROFILES["m-aarhus"]).to_json())   # no attribute files
    assert info.value.reason == "attr0:missing"
