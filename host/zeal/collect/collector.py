"""Collector: serial ports -> wire.Decoder -> SQLite store.

Threads: one reader per port (pyserial, short read timeout) decodes its own line and queues,
in line order, the frames, unresolved DATA, HELLOs, STATUS frames and events it found; the
thread that calls `run()` is the only writer (it owns the sqlite connection) and commits what
is queued every FLUSH seconds, one transaction per port (frames, events, unresolved DATA and
the link's byte count together). A frame counts as stored only once that transaction has
committed: every figure in `Progress` is of committed data.

Load (nothing read that the host cannot commit in time; memory set by configuration, not by
the input). The queue between the readers and the writer is bounded (`queue_bytes`, an
estimate of its memory: the bytes read plus RECORD_BYTES per record decoded from them). A
reader waits for its line to have bytes, then for a decoding turn (DECODERS readers at a
time), then, while the writer is at the store or the queue is more than half full, reads
nothing: the data stays where it came from (the OS's serial or pty buffer, then the board,
whose bounded write timeout drops frames it counts itself: STATUS frames_dropped, and a gap
the collector stores). Nothing read is ever dropped. Each round of the writer: wait until
FLUSH seconds after the previous commit or until the queue is full (a reader waits for
room), whichever comes first; then, the readers held, take what is queued (one batch, at
most queue_bytes) and commit it. The queue is never waited on to be empty, so under
sustained input a commit still follows every FLUSH seconds (plus one bounded batch's commit
time). Why the readers are held and take turns: decoding holds the GIL, and with many busy
readers every statement's release of it (sqlite3 releases it around each step) would cost
the writer a turn behind all of them -- at 190 ports that starved the commits as surely as a
drain loop. So the collector holds at most about queue_bytes of read data and records, plus
the reads being decoded. Progress says how long the readers waited for room
(`reader_wait`), the queue's high-water mark (`queue_peak`) and the commit latency (from a
frame's reading to its commit: `latency`).

Faults of the store (a database locked by another program, a full disk, a PostgreSQL server
restarting: StoreError.transient). A write refused so changed nothing: the writer keeps the
batch it could not commit and tries it again, after 0.1 s, the wait doubling up to
STORE_RETRY_MAX, releasing the readers meanwhile, who read only what the bounded queue holds
(back-pressure keeps the rest where it came from); a line says the store is unavailable,
another every STORE_SAY s for how long, one when it is back; the summary gives the time
(store_unavailable_s). Nothing read is dropped. The run gives up only after `store_wait`
seconds unavailable (--store-wait; default never) or on Ctrl-C while it is away, with one
line saying how many frames read were not committed. A PostgreSQL store reconnects on the
next try (zeal.collect.store.PgStore); the frames' keys make a batch written twice (a commit
whose acknowledgement the restart lost) store nothing twice.

Attach (nothing lost when the collector starts or restarts while a board streams): on every
open of a port the collector writes `wire.HELLO_REQUEST` (`!hello`), and the board answers with
a HELLO at its next sampling tick. DATA that arrives before a HELLO of its session (or that
fails its CRC under the latest one) comes out of the decoder `Unresolved`; it is stored raw
(table `unresolved`) with the other data of its commit, and kept by the port's reader (with
the rows earlier runs left for that port). On every HELLO the reader has its line's decoder
resolve them at once (`Decoder.resolve`: the session CRC is verified then, the u32 sequence
number placed below the HELLO's next_seq, and the line's loss count corrected before any
later frame is read); those that open are stored as frames and their rows deleted in one
transaction, those refused are deleted and counted, the rest stay for a later HELLO (another
boot's) or a later run.

A port that is absent at the start (no such device path yet, nobody listening at a socket)
is waited for: a line says so and it is tried every RETRY seconds, like an unplugged one
(wait_for_ports=False makes it an error instead); a port that can never open (a directory,
an unknown URL scheme, no permission, busy) is a user mistake (PortError) at once. A port
that fails later (USB unplugged, a board reset that re-enumerates, the pty of a virtual device gone) is
retried every RETRY seconds until the run ends; each link (one open..close of a port) is a
row in `links`, with connect/disconnect events. A reader that fails with any other exception
(a bug, pyserial's select() on a descriptor >= 1024) is reported (event `reader_error`, a line
through `log`), its port closed and reopened after RETRY seconds: a port is never left unread
silently. More ports than the process can serve are refused up front (transport.port_capacity).

Events stored (keys as the store's docstring lists, so collecting a stream twice stores each
once): session (first HELLO of a device on a port), reboot (a new session of the same device),
gap (lost DATA frames: the store's loss rows of each session, set from what is stored by
reason, gap, before_attach or unattended; the reader's decoder gives with each read the
span it knows of each session with news, an accounting.Span, committed with the frames:
zeal.collect.accounting), restart (sequence restarted inside one session), reject (by
reason), status (STATUS frames: code, counters, message), duplicate_id (a device id seen
on two ports at once), reader_error, connect, disconnect. A link's `bytes` are those read
that stored something new: a commit that held frames or keyed events and stored none of
them new (a stream collected again) adds its bytes to Progress.repeated_bytes instead.

STATUS frames go to `log` as they arrive (not the periodic OK ones unless verbose); a port
whose device reported an error (Status.is_error) and sent no DATA is listed in
Progress.failed_devices.

VECTOR frames (made with a given test key) are refused, and counted as rejects of reason
`vector`, unless keep_vector=True; then they are stored with vector=1, which analysis skips
unless asked.
"""
import contextlib
import errno
import queue
import signal
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Optional

import serial

from .. import wire
from ..errors import ZealError
from ..text import shown
from ..wire import transport
from .accounting import REASONS, Span
from .store import (MAX_DEVICES, EventRecord, FrameRecord, Store, StoreError,
                    UnresolvedRecord, open_store)

FLUSH = 0.2    # seconds between commits
# Memory between reading and committing, estimated as the bytes read plus RECORD_BYTES for
# each record decoded from them (a FrameRecord and its bytes objects take ~0.4-0.8 KB).
RECORD_BYTES = 512
QUEUE_BYTES = 4 << 20  # what the readers may have queued for the writer: one batch at most
MAX_BACKLOG = 65_536  # unresolved DATA a reader keeps per port (the store's cap too)
DECODERS = 2   # readers that decode at once (the others wait for their turn)
RETRY = 1.0    # seconds between attempts to reopen a lost port
# The store unavailable (locked, disk full, a PostgreSQL server restarting): the write is
# tried again after STORE_RETRY_FIRST s, the wait doubling up to STORE_RETRY_MAX; a line
# every STORE_SAY s says for how long. The run gives up only after store_wait s (--store-wait;
# default: never) or on Ctrl-C, saying how many frames read were not committed.
STORE_RETRY_FIRST = 0.1
STORE_RETRY_MAX = 5.0
STORE_SAY = 10.0
LOCK_WAIT = 5.0  # a write's wait for another writer's lock, before it is tried again
# STATUS lines on stderr (every STATUS is stored all the same): at most STATUS_LINES a port
# and STATUS_LINES_ALL in all every STATUS_WINDOW seconds; the rest are counted, and said
# in one line when the window ends.
STATUS_LINES = 10
STATUS_LINES_ALL = 100
STATUS_WINDOW = 10.0
MAX_WARNED = 4096  # device-id pairs whose duplicate_id warning a run remembers
# Rejects that are not damage on the line, shown apart: test-key frames, DATA under a profile
# the host lacks.
NOT_ERRORS = ("vector", "unknown_profile")
# Events that are facts of this run, not of the stream: never deduplicated.
_RUN_EVENTS = ("connect", "disconnect", "reader_error", "duplicate_id")


