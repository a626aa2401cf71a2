"""The store: devices, profiles, frames, events, links, unresolved -- on SQLite (stdlib sqlite3,
WAL; the embedded default) or PostgreSQL (psycopg 3; several collectors may write it at once).

`open_store(path_or_url)` is the one way in for commands: a file path opens an SQLite file, a
`postgresql://` URL a PostgreSQL database. Either way the result is a `Store` (base.py: the one
interface, and the SQL both engines run); the engine holds the connection, and nothing outside
this package touches it. Modules: records (what a write is made of, caps, StoreError), base
(Store), sqlite and sqlite_schema (the file: schema, checks, migration), postgres (the server:
schema, retries, bulk insert). What follows holds on both; postgres.py says where PostgreSQL
differs.

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

Robustness (sqlite.py, postgres.py): a database that is not zeal's is refused before anything
is written to it; a writer refuses one holding anything zeal did not create there (a trigger
could run inside every write). Reading commands open read-only. Damaged rows give one-line
errors on reading (StoreError; ProfileError for a stored profile that is not valid or not the
one its fingerprint names).
"""
import json
import os
import re

from .base import Store
from .postgres import PgEngine, display_url
from .records import (MAX_DEVICES, MAX_EVENTS, MAX_UNRESOLVED_PER_PORT, SCHEMA_VERSION,
                      EventRecord, FrameRecord, StoreError, UnresolvedRecord)
from .sqlite import wrap_sql_error

__all__ = ["Store", "PgStore", "open_store", "open_existing", "is_url", "display_url",
           "profile_doc", "wrap_sql_error", "StoreError", "FrameRecord", "EventRecord",
           "UnresolvedRecord", "SCHEMA_VERSION", "MAX_DEVICES", "MAX_EVENTS",
           "MAX_UNRESOLVED_PER_PORT"]


def PgStore(url: str, *, timeout: float = 5.0, readonly: bool = False,
            create: bool = True) -> Store:
    """A zeal database on a PostgreSQL server (the URL's database must exist; create=True
    makes zeal's tables in an empty one)."""
    return Store(engine=PgEngine(url, timeout=timeout, readonly=readonly, create=create))


def open_existing(path, *, timeout: float = 5.0, readonly: bool = True) -> Store:
    """Open a zeal SQLite file that must already exist; never creates a file. Read-only by
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


def is_url(text) -> bool:
    """True for a `postgresql://` (or `postgres://`) URL, False for a file path."""
    return isinstance(text, str) and text.startswith(("postgresql://", "postgres://"))


def open_store(path_or_url, *, create: bool = True, read_only: bool = False,
               timeout: float = 5.0) -> Store:
    """The store `--db` names: a file path (SQLite) or a `postgresql://` URL (PostgreSQL).
    create=True (the default, for writers): a missing SQLite file or an empty PostgreSQL
    database gets the schema (an SQLite schema-1 file is converted); create=False: the
    database must already be zeal's. read_only=True (readers: analyze, export, compress,
    events): must exist, is never written."""
    if is_url(path_or_url):
        return PgStore(path_or_url, timeout=timeout, readonly=read_only, create=create)
    if isinstance(path_or_url, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path_or_url):
        raise StoreError("database %s...: a URL, but only postgresql:// URLs are databases "
                         "(or give a file path for SQLite)" % path_or_url.split("://")[0])
    if read_only or not create:
        return open_existing(path_or_url, timeout=timeout, readonly=read_only)
    return Store(path_or_url, timeout=timeout)


def profile_doc(profile) -> dict:
    return json.loads(profile.to_json())
