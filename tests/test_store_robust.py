"""The store's schema 2 (zeal.collect.store), issue 7 items 5, 7, 8, 9. Exact tests.

- Identity: the three losses of schema 1's key (device, boot, seq, crc) -- a u16 sequence wrap,
  a boot counter restarted after a lost seed file, two boards with one id -- each shown to
  collide under schema 1's key and to be stored in full under (device, boot, nonce, u32 seq);
  a stored key with another CRC becomes an event `conflict`; migration 1 -> 2 in place.
- Unresolved DATA: kept, listed, deleted when resolved, capped per port (counted).
- Event keys: the same stream written twice does not double an event.
- Robustness: full disk, read-only opening (no write attempted; a read-only file in a read-only
  folder), foreign files refused before any change, schema creation/migration killed at every
  statement, damaged rows, the device cache after a rollback, caps on devices and events.
"""
import hashlib
import os
import re
import shutil
import sqlite3
import struct
import tempfile
import zlib

import pytest

from zeal.mechanism.grid import profile as P
from zeal.collect import store as S
from zeal import wire
from zeal.errors import ZealError
from zeal.collect.store import (SCHEMA_VERSION, EventRecord, FrameRecord, Store, StoreError,
                        UnresolvedRecord, open_existing)

from conftest import HUMIDITY

PROF = P.from_bits(*HUMIDITY, 1.0, 4)
FP8 = bytes.fromhex(PROF.fingerprint)[:8]
DEV_A, DEV_B = bytes.fromhex("a1a2a3a4a5a6a7a8"), bytes.fromhex("b1b2b3b4b5b6b7b8")
UNIX_ID = b"unix".ljust(8, b"\x00")   # the id the unix port falls back to on every board
NONCE_1, NONCE_2 = bytes.fromhex("1111111111111111"), bytes.fromhex("2222222222222222")

