"""The SQLite engine (stdlib sqlite3, WAL): a file opened, checked, created or migrated, and the
SQL of zeal.collect.store.base run on it. What the store writes and reads is base's; what
is SQLite's alone is here: the schema checks (a writer refuses a file holding anything zeal
did not create there), the migration 1 -> 2, read-only opening, SQLite's error texts.

Robustness: schema creation and the migration 1 -> 2 each run in one transaction together
with `PRAGMA user_version` (transactional in SQLite), so a kill leaves either the old file or the
complete new one. A file that is not zeal's is refused before anything is written to it (no
switch to WAL). Readers open with `mode=ro` (no PRAGMA that writes; a WAL file in a read-only
folder is read as immutable when no -wal file exists). A failed write reports SQLite's own
error (a full disk: "disk full"), rolling back only if SQLite has not done so itself.
"""
import errno
import os
import sqlite3
from urllib.parse import quote

from . import sqlite_schema as schema
from .records import SCHEMA_VERSION, StoreError


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


class SqliteEngine:
    """One SQLite file. `readonly=True` opens an existing file with `mode=ro` and never writes;
    otherwise a new or empty file gets the schema and a schema-1 file is converted in place."""

    backend = "sqlite"
    lock_suffix = ""        # its write transaction holds the whole file
    greatest = "MAX"        # SQLite's two-argument MAX is PostgreSQL's GREATEST
    false = "0"
    # Damage checks of base.Store's readers: (name, SQL true for a good row); SQLite keeps
    # any value in any column, so the types are checked too.
    checks = {
        "frames": [
            ("device id", "typeof(d.device_id) = 'blob' AND length(d.device_id) = 8"),
            ("boot", "typeof(x.boot) = 'integer' AND x.boot >= 0"),
            ("seq", "typeof(x.seq) = 'integer' AND x.seq >= 0"),
            ("fingerprint", "typeof(x.fingerprint) = 'text' AND length(x.fingerprint) = 64"),
            ("count", "typeof(x.count) = 'integer' AND x.count >= 0"),
            ("payload", "typeof(x.payload) = 'blob'"),
            ("arrival", "typeof(x.arrival) IN ('real', 'integer')"),
            ("vector", "typeof(x.vector) = 'integer' AND x.vector IN (0, 1)")],
        "frames 2": [
            ("nonce", "typeof(x.nonce) = 'blob'"),
            ("debug", "typeof(x.debug) = 'integer' AND x.debug IN (0, 1)")],
        "events": [
            ("device", "x.device IS NULL OR typeof(d.device_id) = 'blob'"),
            ("port", "typeof(x.port) IN ('null', 'text')"),
            ("time", "typeof(x.time) IN ('real', 'integer')"),
            ("kind", "typeof(x.kind) = 'text'"),
            ("detail", "typeof(x.detail) = 'text'"),
            ("count", "typeof(x.count) = 'integer'")],
        "unresolved": [
            ("body", "typeof(x.body) = 'blob'"),
            ("crc", "typeof(x.crc) = 'integer' AND x.crc >= 0 AND x.crc < 4294967296"),
            ("arrival", "typeof(x.arrival) IN ('real', 'integer')"),
            ("reason", "typeof(x.reason) = 'text'")],
        "links": [("bytes", "typeof(x.bytes) = 'integer' AND x.bytes >= 0")],
    }
    _cookie = None          # the schema cookie (PRAGMA schema_version) last checked

    def __init__(self, path, *, timeout: float = 5.0, readonly: bool = False):
        if sqlite3.sqlite_version_info < (3, 35):  # base.Store's SQL uses RETURNING
            raise StoreError("zeal's store needs SQLite 3.35 or newer; this Python has %s"
                             % sqlite3.sqlite_version)
        self.path = str(path)
        self.readonly = readonly
        self.db = None      # the connection: this engine's alone
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
        expected = schema.COLUMNS.get(version)
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
        exactly the tables and indexes zeal makes at its version (schema.ZEAL_SHAPES; a file
        of version 0 only what an older zeal's interrupted creation can have left, which is
        dropped). Reading such a file runs nothing it defines (no trigger fires on a read; a
        view cannot take a table's name), so readers do not ask this."""
        expected = schema.ZEAL_SHAPES[version or 1]
        found = schema.shape(self.db)
        for (kind, name), what in sorted(found.items()):
            if (kind, name) not in expected:
                on = (" on %s" % what) if kind != "table" and what != name else ""
                raise StoreError(
                    "database %s holds %s \"%s\"%s, which zeal did not create: refused (%s); "
                    "zeal writes only to a database holding its own tables and indexes, and "
                    "reading it (analyze, export, events) is safe"
                    % (self.path, "an index" if kind == "index" else "a " + kind, name, on,
                       schema.WHY_NOT.get(kind, "zeal makes no such object")))
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
            if name not in schema.COLUMNS_1 or not schema.COLUMNS_1[name] <= cols:
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
        self.db.create_function("zeal_v1_nonce", 1, schema.v1_nonce, deterministic=True)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version, tables = self._look()         # again, under the write lock
            self._refuse_foreign(version, tables)
            self._refuse_strangers(version)
            if version == 0:
                for name in tables:                # _half_made: empty tables of an older zeal
                    self.db.execute('DROP TABLE "%s"' % name)
                statements = schema.SCHEMA + schema.SCHEMA_TAIL
            elif version == 1:
                statements = schema.MIGRATE_1_TO_2
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

    # ---- running SQL (`?` placeholders) -------------------------------------------------------
    def run(self, sql: str, args=()):
        """A statement inside transaction(): its cursor; errors are transaction()'s to wrap."""
        return self.db.execute(sql, args)

    def query(self, sql: str, args=()) -> list:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def stream(self, sql: str, args=(), size: int = 4096):
        """The rows of one query in lists of at most `size`, from one cursor (a reader holds
        no more than a list)."""
        try:
            cur = self.db.execute(sql, args)
            while True:
                rows = cur.fetchmany(size)
                if not rows:
                    return
                yield rows
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def scan(self, table: str):
        """A cursor over every row of `table` (its description names the columns)."""
        try:
            return self.db.execute('SELECT * FROM "%s"' % table.replace('"', '""'))
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None

    def tables(self) -> list:
        return [r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def _rollback(self) -> None:
        """Roll back unless SQLite already has (it does on a full disk, for one); the error
        being handled is the one to report."""
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def transaction(self, body, on_abort=lambda: None):
        """body() in one write transaction (the file's write lock held from its start); its
        result. On any failure: on_abort() (the caller's cached row ids are void), a rollback,
        and a StoreError for SQLite's errors."""
        if self.readonly:
            raise StoreError("database %s is open read-only" % self.path)
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._guard()
                result = body()
                self.db.execute("COMMIT")
                return result
            except BaseException:
                on_abort()
                self._rollback()
                raise
        except sqlite3.Error as exc:
            raise wrap_sql_error(exc, self.path) from None
        except OSError as exc:  # a full disk can show as ENOSPC too (a wrapper, a VFS)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreError("database %s: disk full (%s)" % (self.path, exc),
                                 transient=True) from None
            raise

    def insert_frames(self, rows: list) -> set:
        """Insert frame rows (device, boot, nonce, seq, crc, fingerprint, count, payload,
        arrival, vector, debug) in their order; the keys (device, boot, nonce, seq) newly
        stored (a key given twice is stored once, the first). In-process SQLite has no round
        trip to save: a statement a row."""
        fresh = set()
        for r in rows:
            if self.db.execute("INSERT OR IGNORE INTO frames (device, boot, nonce, seq, crc, "
                               "fingerprint, count, payload, arrival, vector, debug) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?)", r).rowcount == 1:
                fresh.add(r[:4])
        return fresh

    def stored_crcs(self, keys: list) -> dict:
        """{key: stored crc} of the frame keys (device, boot, nonce, seq) that are stored."""
        out = {}
        for key in keys:
            row = self.db.execute("SELECT crc FROM frames WHERE device = ? AND boot = ? AND "
                                  "nonce = ? AND seq = ?", key).fetchone()
            if row is not None:
                out[key] = row[0]
        return out
