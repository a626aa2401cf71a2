"""Volumes (issue "Scale: a billion reports in constant memory"; shared_spec/archive.md,
"Volumes"): a store past VOLUME_REPORTS reports (or VOLUME_FRAMES frames) is written by
`zeal compress` as a set of archives, each complete, cut at frame boundaries in the frame
table's order, volume 1 holding the events; `zeal analyze --archive` on any volume reads them
all in turn, one at a time, and gives the database's document figure for figure. A store that
fits in one volume gives the archive of before volumes, byte for byte. The volume size is
lowered here as the caps are lowered by the other archive tests (the modules read it through
archive_format: F.VOLUME_REPORTS)."""
import gc
import json
import os
import shutil
import weakref
import zipfile

import numpy as np
import pytest

from zeal import cli
from zeal.analysis import compress
from zeal.analysis.compress import archive as A
from zeal.analysis.compress import archive_format as F
from zeal.analysis.compress import archive_read as AR
from zeal.analysis.compress import archive_volumes as V
from zeal.analysis.compress import store_streams as SS
from zeal.analysis.compress.archive_frames import unruns
from zeal.analysis.decode import Loaded
from zeal.collect.store import EventRecord, Store
from zeal.mechanism.grid import profile as P

from conftest import HUMIDITY
from test_analyze import DEV_A, DEV_B, DEV_C, fill, offsets
from test_kinds import _copy_into
from test_kinds import zeal as zeal_sub


def zeal(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def compress_json(capsys, db, out, *extra):
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out, "--json", *extra)
    assert rc == 0, err
    return json.loads(text)


def analyze_text(capsys, *argv):
    rc, text, err = zeal(capsys, "analyze", *argv, "--json")
    assert rc == 0, err
    return text


def one_line_error(capsys, *argv):
    rc, out, err = zeal(capsys, *argv)
    assert rc == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err, \
        (rc, out, err)
    return err


def manifest(path) -> dict:
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(F.MANIFEST))


def frame_table(m) -> list:
    """Every frame of a manifest as (device id, profile, vector, count, debug, boot, seq)."""
    cols = {c: unruns(m["frames"][c], c).tolist() for c in F.COLUMNS}
    return [(m["devices"][d], m["profiles"][p], v, c, g, b, s)
            for d, p, v, c, g, b, s in zip(*(cols[c] for c in F.COLUMNS))]