@dataclass
class Progress:
    """Committed figures, passed to `on_progress` after each commit and returned by `run`."""

    elapsed: float = 0.0
    reports: int = 0          # reports in newly stored frames
    frames: int = 0           # newly stored frames
    duplicates: int = 0       # frames already in the store (a stream collected twice)
    resolved: int = 0         # frames stored late: DATA kept until its session's HELLO came
    unresolved: int = 0       # unresolved DATA rows of these ports in the store: kept raw,
                              # waiting for its HELLO (net of resolved and of the cap's drops)
    unresolved_dropped: int = 0  # unresolved rows the store's per-port cap deleted this run
    rejects: Counter = field(default_factory=Counter)  # reason -> count
    gaps: int = 0             # DATA frames lost, any reason (= sum of `lost`)
    # frames lost in the sessions this run stored or heard of, by reason (gap, before_attach,
    # unattended: zeal.collect.accounting), as the store counts them now (they can go down)
    lost: Counter = field(default_factory=Counter)
    repeated_bytes: int = 0   # bytes read that stored nothing new (a stream read again)
    reboots: int = 0
    disconnects: int = 0
    reader_errors: int = 0    # readers that failed with an unexpected exception (retried)
    duplicate_ids: int = 0    # device ids seen on two ports at once
    devices_dropped: int = 0  # frames and events not stored: their device would exceed the
                              # store's cap on devices (its event devices_dropped)
    status_suppressed: int = 0  # STATUS lines not shown (rate limit; every STATUS is stored)
    bytes: int = 0            # bytes read on every link
    devices: set = field(default_factory=set)
    connected: int = 0        # ports open now
    stopped: int = 0          # ports whose device sent STATUS STOPPED (or an error status)
    failed_devices: list = field(default_factory=list)  # (port, device hex, code, message)
    never_opened: list = field(default_factory=list)  # ports absent for the whole run
    reason: str = ""          # why the run ended ("" while running)
    commits: int = 0          # rounds of commits (one transaction per port with news)
    queue_peak: int = 0       # most bytes the readers had queued for the writer at once
    reader_wait: float = 0.0  # seconds readers waited for room in the queue (back-pressure)
    store_outages: int = 0    # times the store became unavailable (locked, full, restarting)
    store_unavailable: float = 0.0  # seconds it was, in all (the writer retried meanwhile)
    store_down: float = 0.0   # seconds the current outage has lasted (0: the store is up)
    uncommitted: int = 0      # frames read and not committed when the run gave up
    latency: "Latency" = field(default_factory=lambda: Latency())  # reading -> commit

    @property
    def rate(self) -> float:
        return self.reports / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def errors(self) -> int:
        """CRC and format rejects: damage on the line."""
        return sum(n for r, n in self.rejects.items() if r not in NOT_ERRORS)

    def line(self, rate: Optional[float] = None) -> str:
        """One progress line; `rate`: reports/s to show instead of the run's average."""
        text = ("reports %d (%.0f/s)  frames %d  rejects %d  gaps %d  devices %d"
                % (self.reports, self.rate if rate is None else rate, self.frames,
                   self.errors, self.gaps, len(self.devices)))
        for reason in NOT_ERRORS:
            if self.rejects[reason]:
                text += "  %s %d" % (reason.replace("_", "-"), self.rejects[reason])
        if self.unresolved:
            text += "  unresolved %d" % self.unresolved
        if self.store_down:
            text += "  store unavailable for %.0f s" % self.store_down
        return text


class _Devices(set):
    """Progress.devices: the ids of the devices whose frames or events this run stored. An id
    the store did not take (a device beyond its cap, store.max_devices, whose frames and
    events it counts in devices_dropped) is not kept, and never more than the cap's number:
    the memory is bounded by the store's configuration, not by how many ids the input
    names (each new id grew it by ~150 bytes before, past the cap too). Filled after each
    write, from the store's last_devices."""

    def __init__(self, store):
        super().__init__()
        self._store = store

    def add(self, device_id) -> None:
        held = getattr(self._store, "last_devices", None)
        if device_id is None or device_id in self or (held is not None
                                                      and device_id not in held):
            return
        if len(self) < getattr(self._store, "max_devices", MAX_DEVICES):
            set.add(self, device_id)

    def update(self, *others) -> None:
        for other in others:
            for device_id in other:
                self.add(device_id)


