"""`zeal compress` at scale (issue "Scale: a billion reports in constant memory"): by default
the archive tries only its cheap codecs (packed, adaptive), never the slow ones (lzma, bz2,
...), which run with --table; the store is read page by page (Store.iter_frames), never whole;
a grid's streams are coded block by block from a spill, byte for byte what the codecs make of
the whole array; the streams, frame table and archive equal what the whole-store path made.
Behaviour only: no timing and no memory figure is asserted here (tools/bench_scale.py
measures them)."""
import json
import zipfile

import numpy as np
import pytest

from zeal import cli
from zeal.analysis import compress
from zeal.analysis.compress import archive as A
from zeal.analysis.compress import archive_format as F
from zeal.analysis.compress import command as C
from zeal.analysis.compress import rivals, spill as SP, store_streams as SS, streamed
from zeal.analysis.compress import streams as SH
from zeal.analysis.compress.archive_frames import RunsBuilder, runs
from zeal.analysis.decode import Loaded
from zeal.collect.store import EventRecord, Store
from zeal.errors import ZealError
from zeal.mechanism.grid import profile as P

from conftest import HUMIDITY
from test_analyze import DEV_A, DEV_B, fill, offsets

SLOW = {"greedygd", "zstd", "lz4", "bz2", "lzma", "pcodec", "rans"}


@pytest.fixture
def rich_db(tmp_path):
    """Three profiles (4, 16 and 52 bits), two devices, several boots and batch sizes,
    test-mode and DEBUG frames (test_archive's store and a 52-bit profile, without its events
    but a few), and streams short enough (30 16-bit reports) that packed beats adaptive."""
    path = str(tmp_path / "rich.db")
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 2.0, 16)
    p52 = P.from_bits(*HUMIDITY, 1.0, 52)
    with Store(path) as st:
        fill(st, p4, DEV_A, offsets(p4, 1, 9, 64))
        fill(st, p4, DEV_B, offsets(p4, 2, 5, 17), first_seq=3)
        fill(st, p16, DEV_A, offsets(p16, 3, 4, 64), boot=2)
        fill(st, p4, DEV_A, offsets(p4, 4, 3, 31), boot=3, first_seq=9)
        fill(st, p4, DEV_B, offsets(p4, 5, 2, 64), boot=0, vector=True)
        fill(st, p16, DEV_B, offsets(p16, 6, 3, 10), boot=4, debug=True)
        fill(st, p52, DEV_B, offsets(p52, 7, 3, 64), boot=5)
        st.write(events=[EventRecord("gap", "seq 4..6", 5, device_id=DEV_B),
                         EventRecord("reject", "cobs", 3, port="loop://"),
                         EventRecord("status", "OK ticks=10 frames_dropped=1", 1,
                                     device_id=DEV_A, time=1)])
        st.close_link(st.open_link("loop://a"), 12345)
    return path


