"""`zeal export` (zeal.analysis.export): what pandas and DuckDB read from the CSV and the Parquet
file -- the same columns and types in both, a device column that stays text, arrival as a UTC
timestamp, the profile as metadata -- and that the mean of `estimate` is `zeal analyze`'s
calibrated mean, per device and overall.

Float tolerance of the mean checks (deterministic, not statistical): every estimate is the
exact rational rounded once (relative error <= u = 2^-53), analyze's figure is the exact mean
rounded once, and a float64 sum of n terms in any order is within gamma_(n-1) sum|x| of the
exact sum (gamma_k = k u / (1 - k u)), the division adds one more rounding. So
|reader's mean - analyze's mean| <= gamma_(n+2) mean|estimate| (TOL below). With math.fsum
(a correctly rounded sum) the bound is 3 u mean|estimate|.
"""
import argparse
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from fractions import Fraction

import numpy as np
import pytest

import duckdb
import pandas as pd
import pyarrow.parquet as pq

from zeal import wire
from zeal.analysis import analyze as A
from zeal.analysis import export as E
from zeal.collect.store import FrameRecord, Store
from zeal.errors import ZealError
from zeal.mechanism.grid import profile as P

from conftest import HOST, HUMIDITY

U = 2.0 ** -53
# Device ids whose plain hex a CSV reader mistypes: a float (1e10000000000000 -> inf), an
# integer (leading zeros lost), a hex integer.
DEV_A, DEV_B, DEV_C = (bytes.fromhex(h) for h in ("1e10000000000000", "0000000000000042",
                                                  "a1a2a3a4a5a6a7a8"))
T0 = 1714564800.123456  # 2024-05-01T12:00:00.123456Z
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))



def read_csv(path, **kw):
    """pandas below 3 reads CSV doubles up to 1 ulp off unless asked to round-trip them."""
    if int(pd.__version__.split(".")[0]) < 3:
        kw.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kw)

def gamma(k: int) -> float:
    return k * U / (1 - k * U)


def tol(values) -> float:
    """Bound on |float mean of `values` - exact mean of the exact estimates| (module doc)."""
    values = np.asarray(values, dtype=np.float64)
    return gamma(values.size + 2) * float(np.mean(np.abs(values)))


# ---- building a store (the Store API, as the collector writes it) ----------------------------
def fill(store, prof, device, frames, *, boot=1, first_seq=0, arrival=T0, vector=False,
         debug=False):
    """Store frames holding these offsets j; frame i arrives at arrival + 0.25 i."""
    store.add_profile(prof)
    recs = []
    for i, j in enumerate(frames):
        lows = [int(v) + prof.k_lo - prof.wire_base for v in j]
        recs.append(FrameRecord(device_id=device, boot=boot, nonce=bytes(8),
                                seq=first_seq + i, crc=first_seq + i + 17 * boot,
                                fingerprint=prof.fingerprint, count=len(lows),
                                payload=wire.pack_reports(lows, prof.bits),
                                arrival=arrival + 0.25 * i, vector=vector, debug=debug))
    assert store.write(frames=recs) == len(recs)


def offsets(prof, seed, frames, count):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, prof.n_cells, count) for _ in range(frames)]


@pytest.fixture
def store(tmp_path):
    st = Store(str(tmp_path / "zeal.db"))
    yield st
    st.close()


def spec_estimate(prof, j) -> Fraction:
    """lo + g (j - c0) from the formulas of shared_spec/mechanism.md section 5, written out
    again from the profile's integers (not through zeal.mechanism.grid.exact)."""
    n, nc, q = prof.n_cells, prof.n_window, Fraction(prof.threshold, 1 << 64)
    no = n - nc
    s = q - (1 - q) * Fraction(nc, no)
    c0 = q * Fraction(nc - 1, 2) + (1 - q) * Fraction(n * (n - 1) - nc * (nc - 1), 2) / no
    g = (Fraction(prof.hi) - Fraction(prof.lo)) / (s * (n - nc))
    return Fraction(prof.lo) + g * (j - c0)


