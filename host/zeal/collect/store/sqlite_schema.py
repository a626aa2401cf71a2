"""SQLite's schema (version 2, and version 1 as older zeals made it): the statements that make
it, the migration 1 -> 2, and the shape of a file zeal made (`shape`), against which a writer
checks a file before writing to it (zeal.collect.store.sqlite)."""
import re
import sqlite3

from .records import SCHEMA_VERSION

FRAMES = """CREATE TABLE {name} (
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
SCHEMA = [
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
    FRAMES.format(name="frames"),
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
SCHEMA_TAIL = [  # shared with the migration from schema 1
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

MIGRATE_1_TO_2 = [
    FRAMES.format(name="frames_v2"),
    "INSERT INTO frames_v2 (id, device, boot, nonce, seq, crc, fingerprint, count, payload, "
    "arrival, vector, debug) SELECT id, device, boot, zeal_v1_nonce(crc), seq, crc, fingerprint, "
    "count, payload, arrival, vector, 0 FROM frames",
    "DROP TABLE frames",                     # and its index frames_by_profile
    "ALTER TABLE frames_v2 RENAME TO frames",
    "ALTER TABLE events ADD COLUMN key TEXT",
] + SCHEMA_TAIL

# The columns each version's tables must have for a file to count as zeal's.
COLUMNS_1 = {
    "profiles": {"fingerprint", "doc"},
    "devices": {"id", "device_id", "first_seen", "last_seen"},
    "frames": {"id", "device", "boot", "seq", "crc", "fingerprint", "count", "payload",
               "arrival", "vector"},
    "events": {"id", "device", "port", "time", "kind", "detail", "count"},
    "links": {"id", "port", "opened", "closed", "bytes"},
}
COLUMNS = {1: COLUMNS_1, 2: dict(COLUMNS_1, frames=COLUMNS_1["frames"] | {"nonce", "debug"},
                                   events=COLUMNS_1["events"] | {"key"},
                                   unresolved={"id", "port", "arrival", "body", "crc", "reason"})}


# Schema 1 as zeal created it (before schema 2): what a schema-1 file must look like to be
# migrated (nothing else in it, see shape).
SCHEMA_1 = [
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


def words(sql) -> set:
    """The words of a CREATE statement (lower case), comments and string literals left out."""
    sql = re.sub(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", " ", sql or "", flags=re.S)
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", sql)}


def shape(db) -> dict:
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
                             frozenset(words(sql) - ZEAL_WORDS))
    return out


def zeal_shapes() -> dict:
    """version -> shape of a file zeal creates at that version."""
    shapes = {}
    for version, statements in ((1, SCHEMA_1), (2, SCHEMA + SCHEMA_TAIL)):
        db = sqlite3.connect(":memory:")
        try:
            for sql in statements:
                db.execute(sql)
            shapes[version] = shape(db)
        finally:
            db.close()
    return shapes


WHY_NOT = {"trigger": "a write would run it",
            "index": "an index can make a write skip rows",
            "view": "zeal makes no views",
            "table": "zeal makes no such table"}
ZEAL_WORDS = frozenset().union(*(words(sql) for sql in SCHEMA_1 + SCHEMA + SCHEMA_TAIL
                                   if sql.startswith("CREATE TABLE")))
ZEAL_SHAPES = zeal_shapes()


def v1_nonce(crc):
    """Schema 1 frames have no session nonce: their CRC stands in (4 bytes, never 8)."""
    if not isinstance(crc, int) or not 0 <= crc < 1 << 32:
        return None  # NOT NULL fails: the migration stops with a one-line error
    return crc.to_bytes(4, "big")