def zeal(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def spy(monkeypatch):
    """{codec name: calls of its encode}, for every codec of the registry except the default
    ones; lzma's also refuses to run when `refuse` holds (a failing test, not a slow one)."""
    calls = {name: 0 for name in SLOW}
    refuse = []

    def wrap(name, cls, attr):
        orig = getattr(cls, attr)

        def counted(self, *a, **k):
            if name == "lzma" and refuse:
                raise AssertionError("lzma ran without --table")
            calls[name] += 1
            return orig(self, *a, **k)
        monkeypatch.setattr(cls, attr, counted)

    from zeal.analysis.compress import greedygd, kind_codecs

    for name, cls in (("zstd", rivals.Zstd), ("lz4", rivals.Lz4), ("bz2", rivals.Bz2),
                      ("lzma", rivals.Lzma), ("pcodec", rivals.Pcodec), ("rans", rivals.Rans),
                      ("rans", kind_codecs.PairsRans), ("rans", kind_codecs.MessagesRans),
                      ("greedygd", type(greedygd.CODEC))):
        wrap(name, cls, "encode")
    return calls, refuse


def test_the_default_run_tries_only_the_cheap_codecs(rich_db, tmp_path, capsys,
                                                     spy):
    calls, refuse = spy
    refuse.append(True)
    out = str(tmp_path / "a.zip")
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out", out, "--json")
    assert rc == 0, err
    doc = json.loads(text)
    tried = [c for c in C.DEFAULT_CODECS if c in compress.codecs()]
    assert [r["codec"] for r in doc["codecs"]] == tried and doc["table"] is False
    assert sum(calls.values()) == 0, calls
    assert set(doc["archive"]["stream_codecs"]) <= set(tried)
    for r in doc["codecs"]:          # the table's keys, as with --table
        assert {"codec", "bits_per_report", "cr", "ratio_to_entropy", "mb_per_s",
                "decode_mb_per_s", "bytes"} <= set(r)
        assert r["bits_per_report"] == 8 * r["bytes"] / doc["n"]
    # the text says what --table adds
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out", out)
    assert rc == 0 and "--table measures every available codec" in text
    assert sum(calls.values()) == 0, calls
    # --codec runs what it names, and nothing else
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out", out, "--json",
                         "--codec", "bz2")
    assert rc == 0, err
    assert [r["codec"] for r in json.loads(text)["codecs"]] == ["bz2"]
    assert calls["bz2"] > 0 and sum(calls.values()) == calls["bz2"]
    # --table: every codec, lzma included (which the refusal above would fail)
    with pytest.raises(AssertionError, match="lzma ran without --table"):
        cli.main(["compress", "--db", rich_db, "--out", out, "--table"])
    refuse.clear()
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out", out, "--json",
                         "--table")
    assert rc == 0, err
    doc = json.loads(text)
    assert [r["codec"] for r in doc["codecs"]] == list(compress.codecs()) and doc["table"]
    assert calls["lzma"] > 0 and all(calls[c] > 0 for c in SLOW if c in compress.codecs())


def test_packed_is_sized_not_run_where_adaptive_is_smaller(rich_db, tmp_path,
                                                          capsys, monkeypatch):
    if "adaptive" not in compress.codecs():
        pytest.skip("constriction not installed")
    made = []
    orig = streamed.packed_encode
    monkeypatch.setattr(streamed, "packed_encode", lambda *a: made.append(1) or orig(*a))
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out",
                         str(tmp_path / "a.zip"), "--json")
    assert rc == 0, err
    doc = json.loads(text)
    rows = {r["codec"]: r for r in doc["codecs"]}
    used = doc["archive"]["stream_codecs"]
    # packed made only on the streams it takes (the short ones here: adaptive's header and
    # learning cost more than it saves on 30 reports), its size computed on the others
    assert 0 < used.count("packed") < len(used) and len(made) == used.count("packed")
    assert rows["packed"]["computed"] is True and "computed" not in rows["adaptive"]
    # its size is packed's own: --table makes every blob
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out",
                         str(tmp_path / "b.zip"), "--json", "--table")
    table = {r["codec"]: r for r in json.loads(text)["codecs"]}
    assert table["packed"]["bytes"] == rows["packed"]["bytes"]
    assert table["adaptive"]["bytes"] == rows["adaptive"]["bytes"]


def test_the_default_archive_is_the_table_s_of_the_same_codecs(rich_db, tmp_path,
                                                              capsys):
    """Streamed from the spill or measured whole (--table), the same candidates give the same
    archive, byte for byte; and it reads back as the database."""
    a, b = str(tmp_path / "a.zip"), str(tmp_path / "b.zip")
    names = [c for c in C.DEFAULT_CODECS if c in compress.codecs()]
    assert zeal(capsys, "compress", "--db", rich_db, "--out", a)[0] == 0
    assert zeal(capsys, "compress", "--db", rich_db, "--out", b, "--table", "--codec",
                *names)[0] == 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        assert fa.read() == fb.read()
    for flag in ([], ["--include-vector"]):
        assert zeal(capsys, "analyze", "--archive", a, "--json", *flag)[1] == \
            zeal(capsys, "analyze", "--db", rich_db, "--json", *flag)[1]


