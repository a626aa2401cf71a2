"""Collector: serial ports -> streams (zeal.collect.stream) -> the writer (zeal.collect.writer)
-> the store. This module is the serial source and its run loop; the MQTT source
(zeal.collect.mqtt) plugs the same streams and writer into a broker's loop.

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
import signal
import sys
import threading
import time
from collections import deque
from typing import Optional

import serial

from .. import wire
from ..errors import ZealError
from ..text import shown
from ..wire import transport
from .loop import FLUSH, Ending, Source, finish, stop_signals
from .progress import (EXIT_READER_ERROR, Devices, Progress, ProgressLine, exit_status,
                       summary_doc, summary_lines)
from .store import Store, open_store
from .stream import Item, Stream
from .writer import RETRY, Writer

__all__ = ["Collector", "Progress", "summary_lines", "summary_doc", "exit_status",
           "EXIT_READER_ERROR", "cmd_collect", "run_command", "FLUSH"]

# Memory between reading and committing, estimated as the bytes read plus RECORD_BYTES for
# each record decoded from them (a FrameRecord and its bytes objects take ~0.4-0.8 KB).
RECORD_BYTES = 512
QUEUE_BYTES = 4 << 20  # what the readers may have queued for the writer: one batch at most
DECODERS = 2   # readers that decode at once (the others wait for their turn)
LOCK_WAIT = 5.0  # a write's wait for another writer's lock, before it is tried again


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

    def __len__(self) -> int:
        return len(self._items)

    def frames(self) -> int:
        """DATA frames in the queued reads (not yet taken by the writer)."""
        with self._lock:
            return sum(sum(1 for what, _rec in arg[0] if what == "frame")
                       for (kind, _p, arg), _size in self._items if kind == "data")



class Collector(Source):
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
        super().__init__()
        self.store = store
        self.keep_vector = keep_vector
        self.on_progress = on_progress
        self.baudrate = baudrate
        self.wait_for_ports = wait_for_ports
        self.log = log if log is not None else self._stderr
        for prof in profiles:
            store.add_profile(prof)
        self._profiles = store.profiles()
        self.ports = [Stream(u, wire.Decoder(self._profiles, vectors=keep_vector)) for u in urls]
        for p in self.ports:  # what earlier runs could not resolve on this port
            p.backlog = [Item(bytes(body), crc, arrival, row_id)
                         for row_id, body, crc, arrival, _reason in store.unresolved(p.url)]
            p.stored_unresolved = len(p.backlog)
        self.progress = Progress(unresolved=sum(p.stored_unresolved for p in self.ports))
        self.progress.devices = Devices(store)  # bounded by the store's cap on devices
        self.writer = Writer(store, self.progress, self, log=self.log, verbose=verbose,
                             store_wait=store_wait)
        self._queue = _Backlog(QUEUE_BYTES if queue_bytes is None else queue_bytes)
        self._gate = threading.Event()  # readers read while it is set (not during commits)
        self._gate.set()
        self._writers = 0               # depth of holding()
        self._committed_at = 0.0        # monotonic time of the last round's commit
        # Decoding holds the GIL: DECODERS readers at a time read and decode as fast as all
        # of them would, and the others wait off the GIL (their bytes still in their lines),
        # so the writer gets the GIL back at once.
        self._decoding = threading.Semaphore(DECODERS)
        self._threads = []

    @staticmethod
    def _stderr(text: str) -> None:
        print(shown(text), file=sys.stderr, flush=True)  # device text: escaped (zeal.text)

    # ---- what the writer asks of its source ---------------------------------------------------
    @property
    def streams(self) -> list:
        return self.ports

    def queued_frames(self) -> int:
        return self._queue.frames()

    @contextlib.contextmanager
    def holding(self):
        """The writer is at the store: the readers wait (see _commit_all)."""
        self._writers += 1
        self._gate.clear()
        try:
            yield
        finally:
            self._writers -= 1
            if not self._writers:
                self._gate.set()

    def release(self, seconds: float) -> None:
        """Wait before trying the store again; the readers read meanwhile (into the bounded
        queue: back-pressure holds the rest where it came from)."""
        if self._writers:
            self._gate.set()
        self.pause(seconds)
        if self._writers:
            self._gate.clear()

    # ---- reader threads -----------------------------------------------------------------------
    def _reader(self, p: Stream) -> None:
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

    def _failed(self, p: Stream, exc: Exception) -> None:
        p.failures += 1
        text = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
        self._queue.put(("failure", p, text))
        if p.serial is not None:
            self._disconnected(p, "reader error: " + text)

    def _connected(self, p: Stream) -> None:
        """A link opened: end the frame cut by the previous link, record the link, ask the
        board for a HELLO."""
        if p.decoder.deframer.pending:
            # End the frame cut by the disconnect here, so it cannot swallow the first whole
            # frame of the new link. If its bytes were whole (only the delimiter was missing)
            # this completes it: decoded and stored as any other frame.
            self._queue.put(*self._decoded(p, b"\x00"))  # waits for room: back-pressure
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

    def _disconnected(self, p: Stream, why: str) -> None:
        try:
            p.serial.close()
        except Exception:  # closing a port that is already gone
            pass
        p.serial = None
        self._queue.put(("disconnect", p, (why, p.nbytes)))

    @staticmethod
    def _decoded(p: Stream, data: bytes) -> tuple:
        """(the queue item of `data`'s records, its size)."""
        recs = p.decode(data)
        return ("data", p, (recs, p.nbytes)), len(data) + RECORD_BYTES * len(recs)

    # ---- the writer's rounds ------------------------------------------------------------------
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
                self.writer.take(item)
            taken += size
        return taken

    def _round(self, started: float, deadline: float) -> None:
        """One round: wait (the readers read) until `deadline` or a full queue; then, the
        readers held at their gate, take what they have queued and commit it."""
        self._queue.wait_full(deadline)
        with self.holding():
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

    def _commit_all(self, started: float, notify: bool = True) -> None:
        # The readers wait while the writer commits (each after the read it is decoding):
        # with many busy readers, every statement's release of the GIL would otherwise cost
        # the writer a turn behind all of them, and the commit would starve.
        with self.holding():
            for p in self.ports:
                self.writer.commit(p)
        self.writer.status_lines.roll()
        pr = self.progress
        pr.commits += 1
        pr.queue_peak, pr.reader_wait = self._queue.peak, self._queue.waited
        pr.bytes = self.writer.closed_bytes + sum(p.link_bytes for p in self.ports
                                                  if p.link is not None)
        pr.elapsed = time.monotonic() - started
        if notify and self.on_progress is not None:
            self.on_progress(pr)

    def _close_all(self) -> None:
        for q in self.ports:
            if q.serial is not None:
                q.serial.close()
                q.serial = None

    def _open_ports(self) -> None:
        """Open every port: one that can never open is an error; an absent one is waited for
        (a line says so) unless wait_for_ports is off."""
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
        self._open_ports()
        ending = Ending(duration, reports, until_stopped)
        with stop_signals(self._on_signal):
            started = time.monotonic()
            self._threads = [threading.Thread(target=self._reader, args=(p,), daemon=True,
                                              name="zeal-read %s" % p.url) for p in self.ports]
            with self.holding():  # no reader competes with the next one's start
                for t in self._threads:
                    t.start()
            try:
                next_commit = started + FLUSH
                while not self._stop.is_set():
                    self._round(started, next_commit)
                    # the next round's time is counted from this round's commit: a commit that
                    # takes long is followed by one bounded batch, then a commit, at once
                    next_commit = self._committed_at + FLUSH
                    if ending.over(self.progress, self.ports):
                        break
                reason = ending.final(self.interrupted)
                self._stop.set()
                self._wind_down(started)  # includes each reader's final close
            except BaseException:
                self._abandon()
                raise
        self._commit_all(started, notify=False)
        self.writer.flush_status_lines()
        pr = self.progress
        pr.never_opened = [p.url for p in self.ports if not p.opened]
        pr.failed_devices = [(p.url, p.writer_device.hex() if p.writer_device else None)
                             + p.error_status for p in self.ports
                             if p.error_status is not None and p.frames_seen == 0]
        return finish(pr, reason, self.on_progress)


# ---- command line -------------------------------------------------------------------------------
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


def run_command(args, make, extra=None, show=None, finale=None) -> int:
    """`zeal collect`'s run, serial or MQTT (and `zeal run`'s): open --db, run the collector
    `make(store, show)` builds with the progress line `show` (default a ProgressLine), print
    the summary (text, or JSON with `extra(c)`'s keys added); `finale(store, doc)` (the store
    still open) adds to the JSON document and returns lines printed after the summary's. The
    exit status."""
    import json

    # A short busy timeout at the start (a locked database is reported at once), a longer
    # one while running; past it a write is tried again (Writer.call), until --store-wait
    # if given.
    store = open_store(args.db, timeout=1.0)
    doc, tail = None, []
    try:
        show = ProgressLine() if show is None else show(store)
        c = make(store, show)
        store.write()
        store.set_timeout(LOCK_WAIT)
        c.writer.store_wait = getattr(args, "store_wait", None)
        try:
            pr = c.run(duration=args.duration, reports=args.reports,
                       until_stopped=args.until_stopped)
            c.writer.flush_status_lines()  # (an MQTT collector's run ends without it)
        finally:
            show.end()
        doc = summary_doc(pr)
        doc.update(extra(c) if extra is not None else {})
        if finale is not None:
            tail = finale(store, doc)
    finally:
        store.close()
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for line in summary_lines(pr) + list(tail):
            print(line)
    if c.stopped_by == signal.SIGINT:  # Ctrl-C: the summary, then as every command ends on it
        raise KeyboardInterrupt
    return exit_status(pr)