# Schema 1 as zeal wrote it (before issue 7), kept as data for the migration tests.
SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS profiles (fingerprint TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS devices (id INTEGER PRIMARY KEY, device_id BLOB NOT NULL UNIQUE,
    first_seen REAL NOT NULL, last_seen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS frames (
    id          INTEGER PRIMARY KEY,
    device      INTEGER NOT NULL REFERENCES devices(id),
    boot        INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    crc         INTEGER NOT NULL,
    fingerprint TEXT NOT NULL REFERENCES profiles(fingerprint),
    count       INTEGER NOT NULL,
    payload     BLOB NOT NULL,
    arrival     REAL NOT NULL,
    vector      INTEGER NOT NULL DEFAULT 0,
    UNIQUE (device, boot, seq, crc)
);
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, device INTEGER REFERENCES devices(id),
    port TEXT, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '',
    count INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS links (id INTEGER PRIMARY KEY, port TEXT NOT NULL, opened REAL NOT NULL,
    closed REAL, bytes INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS frames_by_profile ON frames (fingerprint, vector);
"""
V2_TABLES = {"profiles", "devices", "frames", "events", "links", "unresolved"}


# ---- frames as a board sends them -----------------------------------------------------------
def data_body(seq32, lows):
    """A DATA body: type|flags, the low 16 bits of the sequence number, count, payload."""
    return struct.pack("<BHB", 0x02, seq32 & 0xFFFF, len(lows)) + wire.pack_reports(
        list(lows), PROF.bits)


def session(device, boot, nonce=None):
    """Protocol 2: device || fingerprint || boot || nonce (28 bytes); protocol 1 had no nonce."""
    return device + FP8 + struct.pack("<I", boot) + (b"" if nonce is None else nonce)


def record(device, boot, nonce, seq32, lows, *, protocol=2):
    body = data_body(seq32, lows)
    crc = zlib.crc32(body, zlib.crc32(session(device, boot, nonce if protocol == 2 else None)))
    return FrameRecord(device_id=device, boot=boot, nonce=nonce, seq=seq32, crc=crc,
                       fingerprint=PROF.fingerprint, count=len(lows),
                       payload=wire.pack_reports(list(lows), PROF.bits),
                       arrival=1000.0 + seq32)


def schema1_key(device, boot, nonce, seq32, lows):
    """The key schema 1 gave the same frame sent under protocol 1 (u16 seq, no nonce)."""
    r = record(device, boot, nonce, seq32, lows, protocol=1)
    return (r.device_id, r.boot, r.seq & 0xFFFF, r.crc)


def schema1_stored(frames) -> int:
    """How many of `frames` (device, boot, nonce, seq32, lows) a schema-1 store keeps."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA_1)
    n = 0
    for dev, boot, seq, crc in (schema1_key(*f) for f in frames):
        n += db.execute("INSERT OR IGNORE INTO frames (device, boot, seq, crc, fingerprint, "
                        "count, payload, arrival) VALUES (1, ?, ?, ?, '', 1, x'', 0)",
                        (boot, seq, crc)).rowcount
    db.close()
    return n


from test_store import BOTH, db, store  # noqa: E402,F401  (the same fixtures: a fresh store)


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# ---- item 7: identity unique by construction --------------------------------------------------
def _stored_in_full(store, frames):
    recs = [record(*f) for f in frames]
    assert store.write(frames=recs) == len(frames)
    assert store.write(frames=recs) == 0                 # re-ingest stays idempotent
    assert store.last_conflicts == 0
    assert store.meta()["frames"] == len(frames)


@BOTH
def test_sequence_wrap_with_batch_1_loses_nothing(store):
    # batch 1, one report a frame: sequence numbers n and n + 2^16 carry the same u16 on the
    # wire; with identical reports the bodies, and so the CRCs, are identical too.
    frames = [(DEV_A, 1, NONCE_1, s, (7,)) for s in
              list(range(65534, 65538)) + list(range(131070, 131074))]
    assert schema1_stored(frames) == 4                   # schema 1 kept 4 of 8
    _stored_in_full(store, frames)
    assert sorted(r[2] for r in store.frames()) == sorted(f[3] for f in frames)


@BOTH
def test_a_boot_counter_restarted_after_a_lost_seed_file_loses_nothing(store):
    # boot 1 twice (the seed file was lost): only the fresh nonce tells the sessions apart
    frames = [(DEV_A, 1, nonce, s, (s % 3, 5)) for nonce in (NONCE_1, NONCE_2)
              for s in range(5)]
    assert schema1_stored(frames) == 5                   # schema 1 merged the two sessions
    _stored_in_full(store, frames)
    assert {r[7] for r in store.frames()} == {NONCE_1, NONCE_2}


@BOTH
def test_two_boards_with_the_same_id_lose_nothing(store):
    frames = [(UNIX_ID, 1, nonce, s, (1, 2, 3)) for s in range(4)
              for nonce in (NONCE_1, NONCE_2)]
    assert schema1_stored(frames) == 4
    _stored_in_full(store, frames)


@BOTH
def test_a_stored_key_with_another_crc_is_a_conflict_event(store):
    r = record(DEV_A, 1, NONCE_1, 9, (1, 2))
    forged = FrameRecord(**dict(r.__dict__, crc=r.crc ^ 1, payload=b"\x00"))
    assert store.write(frames=[r]) == 1
    for _ in range(2):                                  # recorded once, however often seen
        assert store.write(frames=[forged]) == 0
        assert store.last_conflicts == 1
    detail = "boot 1 nonce %s seq 9: stored crc %08x, received %08x" % (NONCE_1.hex(), r.crc,
                                                                       r.crc ^ 1)
    assert store.event_counts() == {(DEV_A, "conflict", detail): 1}
    assert [row[5] for row in store.frames()] == [r.payload]   # the first frame is kept


def test_from_batch_carries_nonce_seq_and_debug():
    class FakeBatch:  # the attributes of wire.Batch that the store reads
        device_id, boot, nonce, seq, crc = DEV_A, 3, NONCE_2, 70000, 0xDEADBEEF
        profile, payload, vector, debug = PROF, b"\x21", False, True

        def __len__(self):
            return 2
    r = FrameRecord.from_batch(FakeBatch(), 5.0)
    assert r == FrameRecord(DEV_A, 3, NONCE_2, 70000, 0xDEADBEEF, PROF.fingerprint, 2, b"\x21",
                            5.0, False, True)


def _schema1_file(path, *, frames=True):
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.executescript(SCHEMA_1)
    raw.execute("PRAGMA user_version=1")
    if frames:
        raw.execute("INSERT INTO profiles VALUES (?, ?)", (PROF.fingerprint, PROF.to_json()))
        raw.execute("INSERT INTO devices VALUES (1, ?, 1, 2)", (DEV_A,))
        for i, (seq, crc) in enumerate([(0, 11), (1, 12), (0, 13)]):   # a wrapped seq 0
            raw.execute("INSERT INTO frames (device, boot, seq, crc, fingerprint, count, "
                        "payload, arrival) VALUES (1, 1, ?, ?, ?, 1, ?, ?)",
                        (seq, crc, PROF.fingerprint, wire.pack_reports([i], PROF.bits),
                         100.0 + i))
        raw.execute("INSERT INTO events (device, port, time, kind, detail, count) "
                    "VALUES (1, 'loop://', 5, 'reject', 'crc', 3)")
        raw.execute("INSERT INTO links (port, opened, bytes) VALUES ('loop://', 1, 77)")
    raw.commit()
    raw.close()


def test_schema_1_is_migrated_in_place_keeping_every_row(db):
    _schema1_file(db)
    # read-only, a schema-1 file is read as it is and left alone
    with open_existing(db) as ro:
        assert ro.meta()["schema"] == 1
        assert [r[2:] for r in ro.frames()] == [
            (0, PROF.fingerprint, 1, wire.pack_reports([0], 4), 100.0, None, 0),
            (1, PROF.fingerprint, 1, wire.pack_reports([1], 4), 101.0, None, 0),
            (0, PROF.fingerprint, 1, wire.pack_reports([2], 4), 102.0, None, 0)]
        assert ro.unresolved("loop://") == []
    with Store(db) as st:
        assert st._engine.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        m = st.meta()
        assert (m["schema"], m["frames"], m["events"], m["bytes"]) == (2, 3, 1, 77)
        rows = st.frames()
        assert [(r[2], r[7], r[8]) for r in rows] == [(0, (11).to_bytes(4, "big"), 0),
                                                      (1, (12).to_bytes(4, "big"), 0),
                                                      (0, (13).to_bytes(4, "big"), 0)]
        assert st.event_counts() == {(DEV_A, "reject", "crc"): 3}
        # the migrated file is a schema-2 file in every respect
        assert st.write(frames=[record(DEV_A, 1, NONCE_1, 0, (4,))],
                        events=[EventRecord("gap", key="k")],
                        unresolved=[UnresolvedRecord("p", 1.0, b"\x02", 5, "crc")]) == 1
    with Store(db) as again:
        assert again.meta()["frames"] == 4


# ---- item 5: unresolved DATA ------------------------------------------------------------------
@BOTH
def test_unresolved_frames_are_kept_until_resolved(store):
    recs = [UnresolvedRecord("loop://a", 10.0 + i, bytes([2, i]), 100 + i,
                             "no_hello" if i < 2 else "crc") for i in range(3)]
    store.write(unresolved=recs + [UnresolvedRecord("loop://b", 1.0, b"\x02", 1, "crc")])
    rows = store.unresolved("loop://a")
    assert [r[1:] for r in rows] == [(bytes([2, 0]), 100, 10.0, "no_hello"),
                                     (bytes([2, 1]), 101, 11.0, "no_hello"),
                                     (bytes([2, 2]), 102, 12.0, "crc")]
    # resolving: the frames it became and the deletion in one transaction
    assert store.write(frames=[record(DEV_A, 1, NONCE_1, 0, (1,))],
                       resolved=[rows[0][0], rows[2][0]]) == 1
    assert [r[0] for r in store.unresolved("loop://a")] == [rows[1][0]]
    assert len(store.unresolved("loop://b")) == 1 and store.meta()["unresolved"] == 2
    # a failed transaction deletes nothing
    bad = FrameRecord(**dict(record(DEV_A, 1, NONCE_1, 1, (1,)).__dict__, fingerprint="0" * 64))
    with pytest.raises(StoreError):
        store.write(frames=[bad], resolved=[rows[1][0]])
    assert [r[0] for r in store.unresolved("loop://a")] == [rows[1][0]]


@BOTH
def test_unresolved_rows_are_capped_per_port_and_counted(store):
    store.max_unresolved_per_port = 4
    store.write(unresolved=[UnresolvedRecord("p", float(i), bytes([i]), i, "crc")
                            for i in range(6)])
    store.write(unresolved=[UnresolvedRecord("q", 0.0, b"\x00", 0, "crc")])
    assert [r[2] for r in store.unresolved("p")] == [2, 3, 4, 5]   # the newest stay
    store.write(unresolved=[UnresolvedRecord("p", 9.0, b"\x09", 9, "crc")] * 3)
    assert [r[2] for r in store.unresolved("p")] == [5, 9, 9, 9]
    dropped = [e for e in store.events() if e["kind"] == "unresolved_dropped"]
    assert [(e["port"], e["count"]) for e in dropped] == [("p", 5)]   # one counter row
    assert len(store.unresolved("q")) == 1


# ---- item 8: events not doubled ---------------------------------------------------------------
@BOTH
def test_events_with_a_key_are_stored_once(store):
    sess = session(DEV_A, 1, NONCE_1).hex()

    def stream(port):  # what a collector makes of one stream, on whichever port
        return [EventRecord("session", "boot 1", device_id=DEV_A, port=port,
                            key="hello:" + sess),
                EventRecord("gap", "", 3, device_id=DEV_A, port=port, key="gap:%s:17" % sess),
                EventRecord("reject", "crc", 1, device_id=DEV_A, port=port,
                            key="reject:%s:16:crc:0" % sess),
                EventRecord("reject", "crc", 1, device_id=DEV_A, port=port,
                            key="reject:%s:16:crc:1" % sess),
                EventRecord("status", "OK", device_id=DEV_A, port=port,
                            key="status:%s:4096:0" % sess),
                EventRecord("connect", port=port)]          # no key: an event of this run
    store.write(events=stream("loop://a"))
    once = store.event_counts()
    store.write(events=stream("loop://a"))
    store.write(events=stream("/dev/ttyACM0"))
    twice = store.event_counts()
    assert twice[(DEV_A, "reject", "crc")] == once[(DEV_A, "reject", "crc")] == 2
    assert twice[(DEV_A, "gap", "")] == 3 and twice[(DEV_A, "session", "boot 1")] == 1
    assert twice[(None, "connect", "")] == 3
    # a reboot event of the same session (seen first as "session") is not another one
    store.write(events=[EventRecord("reboot", "boot 1", device_id=DEV_A, key="hello:" + sess)])
    assert (DEV_A, "reboot", "boot 1") not in store.event_counts()


@BOTH
def test_events_listing(store):
    store.write(events=[EventRecord("status", "CRASH MemoryError", device_id=DEV_A, port="p",
                                    time=20.0),
                        EventRecord("connect", port="p", time=10.0),
                        EventRecord("gap", "", 2, device_id=DEV_B, time=30.0)])
    assert store.events() == [
        {"time": 10.0, "device": None, "port": "p", "kind": "connect", "detail": "", "count": 1},
        {"time": 20.0, "device": DEV_A.hex(), "port": "p", "kind": "status",
         "detail": "CRASH MemoryError", "count": 1},
        {"time": 30.0, "device": DEV_B.hex(), "port": None, "kind": "gap", "detail": "",
         "count": 2}]
    assert [e["kind"] for e in store.events(DEV_B)] == ["gap"]
    assert store.events(bytes(8)) == []


# ---- item 9g: caps ----------------------------------------------------------------------------
@BOTH
def test_device_rows_are_capped_and_what_is_dropped_counted(store):
    store.max_devices = 3
    devs = [bytes([i]) * 8 for i in range(1, 6)]
    assert store.write(frames=[record(d, 1, NONCE_1, 0, (1,)) for d in devs]) == 3
    store.write(events=[EventRecord("gap", device_id=devs[4]),
                        EventRecord("gap", device_id=devs[0])])
    assert store.meta()["devices"] == 3
    counts = store.event_counts()
    dropped = [n for (dev, kind, _d), n in counts.items() if kind == "devices_dropped"]
    assert dropped == [3]                                # 2 frames + 1 event, one row
    assert counts[(devs[0], "gap", "")] == 1             # known devices still write
    assert S.MAX_DEVICES == 100_000


@BOTH
def test_event_rows_are_capped_and_what_is_dropped_counted(store):
    store.max_events = 5
    store.write(events=[EventRecord("gap", key="g%d" % i) for i in range(4)])
    store.write(events=[EventRecord("gap", key="g%d" % i) for i in range(8)])   # 4 are repeats
    store.write(events=[EventRecord("connect") for _ in range(2)])
    rows = store.events()
    assert len(rows) == 6                                # 5 events + the counter row
    dropped = [e["count"] for e in rows if e["kind"] == "events_dropped"]
    assert dropped == [5]                                # g5, g6, g7, 2 connects; not g0..g3
    assert S.MAX_EVENTS == 1_000_000 and S.MAX_UNRESOLVED_PER_PORT == 65_536


# ---- item 9a: a full disk ---------------------------------------------------------------------
def test_a_full_disk_is_reported_as_such(store):
    assert store.write(frames=[record(DEV_A, 1, NONCE_1, 0, (1,))]) == 1
    pages = store._engine.db.execute("PRAGMA page_count").fetchone()[0]
    store._engine.db.execute("PRAGMA max_page_count = %d" % (pages + 2))   # the disk fills up
    big = [FrameRecord(**dict(record(DEV_B, 1, NONCE_1, s, (1,)).__dict__,
                              payload=bytes(3000))) for s in range(1, 20)]
    with pytest.raises(StoreError) as info:
        store.write(frames=big, events=[EventRecord("gap", device_id=DEV_B)])
    assert str(info.value).startswith("database %s: disk full" % store.path)
    assert "rollback" not in str(info.value)
    assert not store._engine.db.in_transaction
    store._engine.db.execute("PRAGMA max_page_count = 1073741823")        # space again
    assert store.meta()["frames"] == 1 and store.meta()["devices"] == 1
    assert store.write(frames=big[:2], events=[EventRecord("gap", device_id=DEV_B)]) == 2
    assert store.event_counts() == {(DEV_B, "gap", ""): 1}


# ---- item 9f: the device cache after a rollback ----------------------------------------------
@BOTH
def test_the_device_cache_forgets_rolled_back_rows(store):
    bad = FrameRecord(**dict(record(DEV_B, 1, NONCE_1, 0, (1,)).__dict__, fingerprint="f" * 64))
    with pytest.raises(StoreError, match="(?i)FOREIGN KEY"):
        store.write(frames=[bad])                       # DEV_B's new row is rolled back
    assert store.meta()["devices"] == 0
    store.write(events=[EventRecord("gap", device_id=DEV_B)])   # a stale id: FOREIGN KEY
    assert store.event_counts() == {(DEV_B, "gap", ""): 1}


# ---- item 9b: reading commands open read-only -------------------------------------------------
def _fill(path):
    with Store(path) as st:
        st.add_profile(PROF)
        st.write(frames=[record(DEV_A, 1, NONCE_1, s, (s,)) for s in range(3)],
                 events=[EventRecord("gap", device_id=DEV_A)],
                 unresolved=[UnresolvedRecord("p", 1.0, b"\x02", 3, "crc")])
        st.close_link(st.open_link("p"), 12)


def _read_all(st):
    return (sorted(st.profiles()), st.frames(), st.frames(vector=True), st.event_counts(),
            st.link_bytes(), st.events(), st.meta()["frames"], st.unresolved("p"))


_WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE,
           sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_DROP_TABLE,
           sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_ATTACH}


def test_reading_opens_read_only_and_attempts_no_write(db, monkeypatch):
    _fill(db)
    before = sha(db)
    seen, writes = [], []
    real = sqlite3.connect

    def connect(*args, **kw):
        con = real(*args, **kw)
        seen.append(args[0])
        con.set_trace_callback(lambda sql: writes.append(sql) if re.match(
            r"\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|BEGIN|VACUUM|PRAGMA\s+\w+\s*=)",
            sql, re.I) else None)

        def authorize(action, arg1, arg2, _db, _src):
            if action in _WRITES or (action == sqlite3.SQLITE_PRAGMA and arg2 is not None
                                     and arg1 != "table_info"):
                writes.append((action, arg1, arg2))
            return sqlite3.SQLITE_OK
        con.set_authorizer(authorize)
        return con
    monkeypatch.setattr(sqlite3, "connect", connect)
    with open_existing(db) as st:
        first = _read_all(st)
        with pytest.raises(StoreError, match="read-only"):
            st.write(events=[EventRecord("gap")])
    assert writes == [], writes
    assert seen and all(s.startswith("file:") and "mode=ro" in s for s in seen)
    assert sha(db) == before
    assert first[6] == 3 and len(first[7]) == 1


def _read_as_user(path, uid):
    """_read_all on a read-only copy, in a child running as `uid` (None: this user)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 1
        try:
            os.close(r)
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            try:
                with open_existing(path) as st:
                    out = repr(_read_all(st)[4:7])
            except ZealError as exc:
                out = "ZealError: %s" % exc
            try:
                Store(path).close()
                out += " | writable open succeeded"
            except ZealError as exc:
                out += " | " + str(exc)
            os.write(w, out.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return b"".join(chunks).decode()


def test_a_read_only_file_in_a_read_only_folder_can_be_analyzed():
    # chmod 0444 file in a chmod 0555 folder. Root ignores permissions, so as root the
    # reading runs in a forked child that has become `nobody`.
    uid = 65534 if os.geteuid() == 0 else None
    folder = tempfile.mkdtemp()
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "zeal.db")
        _fill(path)
        assert sorted(os.listdir(folder)) == ["zeal.db"]   # closed cleanly: no -wal, -shm
        before = sha(path)
        os.chmod(path, 0o444)
        os.chmod(folder, 0o555)
        out = _read_as_user(path, uid)
        assert not out.startswith("ZealError"), out
        assert out.startswith("(12, [{'time'"), out
        assert "3) | database %s: attempt to write a readonly database" % path in out
        assert sha(path) == before and sorted(os.listdir(folder)) == ["zeal.db"]
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)


# ---- item 9c: another program's file ----------------------------------------------------------
def _foreign(path, version, sql="CREATE TABLE notes (t TEXT)"):
    con = sqlite3.connect(path)
    con.execute(sql)
    con.execute("PRAGMA user_version=%d" % version)
    con.commit()
    con.close()


@pytest.mark.parametrize("version,sql", [
    (0, "CREATE TABLE notes (t TEXT)"),
    (1, "CREATE TABLE notes (t TEXT)"),
    (2, "CREATE TABLE frames (a, b)"),
    (-3, "CREATE TABLE notes (t TEXT)"),
], ids=["v0", "v1", "v2-other-columns", "negative"])
def test_a_foreign_sqlite_file_is_refused_before_any_change(tmp_path, version, sql):
    path = str(tmp_path / "other.db")
    _foreign(path, version, sql)
    before = sha(path)
    for opener in (Store, open_existing):
        with pytest.raises(StoreError, match="another program|not a zeal database") as info:
            opener(path)
        assert "\n" not in str(info.value)
    assert sha(path) == before
    assert sorted(os.listdir(tmp_path)) == ["other.db"]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"   # not switched to WAL
    con.close()


def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database, just some text\n" * 10)
    before = sha(path)
    with pytest.raises(StoreError, match="not a database"):
        Store(path)
    assert sha(path) == before


# ---- item 9d: schema creation and migration are one transaction ------------------------------
def _open_killed_at(path, k):
    """Fork a child that opens Store(path) and is killed (os._exit) when SQLite starts its
    k-th statement. Returns True if the child finished the open before statement k."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            real, n = sqlite3.connect, [0]

            def trace(_sql):
                n[0] += 1
                if n[0] == k:
                    os._exit(9)                          # a kill: no rollback, no close

            def connect(*args, **kw):
                con = real(*args, **kw)
                con.set_trace_callback(trace)
                return con
            sqlite3.connect = connect
            Store(path).close()
            code = 0
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, 9)
    return os.WEXITSTATUS(status) == 0


def _state(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        frames = con.execute("SELECT COUNT(*) FROM frames").fetchone()[0] if tables else None
    finally:
        con.close()
    return version, tables, frames


@pytest.mark.parametrize("start", ["new", "schema1"])
def test_a_kill_during_creation_or_migration_leaves_a_usable_file(tmp_path, start):
    k, outcomes = 0, set()
    while True:
        k += 1
        path = str(tmp_path / ("z%d.db" % k))
        if start == "schema1":
            _schema1_file(path)
        finished = _open_killed_at(path, k)
        version, tables, frames = _state(path)
        if start == "new":
            assert (version, tables) in ((0, set()), (2, V2_TABLES)), (k, version, tables)
        else:
            assert (version, frames) in ((1, 3), (2, 3)), (k, version, frames)
            assert tables == (V2_TABLES if version == 2 else V2_TABLES - {"unresolved"})
        outcomes.add(version)
        with Store(path) as st:                          # never refused forever
            assert st.meta()["schema"] == 2
            assert st.meta()["frames"] == (3 if start == "schema1" else 0)
        if finished:
            break
    assert k > 10 and outcomes == ({0, 2} if start == "new" else {1, 2})


def test_a_file_half_made_by_an_older_zeal_is_completed(tmp_path):
    # schema 1 was created statement by statement, user_version last: a kill in between left
    # empty zeal tables and user_version 0, refused forever as "another program"
    path = str(tmp_path / "half.db")
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_1.split("CREATE TABLE IF NOT EXISTS events")[0])
    con.close()
    with Store(path) as st:
        assert st.meta()["schema"] == 2
    # with data in them, they are not ours to drop
    path2 = str(tmp_path / "half2.db")
    con = sqlite3.connect(path2)
    con.executescript(SCHEMA_1.split("CREATE TABLE IF NOT EXISTS events")[0])
    con.execute("INSERT INTO profiles VALUES ('x', 'y')")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="another program"):
        Store(path2)


