"""Multi-attribute reports on the host path: the wire decoder (bits = 0 DATA), the store, the
analysis per attribute, the reference boards' demo end to end, `zeal profile --attributes`,
`zeal demo --attributes --json`, and the issue's goal figures (variance, exact and measured;
wire bits per report at batch 64, measured from frames)."""
import json
import os
import subprocess
import sys
from fractions import Fraction as F

import numpy as np
import pytest

from conftest import ROOT
from zeal import wire
from zeal.analysis import multi_report
from zeal.demo import attributes as multi_demo
from zeal.analysis.analyze import analyze, format_table
from zeal.collect.store import FrameRecord, Store
from zeal.collect.virtual import replay_line
from zeal.mechanism.multi import mechanism as multi, profile as MP
from zeal.mechanism.multi.mechanism import Categorical, Multi, Numeric
from zeal.mechanism.core.words import CounterWords
from zeal.wire.codec import encode_data_payload

AARHUS3 = [Numeric(c, *multi_demo.RANGES[c]) for c in ("light", "humidity", "noise")]


def _mixed():
    return MP.build([Numeric("t", -40.0, 85.0, bits=6), Categorical("s", 3),
                     Numeric("h", 0.0, 100.0, bits=3, mechanism="pm")], 5.0)


def _stream(prof, rows, key=b"k" * 32):
    return multi_demo.reference_stream(prof, rows, device_id=b"dev00001",
                                       words=CounterWords(key), nonce=b"n" * 8)


# ---- the wire decoder ------------------------------------------------------------------------------
def test_decoder_rebuilds_multi_reports_word_for_word():
    prof = _mixed()
    rows = [(float(i % 120 - 40), i % 3, float(i % 97)) for i in range(300)]
    dec = wire.Decoder([prof])
    batches = [e for e in dec.feed(_stream(prof, rows)) if isinstance(e, wire.Batch)]
    got = [r for b in batches for r in b.reports]
    sampler = MP.MultiSampler(prof, CounterWords(b"k" * 32))
    assert got == [sampler.sample(r) for r in rows]
    assert sum(len(b) for b in batches) == 300 and not dec.rejected and dec.lost == 0
    with pytest.raises(Exception):
        batches[0].values


@pytest.mark.parametrize("damage,reason", [("padding", "padding"), ("short", "length"),
                                           ("index", "grid")])
def test_decoder_refuses_a_bad_multi_payload(damage, reason):
    prof = _mixed()          # d = 3: 2 index bits; k = 2
    fp8 = bytes.fromhex(prof.fingerprint)[:8]
    sess = wire.session_bytes(b"dev00001", fp8, 1, b"n" * 8)
    reps = [[(0, 5), (1, 2)]]
    payload = MP.pack_multi(prof, reps)
    bits = MP.report_bits(prof, reps[0])
    if damage == "padding":
        payload = (int.from_bytes(payload, "little") | 1 << bits).to_bytes(len(payload), "little")
    elif damage == "short":
        payload = payload[:-1]
    else:                    # first index 3 >= d
        payload = (int.from_bytes(payload, "little") | 3).to_bytes(len(payload), "little")
    stream = wire.encode_hello(device_id=b"dev00001", fingerprint=fp8, boot=1, bits=0, batch=1,
                               nonce=b"n" * 8) + encode_data_payload(seq=0, count=1,
                                                                     payload=payload, session=sess)
    dec = wire.Decoder([prof])
    assert not [e for e in dec.feed(stream) if isinstance(e, wire.Batch)]
    assert dec.rejected[reason] == 1


def test_hello_bits_must_be_zero_for_a_multi_profile():
    prof = _mixed()
    fp8 = bytes.fromhex(prof.fingerprint)[:8]
    dec = wire.Decoder([prof])
    dec.feed(wire.encode_hello(device_id=b"dev00001", fingerprint=fp8, boot=1, bits=6, batch=1))
    assert dec.rejected["bad_hello"] == 1


def test_a_long_multi_frame_is_not_malformed():
    """Reports longer than 52 bits (16 attributes, OUE of 63 values): a frame up to MAX_BODY."""
    prof = MP.build([Categorical("c%d" % i, 63) for i in range(16)], 16.0, k=16)
    assert prof.max_report_bits() == 16 * (4 + 63)
    rows = [tuple(i % 63 for _ in range(16)) for i in range(40)]
    dec = wire.Decoder([prof])
    got = [e for e in dec.feed(_stream(prof, rows)) if isinstance(e, wire.Batch)]
    assert sum(len(b) for b in got) == 40 and not dec.rejected
    assert all(len(b) <= prof.max_batch() for b in got)