def test_the_store_is_read_page_by_page(rich_db, tmp_path, capsys, monkeypatch):
    """Never Store.frames (the whole store at once); every page at most PAGE frames; a grid
    stream is never read into memory whole by the default run."""
    pages = []
    orig = Store.iter_frames

    def paged(self, **kw):
        assert kw.get("chunk") is not None
        for rows in orig(self, **kw):
            pages.append(len(rows))
            yield rows

    def whole(*a, **k):
        raise AssertionError("a stream read whole")
    monkeypatch.setattr(Store, "iter_frames", paged)
    monkeypatch.setattr(Store, "frames", lambda *a, **k: whole())
    monkeypatch.setattr(SS.SpilledStream, "bits", whole)
    monkeypatch.setattr(SS, "PAGE", 4)
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out",
                         str(tmp_path / "a.zip"), "--json")
    assert rc == 0, err
    assert len(pages) > 5 and max(pages) <= 4
    with zipfile.ZipFile(str(tmp_path / "a.zip")) as z:
        frames = json.loads(z.read("manifest.json"))["frames"]["count"]
    assert sum(pages) == sum(k for _, _, k in frames)      # every frame, once


def test_the_cap_is_refused_before_the_store_is_read(tmp_path, capsys, monkeypatch):
    """Past MAX_REPORTS the read stops at the page that goes past it: one line, as write's."""
    db = str(tmp_path / "s.db")
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    with Store(db) as st:
        fill(st, prof, DEV_A, offsets(prof, 1, 40, 8))
    monkeypatch.setattr(F, "MAX_REPORTS", 20)
    monkeypatch.setattr(SS, "PAGE", 2)
    pages = []
    orig = Store.iter_frames

    def paged(self, **kw):
        for rows in orig(self, **kw):
            pages.append(len(rows))
            yield rows
    monkeypatch.setattr(Store, "iter_frames", paged)
    rc, out, err = zeal(capsys, "compress", "--db", db, "--out", str(tmp_path / "a.zip"))
    assert rc == 1 and err.count("\n") == 1
    assert "32 reports or more" in err and "at most 20" in err, err
    assert sum(pages) == 4                       # 2 pages of 2 frames of 8 read, not 40


# ---- the pieces ---------------------------------------------------------------------------------
def test_store_streams_are_database_streams(rich_db, monkeypatch):
    """Page by page (pages of 3 frames, a spill flushing every few bytes) the streams, frame
    table, devices and events are those of the whole-store path (database_streams)."""
    monkeypatch.setattr(SS, "PAGE", 3)
    with Store(rich_db, readonly=True) as st:
        data = Loaded(st, include_vector=True)
        nvec = len(st.frames(vector=True))
    devices, cols, streams = A.database_streams(data, [0] * (len(data.rows) - nvec)
                                                + [1] * nvec)
    with SP.Spill(buffer=50) as spill:
        src = SS.read_database(rich_db, spill)
        assert src.devices == devices and list(src.profiles) == list(data.by_fp)
        assert {k: v.tolist() for k, v in src.frames.items()} == \
            {name: runs(cols[name]) for name in F.COLUMNS}
        assert src.nframes == len(data.rows)
        assert [(s.device, s.fp, s.vector, s.n) for s in src.streams] == \
            [(s.device, s.fp, s.vector, s.n) for s in streams]
        for mine, want in zip(src.streams, streams):
            assert np.array_equal(mine.bits(), want.bits) and mine.symbols == want.symbols
        for fp in data.by_fp:                  # the plug-in entropy's counts
            _, want = np.unique(data.offsets(fp), return_counts=True)
            assert sorted(src.counts[fp].counts().tolist()) == sorted(want.tolist())
        assert src.link_bytes == data.link_bytes == 12345
        assert src.statuses == [[DEV_A.hex(), "OK ticks=10 frames_dropped=1"]]
        assert src.losses == [[None, "reject", 3], [DEV_B.hex(), "gap", 5]]