# ---- item 9e: damaged rows --------------------------------------------------------------------
def _raw(path, *sql, writable_schema=False):
    con = sqlite3.connect(path)
    if writable_schema:
        con.execute("PRAGMA writable_schema=ON")
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


@pytest.mark.parametrize("sql,message", [
    ("UPDATE frames SET payload = 'text' WHERE seq = 1", r"frames row 2 is damaged \(payload\)"),
    ("UPDATE frames SET count = 'three' WHERE seq = 0", r"frames row 1 is damaged \(count\)"),
    ("UPDATE frames SET boot = 1.5, seq = -1 WHERE seq = 2",
     r"frames row 3 is damaged \(boot, seq\)"),
    ("UPDATE devices SET device_id = x'0102'", r"frames row 1 is damaged \(device id\)"),
    ("UPDATE frames SET nonce = 5", r"frames row 1 is damaged \(nonce\)"),
    ("UPDATE frames SET arrival = 'yesterday' WHERE seq = 2",
     r"frames row 3 is damaged \(arrival\)"),
], ids=["payload", "count", "boot-seq", "device", "nonce", "arrival"])
def test_damaged_frame_rows_are_one_line_errors(db, sql, message):
    _fill(db)
    _raw(db, sql)
    with open_existing(db) as st:
        with pytest.raises(StoreError, match=message):
            st.frames()