# ---- store and analysis ---------------------------------------------------------------------------
def test_store_analysis_per_attribute(tmp_path):
    prof = _mixed()
    rows = [(float(i % 120 - 40), i % 3, float(i % 97)) for i in range(2000)]
    dec = wire.Decoder([prof])
    frames = [FrameRecord.from_batch(e) for e in dec.feed(_stream(prof, rows))
              if isinstance(e, wire.Batch)]
    path = str(tmp_path / "m.db")
    with Store(path) as st:
        st.add_profile(prof)
        st.write(frames=frames)
    with Store(path) as st:
        assert st.profiles()[prof.fingerprint] == prof
        doc = analyze(st)
    assert doc["multi"] and doc["overall"]["n"] == 2000
    names = [a["name"] for a in doc["attributes"]]
    assert names == ["t", "s", "h"]
    # the estimates are multi.MultiEstimator's on the same reports, exactly
    reps = [r for f in frames for r in MP.unpack_multi(prof, f.payload, f.count)]
    idx = np.array([[j for j, _ in r] for r in reps])
    val = np.array([[y for _, y in r] for r in reps])
    est = multi.MultiEstimator(prof.multi())
    assert doc["attributes"][0]["mean_calibrated"] == float(est.mean_exact(0, idx, val))
    assert set(doc["attributes"][1]["frequencies"]) == {"0", "1", "2"}
    text = format_table(doc)
    assert "attribute" in text and "bits per report" in text


def test_reference_demo_end_to_end():
    """Seeded reference boards -> decoder -> store -> analysis. Statistical: each numeric
    attribute's true mean inside its 99% Bernstein interval (false-failure rate <= 4 x 1% for
    a random seed; the seed is fixed)."""
    doc = multi_demo.run_multi_demo(count=2000, devices=4, progress=False, seed=3,
                                    boards="reference")
    atts = doc["attributes"]
    assert [a["name"] for a in atts] == list(multi_demo.COLUMNS)
    for a in atts:
        assert set(a) >= {"name", "n", "mean_calibrated", "ci99", "true_mean"}
        assert a["n"] == 2000
        assert a["ci99"][0] <= a["true_mean"] <= a["ci99"][1]
    assert doc["demo"]["wire"]["within_goal"]


# ---- goals -------------------------------------------------------------------------------------------
def test_goal_variance_exact_d3_eps1():
    """d = 3 (Aarhus light, humidity, noise), eps = 1, k from Eq. 12 (= 1): the worst-case
    variance of each attribute's per-report estimate is at least 2x lower than splitting eps
    into thirds (all 3 sent at eps/3), exactly (Fractions)."""
    alg4 = Multi(AARHUS3, 1)
    split = alg4.split()
    assert alg4.k == 1 and split.k == 3
    for j in range(3):
        a = alg4.worst_variance_bounds(j)
        s = split.worst_variance_bounds(j)
        assert a[0] == a[1] and s[0] == s[1]     # exact maxima
        assert s[1] >= 2 * a[1], (j, float(s[1] / a[1]))


