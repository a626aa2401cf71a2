"""`Store`: the one interface of the store, and the SQL it runs, written once for both engines
(zeal.collect.store.sqlite, zeal.collect.store.postgres). The SQL here is dialect-neutral:
`?` placeholders (the PostgreSQL engine makes psycopg's of them), `ON CONFLICT ... DO
NOTHING / DO UPDATE` and `RETURNING` (SQLite 3.35+); what differs between the engines is the
engine's: opening and checking the schema, a transaction (PostgreSQL retries a deadlock), the
bulk insert of frames, the damage checks, and the names of a few functions.

An engine gives: backend, path (for messages), schema, readonly, lock_suffix, greatest,
false, checks; run(sql, args) inside transaction(body, on_abort); query(sql, args) (rows,
errors as StoreError); scan(table); tables(); insert_frames(rows); stored_crcs(keys);
set_timeout(seconds); close().
"""
import time
from typing import Dict, Iterable, List, Optional

from ...errors import ProfileError, ZealError
from ...mechanism import kinds
from .. import accounting
from .records import (MAX_DEVICES, MAX_EVENTS, MAX_UNRESOLVED_PER_PORT, EventRecord,
                      FrameRecord, StoreError, UnresolvedRecord)
from .sqlite import SqliteEngine

# frames read per page by iter_frames: 4,096 frames of 64 reports are 262,144 reports, ~15 MB
# of rows and arrays while a page is decoded (measured: 56 MB peak RSS for analyze at 10^7
# reports; 65,536 frames a page took 230 MB)
FRAME_CHUNK = 4096


