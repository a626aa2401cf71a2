"""Analysis of a store (zeal.analysis: analyze, export, plots): vectorised decoding bit-exact with
zeal.wire.unpack_reports, estimates equal to the Estimator on the same offsets, loss sums,
the multi-profile combination, the export CLI's default name, the CLI and the plots.
Exact tests only: every store is filled from known offsets through zeal.wire.pack_reports.
"""
import argparse
import json
import math
import os
import sqlite3
import sys
from fractions import Fraction

import numpy as np
import pytest

from zeal.commands import analyze as analyze_command
from zeal.commands import events as events_command
from zeal.commands import export as export_command
from zeal.analysis import analyze as A
from zeal.analysis import decode
from zeal.analysis import export as E
from zeal.mechanism.grid import profile as P
from zeal import wire
from zeal.mechanism.grid import reports
from zeal.errors import ZealError
from zeal.mechanism.grid.estimate import Estimator, exact_sum
from zeal.collect.store import EventRecord, FrameRecord, Store, StoreError

from conftest import HUMIDITY

DEV_A, DEV_B, DEV_C = (bytes.fromhex(h) for h in ("a1a2a3a4a5a6a7a8", "b1b2b3b4b5b6b7b8",
                                                  "c1c2c3c4c5c6c7c8"))
DECODE_BITS = (2, 3, 4, 13, 16, 31, 52)


def rows_for(prof, offsets_per_frame, *, device=DEV_A, boot=1, first_seq=0):
    """Store.frames()-shaped rows for frames holding these offsets."""
    rows = []
    for i, j in enumerate(offsets_per_frame):
        lows = [int(v) + prof.k_lo - prof.wire_base for v in j]
        rows.append((device, boot, first_seq + i, prof.fingerprint, len(lows),
                     wire.pack_reports(lows, prof.bits), 1000.0 + i))
    return rows


def reference_offsets(prof, rows):
    return np.concatenate([reports.offsets_from_low(prof, wire.unpack_reports(r[5], r[4],
                                                                              prof.bits))
                           for r in rows])


# ---- decoding ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", DECODE_BITS)
def test_decode_is_bit_exact_with_unpack_reports_for_every_count(bits):
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    rng = np.random.default_rng(bits)
    counts = list(range(1, 256)) + [64] * 5 + [255] * 3
    frames = [rng.integers(0, prof.n_cells, c) for c in counts]
    frames[0] = np.array([prof.n_cells - 1])          # both ends of the grid
    frames[1] = np.array([0, prof.n_cells - 1])
    rows = rows_for(prof, frames)
    want = reference_offsets(prof, rows)
    got = A.decode_frames(prof, rows)
    assert got.dtype == np.int64 and np.array_equal(got, want)
    values = A.decode_values(prof, rows)
    assert values.dtype == np.float64
    assert np.array_equal(values.view(np.uint64),
                          reports.floats_from_offsets(prof, want).view(np.uint64))
    for count in (64, 255, 7):  # one batch size: the fast path
        same = [r for r in rows if r[4] == count]
        assert np.array_equal(A.decode_frames(prof, same), reference_offsets(prof, same))


@pytest.mark.parametrize("bits", range(2, 53))
def test_unpack_matches_unpack_reports_on_any_m_bit_values(bits):
    """Every m, arbitrary m-bit values (all ones, zero, random; off-grid included)."""
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    rng = np.random.default_rng(100 + bits)
    top = (1 << bits) - 1
    rows = []
    for i, count in enumerate((1, 2, 3, 5, 8, 9, 16, 63, 64, 65, 127, 255)):
        vals = [int(v) for v in rng.integers(0, top, count, endpoint=True, dtype=np.uint64)]
        vals[0] = top if i % 2 else 0
        rows.append((DEV_A, 0, i, prof.fingerprint, count, wire.pack_reports(vals, bits), 0.0))
    want = np.concatenate([wire.unpack_reports(r[5], r[4], bits) for r in rows])
    assert np.array_equal(A.unpack_frames(rows, prof), want)
    lay = decode._layout(bits)
    for r, (off, sh) in enumerate(lay.fields):
        assert 8 * off + sh == r * bits and off + lay.lane <= lay.group_bytes
        assert sh + bits <= 8 * lay.lane


