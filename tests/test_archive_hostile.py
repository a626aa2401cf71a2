"""Hostile archives (issue 18, finding 7): `zeal analyze --archive` reads an archive from anyone
with a limit on every decompressed size and count (compress.archive_format's docstring states
them and why), and every archive past a limit ends in one `zeal:` line, exit 1, no traceback,
having held little memory: each test runs the CLI in this process under tracemalloc (numpy's
arrays included) and bounds the peak (4 MB). The bombs are the finding's, at sizes quick here but
past the caps (the old reader took 1.3 GB for a 400 MB stream, 862 MB for a 400 MB manifest,
2.4 GB and a traceback for a frame-table run of 3e8; tracebacks for a run of 1e13, non-hex
device ids and a deeply nested manifest). Where a cap is lowered for speed the test says so;
a legitimate archive at the lowered cap still reads, and `zeal compress` refuses to write
past it. Also `zeal export` on a damaged row whose count is 99999999999999999: one line, the
same as `zeal analyze` gives for it.
"""
import bz2
import json
import lzma
import sqlite3
import struct
import tracemalloc
import zipfile

import lz4.frame
import numpy as np
import pytest

from zeal import cli
from zeal.analysis.compress import archive as A
from zeal.analysis.compress import archive_format   # where read and write look up the caps
from zeal.analysis.compress import get, greedygd, rivals
from zeal.collect.store import Store
from zeal.mechanism.grid import profile as P

from conftest import HUMIDITY
from test_analyze import DEV_A, DEV_B, fill, offsets

MB = 1 << 20
BOMB = 64 * MB          # what each stream bomb decompresses to: far past its 8 n bytes


# ---- helpers ------------------------------------------------------------------------------------
def run(capsys, *argv):
    """(exit code, stdout, stderr, peak traced memory in bytes) of the CLI in this process."""
    tracemalloc.start()
    try:
        rc = cli.main(list(argv))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    return rc, out, err, peak


def refused(capsys, path, match, limit_mb=4, command="analyze"):
    """The archive is refused in one `zeal:` line, exit 1, with a traced peak under limit_mb."""
    rc, out, err, peak = run(capsys, command, "--archive", str(path))
    assert rc == 1 and out == "", (rc, out[:200], err[:2000])
    assert err.startswith("zeal: ") and err.count("\n") == 1, err[:2000]
    assert peak < limit_mb * MB, "peak %.1f MB: %s" % (peak / MB, err)
    assert "Traceback" not in err and match in err, err
    return err


