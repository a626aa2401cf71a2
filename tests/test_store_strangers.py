"""Untrusted files stay data (issue 18, finding 5): a database handed over with a trigger, a
view, or a table or index zeal did not create is refused by every writer (`zeal collect`,
Store) with one line, before anything is written to it; readers (analyze, export, events)
read it and run nothing it defines.

Before, the triggers ran inside the collector's writes, silently: a delete-on-insert trigger
gave "stored 100" and 0 rows, another zeroed every payload, another added 1 MB per event;
an added unique index made INSERT OR IGNORE skip frames as if they were duplicates.
"""
import hashlib
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from zeal import wire
from zeal.cli import main as cli_main
from zeal.collect.store import sqlite_schema as SQ
from zeal.collect.store import EventRecord, FrameRecord, Store, StoreError, open_existing, \
    open_store
from zeal.collect.virtual import Pty
from zeal.mechanism.grid import profile as P

from conftest import HOST, HUMIDITY
from test_store_robust import SCHEMA_1

PROF = P.from_bits(*HUMIDITY, 1.0, 4)
NONCE = bytes.fromhex("0102030405060708")
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))


def frame(seq, device=b"dev-0001"):
    return FrameRecord(device_id=device, boot=1, nonce=NONCE, seq=seq, crc=seq * 7 + 1,
                       fingerprint=PROF.fingerprint, count=3,
                       payload=wire.pack_reports([1, 2, 3], PROF.bits), arrival=1000.0 + seq)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def zeal_file(path):
    """A zeal database holding one frame and one event, closed cleanly (no -wal left)."""
    with Store(path) as st:
        st.add_profile(PROF)
        st.write([frame(0)], [EventRecord("status", "OK", device_id=b"dev-0001", key="s:0")])
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=DELETE")  # one file: its hash is all of it
    con.close()


def add(path, *sql):
    con = sqlite3.connect(path)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


# What a handed-over file can hold, each with the name the refusal must give.
HOSTILE = {
    "delete-on-insert trigger": (
        "zap", ["CREATE TRIGGER zap AFTER INSERT ON frames BEGIN DELETE FROM frames; END"]),
    "payload-zeroing trigger": (
        "zero", ["CREATE TRIGGER zero AFTER INSERT ON frames BEGIN UPDATE frames SET payload "
                 "= zeroblob(length(NEW.payload)) WHERE id = NEW.id; END"]),
    "1 MB per event trigger": (
        "bloat", ["CREATE TRIGGER bloat AFTER INSERT ON events BEGIN INSERT INTO links (port, "
                  "opened) VALUES (hex(randomblob(500000)), 0); END"]),
    "trigger on links": (
        "spy", ["CREATE TRIGGER spy BEFORE UPDATE ON links BEGIN SELECT RAISE(IGNORE); END"]),
    "view": ("recent", ["CREATE VIEW recent AS SELECT * FROM frames"]),
    "table": ("notes", ["CREATE TABLE notes (t TEXT)"]),
    "unique index": ("one_per_device", ["CREATE UNIQUE INDEX one_per_device ON frames (device)"]),
    "index": ("by_arrival", ["CREATE INDEX by_arrival ON frames (arrival)"]),
    "dropped index": ("events_by_key", ["DROP INDEX events_by_key"]),
    "CHECK constraint": ("frames", [
        "ALTER TABLE frames RENAME TO old_frames",
        SQ.FRAMES.format(name="frames").replace("count       INTEGER NOT NULL,",
                                                "count INTEGER NOT NULL CHECK (count < 5),"),
        "INSERT INTO frames SELECT * FROM old_frames", "DROP TABLE old_frames",
        "CREATE INDEX frames_by_profile ON frames (fingerprint, vector)"]),
    "changed column": ("events", [
        "ALTER TABLE events RENAME TO old_events",
        "CREATE TABLE events (id INTEGER PRIMARY KEY, device INTEGER REFERENCES devices(id), "
        "port TEXT, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', "
        "count INTEGER NOT NULL DEFAULT 1, key TEXT COLLATE NOCASE)",
        "INSERT INTO events SELECT * FROM old_events", "DROP TABLE old_events",
        "CREATE UNIQUE INDEX events_by_key ON events (key)"]),
}


@pytest.fixture(params=sorted(HOSTILE))
def hostile(request, tmp_path):
    """(path of a zeal file with one hostile change, the name the refusal gives)."""
    path = str(tmp_path / "handed.db")
    zeal_file(path)
    name, sql = HOSTILE[request.param]
    add(path, *sql)
    return path, name