def test_decode_errors_name_the_frame():
    prof = P.from_bits(*HUMIDITY, 1.0, 4)             # N = 15: low 15 (k = 2^52 - 1) is off
    good = rows_for(prof, [[1, 2, 3]] * 3)
    assert A.decode_frames(prof, []).size == 0
    bad_low = list(good)
    bad_low[1] = (DEV_B, 7, 41, prof.fingerprint, 3, wire.pack_reports([1, 15, 2], 4), 0.0)
    with pytest.raises(A.DecodeError, match=r"device b1b2b3b4b5b6b7b8, boot 7, seq 41\), "
                                            r"report 1: low bits 15 are outside"):
        A.decode_frames(prof, bad_low)
    below = P.from_bits(*HUMIDITY, 1.0, 13)           # N = 7892 < 2^13 - 1: low 0 is off
    assert below.k_lo - below.wire_base > 0
    with pytest.raises(A.DecodeError, match="report 0: low bits 0"):
        A.decode_values(below, [(DEV_A, 1, 5, below.fingerprint, 1,
                                 wire.pack_reports([0], 13), 0.0)])
    short = good[:2] + [(DEV_A, 1, 9, prof.fingerprint, 3, b"\x21", 0.0)]
    with pytest.raises(A.DecodeError, match="seq 9.*payload of 1 bytes"):
        A.decode_frames(prof, short)
    padding = good[:1] + [(DEV_A, 1, 8, prof.fingerprint, 3, b"\x21\xf3", 0.0)]
    with pytest.raises(A.DecodeError, match="seq 8.*padding"):
        A.decode_frames(prof, padding)
    other = P.from_bits(*HUMIDITY, 1.0, 8)
    with pytest.raises(A.DecodeError, match="stored under profile"):
        A.decode_frames(other, good)
    zero = good[:1] + [(DEV_A, 1, 3, prof.fingerprint, 0, b"", 0.0)]
    with pytest.raises(A.DecodeError, match="count 0"):
        A.decode_frames(prof, zero)


# ---- analyze -----------------------------------------------------------------------------------
def fill(store, prof, device, frames, *, boot=1, first_seq=0, vector=False, debug=False):
    store.add_profile(prof)
    recs = [FrameRecord(device_id=r[0], boot=r[1], nonce=bytes(8), seq=r[2],
                        crc=r[2] + 17 * boot, fingerprint=r[3], count=r[4], payload=r[5],
                        arrival=r[6], vector=vector, debug=debug)
            for r in rows_for(prof, frames, device=device, boot=boot, first_seq=first_seq)]
    assert store.write(frames=recs) == len(recs)


@pytest.fixture
def store(tmp_path):
    st = Store(str(tmp_path / "zeal.db"))
    yield st
    st.close()


def offsets(prof, seed, frames, count):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, prof.n_cells, count) for _ in range(frames)]


