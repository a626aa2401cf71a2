"""The store: SQLite (stdlib sqlite3, WAL; `Store`) or PostgreSQL (psycopg 3; `PgStore`):
devices, profiles, frames, events, links, unresolved.

`open_store(path_or_url)` is the one way in for commands: a file path opens the SQLite store
(the embedded default), a `postgresql://` URL the PostgreSQL store (PgStore, described in its
section below: the same tables, keys, events and caps; several collectors may write it at
once). Both have the methods below; code outside the stores uses only those (never `store.db`
directly). What follows describes SQLite; PgStore differs only where its section says.

A frame counts as stored only once the transaction that inserted it has committed.

Identity (schema 2). A frame is keyed by (device, boot, nonce, seq): `nonce` is the 8-byte
session nonce of its HELLO (fresh every boot, so a boot counter that restarts after a lost seed
file, or two boards that share a device id, still give distinct keys) and `seq` the full u32
sequence number (the decoder extends the u16 on the wire, so a wrapped u16 is not a repeat).
The key is unique by construction: re-ingesting a stream inserts nothing new (INSERT OR
IGNORE), and a frame with a stored key but another CRC is not dropped silently: it is recorded
as an event `conflict` (detail: both CRCs). Payloads are kept exactly as received (the packed
m-bit reports); doubles are rebuilt on read under the stored profile, never stored as floats.
Frames carried over from schema 1 (protocol 1, no nonce) get as nonce the 4 bytes of their CRC
(big-endian, never 8 bytes long), so schema 1's key (device, boot, seq, crc) maps one to one
onto schema 2's.

Unresolved frames: DATA that the decoder could not open yet (no HELLO on the line, or a CRC
that fails under the latest session) is kept raw in `unresolved` (port, arrival, body, crc,
reason) until the collector resolves it (then `Store.write(resolved=ids)` deletes it, in the
same transaction as the frames it became) -- at most MAX_UNRESOLVED_PER_PORT rows per port:
beyond that the oldest rows are deleted and counted in the event `unresolved_dropped` (one
row per port).

Events carry an identity `key` (TEXT, UNIQUE, NULL for events that are not deduplicated, such
as connect/disconnect of this run). An event whose key is stored already is ignored, so
collecting the same stream twice does not double anything. The collector makes the keys
(collector.py is the reference); their shape, with session = the hex of the 28 HELLO session
bytes (device id, fingerprint, boot, nonce; so a key does not depend on the port):
    session/reboot  "hello:<session>"                        (whichever kind came first)
    gap             "lost:<session>" (the session's state and its `gap` figure),
                    "lost:<session>:before_attach", "lost:<session>:unattended": SET
                    from the frames stored, in write()'s transaction, never added to
                    (zeal.collect.accounting); "gap:<session>:<seq>" in older files
    status          "status:<session>:<ticks>:<code>"
    reject          "reject:<session or port>:<last seq seen>:<reason>:<ordinal at that seq>"
    restart         "restart:<session>:<last seq seen>"
Keys that begin with "store:" are the store's own:
    conflict            "store:conflict:<device>:<boot>:<nonce>:<seq>:<crc>"
    unresolved_dropped  "store:unresolved_dropped:<port>"   counter row (count grows)
    events_dropped      "store:events_dropped"              counter row
    devices_dropped     "store:devices_dropped"             counter row

Caps (a hostile or broken device must not grow the file without bound):
    MAX_DEVICES = 100 000 device rows: frames and events of a further device are not stored;
        each is counted in the single event row `devices_dropped`.
    MAX_EVENTS = 1 000 000 event rows: further events are not stored; each is counted in the
        single event row `events_dropped` (the counter rows themselves are always kept).
    MAX_UNRESOLVED_PER_PORT = 65 536 unresolved rows per port (a DATA body is at most ~2 KB:
        at most ~134 MB per port).
Rows are never deleted from devices and events, so the largest id is their row count.

Robustness: schema creation and the migration 1 -> 2 each run in one transaction together
with `PRAGMA user_version` (transactional in SQLite), so a kill leaves either the old file or the
complete new one. A file that is not zeal's is refused before anything is written to it (no
switch to WAL). Reading commands open with `open_existing(path)` (read-only: `mode=ro`, no
PRAGMA that writes; a WAL file in a read-only folder is read as immutable when no -wal file
exists). A failed write reports SQLite's own error (a full disk: "disk full"), rolling back only
if SQLite has not done so itself. Damaged rows give one-line errors on reading (StoreError;
ProfileError for a stored profile that is not valid or not the one its fingerprint names).
"""
import errno
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Dict, Iterable, List, Optional
from urllib.parse import quote, urlsplit, urlunsplit

from ..errors import ProfileError, ZealError
from . import accounting
from ..mechanism.grid.profile import Profile
from ..mechanism import kinds
from ..mechanism.kinds import loads as loads_any

SCHEMA_VERSION = 2

MAX_DEVICES = 100_000
MAX_EVENTS = 1_000_000
MAX_UNRESOLVED_PER_PORT = 65_536

_FRAMES = """CREATE TABLE {name} (
    id          INTEGER PRIMARY KEY,
    device      INTEGER NOT NULL REFERENCES devices(id),
    boot        INTEGER NOT NULL,
    nonce       BLOB NOT NULL,               -- 8 bytes: the session nonce of the HELLO
    seq         INTEGER NOT NULL,            -- the full u32 sequence number
    crc         INTEGER NOT NULL,
    fingerprint TEXT NOT NULL REFERENCES profiles(fingerprint),
    count       INTEGER NOT NULL,
    payload     BLOB NOT NULL,               -- count * bits bits, LSB first, as received
    arrival     REAL NOT NULL,               -- unix time the collector read it
    vector      INTEGER NOT NULL DEFAULT 0,  -- 1: test-mode frame, never real data
    debug       INTEGER NOT NULL DEFAULT 0,  -- 1: from a non-private debug build
    UNIQUE (device, boot, nonce, seq)
)"""

# Schema 2, one statement at a time (executescript would COMMIT first and after each one).
_SCHEMA = [
    """CREATE TABLE profiles (
    fingerprint TEXT PRIMARY KEY,            -- 64 hex digits
    doc         TEXT NOT NULL                -- the profile file (canonical JSON + fingerprint)
)""",
    """CREATE TABLE devices (
    id          INTEGER PRIMARY KEY,
    device_id   BLOB NOT NULL UNIQUE,        -- 8 bytes from HELLO
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL
)""",
    _FRAMES.format(name="frames"),
    """CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    device      INTEGER REFERENCES devices(id),
    port        TEXT,
    time        REAL NOT NULL,
    kind        TEXT NOT NULL,               -- reboot, gap, reject, status, connect, ...
    detail      TEXT NOT NULL DEFAULT '',
    count       INTEGER NOT NULL DEFAULT 1,
    key         TEXT                         -- identity (see above); UNIQUE by index
)""",
    """CREATE TABLE links (
    id          INTEGER PRIMARY KEY,
    port        TEXT NOT NULL,
    opened      REAL NOT NULL,
    closed      REAL,
    bytes       INTEGER NOT NULL DEFAULT 0   -- every byte read on this link, frames or not
)""",
]
_SCHEMA_TAIL = [  # shared with the migration from schema 1
    """CREATE TABLE unresolved (
    id          INTEGER PRIMARY KEY,
    port        TEXT NOT NULL,
    arrival     REAL NOT NULL,
    body        BLOB NOT NULL,               -- the DATA body as received (CRC not verified)
    crc         INTEGER NOT NULL,            -- the CRC that followed it
    reason      TEXT NOT NULL                -- no_hello, crc
)""",
    "CREATE INDEX unresolved_by_port ON unresolved (port, id)",
    "CREATE UNIQUE INDEX events_by_key ON events (key)",
    "CREATE INDEX frames_by_profile ON frames (fingerprint, vector)",
    "PRAGMA user_version = %d" % SCHEMA_VERSION,
]

_MIGRATE_1_TO_2 = [
    _FRAMES.format(name="frames_v2"),
    "INSERT INTO frames_v2 (id, device, boot, nonce, seq, crc, fingerprint, count, payload, "
    "arrival, vector, debug) SELECT id, device, boot, zeal_v1_nonce(crc), seq, crc, fingerprint, "
    "count, payload, arrival, vector, 0 FROM frames",
    "DROP TABLE frames",                     # and its index frames_by_profile
    "ALTER TABLE frames_v2 RENAME TO frames",
    "ALTER TABLE events ADD COLUMN key TEXT",
] + _SCHEMA_TAIL

