"""`zeal compress` and `zeal analyze --archive` (issue 9 item 4): the archive's answers equal
the database's exactly (the whole `analyze --json` document, on the demo's virtual boards and
on a store with every feature analyze reads: several profiles and devices, test-mode and DEBUG
frames, losses, STATUS errors and counters, link bytes), every codec round-trips through the
archive, the size table's figures are recomputed here from the codecs' own blobs and the
reports (the packer's size exactly: header + ceil(n m / 8) bytes per stream), a perturb file's
archive gives the Estimator's figures, and every broken input is one `zeal:` line.
No statistical test here: every check is exact.
"""
import json
import math
import os
import struct
import sys
import zipfile
from collections import Counter

import numpy as np
import pytest

from zeal import cli
from zeal.analysis import analyze as A
from zeal.analysis import compress
from zeal.analysis.compress import archive as R
from zeal.analysis.compress import rivals
from zeal.analysis.decode import Loaded
from zeal.collect.store import EventRecord, Store
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal.mechanism.grid import reports
from zeal.mechanism.grid.estimate import Estimator

from conftest import HUMIDITY
from test_analyze import DEV_A, DEV_B, DEV_C, fill, offsets

TABLE_KEYS = {"codec", "bits_per_report", "cr", "ratio_to_entropy", "mb_per_s"}


def zeal(capsys, *argv):
    """(exit code, stdout, stderr) of the CLI run in this process."""
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(capsys, *argv, match):
    rc, out, err = zeal(capsys, *argv)
    assert rc == 1 and out == "", (rc, out, err)
    assert err.startswith("zeal: ") and err.count("\n") == 1, err
    assert match in err, err
    return err


def analyze_json(capsys, *argv):
    rc, out, err = zeal(capsys, "analyze", *argv, "--json")
    assert rc == 0, err
    return out