def two_profile_store(store):
    """Devices A (m = 4, boot 3) and B (m = 52, boot 4) with known reports, C in test mode.
    Returns the expected rows (device, boot, seq, report, arrival, low, fingerprint, j, prof)."""
    p4, p52 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 1.0, 52)
    f4 = offsets(p4, 8, 4, 9) + [[0, p4.n_cells - 1]]
    f52 = offsets(p52, 9, 3, 64) + [[0, p52.n_cells - 1, 1]]
    fill(store, p4, DEV_A, f4, boot=3, first_seq=100)
    fill(store, p52, DEV_B, f52, boot=4, arrival=T0 + 60)
    fill(store, p4, DEV_C, offsets(p4, 10, 1, 3), vector=True)
    expected = []
    for prof, dev, boot, seq0, t0, frames in ((p4, DEV_A, 3, 100, T0, f4),
                                              (p52, DEV_B, 4, 0, T0 + 60, f52)):
        for i, js in enumerate(frames):
            for r, v in enumerate(js):
                expected.append(("id:" + dev.hex(), boot, seq0 + i, r, t0 + 0.25 * i,
                                 prof.k_lo + int(v) - prof.wire_base, prof.fingerprint,
                                 int(v), prof))
    return expected


def export_both(store, tmp_path, unit="%RH"):
    csv_path, pq_path = str(tmp_path / "out.csv"), str(tmp_path / "out.parquet")
    n1 = E.export(store, csv_path, "csv", unit=unit)
    n2 = E.export(store, pq_path, "parquet", unit=unit)
    assert n1 == n2
    return csv_path, pq_path, n1