# The columns each version's tables must have for a file to count as zeal's.
_COLUMNS_1 = {
    "profiles": {"fingerprint", "doc"},
    "devices": {"id", "device_id", "first_seen", "last_seen"},
    "frames": {"id", "device", "boot", "seq", "crc", "fingerprint", "count", "payload",
               "arrival", "vector"},
    "events": {"id", "device", "port", "time", "kind", "detail", "count"},
    "links": {"id", "port", "opened", "closed", "bytes"},
}
_COLUMNS = {1: _COLUMNS_1, 2: dict(_COLUMNS_1, frames=_COLUMNS_1["frames"] | {"nonce", "debug"},
                                   events=_COLUMNS_1["events"] | {"key"},
                                   unresolved={"id", "port", "arrival", "body", "crc", "reason"})}


# Schema 1 as zeal created it (before schema 2): what a schema-1 file must look like to be
# migrated (nothing else in it, see _shape).
_SCHEMA_1 = [
    "CREATE TABLE profiles (fingerprint TEXT PRIMARY KEY, doc TEXT NOT NULL)",
    "CREATE TABLE devices (id INTEGER PRIMARY KEY, device_id BLOB NOT NULL UNIQUE, "
    "first_seen REAL NOT NULL, last_seen REAL NOT NULL)",
    "CREATE TABLE frames (id INTEGER PRIMARY KEY, device INTEGER NOT NULL REFERENCES "
    "devices(id), boot INTEGER NOT NULL, seq INTEGER NOT NULL, crc INTEGER NOT NULL, "
    "fingerprint TEXT NOT NULL REFERENCES profiles(fingerprint), count INTEGER NOT NULL, "
    "payload BLOB NOT NULL, arrival REAL NOT NULL, vector INTEGER NOT NULL DEFAULT 0, "
    "UNIQUE (device, boot, seq, crc))",
    "CREATE TABLE events (id INTEGER PRIMARY KEY, device INTEGER REFERENCES devices(id), "
    "port TEXT, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', "
    "count INTEGER NOT NULL DEFAULT 1)",
    "CREATE TABLE links (id INTEGER PRIMARY KEY, port TEXT NOT NULL, opened REAL NOT NULL, "
    "closed REAL, bytes INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX frames_by_profile ON frames (fingerprint, vector)",
]


def _words(sql) -> set:
    """The words of a CREATE statement (lower case), comments and string literals left out."""
    sql = re.sub(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", " ", sql or "", flags=re.S)
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", sql)}


def _shape(db) -> dict:
    """What a file holds besides SQLite's own objects (sqlite_%), as
    {(type, name): what it is}: a table by its columns (name, type, NOT NULL, default,
    primary key, hidden), foreign keys, every index on it (autoindexes of UNIQUE included:
    unique, origin, partial, columns with order and collation) and the words of its CREATE
    statement that zeal's tables do not use (CHECK, COLLATE, GENERATED, ON CONFLICT...:
    constraints the pragmas do not show); a named index by its table; a trigger or view by
    its table. Reads only (pragma functions, no PRAGMA statement)."""
    out = {}
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                      "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name")
    for kind, name, table, sql in rows.fetchall():
        if kind != "table":
            out[(kind, name)] = table
            continue
        cols = tuple((n, (t or "").upper(), nn, d, pk, hid) for _cid, n, t, nn, d, pk, hid
                     in db.execute("SELECT * FROM pragma_table_xinfo(?)", (name,)))
        fks = tuple(sorted(tuple(r[2:]) for r in db.execute(
            "SELECT * FROM pragma_foreign_key_list(?)", (name,))))
        idx = []
        for _seq, iname, unique, origin, partial in db.execute(
                "SELECT * FROM pragma_index_list(?)", (name,)).fetchall():
            keys = tuple((n, desc, coll) for _s, _c, n, desc, coll, key in db.execute(
                "SELECT * FROM pragma_index_xinfo(?)", (iname,)) if key)
            idx.append((unique, origin, partial, keys, iname if origin == "c" else None))
        out[(kind, name)] = (cols, fks, tuple(sorted(idx, key=repr)),
                             frozenset(_words(sql) - _ZEAL_WORDS))
    return out


def _zeal_shapes() -> dict:
    """version -> _shape of a file zeal creates at that version."""
    shapes = {}
    for version, statements in ((1, _SCHEMA_1), (2, _SCHEMA + _SCHEMA_TAIL)):
        db = sqlite3.connect(":memory:")
        try:
            for sql in statements:
                db.execute(sql)
            shapes[version] = _shape(db)
        finally:
            db.close()
    return shapes


_WHY_NOT = {"trigger": "a write would run it",
            "index": "an index can make a write skip rows",
            "view": "zeal makes no views",
            "table": "zeal makes no such table"}
_ZEAL_WORDS = frozenset().union(*(_words(sql) for sql in _SCHEMA_1 + _SCHEMA + _SCHEMA_TAIL
                                   if sql.startswith("CREATE TABLE")))
_ZEAL_SHAPES = _zeal_shapes()


def _v1_nonce(crc):
    """Schema 1 frames have no session nonce: their CRC stands in (4 bytes, never 8)."""
    if not isinstance(crc, int) or not 0 <= crc < 1 << 32:
        return None  # NOT NULL fails: the migration stops with a one-line error
    return crc.to_bytes(4, "big")


class StoreError(ZealError):
    """The database cannot be opened, read or written (busy, corrupt, full, newer schema...).
    `transient`: the failure may pass (busy, disk full, a server's connection lost): a
    write refused so changed nothing and may be tried again (the collector does)."""

    def __init__(self, *args, transient: bool = False):
        super().__init__(*args)
        self.transient = transient


@dataclass(frozen=True)
class FrameRecord:
    device_id: bytes
    boot: int
    nonce: bytes            # 8 bytes: the session nonce of the frame's HELLO
    seq: int                # the full u32 sequence number
    crc: int
    fingerprint: str
    count: int
    payload: bytes
    arrival: float
    vector: bool = False
    debug: bool = False

    @classmethod
    def from_batch(cls, batch, arrival: Optional[float] = None) -> "FrameRecord":
        """From a zeal.wire.Batch."""
        return cls(device_id=bytes(batch.device_id), boot=batch.boot, nonce=bytes(batch.nonce),
                   seq=batch.seq, crc=batch.crc, fingerprint=batch.profile.fingerprint,
                   count=len(batch), payload=bytes(batch.payload),
                   arrival=time.time() if arrival is None else arrival,
                   vector=bool(batch.vector), debug=bool(getattr(batch, "debug", False)))


@dataclass(frozen=True)
class EventRecord:
    kind: str
    detail: str = ""
    count: int = 1
    device_id: Optional[bytes] = None
    port: Optional[str] = None
    time: float = 0.0
    key: Optional[str] = None   # identity: an event whose key is stored already is ignored


@dataclass(frozen=True)
class UnresolvedRecord:
    port: str
    arrival: float
    body: bytes
    crc: int
    reason: str