def test_runs_builder_is_runs():
    rng = np.random.default_rng(3)
    cases = [[], [5], [1, 1], [0, 1, 2, 3, 7, 7, 7, 2**40, -3], list(range(100)) * 3,
             [-2**63, 2**63 - 1, 0, 5],                     # steps that wrap, as runs' do
             rng.integers(-5, 5, 1000).tolist(), np.cumsum(rng.integers(0, 2, 500)).tolist(),
             np.repeat(rng.integers(0, 4, 200), rng.integers(1, 40, 200)).tolist()]
    for values in cases:
        for piece in (1, 2, 3, 7, 64, 10**6):
            b = RunsBuilder()
            for at in range(0, len(values), piece):
                b.add(values[at:at + piece])
            got = b.done()
            assert got.tolist() == runs(values), (values[:20], piece)
            assert "".join(got.json_chunks(per=5)) == json.dumps(runs(values),
                                                                 separators=(",", ":"))


def test_spill_reads_back_what_was_appended():
    rng = np.random.default_rng(5)
    want = {k: [] for k in range(5)}
    with SP.Spill(buffer=300) as sp:
        for _ in range(200):
            k = int(rng.integers(0, 5))
            v = rng.integers(0, 1 << 16, int(rng.integers(0, 90)))
            sp.append(k, v, dtype=np.uint16)
            want[k].append(v)
            if rng.random() < 0.1:           # a blob between the appends
                w = sp.blob()
                w.write(b"abc")
                w.write(b"de")
                assert bytes(w.done()) == b"abcde"
        for k, parts in want.items():
            all_ = np.concatenate(parts) if parts else np.zeros(0, np.uint16)
            assert sp.count(k) == all_.size
            for _ in range(30):
                lo = int(rng.integers(0, all_.size + 1))
                hi = int(rng.integers(lo, all_.size + 2))
                assert np.array_equal(sp.read(k, lo, hi), all_[lo:hi])


def test_counts_are_the_distinct_reports_counts():
    """Counts (the plug-in entropy's): a bincount for small grids, else the distinct values
    merged page by page: np.unique's counts of the whole either way."""
    rng = np.random.default_rng(4)
    for per, top, size in ((1, 13, 13), (1, 1 << 40, None), (2, 50, None), (4, 3, None)):
        c, seen = SS.Counts(size), []
        for _ in range(60):
            v = rng.integers(0, top, per * int(rng.integers(0, 5000))).astype(np.uint64)
            c.add(v, per)
            seen.append(v.reshape(-1, per))
        _, want = np.unique(np.concatenate(seen), axis=0, return_counts=True)
        assert sorted(c.counts().tolist()) == sorted(want.tolist())


def _stream(spill, prof, j):
    return SS.read_offsets(prof, np.asarray(j), spill).streams[0]