@pytest.mark.parametrize("sql,message", [
    ("UPDATE frames SET payload = 'text' WHERE seq = 1", r"frames row 2 is damaged \(payload\)"),
    ("UPDATE frames SET count = 'three' WHERE seq = 0", r"frames row 1 is damaged \(count\)"),
    ("UPDATE frames SET debug = 2 WHERE seq = 1", r"frames row 2 is damaged \(debug\)"),
    ("UPDATE frames SET count = 300 WHERE seq = 2", r"seq 2\): count 300 is outside"),
    ("UPDATE devices SET device_id = x'0102'", r"is damaged \(device id\)"),
], ids=["payload", "count", "debug", "count-range", "device"])
def test_analyze_names_a_damaged_row_it_reads(db, sql, message):
    # analyze reads only the columns it needs (Store.iter_reports) and checks them itself;
    # a bad one is named as the full damage check and the decoder name it
    from zeal.analysis import analyze as A
    _fill(db)
    _raw(db, sql)
    with open_existing(db) as st:
        with pytest.raises(ZealError, match=message):
            A.analyze(st)


def test_a_null_payload_is_a_one_line_error(db):
    _fill(db)
    # NOT NULL is in the table's text only: a damaged schema lets a NULL in
    _raw(db, "UPDATE sqlite_master SET sql = replace(sql, 'payload     BLOB NOT NULL', "
             "'payload BLOB') WHERE name = 'frames'", writable_schema=True)
    _raw(db, "UPDATE frames SET payload = NULL WHERE seq = 0")
    with open_existing(db) as st:
        with pytest.raises(StoreError, match=r"frames row 1 is damaged \(payload\)"):
            st.frames()