class Store:
    """A zeal database: `Store(path)` an SQLite file (`readonly=True`: an existing file opened
    with `mode=ro`, never written; otherwise a new or empty file gets the schema and a
    schema-1 file is converted in place); `Store(engine=...)` any engine (open_store builds
    PostgreSQL's). Caps: the class attributes max_devices, max_events,
    max_unresolved_per_port (tests may lower them on an instance)."""

    max_devices = MAX_DEVICES
    max_events = MAX_EVENTS
    max_unresolved_per_port = MAX_UNRESOLVED_PER_PORT
    frame_chunk = FRAME_CHUNK
    # what the last write() held: device ids it has rows of, and the frames and events it
    # did not store because their device would exceed max_devices (the event devices_dropped)
    last_devices = frozenset()
    last_devices_dropped = 0
    # what a write leaves in last_lost, last_new_events, last_unresolved_dropped,
    # last_resolved_deleted (see write)
    last_lost: dict = {}
    last_new_events = last_unresolved_dropped = last_resolved_deleted = 0

    def __init__(self, path=None, *, timeout: float = 5.0, readonly: bool = False,
                 engine=None):
        self._engine = engine if engine is not None else SqliteEngine(
            path, timeout=timeout, readonly=readonly)
        self._devices: Dict[bytes, int] = {}
        self.last_new_reports = 0
        self.last_conflicts = 0
        self.last_unresolved_ids: List[int] = []   # ids of the unresolved rows write() added

    @property
    def path(self) -> str:
        """The database's name in messages: a file path, or a URL without its password."""
        return self._engine.path

    @property
    def backend(self) -> str:
        return self._engine.backend

    @property
    def schema(self) -> int:
        return self._engine.schema

    @property
    def readonly(self) -> bool:
        return self._engine.readonly

    def close(self) -> None:
        self._engine.close()

    def set_timeout(self, seconds: float) -> None:
        """How long a write waits for another writer's lock before failing."""
        self._engine.set_timeout(seconds)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ------------------------------------------------------------------------------
    def _transaction(self, body):
        return self._engine.transaction(body, on_abort=self._devices.clear)

    def _device(self, device_id: bytes, now: float) -> Optional[int]:
        """The devices row id, or None if a new device would exceed max_devices."""
        run = self._engine.run
        device_id = bytes(device_id)
        row = self._devices.get(device_id)
        if row is None:
            found = run("SELECT id FROM devices WHERE device_id = ?", (device_id,)).fetchone()
            if found is None:
                top = run("SELECT MAX(id) FROM devices").fetchone()[0] or 0
                if top >= self.max_devices:
                    return None
                found = run("INSERT INTO devices (device_id, first_seen, last_seen) VALUES "
                            "(?, ?, ?) ON CONFLICT (device_id) DO NOTHING RETURNING id",
                            (device_id, now, now)).fetchone()
                if found is None:  # another collector created it meanwhile (PostgreSQL)
                    found = run("SELECT id FROM devices WHERE device_id = ?",
                                (device_id,)).fetchone()
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
        self._engine.run("INSERT INTO events (device, port, time, kind, detail, count, key) "
                         "VALUES (NULL, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                         "count = events.count + excluded.count, time = excluded.time",
                         (port, now, kind, detail, n, key))

    def add_profile(self, profile) -> None:
        """Store a profile file (any kind); a multi header's attribute files are stored too,
        each as its own row (its fingerprint, its file), so the header loads from the store."""
        rows = sorted(kinds.of(profile).files(profile))

        def body():
            for row in rows:
                self._engine.run("INSERT INTO profiles (fingerprint, doc) VALUES (?, ?) "
                                 "ON CONFLICT (fingerprint) DO NOTHING", row)
        self._transaction(body)

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
        `last_resolved_deleted` (rows of `resolved` that were still there), `last_devices`
        (device ids of this write the store has a row of), `last_devices_dropped`."""
        frames, events = list(frames), list(events)
        unresolved, resolved = list(unresolved), [int(i) for i in resolved]
        spans = list(spans)
        result = self._transaction(lambda: self._write(frames, events, link, unresolved,
                                                       resolved, spans))
        self._end_tally()
        (new, self.last_new_reports, self.last_conflicts, self.last_unresolved_ids,
         self.last_devices, self.last_devices_dropped) = result
        return new

    def _write(self, frames, events, link, unresolved, resolved, spans):
        run = self._engine.run
        now = time.time()
        self._begin_tally()  # again on a retry
        fresh_frames = []
        new = reports = conflicts = no_device = 0
        touched = set()
        stored_events = []
        # devices first, in one order for every writer; frames in the order given (their ids
        # are the arrival order frames() returns): PostgreSQL writers that meet on the same
        # keys in other orders can deadlock, and are retried
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
        fresh = self._engine.insert_frames([r for _, r in rows])
        late, stored_now = [], set()    # late: frames whose key was stored before
        for i, r in rows:
            if r[:4] in fresh and r[:4] not in stored_now:
                stored_now.add(r[:4])
                fresh_frames.append(frames[i])
                new += 1
                reports += frames[i].count
                touched.add(r[0])
            else:
                late.append((i, r))
        old_crcs = self._engine.stored_crcs([r[:4] for _, r in late])
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
            run("UPDATE devices SET last_seen = %s(last_seen, ?) WHERE id = ?"
                % self._engine.greatest, (now, dev))
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
        self._account(spans, fresh_frames, now)
        if link is not None:
            run("UPDATE links SET bytes = ? WHERE id = ?", (link[1], link[0]))
        return new, reports, conflicts, ids, set(rows_of), no_device

    def _begin_tally(self) -> None:
        self._keyed_new = self._unresolved_dropped = self._resolved_deleted = 0
        self._lost = {}

    def _account(self, spans, fresh, now: float) -> None:
        """The loss rows of the sessions of `spans` and of the frames newly stored
        (`fresh`), in the write's transaction (zeal.collect.accounting)."""
        if spans or fresh:
            tx = accounting.Transaction(run=self._engine.run, device=self._device,
                                        count=self._count, max_events=self.max_events,
                                        lock_suffix=self._engine.lock_suffix)
            self._lost = accounting.apply(tx, spans, fresh, now)

    def _end_tally(self) -> None:
        self.last_lost, self.last_new_events = self._lost, self._keyed_new
        self.last_unresolved_dropped = self._unresolved_dropped
        self.last_resolved_deleted = self._resolved_deleted

    def _insert_events(self, rows: list, now: float) -> None:
        if not rows:
            return
        run = self._engine.run
        top = run("SELECT MAX(id) FROM events").fetchone()[0] or 0
        dropped = 0
        for row in rows:
            key = row[6]
            if top >= self.max_events:
                if key is None or run("SELECT 1 FROM events WHERE key = ?",
                                      (key,)).fetchone() is None:
                    dropped += 1  # a duplicate key would not have been stored anyway
                continue
            n = run("INSERT INTO events (device, port, time, kind, detail, count, key) "
                    "VALUES (?,?,?,?,?,?,?) ON CONFLICT (key) DO NOTHING", row).rowcount
            top += n
            if key is not None:
                self._keyed_new += n
        self._count("events_dropped", "events beyond the cap of %d rows" % self.max_events,
                    dropped, now)

    def _unresolved(self, records, resolved, now: float) -> list:
        run = self._engine.run
        for i in resolved:
            self._resolved_deleted += max(0, run("DELETE FROM unresolved WHERE id = ?",
                                                 (i,)).rowcount)
        ports = set()
        ids = []
        for u in records:
            ids.append(run("INSERT INTO unresolved (port, arrival, body, crc, reason) "
                           "VALUES (?, ?, ?, ?, ?) RETURNING id",
                           (u.port, float(u.arrival), bytes(u.body), int(u.crc),
                            u.reason)).fetchone()[0])
            ports.add(u.port)
        for port in sorted(ports):
            row = run("SELECT id FROM unresolved WHERE port = ? ORDER BY id DESC "
                      "LIMIT 1 OFFSET ?", (port, self.max_unresolved_per_port)).fetchone()
            if row is not None:  # the newest max_unresolved_per_port rows stay
                n = run("DELETE FROM unresolved WHERE port = ? AND id <= ?",
                        (port, row[0])).rowcount
                self._unresolved_dropped += n
                self._count("unresolved_dropped", "oldest unresolved frames beyond the cap of "
                            "%d per port" % self.max_unresolved_per_port, n, now, port=port)
        return ids

    def open_link(self, port: str) -> int:
        return self._transaction(lambda: self._engine.run(
            "INSERT INTO links (port, opened) VALUES (?, ?) RETURNING id",
            (port, time.time())).fetchone()[0])

    def close_link(self, link_id: int, nbytes: int) -> None:
        self._transaction(lambda: self._engine.run(
            "UPDATE links SET closed = ?, bytes = ? WHERE id = ?",
            (time.time(), nbytes, link_id)))

    # ---- reading ------------------------------------------------------------------------------
    def _query(self, sql: str, args=()) -> list:
        return self._engine.query(sql, args)

    def _damaged(self, table: str, checks: list, source: str) -> None:
        """Raise a one-line StoreError naming the first row of `table` that fails a check."""
        if not checks:
            return
        false = self._engine.false
        cols = ", ".join("COALESCE(%s, %s)" % (sql, false) for _name, sql in checks)
        cond = " AND ".join("COALESCE(%s, %s)" % (sql, false) for _name, sql in checks)
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
                prof = kinds.loads(doc, lambda i, afp: docs.get(afp))
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

    def profile_docs(self) -> list:
        """[(fingerprint, file text)] of every stored profile, as stored (not loaded)."""
        return self._query("SELECT fingerprint, doc FROM profiles")

    def nonces(self) -> List[bytes]:
        """The distinct session nonces of the stored frames (what a frame's key keeps)."""
        return [bytes(v) for (v,) in self._query("SELECT DISTINCT nonce FROM frames")]

    def cells(self):
        """(table, column, value) for every text and blob cell of every table of the store:
        what an audit reads when it searches the store for something it must not hold."""
        for table in self._engine.tables():
            cur = self._engine.scan(table)
            cols = [d[0] for d in cur.description]
            for row in cur:
                for col, cell in zip(cols, row):
                    if isinstance(cell, (str, bytes, bytearray, memoryview)):
                        yield table, col, (cell.encode("utf-8", "surrogatepass")
                                           if isinstance(cell, str) else bytes(cell))

    def frames(self, *, fingerprint: Optional[str] = None, vector: bool = False) -> List[tuple]:
        """Rows (device_id, boot, seq, fingerprint, count, payload, arrival, nonce, debug), in
        arrival order; test-mode (vector) frames only when asked. nonce is None and debug 0 for
        a schema-1 file read as it is. StoreError if a row is damaged."""
        return [r for chunk in self.iter_frames(fingerprint=fingerprint, vector=vector,
                                                chunk=None) for r in chunk]

    def iter_frames(self, *, fingerprint: Optional[str] = None, vector: bool = False,
                    chunk: Optional[int] = 0, check: bool = True):
        """frames() in lists of at most `chunk` rows (0: the store's frame_chunk, FRAME_CHUNK
        unless a test lowers it on the instance; None: one list), so that a reader's
        memory does not grow with the store. Pages by the frame id (keyset: WHERE id > last
        ORDER BY id LIMIT chunk), the same SQL on SQLite and PostgreSQL and no server-side
        cursor held open between pages. The damage check runs once, first (check=False skips
        it for a caller that ran it)."""
        if chunk == 0:
            chunk = self.frame_chunk
        if check:
            self.check_frames()
        extra = "f.nonce, f.debug" if self.schema >= 2 else "NULL, 0"
        sql = ("SELECT d.device_id, f.boot, f.seq, f.fingerprint, f.count, f.payload, "
               "f.arrival, %s, f.id FROM frames f JOIN devices d ON d.id = f.device "
               "WHERE f.vector = ? AND f.id > ?" % extra)
        base = [int(vector)]
        if fingerprint is not None:
            sql += " AND f.fingerprint = ?"
            base.append(fingerprint)
        sql += " ORDER BY f.id"
        if chunk is not None:
            sql += " LIMIT %d" % int(chunk)
        last = -1
        while True:
            args = [base[0], last] + base[1:]
            rows = self._query(sql, args)
            if not rows:
                return
            last = rows[-1][-1]
            yield [r[:-1] for r in rows]
            if chunk is None or len(rows) < chunk:
                return

    def iter_reports(self, fingerprint: str, *, vector: bool = False,
                     chunk: Optional[int] = 0):
        """One profile's frames as analyze needs them and no more, in lists of at most
        `chunk` (as iter_frames): rows (device row id, count + 256 debug, payload), in
        arrival order, from one streamed query; the middle column is -1 for a count outside
        1..255 or a debug flag not 0 or 1. Fewer columns are most of the speed: each column
        is a Python object per frame (count and debug in one: a small int, cached, for a
        frame of a private build). No damage check: the reader checks what it reads (types
        and ranges) and, on a bad row, names it with iter_frames."""
        if chunk == 0:
            chunk = self.frame_chunk
        debug = "f.debug" if self.schema >= 2 else "0"
        sql = ("SELECT f.device, CASE WHEN %s IN (0, 1) AND f.count BETWEEN 1 AND 255 THEN "
               "f.count + 256 * %s ELSE -1 END, f.payload FROM frames f WHERE "
               "f.fingerprint = ? AND f.vector = ? ORDER BY f.id" % (debug, debug))
        args = (fingerprint, int(vector))
        if chunk is None:
            rows = self._query(sql, args)
            if rows:
                yield rows
            return
        yield from self._engine.stream(sql, args, int(chunk))

    def device_rows(self) -> dict:
        """devices' row id -> 8-byte device id (StoreError naming a damaged one)."""
        out = {}
        for rid, dev in self._query("SELECT id, device_id FROM devices"):
            if not isinstance(dev, (bytes, bytearray, memoryview)) or len(bytes(dev)) != 8:
                raise StoreError("database %s: devices row %s is damaged (device id)"
                                 % (self.path, rid))
            out[rid] = bytes(dev)
        return out

    def frame_fingerprints(self, vector: bool = False) -> List[str]:
        """The fingerprints of the stored frames (test-mode ones if vector), in order of
        their first frame. Index seeks only (a GROUP BY would read the whole index): the
        distinct fingerprints one after the other (a recursive query, the same SQL on SQLite
        and PostgreSQL), then each one's first frame."""
        fps = self._query(
            "WITH RECURSIVE fps(fp) AS (SELECT MIN(fingerprint) FROM frames UNION ALL "
            "SELECT (SELECT MIN(f.fingerprint) FROM frames f WHERE f.fingerprint > fps.fp) "
            "FROM fps WHERE fps.fp IS NOT NULL) SELECT fp FROM fps WHERE fp IS NOT NULL")
        firsts = []
        for (fp,) in fps:
            row = self._query("SELECT MIN(id) FROM frames WHERE fingerprint = ? AND "
                              "vector = ?", (fp, int(vector)))
            if row and row[0][0] is not None:
                firsts.append((row[0][0], fp))
        return [fp for _, fp in sorted(firsts)]

    def check_frames(self) -> None:
        """StoreError naming the first damaged frame row, if any (frames() runs it)."""
        checks = self._engine.checks
        self._damaged("frames", checks["frames"] + (checks["frames 2"] if self.schema >= 2
                                                    else []),
                      "frames x LEFT JOIN devices d ON d.id = x.device")

    def _check_events(self) -> None:
        self._damaged("events", self._engine.checks["events"],
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
        self._damaged("unresolved", self._engine.checks["unresolved"], "unresolved x")
        return self._query("SELECT id, body, crc, arrival, reason FROM unresolved "
                           "WHERE port = ? ORDER BY id", (port,))

    def link_bytes(self) -> int:
        self._damaged("links", self._engine.checks["links"], "links x")
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