def test_goal_variance_measured_d3_eps1():
    """The same, measured: 2 000 000 reports per design at readings spread over each range
    (numpy statistical mode, seed 11); the mean of (Z - x)^2 per attribute against its exact
    expectation. False failure: Chebyshev with E[(Z - x)^4] <= M^2 V (M the deviation bound, V
    the worst variance), computed below; the test asserts that bound is <= 1e-3 per check (six
    checks: <= 0.6%), so a failure means the sampler or the exact figure is wrong."""
    n = 2_000_000
    rng = np.random.default_rng(11)
    alg4, split = Multi(AARHUS3, 1), Multi(AARHUS3, 1).split()
    grid = np.linspace(0, 1, 9)
    xs = np.stack([np.repeat(a.lo + (a.hi - a.lo) * grid, n // 9 + 1)[:n]
                   for a in AARHUS3], axis=1)
    measured, exact = {}, {}
    for name, m in (("alg4", alg4), ("split", split)):
        idx, val = multi.sample_bulk(m, xs, rng)
        for j, part in enumerate(m.parts):
            z = np.full(n, float(part.mid))
            for c in range(m.k):
                sel = idx[:, c] == j
                g = part.grid
                zval = float(g.lo) + float(g.gain) * (val[sel, c] - float(g.intercept))
                z[sel] = float(part.mid) + float(m.scale) * (zval - float(part.mid))
            measured[name, j] = float(np.mean((z - xs[:, j]) ** 2))
            ev = sum(m.variance(j, F(float(x))) for x in (part.lo + (part.hi - part.lo) * F(i, 8)
                                                          for i in range(9))) / 9
            exact[name, j] = float(ev)
            t = 0.09 * exact[name, j]
            v = float(m.worst_variance_bounds(j)[1])
            big_m = float(m.deviation_bound(j))
            assert big_m ** 2 * v / (n * t * t) <= 1e-3
            assert abs(measured[name, j] - exact[name, j]) <= t, (name, j)
    for j in range(3):
        assert exact["split", j] >= 2 * exact["alg4", j]
        assert measured["split", j] >= 2 * measured["alg4", j], \
            (j, measured["split", j] / measured["alg4", j])


def test_goal_wire_bits_at_batch_64():
    """Wire bits per report, measured from the frames the reference board sends (DATA frames:
    header, CRC, COBS, delimiter) at batch 64: <= 1.3 k (ceil(log2 d) + m), for the demo's
    profile (d = 4) and the d = 3 goal profile."""
    data = [tuple(float(v) for v in row) for row in zip(*(
        [F(x) for x in __import__("zeal.analysis.datasets", fromlist=["aarhus"]).aarhus(c, 640)]
        for c in multi_demo.COLUMNS))]
    for cols in (multi_demo.COLUMNS, ("light", "humidity", "noise")):
        prof = multi_demo.demo_profile(1.0, columns=cols)
        rows = [tuple(r[multi_demo.COLUMNS.index(c)] for c in cols) for r in data]
        stream = _stream(prof, rows)
        dec = wire.Decoder([prof])
        frames = []
        for run in stream.split(b"\x00"):
            if not run:
                continue
            fr = wire.decode_run(run)
            if isinstance(fr, wire.SealedData):
                frames.append(len(run) + 1)
        assert sum(len(b) for b in dec.feed(stream) if isinstance(b, wire.Batch)) == 640
        m = max(a.bits for a in prof.attributes)
        bound = prof.k * (prof.index_bits + m)
        per_report = 8 * sum(frames) / 640
        assert len(frames) == 10
        assert per_report <= 1.3 * bound, (cols, per_report, bound)


# ---- command line ----------------------------------------------------------------------------------
def _zeal(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "zeal", *args], capture_output=True,
                          text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=os.path.join(
                              ROOT, "host")))


def test_cli_profile_attributes(tmp_path):
    out = str(tmp_path / "p.json")
    r = _zeal("profile", "--attributes", "--attribute", "light:-1:99.92",
              "--categorical", "state:3", "--attribute", "hum:23.5:83.9:hm:3",
              "--epsilon", "1", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [a["name"] for a in doc["attributes"]] == ["light", "state", "hum"]
    assert sorted(os.listdir(tmp_path)) == ["p.0.json", "p.2.json", "p.json"]
    from zeal.mechanism.kinds import load as load_any
    assert load_any(out).fingerprint == doc["fingerprint"]
    for bad in (["--attribute", "x:1"], ["--categorical", "s:64"], ["--attribute", "a_b:0:1"],
                ["--attribute", "a:0:1", "--k", "2"], []):
        r = _zeal("profile", "--attributes", *bad, "--epsilon", "1")
        assert r.returncode != 0 and r.stderr.startswith("zeal: ") \
            and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_demo_attributes_json():
    r = _zeal("demo", "--attributes", "--json", "--count", "400", "--devices", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert [a["name"] for a in doc["attributes"]] == list(multi_demo.COLUMNS)
    for a in doc["attributes"]:
        assert {"name", "n", "mean_calibrated", "ci99", "true_mean"} <= set(a)
        assert a["n"] == 400
    # end to end through the firmware: the virtual boards whenever it has multi profiles
    assert doc["demo"]["boards"] == ("virtual" if multi_demo._firmware_has_multi()
                                     else "reference")
    assert multi_demo._firmware_has_multi()   # the firmware (zealfw.mprofile) has landed


def test_replay_line_for_tuples():
    assert replay_line((1.0, 2), categorical={1}) == "3ff0000000000000,2"
    assert replay_line("a,b") == "a,b"
    prof = _mixed()
    assert MP.parse_line(prof, replay_line((1.5, 2, 3.0), {1})) == [F(3, 2), 2, F(3)]