class _StatusLines:
    """The rate limit of STATUS lines: `say(key, text)` passes text to `log` unless `key`
    (a port) had `per_key` lines, or all keys `per_all`, in the current window of `window`
    seconds; then it counts it and returns False. `roll()` (called on every say, after each
    commit, and with final=True at the end) ends a window that is over: one line says how
    many were suppressed in it. Memory: a count per port heard in the window."""

    def __init__(self, log, per_key: int = STATUS_LINES, per_all: int = STATUS_LINES_ALL,
                 window: float = STATUS_WINDOW):
        self.log, self.per_key, self.per_all, self.window = log, per_key, per_all, window
        self.start = time.monotonic()
        self.shown = Counter()
        self.held = 0        # suppressed in the current window
        self.held_ports = 0

    def say(self, key, text: str) -> bool:
        self.roll()
        if self.shown[key] >= self.per_key or sum(self.shown.values()) >= self.per_all:
            self.held += 1
            return False
        self.shown[key] += 1
        self.log(text)
        return True

    def roll(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.start < self.window:
            return
        if self.held:
            self.log("zeal: %d more STATUS line(s) suppressed in the last %.0f s (at most %d "
                     "a port and %d in all every %g s); every STATUS is stored: zeal events "
                     "--kind status" % (self.held, max(now - self.start, 1.0), self.per_key,
                                        self.per_all, self.window))
        self.start, self.held = now, 0
        self.shown = Counter()


class Latency:
    """Commit latency of frames (seconds from a frame's reading to the commit that stored
    it): a histogram of bounded size (1 ms buckets up to 10 s, 1 s buckets up to an hour,
    longer ones in the last), so its memory does not grow with the run."""

    def __init__(self):
        self.counts = Counter()
        self.n = 0
        self.max = 0.0

    @staticmethod
    def _bucket(seconds: float) -> int:
        ms = int(seconds * 1000.0) if seconds > 0 else 0
        return ms if ms < 10_000 else 10_000 + min(int(seconds) - 10, 3590)

    @staticmethod
    def _upper(bucket: int) -> float:
        return (bucket + 1) / 1000.0 if bucket < 10_000 else float(bucket - 10_000 + 11)

    def add(self, seconds: float, n: int = 1) -> None:
        self.counts[self._bucket(seconds)] += n
        self.n += n
        self.max = max(self.max, seconds)

    def quantile(self, q: float) -> float:
        """The upper end of the bucket holding quantile q (0 without data)."""
        if not self.n:
            return 0.0
        want, seen = q * self.n, 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= want:
                return min(self._upper(bucket), self.max)
        return self.max


class _Backlog:
    """The readers' queue to the writer, bounded by `limit` (bytes: the estimated memory
    of what is queued, see RECORD_BYTES).

    admit() (a reader about to read) waits while the queue is more than half full; put(item,
    size) waits while size does not fit (an item of size 0, a connect or a disconnect, never
    waits: at most a few per port and second); an item larger than the whole limit (a read
    of MAX_CHUNK bytes that decoded into very many records) waits for an empty queue and
    counts as the limit. So `size` never exceeds `limit`. Either wait wakes a writer in
    wait_full(deadline), and is added to `waited` (seconds). take(budget, timeout) returns
    (items, size): the items queued (waiting up to timeout for the first), oldest first, up
    to `budget` (at least one item), and wakes the readers waiting for room."""

    def __init__(self, limit: int):
        self.limit = max(int(limit), 2 * transport.MAX_CHUNK)
        self.size = 0
        self.peak = 0
        self.waited = 0.0
        self.full = False  # a reader found no room since the writer last took
        self._items = deque()
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._not_full = threading.Condition(self._lock)
        self._full = threading.Condition(self._lock)

    def put(self, item, size: int = 0) -> None:
        size = min(size, self.limit)
        with self._lock:
            if size and self.size + size > self.limit:
                started = time.monotonic()
                self.full = True
                self._full.notify()  # a writer in wait_full: the queue is full
                while self.size + size > self.limit:
                    self._not_full.wait()
                self.waited += time.monotonic() - started
            self._items.append((item, size))
            self.size += size
            if self.size > self.peak:
                self.peak = self.size
            self._not_empty.notify()

    def admit(self) -> None:
        """A reader is about to read: wait while the queue is more than half full (so that
        what it reads goes in at once, rather than waiting here, read, for room)."""
        with self._lock:
            if self.size > self.limit // 2:
                started = time.monotonic()
                self.full = True
                self._full.notify()  # a writer in wait_full: the queue is full
                while self.size > self.limit // 2:
                    self._not_full.wait()
                self.waited += time.monotonic() - started

    def wait_full(self, deadline: float) -> None:
        """Wait until `deadline` (monotonic) or until a reader finds no room."""
        with self._lock:
            while not self.full:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    break
                self._full.wait(wait)

    def take(self, budget: int, timeout: float = 0.0) -> tuple:
        with self._lock:
            if not self._items and timeout > 0:
                self._not_empty.wait(timeout)
            out, taken = [], 0
            while self._items and (not out or taken + self._items[0][1] <= budget):
                item, size = self._items.popleft()
                out.append(item)
                taken += size
            if taken:
                self.size -= taken
                self.full = False
                self._not_full.notify_all()
            return out, taken

    def get_nowait(self):
        """One item (queue.Queue's interface, for Collector._drain)."""
        with self._lock:
            if not self._items:
                raise queue.Empty
            item, size = self._items.popleft()
            if size:
                self.size -= size
                self.full = False
                self._not_full.notify_all()
            return item

    def __len__(self) -> int:
        return len(self._items)


def _session_hex(hello) -> str:
    return bytes(hello.session).hex()


class _Item:
    """An unresolved DATA frame kept by a port's reader for Decoder.resolve (which reads
    .body and .crc). `id`: its row in the store once committed (set by the writer), `record`:
    the UnresolvedRecord the writer stores (None for rows loaded from an earlier run)."""

    __slots__ = ("body", "crc", "arrival", "id", "record")

    def __init__(self, body, crc, arrival, row_id=None, record=None):
        self.body, self.crc, self.arrival = body, crc, arrival
        self.id, self.record = row_id, record


class _Port:
    """One serial line. Reader-owned: serial, decoder, nbytes, the `_seen_*` counters and the
    event-key anchors. Writer-owned: link, link_bytes, pending records, hello (the latest HELLO
    taken), unresolved bookkeeping."""

    def __init__(self, url: str, decoder: wire.Decoder):
        self.url = url
        self.decoder = decoder
        self.serial = None
        self.nbytes = 0               # bytes read on the current link
        self.session = None           # latest HELLO session seen on this port (reader)
        self.session_hex = None
        self.device = None            # its device id (reader)
        self._seen_rejects = Counter()
        self._seen_total = 0          # sum of _seen_rejects' counts when last looked
        self._seen_lost = 0
        self._seen_restarts = 0
        self.anchor = None            # (session hex or None, last seq seen) for event keys
        self.ordinal = Counter()      # reason -> rejects since the anchor moved
        self.failures = 0             # reader exceptions (reader)
        self.opened = False           # the port opened at least once this run (reader)
        self.backlog = []             # _Item: unresolved DATA of this port, oldest first
        self.touched = set()          # sessions with news since the last read was queued
        # writer
        self.link = None
        self.link_bytes = 0
        self.committed_bytes = 0      # link_bytes as last committed
        self.frames = []              # FrameRecord
        self.events = []              # EventRecord in arrival order
        self.unresolved = []          # _Item whose record is not yet stored
        self.resolved_ids = []        # stored unresolved rows to delete at the next commit
        self.stored_unresolved = 0    # rows of this port in the store (as last known)
        self.writer_device = None     # its device id, for duplicate_id
        self.stop_pending = False     # a STOPPED status is among the pending events
        self.stopped = False          # ... and is committed
        self.error_status = None      # (code name, message) of an error STATUS
        self.frames_seen = 0          # DATA frames of this port committed (new or duplicate)
        self.resolved_frames = 0      # pending frames that came out of resolve
        self.reads = []               # (arrival, frames) of the pending frames' reads
        self.logged_failures = 0      # reader failures taken by the writer
        self.spans = {}               # session hex -> accounting.Span, to write
        self.repeating = False        # the last commit with news stored nothing new
        self.repeat_bytes = 0         # bytes of this link that stored nothing new

    @property
    def device_now(self) -> Optional[bytes]:
        h = self.decoder.hello
        return None if h is None else h.device_id


class Collector:
    """Collect from `ports` (pyserial URLs) into `store` (a zeal.collect.store.Store). Build it and
    call `run` (once) in the thread that opened the store: sqlite connections are per thread.

    profiles: Profile objects the devices may announce; added to the store. Profiles already
    in the store are known too. DATA under any other profile is refused (`unknown_profile`).
    on_progress: called with a Progress after each commit and once at the end.
    log: called with one line of text for what a user must see as it happens (device STATUS,
    a reader that failed, a device id on two ports); default: print to stderr.
    verbose: log the periodic STATUS OK heartbeats too.
    wait_for_ports: a port absent at the start is waited for (tried every RETRY seconds,
    with a line through `log`) instead of raising PortNotFound.
    queue_bytes: what the readers may have queued for the writer (default QUEUE_BYTES; at
    least 2 transport.MAX_CHUNK), in bytes: the estimated memory, the bytes read plus
    RECORD_BYTES per record decoded from them. A reader stops reading while the queue is
    more than half full. One round's batch is what is queued: a full queue is committed at
    once.
    store_wait: seconds the store may stay unavailable (locked, full, a server away) before
    the run gives up (StoreError saying how many frames read were not committed); None:
    retried until it comes back, or Ctrl-C (which gives up at once while it is away).
    """

    def __init__(self, ports, store: Store, *, profiles=(), keep_vector: bool = False,
                 on_progress=None, baudrate: int = transport.DEFAULT_BAUD, log=None,
                 verbose: bool = False, wait_for_ports: bool = True,
                 queue_bytes: Optional[int] = None, store_wait: Optional[float] = None):
        urls = [ports] if isinstance(ports, str) else list(ports)
        if not urls:
            raise ZealError("no port to collect from")
        if len(set(urls)) != len(urls):
            raise ZealError("a port is given twice")
        cap, why = transport.port_capacity()
        if cap is not None and len(urls) > cap:
            raise ZealError("%d ports are more than one collector can read here (at most %d: "
                            "each port takes %d file descriptors and %s); split the ports "
                            "between several collectors" % (len(urls), cap,
                                                            transport.FDS_PER_PORT, why))
        self.store = store
        self.keep_vector = keep_vector
        self.on_progress = on_progress
        self.baudrate = baudrate
        self.verbose = verbose
        self.wait_for_ports = wait_for_ports
        self.log = log if log is not None else self._stderr
        for prof in profiles:
            store.add_profile(prof)
        self._profiles = store.profiles()
        self.ports = [_Port(u, wire.Decoder(self._profiles, vectors=keep_vector)) for u in urls]
        for p in self.ports:  # what earlier runs could not resolve on this port
            p.backlog = [_Item(bytes(body), crc, arrival, row_id)
                         for row_id, body, crc, arrival, _reason in store.unresolved(p.url)]
            p.stored_unresolved = len(p.backlog)
        self.progress = Progress(unresolved=sum(p.stored_unresolved for p in self.ports))
        self._queue = _Backlog(QUEUE_BYTES if queue_bytes is None else queue_bytes)
        self._gate = threading.Event()  # readers read while it is set (not during commits)
        self._gate.set()
        self._writers = 0               # depth of _writing()
        self._committed_at = 0.0        # monotonic time of the last round's commit
        # Decoding holds the GIL: DECODERS readers at a time read and decode as fast as all
        # of them would, and the others wait off the GIL (their bytes still in their lines),
        # so the writer gets the GIL back at once.
        self._decoding = threading.Semaphore(DECODERS)
        self._stop = threading.Event()
        self._threads = []
        self._closed_bytes = 0
        self._interrupted = False
        self._owner = {}              # device id -> port (url) whose latest HELLO named it
        self._warned = set()          # (device id, port, port) pairs already reported
        self.progress.devices = _Devices(store)  # bounded by the store's cap on devices
        self._status_lines = _StatusLines(lambda text: self.log(text))
        self._lost = {}               # session hex -> (gap, before_attach, unattended)
        self.store_wait = store_wait
        self._down_since = None       # monotonic time the store became unavailable
        self._down_total = 0.0        # seconds of the outages that ended
        self._backoff = STORE_RETRY_FIRST
        self._next_say = 0.0

    @staticmethod
    def _stderr(text: str) -> None:
        print(shown(text), file=sys.stderr, flush=True)  # device text: escaped (zeal.text)

    # ---- reader threads -----------------------------------------------------------------------
    def _reader(self, p: _Port) -> None:
        while not self._stop.is_set():
            self._gate.wait()  # closed while the writer commits
            try:
                if p.serial is None:
                    if self._stop.wait(RETRY):
                        break
                    try:
                        p.serial = transport.open_port(p.url, baudrate=self.baudrate)
                    except transport.PortError:
                        continue  # still unplugged: try again in RETRY seconds
                    self._connected(p)
                    continue
                # Wait for data without a decoding turn, then read and decode it in one turn:
                # what is read is decoded at once, and a line waiting for its turn keeps
                # its bytes (back-pressure) instead of holding them here.
                if not transport.wait_readable(p.serial, transport.READ_TIMEOUT):
                    continue
                with self._decoding:
                    self._gate.wait()    # not while the writer is at the store
                    self._queue.admit()  # no room: read nothing (the line keeps its bytes)
                    try:
                        data = transport.read_chunk(p.serial)
                    except (serial.SerialException, OSError) as exc:
                        data, why = None, str(exc) or type(exc).__name__
                    if data:
                        p.nbytes += len(data)
                        item = self._decoded(p, data)
                if data is None:
                    self._disconnected(p, why)
                elif data:
                    self._queue.put(*item)  # waits for room: back-pressure
            except Exception as exc:  # never let a port go unread silently: report, retry
                self._failed(p, exc)
        if p.serial is not None:
            self._disconnected(p, "")

    def _failed(self, p: _Port, exc: Exception) -> None:
        p.failures += 1
        text = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
        self._queue.put(("failure", p, text))
        if p.serial is not None:
            self._disconnected(p, "reader error: " + text)

    def _connected(self, p: _Port) -> None:
        """A link opened: end the frame cut by the previous link, record the link, ask the
        board for a HELLO."""
        if p.decoder.deframer.pending:
            # End the frame cut by the disconnect here, so it cannot swallow the first whole
            # frame of the new link. If its bytes were whole (only the delimiter was missing)
            # this completes it: decoded and stored as any other frame.
            self._decode(p, b"\x00")
        p.nbytes = 0
        p.opened = True
        self._queue.put(("connect", p, None))
        try:
            sent = transport.send_line(p.serial, wire.HELLO_REQUEST)
        except (serial.SerialException, OSError) as exc:
            self._disconnected(p, str(exc) or type(exc).__name__)
            return
        if not sent:
            self._queue.put(("request_timeout", p, None))

    def _disconnected(self, p: _Port, why: str) -> None:
        try:
            p.serial.close()
        except Exception:  # closing a port that is already gone
            pass
        p.serial = None
        self._queue.put(("disconnect", p, (why, p.nbytes)))

    def _decode(self, p: _Port, data: bytes) -> None:
        """Feed the decoder frame by frame (each piece ends at a delimiter), so that every
        record and event is placed exactly in the line's order: a HELLO resolves only what
        came before it, and events get keys that do not depend on how reads cut the stream."""
        self._queue.put(*self._decoded(p, data))  # waits for room: back-pressure

    def _decoded(self, p: _Port, data: bytes) -> tuple:
        """_decode's work: (the queue item, its size)."""
        now = time.time()
        recs = []
        start, n = 0, len(data)
        while start < n:
            z = data.find(0, start)
            end = n if z < 0 else z + 1
            self._feed(p, data[start:end] if start or end < n else data, now, recs)
            start = end
        self._spans(p, recs)
        return ("data", p, (recs, p.nbytes)), len(data) + RECORD_BYTES * len(recs)

    def _feed(self, p: _Port, piece: bytes, now: float, recs: list) -> None:
        dec = p.decoder
        hello = False
        for ev in dec.feed(piece):
            if isinstance(ev, wire.Batch):
                self._anchor(p, p.session_hex, ev.seq)  # a fed Batch is of the latest HELLO
                self._batch(p, ev, now, recs, p.session_hex)
            elif isinstance(ev, wire.Unresolved):
                rec = UnresolvedRecord(p.url, now, bytes(ev.body), ev.crc, ev.reason)
                item = _Item(rec.body, rec.crc, now, None, rec)
                p.backlog.append(item)
                if len(p.backlog) > MAX_BACKLOG:  # the store drops its oldest rows too
                    del p.backlog[:len(p.backlog) - MAX_BACKLOG]
                recs.append(("unresolved", item))
            elif isinstance(ev, wire.Hello):
                sess = _session_hex(ev)
                if ev.session != p.session:
                    kind = "reboot" if p.device == ev.device_id else "session"
                    recs.append(("event", EventRecord(
                        kind, "boot %d fingerprint %s%s%s"
                        % (ev.boot, ev.fingerprint.hex(), " vector" if ev.vector else "",
                           " debug" if ev.debug else ""),
                        device_id=ev.device_id, port=p.url, time=now, key="hello:" + sess)))
                    p.session, p.session_hex, p.device = ev.session, sess, ev.device_id
                self._anchor(p, sess, ev.next_seq - 1)
                recs.append(("hello", ev))
                hello = True
            elif isinstance(ev, wire.Status):
                recs.append(("status", (ev, p.device_now, p.session_hex, now)))
        if hello and p.backlog:
            self._resolve(p, recs)
        self._account(p, now, recs)
        if p.session is not None:
            p.touched.add(p.session)

    def _batch(self, p: _Port, b, arrival: float, recs: list, sess) -> None:
        recs.append(("frame", FrameRecord.from_batch(b, arrival)))

    def _resolve(self, p: _Port, recs: list) -> None:
        """A HELLO came: the line's decoder opens what it can of the port's backlog now,
        before any later frame is read (so its loss count and sequence places are right)."""
        dec = p.decoder
        keep = []
        for item, res in zip(p.backlog, dec.resolve(p.backlog)):
            if res is None:
                keep.append(item)
                continue
            recs.append(("resolved", (item, res is not False)))
            if res is not False:
                sess = wire.session_bytes(res.device_id, wire.fingerprint_key(res.profile),
                                          res.boot, res.nonce)
                p.touched.add(sess)
                self._batch(p, res, item.arrival, recs, sess.hex())
        p.backlog = keep

    def _spans(self, p: _Port, recs: list) -> None:
        """What the line's decoder knows of each session with news (accounting.Span: from
        where it listened to the highest number known sent), for the store's loss rows."""
        for sess in p.touched:
            span = p.decoder.span(sess)
            if span is not None:
                recs.append(("span", Span.of(sess, span[0], span[1], p.url)))
        p.touched = set()

    def _anchor(self, p: _Port, sess, seq) -> None:
        if p.anchor != (sess, seq):
            p.anchor = (sess, seq)
            p.ordinal = Counter()

    def _account(self, p: _Port, now: float, recs: list) -> None:
        """Rejects, gaps and restarts counted by the decoder since the last piece."""
        dec = p.decoder
        dev = p.device_now
        total = dec.rejected_total
        rejected = dec.rejected if total != p._seen_total else p._seen_rejects
        p._seen_total = total
        if rejected != p._seen_rejects:
            where, seq = p.anchor if p.anchor is not None else (None, -1)
            where = where if where is not None else p.url
            for reason, n in rejected.items():
                for _ in range(n - p._seen_rejects[reason]):
                    p.ordinal[reason] += 1
                    recs.append(("event", EventRecord(
                        "reject", reason, 1, device_id=dev, port=p.url, time=now,
                        key="reject:%s:%d:%s:%d" % (where, seq, reason, p.ordinal[reason]))))
            p._seen_rejects = rejected
        if dec.restarts != p._seen_restarts:
            sess, seq = p.anchor if p.anchor is not None else (p.url, -1)
            recs.append(("event", EventRecord("restart", "", dec.restarts - p._seen_restarts,
                                              device_id=dev, port=p.url, time=now,
                                              key="restart:%s:%d" % (sess, seq))))
            p._seen_restarts = dec.restarts

    # ---- writer -------------------------------------------------------------------------------
    def _take(self, item) -> None:
        kind, p, arg = item
        if kind == "data":
            recs, nbytes = arg
            fresh, late, arrival = 0, False, None
            for what, rec in recs:
                if what == "frame":
                    p.frames.append(rec)
                    if late:  # read earlier, opened by this HELLO: not this read's latency
                        late = False
                    else:
                        fresh += 1
                        arrival = rec.arrival
                elif what == "unresolved":
                    p.unresolved.append(rec)
                elif what == "resolved":
                    item, opened = rec
                    if item.id is not None:
                        p.resolved_ids.append(item.id)
                    else:  # still pending: never stored
                        p.unresolved = [u for u in p.unresolved if u is not item]
                    p.resolved_frames += opened
                    late = opened  # its frame follows
                elif what == "event":
                    p.events.append(rec)
                elif what == "span":
                    old = p.spans.get(rec.session)
                    p.spans[rec.session] = rec if old is None else old.merged(rec)
                elif what == "hello":
                    self._on_hello(p, rec)
                elif what == "status":
                    self._on_status(p, *rec)
            p.link_bytes = nbytes
            if fresh:
                p.reads.append((arrival, fresh))
        elif kind == "connect":
            with self._writing():
                self._commit(p)
                p.link = self._store_call(lambda: self.store.open_link(p.url))
            p.link_bytes = p.committed_bytes = p.repeat_bytes = 0
            p.repeating = False
            p.events.append(EventRecord("connect", device_id=p.writer_device, port=p.url,
                                        time=time.time()))
            self.progress.connected += 1
        elif kind == "disconnect":
            why, nbytes = arg
            p.link_bytes = nbytes
            if why:  # "" when the run ends: a close, not a disconnect
                p.events.append(EventRecord("disconnect", why, device_id=p.writer_device,
                                            port=p.url, time=time.time()))
            with self._writing():
                self._commit(p)
                self._store_call(lambda: self.store.close_link(
                    p.link, p.link_bytes - p.repeat_bytes))
            self._closed_bytes += p.link_bytes
            p.link, p.link_bytes, p.committed_bytes, p.repeat_bytes = None, 0, 0, 0
            self.progress.connected -= 1
            if self._owner.get(p.writer_device) == p.url:
                del self._owner[p.writer_device]
        elif kind == "failure":
            self.progress.reader_errors += 1
            p.events.append(EventRecord("reader_error", arg, port=p.url, time=time.time()))
            p.logged_failures += 1
            n = p.logged_failures
            if n <= 3 or n % 100 == 0:  # tell, but never flood: every failure is an event
                self.log("zeal: reading %s failed (%s); reopening it in %g s%s"
                         % (p.url, arg, RETRY, "" if n == 1 else " (failure %d)" % n))
        elif kind == "request_timeout":
            p.events.append(EventRecord("hello_request", "not taken within %g s"
                                        % transport.WRITE_TIMEOUT, port=p.url,
                                        time=time.time()))

    def _on_hello(self, p: _Port, hello) -> None:
        dev = hello.device_id
        other = self._owner.get(dev)
        if other is not None and other != p.url:
            pair = (dev, min(other, p.url), max(other, p.url))
            if pair not in self._warned:
                if len(self._warned) >= MAX_WARNED:  # bounded: a pair may be told again
                    self._warned.pop()
                self._warned.add(pair)
                self.progress.duplicate_ids += 1
                p.events.append(EventRecord("duplicate_id", "also on %s" % other,
                                            device_id=dev, port=p.url, time=time.time()))
                self.log("zeal: warning: device id %s is on two ports at once (%s and %s); "
                         "its frames are kept apart by session nonce, but check the boards"
                         % (dev.hex(), other, p.url))
        if p.writer_device is not None and p.writer_device != dev \
                and self._owner.get(p.writer_device) == p.url:
            del self._owner[p.writer_device]
        self._owner[dev] = p.url
        p.writer_device = dev

    def _on_status(self, p: _Port, st, device, sess, now) -> None:
        counters = "ticks=%d frames_dropped=%d" % (st.ticks, st.frames_dropped)
        if st.debug:
            counters += " replaced=%d clamped=%d debug" % (st.replaced, st.clamped)
        p.events.append(EventRecord(
            "status", "%s %s%s" % (st.code_name, counters,
                                   (" " + st.message) if st.message else ""),
            device_id=device, port=p.url, time=now,
            key=None if sess is None else "status:%s:%d:%d" % (sess, st.ticks, st.code)))
        if st.is_error:
            p.error_status = (st.code_name, st.message)
        if st.code == wire.STOPPED or st.is_error:
            p.stop_pending = True
        if st.code != wire.OK or self.verbose:
            who = ("device %s" % wire.device_name(device)) if device is not None else p.url
            self._status_line(p, "%s %s %s%s" % (
                time.strftime("%H:%M:%S", time.localtime(now)), who, st.code_name,
                (": " + shown(st.message)) if st.message else ""))

    def _status_line(self, p: _Port, text: str) -> None:
        """A STATUS line through `log`, rate-limited (_StatusLines): the suppressed ones are
        counted in Progress.status_suppressed; the event is stored either way."""
        if not self._status_lines.say(p.url, text):
            self.progress.status_suppressed += 1

    def flush_status_lines(self) -> None:
        """Say how many STATUS lines the current window suppressed (the run ended)."""
        self._status_lines.roll(final=True)

    # ---- the store unavailable ----------------------------------------------------------------
    @staticmethod
    def _transient(exc) -> Optional[StoreError]:
        """The StoreError to retry after, or None (an error that ends the run)."""
        if isinstance(exc, StoreError):
            return exc if getattr(exc, "transient", False) else None
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreError("disk full (%s)" % exc, transient=True)
        return None

    def pending_frames(self) -> int:
        """Frames read and not yet committed: the writer's batch and the readers' queue."""
        n = sum(len(p.frames) for p in self.ports)
        items = getattr(self._queue, "_items", ())
        lock = getattr(self._queue, "_lock", None) or contextlib.nullcontext()
        with lock:
            for (kind, _p, arg), _size in list(items):
                if kind == "data":
                    n += sum(1 for what, _rec in arg[0] if what == "frame")
        return n

    def _store_failed(self, exc: StoreError) -> float:
        """A write the store refused for now (nothing of it stored; the batch is kept):
        say so (a line, then one every STORE_SAY s), give up if store_wait is over or the
        user interrupted (StoreError: how many frames read were not committed); else the
        seconds to wait before trying again (doubling)."""
        now = time.monotonic()
        pr = self.progress
        if self._down_since is None:
            self._down_since, self._next_say = now, now + STORE_SAY
            self._backoff = STORE_RETRY_FIRST
            pr.store_outages += 1
            self.log("zeal: store unavailable: %s; holding the %d frames read, reading only "
                     "what the queue holds, retrying" % (exc, self.pending_frames()))
        elif now >= self._next_say:
            self._next_say = now + STORE_SAY
            self.log("zeal: store unavailable for %.0f s (%s); %d frames read held, retrying"
                     % (now - self._down_since, exc, self.pending_frames()))
        down = now - self._down_since
        pr.store_down = down
        pr.store_unavailable = self._down_total + down
        if self._interrupted or (self.store_wait is not None and down >= self.store_wait):
            pr.uncommitted = self.pending_frames()
            raise StoreError("%s; gave up after %.1f s unavailable%s: %d frames read were not "
                             "committed (not stored)"
                             % (exc, down, " (interrupted)" if self._interrupted else "",
                                pr.uncommitted)) from None
        wait, self._backoff = self._backoff, min(self._backoff * 2, STORE_RETRY_MAX)
        return wait

    def _store_ok(self) -> None:
        if self._down_since is not None:
            down = time.monotonic() - self._down_since
            self._down_total += down
            self._down_since = None
            pr = self.progress
            pr.store_unavailable, pr.store_down = self._down_total, 0.0
            self.log("zeal: store available again after %.1f s unavailable; writing what "
                     "was held" % down)

    def _pause(self, seconds: float) -> None:
        """Wait before trying the store again; the readers read meanwhile (into the bounded
        queue: back-pressure holds the rest where it came from)."""
        if self._writers:
            self._gate.set()
        end = time.monotonic() + seconds
        while not self._interrupted and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        if self._writers:
            self._gate.clear()

    def _store_call(self, fn):
        """fn() (a store write), tried again while the store is unavailable (see
        _store_failed): a refused write changed nothing, so its batch is written whole."""
        while True:
            try:
                result = fn()
            except (StoreError, OSError) as exc:
                err = self._transient(exc)
                if err is None:
                    raise
                self._pause(self._store_failed(err))
                continue
            self._store_ok()
            return result

    def _commit(self, p: _Port) -> None:
        if not (p.frames or p.events or p.unresolved or p.resolved_ids or p.spans
                or p.link_bytes != p.committed_bytes):
            return
        # a link's bytes are those that stored something new (taken as the previous
        # commit's until this one is known; see _repeats)
        delta = p.link_bytes - p.committed_bytes
        link = ((p.link, p.link_bytes - p.repeat_bytes - (delta if p.repeating else 0))
                if p.link is not None else None)
        new = self._store_call(lambda: self.store.write(
            p.frames, p.events, link=link, unresolved=[u.record for u in p.unresolved],
            resolved=p.resolved_ids, spans=list(p.spans.values())))
        self._repeats(p, p.frames, p.events, new, delta)
        self._note_lost(self.store.last_lost)
        # their rows' ids, so that a later HELLO can delete them
        for item, row_id in zip(p.unresolved, self.store.last_unresolved_ids):
            item.id = row_id
        pr = self.progress
        self._note_latency(p)
        pr.reports += self.store.last_new_reports  # frames stored before are not counted
        pr.frames += new
        pr.duplicates += len(p.frames) - new
        pr.devices.update(f.device_id for f in p.frames)
        pr.devices_dropped += getattr(self.store, "last_devices_dropped", 0)
        pr.resolved += p.resolved_frames
        dropped = self.store.last_unresolved_dropped
        change = len(p.unresolved) - self.store.last_resolved_deleted - dropped
        p.stored_unresolved += change
        pr.unresolved += change
        pr.unresolved_dropped += dropped
        p.frames_seen += len(p.frames)
        for e in p.events:
            if e.kind == "reject":
                pr.rejects[e.detail] += e.count
            elif e.kind == "reboot":
                pr.reboots += 1
            elif e.kind == "disconnect":
                pr.disconnects += 1
            if e.kind in ("session", "reboot"):
                pr.devices.add(e.device_id)
        if p.stop_pending and not p.stopped:
            p.stopped = True
            pr.stopped += 1
        p.frames, p.events, p.unresolved, p.resolved_ids = [], [], [], []
        p.spans = {}
        p.resolved_frames = 0
        p.stop_pending = False
        p.committed_bytes = p.link_bytes

    MAX_LOST_KEPT = 1 << 17  # sessions whose loss figures a run follows (then: frozen)

    def _note_lost(self, lost: dict) -> None:
        """The store's loss figures of the sessions just written (they replace the
        previous ones: a loss can be withdrawn)."""
        pr = self.progress
        for sess, now in lost.items():
            old = self._lost.pop(sess, (0, 0, 0))
            self._lost[sess] = now
            for reason, a, b in zip(REASONS, old, now):
                if a != b:
                    pr.lost[reason] += b - a
        while len(self._lost) > self.MAX_LOST_KEPT:  # oldest first: its figures stay
            del self._lost[next(iter(self._lost))]
        pr.gaps = sum(pr.lost.values())

    def _repeats(self, p, frames, events, new: int, delta: int) -> None:
        """Re-ingest (a stream read again): a commit that held frames or keyed events and
        stored none of them new repeats what is stored, and so do its bytes (`delta`, read
        since the previous commit): they are not the link's (links.bytes, the wire cost
        `analyze` reports) but `repeated_bytes`. A commit with neither (HELLOs, unresolved
        DATA) goes as the previous one."""
        if frames or any(e.key is not None for e in events):
            p.repeating = not new and not self.store.last_new_events
        if p.repeating and delta > 0:
            p.repeat_bytes += delta
            self.progress.repeated_bytes += delta

    def _fill(self, deadline: float) -> int:
        """Take what the readers queue until `deadline` (monotonic), or, past it, what is
        queued already: at most one queue's worth (never waits for the queue to be empty:
        under sustained input it never is). Returns the bytes taken."""
        taken, budget = 0, self._queue.limit
        while taken < budget:
            wait = deadline - time.monotonic()
            items, size = self._queue.take(budget - taken, wait)
            if not items:
                if wait <= 0 or self._stop.is_set():
                    break
                continue
            for item in items:
                self._take(item)
            taken += size
        return taken

    def _round(self, started: float, deadline: float) -> None:
        """One round: wait (the readers read) until `deadline` or a full queue; then, the
        readers held at their gate, take what they have queued and commit it."""
        self._queue.wait_full(deadline)
        with self._writing():
            self._fill(0.0)
            self._committed_at = time.monotonic()
            self._commit_all(started)

    def _wind_down(self, started: float) -> None:
        """The run ends (stop is set): take and commit, every FLUSH seconds as before, what
        the readers still queue until each has closed its port (a reader waiting for room
        gets it), then what is left."""
        next_commit = time.monotonic() + FLUSH
        while True:
            alive = any(t.is_alive() for t in self._threads)
            self._fill(next_commit if alive else 0.0)
            if not alive and not len(self._queue):
                break
            if time.monotonic() >= next_commit:
                next_commit = time.monotonic() + FLUSH
                self._commit_all(started, notify=False)
        for t in self._threads:
            t.join()

    def _abandon(self) -> None:
        """The writer failed (the store refused a write, a second Ctrl-C): let the readers
        end, taking nothing more (a reader waiting for room gets it, and sees stop)."""
        self._stop.set()
        while any(t.is_alive() for t in self._threads):
            self._queue.take(1 << 62, 0.05)
        for t in self._threads:
            t.join()

    def _note_latency(self, p: _Port) -> None:
        """The frames of p's reads are committed: their latency (reading -> now)."""
        if p.reads:
            done = time.time()
            for arrival, n in p.reads:
                self.progress.latency.add(done - arrival, n)
            p.reads = []

    def _drain(self) -> None:
        while True:
            try:
                self._take(self._queue.get_nowait())
            except queue.Empty:
                return

    @contextlib.contextmanager
    def _writing(self):
        """The writer is at the store: the readers wait (see _commit_all)."""
        self._writers += 1
        self._gate.clear()
        try:
            yield
        finally:
            self._writers -= 1
            if not self._writers:
                self._gate.set()

    def _commit_all(self, started: float, notify: bool = True) -> None:
        # The readers wait while the writer commits (each after the read it is decoding):
        # with many busy readers, every statement's release of the GIL would otherwise cost
        # the writer a turn behind all of them, and the commit would starve.
        with self._writing():
            for p in self.ports:
                self._commit(p)
        self._status_lines.roll()
        self.progress.commits += 1
        self.progress.queue_peak, self.progress.reader_wait = (self._queue.peak,
                                                               self._queue.waited)
        self.progress.bytes = self._closed_bytes + sum(p.link_bytes for p in self.ports
                                                       if p.link is not None)
        self.progress.elapsed = time.monotonic() - started
        if notify and self.on_progress is not None:
            self.on_progress(self.progress)

    def _close_all(self) -> None:
        for q in self.ports:
            if q.serial is not None:
                q.serial.close()
                q.serial = None

    def stop(self) -> None:
        """Ask `run` to end (from another thread or a signal handler): it commits and returns."""
        self._stop.set()

    def _on_signal(self, signum, frame):
        if self._interrupted:  # a second Ctrl-C: the user insists
            raise KeyboardInterrupt
        self._interrupted = True
        self._stop.set()

    def run(self, *, duration: Optional[float] = None, reports: Optional[int] = None,
            until_stopped: bool = False) -> Progress:
        """Collect until `duration` seconds have passed, at least `reports` reports are
        stored, every port's device has sent STATUS STOPPED (until_stopped), `stop()` is
        called, or SIGINT/SIGTERM (Ctrl-C) arrives; then commit everything read and close
        the links. Without a condition it runs until stopped or interrupted.

        Raises PortError if a port cannot be opened at the start (an absent one only without
        wait_for_ports), StoreError if the store cannot be written at the start (busy, disk
        full), or, later, if it stays unavailable past store_wait or Ctrl-C comes while it is
        (the error says how many frames read were not committed); meanwhile it is retried."""
        self.store.write()  # fail now, not at the first commit, if the database is locked
        for p in self.ports:
            why = transport.never_a_port(p.url)
            if why:
                raise transport.PortError("cannot open %s: %s" % (p.url, why))
        waiting = []
        for p in self.ports:
            try:
                p.serial = transport.open_port(p.url, baudrate=self.baudrate)
            except transport.PortNotFound as exc:
                if not self.wait_for_ports:
                    self._close_all()
                    raise
                waiting.append(str(exc))
            except transport.PortError:
                self._close_all()
                raise
        for text in waiting:
            self.log("zeal: %s; waiting for it (tried every %g s)" % (text, RETRY))
        for p in self.ports:
            if p.serial is not None:
                self._connected(p)
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handlers[sig] = signal.signal(sig, self._on_signal)
        started = time.monotonic()
        self._threads = [threading.Thread(target=self._reader, args=(p,), daemon=True,
                                          name="zeal-read %s" % p.url) for p in self.ports]
        with self._writing():  # no reader competes with the next one's start
            for t in self._threads:
                t.start()
        reason = "stopped"
        try:
            next_commit = started + FLUSH
            while not self._stop.is_set():
                self._round(started, next_commit)
                # the next round's time is counted from this round's commit: a commit that
                # takes long is followed by one bounded batch, then a commit, at once
                next_commit = self._committed_at + FLUSH
                if duration is not None and self.progress.elapsed >= duration:
                    reason = "duration reached"
                elif reports is not None and self.progress.reports >= reports:
                    reason = None  # named after the final commit: one number, the committed
                elif until_stopped and all(p.stopped for p in self.ports):
                    reason = "every device sent STOPPED or an error status"
                else:
                    continue
                break
            if self._interrupted:
                reason = "interrupted"
            self._stop.set()
            self._wind_down(started)  # includes each reader's final close
        except BaseException:
            self._abandon()
            raise
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
        self._commit_all(started, notify=False)
        self.flush_status_lines()
        pr = self.progress
        pr.reason = reason if reason is not None else "%d reports stored" % pr.reports
        pr.never_opened = [p.url for p in self.ports if not p.opened]
        pr.failed_devices = [(p.url, p.writer_device.hex() if p.writer_device else None)
                             + p.error_status for p in self.ports
                             if p.error_status is not None and p.frames_seen == 0]
        if self.on_progress is not None:
            self.on_progress(pr)
        return pr


# ---- command line -------------------------------------------------------------------------------
EXIT_DEVICE_ERROR = 3
EXIT_READER_ERROR = 4


class _ProgressLine:
    """~2 updates/s rewritten in place on a terminal; a plain line every 5 s otherwise. The
    rate shown is that since the previous update (the summary gives the run's average).
    `say(text)`: a line of its own (a device STATUS...), above the progress line."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr  # as it is now
        self.tty = self.stream.isatty()
        self.every = 0.5 if self.tty else 5.0
        self.last = (0.0, 0)  # (elapsed, reports) at the previous update
        self.width = 0
        self.text = ""

    def __call__(self, pr: Progress) -> None:
        dt = pr.elapsed - self.last[0]
        if dt < self.every:
            return
        rate = (pr.reports - self.last[1]) / dt
        self.last = (pr.elapsed, pr.reports)
        text = "%6.1f s  %s" % (pr.elapsed, pr.line(rate))
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            self.text = text
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def say(self, line: str) -> None:
        line = shown(line)  # device- or file-supplied text never drives the terminal
        if self.tty and self.width:
            self.stream.write("\r" + line.ljust(self.width) + "\n" + self.text)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


def summary_lines(pr: Progress) -> list:
    lines = ["stored %d reports in %d frames from %d device(s) in %.1f s (%.0f reports/s)"
             % (pr.reports, pr.frames, len(pr.devices), pr.elapsed, pr.rate),
             "ended: %s" % pr.reason]
    if pr.duplicates:
        lines.append("already stored: %d frames (ignored)" % pr.duplicates)
    if pr.resolved:
        lines.append("stored late: %d frames that arrived before their session's HELLO"
                     % pr.resolved)
    if pr.unresolved:
        lines.append("unresolved: %d frames stored raw until their session's HELLO arrives "
                     "(collect again while the board streams)" % pr.unresolved)
    if pr.unresolved_dropped:
        lines.append("unresolved, dropped: %d frames, the oldest beyond the cap of %d per "
                     "port (zeal events --kind unresolved_dropped)"
                     % (pr.unresolved_dropped, MAX_BACKLOG))
    rej = ", ".join("%s %d" % kv for kv in sorted(pr.rejects.items())) or "none"
    lines.append("rejected frames: %s" % rej)
    why = ", ".join("%s %d" % (reason.replace("_", " "), pr.lost[reason])
                    for reason in REASONS if pr.lost[reason])
    lines.append("lost frames (gaps): %d%s; reboots: %d; disconnects: %d; bytes read: %d"
                 % (pr.gaps, " (%s)" % why if why else "", pr.reboots, pr.disconnects,
                    pr.bytes))
    if pr.lost["before_attach"]:
        lines.append("note: %d frames of these sessions were sent before any collector "
                     "listened (counted lost: before attach)" % pr.lost["before_attach"])
    if pr.repeated_bytes:
        lines.append("read again: %d bytes stored nothing new (a stream collected before; "
                     "not counted as the link's)" % pr.repeated_bytes)
    if pr.devices_dropped:
        lines.append("not stored: %d frames and events of devices beyond the database's cap "
                     "on devices (zeal events --kind devices_dropped)" % pr.devices_dropped)
    if pr.status_suppressed:
        lines.append("STATUS lines not shown: %d (at most %d a port every %g s; every STATUS "
                     "is stored: zeal events --kind status)"
                     % (pr.status_suppressed, STATUS_LINES, STATUS_WINDOW))
    if pr.store_outages:
        lines.append("store unavailable: %.1f s in %d outage(s) (locked, full or restarting; "
                     "the writer kept what it had read and retried: nothing read was dropped)"
                     % (pr.store_unavailable, pr.store_outages))
    if pr.reader_wait >= 0.05:
        lines.append("back-pressure: the readers waited %.1f s for the writer (the boards "
                     "held their data meanwhile; nothing read was dropped)" % pr.reader_wait)
    if pr.rejects["unknown_profile"]:
        lines.append("note: a device announced a profile this database does not know; "
                     "pass its file with --profile")
    if pr.rejects["vector"]:
        lines.append("note: VECTOR (test-key) frames were not stored; --keep-vector keeps them")
    if pr.duplicate_ids:
        lines.append("warning: %d device id(s) seen on two ports at once (zeal events "
                     "--kind duplicate_id)" % pr.duplicate_ids)
    if pr.reader_errors:
        lines.append("error: a port's reader failed %d time(s) (retried; zeal events --kind "
                     "reader_error)" % pr.reader_errors)
    for port, dev, code, message in pr.failed_devices:
        lines.append("error: device %s on %s reported %s%s and sent no data"
                     % (dev or "?", port, code, (": " + message) if message else ""))
    for port in pr.never_opened:
        lines.append("error: %s was absent for the whole run" % port)
    return [shown(line) for line in lines]  # a STATUS message is the device's text


def summary_doc(pr: Progress) -> dict:
    """The summary as `zeal collect --json` prints it (units in the key names)."""
    return {
        "reports": pr.reports, "frames": pr.frames,
        "devices": sorted(d.hex() for d in pr.devices if d is not None),
        "elapsed_s": round(pr.elapsed, 3), "reports_per_s": round(pr.rate, 3),
        "ended": pr.reason, "duplicate_frames": pr.duplicates,
        "resolved_frames": pr.resolved, "unresolved_frames": pr.unresolved,
        "rejected_frames": dict(sorted(pr.rejects.items())), "lost_frames": pr.gaps,
        "lost_by_reason": {reason: pr.lost[reason] for reason in REASONS},
        "unresolved_dropped": pr.unresolved_dropped, "repeated_bytes": pr.repeated_bytes,
        "reboots": pr.reboots, "disconnects": pr.disconnects, "bytes_read": pr.bytes,
        "duplicate_ids": pr.duplicate_ids, "reader_errors": pr.reader_errors,
        "devices_dropped": pr.devices_dropped, "status_lines_suppressed": pr.status_suppressed,
        "failed_devices": [{"port": port, "device": dev, "code": code, "message": message}
                           for port, dev, code, message in pr.failed_devices],
        "never_opened": list(pr.never_opened),
        "exit_status": exit_status(pr),
        "commits": pr.commits,
        "commit_latency_p99_s": round(pr.latency.quantile(0.99), 3),
        "commit_latency_max_s": round(pr.latency.max, 3),
        "queue_peak_bytes": pr.queue_peak, "reader_wait_s": round(pr.reader_wait, 3),
        "store_outages": pr.store_outages,
        "store_unavailable_s": round(pr.store_unavailable, 3),
        "uncommitted_frames": pr.uncommitted,
    }


def exit_status(pr: Progress) -> int:
    """0, or EXIT_DEVICE_ERROR / EXIT_READER_ERROR, or 1 for a port absent for the whole run
    (see `zeal collect --help`)."""
    if pr.failed_devices:
        return EXIT_DEVICE_ERROR
    if pr.reader_errors:
        return EXIT_READER_ERROR
    if pr.never_opened:
        return 1
    return 0


def cmd_collect(args) -> int:
    from ..board.devices import resolve_port
    from ..mechanism.kinds import load as load_any

    if not args.port:
        raise ZealError("give the serial port(s) to read (--port URL) or a broker (--mqtt URL)")
    if getattr(args, "topic_map", None):
        raise ZealError("--topic-map is for --mqtt (serial ports have no topics)")
    profiles = [load_any(path) for path in args.profile]
    ports = [resolve_port(port) for port in args.port]
    return run_command(args, lambda store, show: Collector(
        ports, store, profiles=profiles, keep_vector=args.keep_vector, on_progress=show,
        baudrate=args.baud, log=show.say, verbose=args.verbose))


def run_command(args, make, extra=None) -> int:
    """`zeal collect`'s run, serial or MQTT: open --db, run the collector `make(store, show)`
    builds with the progress line `show`, print the summary (text, or JSON with `extra(c)`'s
    keys added); the exit status."""
    import json

    # A short busy timeout at the start (a locked database is reported at once), a longer
    # one while running; past it a write is tried again (Collector._store_call), until
    # --store-wait if given.
    store = open_store(args.db, timeout=1.0)
    try:
        show = _ProgressLine()
        c = make(store, show)
        store.write()
        store.set_timeout(LOCK_WAIT)
        c.store_wait = getattr(args, "store_wait", None)
        try:
            pr = c.run(duration=args.duration, reports=args.reports,
                       until_stopped=args.until_stopped)
            c.flush_status_lines()  # (an MQTT collector's run ends without it)
        finally:
            show.end()
    finally:
        store.close()
    if args.json:
        doc = summary_doc(pr)
        doc.update(extra(c) if extra is not None else {})
        print(json.dumps(doc, indent=1))
    else:
        for line in summary_lines(pr):
            print(line)
    return exit_status(pr)