def test_zeal_collect_refuses_it_with_one_line_and_changes_nothing(hostile, capsys):
    path, name = hostile
    before = sha(path)
    with Pty() as line:
        rc = cli_main(["collect", "--port", line.port, "--db", path, "--duration", "1"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.count("\n") == 1 and err.startswith("zeal: database ") and "Traceback" not in err
    assert re.search(r"\b%s\b" % name, err), err
    assert sha(path) == before
    assert sorted(os.listdir(os.path.dirname(path))) == ["handed.db"]  # no -wal, no -journal


def test_every_writer_refuses_it_and_readers_read_it_unchanged(hostile):
    path, name = hostile
    before = sha(path)
    for opener in (Store, lambda p: open_existing(p, readonly=False), open_store):
        with pytest.raises(StoreError, match="zeal did not create|not as zeal creates it|"
                                             "lacks zeal's") as info:
            opener(path)
        assert "\n" not in str(info.value)
    assert sha(path) == before
    with open_existing(path) as st:                    # a reader: nothing it defines runs
        rows = st.frames(fingerprint=PROF.fingerprint)
        assert [(r[2], r[5]) for r in rows] == [(0, wire.pack_reports([1, 2, 3], PROF.bits))]
        assert [e["kind"] for e in st.events()] == ["status"]
    done = subprocess.run([sys.executable, "-m", "zeal.cli", "events", "--db", path],
                          capture_output=True, text=True, env=ENV)
    assert done.returncode == 0 and "status" in done.stdout, done.stderr
    assert sha(path) == before


def test_the_triggers_would_have_run(tmp_path):
    """What the refusal prevents, shown on a connection that ignores it: the file's own
    triggers delete, zero and bloat what a write stores."""
    path = str(tmp_path / "z.db")
    zeal_file(path)
    for key in ("delete-on-insert trigger", "payload-zeroing trigger", "1 MB per event trigger"):
        add(path, *HOSTILE[key][1])
    con = sqlite3.connect(path)
    con.execute("INSERT INTO frames (device, boot, nonce, seq, crc, fingerprint, count, "
                "payload, arrival) SELECT device, boot, nonce, 9, crc, fingerprint, count, "
                "payload, arrival FROM frames")
    con.execute("INSERT INTO events (time, kind) VALUES (0, 'x')")
    assert con.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 0
    assert con.execute("SELECT SUM(length(port)) FROM links").fetchone()[0] >= 1_000_000
    con.close()


def test_a_trigger_added_while_a_store_is_open_stops_the_next_write(tmp_path):
    path = str(tmp_path / "z.db")
    zeal_file(path)
    with Store(path) as st:
        add(path, *HOSTILE["delete-on-insert trigger"][1])
        with pytest.raises(StoreError, match='trigger "zap" on frames'):
            st.write([frame(1)])
        for call in (lambda: st.open_link("p"), lambda: st.add_profile(PROF)):
            with pytest.raises(StoreError, match='trigger "zap"'):
                call()
    with open_existing(path) as st:
        assert st.meta()["frames"] == 1 and st.meta()["links"] == 0


def test_a_schema_1_file_with_a_trigger_is_not_migrated(tmp_path):
    path = str(tmp_path / "v1.db")
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_1)
    con.execute("CREATE TRIGGER zap AFTER INSERT ON frames BEGIN DELETE FROM frames; END")
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    before = sha(path)
    with pytest.raises(StoreError, match='trigger "zap"'):
        Store(path)
    assert sha(path) == before


def test_a_half_made_file_with_a_trigger_is_not_completed(tmp_path):
    path = str(tmp_path / "half.db")
    con = sqlite3.connect(path)
    con.executescript(SCHEMA_1.split("CREATE TABLE IF NOT EXISTS devices")[0])
    con.execute("CREATE TRIGGER zap AFTER INSERT ON profiles BEGIN DELETE FROM profiles; END")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match='trigger "zap" on profiles'):
        Store(path)


def test_files_zeal_made_are_accepted(tmp_path):
    """New, reopened, migrated from schema 1 (renamed table, added column), after ANALYZE
    (sqlite_stat1 is SQLite's own) and after another zeal opened it: all writable."""
    path = str(tmp_path / "z.db")
    zeal_file(path)
    add(path, "ANALYZE")
    with Store(path) as st:
        st.write([frame(1)])
        assert st.meta()["frames"] == 2
    old = str(tmp_path / "v1.db")
    con = sqlite3.connect(old)
    con.executescript(SCHEMA_1)
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    with Store(old) as st:
        st.add_profile(PROF)
        st.write([frame(1)])
    with Store(old) as st:
        assert st.schema == 2 and st.meta()["frames"] == 1


# ---- PostgreSQL ---------------------------------------------------------------------------------
PG_HOSTILE = {
    "trigger": ("a trigger \"zap\"", [
        "CREATE FUNCTION zap() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN DELETE FROM frames; RETURN NULL; END $$",
        "CREATE TRIGGER zap AFTER INSERT ON frames FOR EACH ROW EXECUTE FUNCTION zap()"]),
    "rule": ("a rule \"nothing\"",
             ["CREATE RULE nothing AS ON INSERT TO frames DO INSTEAD NOTHING"]),
    "row-level security": ("row-level security", [
        "ALTER TABLE frames ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE frames FORCE ROW LEVEL SECURITY"]),
}


@pytest.mark.parametrize("kind", sorted(PG_HOSTILE))
def test_postgresql_tables_with_a_trigger_rule_or_policy_are_refused(postgres_url, kind):
    import psycopg
    with open_store(postgres_url) as st:
        st.add_profile(PROF)
        st.write([frame(0)])
    what, sql = PG_HOSTILE[kind]
    with psycopg.connect(postgres_url, autocommit=True) as con:
        for s in sql:
            con.execute(s)
    with pytest.raises(StoreError, match="table frames has %s, which zeal did not create"
                                         % what) as info:
        open_store(postgres_url)
    assert "\n" not in str(info.value)
    if kind != "row-level security":       # the owner's own policy-less table hides its rows
        with open_store(postgres_url, read_only=True) as st:
            assert st.meta()["frames"] == 1
