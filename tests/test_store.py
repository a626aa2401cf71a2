"""The SQLite store (zeal.collect.store): schema version, WAL, idempotent frame inserts, refusal of
newer schema, busy database, event and link sums, profiles re-validated on load. Exact tests.
Identity, unresolved frames, event keys, caps and robustness: test_store_robust.py.
Tests marked BOTH run on the PostgreSQL store too (a throw-away server: tests/pg_server.py);
PostgreSQL only: test_store_pg.py."""
import json
import sqlite3
import time

import pytest

from zeal.mechanism.grid import profile as P
from zeal import wire
from zeal.errors import ProfileError
from zeal.collect.store import (SCHEMA_VERSION, EventRecord, FrameRecord, Store, StoreError,
                                open_store)

from conftest import HUMIDITY

PROF = P.from_bits(*HUMIDITY, 1.0, 4)
DEV_A, DEV_B = bytes.fromhex("a1a2a3a4a5a6a7a8"), bytes.fromhex("b1b2b3b4b5b6b7b8")
NONCE = bytes.fromhex("0102030405060708")


def frame(seq, *, device=DEV_A, boot=1, crc=None, lows=(3, 4, 5), vector=False, prof=PROF,
          nonce=NONCE):
    return FrameRecord(device_id=device, boot=boot, nonce=nonce, seq=seq,
                       crc=seq * 7 + 1 if crc is None else crc,
                       fingerprint=prof.fingerprint, count=len(lows),
                       payload=wire.pack_reports(list(lows), prof.bits), arrival=1000.0 + seq,
                       vector=vector)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "zeal.db")


# On a test: run it on a fresh SQLite store and on a fresh PostgreSQL one (`store` fixture).
BOTH = pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def store(request, db):
    if getattr(request, "param", "sqlite") == "postgresql":
        st = open_store(request.getfixturevalue("postgres_url"))
    else:
        st = Store(db)
    st.add_profile(PROF)
    yield st
    st.close()


def test_new_database_has_the_schema_version_and_wal(store, db):
    assert store._engine.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store._engine.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.meta() == {"schema": SCHEMA_VERSION, "path": db, "frames": 0, "reports": 0,
                            "devices": 0, "events": 0, "unresolved": 0, "profiles": 1,
                            "links": 0, "bytes": 0}
    other = sqlite3.connect(db)  # the mode is persistent: any connection sees WAL
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()


def test_reopening_keeps_the_data(store, db):
    assert store.write(frames=[frame(0), frame(1)]) == 2
    store.close()
    with Store(db) as again:
        assert again.meta()["frames"] == 2
        assert set(again.profiles()) == {PROF.fingerprint}


@BOTH
def test_frame_inserts_are_idempotent(store):
    frames = [frame(s) for s in range(5)]
    assert store.write(frames=frames) == 5
    assert store.write(frames=frames) == 0          # the same stream re-ingested
    assert store.write(frames=frames[2:] + [frame(5)]) == 1
    assert store.meta()["frames"] == 6
    assert store.meta()["reports"] == 18
    # the key includes device, boot, nonce and the full sequence number
    assert store.write(frames=[frame(0, device=DEV_B), frame(0, boot=2),
                               frame(0, nonce=bytes(8)), frame(1 << 16)]) == 4
    rows = store.frames()
    assert len(rows) == 10
    dev, boot, seq, fp, count, payload, arrival, nonce, debug = rows[0]
    assert (dev, boot, seq, fp, count, nonce, debug) == (DEV_A, 1, 0, PROF.fingerprint, 3,
                                                         NONCE, 0)
    assert payload == wire.pack_reports([3, 4, 5], PROF.bits) and arrival == 1000.0
    assert rows[-1][2] == 1 << 16


@BOTH
def test_vector_frames_are_kept_apart(store):
    store.write(frames=[frame(0), frame(1, vector=True)])
    assert [r[2] for r in store.frames()] == [0]
    assert [r[2] for r in store.frames(vector=True)] == [1]
    assert store.frames(fingerprint="0" * 64) == []