# ---- databases ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """The demo's path: virtual boards (the firmware on the MicroPython unix port) ->
    collector -> SQLite; real (non-test-mode) frames. Returns (db, the readings)."""
    from zeal.analysis import datasets
    from zeal.demo import run_demo

    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    run_demo(db=db, count=600, devices=3, progress=False)
    readings = [float(t) for t in datasets.aarhus("humidity", 600)]
    return db, readings


@pytest.fixture
def rich_db(tmp_path):
    """Every feature analyze reads: two profiles, three devices (one with events only),
    several boots and batch sizes, test-mode and DEBUG frames, losses with and without a
    device, STATUS errors and DEBUG counters over two boots, bytes on two links."""
    path = str(tmp_path / "rich.db")
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 2.0, 16)
    with Store(path) as st:
        fill(st, p4, DEV_A, offsets(p4, 1, 9, 64))
        fill(st, p4, DEV_B, offsets(p4, 2, 5, 17), first_seq=3)
        fill(st, p16, DEV_A, offsets(p16, 3, 4, 64), boot=2)
        fill(st, p4, DEV_A, offsets(p4, 4, 3, 31), boot=3, first_seq=9)
        fill(st, p4, DEV_B, offsets(p4, 5, 2, 64), boot=0, vector=True)
        fill(st, p16, DEV_B, offsets(p16, 6, 3, 10), boot=4, debug=True)
        st.write(events=[
            EventRecord("reject", "crc", 2, device_id=DEV_A),
            EventRecord("reject", "cobs", 3, port="loop://"),
            EventRecord("gap", "seq 4..6", 5, device_id=DEV_B),
            EventRecord("reboot", "", 1, device_id=DEV_B),
            EventRecord("reject", "grid", 4, device_id=DEV_C),
            EventRecord("connect", "x", 1, port="loop://"),
            EventRecord("status", "OK ticks=10 frames_dropped=1", 1, device_id=DEV_A, time=1),
            EventRecord("status", "OK ticks=20 frames_dropped=3", 1, device_id=DEV_A, time=2),
            EventRecord("status", "OK ticks=5 frames_dropped=2", 1, device_id=DEV_A, time=3),
            EventRecord("status", "CRASH ticks=0 frames_dropped=0 MemoryError", 1,
                        device_id=DEV_C, time=4),
            EventRecord("status", "OK ticks=9 frames_dropped=0 replaced=2 clamped=1 debug", 1,
                        device_id=DEV_B, time=5)])
        for port, nbytes in (("loop://a", 12345), ("loop://b", 678)):
            st.close_link(st.open_link(port), nbytes)
    return path


# ---- the archive gives the database's answers ---------------------------------------------------
def test_demo_archive_equals_the_database(demo_db, tmp_path, capsys):
    db, _ = demo_db
    out = str(tmp_path / "demo.zip")
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out)
    assert rc == 0, err
    assert "archive written to %s" % out in text
    want = analyze_json(capsys, "--db", db)
    got = analyze_json(capsys, "--archive", out)
    assert got == want                                 # the document, byte for byte
    doc = json.loads(got)
    assert doc["overall"]["n"] == 600 and len(doc["devices"]) == 3
    rc, table_db, _ = zeal(capsys, "analyze", "--db", db)
    rc2, table_arc, _ = zeal(capsys, "analyze", "--archive", out)
    assert rc == rc2 == 0 and table_db == table_arc    # the table too


@pytest.mark.parametrize("vector", [False, True])
def test_rich_archive_equals_the_database(rich_db, tmp_path, capsys, vector):
    out = str(tmp_path / "rich.zip")
    rc, _, err = zeal(capsys, "compress", "--db", rich_db, "--out", out)
    assert rc == 0, err
    flag = ["--include-vector"] if vector else []
    want = analyze_json(capsys, "--db", rich_db, *flag)
    assert analyze_json(capsys, "--archive", out, *flag) == want
    doc = json.loads(want)
    o = doc["overall"]
    # the features are really there (the equality above is not between two empty documents)
    assert (o["rejected_frames"], o["gaps"], o["reboots"]) == (9, 5, 1)
    assert len(doc["profiles"]) == 2 and o["debug_reports"] == 30 and not o["private"]
    assert o["devices_with_errors"] == [DEV_C.hex()] and o["frames_dropped"] == 5
    assert o["n"] == 9 * 64 + 5 * 17 + 4 * 64 + 3 * 31 + 3 * 10 + (128 if vector else 0)


def test_every_codec_round_trips_through_the_archive(rich_db, tmp_path, capsys):
    want = analyze_json(capsys, "--db", rich_db, "--include-vector")
    names = list(compress.codecs())
    assert {"packed", "zstd", "lzma", "bz2"} <= set(names)
    for name in names:
        out = str(tmp_path / ("%s.zip" % name))
        rc, _, err = zeal(capsys, "compress", "--db", rich_db, "--out", out, "--codec", name)
        assert rc == 0, err
        with zipfile.ZipFile(out) as z:
            m = json.loads(z.read("manifest.json"))
        assert {s["codec"] for s in m["streams"]} == {name}
        assert analyze_json(capsys, "--archive", out, "--include-vector") == want, name


def test_archive_layout_and_the_smallest_codec_per_stream(rich_db, tmp_path, capsys):
    out = str(tmp_path / "best.zip")
    rc, _, err = zeal(capsys, "compress", "--db", rich_db, "--out", out, "--json", "--table")
    assert rc == 0, err
    with Store(rich_db, readonly=True) as st:
        data = Loaded(st, include_vector=True)
    with zipfile.ZipFile(out) as z:
        assert z.comment == b"zeal-archive 1" and z.testzip() is None
        m = json.loads(z.read("manifest.json"))
        assert (m["format"], m["version"], m["source"]) == ("zeal-archive", 1, "database")
        for fp in m["profiles"]:                       # the profile files, as written
            assert z.read("profiles/%s.json" % fp[:16]).decode() == data.profiles[fp].to_json()
        blobs = {s["entry"]: z.read(s["entry"]) for s in m["streams"]}
    # one stream per (device, profile, test-mode or not): A and B under p4, A and B under
    # p16, B's test-mode frames
    keys = {(s["device"], s["profile"], s["vector"]) for s in m["streams"]}
    assert len(keys) == len(m["streams"]) == 5
    every = compress.codecs()
    devices = [bytes.fromhex(d) for d in m["devices"]]
    nvec = sum(1 for r in data.rows if r[0] == DEV_B and r[1] == 0)
    # the adaptive codec's model is shared by the streams of a profile, in manifest order:
    # its context holds every earlier stream of the profile, whatever that stream's codec
    contexts, back_contexts = {}, {}
    for s in m["streams"]:
        prof = data.profiles[s["profile"]]
        # the stream's reports, from the database directly (frame by frame)
        mine = [r for i, r in enumerate(data.rows) if r[3] == s["profile"]
                and r[0] == devices[s["device"]] and (i >= len(data.rows) - nvec) == s["vector"]]
        bits = A.decode_values(prof, mine).view(np.uint64)
        assert s["n"] == bits.size
        ctx = contexts.setdefault(s["profile"], {})
        back = back_contexts.setdefault(s["profile"], {})
        sizes = {name: len(c.encode(bits, prof, context=ctx) if hasattr(c, "observe")
                           else c.encode(bits, prof)) for name, c in every.items()}
        assert len(blobs[s["entry"]]) == s["bytes"] == min(sizes.values())
        assert sizes[s["codec"]] == min(sizes.values())
        codec = every[s["codec"]]
        got = (codec.decode(blobs[s["entry"]], prof, context=back) if hasattr(codec, "observe")
               else codec.decode(blobs[s["entry"]], prof))
        assert np.array_equal(got, bits)
        if "adaptive" in every:
            every["adaptive"].observe(ctx, bits, prof)
            every["adaptive"].observe(back, bits, prof)


def test_frame_table_runs_are_exact():
    rng = np.random.default_rng(7)
    cases = [[], [5], [1, 1], [0, 1, 2, 3, 7, 7, 7, 2**40, -3], list(range(100)) * 3,
             rng.integers(-5, 5, 1000).tolist(), np.cumsum(rng.integers(0, 2, 500)).tolist()]
    for values in cases:
        spec = R.runs(values)
        assert R.unruns(spec, "x").tolist() == list(values)
        assert sum(k for _, _, k in spec) == len(values)
    assert len(R.runs(list(range(10**5)))) == 1        # seq + 1 per frame: one run


# ---- the size table -----------------------------------------------------------------------------
def test_size_table_figures(demo_db, tmp_path, capsys):
    db, readings = demo_db
    out = str(tmp_path / "t.zip")
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out, "--json", "--table")
    assert rc == 0, err
    doc = json.loads(text)
    assert {"n", "entropy_bits_per_report", "entropy_basis", "codecs"} <= set(doc)
    with Store(db, readonly=True) as st:
        data = Loaded(st, include_vector=True)
    (fp, prof), = data.profiles.items()
    j = data.offsets(fp)
    n = j.size
    assert doc["n"] == n == 600
    # plug-in entropy of the observed reports, recomputed here
    counts = Counter(j.tolist())
    h = -sum(c / n * math.log2(c / n) for c in counts.values())
    assert doc["entropy_basis"].startswith("plug-in")
    assert doc["entropy_bits_per_report"] == pytest.approx(h, rel=1e-12)
    assert [r["codec"] for r in doc["codecs"]] == list(compress.codecs())
    streams = json.load(zipfile.ZipFile(out).open("manifest.json"))["streams"]
    assert len(streams) == 3                           # one per board
    for r in doc["codecs"]:
        assert TABLE_KEYS <= set(r)
        assert r["bits_per_report"] == 8 * r["bytes"] / n
        assert r["cr"] == r["bits_per_report"] / 64
        assert r["ratio_to_entropy"] == r["bits_per_report"] / doc["entropy_bits_per_report"]
        assert r["mb_per_s"] > 0 and r["decode_mb_per_s"] > 0
    packed = {r["codec"]: r for r in doc["codecs"]}["packed"]
    header = len(rivals.Packed.MAGIC) + struct.calcsize(rivals.Packed.FMT)
    assert packed["bytes"] == sum(header + -(-s["n"] * prof.bits // 8) for s in streams)
    assert packed["bits_per_report"] >= prof.bits     # m bits a report, plus its headers
    # the archive holds the smallest codec per stream, plus its manifest and profile
    a = doc["archive"]
    assert a["bytes"] == os.path.getsize(out) and a["bits_per_report"] == 8 * a["bytes"] / n
    smallest = min(r["bytes"] for r in doc["codecs"])
    assert a["bytes"] > sum(s["bytes"] for s in streams) and \
        sum(s["bytes"] for s in streams) <= smallest
    # --readings: the exact bound of the readings behind these reports
    rfile = tmp_path / "readings.txt"
    rfile.write_text("\n".join(repr(x) for x in readings) + "\n")
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out, "--json",
                         "--readings", str(rfile))
    assert rc == 0, err
    exact = json.loads(text)
    assert exact["entropy_basis"].startswith("exact")
    from zeal.analysis.compress.entropy import entropy_bits_per_report
    assert exact["entropy_bits_per_report"] == entropy_bits_per_report(prof, readings)
    assert 0 < exact["entropy_bits_per_report"] <= math.log2(prof.n_cells)
    # the human table: a header naming the basis, one line per codec
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out, "--table")
    lines = text.splitlines()
    assert "plug-in" in lines[0] and "bits per report" in lines[0]
    assert [ln.split()[0] for ln in lines[3:3 + len(doc["codecs"])]] == list(compress.codecs())


# ---- a file of `zeal perturb` output ------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["bits", "low", "float"])
def test_reports_file_archive(tmp_path, capsys, fmt):
    prof_path = str(tmp_path / "p.json")
    assert zeal(capsys, "profile", "--range", *map(str, HUMIDITY), "--epsilon", "1",
                "--bits", "6", "-o", prof_path)[0] == 0
    rng = np.random.default_rng(11)
    xs = rng.uniform(*HUMIDITY, 3000)
    inp = tmp_path / "x.txt"
    inp.write_text("\n".join(repr(float(x)) for x in xs) + "\n")
    rep = str(tmp_path / "r.txt")
    assert zeal(capsys, "perturb", "--profile", prof_path, "--input", str(inp), "--seed", "0a",
                "--format", fmt, "-o", rep)[0] == 0
    prof = kinds.load(prof_path)
    with open(rep) as fh:
        j = np.array([reports.parse_line(prof, ln) - prof.k_lo for ln in fh], dtype=np.int64)
    rc, text, err = zeal(capsys, "compress", "--reports", rep, "--profile", prof_path,
                         "--readings", str(inp), "--json")
    assert rc == 0, err
    doc = json.loads(text)
    assert doc["n"] == 3000 and doc["entropy_basis"].startswith("exact")
    assert doc["archive"]["path"] == str(tmp_path / "r.zeal.zip")   # the default name
    got = json.loads(analyze_json(capsys, "--archive", doc["archive"]["path"]))
    s = Estimator(prof).summarize(j)
    o = got["overall"]
    assert got["source"] == "reports" and got["devices"] == []
    assert (o["n"], o["mean_calibrated"], o["ci99"], o["avg_star"]) == \
        (3000, s.mean_calibrated, list(s.ci99), s.avg_star)
    assert o["gaps"] is None and o["wire_bits_per_report"] is None   # absent, not zero
    rc, table, _ = zeal(capsys, "analyze", "--archive", doc["archive"]["path"])
    assert rc == 0 and "absent" in table and "NOT PRIVATE" not in table


# ---- one-line errors ----------------------------------------------------------------------------
def _rewrite(src, dst, change):
    """Copy an archive, passing (name, bytes) through change(name, data) -> bytes or None."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as w:
        for info in z.infolist():
            data = change(info.filename, z.read(info.filename))
            if data is not None:
                w.writestr(info.filename, data)


