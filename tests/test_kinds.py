"""The profile kinds behind one interface (zeal.mechanism.kinds), and the commands on every
kind: a store of each kind, made by its demo (virtual boards on the MicroPython unix port),
through `zeal export` (CSV and Parquet), `zeal analyze --json`, `zeal analyze --plots`,
`zeal events` and `zeal compress`, as a user runs them (`python -m zeal`).

Before the registry, `export`, `analyze --plots` and `compress` ended in a traceback on a
multi-attribute or shuffle store ('MultiProfile' object has no attribute 'wire_base',
'ShuffleProfile' object has no attribute 'n_window' / 'exponent').
"""
import csv
import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from zeal.mechanism import kinds
from zeal.mechanism.grid import profile as GP

from conftest import HOST, ROOT

VECTORS = os.path.join(ROOT, "shared_spec", "vectors")
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))
DEMOS = {  # kind: the demo's options (the shuffle's privacy needs 2,439 readings or more)
    "grid": ["--count", "400"],
    "table": ["--mechanism", "duchi", "--count", "400"],
    "multi": ["--attributes", "--count", "400"],
    "shuffle": ["--shuffle", "--count", "2500"],
}


def zeal(*args, cwd, check=True, input_text=None):
    done = subprocess.run([sys.executable, "-m", "zeal", *map(str, args)], cwd=str(cwd),
                          capture_output=True, text=True, env=ENV, timeout=600,
                          input=input_text,
                          stdin=subprocess.DEVNULL if input_text is None else None)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    if check:
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done


# ---- the registry ------------------------------------------------------------------------------
def _vector_files():
    """(kind, file bytes, fetch) of profile files from the vectors, of every kind."""
    out = []
    for case in json.load(open(os.path.join(VECTORS, "profiles.json")))["cases"]:
        if "profile" in case:
            out.append(("grid", json.dumps(case["profile"]).encode(), None))
            break
    for name, kind in (("tables.json", "table"), ("shuffle.json", "shuffle")):
        for case in json.load(open(os.path.join(VECTORS, name)))["cases"]:
            if case["result"] == "valid":
                out.append((kind, case["file"].encode(), None))
                break
    return out


def test_each_kind_sniffs_and_owns_its_profiles(tmp_path):
    from zeal.mechanism.multi import profile as MP

    found = {}
    for kind, data, fetch in _vector_files():
        got = kinds.sniff(data)
        assert got.name == kind
        prof = kinds.loads(data, fetch)
        assert kinds.of(prof) is got
        found[kind] = prof
    # a multi header and its attribute files, written as zeal profile --attributes does
    head = tmp_path / "m.json"
    zeal("profile", "--attributes", "--attribute", "humidity:0:100", "--attribute",
         "light:0:1000", "--categorical", "door:3", "--epsilon", "2",
         "-o", head, cwd=tmp_path)
    prof = kinds.load(str(head))
    assert kinds.sniff(head.read_bytes()) is kinds.MULTI and kinds.of(prof) is kinds.MULTI
    assert isinstance(prof, MP.MultiProfile)
    assert {"grid", "table", "shuffle"} <= set(found)
    with pytest.raises(TypeError):
        kinds.of(object())


def test_the_grid_estimate_map_is_exactly_unbiased():
    # estimate(j) = (a + b j) / d: its mean under the grid's exact law is the reading itself,
    # at the ends of the range and inside (here: 2 bits on [0, 1] at eps 1, a small grid)
    from fractions import Fraction

    from zeal.mechanism.grid.exact import ExactGrid

    prof = GP.from_bits(0.0, 1.0, 1.0, 2)
    a, b, d = kinds.GRID.estimate_map(prof)
    g = ExactGrid(prof)
    for x in (Fraction(0), Fraction(1, 3), Fraction(1)):
        law = g.distribution(x)   # {offset j: probability}
        assert sum(law.values()) == 1
        assert sum(p * Fraction(a + b * j, d) for j, p in law.items()) == x