def test_analyze_one_profile_equals_the_estimator(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fa = offsets(prof, 1, 30, 64)
    fb = offsets(prof, 2, 11, 17)
    fill(store, prof, DEV_A, fa)
    fill(store, prof, DEV_B, fb)
    store.write(events=[EventRecord("reject", "crc", 2, device_id=DEV_A),
                        EventRecord("reject", "cobs", 3, port="loop://"),  # no device known
                        EventRecord("gap", "", 5, device_id=DEV_B),
                        EventRecord("gap", "", 2, device_id=DEV_B),
                        EventRecord("reboot", "", 1, device_id=DEV_B),
                        EventRecord("reject", "grid", 4, device_id=DEV_C),  # no report stored
                        EventRecord("status", "OK", 9, device_id=DEV_A)])
    link = store.open_link("loop://")
    store.close_link(link, 12345)
    doc = A.analyze(store)
    est = Estimator(prof)
    every = np.concatenate(fa + fb)
    want = est.summarize(every)
    o = doc["overall"]
    assert o["n"] == every.size == 30 * 64 + 11 * 17
    assert o["mean_calibrated"] == want.mean_calibrated
    assert o["ci99"] == list(want.ci99) and o["ci99_clt"] == list(want.ci99_clt)
    assert o["avg_star"] == want.avg_star
    assert o["bits"] == 8 and o["fingerprint"] == prof.fingerprint
    assert o["transmission_ratio"] > 0
    assert (o["rejected_frames"], o["gaps"], o["reboots"]) == (2 + 3 + 4, 7, 1)
    assert o["wire_bits_per_report"] == 8 * 12345 / every.size
    # DATA frames' own size: COBS(body || CRC) + delimiter, as the encoder writes them
    session = wire.session_bytes(DEV_A, prof.fingerprint[:16], 1)
    wire_a = sum(len(wire.encode_data(seq=i, bits=8, reports=[int(v) + prof.k_lo
                                                               - prof.wire_base for v in j],
                                      session=session)) for i, j in enumerate(fa))
    devs = {d["device"]: d for d in doc["devices"]}
    assert list(devs) == [DEV_A.hex(), DEV_B.hex(), DEV_C.hex()]
    a, b, c = devs[DEV_A.hex()], devs[DEV_B.hex()], devs[DEV_C.hex()]
    assert a["wire_bits_per_report"] == 8 * wire_a / (30 * 64)
    assert a["n"] == 30 * 64 and b["n"] == 11 * 17
    assert a["mean_calibrated"] == est.summarize(np.concatenate(fa)).mean_calibrated
    assert b["ci99"] == list(est.summarize(np.concatenate(fb)).ci99)
    assert (a["rejected_frames"], a["gaps"], a["reboots"]) == (2, 0, 0)
    assert (b["rejected_frames"], b["gaps"], b["reboots"]) == (0, 7, 1)
    assert c["n"] == 0 and c["mean_calibrated"] is None and c["rejected_frames"] == 4
    assert len(doc["profiles"]) == 1 and doc["profiles"][0]["devices"] == 2
    json.dumps(doc, allow_nan=False)                  # the --json contract: plain JSON
    table = A.format_table(doc)
    # header, rule, 3 devices, overall, the columns' legend, the wire line
    assert table.count("\n") == 2 + 3 + 2 and DEV_C.hex() in table


def test_analyze_names_devices_by_their_text_ids(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    named = b"attic-1".ljust(8, b"\0")              # HELLO pads ids with zeros
    fill(store, prof, named, offsets(prof, 21, 2, 8))
    fill(store, prof, DEV_A, offsets(prof, 22, 2, 8))
    doc = A.analyze(store)
    names = {d["device"]: d["name"] for d in doc["devices"]}
    assert names == {named.hex(): "attic-1", DEV_A.hex(): DEV_A.hex()}
    rows = A.format_table(doc).splitlines()
    assert rows[2].split()[0] == "attic-1" and rows[3].split()[0] == DEV_A.hex()


def test_analyze_several_profiles_combines_by_weight_and_union_bound(store):
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 2.0, 16)
    f4, f16 = offsets(p4, 3, 20, 64), offsets(p16, 4, 7, 64)
    fill(store, p4, DEV_A, f4)
    fill(store, p16, DEV_A, f16, boot=2)              # the device was re-flashed
    doc = A.analyze(store)
    j4, j16 = np.concatenate(f4), np.concatenate(f16)
    n = j4.size + j16.size
    e4, e16 = Estimator(p4), Estimator(p16)
    mean = (j4.size * e4.calibrated_mean(exact_sum(j4), j4.size)
            + j16.size * e16.calibrated_mean(exact_sum(j16), j16.size)) / n
    conf = 1 - 0.01 / 2                               # each profile at 99.5%: union 99%
    half = (j4.size * Estimator(p4, conf).bernstein_halfwidth(j4.size)
            + j16.size * Estimator(p16, conf).bernstein_halfwidth(j16.size)) / n
    for entry in (doc["overall"], doc["devices"][0]):
        assert entry["n"] == n
        assert entry["mean_calibrated"] == float(mean)
        assert entry["ci99"] == [float(mean) - half, float(mean) + half]
        assert entry["bits"] == [4, 16]
        assert entry["fingerprint"] == [p4.fingerprint, p16.fingerprint]
    # wider than either profile's own interval at 99%
    assert half > min(e4.bernstein_halfwidth(j4.size), e16.bernstein_halfwidth(j16.size))
    by_fp = {p["fingerprint"]: p for p in doc["profiles"]}
    assert by_fp[p4.fingerprint]["mean_calibrated"] == e4.summarize(j4).mean_calibrated
    assert by_fp[p16.fingerprint]["bits"] == 16
    assert "2 profiles" in A.format_table(doc)


def test_vector_frames_only_when_asked(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, offsets(prof, 5, 3, 10))
    fill(store, prof, DEV_A, offsets(prof, 6, 2, 10), boot=0, vector=True)
    assert A.analyze(store)["overall"]["n"] == 30
    assert A.analyze(store, include_vector=True)["overall"]["n"] == 50


def test_empty_store_is_an_error(store):
    with pytest.raises(ZealError, match="no reports stored"):
        A.analyze(store)
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, offsets(prof, 7, 1, 5), vector=True)
    with pytest.raises(ZealError, match="no reports stored"):  # test-mode frames only
        A.analyze(store)


