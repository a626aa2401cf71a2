"""SQLite store (stdlib sqlite3, WAL): devices, profiles, frames, events, links.

A frame counts as stored only once the transaction that inserted it has committed.
Frames are keyed by (device, boot, seq, crc): re-ingesting the same stream inserts nothing
new (INSERT OR IGNORE), while two different frames that share a wrapped sequence number
differ in their CRC (a coincidence has probability 2^-32).
Payloads are kept exactly as received (the packed m-bit reports); doubles are rebuilt on
read under the stored profile, never stored as floats.
"""
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from typing import Iterable, List, Optional
from urllib.parse import quote

from .errors import ZealError
from .profile import Profile, loads as profile_loads

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS profiles (
    fingerprint TEXT PRIMARY KEY,            -- 64 hex digits
    doc         TEXT NOT NULL                -- the profile file (canonical JSON + fingerprint)
);
CREATE TABLE IF NOT EXISTS devices (
    id          INTEGER PRIMARY KEY,
    device_id   BLOB NOT NULL UNIQUE,        -- 8 bytes from HELLO
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS frames (
    id          INTEGER PRIMARY KEY,
    device      INTEGER NOT NULL REFERENCES devices(id),
    boot        INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    crc         INTEGER NOT NULL,
    fingerprint TEXT NOT NULL REFERENCES profiles(fingerprint),
    count       INTEGER NOT NULL,
    payload     BLOB NOT NULL,               -- count * bits bits, LSB first, as received
    arrival     REAL NOT NULL,               -- unix time the collector read it
    vector      INTEGER NOT NULL DEFAULT 0,  -- 1: test-mode frame, never real data
    UNIQUE (device, boot, seq, crc)
);
CREATE TABLE IF NOT EXISTS events (
    id          INTEGER PRIMARY KEY,
    device      INTEGER REFERENCES devices(id),
    port        TEXT,
    time        REAL NOT NULL,
    kind        TEXT NOT NULL,               -- reboot, gap, reject, status, connect, ...
    detail      TEXT NOT NULL DEFAULT '',
    count       INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS links (
    id          INTEGER PRIMARY KEY,
    port        TEXT NOT NULL,
    opened      REAL NOT NULL,
    closed      REAL,
    bytes       INTEGER NOT NULL DEFAULT 0   -- every byte read on this link, frames or not
);
CREATE INDEX IF NOT EXISTS frames_by_profile ON frames (fingerprint, vector);
"""


class StoreError(ZealError):
    """The database cannot be opened or written (busy, corrupt, newer schema, ...)."""


@dataclass(frozen=True)
class FrameRecord:
    device_id: bytes
    boot: int
    seq: int
    crc: int
    fingerprint: str
    count: int
    payload: bytes
    arrival: float
    vector: bool = False

    @classmethod
    def from_batch(cls, batch, arrival: Optional[float] = None) -> "FrameRecord":
        """From a zeal.wire.Batch."""
        return cls(device_id=bytes(batch.device_id), boot=batch.boot, seq=batch.seq,
                   crc=batch.crc, fingerprint=batch.profile.fingerprint, count=len(batch),
                   payload=bytes(batch.payload),
                   arrival=time.time() if arrival is None else arrival, vector=batch.vector)


@dataclass(frozen=True)
class EventRecord:
    kind: str
    detail: str = ""
    count: int = 1
    device_id: Optional[bytes] = None
    port: Optional[str] = None
    time: float = 0.0


def wrap_sql_error(exc: sqlite3.Error, path) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreError("database %s is busy (another program holds a write lock)" % path)
    return StoreError("database %s: %s" % (path, text))


class Store:
    def __init__(self, path, *, timeout: float = 5.0):
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable commits
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError("database %s has schema %d; this zeal reads up to %d"
                                 % (self.path, version, SCHEMA_VERSION))
            if version < SCHEMA_VERSION:  # new file (every statement is IF NOT EXISTS)
                tables = self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE "
                                         "type = 'table'").fetchone()[0]
                if tables:  # someone else's SQLite file: never add our tables to it
                    self.db.close()
                    raise StoreError("%s is an SQLite database of another program, not a zeal "
                                     "database" % self.path)
                self.db.executescript(_SCHEMA)
                self.db.execute("PRAGMA user_version=%d" % SCHEMA_VERSION)
        except sqlite3.DatabaseError as exc:
            raise wrap_sql_error(exc, self.path) from None
        self._devices = {}
        self.last_new_reports = 0

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ------------------------------------------------------------------------------
    def _device(self, device_id: bytes, now: float) -> int:
        row = self._devices.get(device_id)
        if row is None:
            self.db.execute("INSERT OR IGNORE INTO devices (device_id, first_seen, last_seen) "
                            "VALUES (?, ?, ?)", (device_id, now, now))
            row = self.db.execute("SELECT id FROM devices WHERE device_id = ?",
                                  (device_id,)).fetchone()[0]
            self._devices[device_id] = row
        return row

    def add_profile(self, profile: Profile) -> None:
        try:
            self.db.execute("INSERT OR IGNORE INTO profiles (fingerprint, doc) VALUES (?, ?)",
                            (profile.fingerprint, profile.to_json()))
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def write(self, frames: Iterable[FrameRecord] = (), events: Iterable[EventRecord] = (),
              link: Optional[tuple] = None) -> int:
        """One transaction: frames (duplicates ignored), events, and optionally a link's byte
        count as (link_id, bytes). Returns the number of frames newly stored; the number of
        reports in them is left in `last_new_reports`."""
        now = time.time()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            new = reports = 0
            try:
                for f in frames:
                    dev = self._device(f.device_id, now)
                    cur = self.db.execute(
                        "INSERT OR IGNORE INTO frames (device, boot, seq, crc, fingerprint, "
                        "count, payload, arrival, vector) VALUES (?,?,?,?,?,?,?,?,?)",
                        (dev, f.boot, f.seq, f.crc, f.fingerprint, f.count, f.payload,
                         f.arrival, int(f.vector)))
                    new += cur.rowcount
                    reports += f.count * cur.rowcount
                    self.db.execute("UPDATE devices SET last_seen = ? WHERE id = ?", (now, dev))
                for e in events:
                    dev = self._device(e.device_id, now) if e.device_id is not None else None
                    self.db.execute("INSERT INTO events (device, port, time, kind, detail, "
                                    "count) VALUES (?,?,?,?,?,?)",
                                    (dev, e.port, e.time or now, e.kind, e.detail, e.count))
                if link is not None:
                    self.db.execute("UPDATE links SET bytes = ? WHERE id = ?",
                                    (link[1], link[0]))
                self.db.execute("COMMIT")
                self.last_new_reports = reports
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            return new
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def open_link(self, port: str) -> int:
        try:
            cur = self.db.execute("INSERT INTO links (port, opened) VALUES (?, ?)",
                                  (port, time.time()))
            return cur.lastrowid
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def close_link(self, link_id: int, nbytes: int) -> None:
        try:
            self.db.execute("UPDATE links SET closed = ?, bytes = ? WHERE id = ?",
                            (time.time(), nbytes, link_id))
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    # ---- reading ------------------------------------------------------------------------------
    def profiles(self) -> dict:
        """fingerprint (hex) -> Profile, each re-validated on load."""
        out = {}
        for fp, doc in self.db.execute("SELECT fingerprint, doc FROM profiles"):
            out[fp] = profile_loads(doc)
        return out

    def frames(self, *, fingerprint: Optional[str] = None, vector: bool = False) -> List[tuple]:
        """Rows (device_id, boot, seq, fingerprint, count, payload, arrival), in arrival order;
        test-mode (vector) frames only when asked."""
        sql = ("SELECT d.device_id, f.boot, f.seq, f.fingerprint, f.count, f.payload, "
               "f.arrival FROM frames f JOIN devices d ON d.id = f.device WHERE f.vector = ?")
        args = [int(vector)]
        if fingerprint is not None:
            sql += " AND f.fingerprint = ?"
            args.append(fingerprint)
        return self.db.execute(sql + " ORDER BY f.id", args).fetchall()

    def event_counts(self) -> dict:
        """(device_id or None, kind, detail) -> summed count."""
        rows = self.db.execute(
            "SELECT d.device_id, e.kind, e.detail, SUM(e.count) FROM events e "
            "LEFT JOIN devices d ON d.id = e.device GROUP BY d.device_id, e.kind, e.detail")
        return {(dev, kind, detail): n for dev, kind, detail, n in rows}

    def link_bytes(self) -> int:
        return self.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM links").fetchone()[0]

    def meta(self) -> dict:
        return {"schema": SCHEMA_VERSION, "path": self.path,
                "frames": self.db.execute("SELECT COUNT(*) FROM frames").fetchone()[0]}


def open_existing(path, *, timeout: float = 5.0) -> Store:
    """Open a zeal database that must already exist; never creates or converts a file
    (`Store()` adds the zeal schema to any new or empty SQLite file)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StoreError("database %s does not exist" % path)
    if not os.path.isfile(path):
        raise StoreError("database %s is not a file" % path)
    uri = "file:%s?mode=ro" % quote(os.path.abspath(path))
    try:  # look first, read-only
        probe = sqlite3.connect(uri, uri=True, timeout=timeout)
        try:
            version = probe.execute("PRAGMA user_version").fetchone()[0]
            has_frames = probe.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                       "AND name = 'frames'").fetchone() is not None
        finally:
            probe.close()
    except sqlite3.Error as exc:
        raise wrap_sql_error(exc, path) from None
    if version == 0 or not has_frames:
        raise StoreError("%s is not a zeal database" % path)
    if version > SCHEMA_VERSION:
        raise StoreError("database %s has schema %d; this zeal reads up to %d"
                         % (path, version, SCHEMA_VERSION))
    return Store(path, timeout=timeout)


def profile_doc(profile: Profile) -> dict:
    return json.loads(profile.to_json())
