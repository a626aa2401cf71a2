"""Shuffle mode in `zeal analyze` (analysis.shuffle_report): a store holding a shuffled
batch under a shuffle profile -> the estimate, the MSE bounds, and the privacy the stored
batch delivered (never the configured guarantee below n)."""
import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from zeal.analysis import analyze as A
from zeal.analysis import shuffle_report as R
from zeal.collect.store import FrameRecord, Store
from zeal.errors import ZealError
from zeal.mechanism.shuffle import mechanism as S
from zeal.mechanism.shuffle import profile as SP
from zeal.mechanism.core.words import CounterWords
from zeal.wire import codec

RANGES = [(0.0, 1000.0), (0.0, 100.0), (-20.0, 40.0)]


def _profile(n=20000):
    return SP.build_from(epsilon="0.99", delta="1e-6", n=n, d=3, k=3, t=1, ranges=RANGES)


def _fill(path, prof, readings, key=b"r"):
    sampler = SP.ShuffleSampler(prof, CounterWords(hashlib.sha256(key).digest()))
    msgs = [m for x in readings for m in sampler.sample(x)]
    frames = []
    for i in range(0, len(msgs), 255):
        part = msgs[i:i + 255]
        frames.append(FrameRecord(device_id=b"shuffler", boot=0, nonce=bytes(8), seq=i // 255,
                                  crc=i, fingerprint=prof.fingerprint, count=len(part),
                                  payload=codec.pack_reports(part, prof.bits), arrival=1.0))
    with Store(path) as st:
        st.add_profile(prof)
        st.write(frames=frames)
    return msgs


def _readings(n, seed=3):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(0, 1000, n), rng.beta(2, 5, n) * 100,
                            rng.normal(10, 8, n)]).tolist()


def test_full_batch_claims_the_configured_guarantee_and_estimates(tmp_path):
    """n = 20000 messages from known readings: the configured (epsilon, delta) is claimed;
    each coordinate's estimate (in [0, 1]) lies within 4.9 standard deviations of the true
    mapped mean, sd^2 = V / c + spread (n - c)/((n - 1) c) with V the exact per-pair variance
    bound, spread <= 1/4, c the pairs on the coordinate (normal approximation: false-failure
    rate about 3 x 1e-6, fixed seed)."""
    prof = _profile()
    xs = _readings(prof.n)
    _fill(str(tmp_path / "s.db"), prof, xs)
    with Store(str(tmp_path / "s.db")) as st:
        doc = A.analyze(st)
    (r,) = doc["shuffle"]
    assert r["messages"] == prof.n and r["invalid_messages"] == 0
    assert r["guarantee"] == "configured"
    assert r["epsilon"] == prof.epsilon and r["delta"] == prof.delta
    v = float(S.Analyzer(prof.params).pair_variance_max())
    for c in range(3):
        truth = float(np.mean([float(SP.map_reading(prof, c, x[c])) for x in xs]))
        cnt = r["pairs_per_coordinate"][c]
        sd = math.sqrt(v / cnt + 0.25 * (prof.n - cnt) / ((prof.n - 1) * cnt))
        assert abs(r["mean01"][c] - truth) < 4.9 * sd, (c, r["mean01"][c], truth, sd)
        lo, hi = RANGES[c]
        assert r["mean"][c] == pytest.approx(lo + (hi - lo) * r["mean01"][c], rel=1e-12)
    assert r["mse_bound"] > 0 and r["mse_bound_paper"] > 0
    text = A.format_table(doc)
    assert "the configured guarantee" in text and "coordinate 2" in text


def test_small_batch_never_claims_the_configured_guarantee(tmp_path):
    """A batch of 5000 messages under a profile built for n = 20000: the document says
    "weaker" with an epsilon above the configured one (delivered()), or "none"."""
    prof = _profile(20000)
    _fill(str(tmp_path / "s.db"), prof, _readings(5000))
    with Store(str(tmp_path / "s.db")) as st:
        (r,) = A.analyze(st)["shuffle"]
    assert r["messages"] == 5000
    assert r["guarantee"] in ("weaker", "none")
    want = S.delivered(prof.params, 5000)
    if want is None:
        assert r["epsilon"] is None and r["guarantee"] == "none"
    else:
        assert r["epsilon"] == float(want[0]) > prof.epsilon
    with Store(str(tmp_path / "s.db")) as st:
        assert "NOT delivered" in A.format_table(A.analyze(st)) or r["guarantee"] == "none"
    tiny = _profile(20000)
    _fill(str(tmp_path / "t.db"), tiny, _readings(50))
    with Store(str(tmp_path / "t.db")) as st:
        (r2,) = A.analyze(st)["shuffle"]
    assert r2["guarantee"] == "none" and r2["epsilon"] is None
    assert "NONE" in A.format_table({"shuffle": [r2]})


def test_two_messages_a_reading_need_n_t_messages(tmp_path):
    """t = 2: n readings are 2n messages. The configured guarantee is claimed for the 2n
    messages of n readings, and not for one message fewer (a pool of n - 1 readings)."""
    prof = SP.build_from(epsilon="0.99", delta="1e-6", n=20000, d=3, k=3, t=2, ranges=RANGES)
    msgs = _fill(str(tmp_path / "s.db"), prof, _readings(prof.n))
    assert len(msgs) == 2 * prof.n
    r = R.report(prof, msgs)
    assert r["messages"] == 2 * prof.n and r["readings"] == prof.n
    assert r["guarantee"] == "configured" and r["epsilon"] == prof.epsilon
    r2 = R.report(prof, msgs[:-1])
    assert r2["guarantee"] == "weaker" and r2["epsilon"] > prof.epsilon
    assert "per reading" in R.format_text([r]) and "NOT delivered" in R.format_text([r2])


def test_invalid_messages_counted_not_used(tmp_path):
    prof = _profile()
    bad = [(3 | 1 << 2)]  # coordinate 3 of d = 3: no randomiser sends it
    r = R.report(prof, bad + [0, 0])
    assert r["invalid_messages"] == 1 and r["messages"] == 2


def test_analyze_cli_json_on_a_shuffle_store(tmp_path):
    prof = _profile()
    _fill(str(tmp_path / "s.db"), prof, _readings(300))
    out = subprocess.run([sys.executable, "-m", "zeal", "analyze", "--db",
                          str(tmp_path / "s.db"), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["shuffle"][0]["messages"] == 300 and doc["shuffle"][0]["guarantee"] != \
        "configured"