# ---- every command on every kind ---------------------------------------------------------------
def _copy_into(path, dest):
    """Every profile and frame of the SQLite store `path` added to the store `dest` (a file
    or a PostgreSQL URL), through the stores' own API (profiles, then the frames as the
    collector writes them). Returns the frames newly stored."""
    from zeal.collect.store import FrameRecord, open_store

    with open_store(str(path), read_only=True) as src:
        profiles = src.profiles()
        frames = [FrameRecord(device_id=bytes(r[0]), boot=r[1], nonce=bytes(r[7]), seq=r[2],
                              crc=0, fingerprint=r[3], count=r[4], payload=bytes(r[5]),
                              arrival=r[6], vector=vec, debug=bool(r[8]))
                  for vec in (False, True) for r in src.frames(vector=vec)]
    with open_store(str(dest)) as dst:
        for prof in profiles.values():
            dst.add_profile(prof)
        return dst.write(frames=frames), len(frames)


@pytest.fixture(scope="module", params=[(k, b) for k in sorted(DEMOS)
                                        for b in ("sqlite", "postgresql")],
                ids=lambda p: "%s-%s" % p)
def store(request, tmp_path_factory):
    """(kind, folder, --db) of a store made by the kind's demo: the SQLite file it wrote, or
    a PostgreSQL database holding the same frames."""
    kind, backend = request.param
    where = tmp_path_factory.mktemp("kind-" + kind)
    zeal("demo", *DEMOS[kind], "--db", "demo.db", cwd=where)
    if backend == "sqlite":
        return kind, where, "demo.db"
    url = request.getfixturevalue("postgres_server").create_database()
    new, total = _copy_into(where / "demo.db", url)
    assert new == total
    return kind, where, url


def _analyze(where, db):
    return json.loads(zeal("analyze", "--db", db, "--json", cwd=where).stdout)


def _expected_means(kind, doc):
    """{(attribute, value): analyze's figure} for the export's groups."""
    if kind in ("grid", "table"):
        return {(0, "mean"): doc["overall"]["mean_calibrated"]}
    if kind == "multi":
        out = {}
        for j, a in enumerate(doc["attributes"]):
            if a["kind"] == "numeric":
                out[(j, "mean")] = a["mean_calibrated"]
            else:
                for v, f in a["frequencies"].items():
                    out[(j, "frequency of %s" % v)] = f["estimate"]
        return out
    (sec,) = doc["shuffle"]
    return {(c, "mean"): m for c, m in enumerate(sec["mean"]) if m is not None}