@BOTH
def test_frames_need_a_stored_profile(store):
    other = P.from_bits(*HUMIDITY, 1.0, 8)
    with pytest.raises(StoreError):
        store.write(frames=[frame(0, prof=other, lows=(1,))])
    assert store.meta()["frames"] == 0  # the transaction rolled back


def test_a_newer_schema_is_refused(db):
    Store(db).close()
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA user_version=%d" % (SCHEMA_VERSION + 1))
    raw.close()
    with pytest.raises(StoreError, match="schema %d" % (SCHEMA_VERSION + 1)):
        Store(db)


def test_busy_database_is_a_store_error_within_the_timeout(db):
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")               # another writer holds the write lock
    st = Store(db, timeout=0.2)
    t0 = time.monotonic()
    with pytest.raises(StoreError, match="busy"):
        st.write(events=[EventRecord("status")])
    elapsed = time.monotonic() - t0
    assert 0.15 <= elapsed < 3.0
    holder.execute("ROLLBACK")
    assert st.write(events=[EventRecord("status")]) == 0  # usable once the lock is gone
    st.close()
    # a database locked exclusively cannot even be opened: busy, not a traceback
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    t0 = time.monotonic()
    with pytest.raises(StoreError, match="busy"):
        Store(db, timeout=0.2)
    assert time.monotonic() - t0 < 3.0
    holder.close()


@BOTH
def test_event_counts_and_link_bytes_are_sums(store):
    store.write(events=[EventRecord("reject", "crc", 2, device_id=DEV_A),
                        EventRecord("reject", "crc", 3, device_id=DEV_A),
                        EventRecord("reject", "cobs", 1, port="loop://"),
                        EventRecord("gap", "", 7, device_id=DEV_B),
                        EventRecord("reboot", device_id=DEV_B)])
    store.write(events=[EventRecord("gap", "", 1, device_id=DEV_B)])
    assert store.event_counts() == {(DEV_A, "reject", "crc"): 5,
                                    (None, "reject", "cobs"): 1,
                                    (DEV_B, "gap", ""): 8,
                                    (DEV_B, "reboot", ""): 1}
    assert store.link_bytes() == 0
    a = store.open_link("loop://")
    b = store.open_link("/dev/ttyACM0")
    store.write(link=(a, 100))                      # running count, updated in a transaction
    store.write(link=(a, 250))
    store.close_link(b, 40)
    assert store.link_bytes() == 290


def _tamper(db, edit):
    raw = sqlite3.connect(db)
    fp, doc = raw.execute("SELECT fingerprint, doc FROM profiles").fetchone()
    d = json.loads(doc)
    edit(d)
    raw.execute("UPDATE profiles SET doc = ? WHERE fingerprint = ?", (json.dumps(d), fp))
    raw.commit()
    raw.close()


@pytest.mark.parametrize("edit", [
    lambda d: d.update(threshold=d["threshold"] + 1),             # a weaker privacy level
    lambda d: d.update(n_window=d["n_window"] + 1),
    lambda d: d.update(exponent=d["exponent"] + 1),
    lambda d: d.update(hi="0x4055000000000000"),                  # another range, same fp
    lambda d: d.update(fingerprint="0" * 64),
    lambda d: d.pop("bits"),
], ids=["threshold", "n_window", "exponent", "range", "fingerprint", "missing"])
def test_profiles_are_revalidated_on_load(store, db, edit):
    assert store.profiles()[PROF.fingerprint] == PROF
    _tamper(db, edit)
    with pytest.raises(ProfileError):
        store.profiles()


def test_foreign_sqlite_file_is_left_alone(tmp_path):
    sq = sqlite3
    path = tmp_path / "other.db"
    con = sq.connect(path)
    con.execute("CREATE TABLE notes (t TEXT)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="another program"):
        Store(path)
    con = sq.connect(path)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    con.close()
    assert names == ["notes"]