def wrap_sql_error(exc: sqlite3.Error, path) -> StoreError:
    text = str(exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    if "locked" in text or "busy" in text:
        return StoreError("database %s is busy (another program holds a write lock)" % path,
                          transient=True)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return StoreError("database %s: disk full (%s)" % (path, text), transient=True)
    return StoreError("database %s: %s" % (path, text))


def _uri(path: str, extra: str = "") -> str:
    return "file:%s?mode=ro%s" % (quote(os.path.abspath(path)), extra)


class Store:
    """A zeal database. `readonly=True` opens an existing file with `mode=ro` and never writes
    (use `open_existing`); otherwise a new or empty file gets the schema and a schema-1 file is
    converted in place. Caps: the class attributes max_devices, max_events,
    max_unresolved_per_port (tests may lower them on an instance)."""

    max_devices = MAX_DEVICES
    max_events = MAX_EVENTS
    max_unresolved_per_port = MAX_UNRESOLVED_PER_PORT
    backend = "sqlite"
    _lock_suffix = ""   # its write transaction holds the whole file
    # what the last write() held: device ids it has rows of, and the frames and events it
    # did not store because their device would exceed max_devices (the event devices_dropped)
    last_devices = frozenset()
    last_devices_dropped = 0
    _cookie = None          # the schema cookie (PRAGMA schema_version) last checked

    def __init__(self, path, *, timeout: float = 5.0, readonly: bool = False):
        self.path = str(path)
        self.readonly = readonly
        self._devices: Dict[bytes, int] = {}
        self.last_new_reports = 0
        self.last_conflicts = 0
        self.last_unresolved_ids: List[int] = []   # ids of the unresolved rows write() added
        self.db = None
        try:
            if readonly:
                self.db = self._connect_readonly(timeout)
            else:
                self.db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
                self.schema = self._open_writable()
        except BaseException as exc:
            if self.db is not None:
                self.db.close()
            if isinstance(exc, sqlite3.Error):
                raise wrap_sql_error(exc, self.path) from None
            raise

    # ---- opening ------------------------------------------------------------------------------
    def _look(self):
        """(user_version, {table: set of columns}) -- reads only."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        names = [r[0] for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")]
        tables = {}
        for name in names:
            tables[name] = {r[1] for r in self.db.execute(
                'PRAGMA table_info("%s")' % name.replace('"', '""'))}
        return version, tables

    def _refuse_foreign(self, version: int, tables: dict) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError("database %s has schema %d; this zeal reads up to %d"
                             % (self.path, version, SCHEMA_VERSION))
        if version == 0:
            if tables and not self._half_made(tables):
                raise StoreError("%s is an SQLite database of another program, not a zeal "
                                 "database" % self.path)
            return
        expected = _COLUMNS.get(version)
        if expected is None or any(not cols <= tables.get(name, set())
                                   for name, cols in expected.items()):
            raise StoreError("%s is an SQLite database of another program, not a zeal "
                             "database (user_version %d without zeal's tables)"
                             % (self.path, version))

    def _refuse_strangers(self, version: int) -> None:
        """A writer refuses a file holding anything zeal did not create there: a trigger would
        run inside every write (deleting or changing what is stored, or growing the file,
        silently), an index or constraint added to a table could make INSERT OR IGNORE skip
        rows, and zeal has no use for views or tables of its own name's. The file must hold
        exactly the tables and indexes zeal makes at its version (_ZEAL_SHAPES; a file of
        version 0 only what an older zeal's interrupted creation can have left, which is
        dropped). Reading such a file runs nothing it defines (no trigger fires on a read; a
        view cannot take a table's name), so readers (open_existing) do not ask this."""
        expected = _ZEAL_SHAPES[version or 1]
        found = _shape(self.db)
        for (kind, name), what in sorted(found.items()):
            if (kind, name) not in expected:
                on = (" on %s" % what) if kind != "table" and what != name else ""
                raise StoreError(
                    "database %s holds %s \"%s\"%s, which zeal did not create: refused (%s); "
                    "zeal writes only to a database holding its own tables and indexes, and "
                    "reading it (analyze, export, events) is safe"
                    % (self.path, "an index" if kind == "index" else "a " + kind, name, on,
                       _WHY_NOT.get(kind, "zeal makes no such object")))
        if not version:
            return  # an interrupted creation's tables: dropped and made again
        missing = sorted("%s %s" % kn for kn in set(expected) - set(found))
        if missing:
            raise StoreError("database %s lacks zeal's %s: refused (changed by another "
                             "program); reading it (analyze, export, events) is safe"
                             % (self.path, ", ".join(missing)))
        for (kind, name), what in sorted(found.items()):
            if what != expected[(kind, name)]:
                raise StoreError(
                    "database %s: %s %s is not as zeal creates it (its columns, constraints "
                    "or indexes were changed): refused; zeal writes only to a database "
                    "holding its own tables and indexes, and reading it (analyze, export, "
                    "events) is safe" % (self.path, kind, name))

    def _guard(self) -> None:
        """Before a write: if the schema changed since it was checked (SQLite's schema
        cookie), check it again (a trigger added while a collector runs is refused too)."""
        cookie = self.db.execute("PRAGMA schema_version").fetchone()[0]
        if cookie != self._cookie:
            self._refuse_strangers(self.schema)
            self._cookie = cookie

    def _half_made(self, tables: dict) -> bool:
        """Empty zeal tables without a user_version: an older zeal killed while creating the
        file (it committed table by table). Nothing in them to lose."""
        for name, cols in tables.items():
            if name not in _COLUMNS_1 or not _COLUMNS_1[name] <= cols:
                return False
            if self.db.execute('SELECT 1 FROM "%s" LIMIT 1' % name).fetchone() is not None:
                return False
        return True

    def _open_writable(self) -> int:
        version, tables = self._look()
        self._refuse_foreign(version, tables)      # before anything is written to the file
        self._refuse_strangers(version)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable commits
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA trusted_schema=OFF")  # nothing in the file calls our functions
        if version == SCHEMA_VERSION:
            self._cookie = self.db.execute("PRAGMA schema_version").fetchone()[0]
            return version
        self.db.create_function("zeal_v1_nonce", 1, _v1_nonce, deterministic=True)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version, tables = self._look()         # again, under the write lock
            self._refuse_foreign(version, tables)
            self._refuse_strangers(version)
            if version == 0:
                for name in tables:                # _half_made: empty tables of an older zeal
                    self.db.execute('DROP TABLE "%s"' % name)
                statements = _SCHEMA + _SCHEMA_TAIL
            elif version == 1:
                statements = _MIGRATE_1_TO_2
            else:
                statements = []                    # another process did it meanwhile
            for sql in statements:
                self.db.execute(sql)
            self._refuse_strangers(SCHEMA_VERSION)  # what the migration made is zeal's
            self._cookie = self.db.execute("PRAGMA schema_version").fetchone()[0]
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return SCHEMA_VERSION

    def _connect_readonly(self, timeout: float):
        db = sqlite3.connect(_uri(self.path), uri=True, timeout=timeout, isolation_level=None)
        self.db = db
        try:
            version, tables = self._look()
        except sqlite3.OperationalError as exc:
            name = getattr(exc, "sqlite_errorname", "")
            if name not in ("SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN",
                            "SQLITE_READONLY_CANTINIT"):
                raise
            db.close()
            self.db = None
            if os.path.exists(self.path + "-wal"):
                raise StoreError("database %s cannot be read: its folder is read-only and it "
                                 "has a -wal file (a writer is running, or was killed); open it "
                                 "once with write access" % self.path) from None
            # A WAL file in a read-only folder: nobody can be writing it (a writer would need
            # the -wal file), so it is read as an immutable file.
            db = sqlite3.connect(_uri(self.path, "&immutable=1"), uri=True, timeout=timeout,
                                 isolation_level=None)
            self.db = db
            version, tables = self._look()
        if version == 0 and not tables:
            raise StoreError("%s is not a zeal database" % self.path)
        self._refuse_foreign(version, tables)
        if version == 0:
            raise StoreError("%s is not a zeal database" % self.path)
        self.schema = version
        return db

    def close(self) -> None:
        self.db.close()

    def set_timeout(self, seconds: float) -> None:
        """How long a write waits for another writer's lock before failing."""
        self.db.execute("PRAGMA busy_timeout = %d" % max(0, int(seconds * 1000)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ------------------------------------------------------------------------------
    def _writable(self) -> None:
        if self.readonly:
            raise StoreError("database %s is open read-only" % self.path)

    def _rollback(self) -> None:
        """After an error: forget cached row ids, and roll back unless SQLite already has (it
        does on a full disk, for one); the error being handled is the one to report."""
        self._devices.clear()
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _device(self, device_id: bytes, now: float) -> Optional[int]:
        """The devices row id, or None if a new device would exceed max_devices."""
        device_id = bytes(device_id)
        row = self._devices.get(device_id)
        if row is None:
            found = self.db.execute("SELECT id FROM devices WHERE device_id = ?",
                                    (device_id,)).fetchone()
            if found is None:
                top = self.db.execute("SELECT MAX(id) FROM devices").fetchone()[0] or 0
                if top >= self.max_devices:
                    return None
                row = self.db.execute("INSERT INTO devices (device_id, first_seen, last_seen) "
                                      "VALUES (?, ?, ?)", (device_id, now, now)).lastrowid
            else:
                row = found[0]
            self._cache_device(device_id, row)
        return row

    def _cache_device(self, device_id: bytes, row: int) -> None:
        """Remember a device's row id: at most max_devices of them (the cap; a file can hold
        more rows than that), the oldest forgotten first (looked up again if needed)."""
        while self._devices and len(self._devices) >= self.max_devices:
            del self._devices[next(iter(self._devices))]
        self._devices[device_id] = row

    def _count(self, kind: str, detail: str, n: int, now: float, port=None) -> None:
        """Add n to the store's counter row `kind` (per port if given); never capped."""
        if n <= 0:
            return
        key = "store:%s" % kind + ("" if port is None else ":" + port)
        self.db.execute("INSERT INTO events (device, port, time, kind, detail, count, key) "
                        "VALUES (NULL, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                        "count = count + excluded.count, time = excluded.time",
                        (port, now, kind, detail, n, key))

    def add_profile(self, profile: Profile) -> None:
        """Store a profile file (any kind); a multi header's attribute files are stored too,
        each as its own row (its fingerprint, its file), so the header loads from the store."""
        self._writable()
        rows = kinds.of(profile).files(profile)
        try:
            self._guard()
            self.db.executemany("INSERT OR IGNORE INTO profiles (fingerprint, doc) VALUES (?, ?)",
                                rows)
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def write(self, frames: Iterable[FrameRecord] = (), events: Iterable[EventRecord] = (),
              link: Optional[tuple] = None, unresolved: Iterable[UnresolvedRecord] = (),
              resolved: Iterable[int] = (), spans: Iterable = ()) -> int:
        """One transaction: frames (already stored keys ignored; a stored key with another CRC
        recorded as event `conflict`), events (already stored keys ignored), optionally a link's
        byte count as (link_id, bytes), unresolved DATA to keep, and the ids of unresolved rows
        to delete (`resolved`). Returns the number of frames newly stored; the number of reports
        in them is left in `last_new_reports`, the conflicts found in `last_conflicts`.
        `spans` (zeal.collect.accounting.Span): what the writer knows of the sessions it
        has news of; their loss rows are set in the same transaction (`last_lost`: session
        hex -> (gap, before_attach, unattended)). Also left: `last_new_events` (keyed
        events newly stored), `last_unresolved_dropped` (rows the per-port cap deleted),
        `last_resolved_deleted` (rows of `resolved` that were still there)."""
        self._writable()
        self._begin_tally()
        fresh = []  # frames newly stored
        now = time.time()
        new = reports = conflicts = 0
        held = set()      # device ids of this write the store has a row of
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._guard()
                no_device = 0
                touched = set()
                stored_events = []
                for f in frames:
                    dev = self._device(f.device_id, now)
                    if dev is None:
                        no_device += 1
                        continue
                    held.add(bytes(f.device_id))
                    key = (dev, int(f.boot), bytes(f.nonce), int(f.seq))
                    cur = self.db.execute(
                        "INSERT OR IGNORE INTO frames (device, boot, nonce, seq, crc, "
                        "fingerprint, count, payload, arrival, vector, debug) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        key + (int(f.crc), f.fingerprint, int(f.count), bytes(f.payload),
                               float(f.arrival), int(bool(f.vector)), int(bool(f.debug))))
                    if cur.rowcount == 1:
                        fresh.append(f)
                        new += 1
                        reports += f.count
                        touched.add(dev)
                        continue
                    old = self.db.execute("SELECT crc FROM frames WHERE device = ? AND boot = ? "
                                          "AND nonce = ? AND seq = ?", key).fetchone()
                    if old is not None and old[0] != f.crc:
                        conflicts += 1
                        stored_events.append((dev, None, now, "conflict",
                                              "boot %d nonce %s seq %d: stored crc %08x, "
                                              "received %08x" % (f.boot, key[2].hex(), f.seq,
                                                                 old[0] & 0xFFFFFFFF,
                                                                 f.crc & 0xFFFFFFFF),
                                              1, "store:conflict:%s:%d:%s:%d:%08x"
                                              % (bytes(f.device_id).hex(), f.boot,
                                                 key[2].hex(), f.seq, f.crc & 0xFFFFFFFF)))
                for dev in touched:
                    self.db.execute("UPDATE devices SET last_seen = ? WHERE id = ?", (now, dev))
                for e in events:
                    dev = None
                    if e.device_id is not None:
                        dev = self._device(e.device_id, now)
                        if dev is None:
                            no_device += 1
                            continue
                        held.add(bytes(e.device_id))
                    stored_events.append((dev, e.port, float(e.time or now), str(e.kind),
                                          str(e.detail), int(e.count), e.key))
                self._insert_events(stored_events, now)
                self._count("devices_dropped", "frames and events of devices beyond the cap "
                            "of %d" % self.max_devices, no_device, now)
                ids = self._unresolved(unresolved, resolved, now)
                if link is not None:
                    self.db.execute("UPDATE links SET bytes = ? WHERE id = ?",
                                    (link[1], link[0]))
                self._account(spans, fresh, now)
                self.db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None
        except OSError as exc:  # a full disk can show as ENOSPC too (a wrapper, a VFS)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreError("database %s: disk full (%s)" % (self.path, exc),
                                 transient=True) from None
            raise
        self.last_new_reports = reports
        self.last_conflicts = conflicts
        self.last_unresolved_ids = ids
        self._end_tally()
        self.last_devices, self.last_devices_dropped = held, no_device
        return new

    # what a write leaves in last_lost, last_new_events, last_unresolved_dropped,
    # last_resolved_deleted (see write)
    last_lost: dict = {}
    last_new_events = last_unresolved_dropped = last_resolved_deleted = 0

    def _begin_tally(self) -> None:
        self._keyed_new = self._unresolved_dropped = self._resolved_deleted = 0
        self._lost = {}

    def _account(self, spans, fresh, now: float) -> None:
        """The loss rows of the sessions of `spans` and of the frames newly stored
        (`fresh`), in the write's transaction (zeal.collect.accounting)."""
        if spans or fresh:
            tx = accounting.Transaction(run=self.db.execute, device=self._device,
                                        count=self._count, max_events=self.max_events,
                                        lock_suffix=self._lock_suffix)
            self._lost = accounting.apply(tx, spans, fresh, now)

    def _end_tally(self) -> None:
        self.last_lost, self.last_new_events = self._lost, self._keyed_new
        self.last_unresolved_dropped = self._unresolved_dropped
        self.last_resolved_deleted = self._resolved_deleted

    def _insert_events(self, rows: list, now: float) -> None:
        if not rows:
            return
        top = self.db.execute("SELECT MAX(id) FROM events").fetchone()[0] or 0
        dropped = 0
        for row in rows:
            key = row[6]
            if top >= self.max_events:
                if key is None or self.db.execute("SELECT 1 FROM events WHERE key = ?",
                                                  (key,)).fetchone() is None:
                    dropped += 1  # a duplicate key would not have been stored anyway
                continue
            cur = self.db.execute("INSERT OR IGNORE INTO events (device, port, time, kind, "
                                  "detail, count, key) VALUES (?,?,?,?,?,?,?)", row)
            top += cur.rowcount
            if key is not None:
                self._keyed_new += cur.rowcount
        self._count("events_dropped", "events beyond the cap of %d rows" % self.max_events,
                    dropped, now)

    def _unresolved(self, records, resolved, now: float) -> list:
        self._resolved_deleted += max(0, self.db.executemany(
            "DELETE FROM unresolved WHERE id = ?", ((int(i),) for i in resolved)).rowcount)
        ports = set()
        ids = []
        for u in records:
            ids.append(self.db.execute(
                "INSERT INTO unresolved (port, arrival, body, crc, reason) VALUES (?, ?, ?, ?, ?)",
                (u.port, float(u.arrival), bytes(u.body), int(u.crc), u.reason)).lastrowid)
            ports.add(u.port)
        for port in sorted(ports):
            row = self.db.execute("SELECT id FROM unresolved WHERE port = ? ORDER BY id DESC "
                                  "LIMIT 1 OFFSET ?",
                                  (port, self.max_unresolved_per_port)).fetchone()
            if row is not None:  # the newest max_unresolved_per_port rows stay
                n = self.db.execute("DELETE FROM unresolved WHERE port = ? AND id <= ?",
                                    (port, row[0])).rowcount
                self._unresolved_dropped += n
                self._count("unresolved_dropped", "oldest unresolved frames beyond the cap of "
                            "%d per port" % self.max_unresolved_per_port, n, now, port=port)
        return ids

    def open_link(self, port: str) -> int:
        self._writable()
        try:
            self._guard()
            cur = self.db.execute("INSERT INTO links (port, opened) VALUES (?, ?)",
                                  (port, time.time()))
            return cur.lastrowid
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def close_link(self, link_id: int, nbytes: int) -> None:
        self._writable()
        try:
            self._guard()
            self.db.execute("UPDATE links SET closed = ?, bytes = ? WHERE id = ?",
                            (time.time(), nbytes, link_id))
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    # ---- reading ------------------------------------------------------------------------------
    def _query(self, sql: str, args=()) -> list:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def _damaged(self, table: str, checks: list, source: str) -> None:
        """Raise a one-line StoreError naming the first row of `table` that fails a check."""
        cols = ", ".join("COALESCE(%s, 0)" % sql for _name, sql in checks)
        cond = " AND ".join("COALESCE(%s, 0)" % sql for _name, sql in checks)
        row = self._query("SELECT x.id, %s FROM %s WHERE NOT (%s) LIMIT 1"
                          % (cols, source, cond))
        if row:
            bad = [name for (name, _sql), ok in zip(checks, row[0][1:]) if not ok]
            raise StoreError("database %s: %s row %s is damaged (%s)"
                             % (self.path, table, row[0][0], ", ".join(bad)))

    def profiles(self) -> dict:
        """fingerprint (hex) -> Profile, each re-validated on load (ProfileError if a stored
        profile is not valid or not the one its fingerprint names)."""
        out = {}
        rows = self._query("SELECT fingerprint, doc FROM profiles")
        docs = {fp: doc for fp, doc in rows if isinstance(fp, str) and isinstance(doc, str)}
        # single-attribute kinds first; a multi header finds its attribute files by fingerprint
        rows.sort(key=lambda r: isinstance(r[1], str) and kinds.sniff(r[1]).refers_to_others)
        for fp, doc in rows:
            if not isinstance(fp, str) or not isinstance(doc, str):
                raise StoreError("database %s: profile row %r is damaged (not text)"
                                 % (self.path, fp))
            try:
                prof = loads_any(doc, lambda i, afp: docs.get(afp))
            except ZealError:
                raise
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise StoreError("database %s: profile %s is damaged (%s)"
                                 % (self.path, fp[:16], exc)) from None
            if prof.fingerprint != fp:
                raise ProfileError("database %s: the profile stored as %s has fingerprint %s"
                                   % (self.path, fp[:16], prof.fingerprint[:16]))
            out[fp] = prof
        return out

    _FRAME_CHECKS = [
        ("device id", "typeof(d.device_id) = 'blob' AND length(d.device_id) = 8"),
        ("boot", "typeof(x.boot) = 'integer' AND x.boot >= 0"),
        ("seq", "typeof(x.seq) = 'integer' AND x.seq >= 0"),
        ("fingerprint", "typeof(x.fingerprint) = 'text' AND length(x.fingerprint) = 64"),
        ("count", "typeof(x.count) = 'integer' AND x.count >= 0"),
        ("payload", "typeof(x.payload) = 'blob'"),
        ("arrival", "typeof(x.arrival) IN ('real', 'integer')"),
        ("vector", "typeof(x.vector) = 'integer' AND x.vector IN (0, 1)"),
    ]
    _FRAME_CHECKS_2 = [
        ("nonce", "typeof(x.nonce) = 'blob'"),
        ("debug", "typeof(x.debug) = 'integer' AND x.debug IN (0, 1)"),
    ]

    def profile_docs(self) -> list:
        """[(fingerprint, file text)] of every stored profile, as stored (not loaded)."""
        return self._query("SELECT fingerprint, doc FROM profiles")

    def nonces(self) -> List[bytes]:
        """The distinct session nonces of the stored frames (what a frame's key keeps)."""
        return [bytes(v) for (v,) in self._query("SELECT DISTINCT nonce FROM frames")]

    def _tables(self) -> List[str]:
        return [r[0] for r in self._query("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def cells(self):
        """(table, column, value) for every text and blob cell of every table of the store:
        what an audit reads when it searches the store for something it must not hold."""
        for table in self._tables():
            cur = self._run_query(table)
            cols = [d[0] for d in cur.description]
            for row in cur:
                for col, cell in zip(cols, row):
                    if isinstance(cell, (str, bytes, bytearray, memoryview)):
                        yield table, col, (cell.encode("utf-8", "surrogatepass")
                                           if isinstance(cell, str) else bytes(cell))

    def _run_query(self, table: str):
        try:
            return self.db.execute('SELECT * FROM "%s"' % table.replace('"', '""'))
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def frames(self, *, fingerprint: Optional[str] = None, vector: bool = False) -> List[tuple]:
        """Rows (device_id, boot, seq, fingerprint, count, payload, arrival, nonce, debug), in
        arrival order; test-mode (vector) frames only when asked. nonce is None and debug 0 for
        a schema-1 file read as it is. StoreError if a row is damaged."""
        checks = self._FRAME_CHECKS + (self._FRAME_CHECKS_2 if self.schema >= 2 else [])
        self._damaged("frames", checks,
                      "frames x LEFT JOIN devices d ON d.id = x.device")
        extra = "f.nonce, f.debug" if self.schema >= 2 else "NULL, 0"
        sql = ("SELECT d.device_id, f.boot, f.seq, f.fingerprint, f.count, f.payload, "
               "f.arrival, %s FROM frames f JOIN devices d ON d.id = f.device "
               "WHERE f.vector = ?" % extra)
        args = [int(vector)]
        if fingerprint is not None:
            sql += " AND f.fingerprint = ?"
            args.append(fingerprint)
        return self._query(sql + " ORDER BY f.id", args)

    _EVENT_CHECKS = [
        ("device", "x.device IS NULL OR typeof(d.device_id) = 'blob'"),
        ("port", "typeof(x.port) IN ('null', 'text')"),
        ("time", "typeof(x.time) IN ('real', 'integer')"),
        ("kind", "typeof(x.kind) = 'text'"),
        ("detail", "typeof(x.detail) = 'text'"),
        ("count", "typeof(x.count) = 'integer'"),
    ]

    def _check_events(self) -> None:
        self._damaged("events", self._EVENT_CHECKS,
                      "events x LEFT JOIN devices d ON d.id = x.device")

    def event_counts(self) -> dict:
        """(device_id or None, kind, detail) -> summed count."""
        self._check_events()
        rows = self._query(
            "SELECT d.device_id, e.kind, e.detail, SUM(e.count) FROM events e "
            "LEFT JOIN devices d ON d.id = e.device GROUP BY d.device_id, e.kind, e.detail")
        return {(dev, kind, detail): n for dev, kind, detail, n in rows}

    def events(self, device_id: Optional[bytes] = None) -> List[dict]:
        """Every stored event (only `device_id`'s if given) in time order, as dicts: time (unix
        seconds), device (hex or None), port, kind, detail, count -- for `zeal events`."""
        self._check_events()
        sql = ("SELECT e.time, d.device_id, e.port, e.kind, e.detail, e.count FROM events e "
               "LEFT JOIN devices d ON d.id = e.device")
        args = []
        if device_id is not None:
            sql += " WHERE d.device_id = ?"
            args.append(bytes(device_id))
        return [{"time": t, "device": None if dev is None else bytes(dev).hex(), "port": port,
                 "kind": kind, "detail": detail, "count": n}
                for t, dev, port, kind, detail, n in self._query(sql + " ORDER BY e.time, e.id",
                                                                  args)]

    def unresolved(self, port: str) -> List[tuple]:
        """(id, body, crc, arrival, reason) of the port's unresolved DATA, oldest first."""
        if self.schema < 2:
            return []
        self._damaged("unresolved", [
            ("body", "typeof(x.body) = 'blob'"),
            ("crc", "typeof(x.crc) = 'integer' AND x.crc >= 0 AND x.crc < 4294967296"),
            ("arrival", "typeof(x.arrival) IN ('real', 'integer')"),
            ("reason", "typeof(x.reason) = 'text'")], "unresolved x")
        return self._query("SELECT id, body, crc, arrival, reason FROM unresolved "
                           "WHERE port = ? ORDER BY id", (port,))

    def link_bytes(self) -> int:
        self._damaged("links", [("bytes", "typeof(x.bytes) = 'integer' AND x.bytes >= 0")],
                      "links x")
        return self._query("SELECT COALESCE(SUM(bytes), 0) FROM links")[0][0]

    def meta(self) -> dict:
        """Figures: schema, path, frames, reports (in frames), devices, events (rows),
        unresolved (rows), profiles, links, bytes (read on all links)."""
        one = lambda sql: self._query(sql)[0][0]  # noqa: E731
        return {"schema": self.schema, "path": self.path,
                "frames": one("SELECT COUNT(*) FROM frames"),
                "reports": one("SELECT COALESCE(SUM(count), 0) FROM frames"),
                "devices": one("SELECT COUNT(*) FROM devices"),
                "events": one("SELECT COUNT(*) FROM events"),
                "unresolved": one("SELECT COUNT(*) FROM unresolved") if self.schema >= 2 else 0,
                "profiles": one("SELECT COUNT(*) FROM profiles"),
                "links": one("SELECT COUNT(*) FROM links"),
                "bytes": one("SELECT COALESCE(SUM(bytes), 0) FROM links")}


def open_existing(path, *, timeout: float = 5.0, readonly: bool = True) -> Store:
    """Open a zeal database that must already exist; never creates a file. Read-only by
    default (`mode=ro`: no write, no PRAGMA journal_mode, works on a read-only file)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StoreError("database %s does not exist" % path)
    if not os.path.isfile(path):
        raise StoreError("database %s is not a file" % path)
    if not readonly:
        probe = Store(path, timeout=timeout, readonly=True)  # refuse before converting
        probe.close()
    return Store(path, timeout=timeout, readonly=readonly)


# ==== PostgreSQL ==============================================================================
# PostgreSQL store (psycopg 3): the same tables, keys, events and caps as the SQLite store
# (above), for several collectors writing one database at once.
#
# Open it with `zeal.collect.store.open_store("postgresql://USER[:PASS]@HOST[:PORT]/DBNAME")`;
# the database must exist (`createdb`), the tables are made on first use. psycopg comes with
# the `fleet` extra (`pip install 'zeal-mcu[fleet]'`); without it the URL gives a one-line error.
#
# Schema. The tables of schema 2 in PostgreSQL types (BYTEA for blobs, DOUBLE PRECISION for
# times, BIGINT for integers; ids from identity columns); the version is the one row of
# `zeal_schema` (SQLite's `PRAGMA user_version`). Schema 1 never existed on PostgreSQL, so the
# only migration is 0 -> 2: creating the tables, in one transaction (DDL is transactional here)
# under an advisory lock, so two collectors starting together create them once. A database with
# tables of another program and no `zeal_schema` row is refused before anything is written.
#
# Concurrency. Every write is one transaction at READ COMMITTED. Frames go in with
# `INSERT ... ON CONFLICT (device, boot, nonce, seq) DO NOTHING`: when two collectors insert the
# same key, the second waits for the first's commit and then inserts nothing, so a frame is
# stored once however many collectors received it; a stored key with another CRC is recorded as
# the event `conflict`, as in SQLite. Devices are created with ON CONFLICT on device_id, events
# with ON CONFLICT on key (counter rows add up). Devices are locked in one order (sorted) by
# every writer; frames are inserted in the order given (their ids are the arrival order), so two
# writers meeting on the same keys in other orders can deadlock: PostgreSQL aborts one, and a
# transaction aborted as a deadlock or a serialization failure is retried from the start (up to
# 5 times) with the same input.
#
# Caps. As in SQLite, but ids from a sequence can have gaps (a rolled-back insert uses its id),
# so MAX(id) is an upper bound of the row count: a cap can take effect a little early, never
# late. Several collectors can overshoot a cap by the rows of their concurrent transactions.
#
# Read-only opening (`read_only=True`) sets `default_transaction_read_only`: the server refuses
# any write. Errors are StoreError lines naming the database by its URL without the password.
# Schema 2 in PostgreSQL types, one statement at a time.
_PG_SCHEMA = [
    """CREATE TABLE profiles (
    fingerprint TEXT PRIMARY KEY,
    doc         TEXT NOT NULL
)""",
    """CREATE TABLE devices (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    device_id   BYTEA NOT NULL UNIQUE,
    first_seen  DOUBLE PRECISION NOT NULL,
    last_seen   DOUBLE PRECISION NOT NULL
)""",
    """CREATE TABLE frames (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    device      BIGINT NOT NULL REFERENCES devices(id),
    boot        BIGINT NOT NULL,
    nonce       BYTEA NOT NULL,
    seq         BIGINT NOT NULL,
    crc         BIGINT NOT NULL,
    fingerprint TEXT NOT NULL REFERENCES profiles(fingerprint),
    count       BIGINT NOT NULL,
    payload     BYTEA NOT NULL,
    arrival     DOUBLE PRECISION NOT NULL,
    vector      SMALLINT NOT NULL DEFAULT 0,
    debug       SMALLINT NOT NULL DEFAULT 0,
    UNIQUE (device, boot, nonce, seq)
)""",
    """CREATE TABLE events (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    device      BIGINT REFERENCES devices(id),
    port        TEXT,
    time        DOUBLE PRECISION NOT NULL,
    kind        TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '',
    count       BIGINT NOT NULL DEFAULT 1,
    key         TEXT
)""",
    """CREATE TABLE links (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    port        TEXT NOT NULL,
    opened      DOUBLE PRECISION NOT NULL,
    closed      DOUBLE PRECISION,
    bytes       BIGINT NOT NULL DEFAULT 0
)""",
    """CREATE TABLE unresolved (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    port        TEXT NOT NULL,
    arrival     DOUBLE PRECISION NOT NULL,
    body        BYTEA NOT NULL,
    crc         BIGINT NOT NULL,
    reason      TEXT NOT NULL
)""",
    "CREATE INDEX unresolved_by_port ON unresolved (port, id)",
    "CREATE UNIQUE INDEX events_by_key ON events (key)",
    "CREATE INDEX frames_by_profile ON frames (fingerprint, vector)",
    "CREATE TABLE zeal_schema (version INTEGER NOT NULL)",
    "INSERT INTO zeal_schema (version) VALUES (%d)" % SCHEMA_VERSION,
]
_PG_MIGRATIONS = {0: _PG_SCHEMA}           # from version -> statements to the current one
_PG_LOCK = 0x7A65616C                   # advisory lock id ("zeal") for schema changes
_PG_RETRIES = 5
_PG_RETRY_STATES = ("40001", "40P01")   # serialization_failure, deadlock_detected


def display_url(url: str) -> str:
    """The URL without its password (for messages)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if parts.port is not None:
            host += ":%d" % parts.port
        netloc = "%s:***@%s" % (parts.username or "", host)
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "postgresql://(unreadable URL)"


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise StoreError("a postgresql:// database needs psycopg 3: pip install "
                         "'zeal-mcu[fleet]' (or: pip install 'psycopg[binary]')") from None
    return psycopg


def _first_line(exc) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class _Cursorish:
    """What `store.db.execute(sql, args).fetchone()` callers get: SQLite's `?` placeholders
    work unchanged (translated to psycopg's %s)."""

    def __init__(self, store):
        self._store = store

    def execute(self, sql: str, args=()):
        return self._store._run(sql, args)


class PgStore(Store):
    """A zeal database on a PostgreSQL server: the SQLite Store's public methods and
    attributes (path is the URL without password; schema; readonly; last_new_reports,
    last_conflicts, last_unresolved_ids; caps max_devices, max_events,
    max_unresolved_per_port). The readers of Store (profiles, frames, events, ...) are
    inherited: they run through `_query`, which speaks both dialects' placeholders."""

    backend = "postgresql"
    _lock_suffix = " FOR UPDATE OF e"   # a selected state row, locked till the commit

    def __init__(self, url: str, *, timeout: float = 5.0, readonly: bool = False,
                 create: bool = True):
        psycopg = _psycopg()
        self._pg = psycopg
        self.url = url
        self.path = display_url(url)
        self.readonly = readonly
        self._devices = {}
        self.last_new_reports = 0
        self.last_conflicts = 0
        self.last_unresolved_ids = []
        self.conn = None
        options = "-c lock_timeout=%d" % max(1, int(timeout * 1000))
        if readonly:
            options += " -c default_transaction_read_only=on"
        self._options, self._timeout, self._lock_ms = options, timeout, None
        self._broken = False  # the connection was lost: reconnect before the next write
        try:
            self.conn = psycopg.connect(url, autocommit=True, options=options,
                                        connect_timeout=max(1, int(round(timeout))),
                                        application_name="zeal")
            self.schema = self._open(create=create and not readonly)
        except psycopg.Error as exc:
            self._close_quietly()
            raise self._wrap(exc) from None
        except BaseException:
            self._close_quietly()
            raise
        self.db = _Cursorish(self)

    def _close_quietly(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass

    def _wrap(self, exc) -> StoreError:
        state = getattr(exc, "sqlstate", None) or ""
        if state == "55P03":
            return StoreError("database %s is busy (another program holds a lock)" % self.path,
                              transient=True)
        if state == "53100":
            return StoreError("database %s: disk full (%s)" % (self.path, _first_line(exc)),
                              transient=True)
        if self._gone(exc):
            self._broken = True
            return StoreError("database %s: connection lost (%s)"
                              % (self.path, _first_line(exc)), transient=True)
        return StoreError("database %s: %s" % (self.path, _first_line(exc)))

    # connection_exception (08...), admin_shutdown, crash_shutdown, cannot_connect_now
    _LOST_STATES = ("57P01", "57P02", "57P03")

    def _gone(self, exc) -> bool:
        """The server went away (a restart, a dropped connection): a new connection may do."""
        state = getattr(exc, "sqlstate", None) or ""
        if state.startswith("08") or state in self._LOST_STATES:
            return True
        conn = getattr(self, "conn", None)
        return (isinstance(exc, self._pg.OperationalError)
                and (conn is None or conn.closed or conn.broken))

    def _reconnect(self) -> None:
        """A new connection after a lost one (the server restarted): the writer's lock
        timeout set again; StoreError(transient) while the server is still away."""
        self._close_quietly()
        self._devices.clear()
        try:
            self.conn = self._pg.connect(self.url, autocommit=True, options=self._options,
                                         connect_timeout=max(1, int(round(self._timeout))),
                                         application_name="zeal")
            if self._lock_ms is not None:
                self.conn.execute("SET lock_timeout = %d" % self._lock_ms)
        except self._pg.Error as exc:
            raise StoreError("database %s: connection lost (%s)"
                             % (self.path, _first_line(exc)), transient=True) from None
        self._broken = False

    # ---- opening ------------------------------------------------------------------------------
    def _look(self):
        """(version or None when there is no zeal_schema table, set of our tables present)."""
        names = {r[0] for r in self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'")}
        version = None
        if "zeal_schema" in names:
            rows = self.conn.execute("SELECT version FROM zeal_schema").fetchall()
            if len(rows) != 1:
                raise StoreError("database %s: zeal_schema holds %d rows, not 1"
                                 % (self.path, len(rows)))
            version = rows[0][0]
        return version, names

    def _check(self, version, names) -> int:
        if version is None:
            if names:
                raise StoreError("database %s holds tables of another program (%s), not a "
                                 "zeal database" % (self.path, ", ".join(sorted(names))))
            return 0
        if version > SCHEMA_VERSION:
            raise StoreError("database %s has schema %d; this zeal reads up to %d"
                             % (self.path, version, SCHEMA_VERSION))
        if version not in _PG_MIGRATIONS and version != SCHEMA_VERSION:
            raise StoreError("database %s has schema %d, which zeal never wrote on "
                             "PostgreSQL" % (self.path, version))
        return version

    def _open(self, create: bool) -> int:
        version = self._check(*self._look())
        if version == SCHEMA_VERSION:
            if not self.readonly:
                self._refuse_strangers(version)
            return version
        if not create:
            raise StoreError("%s is not a zeal database (no zeal tables in it)" % self.path)
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
            version = self._check(*self._look())    # again, under the lock
            for sql in _PG_MIGRATIONS.get(version, []):
                self.conn.execute(sql)
        self._refuse_strangers(SCHEMA_VERSION)
        return SCHEMA_VERSION

    _TABLES = ("profiles", "devices", "frames", "events", "links", "unresolved", "zeal_schema")

    def _refuse_strangers(self, version: int) -> None:
        """A writer refuses zeal's tables (in the schema it uses, current_schema()) with a
        trigger or a rule zeal did not create (either runs inside every write: it could
        delete or change what is stored, silently), or with row-level security (rows a
        policy hides). One catalog query when the store opens; a trigger added while a
        collector runs is not seen by it. Other changes to the tables (a CHECK, another
        unique index) make a write fail with PostgreSQL's error rather than skip rows (every
        insert names its conflict target), so they are not looked for."""
        rows = self.conn.execute(
            "WITH ours AS (SELECT c.oid, c.relname, c.relrowsecurity FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relname = ANY(%s)) "
            "SELECT o.relname, 'a trigger \"' || t.tgname || '\"' FROM pg_trigger t "
            "JOIN ours o ON o.oid = t.tgrelid WHERE NOT t.tgisinternal "
            "UNION ALL SELECT o.relname, 'a rule \"' || r.rulename || '\"' FROM pg_rewrite r "
            "JOIN ours o ON o.oid = r.ev_class "
            "UNION ALL SELECT relname, 'row-level security' FROM ours WHERE relrowsecurity "
            "ORDER BY 1, 2", (list(self._TABLES),)).fetchall()
        if rows:
            table, what = rows[0]
            raise StoreError("database %s: table %s has %s, which zeal did not create: "
                             "refused (a write could run it); zeal writes only to its own "
                             "tables as it made them, and reading them (analyze, export, "
                             "events) is safe" % (self.path, table, what))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def set_timeout(self, seconds: float) -> None:
        """How long a write waits for another writer's lock before failing."""
        self._lock_ms = max(1, int(seconds * 1000))
        self._run("SET lock_timeout = %d" % self._lock_ms)

    # ---- running SQL ---------------------------------------------------------------------------
    def _run(self, sql: str, args=()):
        sql = sql.replace("%", "%%").replace("?", "%s") if args else sql
        return self.conn.execute(sql, tuple(args) if args else None)

    def _tables(self) -> list:
        return [r[0] for r in self._query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'")]

    def _run_query(self, table: str):
        try:
            return self._run('SELECT * FROM "%s"' % table.replace('"', '""'))
        except self._pg.Error as exc:
            raise self._wrap(exc) from None

    def _query(self, sql: str, args=()) -> list:
        try:
            rows = self._run(sql, args).fetchall()
        except self._pg.Error as exc:
            raise self._wrap(exc) from None
        return [tuple(int(v) if isinstance(v, Decimal) else v for v in r) for r in rows]

    def _damaged(self, table: str, checks: list, source: str) -> None:
        # Column types are enforced by the server; the value checks remain.
        checks = [(name, sql) for name, sql in checks if sql]
        if not checks:
            return
        cols = ", ".join("COALESCE(%s, false)" % sql for _name, sql in checks)
        cond = " AND ".join("COALESCE(%s, false)" % sql for _name, sql in checks)
        row = self._query("SELECT x.id, %s FROM %s WHERE NOT (%s) LIMIT 1"
                          % (cols, source, cond))
        if row:
            bad = [name for (name, _sql), ok in zip(checks, row[0][1:]) if not ok]
            raise StoreError("database %s: %s row %s is damaged (%s)"
                             % (self.path, table, row[0][0], ", ".join(bad)))

    _FRAME_CHECKS = [
        ("device id", "length(d.device_id) = 8"),
        ("boot", "x.boot >= 0"),
        ("seq", "x.seq >= 0"),
        ("fingerprint", "length(x.fingerprint) = 64"),
        ("count", "x.count >= 0"),
        ("vector", "x.vector IN (0, 1)"),
    ]
    _FRAME_CHECKS_2 = [("debug", "x.debug IN (0, 1)")]
    _EVENT_CHECKS = [("device", "x.device IS NULL OR d.device_id IS NOT NULL")]

    def unresolved(self, port: str) -> list:
        self._damaged("unresolved", [("crc", "x.crc >= 0 AND x.crc < 4294967296")],
                      "unresolved x")
        return self._query("SELECT id, body, crc, arrival, reason FROM unresolved "
                           "WHERE port = ? ORDER BY id", (port,))

    def link_bytes(self) -> int:
        self._damaged("links", [("bytes", "x.bytes >= 0")], "links x")
        return self._query("SELECT COALESCE(SUM(bytes), 0) FROM links")[0][0]

    # ---- writing -------------------------------------------------------------------------------
    def _retrying(self, body):
        """Run body() in one transaction; retried on deadlock / serialization failure."""
        self._writable()
        if self._broken or self.conn.closed:
            self._reconnect()
        for attempt in range(_PG_RETRIES):
            try:
                with self.conn.transaction():
                    return body()
            except self._pg.Error as exc:
                self._devices.clear()
                if getattr(exc, "sqlstate", None) in _PG_RETRY_STATES and attempt + 1 < _PG_RETRIES:
                    time.sleep(0.01 * (attempt + 1))
                    continue
                raise self._wrap(exc) from None
            except BaseException:
                self._devices.clear()
                raise

    def _rollback(self) -> None:
        self._devices.clear()

    def _device(self, device_id: bytes, now: float) -> Optional[int]:
        device_id = bytes(device_id)
        row = self._devices.get(device_id)
        if row is None:
            found = self.conn.execute("SELECT id FROM devices WHERE device_id = %s",
                                      (device_id,)).fetchone()
            if found is None:
                top = self.conn.execute("SELECT MAX(id) FROM devices").fetchone()[0] or 0
                if top >= self.max_devices:
                    return None
                found = self.conn.execute(
                    "INSERT INTO devices (device_id, first_seen, last_seen) VALUES (%s, %s, %s) "
                    "ON CONFLICT (device_id) DO NOTHING RETURNING id",
                    (device_id, now, now)).fetchone()
                if found is None:  # another collector created it meanwhile
                    found = self.conn.execute("SELECT id FROM devices WHERE device_id = %s",
                                              (device_id,)).fetchone()
            row = found[0]
            self._cache_device(device_id, row)
        return row

    def _count(self, kind: str, detail: str, n: int, now: float, port=None) -> None:
        if n <= 0:
            return
        key = "store:%s" % kind + ("" if port is None else ":" + port)
        self.conn.execute("INSERT INTO events (device, port, time, kind, detail, count, key) "
                          "VALUES (NULL, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE "
                          "SET count = events.count + excluded.count, time = excluded.time",
                          (port, now, kind, detail, n, key))

    def add_profile(self, profile) -> None:
        rows = kinds.of(profile).files(profile)
        rows.sort()

        def body():
            for row in rows:
                self.conn.execute("INSERT INTO profiles (fingerprint, doc) VALUES (%s, %s) "
                                  "ON CONFLICT (fingerprint) DO NOTHING", row)
        self._retrying(body)

    def write(self, frames: Iterable[FrameRecord] = (), events: Iterable[EventRecord] = (),
              link: Optional[tuple] = None, unresolved: Iterable[UnresolvedRecord] = (),
              resolved: Iterable[int] = (), spans: Iterable = ()) -> int:
        """As Store.write (one transaction; see there), safe beside other writers."""
        self._writable()
        frames, events = list(frames), list(events)
        unresolved, resolved = list(unresolved), [int(i) for i in resolved]
        spans = list(spans)
        result = self._retrying(lambda: self._write(frames, events, link, unresolved,
                                                    resolved, spans))
        self._end_tally()
        (new, self.last_new_reports, self.last_conflicts, self.last_unresolved_ids,
         self.last_devices, self.last_devices_dropped) = result
        return new

    def _write(self, frames, events, link, unresolved, resolved, spans=()):
        now = time.time()
        self._begin_tally()  # again on a retry
        news = []
        new = reports = conflicts = 0
        no_device = 0
        touched = set()
        stored_events = []
        # devices first, in one order for every writer; frames in the order given (their ids
        # are the arrival order frames() returns): writers that meet on the same keys in
        # other orders can deadlock, and are retried
        wanted = sorted({bytes(f.device_id) for f in frames}
                        | {bytes(e.device_id) for e in events if e.device_id is not None})
        rows_of = {}                   # this write's devices -> row id (the cache is bounded)
        for dev_id in wanted:
            row = self._device(dev_id, now)
            if row is not None:
                rows_of[dev_id] = row
        rows = []                      # (position, the frame's row) of the known devices
        for i, f in enumerate(frames):
            dev = rows_of.get(bytes(f.device_id))
            if dev is None:
                no_device += 1
                continue
            rows.append((i, (dev, int(f.boot), bytes(f.nonce), int(f.seq), int(f.crc),
                             f.fingerprint, int(f.count), bytes(f.payload), float(f.arrival),
                             int(bool(f.vector)), int(bool(f.debug)))))
        fresh = self._insert_frames([r for _, r in rows])
        late, stored_now = [], set()    # late: frames whose key was stored before
        for i, r in rows:
            if r[:4] in fresh and r[:4] not in stored_now:
                stored_now.add(r[:4])
                news.append(frames[i])
                new += 1
                reports += frames[i].count
                touched.add(r[0])
            else:
                late.append((i, r))
        old_crcs = {}
        if late:                        # their stored CRCs, in one query
            cols = [list(c) for c in zip(*[r[:4] for _, r in late])]
            old_crcs = dict(((d, b, bytes(n), s), c) for d, b, n, s, c in self.conn.execute(
                "SELECT f.device, f.boot, f.nonce, f.seq, f.crc FROM frames f JOIN "
                "unnest(%s::bigint[], %s::bigint[], %s::bytea[], %s::bigint[]) AS k(d, b, n, s) "
                "ON f.device = k.d AND f.boot = k.b AND f.nonce = k.n AND f.seq = k.s",
                cols).fetchall())
        for i, r in late:               # conflicts in the order received
            f = frames[i]
            old = old_crcs.get(r[:4])
            if old is not None and old != f.crc:
                conflicts += 1
                stored_events.append((r[0], None, now, "conflict",
                                      "boot %d nonce %s seq %d: stored crc %08x, received %08x"
                                      % (f.boot, r[2].hex(), f.seq, old & 0xFFFFFFFF,
                                         f.crc & 0xFFFFFFFF),
                                      1, "store:conflict:%s:%d:%s:%d:%08x"
                                      % (bytes(f.device_id).hex(), f.boot, r[2].hex(), f.seq,
                                         f.crc & 0xFFFFFFFF)))
        for dev in sorted(touched):
            self.conn.execute("UPDATE devices SET last_seen = GREATEST(last_seen, %s) "
                              "WHERE id = %s", (now, dev))
        for e in events:
            dev = None
            if e.device_id is not None:
                dev = rows_of.get(bytes(e.device_id))
                if dev is None:
                    no_device += 1
                    continue
            stored_events.append((dev, e.port, float(e.time or now), str(e.kind),
                                  str(e.detail), int(e.count), e.key))
        self._insert_events(stored_events, now)
        self._count("devices_dropped", "frames and events of devices beyond the cap of %d"
                    % self.max_devices, no_device, now)
        ids = self._unresolved(unresolved, resolved, now)
        self._account(spans, news, now)
        if link is not None:
            self.conn.execute("UPDATE links SET bytes = %s WHERE id = %s", (link[1], link[0]))
        return new, reports, conflicts, ids, set(rows_of), no_device

    # the frames columns a write gives, with their COPY types (zeal_stage is made of them)
    _STAGE = (("device", "int8"), ("boot", "int8"), ("nonce", "bytea"), ("seq", "int8"),
              ("crc", "int8"), ("fingerprint", "text"), ("count", "int8"), ("payload", "bytea"),
              ("arrival", "float8"), ("vector", "int2"), ("debug", "int2"))

    def _insert_frames(self, rows: list) -> set:
        """Insert frame rows (device, boot, nonce, seq, crc, fingerprint, count, payload,
        arrival, vector, debug) in their order; the keys (device, boot, nonce, seq) newly
        stored. A key given twice is stored once (the first).

        A binary COPY into a session-private staging table, then one INSERT ... SELECT ...
        ON CONFLICT DO NOTHING ... RETURNING, in the order given (the ids keep the arrival
        order). Measured for a whole write of 2000-frame batches: 145 us a frame with a
        statement per frame (a round trip each), 35 with one statement over arrays, 25 this
        way."""
        if not rows:
            return set()
        names = ", ".join(name for name, _ in self._STAGE)
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS zeal_stage (%s, o BIGINT GENERATED "
                          "ALWAYS AS IDENTITY) ON COMMIT DELETE ROWS"
                          % ", ".join("%s %s" % col for col in self._STAGE))
        cur = self.conn.cursor()
        with cur.copy("COPY zeal_stage (%s) FROM STDIN (FORMAT BINARY)" % names) as cp:
            cp.set_types([kind for _, kind in self._STAGE])
            for r in rows:
                cp.write_row(r)
        cur.execute("INSERT INTO frames (%s) SELECT %s FROM zeal_stage ORDER BY o "
                    "ON CONFLICT (device, boot, nonce, seq) DO NOTHING "
                    "RETURNING device, boot, nonce, seq" % (names, names))
        return {(d, b, bytes(n), s) for d, b, n, s in cur.fetchall()}

    def _insert_events(self, rows: list, now: float) -> None:
        if not rows:
            return
        top = self.conn.execute("SELECT MAX(id) FROM events").fetchone()[0] or 0
        dropped = 0
        for row in rows:
            key = row[6]
            if top >= self.max_events:
                if key is None or self.conn.execute("SELECT 1 FROM events WHERE key = %s",
                                                    (key,)).fetchone() is None:
                    dropped += 1
                continue
            cur = self.conn.execute("INSERT INTO events (device, port, time, kind, detail, "
                                    "count, key) VALUES (%s,%s,%s,%s,%s,%s,%s) "
                                    "ON CONFLICT (key) DO NOTHING", row)
            top += cur.rowcount
            if key is not None:
                self._keyed_new += cur.rowcount
        self._count("events_dropped", "events beyond the cap of %d rows" % self.max_events,
                    dropped, now)

    def _unresolved(self, records, resolved, now: float) -> list:
        for i in resolved:
            self._resolved_deleted += self.conn.execute(
                "DELETE FROM unresolved WHERE id = %s", (i,)).rowcount
        ports = set()
        ids = []
        for u in records:
            ids.append(self.conn.execute(
                "INSERT INTO unresolved (port, arrival, body, crc, reason) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (u.port, float(u.arrival), bytes(u.body), int(u.crc), u.reason)).fetchone()[0])
            ports.add(u.port)
        for port in sorted(ports):
            row = self.conn.execute("SELECT id FROM unresolved WHERE port = %s ORDER BY id DESC "
                                    "LIMIT 1 OFFSET %s",
                                    (port, self.max_unresolved_per_port)).fetchone()
            if row is not None:
                n = self.conn.execute("DELETE FROM unresolved WHERE port = %s AND id <= %s",
                                      (port, row[0])).rowcount
                self._unresolved_dropped += n
                self._count("unresolved_dropped", "oldest unresolved frames beyond the cap of "
                            "%d per port" % self.max_unresolved_per_port, n, now, port=port)
        return ids

    def open_link(self, port: str) -> int:
        return self._retrying(lambda: self.conn.execute(
            "INSERT INTO links (port, opened) VALUES (%s, %s) RETURNING id",
            (port, time.time())).fetchone()[0])

    def close_link(self, link_id: int, nbytes: int) -> None:
        self._retrying(lambda: self.conn.execute(
            "UPDATE links SET closed = %s, bytes = %s WHERE id = %s",
            (time.time(), nbytes, link_id)))


def is_url(text) -> bool:
    """True for a `postgresql://` (or `postgres://`) URL, False for a file path."""
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def open_store(path_or_url, *, create: bool = True, read_only: bool = False,
               timeout: float = 5.0) -> Store:
    """The store `--db` names: a file path (SQLite) or a `postgresql://` URL (PostgreSQL,
    PgStore). create=True (the default, for writers): a missing SQLite file or an
    empty PostgreSQL database gets the schema (an SQLite schema-1 file is converted);
    create=False: the database must already be zeal's. read_only=True (readers: analyze,
    export, compress, events): must exist, is never written."""
    if is_url(path_or_url):
        return PgStore(path_or_url, timeout=timeout, readonly=read_only, create=create)
    if isinstance(path_or_url, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path_or_url):
        raise StoreError("database %s...: a URL, but only postgresql:// URLs are databases "
                         "(or give a file path for SQLite)" % path_or_url.split("://")[0])
    if read_only or not create:
        return open_existing(path_or_url, timeout=timeout, readonly=read_only)
    return Store(path_or_url, timeout=timeout)


def profile_doc(profile: Profile) -> dict:
    return json.loads(profile.to_json())