# ---- stores -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """{kind: --db}: the demo's stores (window grid, 2 boards; table profile `pm`, 3 boards;
    both in one store), each a few thousand reports, and a store of every feature analyze
    reads (three profiles, test-mode and DEBUG frames, several boots, losses, STATUS events,
    bytes on two links)."""
    where = tmp_path_factory.mktemp("volumes")
    out = {}
    for kind, options in (("grid", ["--count", "3000", "--devices", "2"]),
                          ("pm", ["--mechanism", "pm", "--count", "2500", "--devices", "3"])):
        (where / kind).mkdir()
        zeal_sub("demo", *options, "--db", "demo.db", cwd=where / kind)
        out[kind] = str(where / kind / "demo.db")
    shutil.copy(out["grid"], where / "mixed.db")
    _copy_into(out["pm"], where / "mixed.db")
    out["mixed"] = str(where / "mixed.db")
    out["rich"] = str(where / "rich.db")
    p4, p16 = P.from_bits(*HUMIDITY, 1.0, 4), P.from_bits(*HUMIDITY, 2.0, 16)
    p52 = P.from_bits(*HUMIDITY, 1.0, 52)
    with Store(out["rich"]) as st:
        fill(st, p4, DEV_A, offsets(p4, 1, 9, 64))
        fill(st, p4, DEV_B, offsets(p4, 2, 5, 17), first_seq=3)
        fill(st, p16, DEV_A, offsets(p16, 3, 4, 64), boot=2)
        fill(st, p4, DEV_A, offsets(p4, 4, 3, 31), boot=3, first_seq=9)
        fill(st, p4, DEV_B, offsets(p4, 5, 2, 64), boot=0, vector=True)
        fill(st, p16, DEV_B, offsets(p16, 6, 3, 10), boot=4, debug=True)
        fill(st, p52, DEV_B, offsets(p52, 7, 3, 64), boot=5)
        fill(st, p4, DEV_C, offsets(p4, 8, 2, 64), boot=1, vector=True)
        st.write(events=[
            EventRecord("reject", "crc", 2, device_id=DEV_A),
            EventRecord("reject", "cobs", 3, port="loop://"),
            EventRecord("gap", "seq 4..6", 5, device_id=DEV_B),
            EventRecord("reboot", "", 1, device_id=DEV_B),
            EventRecord("status", "OK ticks=10 frames_dropped=1", 1, device_id=DEV_A, time=1),
            EventRecord("status", "OK ticks=5 frames_dropped=2", 1, device_id=DEV_A, time=3),
            EventRecord("status", "CRASH ticks=0 frames_dropped=0 MemoryError", 1,
                        device_id=DEV_C, time=4),
            EventRecord("status", "OK ticks=9 frames_dropped=0 replaced=2 clamped=1 debug", 1,
                        device_id=DEV_B, time=5)])
        for port, nbytes in (("loop://a", 12345), ("loop://b", 678)):
            st.close_link(st.open_link(port), nbytes)
    return out


def store_reports(db) -> tuple:
    """(reports, frames) of the store, test-mode ones included."""
    with Store(db, readonly=True) as st:
        rows = st.frames(vector=False) + st.frames(vector=True)
    return sum(r[4] for r in rows), len(rows)


# ---- a set of volumes is the store --------------------------------------------------------------
@pytest.mark.parametrize("kind,size", [("grid", 700), ("pm", 600), ("mixed", 1100),
                                       ("rich", 300)])
def test_a_set_of_volumes_analyzes_as_the_database(stores, tmp_path, capsys, monkeypatch,
                                                   kind, size):
    db = stores[kind]
    n, nframes = store_reports(db)
    monkeypatch.setattr(F, "VOLUME_REPORTS", size)
    out = str(tmp_path / "s.zeal.zip")
    doc = compress_json(capsys, db, out)
    paths = doc["volumes"]
    k = len(paths)
    assert k >= 3 and k >= -(-n // size), (k, n, size)
    assert paths == [out] + [str(tmp_path / ("s.v%d.zeal.zip" % i)) for i in range(2, k + 1)]
    assert doc["archive"]["path"] == out and doc["n"] == n
    assert doc["archive"]["bytes"] == sum(os.path.getsize(p) for p in paths)
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in paths)
    # each volume a complete archive, readable alone, of the same set; the events in volume 1
    sets, table = set(), []
    for i, p in enumerate(paths, 1):
        m = manifest(p)
        assert (m["volume"], m["volumes"]) == (i, k) and list(m)[2:5] == ["volume", "volumes",
                                                                           "set"]
        sets.add(m["set"])
        arc = A.read(p)
        assert (arc.volume, arc.volumes, arc.set_id) == (i, k, m["set"])
        reports = sum(f[3] for f in frame_table(m))
        assert reports == arc.n and (reports <= size or len(frame_table(m)) == 1)
        if i > 1:
            assert (m["losses"], m["statuses"], m["link_bytes"]) == ([], [], 0)
        table.append(frame_table(m))
    assert len(sets) == 1 and len(next(iter(sets))) == F.SET_HEX
    # consecutive runs of the frame table, cut where the next frame would not fit
    monkeypatch.setattr(F, "VOLUME_REPORTS", 1 << 40)
    one = str(tmp_path / "one" / "a.zeal.zip")
    os.mkdir(os.path.dirname(one))
    whole = compress_json(capsys, db, one)
    assert whole["volumes"] == [one] and "volume" not in manifest(one)
    assert [f for t in table for f in t] == frame_table(manifest(one))
    assert len(frame_table(manifest(one))) == nframes
    for t, after in zip(table, table[1:]):
        assert sum(f[3] for f in t) <= size < sum(f[3] for f in t) + after[0][3]
    m1 = manifest(one)
    assert (manifest(out)["losses"], manifest(out)["statuses"], manifest(out)["link_bytes"]) \
        == (m1["losses"], m1["statuses"], m1["link_bytes"])
    assert whole["n"] == doc["n"] == n
    # analyze --archive on any volume: the database's document, whole
    for flag in ([], ["--include-vector"]):
        want = analyze_text(capsys, "--db", db, *flag)
        for p in (paths[0], paths[1], paths[-1]):
            assert analyze_text(capsys, "--archive", p, *flag) == want, (p, flag)
    # the text table says where the volumes are; stderr, each volume as it is made
    monkeypatch.setattr(F, "VOLUME_REPORTS", size)
    rc, text, err = zeal(capsys, "compress", "--db", db, "--out", out)
    assert rc == 0 and "in %d volumes" % k in text and paths[-1] in text
    assert [line.split(":")[0] for line in err.splitlines()[:k]] == \
        ["volume %d" % i for i in range(1, k + 1)]


def test_frames_cut_volumes_too(stores, tmp_path, capsys, monkeypatch):
    """Past VOLUME_FRAMES frames a volume is cut whatever its reports."""
    db = stores["rich"]
    _, nframes = store_reports(db)
    monkeypatch.setattr(F, "VOLUME_FRAMES", 7)
    doc = compress_json(capsys, db, str(tmp_path / "f.zeal.zip"))
    frames = [len(frame_table(manifest(p))) for p in doc["volumes"]]
    assert frames == [7] * (nframes // 7) + ([nframes % 7] if nframes % 7 else [])
    for flag in ([], ["--include-vector"]):
        assert analyze_text(capsys, "--archive", doc["volumes"][1], *flag) == \
            analyze_text(capsys, "--db", db, *flag)


def test_a_store_that_fits_is_the_archive_of_before_volumes(stores, tmp_path, capsys,
                                                            monkeypatch):
    """Within one volume (the default size here, or exactly its reports): no volume keys,
    byte for byte the archive made with a volume size past any store; one report more than
    the volume and there are two."""
    db = stores["grid"]
    n, _ = store_reports(db)
    got = {}
    for name, size in (("default", F.VOLUME_REPORTS), ("exact", n), ("huge", 1 << 40)):
        monkeypatch.setattr(F, "VOLUME_REPORTS", size)
        out = str(tmp_path / ("%s.zeal.zip" % name))
        doc = compress_json(capsys, db, out)
        assert doc["volumes"] == [out]
        with open(out, "rb") as fh:
            got[name] = fh.read()
    assert got["default"] == got["exact"] == got["huge"]
    assert not set(manifest(str(tmp_path / "default.zeal.zip"))) & {"volume", "volumes", "set"}
    assert sorted(os.listdir(tmp_path)) == ["default.zeal.zip", "exact.zeal.zip",
                                            "huge.zeal.zip"]
    monkeypatch.setattr(F, "VOLUME_REPORTS", n - 1)
    assert len(compress_json(capsys, db, str(tmp_path / "two.zeal.zip"))["volumes"]) == 2


# ---- missing and foreign volumes ----------------------------------------------------------------
@pytest.fixture
def volume_set(stores, tmp_path, capsys, monkeypatch):
    """(the store, [paths]) of a grid store in 4 or more volumes."""
    monkeypatch.setattr(F, "VOLUME_REPORTS", 700)
    doc = compress_json(capsys, stores["grid"], str(tmp_path / "g.zeal.zip"))
    assert len(doc["volumes"]) >= 4
    return stores["grid"], doc["volumes"]


def test_a_missing_volume_is_one_line(volume_set, capsys):
    db, paths = volume_set
    os.remove(paths[2])
    for given in (paths[0], paths[-1]):
        err = one_line_error(capsys, "analyze", "--archive", given)
        assert "volume 3 of %d" % len(paths) in err and paths[2] in err, err
    os.remove(paths[0])                                   # volume 1, the events' volume
    err = one_line_error(capsys, "analyze", "--archive", paths[1])
    assert "volume 1" in err and "missing" in err and paths[0] in err, err


def test_a_volume_of_another_set_is_refused(volume_set, tmp_path, capsys, monkeypatch):
    db, paths = volume_set
    other = str(tmp_path / "other" / "g.zeal.zip")
    os.mkdir(os.path.dirname(other))
    theirs = compress_json(capsys, db, other)["volumes"]      # the same store, another set
    assert len(theirs) == len(paths)
    shutil.copy(theirs[1], paths[1])
    mine, foreign = manifest(paths[0])["set"], manifest(theirs[0])["set"]
    assert mine != foreign
    err = one_line_error(capsys, "analyze", "--archive", paths[0])
    assert paths[1] in err and foreign in err and "not volume 2 of %d of set %s" \
        % (len(paths), mine) in err, err
    # another count of volumes, and an archive without volumes, in a volume's place
    monkeypatch.setattr(F, "VOLUME_REPORTS", 1000)
    fewer = compress_json(capsys, db, str(tmp_path / "other" / "h.zeal.zip"))["volumes"]
    shutil.copy(fewer[1], paths[1])
    assert "not volume 2 of" in one_line_error(capsys, "analyze", "--archive", paths[-1])
    monkeypatch.setattr(F, "VOLUME_REPORTS", 1 << 40)
    plain = compress_json(capsys, db, str(tmp_path / "other" / "p.zeal.zip"))["volumes"]
    shutil.copy(plain[0], paths[1])
    err = one_line_error(capsys, "analyze", "--archive", paths[0])
    assert "an archive without volumes" in err and paths[1] in err, err
    # a volume renamed away from its set's names: its others cannot be found
    shutil.copy(paths[2], str(tmp_path / "renamed.zeal.zip"))
    err = one_line_error(capsys, "analyze", "--archive", str(tmp_path / "renamed.zeal.zip"))
    assert "cannot be found" in err or "missing" in err, err


def test_the_reader_holds_one_volume_at_a_time(volume_set, capsys, monkeypatch):
    """When a volume is read, no earlier volume (its Archive or its data) is alive."""
    db, paths = volume_set
    live = []
    reads = []
    orig_read, orig_loaded = AR.read, AR.Archive.loaded

    def read(path):
        gone = [r() is None for r in live]
        reads.append((path, all(gone)))
        arc = orig_read(path)
        live.append(weakref.ref(arc))
        return arc

    def loaded(self, include_vector=False):
        data = orig_loaded(self, include_vector)
        live.append(weakref.ref(data))
        return data
    monkeypatch.setattr(AR, "read", read)
    monkeypatch.setattr(A, "read", read)
    monkeypatch.setattr(AR.Archive, "loaded", loaded)
    gc.collect()
    for given in (paths[0], paths[2]):
        reads.clear()
        live.clear()
        assert analyze_text(capsys, "--archive", given) == analyze_text(capsys, "--db", db)
        # the given volume, then each volume in turn (volume 1 again only if another was given)
        want = [given] + [p for p in paths if p != given or given != paths[0]]
        assert [p for p, _ in reads] == want
        assert all(ok for _, ok in reads[1:]), reads


# ---- the manifest's volume keys -----------------------------------------------------------------
def rewrite(src, dst, change) -> str:
    """The archive `src` copied to `dst` with its manifest changed by change(manifest)."""
    with zipfile.ZipFile(src) as z:
        items = [(info, z.read(info)) for info in z.infolist()]
        comment = z.comment
    with zipfile.ZipFile(dst, "w") as z:
        z.comment = comment
        for info, data in items:
            if info.filename == F.MANIFEST:
                m = json.loads(data)
                change(m)
                data = json.dumps(m, separators=(",", ":")).encode()
            z.writestr(info, data)
    return dst


@pytest.mark.parametrize("change,match", [
    (lambda m: m.pop("set"), "this one has volume, volumes only"),
    (lambda m: m.pop("volume"), "this one has volumes, set only"),
    (lambda m: m.update(volume=0), "volume keys are damaged"),
    (lambda m: m.update(volume=m["volumes"] + 1), "volume keys are damaged"),
    (lambda m: m.update(volume=True), "volume keys are damaged"),
    (lambda m: m.update(volume=2.0), "the number 2.0"),
    (lambda m: m.update(volumes=F.MAX_VOLUMES + 1), "volume keys are damaged"),
    (lambda m: m.update(volumes=-1), "volume keys are damaged"),
    (lambda m: m.update(set=m["set"][:-1] + "A"), "volume keys are damaged"),
    (lambda m: m.update(set=m["set"][:-1]), "volume keys are damaged"),
    (lambda m: m.update(set=7), "volume keys are damaged"),
    (lambda m: m.update(link_bytes=5), "volume 2 holds events"),
    (lambda m: m.update(statuses=[[None, "OK ticks=1 frames_dropped=0"]]),
     "volume 2 holds events"),
    (lambda m: m.update(losses=[[None, "reject", 1]]), "volume 2 holds events"),
])
def test_the_volume_keys_are_checked(volume_set, tmp_path, capsys, change, match):
    db, paths = volume_set
    bad = rewrite(paths[1], str(tmp_path / "bad.v2.zeal.zip"), change)
    with pytest.raises(A.ArchiveError, match=match):
        A.read(bad)
    assert "Traceback" not in one_line_error(capsys, "analyze", "--archive", bad)


def test_volume_keys_of_a_lone_archive_and_of_a_reports_file(volume_set, tmp_path):
    db, paths = volume_set
    # the keys of a set of one are valid (zeal writes none), and the archive reads as before
    one = rewrite(paths[0], str(tmp_path / "one.zeal.zip"), lambda m: m.update(volumes=1))
    assert A.read(one).volumes == 1
    # volume keys on a reports file's archive are refused
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    j = np.arange(40) % prof.n_cells
    bits = A.report_bits(prof, j)
    blob = compress.get("packed").encode(bits, prof)
    path = str(tmp_path / "r.zeal.zip")
    A.write(path, source="reports", profiles={prof.fingerprint: prof}, devices=[],
            columns=None, streams=[A.Stream(None, prof.fingerprint, False, bits)],
            chosen=[("packed", blob)], volume=(1, 2, "0" * F.SET_HEX))
    with pytest.raises(A.ArchiveError, match="only a database's archive comes in volumes"):
        A.read(path)


# ---- writing ------------------------------------------------------------------------------------
def test_finalize_gives_the_bytes_write_makes(stores, tmp_path):
    """A volume written with "volumes": 0 and given its count by `finalize` is, byte for
    byte, the volume `write` makes with that count."""
    with Store(stores["rich"], readonly=True) as st:
        data = Loaded(st, include_vector=True)
        nvec = len(st.frames(vector=True))
    devices, cols, streams = A.database_streams(data, [0] * (len(data.rows) - nvec)
                                                + [1] * nvec)
    profiles = {fp: data.profiles[fp] for fp in data.by_fp}
    kw = dict(source="database", profiles=profiles, devices=devices, columns=cols,
              streams=streams, chosen=[("packed", compress.get("packed").encode(
                  s.bits, profiles[s.fp])) for s in streams], losses=[], statuses=[],
              link_bytes=0)
    set_id = V.new_set_id()
    temp = str(tmp_path / "t.part")
    A.write(temp, volume=(2, 0, set_id), **kw)
    size = A.finalize(temp, str(tmp_path / "v.v2.zeal.zip"), 12)
    A.write(str(tmp_path / "direct.zip"), volume=(2, 12, set_id), **kw)
    with open(str(tmp_path / "v.v2.zeal.zip"), "rb") as a, \
            open(str(tmp_path / "direct.zip"), "rb") as b:
        assert a.read() == b.read()
    assert size == os.path.getsize(str(tmp_path / "direct.zip"))
    assert not os.path.exists(temp)
    assert A.read(str(tmp_path / "v.v2.zeal.zip")).volumes == 12


def test_volume_names():
    assert V.volume_path("a/s.zeal.zip", 1) == "a/s.zeal.zip"
    assert V.volume_path("a/s.zeal.zip", 7) == "a/s.v7.zeal.zip"
    assert V.volume_path("a/s.zip", 2) == "a/s.zip.v2.zeal.zip"
    with pytest.raises(A.ArchiveError, match="not named NAME.v3.zeal.zip"):
        V.first_volume("a/s.v2.zeal.zip", 3)


def test_an_out_without_the_suffix_still_names_a_readable_set(stores, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setattr(F, "VOLUME_REPORTS", 1000)
    db = stores["grid"]
    doc = compress_json(capsys, db, str(tmp_path / "store.zip"))
    assert doc["volumes"][:2] == [str(tmp_path / "store.zip"),
                                  str(tmp_path / "store.zip.v2.zeal.zip")]
    want = analyze_text(capsys, "--db", db)
    assert analyze_text(capsys, "--archive", doc["volumes"][-1]) == want
    assert analyze_text(capsys, "--archive", doc["volumes"][0]) == want


def test_past_max_volumes_is_refused_and_leaves_nothing(stores, tmp_path, capsys,
                                                        monkeypatch):
    monkeypatch.setattr(F, "VOLUME_REPORTS", 700)
    monkeypatch.setattr(F, "MAX_VOLUMES", 2)
    err = one_line_error(capsys, "compress", "--db", stores["grid"], "--out",
                         str(tmp_path / "g.zeal.zip"), "--json")
    assert "more than 2 volumes of 700 reports" in err, err
    assert os.listdir(tmp_path) == []
    # without --json, the progress lines of the volumes made, then the error's line
    rc, out, err = zeal(capsys, "compress", "--db", stores["grid"], "--out",
                        str(tmp_path / "g.zeal.zip"))
    assert rc == 1 and err.splitlines()[:2] == [
        "volume 1: 640 reports in 10 frames coded (written last, with the store's events)",
        "volume 2: 640 reports in 10 frames coded"], err
    assert err.splitlines()[2:] == ["zeal: the store needs more than 2 volumes of 700 reports"]
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def multi_store(stores, tmp_path_factory):
    """A grid demo's store with a multi-attribute demo's frames after its own."""
    where = tmp_path_factory.mktemp("volumes-multi")
    zeal_sub("demo", "--attributes", "--count", "400", "--db", "multi.db", cwd=where)
    shutil.copy(stores["grid"], where / "both.db")
    _copy_into(where / "multi.db", where / "both.db")
    return str(where / "both.db")


def test_a_store_with_multi_reports_is_one_archive(multi_store, tmp_path, capsys,
                                                   monkeypatch):
    """Volumes hold window-grid and table reports (whose analysis takes frames a piece at a
    time): a store with frames of another kind is one archive, as before volumes (within the
    caps of one archive); and frames of another kind that come after a cut are refused."""
    monkeypatch.setattr(F, "VOLUME_REPORTS", 700)
    out = str(tmp_path / "m.zeal.zip")
    doc = compress_json(capsys, multi_store, out)
    assert doc["volumes"] == [out] and "volume" not in manifest(out)
    assert analyze_text(capsys, "--archive", out) == analyze_text(capsys, "--db",
                                                                  multi_store)
    # the kinds as the store lists them first hide the multi profile, and pages of 4 frames
    # bring it after a cut
    monkeypatch.setattr(Store, "frame_fingerprints", lambda self, vector=False: [])
    monkeypatch.setattr(SS, "PAGE", 4)
    err = one_line_error(capsys, "compress", "--db", multi_store, "--out",
                         str(tmp_path / "n.zeal.zip"), "--json")
    assert "came after the store was cut into volumes" in err, err
    assert sorted(os.listdir(tmp_path)) == ["m.zeal.zip"]
