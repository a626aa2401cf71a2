"""The store behind one interface (zeal.collect.store.open_store): SQLite files and PostgreSQL
URLs (PgStore) on a real throw-away server (tests/pg_server.py). Profiles of
every kind on both backends; the commands (collect, analyze, events, export, compress) with
`--db postgresql://...` giving what they give on SQLite; two processes writing the same frames
at once store each frame once; PostgreSQL's refusals are one-line errors. The store's
behaviour tests run on both backends in test_store.py / test_store_robust.py (marked BOTH)."""
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from zeal import wire
from zeal.analysis import shuffle_report
from zeal.cli import main as cli_main
from zeal.collect.store import (EventRecord, FrameRecord, StoreError, UnresolvedRecord,
                                open_store)
from zeal.mechanism.multi import profile as MP
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal.mechanism.shuffle import profile as SP
from zeal.mechanism.table import profile as TP
from zeal.mechanism.multi.mechanism import Categorical, Numeric

from conftest import HOST, HUMIDITY

PROF = P.from_bits(*HUMIDITY, 1.0, 4)
NONCE = bytes.fromhex("0102030405060708")
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    """A fresh database of each kind: a file path or a postgresql:// URL."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "zeal.db")


def frame(seq, *, device=b"dev-0001", lows=(1, 2, 3), prof=PROF, arrival=None):
    return FrameRecord(device_id=device, boot=1, nonce=NONCE, seq=seq, crc=seq * 7 + 1,
                       fingerprint=prof.fingerprint, count=len(lows),
                       payload=wire.pack_reports(list(lows), prof.bits),
                       arrival=1000.0 + seq if arrival is None else arrival)


def every_kind():
    return {"grid": PROF,
            "table": TP.build(-1.0, 1.0, 1.0, "pm", 3),
            "multi": MP.build([Numeric("t", -40.0, 85.0, bits=6), Categorical("s", 3)], 5.0),
            "shuffle": SP.build_from(epsilon="0.99", delta="1e-6", n=2000, d=2, k=3, t=1,
                                     ranges=[(0.0, 100.0), (-20.0, 40.0)])}


def test_profiles_of_every_kind_round_trip(where):
    kinds = every_kind()
    with open_store(where) as st:
        for prof in kinds.values():
            st.add_profile(prof)
            st.add_profile(prof)                     # a second time: nothing new
    with open_store(where, read_only=True) as st:
        loaded = st.profiles()
        shuffles = shuffle_report.shuffle_profiles(st)
        n = st.meta()["profiles"]
    for kind in ("grid", "table", "multi"):
        assert loaded[kinds[kind].fingerprint] == kinds[kind], kind
    assert shuffles == {kinds["shuffle"].fingerprint: kinds["shuffle"]}
    # the multi header's attribute files are rows of their own
    assert n == 4 + len(kinds["multi"].attribute_files())


def test_an_audit_reads_every_cell_and_the_nonces_through_the_store(where):
    """Store.cells (every text and blob cell, by table and column) and Store.nonces: what
    the shuffle demo's identity audit reads, on both backends, without a connection of its
    own."""
    with open_store(where) as st:
        st.add_profile(PROF)
        st.write(frames=[frame(0), frame(1, device=b"dev-0002")])
    with open_store(where, read_only=True) as st:
        cells = list(st.cells())
        assert st.nonces() == [NONCE]
    where_device = {(t, c) for t, c, v in cells if b"dev-0002" in v}
    assert ("devices", "device_id") in where_device
    assert any(t == "profiles" and PROF.fingerprint.encode() in v for t, c, v in cells)
    assert all(isinstance(v, bytes) for _, _, v in cells)


def test_unresolved_ids_are_those_written(where):
    with open_store(where) as st:
        st.write(unresolved=[UnresolvedRecord("p", float(i), bytes([2, i]), i, "no_hello")
                             for i in range(3)])
        ids = st.last_unresolved_ids
        assert [r[0] for r in st.unresolved("p")] == ids and len(set(ids)) == 3
        st.write(resolved=ids[:2])
        assert st.last_unresolved_ids == [] and [r[0] for r in st.unresolved("p")] == ids[2:]


def test_a_batch_with_stored_keys_a_changed_crc_and_a_repeat(where):
    """One write: a frame stored before (nothing new), the same key with another CRC (a
    conflict event, counted once even when written again), a new frame given twice (stored
    once); the frames keep the order they were given in. Both stores answer the same."""
    import dataclasses

    with open_store(where) as st:
        st.add_profile(PROF)
        assert st.write(frames=[frame(0), frame(1), frame(2)]) == 3
        changed = dataclasses.replace(frame(2), crc=999)
        batch = [frame(1), changed, frame(4), frame(3), frame(3)]
        assert st.write(frames=batch) == 2
        assert st.last_new_reports == 6 and st.last_conflicts == 1
        st.write(frames=[changed])
        assert [r for r in st.events() if r["kind"] == "conflict"][0]["count"] == 1
        assert len([r for r in st.events() if r["kind"] == "conflict"]) == 1
        seqs = [row for row in st._query("SELECT seq, crc FROM frames ORDER BY id")]
        assert seqs == [(0, 1), (1, 8), (2, 15), (4, 29), (3, 22)]


# ---- the commands on either backend --------------------------------------------------------------
def _fill(where, seed=5):
    """Two devices, 40 frames of 16 reports each, some events and a link."""
    import numpy as np

    rng = np.random.default_rng(seed)
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    frames = []
    for d, dev in enumerate((b"dev-000A", b"dev-000B")):
        for s in range(20):
            lows = [reports.to_low(prof, prof.k_lo + int(j))
                    for j in rng.integers(0, prof.n_cells, 16)]
            frames.append(frame(s, device=dev, lows=lows, prof=prof,
                                arrival=1000.0 + 2 * s + d))
    with open_store(where) as st:
        st.add_profile(prof)
        assert st.write(frames=frames, events=[
            EventRecord("gap", "", 2, device_id=b"dev-000A", time=5.0, key="gap:a:7"),
            EventRecord("status", "OK", device_id=b"dev-000B", time=6.0)]) == 40
        st.close_link(st.open_link("loop://"), 4321)


def _zeal(capsys, *argv):
    assert cli_main(list(argv)) == 0
    return capsys.readouterr().out


def test_commands_read_postgresql_as_they_read_sqlite(tmp_path, postgres_url, capsys):
    """analyze, events, export and compress on the same data in SQLite and in PostgreSQL:
    the same figures, rows and archive contents."""
    path = str(tmp_path / "z.db")
    _fill(path)
    _fill(postgres_url)
    out = {}
    for name, db in (("sqlite", path), ("pg", postgres_url)):
        doc = json.loads(_zeal(capsys, "analyze", "--db", db, "--json"))
        ev = json.loads(_zeal(capsys, "events", "--db", db, "--json"))
        csv = str(tmp_path / ("%s.csv" % name))
        _zeal(capsys, "export", "--db", db, "-o", csv)
        with open(csv) as fh:
            rows = fh.read()
        arc = str(tmp_path / ("%s.zip" % name))
        size = json.loads(_zeal(capsys, "compress", "--db", db, "--out", arc, "--json"))
        again = json.loads(_zeal(capsys, "analyze", "--archive", arc, "--json"))
        out[name] = (doc, ev, rows, size["archive"]["bytes"], again)
    assert out["pg"][0]["overall"]["n"] == 640
    strip = lambda d: json.loads(json.dumps(d).replace(json.dumps(path)[1:-1], "DB")  # noqa
                                 .replace(json.dumps(postgres_url)[1:-1], "DB"))
    for a, b in zip(out["sqlite"], out["pg"]):
        assert strip(a) == strip(b)
    assert [e["kind"] for e in out["pg"][1]] == ["gap", "status"]


def test_commands_name_a_url_output_and_refuse_other_schemes(postgres_url, capsys):
    _fill(postgres_url)
    assert cli_main(["export", "--db", postgres_url]) == 1      # no file name to derive
    assert "-o FILE" in capsys.readouterr().err
    assert cli_main(["compress", "--db", postgres_url]) == 1
    assert "--out FILE" in capsys.readouterr().err
    assert cli_main(["analyze", "--db", "mysql://u@h/db"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("zeal: ") and err.count("\n") == 1 and "postgresql://" in err


def test_collect_writes_either(tmp_path, where, capsys):
    """`zeal collect --port socket://... --db` a file or a postgresql:// URL: DATA before the
    HELLO is kept as unresolved rows (committed) and resolved once the HELLO comes (the rows'
    ids from Store.last_unresolved_ids); then every frame once."""
    postgres_url = where
    fp = bytes.fromhex(PROF.fingerprint)[:8]
    nonce = b"\x05" * 8
    session = wire.session_bytes(b"board-01", fp, 1, nonce)
    data = [wire.encode_data(seq=s, bits=PROF.bits, reports=[s % 4, 1, 2], session=session)
            for s in range(30)]
    hello = wire.encode_hello(device_id=b"board-01", fingerprint=fp, boot=1, bits=PROF.bits,
                              batch=3, flags=0, nonce=nonce, next_seq=5)
    stop = wire.encode_status(code=4, ticks=0, message="stopped", flags=0)
    prof_file = tmp_path / "p.json"
    prof_file.write_text(PROF.to_json())
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(20)
    url = "socket://127.0.0.1:%d" % srv.getsockname()[1]
    rc = {}
    t = threading.Thread(target=lambda: rc.setdefault("rc", cli_main([
        "collect", "--port", url, "--db", postgres_url, "--profile", str(prof_file),
        "--until-stopped", "--duration", "30", "--json"])))
    t.start()
    conn, _ = srv.accept()
    _wait_schema(postgres_url)
    reader = open_store(postgres_url, read_only=True)

    def links():
        return reader.meta()["links"]
    _until(lambda: links() == 1)                     # its open drains the input first
    conn.sendall(b"".join(data[:5]))
    _until(lambda: reader.meta()["unresolved"] == 5)  # committed as unresolved
    conn.sendall(hello + b"".join(data[5:]) + stop)
    t.join(40)
    conn.close()
    srv.close()
    assert rc.get("rc") == 0
    summary = json.loads(capsys.readouterr().out)
    meta = reader.meta()
    reader.close()
    assert (meta["frames"], meta["reports"], meta["unresolved"]) == (30, 90, 0)
    assert (summary["frames"], summary["resolved_frames"], summary["lost_frames"]) == (30, 5, 0)


def _wait_schema(url, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            open_store(url, read_only=True).close()
            return True
        except StoreError:
            assert time.monotonic() < deadline, "the collector made no schema"
            time.sleep(0.05)


def _until(pred, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# ---- several writers -----------------------------------------------------------------------------
WRITER = textwrap.dedent("""
    import json, os, sys, time
    from zeal import wire
    from zeal.collect.store import FrameRecord, EventRecord, open_store
    from zeal.mechanism.grid import profile as P
    url, go, order = sys.argv[1], sys.argv[2], sys.argv[3]
    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    frames = [FrameRecord(device_id=b"dev-%04d" % d, boot=1, nonce=bytes(8), seq=s,
                          crc=s * 31 + d, fingerprint=prof.fingerprint, count=2,
                          payload=wire.pack_reports([s % 16, d % 16], 4), arrival=1.0 * s)
              for s in range(250) for d in range(8)]
    batches = [frames[i:i + 100] for i in range(0, len(frames), 100)]
    if order == "reversed":          # the same frames, met in the other order
        batches = [b[::-1] for b in batches[::-1]]
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.005)
    st = open_store(url)             # both create the schema at once
    st.add_profile(prof)
    new = reports = 0
    for b in batches:
        new += st.write(frames=b, events=[EventRecord("gap", device_id=b[0].device_id,
                                                      key="gap:%s:%d" % (b[0].device_id.hex(),
                                                                         b[0].seq))])
        reports += st.last_new_reports
    print(json.dumps({"new": new, "reports": reports}), flush=True)
""")


def test_two_processes_writing_the_same_frames_store_each_once(tmp_path, postgres_url):
    go = str(tmp_path / "go")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, postgres_url, go, order],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
             for order in ("forward", "reversed")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    open(go, "w").close()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    with open_store(postgres_url, read_only=True) as st:
        meta = st.meta()
        rows = st.frames()
        events = st.event_counts()
    assert sum(r["new"] for r in results) == meta["frames"] == 2000   # each frame once
    assert sum(r["reports"] for r in results) == meta["reports"] == 4000
    assert len({(r[0], r[1], r[7], r[2]) for r in rows}) == 2000
    assert meta["devices"] == 8 and meta["profiles"] == 1
    assert not [k for k in events if k[1] == "conflict"]
    assert sum(n for k, n in events.items() if k[1] == "gap") == 40  # 20 keys per order