def legit(tmp_path, codec="packed", name="good.zip", frames=6, batch=8, bits=4):
    """A small archive of two devices under one `bits`-bit profile, each stream in `codec`."""
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    rng = np.random.default_rng(7)
    dev = np.arange(frames) % 2
    cols = {"device": dev, "profile": np.zeros(frames, np.int64),
            "vector": np.zeros(frames, np.int64), "count": np.full(frames, batch),
            "debug": np.zeros(frames, np.int64), "boot": np.ones(frames, np.int64),
            "seq": np.arange(frames) // 2}
    streams = [A.Stream(d, prof.fingerprint, False,
                        A.report_bits(prof, rng.integers(0, prof.n_cells,
                                                         int((dev == d).sum()) * batch)))
               for d in (0, 1)]
    c = get(codec)
    sizes = {codec: {"blobs": [c.encode(s.bits, prof) for s in streams]}}
    path = str(tmp_path / name)
    A.write(path, source="database", profiles={prof.fingerprint: prof}, devices=[DEV_A, DEV_B],
            columns=cols, streams=streams, sizes=sizes, candidates=[codec],
            losses=[[DEV_A.hex(), "gap", 2]], statuses=[[DEV_A.hex(), "OK ticks=1 "
                                                                       "frames_dropped=0"]],
            link_bytes=1000)
    return path


def rewrite(src, dst, change=lambda name, data: data, method=None, extra=()):
    """Copy an archive, each entry through change(name, bytes) -> bytes (None: left out),
    written with `method` (default: the entry's own), then the (name, bytes) of `extra`."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as w:
        w.comment = z.comment
        for info in z.infolist():
            data = change(info.filename, z.read(info.filename))
            if data is not None:
                w.writestr(info.filename, data, compress_type=method or info.compress_type)
        for name, data in extra:
            w.writestr(name, data)
    return dst


def edit_manifest(src, dst, edit):
    """Copy an archive with its manifest passed through edit(doc) -> doc, or -> text."""
    def change(name, data):
        if name != A.MANIFEST:
            return data
        doc = edit(json.loads(data))
        return doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    return rewrite(src, dst, change)


def stream_bomb(src, dst, blob):
    """The archive with streams/0 replaced by `blob` (its codec as the manifest names it)."""
    return rewrite(src, dst, lambda name, data: blob if name == "streams/0" else data)


def analyze_ok(capsys, path):
    rc, out, err, _ = run(capsys, "analyze", "--archive", str(path), "--json")
    assert rc == 0, err
    return json.loads(out)


# ---- the legitimate archive still reads ---------------------------------------------------------
@pytest.mark.parametrize("codec", ["packed", "zstd", "lzma", "bz2", "lz4", "pcodec", "rans",
                                   "greedygd", "adaptive"])
def test_a_legitimate_archive_still_reads(tmp_path, capsys, codec):
    doc = analyze_ok(capsys, legit(tmp_path, codec))
    assert doc["overall"]["n"] == 48 and doc["overall"]["gaps"] == 2


# ---- stream bombs: a codec blob that decompresses far past its 8 n bytes ------------------------
def _zstd_bomb(content_size: bool) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(write_content_size=content_size).compress(bytes(BOMB))


BOMBS = {
    "lzma": lambda: lzma.compress(bytes(BOMB), preset=0),
    "bz2": lambda: bz2.compress(bytes(BOMB), 9),
    "zstd": lambda: _zstd_bomb(True),                # the frame says 64 MiB: refused unread
    "zstd-no-size": lambda: _zstd_bomb(False),       # it does not: decoded until 8 n + 1
    # lz4 compresses at most ~255:1, so 8 MiB (33 KB), inside the entry cap of 24 reports
    "lz4": lambda: lz4.frame.compress(bytes(8 * MB)),
}


@pytest.mark.parametrize("kind", list(BOMBS))
def test_a_stream_that_decompresses_past_its_reports_is_refused_unread(tmp_path, capsys, kind):
    codec = kind.split("-")[0]
    src = legit(tmp_path, codec)
    bad = stream_bomb(src, str(tmp_path / "bomb.zip"), BOMBS[kind]())
    refused(capsys, bad, "more than the 24 reports expected")


def test_a_stream_whose_codec_header_claims_too_many_reports(tmp_path, capsys):
    """Blobs that cost nothing to make: a GreedyGD stream of constant records has empty
    sections whatever its n (2^27 here: the old reader built 1 GiB arrays of it); a packed or
    rans header names its n; a rans model of 2^52 zero-width counts; pcodec's own n."""
    const = np.full(24, np.uint64(0x3FF0000000000000))
    ggd = bytearray(greedygd.compress(const).to_bytes())
    struct.pack_into("<Q", ggd, 8, 1 << 27)                    # n, after magic, version, width
    src = legit(tmp_path, "greedygd")
    refused(capsys, stream_bomb(src, str(tmp_path / "g.zip"), bytes(ggd)),
            "more than the 24 expected")
    packed = rivals.Packed.MAGIC + struct.pack(rivals.Packed.FMT, 1 << 40, 4)
    src = legit(tmp_path, "packed", "p.zip")
    refused(capsys, stream_bomb(src, str(tmp_path / "p2.zip"), packed), "more than the 24")
    # rans at m = 52: a model of 2^30 zero-width counts (the old reader: 8 GiB of zeros)
    prof = P.from_bits(*HUMIDITY, 1.0, 52)
    src = legit(tmp_path, "rans", "r.zip", bits=52)
    t = (prof.n_cells - 1).bit_length()
    shift = t - 30
    rans = rivals.Rans.MAGIC + struct.pack(rivals.Rans.FMT, 24, t, shift,
                                           ((prof.n_cells - 1) >> shift) + 1, 0)
    refused(capsys, stream_bomb(src, str(tmp_path / "r2.zip"), rans + bytes(8)),
            "rans: blob header out of range")
    from pcodec import ChunkConfig, standalone

    src = legit(tmp_path, "pcodec", "c.zip")
    blob = standalone.simple_compress(np.zeros(1 << 22, dtype=np.uint64), ChunkConfig())
    refused(capsys, stream_bomb(src, str(tmp_path / "c2.zip"), blob), "more than the 24")


def test_a_stored_stream_entry_past_its_cap_is_not_read(tmp_path, capsys):
    """A stream entry deflated by the zip itself (the writer stores them): 64 MiB of zeros in
    a few KB, refused by its declared size (stream_bytes_cap(24) = 1 MiB + 195 bytes)."""
    src = legit(tmp_path, "packed")
    bad = rewrite(src, str(tmp_path / "big.zip"),
                  lambda name, data: bytes(BOMB) if name == "streams/0" else data,
                  method=zipfile.ZIP_DEFLATED)
    err = refused(capsys, bad, "entry streams/0 is %d bytes; at most " % BOMB)
    assert "at most %d (" % A.stream_bytes_cap(24) in err


# ---- the manifest -------------------------------------------------------------------------------
def test_a_deflated_manifest_past_the_cap_is_not_read(tmp_path, capsys):
    """A valid manifest padded with 210 MB of spaces (past MAX_MANIFEST_BYTES, about 200 MB),
    deflated to ~200 KB: refused by its declared size. The old reader read and parsed it (and
    went on: exit 0)."""
    src = legit(tmp_path)
    dst = str(tmp_path / "fat.zip")
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as w:
        for info in z.infolist():
            data = z.read(info.filename)
            if info.filename != A.MANIFEST:
                w.writestr(info.filename, data, compress_type=info.compress_type)
                continue
            info.compress_type = zipfile.ZIP_DEFLATED
            size = len(data) + 210 * MB
            with w.open(info, "w") as fh:
                fh.write(data[:-1])
                spaces = b" " * MB
                for _ in range(210):
                    fh.write(spaces)
                fh.write(data[-1:])
    err = refused(capsys, dst, "entry manifest.json is %d bytes; at most " % size)
    assert "at most %d (" % A.MAX_MANIFEST_BYTES in err and size > A.MAX_MANIFEST_BYTES


def test_a_deeply_nested_manifest_is_one_line(tmp_path, capsys):
    src = legit(tmp_path)
    deep = edit_manifest(src, str(tmp_path / "deep.zip"),
                         lambda d: json.dumps(d)[:-1] + ', "x": ' + "[" * 100000
                         + "]" * 100000 + "}")
    refused(capsys, deep, "nests deeper than 8 levels")
    # brackets inside strings are text, not nesting: a legitimate manifest may hold them
    ok = edit_manifest(src, str(tmp_path / "ok.zip"),
                       lambda d: dict(d, statuses=[[DEV_A.hex(), "OK ticks=1 frames_dropped=0 "
                                                    + "[{" * 50 + '\\"' + "]}" * 50]]))
    assert analyze_ok(capsys, ok)["overall"]["n"] == 48


@pytest.mark.parametrize("devices,match", [
    (["zz" * 8, DEV_B.hex()], "the device list"),
    ([DEV_A.hex(), 17], "the device list"),
    ([DEV_A.hex(), DEV_A.hex()], "the device list"),
])
def test_device_ids_that_are_not_hex_are_one_line(tmp_path, capsys, devices, match):
    src = legit(tmp_path)
    refused(capsys, edit_manifest(src, str(tmp_path / "d.zip"), lambda d: dict(d, devices=devices)),
            match)


@pytest.mark.parametrize("field,value,match", [
    ("losses", [["not hex", "gap", 1]], "a loss entry"),
    ("losses", [[DEV_A.hex(), "gap", 1.5]], "the number 1.5"),
    ("statuses", [[DEV_A.hex(), "OK ticks=" + "9" * 5000 + " frames_dropped=0"]],
     "a STATUS entry"),
    ("statuses", [["xyz", "OK ticks=1 frames_dropped=0"]], "a STATUS entry"),
    ("link_bytes", True, "the frame table or events"),
    ("profiles", ["../../etc/passwd"], "the profile list"),
])
def test_damaged_manifest_fields_are_one_line(tmp_path, capsys, field, value, match):
    src = legit(tmp_path)
    refused(capsys, edit_manifest(src, str(tmp_path / "f.zip"),
                                  lambda d: dict(d, **{field: value})), match)


# ---- the frame table ----------------------------------------------------------------------------
def _frames(runs_by_column):
    def edit(d):
        frames = dict(d["frames"], **runs_by_column)
        return dict(d, frames=frames)
    return edit


@pytest.mark.parametrize("runs,match", [
    # the finding's run of 3e8 frames (the old reader: 2.4 GB, then a traceback)
    ({"seq": [[0, 1, 300_000_000]]}, "300000000 frames or more; an archive holds at most "
                                     "1048576"),
    ({"device": [[0, 0, 10 ** 13]]}, "10000000000000 frames or more"),      # 1e13
    ({c: [[1 if c == "count" else 0, 0, 1 << 20 | 1]] for c in A.COLUMNS},
     "1048577 frames or more"),                                              # every column
    ({"device": [[0, 1, 6]]}, "frame column device has a value outside 0..1"),
    ({"count": [[8, 0, 5], [0, 0, 1]]}, "frame column count has a value outside 1..255"),
    ({"seq": [[0, 1 << 62, 6]]}, "frame column seq has a value outside"),
    ({"boot": [[1, 0, 6.0]]}, "the number 6.0"),
    ({"boot": [[1, 0, True] for _ in range(6)]}, "frame column boot is damaged"),
    ({"debug": [[0, 0, 0]]}, "frame column debug is damaged"),
])
def test_frame_table_runs_past_the_caps_are_one_line(tmp_path, capsys, runs, match):
    src = legit(tmp_path)
    refused(capsys, edit_manifest(src, str(tmp_path / "t.zip"), _frames(runs)), match)


def test_a_consistent_claim_of_many_reports_is_refused_before_decoding(tmp_path, capsys):
    """Frames and streams that agree on 2^26 reports (past MAX_REPORTS) from a rans blob of a
    few bytes: refused from the manifest, nothing decoded."""
    src = legit(tmp_path, "rans")

    def edit(d):
        d["streams"] = [dict(d["streams"][0], n=1 << 26)]
        d["frames"] = {c: [[v, 0, 1 << 18]] for c, v in
                       (("device", 0), ("profile", 0), ("vector", 0), ("count", 255),
                        ("debug", 0), ("boot", 1), ("seq", 0))}
        return d
    err = refused(capsys, edit_manifest(src, str(tmp_path / "many.zip"), edit),
                  "67108864 reports or more; an archive holds at most ")
    assert "at most %d (" % A.MAX_REPORTS in err and 1 << 26 > A.MAX_REPORTS
    # within MAX_REPORTS per stream, but streams summing past it
    def edit2(d):
        d["streams"] = [dict(s, n=A.MAX_REPORTS // 2 + 1) for s in d["streams"]]
        return d
    refused(capsys, edit_manifest(src, str(tmp_path / "sum.zip"), edit2),
            "%d reports or more; an archive holds at most %d"
            % (2 * (A.MAX_REPORTS // 2 + 1), A.MAX_REPORTS))
    # a stream's n that its frames do not give it, however small: refused before decoding
    def edit3(d):
        d["streams"][0]["n"] = 10 ** 6
        return d
    refused(capsys, edit_manifest(src, str(tmp_path / "n.zip"), edit3),
            "the frame table gives streams/0 24 reports, the manifest says 1000000")


# ---- the zip itself -----------------------------------------------------------------------------
def test_a_zip_directory_past_the_entry_cap_is_not_read(tmp_path, capsys, monkeypatch):
    """zipfile reads the whole central directory on opening: its end record is checked first
    (MAX_ENTRIES lowered to 8 for speed; the real cap is 1 + MAX_PROFILES + MAX_STREAMS)."""
    monkeypatch.setattr(archive_format, "MAX_ENTRIES", 8, raising=False)
    src = legit(tmp_path)
    bad = rewrite(src, str(tmp_path / "many.zip"),
                  extra=[("junk/%d" % i, b"") for i in range(20)])
    refused(capsys, bad, "lists 24 entries")


def test_zip_entries_the_writer_never_makes_are_one_line(tmp_path, capsys):
    src = legit(tmp_path)
    lz = rewrite(src, str(tmp_path / "lz.zip"), method=zipfile.ZIP_LZMA)
    refused(capsys, lz, "uses zip compression method 14")
    raw = bytearray(open(src, "rb").read())
    at = raw.find(b"PK\x01\x02")                  # the first directory record: encrypted flag
    raw[at + 8] |= 1
    enc = tmp_path / "enc.zip"
    enc.write_bytes(bytes(raw))
    refused(capsys, enc, "is encrypted")


# ---- caps hold both ways: compress writes only what analyze reads ------------------------------
def test_compress_refuses_past_the_caps_and_analyze_reads_at_them(tmp_path, capsys, monkeypatch):
    """With MAX_REPORTS lowered to 48 (this store's reports) an archive is written and read;
    at 47 compress refuses in one line and so would analyze."""
    db = str(tmp_path / "s.db")
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    with Store(db) as st:
        fill(st, prof, DEV_A, offsets(prof, 1, 6, 8))
    out = str(tmp_path / "s.zip")
    monkeypatch.setattr(archive_format, "MAX_REPORTS", 48, raising=False)
    rc, _, err, _ = run(capsys, "compress", "--db", db, "--out", out)
    assert rc == 0, err
    assert analyze_ok(capsys, out)["overall"]["n"] == 48
    monkeypatch.setattr(archive_format, "MAX_REPORTS", 47, raising=False)
    rc, _, err, _ = run(capsys, "compress", "--db", db, "--out", str(tmp_path / "t.zip"))
    assert rc == 1 and err.count("\n") == 1 and "48 reports" in err and "at most 47" in err, err
    refused(capsys, out, "48 reports or more; an archive holds at most 47")


# ---- zeal export on a damaged row ---------------------------------------------------------------
def test_export_refuses_a_row_whose_count_is_past_the_wire_cap(tmp_path, capsys):
    db = str(tmp_path / "x.db")
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    with Store(db) as st:
        fill(st, prof, DEV_A, offsets(prof, 1, 3, 8))
    con = sqlite3.connect(db)
    con.execute("UPDATE frames SET count = 99999999999999999 WHERE seq = 1")
    con.commit()
    con.close()
    lines = []
    for argv in (["export", "--db", db, "-o", str(tmp_path / "x.csv")],
                 ["export", "--db", db, "-o", str(tmp_path / "x.parquet"), "--format",
                  "parquet"],
                 ["analyze", "--db", db]):
        rc, out, err, peak = run(capsys, *argv)
        assert rc == 1 and err.startswith("zeal: ") and err.count("\n") == 1, (argv, err)
        assert "count 99999999999999999 is outside 1..255" in err, err
        assert peak < 4 * MB
        lines.append(err)
    assert lines[0] == lines[2]           # export says what analyze says of the row