@pytest.mark.parametrize("sql,method,error", [
    ("UPDATE profiles SET doc = 'not json {'", "profiles", ZealError),
    ("UPDATE profiles SET doc = x'7b7d'", "profiles", StoreError),
    ("UPDATE profiles SET doc = '[1, 2]'", "profiles", ZealError),
    ("UPDATE events SET count = 'many'", "event_counts", StoreError),
    ("UPDATE events SET kind = x'00'", "events", StoreError),
    ("UPDATE links SET bytes = 'lots'", "link_bytes", StoreError),
    ("UPDATE unresolved SET crc = 'x'", "unresolved", StoreError),
], ids=["doc-json", "doc-int", "doc-list", "event-count", "event-kind", "link", "unresolved"])
def test_other_damaged_rows_are_one_line_errors(db, sql, method, error):
    _fill(db)
    _raw(db, sql)
    with open_existing(db) as st:
        call = getattr(st, method)
        with pytest.raises(error) as info:
            call("p") if method == "unresolved" else call()
        assert "\n" not in str(info.value)


def test_a_profile_stored_under_another_fingerprint_is_refused(db):
    other = P.from_bits(*HUMIDITY, 1.0, 8)
    _fill(db)
    _raw(db, "UPDATE profiles SET doc = '%s'" % other.to_json().replace("'", "''"))
    with open_existing(db) as st:
        with pytest.raises(ZealError, match="fingerprint"):
            st.profiles()