def test_bad_archives_are_one_line_errors(rich_db, tmp_path, capsys):
    good = str(tmp_path / "good.zip")
    assert zeal(capsys, "compress", "--db", rich_db, "--out", good, "--codec", "packed")[0] == 0
    bad = str(tmp_path / "bad.zip")
    one_line_error(capsys, "analyze", "--archive", str(tmp_path / "none.zip"),
                   match="does not exist")
    one_line_error(capsys, "analyze", "--archive", rich_db, match="not a zip file")
    with open(good, "rb") as fh:
        raw = fh.read()
    with open(bad, "wb") as fh:
        fh.write(raw[:len(raw) // 2])                  # truncated
    one_line_error(capsys, "analyze", "--archive", bad, match="not a zip file")

    def manifest(edit):
        def change(name, data):
            if name != "manifest.json":
                return data
            doc = json.loads(data)
            return None if edit is None else json.dumps(edit(doc))
        _rewrite(good, bad, change)

    manifest(lambda d: dict(d, version=3))
    one_line_error(capsys, "analyze", "--archive", bad, match="archive version 3; this zeal "
                   "reads versions 1 and 2")
    manifest(lambda d: dict(d, format="other"))
    one_line_error(capsys, "analyze", "--archive", bad, match="not a zeal archive")
    manifest(None)
    one_line_error(capsys, "analyze", "--archive", bad, match="manifest.json is missing")
    manifest(lambda d: dict(d, streams=[dict(s, codec="nosuch") for s in d["streams"]]))
    one_line_error(capsys, "analyze", "--archive", bad, match="unknown codec 'nosuch'")
    manifest(lambda d: dict(d, streams=[dict(s, n=s["n"] + 1) for s in d["streams"]]))
    one_line_error(capsys, "analyze", "--archive", bad, match="the manifest says")
    manifest(lambda d: dict(d, frames=dict(d["frames"], count=[[1, 0, 1]])))
    one_line_error(capsys, "analyze", "--archive", bad, match="frame columns")
    # a report off its profile's grid: the packed low bits of stream 0 all set
    def off_grid(name, data):
        if name == "streams/0":
            head = len(rivals.Packed.MAGIC) + struct.calcsize(rivals.Packed.FMT)
            return data[:head] + b"\xff" * (len(data) - head)
        return data
    _rewrite(good, bad, off_grid)
    one_line_error(capsys, "analyze", "--archive", bad, match="outside the profile's grid")
    # a flipped byte in a stored blob: the zip's CRC-32 catches it
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("streams/0")
        at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
    damaged = bytearray(raw)
    damaged[at] ^= 0x40
    with open(bad, "wb") as fh:
        fh.write(bytes(damaged))
    one_line_error(capsys, "analyze", "--archive", bad, match="is damaged")


def test_missing_codec_library_names_the_package(rich_db, tmp_path, capsys, monkeypatch):
    if "zstd" not in compress.codecs():
        pytest.fail("zstandard is a test dependency (pip install 'zeal-mcu[test]')")
    out = str(tmp_path / "z.zip")
    assert zeal(capsys, "compress", "--db", rich_db, "--out", out, "--codec", "zstd")[0] == 0
    monkeypatch.setitem(sys.modules, "zstandard", None)
    assert "zstd" not in compress.codecs()
    one_line_error(capsys, "analyze", "--archive", out,
                   match="needs the Python package 'zstandard': pip install zstandard")
    one_line_error(capsys, "compress", "--db", rich_db, "--codec", "zstd",
                   match="pip install zstandard")


def test_compress_usage_errors(rich_db, tmp_path, capsys):
    one_line_error(capsys, "compress", "--db", rich_db, "--codec", "nosuch",
                   match="unknown codec 'nosuch'")
    one_line_error(capsys, "compress", match="give --db FILE or --reports FILE")
    one_line_error(capsys, "compress", "--reports", rich_db, match="needs --profile")
    one_line_error(capsys, "compress", "--db", str(tmp_path / "no.db"), match="does not exist")
    readings = tmp_path / "r.txt"
    readings.write_text("1.5\n2.5\n")
    one_line_error(capsys, "compress", "--db", rich_db, "--readings", str(readings),
                   match="under one profile")
    readings.write_text("1.5\nnan\n")
    one_line_error(capsys, "compress", "--db", rich_db, "--readings", str(readings),
                   match="line 2: not a finite decimal")
    one_line_error(capsys, "compress", "--db", rich_db, "--out",
                   str(tmp_path / "no-dir" / "a.zip"), match="cannot write")
    one_line_error(capsys, "analyze", "--db", rich_db, "--archive", "x.zip",
                   match="give --db FILE or --archive ARCHIVE")
    one_line_error(capsys, "analyze", "--archive", "x.zip", "--plots", str(tmp_path),
                   match="--plots needs --db")
    empty = str(tmp_path / "empty.db")
    Store(empty).close()
    one_line_error(capsys, "compress", "--db", empty, match="no reports stored")