def test_one_report_has_no_normal_interval(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, [[5]])
    o = A.analyze(store)["overall"]
    assert o["n"] == 1 and o["ci99_clt"] is None and o["wire_bits_per_report"] is None
    assert all(math.isfinite(v) for v in o["ci99"])


def test_missing_extras_are_one_line_errors(store, tmp_path, monkeypatch):
    fill(store, P.from_bits(*HUMIDITY, 1.0, 8), DEV_A, [[1, 2, 3]])
    from zeal.analysis import plots
    for mod in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ZealError, match=r"need matplotlib: pip install 'zeal-mcu\[plots\]'"):
        plots.plot_store(store, str(tmp_path / "plots"))
    assert not os.path.exists(tmp_path / "plots")


# ---- command line ------------------------------------------------------------------------------
def run(argv):
    parser = argparse.ArgumentParser(prog="zeal")
    sub = parser.add_subparsers(dest="command")
    for command in (analyze_command, export_command, events_command):
        command.add(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_analyze_json_and_table(store, capsys):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    frames = offsets(prof, 11, 4, 64)
    fill(store, prof, DEV_A, frames)
    assert run(["analyze", "--db", store.path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"n", "mean_calibrated", "ci99", "avg_star", "bits", "wire_bits_per_report",
            "rejected_frames", "gaps"} <= set(doc["overall"])
    assert doc["overall"]["mean_calibrated"] == \
        Estimator(prof).summarize(np.concatenate(frames)).mean_calibrated
    assert doc["devices"][0]["device"] == DEV_A.hex()
    assert run(["analyze", "--db", store.path]) == 0
    out = capsys.readouterr().out
    assert DEV_A.hex() in out and "overall" in out


def test_cli_missing_db_is_an_error_and_creates_nothing(tmp_path):
    path = tmp_path / "missing.db"
    for argv in (["analyze", "--db", str(path)], ["export", "--db", str(path)]):
        with pytest.raises(StoreError, match="does not exist"):
            run(argv)
        assert not path.exists()


def test_cli_refuses_a_non_zeal_database_without_touching_it(tmp_path):
    path = tmp_path / "other.sqlite"
    raw = sqlite3.connect(str(path))
    raw.execute("CREATE TABLE t (x)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a zeal database"):
        run(["analyze", "--db", str(path)])
    assert path.read_bytes() == before
    (tmp_path / "text.db").write_text("hello")
    with pytest.raises(StoreError):
        run(["analyze", "--db", str(tmp_path / "text.db")])


def test_cli_busy_database_is_one_line(store):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, [[1, 2]])
    store.close()
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="busy") as info:
            A.open_existing(store.path, timeout=0.1)
        assert "\n" not in str(info.value)
    finally:
        holder.close()