def iso_utc(t: float) -> str:
    us = round(t * 1e6)
    return datetime.fromtimestamp(us // 10**6, timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (us % 10**6)


# ---- what the readers see ------------------------------------------------------------------------
def test_pandas_reads_the_same_columns_and_types_from_csv_and_parquet(store, tmp_path):
    expected = two_profile_store(store)
    csv_path, pq_path, n = export_both(store, tmp_path)
    assert n == len(expected)
    a = read_csv(csv_path, parse_dates=["arrival"])
    b = pd.read_parquet(pq_path)
    assert tuple(a.columns) == tuple(b.columns) == E.EXPORT_COLUMNS
    for frame in (a, b):
        assert pd.api.types.is_string_dtype(frame["device"])
        assert pd.api.types.is_string_dtype(frame["fingerprint"])
        assert isinstance(frame["arrival"].dtype, pd.DatetimeTZDtype)
        assert str(frame["arrival"].dtype.tz) == "UTC"
        # the file holds microseconds; a pandas 2 CSV reader picks nanoseconds by itself
        frame["arrival"] = frame["arrival"].dt.as_unit("us")
    assert a.dtypes.to_dict() == b.dtypes.to_dict()
    for frame in (a, b):
        for col in ("boot", "seq", "report", "low"):
            assert frame[col].dtype == np.int64, col
        assert frame["estimate"].dtype == np.float64
    pd.testing.assert_frame_equal(a, b)
    assert list(a["device"]) == [e[0] for e in expected]  # the ids are not numbers
    got = list(zip(a["device"], a["boot"], a["seq"], a["report"], a["low"], a["fingerprint"]))
    assert got == [(e[0], e[1], e[2], e[3], e[5], e[6]) for e in expected]
    want = pd.to_datetime([round(e[4] * 1e6) for e in expected], unit="us", utc=True)
    assert list(a["arrival"]) == list(want)


def test_duckdb_reads_the_same_types_from_csv_and_parquet(store, tmp_path):
    expected = two_profile_store(store)
    csv_path, pq_path, _ = export_both(store, tmp_path)
    con = duckdb.connect()
    types_csv = con.sql("DESCRIBE SELECT * FROM read_csv('%s')" % csv_path).fetchall()
    types_pq = con.sql("DESCRIBE SELECT * FROM read_parquet('%s')" % pq_path).fetchall()
    assert [(r[0], r[1]) for r in types_csv] == [(r[0], r[1]) for r in types_pq]
    kinds = dict((r[0], r[1]) for r in types_csv)
    assert kinds == {"device": "VARCHAR", "boot": "BIGINT", "seq": "BIGINT",
                     "report": "BIGINT", "arrival": "TIMESTAMP WITH TIME ZONE",
                     "estimate": "DOUBLE", "low": "BIGINT", "fingerprint": "VARCHAR",
                     "attribute": "BIGINT", "name": "VARCHAR", "value": "VARCHAR"}
    rows_csv = con.sql("SELECT * FROM read_csv('%s')" % csv_path).fetchall()
    rows_pq = con.sql("SELECT * FROM read_parquet('%s')" % pq_path).fetchall()
    assert rows_csv == rows_pq
    assert [r[0] for r in rows_csv] == [e[0] for e in expected]
    assert [r[4].timestamp() for r in rows_csv] == [round(e[4] * 1e6) / 1e6 for e in expected]


def test_csv_text_device_and_arrival(store, tmp_path):
    """The CSV's own text: device "id:" + hex, arrival ISO-8601 UTC with six decimals and Z,
    estimate the shortest text that reads back as the same double; the old file is replaced
    atomically (no temporary file left)."""
    expected = two_profile_store(store)
    path = tmp_path / "out.csv"
    path.write_text("old contents\n")
    assert E.export(store, str(path), "csv") == len(expected)
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == E.EXPORT_COLUMNS
    for row, e in zip(rows[1:], expected):
        assert re.fullmatch(r"id:[0-9a-f]{16}", row[0]) and row[0] == e[0]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", row[4])
        assert row[4] == iso_utc(e[4])
        stamp = datetime.fromisoformat(row[4].replace("Z", "+00:00"))
        assert stamp.utcoffset().total_seconds() == 0
        assert abs(stamp.timestamp() - e[4]) <= 0.5e-6 + 1e-9
        assert row[5] == repr(float(row[5]))
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert E.export(store, str(path), "csv", include_vector=True) == len(expected) + 3


# ---- the estimate --------------------------------------------------------------------------------
def test_each_estimate_is_the_spec_formula_rounded_once(store, tmp_path):
    expected = two_profile_store(store)
    csv_path, pq_path, _ = export_both(store, tmp_path)
    want = [float(spec_estimate(e[8], e[7])) for e in expected]
    assert read_csv(csv_path)["estimate"].tolist() == want
    assert pq.read_table(pq_path).column("estimate").to_pylist() == want


def test_two_cells_is_randomised_response_by_hand(store, tmp_path):
    """m = 2 at epsilon 1 has N = 2 cells, Nc = 1: randomised response with q = e/(1+e), whose
    unbiased estimator is lo + (hi - lo)(j - (1 - q))/(2q - 1): j = 0 gives
    lo - (hi - lo)/(e - 1) = 23.5 - 60.4/1.718281828 = 23.5 - 35.15139 = -11.65139,
    j = 1 gives lo + (hi - lo) e/(e - 1) = 23.5 + 60.4 * 1.581976707 = 23.5 + 95.55139 = 119.05139
    (q is exact here: T / 2^64 rounded to the privacy-safe side, so within 1e-12)."""
    prof = P.from_bits(*HUMIDITY, 1.0, 2)
    assert (prof.n_cells, prof.n_window) == (2, 1)
    fill(store, prof, DEV_A, [[0, 1, 1], [1]])
    path = str(tmp_path / "rr.csv")
    E.export(store, path, "csv")
    est = read_csv(path)["estimate"].tolist()
    lo, hi, e = HUMIDITY[0], HUMIDITY[1], math.e
    assert est[0] == pytest.approx(lo - (hi - lo) / (e - 1), rel=1e-12)
    assert est[0] == pytest.approx(-11.65139, abs=1e-5)
    assert est[1:] == [pytest.approx(lo + (hi - lo) * e / (e - 1), rel=1e-12)] * 3
    assert est[1] == pytest.approx(119.05139, abs=1e-5)
    q = Fraction(prof.threshold, 1 << 64)  # exactly, from the profile's threshold
    rr = [float(Fraction(lo) + (Fraction(hi) - Fraction(lo)) * (j - (1 - q)) / (2 * q - 1))
          for j in (0, 1, 1, 1)]
    assert est == rr
    mean = A.analyze(store)["overall"]["mean_calibrated"]
    assert abs(math.fsum(est) / 4 - mean) <= 3 * U * np.mean(np.abs(est))


def _analyze_means(store):
    doc = A.analyze(store)
    return doc["overall"]["mean_calibrated"], {d["device"]: d["mean_calibrated"]
                                               for d in doc["devices"] if d["n"]}


def test_mean_of_estimate_is_the_calibrated_mean_per_device_and_overall(store, tmp_path):
    two_profile_store(store)
    p8 = P.from_bits(*HUMIDITY, 0.5, 8)
    fill(store, p8, DEV_A, offsets(p8, 12, 40, 64), boot=5)  # A: two profiles
    fill(store, p8, DEV_C, offsets(p8, 13, 7, 33), boot=2)
    overall, per_device = _analyze_means(store)
    assert len(per_device) == 3
    csv_path, pq_path, _ = export_both(store, tmp_path)
    con = duckdb.connect()
    for frame in (read_csv(csv_path), pd.read_parquet(pq_path)):
        est = frame["estimate"].to_numpy()
        assert abs(float(frame["estimate"].mean()) - overall) <= tol(est)
        assert abs(math.fsum(est) / est.size - overall) <= 3 * U * np.mean(np.abs(est))
        for dev, mean in per_device.items():
            mine = frame.loc[frame["device"] == "id:" + dev, "estimate"]
            assert mine.size and abs(float(mine.mean()) - mean) <= tol(mine), dev
    for source in ("read_csv('%s')" % csv_path, "read_parquet('%s')" % pq_path):
        (mean, n, absmean), = con.sql("SELECT avg(estimate), count(*), avg(abs(estimate)) "
                                      "FROM %s" % source).fetchall()
        assert abs(mean - overall) <= gamma(n + 2) * absmean
        for dev, want, n, absmean in con.sql(
                "SELECT device, avg(estimate), count(*), avg(abs(estimate)) FROM %s "
                "GROUP BY device" % source).fetchall():
            assert abs(want - per_device[dev[3:]]) <= gamma(n + 2) * absmean, dev


def test_the_tolerance_would_catch_a_biased_estimate(store, tmp_path):
    """The mean check can fail: analyze's mean moved by one part in 10^12 is outside it."""
    p8 = P.from_bits(*HUMIDITY, 0.5, 8)
    fill(store, p8, DEV_A, offsets(p8, 14, 50, 64))
    overall, _ = _analyze_means(store)
    est = E.estimates(p8, np.concatenate(offsets(p8, 14, 50, 64)))
    assert abs(float(np.mean(est)) - overall) <= tol(est)
    assert abs(float(np.mean(est)) - overall * (1 + 1e-12)) > tol(est)


# ---- metadata ------------------------------------------------------------------------------------
def test_profile_metadata_in_the_parquet_schema_and_the_csv_sidecar(store, tmp_path):
    expected = two_profile_store(store)
    csv_path, pq_path, n = export_both(store, tmp_path, unit="%RH")
    with open(csv_path + ".json") as fh:
        side = json.load(fh)
    schema = pq.read_schema(pq_path)
    inner = json.loads(schema.metadata[b"zeal"])
    assert inner == side
    assert side["format"] == "zeal-export/1" and side["unit"] == "%RH" and side["reports"] == n
    assert [c["name"] for c in side["columns"]] == list(E.EXPORT_COLUMNS)
    assert schema.field("estimate").metadata[b"unit"] == b"%RH"
    assert all(b"description" in schema.field(c).metadata for c in E.EXPORT_COLUMNS)
    profs = {e[6]: e[8] for e in expected}
    assert {p["fingerprint"] for p in side["profiles"]} == set(profs)
    frame = read_csv(csv_path)
    for doc in side["profiles"]:
        prof = profs[doc["fingerprint"]]
        assert (doc["lo"], doc["hi"], doc["epsilon"], doc["bits"], doc["exponent"],
                doc["n_cells"], doc["n_window"], doc["unit"]) == \
            (prof.lo, prof.hi, prof.epsilon, prof.bits, prof.exponent, prof.n_cells,
             prof.n_window, "%RH")
        assert P.from_dict(doc["profile"]).fingerprint == prof.fingerprint
        mine = frame[frame["fingerprint"] == prof.fingerprint]
        assert doc["reports"] == len(mine)
        # estimate = intercept + gain * low, exactly, then rounded once
        i, g = (Fraction(doc["estimate_from_low"][k]) for k in ("intercept_exact",
                                                                "gain_exact"))
        assert [float(i + g * int(low)) for low in mine["low"]] == mine["estimate"].tolist()
    assert {d["device"]: d["reports"] for d in side["devices"]} == \
        {"id:" + DEV_A.hex(): 38, "id:" + DEV_B.hex(): 195}
    assert all(d["private"] for d in side["devices"])


def test_debug_devices_are_marked_not_private(store, tmp_path):
    p8 = P.from_bits(*HUMIDITY, 0.5, 8)
    fill(store, p8, DEV_A, [[1, 2]])
    fill(store, p8, DEV_B, [[3]], debug=True)
    E.export(store, str(tmp_path / "d.csv"), "csv")
    with open(str(tmp_path / "d.csv.json")) as fh:
        devices = {d["device"]: d for d in json.load(fh)["devices"]}
    assert devices["id:" + DEV_A.hex()]["private"] is True
    assert devices["id:" + DEV_B.hex()]["private"] is False
    assert devices["id:" + DEV_B.hex()]["debug_reports"] == 1


# ---- errors ----------------------------------------------------------------------------------
def test_export_refuses_user_mistakes_in_one_line(store, tmp_path):
    two_profile_store(store)
    cases = [
        (dict(path="x.json", fmt="json"), "format"),
        (dict(path=str(tmp_path / "no" / "dir.csv"), fmt="csv"), "cannot write"),
        (dict(path=store.path, fmt="csv"), "the database itself"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", meta=store.path), "the database"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", meta="-"), "--meta takes a file"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", meta=str(tmp_path / "a.csv")),
         "output file itself"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", unit="x" * 65), "--unit"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", unit="a\nb"), "--unit"),
        (dict(path=str(tmp_path / "a.csv"), fmt="csv", unit="\udcff"), "UTF-8"),
    ]
    size = os.path.getsize(store.path)
    for kw, message in cases:
        path, fmt = kw.pop("path"), kw.pop("fmt")
        with pytest.raises(ZealError, match=re.escape(message)) as info:
            E.export(store, path, fmt, **kw)
        assert "\n" not in str(info.value)
    assert os.path.getsize(store.path) == size
    assert not os.path.exists(tmp_path / "a.csv")