def test_export_csv_groups_average_to_analyze(store):
    kind, where, db = store
    done = zeal("export", "--db", db, "-o", "out.csv", "--json", cwd=where)
    summary = json.loads(done.stdout)
    with open(where / "out.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == summary["rows"] >= summary["reports"] > 0
    groups = defaultdict(list)
    for r in rows:
        assert r["fingerprint"] and r["device"].startswith("id:")
        groups[(int(r["attribute"]), r["value"])].append(float(r["estimate"]))
    want = _expected_means(kind, _analyze(where, db))
    assert set(want) <= set(groups)
    for key, figure in want.items():
        got = sum(groups[key]) / (summary["reports"] if kind == "multi" else len(groups[key]))
        assert got == pytest.approx(figure, rel=1e-9, abs=1e-9), (kind, key)
    meta = json.load(open(where / "out.csv.json"))
    assert [p["kind"] for p in meta["profiles"]] == [kind]
    assert meta["reports"] == summary["reports"] and meta["rows"] == summary["rows"]


def test_export_parquet_equals_csv(store):
    pd = pytest.importorskip("pandas")
    kind, where, db = store
    zeal("export", "--db", db, "-o", "out2.csv", cwd=where)
    zeal("export", "--db", db, "--format", "parquet", "-o", "out.parquet", cwd=where)
    a = pd.read_csv(where / "out2.csv")
    b = pd.read_parquet(where / "out.parquet")
    assert list(a.columns) == list(b.columns)
    assert (a["estimate"].to_numpy() == b["estimate"].to_numpy()).all()
    assert (a["low"].to_numpy() == b["low"].to_numpy()).all()


def test_analyze_plots(store):
    kind, where, db = store
    done = zeal("analyze", "--db", db, "--plots", "plots", "--json", cwd=where)
    paths = json.loads(done.stdout)["plots"]
    assert paths
    for p in paths:
        with open(os.path.join(where, p) if not os.path.isabs(p) else p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    names = sorted(os.path.basename(p).split("-")[0] for p in paths)
    assert names == (["histogram", "running"] if kinds.__dict__[kind.upper()].distribution_plots
                     else ["attributes"])


def test_events(store):
    kind, where, db = store
    done = zeal("events", "--db", db, cwd=where)
    assert done.stdout.strip()


def test_compress_keeps_every_kind_and_analyze_archive_answers_as_the_store(store):
    # every kind's store: an archive, and analyze --archive gives the very JSON document (and
    # text) analyze --db gives (before: multi and shuffle stores were refused in one line)
    kind, where, db = store
    done = zeal("compress", "--db", db, "--out", "a.zip", "--json", cwd=where)
    doc = json.loads(done.stdout)
    unit = "message" if kind == "shuffle" else "report"
    (group,) = doc["groups"]
    assert group["unit"] == unit and group["n"] > 0
    assert all(r["bits_per_report"] > 0 for r in group["codecs"] if r.get("applies", True))
    assert doc["archive"]["version"] == (1 if kind in ("grid", "table") else 2)
    want = zeal("analyze", "--db", db, "--json", cwd=where).stdout
    assert zeal("analyze", "--archive", "a.zip", "--json", cwd=where).stdout == want
    assert zeal("analyze", "--archive", "a.zip", cwd=where).stdout == \
        zeal("analyze", "--db", db, cwd=where).stdout
    os.remove(where / "a.zip")  # (the next backend writes its own)


def test_multi_export_rows_average_to_the_estimator_with_a_categorical_attribute():
    # numeric (grid and table) and categorical attributes, k = 2 of d = 3: every group's mean
    # over the n reports is MultiEstimator's figure, exactly up to float64 rounding
    import numpy as np

    from zeal.analysis.decode import PayloadReader
    from zeal.mechanism.multi import profile as MP
    from zeal.mechanism.multi.mechanism import Categorical, MultiEstimator, Numeric
    from zeal.mechanism.core.words import CounterWords

    prof = MP.build([Numeric("t", 0, 40), Numeric("h", 0, 100, mechanism="duchi"),
                     Categorical("door", ("shut", "open", "ajar"))], 2, k=2)
    sampler = MP.MultiSampler(prof, CounterWords(bytes(32)))
    rng = np.random.default_rng(5)
    reports = [sampler.sample((float(rng.uniform(0, 40)), float(rng.uniform(0, 100)),
                               int(rng.integers(3)))) for _ in range(300)]
    frames = [reports[i:i + 60] for i in range(0, 300, 60)]
    rows = [(b"d" * 8, 1, s, prof.fingerprint, len(f), MP.pack_multi(prof, f), 0.0, None, 0)
            for s, f in enumerate(frames)]
    got = kinds.MULTI.export(prof, rows, np.array([len(f) for f in frames]), PayloadReader)
    assert len(got["frame"]) == 300 * (2 + 3)  # 2 numeric attributes, 3 door values
    idx = np.array([[j for j, _ in r] for r in reports])
    val = np.array([[y for _, y in r] for r in reports])
    summary = MultiEstimator(prof.multi()).summarize(idx, val)
    for j, s in enumerate(summary):
        sel = got["attribute"] == j
        if s.kind == "numeric":
            assert got["estimate"][sel].mean() == pytest.approx(s.mean, rel=1e-12)
        else:
            for v, (freq, _) in s.frequencies.items():
                mine = got["estimate"][sel & (got["value"] == "frequency of %s" % v)]
                assert mine.size == 300 and mine.mean() == pytest.approx(freq, abs=1e-12)
    # low: the value carried, -1 where the report did not carry the attribute
    for j in range(3):
        carriers = int((idx == j).sum())
        per_row = 1 if j < 2 else 3   # a categorical attribute: a row per value
        assert int(((got["attribute"] == j) & (got["low"] >= 0)).sum()) == carriers * per_row


# ---- perturb and aggregate on every kind -------------------------------------------------------
SEED = "5eed" * 16


def _profiles(tmp_path):
    zeal("profile", "--attributes", "--attribute", "t:0:40", "--attribute", "h:0:100",
         "--categorical", "door:3", "--epsilon", "2", "-o", "m.json", cwd=tmp_path)
    zeal("profile", "--shuffle", "--dims", "2", "--levels", "4", "--t", "1", "--n", "5000",
         "--delta", "1e-6", "--ranges", "0", "40", "0", "100", "--epsilon", "1", "-o",
         "s.json", cwd=tmp_path)
    return kinds.load(str(tmp_path / "m.json")), kinds.load(str(tmp_path / "s.json"))


def test_perturb_and_aggregate_a_multi_profile(tmp_path):
    import numpy as np

    from zeal.mechanism.multi import profile as MP
    from zeal.mechanism.multi.mechanism import MultiEstimator
    from zeal.mechanism.core.words import CounterWords, key_from_hex

    prof, _ = _profiles(tmp_path)
    rng = np.random.default_rng(3)
    rows = [(round(float(rng.uniform(0, 40)), 2), round(float(rng.uniform(0, 100)), 2),
             int(rng.integers(3))) for _ in range(200)]
    (tmp_path / "in.csv").write_text("".join("%s, %s, %d\n" % r for r in rows))
    out = zeal("perturb", "--profile", "m.json", "--input", "in.csv", "--seed", SEED,
               cwd=tmp_path).stdout.splitlines()
    # the reference sampler with the same words, reading the same exact decimals
    from fractions import Fraction
    ref = MP.MultiSampler(prof, CounterWords(key_from_hex(SEED)))
    want = [" ".join("%d:%d" % jy for jy in ref.sample((Fraction(str(a)), Fraction(str(b)), c)))
            for a, b, c in rows]
    assert out == want
    doc = json.loads(zeal("aggregate", "--profile", "m.json", "--input", "-", "--json",
                          cwd=tmp_path, input_text="\n".join(out)).stdout)
    reps = [[tuple(map(int, f.split(":"))) for f in line.split()] for line in out]
    idx = np.array([[j for j, _ in r] for r in reps])
    val = np.array([[y for _, y in r] for r in reps])
    exact = [a.as_dict() for a in MultiEstimator(prof.multi()).summarize(idx, val)]
    assert doc == {"n": 200, "attributes": json.loads(json.dumps(exact))}
    # a user's mistakes: one line each
    (tmp_path / "bad.csv").write_text("20, 50\n")
    done = zeal("perturb", "--profile", "m.json", "--input", "bad.csv", cwd=tmp_path,
                check=False)
    assert done.returncode == 1 and done.stderr == (
        "zeal: line 1: not 3 comma-separated readings (t, h, door)\n")
    done = zeal("aggregate", "--profile", "m.json", "--input", "-", cwd=tmp_path, check=False,
                input_text="0:1 2:9\n")
    assert done.returncode == 1 and done.stderr.startswith("zeal: line 1: ")


def test_perturb_and_aggregate_a_shuffle_profile(tmp_path):
    from fractions import Fraction

    import numpy as np

    from zeal.mechanism.shuffle import mechanism as S
    from zeal.mechanism.shuffle import profile as SP
    from zeal.mechanism.core.words import CounterWords, key_from_hex

    _, prof = _profiles(tmp_path)
    rng = np.random.default_rng(4)
    rows = [(round(float(rng.uniform(0, 40)), 2), round(float(rng.uniform(0, 100)), 2))
            for _ in range(300)]
    (tmp_path / "in.csv").write_text("".join("%s,%s\n" % r for r in rows))
    done = zeal("perturb", "--profile", "s.json", "--input", "in.csv", "--seed", SEED,
                cwd=tmp_path)
    assert "private only once a shuffler mixes them" in done.stderr
    out = done.stdout.splitlines()
    ref = SP.ShuffleSampler(prof, CounterWords(key_from_hex(SEED)))
    want = [str(m) for a, b in rows for m in ref.sample([Fraction(str(a)), Fraction(str(b))])]
    assert out == want and len(out) == 300 * prof.t
    doc = json.loads(zeal("aggregate", "--profile", "s.json", "--input", "-", "--json",
                          cwd=tmp_path, input_text="\n".join(out)).stdout)
    p = prof.params
    hist = np.zeros((p.d, p.levels), dtype=np.int64)
    for m in out:
        c, y = S.decode_message(p, int(m))
        hist[c, y] += 1
    means = S.Analyzer(p).estimate(hist)
    for c, d in enumerate(doc["coordinates"]):
        lo, hi = (Fraction(v) for v in prof.ranges[c])
        assert d["messages"] == int(hist[c].sum())
        assert d["mean"] == float(lo + (hi - lo) * means[c])


@pytest.mark.parametrize("opts", [[], ["--attributes"], ["--shuffle"]])
def test_a_serial_demo_refuses_a_postgresql_store_in_one_line(tmp_path, opts):
    done = zeal("demo", *opts, "--db", "postgresql://zeal@127.0.0.1:1/none", cwd=tmp_path,
                check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "zeal demo --mqtt --db postgresql://" in done.stderr


def test_a_store_of_several_kinds_analyses_every_kind(tmp_path):
    # a grid board, multi-attribute boards and a shuffler into one store: analyze gives each
    # kind's figures (before: the multi document alone, the grid's reports silently left out)
    for kind in ("grid", "multi", "shuffle"):
        (tmp_path / kind).mkdir()
        zeal("demo", *DEMOS[kind], "--db", "demo.db", cwd=tmp_path / kind)
        _copy_into(tmp_path / kind / "demo.db", tmp_path / "all.db")
    def no_link(doc):  # the copy carries frames, not the links' byte counts
        return {k: v for k, v in doc.items() if k != "wire_bits_per_report"}

    alone = {k: _analyze(tmp_path / k, "demo.db") for k in ("grid", "multi", "shuffle")}
    doc = _analyze(tmp_path, "all.db")
    # the first kind's keys, as alone
    assert no_link(doc["overall"]) == no_link(alone["grid"]["overall"])
    grid, shuffle, multi = doc["sections"]
    assert grid["devices"] == alone["grid"]["devices"] and multi == alone["multi"]
    assert shuffle["shuffle"] == alone["shuffle"]["shuffle"]
    text = zeal("analyze", "--db", "all.db", cwd=tmp_path).stdout
    assert "multi profile" in text and "MSE bound" in text and "overall" in text


def test_compress_a_table_profiles_reports_file(tmp_path):
    # zeal perturb's cells -> an archive -> the same calibrated mean as zeal aggregate
    zeal("profile", "--range", "0", "100", "--epsilon", "1", "--mechanism", "duchi", "-o",
         "t.json", cwd=tmp_path)
    (tmp_path / "r.txt").write_text("".join("%d\n" % (i % 100) for i in range(300)))
    zeal("perturb", "--profile", "t.json", "--input", "r.txt", "--seed", SEED, "-o",
         "reports.txt", cwd=tmp_path)
    zeal("compress", "--reports", "reports.txt", "--profile", "t.json", "--out", "a.zip",
         cwd=tmp_path)
    back = _analyze_archive(tmp_path, "a.zip")
    agg = json.loads(zeal("aggregate", "--profile", "t.json", "--input", "reports.txt",
                          "--json", cwd=tmp_path).stdout)
    assert back["overall"]["n"] == agg["n"] == 300
    assert back["overall"]["mean_calibrated"] == agg["mean_calibrated"]
    assert back["overall"]["kind"] == "table"
    # the exact entropy bound needs the grid's law: one line
    (tmp_path / "x.txt").write_text("".join("%d\n" % (i % 100) for i in range(300)))
    done = zeal("compress", "--reports", "reports.txt", "--profile", "t.json", "--readings",
                "x.txt", "--out", "b.zip", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "exact entropy bound" in done.stderr
    assert done.stderr.count("\n") == 1


def _analyze_archive(where, path):
    return json.loads(zeal("analyze", "--archive", path, "--json", cwd=where).stdout)


def test_an_archive_bounds_its_profile_files_in_total(tmp_path, monkeypatch):
    # table files are larger than a grid's (4,317 bytes at most against 502): what the reader
    # may hold in profiles stays what it was, in total, on both sides
    from zeal.analysis.compress import archive as A, archive_format
    from zeal.errors import ZealError

    zeal("profile", "--range", "0", "100", "--epsilon", "1", "--mechanism", "pm", "--bits",
         "3", "-o", "t.json", cwd=tmp_path)
    (tmp_path / "r.txt").write_text("".join("%d\n" % (i % 100) for i in range(50)))
    zeal("perturb", "--profile", "t.json", "--input", "r.txt", "-o", "reports.txt",
         cwd=tmp_path)
    zeal("compress", "--reports", "reports.txt", "--profile", "t.json", "--out", "a.zip",
         cwd=tmp_path)
    size = len(kinds.load(str(tmp_path / "t.json")).to_json().encode())
    assert size > A.PROFILE_MAX_FILE  # (a table's file: past a grid's longest)
    A.read(str(tmp_path / "a.zip"))   # within the caps
    monkeypatch.setattr(archive_format, "MAX_PROFILE_TOTAL", size - 1)  # where read looks
    with pytest.raises(ZealError, match="profile files hold more than"):
        A.read(str(tmp_path / "a.zip"))