def test_cli_export_default_name(store, capsys):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, [[1, 2, 3]])
    assert run(["export", "--db", store.path]) == 0
    out = os.path.splitext(store.path)[0] + ".csv"
    assert "3 reports written to %s" % out in capsys.readouterr().out
    with open(out) as fh:
        assert len(fh.read().splitlines()) == 4
    assert run(["export", "--db", store.path, "-o", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == ",".join(E.EXPORT_COLUMNS)


# ---- plots -------------------------------------------------------------------------------------
def test_cell_probabilities_match_the_exact_distribution():
    from zeal.mechanism.grid.exact import ExactGrid
    from zeal.analysis import plots

    for bits in (3, 4, 8):
        grid = ExactGrid(P.from_bits(*HUMIDITY, 1.0, bits))
        for x in (Fraction(23.5), Fraction("50.25"), Fraction(83.9), Fraction(200)):
            exact = grid.distribution(x)
            per_cell = plots.cell_probabilities(grid, x, np.arange(grid.n + 1))
            assert np.allclose(per_cell, [float(exact[j]) for j in range(grid.n)],
                               rtol=1e-12, atol=0)
            edges = np.array([0, 1, grid.n // 2, grid.n])  # bins average their cells
            binned = plots.cell_probabilities(grid, x, edges)
            for i in range(3):
                cells = range(edges[i], edges[i + 1])
                mean = sum(exact[j] for j in cells) / len(cells)
                assert math.isclose(binned[i], float(mean), rel_tol=1e-12)


def test_plots_are_written(store, tmp_path):
    pytest.importorskip("matplotlib")
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 1.0, 16)
    fill(store, p4, DEV_A, offsets(p4, 12, 10, 64))
    fill(store, p16, DEV_B, offsets(p16, 13, 10, 64))
    from zeal.analysis import plots

    paths = plots.plot_store(store, str(tmp_path / "plots"))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted("%s-%s.png" % (kind, p.fingerprint[:8])
                           for kind in ("histogram", "running-mean") for p in (p4, p16))
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_cli_analyze_plots(store, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    fill(store, prof, DEV_A, offsets(prof, 14, 3, 64))
    assert run(["analyze", "--db", store.path, "--plots", str(tmp_path / "p"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["plots"]) == 2 and all(os.path.getsize(p) > 0 for p in doc["plots"])


# ---- table profiles (zeal-table/1) ---------------------------------------------------------------
def hand_table_profile():
    """A table worked out by hand: [0, 4], R = 1 (anchors 0 and 4), 3 cells, rows (2, 1, 1)
    and (1, 1, 2) (column ratio 2 <= e^1), outputs g = (-6, 2, 10): row 0 has mean
    (2(-6) + 2 + 10)/4 = 0, row 1 (-6 + 2 + 20)/4 = 4 (unbiased at both anchors), so with
    Q = 2 the profile's values are a = (g - 0) Q / 4 = (-3, 1, 5). Anchor variances
    V_0 = (2*36 + 4 + 100)/4 - 0 = 44, V_1 = (36 + 4 + 200)/4 - 16 = 44; between them
    Var(f) = 44 + f (1 - f) 4^2, largest at f = 1/2: 48 (reading units^2)."""
    from zeal.mechanism.table.mechanism import Table
    from zeal.mechanism.table.profile import from_table
    return from_table(Table(0.0, 4.0, 1, [[2, 1, 1], [1, 1, 2]], values=[-6, 2, 10]))


def test_table_estimator_is_exact_on_a_hand_case():
    from statistics import NormalDist, variance
    from zeal.mechanism import kinds
    from zeal.mechanism.table.estimate import TableEstimator
    prof = hand_table_profile()
    assert (prof.values, prof.value_den) == ([-3, 1, 5], 2)
    est = kinds.of(prof).estimator(prof)
    assert isinstance(est, TableEstimator)
    j = np.array([0, 0, 1, 2, 2, 2])
    # a-sum = -3 - 3 + 1 + 5 + 5 + 5 = 10: mean = 0 + 4 * 10 / (6 * 2) = 10/3
    assert est.mean_of(j) == Fraction(10, 3)
    assert est.worst_variance == 48 and est.var_bound == 48.0
    assert est.dev_bound == 10.0          # max(g_max - lo, hi - g_min) = max(10, 10)
    s = est.summarize(j)
    big_l = math.log(2 / (1 - 0.99))                             # 99%, as float64 has it
    b = big_l * 10 / 3
    half = (b + math.sqrt(b * b + 2 * 6 * big_l * 48)) / 6
    assert s.mean_calibrated == 10 / 3 and s.ci99 == (10 / 3 - half, 10 / 3 + half)
    z = NormalDist().inv_cdf(0.995)
    clt = z * math.sqrt(variance([-6, -6, 2, 10, 10, 10]) / 6)
    assert s.ci99_clt[1] - 10 / 3 == pytest.approx(clt, rel=1e-12)
    assert s.avg_star is None and s.avg_star_naive is None      # AVG*: a grid notion
    with pytest.raises(ValueError):
        est.mean_of(np.array([3]))                              # no cell 3


def test_analyze_a_store_with_table_frames(store, tmp_path):
    """Table frames (one device) beside grid frames (another): per-profile means exact from
    the cells' values, the overall n-weighted, AVG* null, the kind marked; export gives each
    report its cell's value; plots are drawn."""
    from zeal.mechanism.table.profile import build
    tprof = build(*HUMIDITY, 2.0, "pm", 3)
    gprof = P.from_bits(*HUMIDITY, 1.0, 8)
    ft = offsets(tprof, 41, 9, 33)
    fg = offsets(gprof, 42, 4, 64)
    fill(store, tprof, DEV_A, ft)
    fill(store, gprof, DEV_B, fg)
    doc = A.analyze(store)
    jt, jg = np.concatenate(ft), np.concatenate(fg)
    lo, hi = Fraction(HUMIDITY[0]), Fraction(HUMIDITY[1])
    want_t = lo + (hi - lo) * Fraction(sum(tprof.values[j] for j in jt.tolist()),
                                       jt.size * tprof.value_den)
    by_fp = {p["fingerprint"]: p for p in doc["profiles"]}
    t = by_fp[tprof.fingerprint]
    assert t["kind"] == "table" and by_fp[gprof.fingerprint]["kind"] == "grid"
    assert t["mean_calibrated"] == float(want_t) and t["n"] == jt.size
    assert t["avg_star"] is None and t["transmission_ratio"] is None and t["exponent"] is None
    assert t["bits"] == 3
    devs = {d["device"]: d for d in doc["devices"]}
    assert devs[DEV_A.hex()]["kind"] == "table" and devs[DEV_A.hex()]["avg_star"] is None
    want_g = Estimator(gprof).calibrated_mean(exact_sum(jg), jg.size)
    o = doc["overall"]
    assert o["mean_calibrated"] == float((jt.size * want_t + jg.size * want_g)
                                         / (jt.size + jg.size))
    assert o["avg_star"] is None and sorted(o["kind"]) == ["grid", "table"]
    json.dumps(doc, allow_nan=False)
    table = A.format_table(doc)
    assert "table profile (zeal-table/1)" in table and "AVG*" not in table
    table = A.format_table(doc, paper=True)  # the paper's AVG*: not for a table profile
    assert "AVG*" in table and "n/a" in table
    # export: every report's estimate is its cell's exact value, rounded once
    out = tmp_path / "x.csv"
    assert E.export(store, str(out), "csv") == jt.size + jg.size
    import csv
    with open(out) as fh:
        rows = [r for r in csv.DictReader(fh) if r["fingerprint"] == tprof.fingerprint]
    for r in rows:
        want = lo + (hi - lo) * Fraction(tprof.values[int(r["low"])], tprof.value_den)
        assert float(r["estimate"]) == float(want)
    side = json.loads((tmp_path / "x.csv.json").read_text())
    meta = {p["fingerprint"]: p for p in side["profiles"]}[tprof.fingerprint]
    assert meta["kind"] == "table" and len(meta["estimate_from_low"]["values"]) == 8
    with pytest.raises(A.DecodeError, match="table profile"):
        A.decode_values(tprof, store.frames(vector=False)[:1])


def test_table_plots_are_written(store, tmp_path):
    from zeal.analysis import plots
    from zeal.mechanism.table.profile import build
    tprof = build(*HUMIDITY, 1.0, "hm", 3)
    fill(store, tprof, DEV_A, offsets(tprof, 43, 5, 20))
    paths = plots.plot_store(store, str(tmp_path / "p"))
    assert len(paths) == 2 and all(os.path.getsize(p) > 1000 for p in paths)
    readings = [30.0 + (i % 40) for i in range(100)]
    with_truth = plots.plot_store(store, str(tmp_path / "q"), readings={DEV_A: readings})
    assert len(with_truth) == 2
    # the mixture the histogram draws: each cell's expected fraction, against Table's exact law
    mix = plots.table_mixture(tprof, readings)
    exact = [sum(tprof.table.distribution(Fraction(x))[j] for x in readings) / len(readings)
             for j in range(tprof.n_cells)]
    assert np.allclose(mix, [float(p) for p in exact], rtol=1e-12, atol=0)


def test_compress_keeps_table_profiles_beside_grids(store, tmp_path, capsys):
    # a store of a grid and a table profile: the archive keeps the table's cells, and
    # analyze --archive answers exactly as analyze --db (issue 20; it used to refuse tables)
    from zeal import cli
    from zeal.mechanism.table.profile import build
    tprof = build(*HUMIDITY, 1.0, "pm", 3)
    fill(store, tprof, DEV_A, offsets(tprof, 44, 2, 10))
    store.close()
    assert cli.main(["analyze", "--db", store.path, "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    out = str(tmp_path / "a.zip")
    assert cli.main(["compress", "--db", store.path, "--out", out]) == 0
    capsys.readouterr()
    assert cli.main(["analyze", "--archive", out, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {p["fingerprint"]: p["mean_calibrated"] for p in got["profiles"]} == \
        {p["fingerprint"]: p["mean_calibrated"] for p in want["profiles"]}
    assert tprof.fingerprint in {p["fingerprint"] for p in got["profiles"]}
    assert got["overall"]["mean_calibrated"] == want["overall"]["mean_calibrated"]

# ---- issue 22's small things -----------------------------------------------------------------
from zeal.cli import main as cli_main  # noqa: E402 (the whole command line, errors included)

def test_events_take_a_device_s_name_and_refuse_an_unknown_kind(store, capsys):
    """`zeal events` names devices as analyze does, takes that name (or hex) for --device,
    and an unknown --kind is a one-line error, not an empty list with status 0."""
    named = b"attic-1".ljust(8, b"\0")
    store.write(events=[EventRecord("gap", "3 frames", 3, device_id=named, time=10.0),
                        EventRecord("status", "OK", 1, device_id=DEV_A, time=11.0)])
    db = store.path
    assert cli_main(["events", "--db", db, "--device", "attic-1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["name"], r["device"]) for r in rows] == [("gap", "attic-1",
                                                                   named.hex())]
    assert cli_main(["events", "--db", db, "--device", DEV_A.hex(), "--json"]) == 0
    assert [r["kind"] for r in json.loads(capsys.readouterr().out)] == ["status"]
    assert cli_main(["events", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "attic-1" in text.splitlines()[0]
    assert cli_main(["events", "--db", db, "--kind", "bogus"]) == 1
    err = capsys.readouterr().err
    assert "--kind bogus: no such event kind" in err and "status" in err
    assert cli_main(["events", "--db", db, "--kind", "reboot"]) == 0   # known, none stored
    assert capsys.readouterr().out.strip() == "no events matching"


def test_compress_says_which_codecs_are_not_installed(tmp_path, monkeypatch, capsys):
    from zeal.analysis import compress

    entries = compress._entries

    def with_a_missing_one():
        def absent():
            raise ImportError("not here")
        return entries() + [("imaginary", "imaginary-codec", absent)]
    monkeypatch.setattr(compress, "_entries", with_a_missing_one)
    assert compress.missing() == {"imaginary": "imaginary-codec"}
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    (tmp_path / "p.json").write_text(prof.to_json())
    (tmp_path / "r.txt").write_text("".join("%d\n" % (i % 5) for i in range(200)))
    argv = ["compress", "--reports", str(tmp_path / "r.txt"), "--profile",
            str(tmp_path / "p.json"), "--out", str(tmp_path / "a.zip")]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "not installed, so not measured: imaginary (imaginary-codec)" in out
    assert cli_main(argv[:-2] + ["--out", str(tmp_path / "b.zip"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["codecs_not_installed"] == {
        "imaginary": "imaginary-codec"}


def test_analyze_plots_take_the_unit(store, tmp_path, monkeypatch):
    """`zeal analyze --plots DIR --unit %RH`: the unit reaches the plots (the demo's database
    does not record it, and the axes said so)."""
    from zeal.analysis import plots

    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    fill(store, prof, DEV_A, [[1, 2, 3, 4]])
    seen = {}

    def fake(st, outdir, **kw):
        seen.update(kw, outdir=outdir)
        return []
    monkeypatch.setattr(plots, "plot_store", fake)
    monkeypatch.setattr(plots, "require_matplotlib", lambda who="plots": None)
    assert cli_main(["analyze", "--db", store.path, "--plots", str(tmp_path / "p"),
                     "--unit", "%RH"]) == 0
    assert seen["unit"] == "%RH" and seen["outdir"] == str(tmp_path / "p")
    assert cli_main(["analyze", "--archive", "x.zip", "--unit", "%RH"]) == 1