def test_missing_pyarrow_is_a_one_line_error(store, tmp_path, monkeypatch):
    two_profile_store(store)
    monkeypatch.setitem(sys.modules, "pyarrow", None)   # import pyarrow -> ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ZealError, match=r"needs pyarrow: pip install 'zeal-mcu\[parquet\]'"):
        E.export(store, str(tmp_path / "x.parquet"), "parquet")
    assert not os.path.exists(tmp_path / "x.parquet")


# ---- command line ------------------------------------------------------------------------------
def run(argv):
    """`zeal export` in-process, through the parser the command table builds."""
    from zeal.commands import export as export_command

    parser = argparse.ArgumentParser(prog="zeal")
    export_command.add(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def zeal(*args, stdout=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "zeal.cli", *args], stdout=stdout,
                          stderr=subprocess.PIPE, env=ENV, timeout=120)


def test_cli_csv_to_stdout_is_the_csv_and_nothing_else(store, tmp_path):
    two_profile_store(store)
    store.close()
    E.export(Store(store.path), str(tmp_path / "f.csv"), "csv")
    before = set(os.listdir(tmp_path))
    done = zeal("export", "--db", store.path, "--format", "csv", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (tmp_path / "f.csv").read_bytes()
    assert set(os.listdir(tmp_path)) == before  # no sidecar
    assert b"reports written to stdout" in done.stderr
    frame = read_csv(io.BytesIO(done.stdout))
    assert tuple(frame.columns) == E.EXPORT_COLUMNS


def test_cli_parquet_to_a_pipe_and_refused_on_a_terminal(store, tmp_path):
    two_profile_store(store)
    E.export(store, str(tmp_path / "f.parquet"), "parquet")
    store.close()
    done = zeal("export", "--db", store.path, "--format", "parquet", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert pq.read_table(io.BytesIO(done.stdout)).equals(pq.read_table(tmp_path / "f.parquet"))
    master, slave = os.openpty()
    try:
        done = zeal("export", "--db", store.path, "--format", "parquet", "-o", "-",
                    stdout=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert done.returncode == 1
    assert done.stderr.decode().count("\n") == 1
    assert done.stderr.startswith(b"zeal: Parquet is binary")


def test_cli_options(store, tmp_path, capsys):
    two_profile_store(store)
    out = str(tmp_path / "x.csv")
    assert run(["export", "--db", store.path, "-o", out, "--unit", "degC"]) == 0
    assert "233 reports written to %s (metadata: %s.json)" % (out, out) in \
        capsys.readouterr().out
    with open(out + ".json") as fh:
        assert json.load(fh)["unit"] == "degC"
    meta = str(tmp_path / "m.json")
    assert run(["export", "--db", store.path, "-o", "-", "--meta", meta]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines()[0] == ",".join(E.EXPORT_COLUMNS)
    assert len(cap.out.splitlines()) == 234
    with open(meta) as fh:
        assert json.load(fh)["unit"] == ""
    assert run(["export", "--db", store.path, "--format", "parquet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"reports": 233, "rows": 233, "format": "parquet", "unit": "", "metadata": None,
                   "output": os.path.splitext(store.path)[0] + ".parquet"}
    with pytest.raises(ZealError, match="--json"):
        run(["export", "--db", store.path, "-o", "-", "--json"])
    assert capsys.readouterr().out == ""


def test_cli_unit_through_the_zeal_command(store, tmp_path):
    """The installed command has --unit (zeal.analysis.analyze registers export's parser)."""
    two_profile_store(store)
    store.close()
    out = str(tmp_path / "u.csv")
    done = zeal("export", "--db", store.path, "-o", out, "--unit", "%RH")
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as fh:
        assert json.load(fh)["unit"] == "%RH"


# ---- end to end: the demo's boards, collector and store ----------------------------------------
def test_demo_database_export_matches_analyze(tmp_path):
    """Virtual boards (the firmware under the MicroPython unix port) -> collector -> store;
    `zeal analyze --json` and the exports read by DuckDB agree on every mean."""
    from zeal.demo import run_demo

    db = str(tmp_path / "demo.db")
    run_demo(db=db, count=600, devices=3, progress=False)
    done = zeal("analyze", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    per_device = {d["device"]: d["mean_calibrated"] for d in doc["devices"] if d["n"]}
    assert len(per_device) == 3
    for fmt in ("csv", "parquet"):
        out = str(tmp_path / ("demo." + fmt))
        done = zeal("export", "--db", db, "--format", fmt, "-o", out)
        assert done.returncode == 0, done.stderr
        source = ("read_csv('%s')" if fmt == "csv" else "read_parquet('%s')") % out
        con = duckdb.connect()
        (mean, n, absmean), = con.sql("SELECT avg(estimate), count(*), avg(abs(estimate)) "
                                      "FROM %s" % source).fetchall()
        assert n == 600 == doc["overall"]["n"]
        assert abs(mean - doc["overall"]["mean_calibrated"]) <= gamma(n + 2) * absmean
        for dev, want, n, absmean in con.sql(
                "SELECT device, avg(estimate), count(*), avg(abs(estimate)) FROM %s "
                "GROUP BY device" % source).fetchall():
            assert abs(want - per_device[dev[3:]]) <= gamma(n + 2) * absmean, dev


# ---- streaming: the store read a page at a time ----------------------------------------------
def _demo(where, name, *options):
    """A store made by `zeal demo` (virtual boards, collector) with these options."""
    db = str(where / name)
    done = zeal("demo", "--db", db, "--json", *options)
    assert done.returncode == 0, done.stderr[-2000:]
    return db


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory):
    """One store holding the frames of four demos -- a window grid, a table, a multi-attribute
    and a shuffle profile -- in a shuffled order (so pages and batches mix the profiles), and
    test-mode (vector) frames."""
    where = tmp_path_factory.mktemp("mixed")
    sources = [_demo(where, "grid.db", "--count", "300", "--devices", "2"),
               _demo(where, "table.db", "--mechanism", "duchi", "--count", "300"),
               _demo(where, "multi.db", "--attributes", "--count", "300"),
               _demo(where, "shuffle.db", "--shuffle", "--count", "2500")]
    path = merge_stores(sources, str(where / "mixed.db"), np.random.default_rng(5))
    with Store(path) as st:
        p4 = P.from_bits(*HUMIDITY, 1.0, 4)
        fill(st, p4, DEV_C, offsets(p4, 16, 6, 7), vector=True)
    return path


def merge_stores(sources, path, rng=None) -> str:
    """A store holding every profile and frame of the stores `sources`, as the collector
    writes them; the frames in a random order by `rng` (a numpy Generator), else in theirs."""
    profiles, frames = {}, []
    for db in sources:
        with Store(db, readonly=True) as src:
            profiles.update(src.profiles())
            frames += [FrameRecord(device_id=bytes(r[0]), boot=r[1], nonce=bytes(r[7]),
                                   seq=r[2], crc=0, fingerprint=r[3], count=r[4],
                                   payload=bytes(r[5]), arrival=r[6], debug=bool(r[8]))
                       for r in src.frames()]
    order = range(len(frames)) if rng is None else rng.permutation(len(frames))
    with Store(path) as st:
        for prof in profiles.values():
            st.add_profile(prof)
        assert st.write(frames=[frames[i] for i in order]) == len(frames)
    return path


def _exports(db, where, include_vector):
    """CSV bytes, sidecar, Parquet table (with its schema metadata), the Parquet file's
    key-value metadata and row-group sizes, and the counts, of one export of each format."""
    where.mkdir()
    got = {}
    with Store(db, readonly=True) as st:
        n_csv = E.export(st, str(where / "x.csv"), "csv", include_vector=include_vector,
                         unit="%RH", summary=got)
        n_pq = E.export(st, str(where / "x.parquet"), "parquet", include_vector=include_vector,
                        unit="%RH", meta=str(where / "p.json"))
    assert n_csv == n_pq == got["rows"]
    info = pq.ParquetFile(str(where / "x.parquet")).metadata
    return {"csv": (where / "x.csv").read_bytes(),
            "sidecar": (where / "x.csv.json").read_text(),
            "parquet meta": (where / "p.json").read_text(),
            "table": pq.read_table(str(where / "x.parquet")),
            "kv": info.metadata,
            "groups": [info.row_group(i).num_rows for i in range(info.num_row_groups)],
            "counts": got}


def test_export_streams_the_store_page_by_page(mixed_db, tmp_path, monkeypatch):
    """Export reads the store through Store.iter_frames a page of EXPORT_FRAMES frames at a
    time (never Store.frames, the whole store in one list), decodes batches of at most
    BATCH_REPORTS reports and writes Parquet row groups of ROW_GROUP_ROWS rows; with pages of
    3 frames, batches of 40 reports and row groups of 50 rows the output is exactly the
    one-page, one-batch, one-row-group output: the CSV and the metadata byte for byte, the
    Parquet table with its schema and file metadata -- on a store of four profile kinds
    (grid, table, multi-attribute, shuffle) and with test-mode frames or without."""
    for include_vector in (False, True):
        one = tmp_path / ("one-%d" % include_vector)
        monkeypatch.setattr(E, "EXPORT_FRAMES", 10 ** 9)
        monkeypatch.setattr(E, "BATCH_REPORTS", 10 ** 12)
        monkeypatch.setattr(E, "ROW_GROUP_ROWS", 10 ** 8)
        whole = _exports(mixed_db, one, include_vector)
        assert len(whole["groups"]) == 1
        rows, reports = whole["counts"]["rows"], whole["counts"]["reports"]
        assert rows > reports > 1000   # the multi profile's reports give several rows each
        kinds_in = {p["kind"] for p in json.loads(whole["sidecar"])["profiles"]}
        assert kinds_in == {"grid", "table", "multi", "shuffle"}

        pages, batches = [], []

        def iter_frames(self, *, chunk, **kw):
            for page in real_iter(self, chunk=chunk, **kw):
                assert len(page) <= chunk == 3
                pages.append(len(page))
                yield page

        def whole_store(self, **kw):
            raise AssertionError("export read the whole store at once (Store.frames)")

        class Columns(E._Columns):
            def __init__(self, rows, profiles):
                super().__init__(rows, profiles)
                batches.append((len(rows), self.reports))

        real_iter = Store.iter_frames
        monkeypatch.setattr(Store, "iter_frames", iter_frames)
        monkeypatch.setattr(Store, "frames", whole_store)
        monkeypatch.setattr(E, "_Columns", Columns)
        monkeypatch.setattr(E, "EXPORT_FRAMES", 3)
        monkeypatch.setattr(E, "BATCH_REPORTS", 40)
        monkeypatch.setattr(E, "ROW_GROUP_ROWS", 50)
        paged = _exports(mixed_db, tmp_path / ("paged-%d" % include_vector), include_vector)
        monkeypatch.undo()
        # the store read in many pages of at most 3 frames; no batch past 40 reports but a
        # single frame of more; every report decoded once per format
        assert len(pages) > 20 and max(pages) == 3
        assert all(n <= 40 or f == 1 for f, n in batches), batches
        assert sum(n for _, n in batches) == 2 * reports
        assert paged["groups"] == [50] * (rows // 50) + ([rows % 50] if rows % 50 else [])
        for key in ("csv", "sidecar", "parquet meta", "kv", "counts"):
            assert paged[key] == whole[key], key
        assert paged["table"].equals(whole["table"], check_metadata=True)
        assert paged["table"].schema.metadata[b"zeal"] == whole["kv"][b"zeal"]
        assert json.loads(whole["kv"][b"zeal"]) == json.loads(whole["sidecar"])


def test_export_with_a_pyarrow_before_17_counts_first_then_writes(mixed_db, tmp_path,
                                                                  monkeypatch):
    """Without ParquetWriter.add_key_value_metadata (pyarrow < 17) the metadata goes into the
    schema the writer starts with: a first pass counts, the second writes the same frames --
    not the ones a collector stores in between -- and the file is the same."""
    db = str(tmp_path / "live.db")
    with Store(db) as st:
        p8 = P.from_bits(*HUMIDITY, 0.5, 8)
        fill(st, p8, DEV_A, offsets(p8, 17, 30, 11))
        fill(st, p8, DEV_B, offsets(p8, 18, 9, 5), vector=True)
    monkeypatch.setattr(E, "EXPORT_FRAMES", 4)
    monkeypatch.setattr(E, "ROW_GROUP_ROWS", 64)
    want = _exports(db, tmp_path / "late", True)
    import pyarrow.parquet as parquet

    monkeypatch.delattr(parquet.ParquetWriter, "add_key_value_metadata")
    calls = []
    real_iter = Store.iter_frames

    def iter_frames(self, **kw):
        calls.append(kw["vector"])
        if len(calls) == 3:   # the second pass begins: a collector stores 2 more frames
            with Store(db) as other:
                fill(other, p8, DEV_C, [[1, 2], [3]], boot=7)
        return real_iter(self, **kw)

    monkeypatch.setattr(Store, "iter_frames", iter_frames)
    first = tmp_path / "first"
    first.mkdir()
    with Store(db, readonly=True) as st:
        assert E.export(st, str(first / "x.parquet"), "parquet", include_vector=True,
                        unit="%RH") == want["counts"]["rows"]
    assert calls == [False, True, False, True]
    info = pq.ParquetFile(str(first / "x.parquet")).metadata
    assert info.metadata == want["kv"]
    assert pq.read_table(str(first / "x.parquet")).equals(want["table"], check_metadata=True)
    monkeypatch.undo()
    with Store(db, readonly=True) as st:   # the 2 frames are there, for the next export
        assert sum(r[4] for r in st.frames()) == 330 + 3