@pytest.mark.parametrize("bits", [2, 4, 8, 16, 52])
def test_streamed_codecs_are_the_codecs_byte_for_byte(bits):
    """packed and adaptive from a spill, a block at a time (BLOCK = 2^16 reports; blocks of
    adaptive's model doubling from 32), with and without a prior from earlier streams: the
    blobs of rivals.Packed and AdaptiveOffsets on the whole array, each checked by decoding."""
    if "adaptive" not in compress.codecs():
        pytest.skip("constriction not installed")
    rng = np.random.default_rng(bits)
    prof = P.from_bits(*HUMIDITY, 1.0, bits)
    packed, adaptive = compress.get("packed"), compress.get("adaptive")
    for n in (1, 31, 33, 1000, 2 * streamed.BLOCK + 5):
        if bits == 52:
            j = rng.integers(0, min(prof.n_cells, 1 << 40), n)
        else:
            j = np.minimum(rng.geometric(0.3, n) - 1 + prof.n_cells // 3, prof.n_cells - 1)
        with SP.Spill(buffer=10000) as sp:
            s = _stream(sp, prof, j)
            whole = A.report_bits(prof, j)
            blob = streamed.packed_encode(s, sp)
            assert bytes(blob) == packed.encode(whole, prof)
            assert len(blob) == streamed.packed_size(s)
            streamed.packed_check(s, blob, packed)
            for prior in (None, s.hist * 3 + 1):
                blob = streamed.adaptive_encode(s, sp, adaptive._coder, prior)
                ctx = {} if prior is None else {"j": prior}
                assert bytes(blob) == adaptive.encode(whole, prof, context=ctx)
                streamed.adaptive_check(s, blob, adaptive._coder, prior)


def test_the_streamed_checks_refuse_a_blob_that_is_not_the_stream():
    if "adaptive" not in compress.codecs():
        pytest.skip("constriction not installed")
    prof = P.from_bits(*HUMIDITY, 1.0, 6)
    rng = np.random.default_rng(9)
    j = rng.integers(0, prof.n_cells, 5000)
    other = j.copy()
    other[4321] = (other[4321] + 1) % prof.n_cells
    packed, adaptive = compress.get("packed"), compress.get("adaptive")
    with SP.Spill() as sp, SP.Spill() as sp2:
        s, t = _stream(sp, prof, j), _stream(sp2, prof, other)
        streamed.packed_check(s, streamed.packed_encode(s, sp), packed)     # (its own: good)
        with pytest.raises(A.ArchiveError, match="packed does not decode"):
            streamed.packed_check(s, streamed.packed_encode(t, sp2), packed)
        streamed.adaptive_check(s, streamed.adaptive_encode(s, sp, adaptive._coder),
                                adaptive._coder)
        blob = streamed.adaptive_encode(t, sp2, adaptive._coder)
        with pytest.raises(A.ArchiveError, match="adaptive does not decode"):
            streamed.adaptive_check(s, blob, adaptive._coder)
        with pytest.raises(A.ArchiveError, match="adaptive does not decode"):
            streamed.adaptive_check(s, blob, adaptive._coder, s.hist)   # another prior


def test_packed_size_is_packed_s_size_for_every_shape():
    """The size encode_each puts for packed where it does not run it: exactly the blob's."""
    from zeal.mechanism.multi import profile as MP
    from zeal.mechanism.multi.mechanism import Categorical, Numeric
    from zeal.mechanism.shuffle import profile as SHP

    rng = np.random.default_rng(2)
    multi = MP.build([Numeric("t", 0, 40), Numeric("h", 0, 100, mechanism="duchi"),
                      Categorical("door", ("shut", "open", "ajar"))], 2, k=2)
    shuffle = SHP.build_from(epsilon=1.0, delta=1e-6, n=3000, d=3, k=3, t=1)
    limits = np.array(multi.value_limits())
    pairs = []
    for _ in range(300):
        js = np.sort(rng.choice(multi.d, multi.k, replace=False))
        for a in js:
            pairs += [a, rng.integers(0, limits[a])]
    p = shuffle.params
    messages = (rng.integers(0, p.d, 500) | (rng.integers(0, p.k + 1, 500) << p.coord_bits))
    with SP.Spill() as sp:
        for prof, sym, n in ((multi, np.array(pairs, dtype=np.uint64), 300),
                             (shuffle, messages.astype(np.uint64), 500)):
            s = SS.SpilledStream(sp, ("x", prof.fingerprint), 0, prof.fingerprint, False, prof)
            sp.append(s.key, sym[:0], dtype=np.uint64)
            s.add(sym, n)
            SH.shape_of(prof).check(prof, sym, "test")
            coder = A.stream_codec("packed", compress.get("packed"), prof)
            assert streamed.packed_size(s) == len(coder.encode(sym, prof))


def test_a_missing_codec_library_falls_back_to_packed(rich_db, tmp_path, capsys,
                                                      monkeypatch):
    """Without constriction (adaptive's library) the default archive is packed."""
    real = compress.codecs
    monkeypatch.setattr(compress, "codecs", lambda: {k: v for k, v in real().items()
                                                     if k != "adaptive"})
    rc, text, err = zeal(capsys, "compress", "--db", rich_db, "--out",
                         str(tmp_path / "a.zip"), "--json")
    assert rc == 0, err
    doc = json.loads(text)
    assert [r["codec"] for r in doc["codecs"]] == ["packed"]
    assert set(doc["archive"]["stream_codecs"]) == {"packed"}
    with zipfile.ZipFile(str(tmp_path / "a.zip")) as z:
        assert z.testzip() is None


def test_an_unknown_codec_is_still_one_line(rich_db, capsys):
    with pytest.raises(ZealError, match="unknown codec"):
        C.cmd_compress(type("A", (), {"db": rich_db, "reports": None, "codec": ["nosuch"],
                                      "table": False, "readings": None, "profile": None,
                                      "out": None, "json": True})())
