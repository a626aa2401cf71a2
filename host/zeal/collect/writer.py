"""The writer: the one thread at the store. It takes the records the sources queue (in each
stream's order), keeps them pending per stream (zeal.collect.stream), and commits them --
one transaction per stream (a serial collector: `commit`), or one for every stream (a fleet's
broker: `commit_together`) -- then updates Progress from what the store says it stored.

The store unavailable (locked, a full disk, a PostgreSQL server restarting:
StoreError.transient): a refused write changed nothing, so the batch is kept and written
whole later (`call`), after STORE_RETRY_FIRST s, the wait doubling up to STORE_RETRY_MAX; a
line says so, another every STORE_SAY s; the run gives up only after store_wait s or on
Ctrl-C while the store is away (saying how many frames read were not committed).

What the writer needs of its source (the collector that owns it): `streams`; `holding()`, a
context in which the source reads nothing (the serial readers wait at their gate);
`release(seconds)`, a wait before the next try during which the source may read into its
bounded queue; `queued_frames()`, frames read and not yet taken; `interrupted`.
"""
import errno
import time
from typing import Optional

from .. import wire
from ..text import shown
from ..wire import transport
from .accounting import REASONS
from .progress import StatusLines
from .store import EventRecord, StoreError

RETRY = 1.0    # seconds between attempts to reopen a lost port (said in a line)
STORE_RETRY_FIRST = 0.1
STORE_RETRY_MAX = 5.0
STORE_SAY = 10.0
MAX_WARNED = 4096  # device-id pairs whose duplicate_id warning a run remembers


class Writer:
    """The store side of a collector (see the module docstring). `progress`: the Progress it
    keeps; `log`: one line for the user; `verbose`: STATUS OK heartbeats logged too."""

    MAX_LOST_KEPT = 1 << 17  # sessions whose loss figures a run follows (then: frozen)

    def __init__(self, store, progress, source, *, log, verbose: bool = False,
                 store_wait: Optional[float] = None):
        self.store = store
        self.progress = progress
        self.source = source
        self.log = log
        self.verbose = verbose
        self.store_wait = store_wait
        self.status_lines = StatusLines(lambda text: self.log(text))
        self.owner = {}               # device id -> stream (url) whose latest HELLO named it
        self._warned = set()          # (device id, url, url) pairs already reported
        self._lost = {}               # session hex -> (gap, before_attach, unattended)
        self._down_since = None       # monotonic time the store became unavailable
        self._down_total = 0.0        # seconds of the outages that ended
        self._backoff = STORE_RETRY_FIRST
        self._next_say = 0.0
        self.closed_bytes = 0         # bytes of the links that closed
        self.last_store_error = None

    # ---- taking what the sources queue ----------------------------------------------------------
    def take(self, item) -> None:
        """One queued item (kind, stream, argument): "data" (a read's records), "connect",
        "disconnect", "failure", "request_timeout"."""
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
                    self.on_hello(p, rec)
                elif what == "status":
                    self.on_status(p, *rec)
            p.link_bytes = nbytes
            if fresh:
                p.reads.append((arrival, fresh))
        elif kind == "connect":
            with self.source.holding():
                self.commit(p)
                p.link = self.call(lambda: self.store.open_link(p.url))
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
            with self.source.holding():
                self.commit(p)
                self.call(lambda: self.store.close_link(p.link, p.link_bytes - p.repeat_bytes))
            self.closed_bytes += p.link_bytes
            p.link, p.link_bytes, p.committed_bytes, p.repeat_bytes = None, 0, 0, 0
            self.progress.connected -= 1
            if self.owner.get(p.writer_device) == p.url:
                del self.owner[p.writer_device]
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

    def on_hello(self, p, hello) -> None:
        dev = hello.device_id
        other = self.owner.get(dev)
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
                and self.owner.get(p.writer_device) == p.url:
            del self.owner[p.writer_device]
        self.owner[dev] = p.url
        p.writer_device = dev

    def on_status(self, p, st, device, sess, now) -> None:
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
            self.status_line(p, "%s %s %s%s" % (
                time.strftime("%H:%M:%S", time.localtime(now)), who, st.code_name,
                (": " + shown(st.message)) if st.message else ""))

    def status_line(self, p, text: str) -> None:
        """A STATUS line through `log`, rate-limited (StatusLines): the suppressed ones are
        counted in Progress.status_suppressed; the event is stored either way."""
        if not self.status_lines.say(p.url, text):
            self.progress.status_suppressed += 1

    def flush_status_lines(self) -> None:
        """Say how many STATUS lines the current window suppressed (the run ended)."""
        self.status_lines.roll(final=True)

    # ---- the store unavailable ------------------------------------------------------------------
    @staticmethod
    def transient(exc) -> Optional[StoreError]:
        """The StoreError to retry after, or None (an error that ends the run)."""
        if isinstance(exc, StoreError):
            return exc if getattr(exc, "transient", False) else None
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreError("disk full (%s)" % exc, transient=True)
        return None

    @property
    def down(self) -> bool:
        """The store is unavailable now (a write was refused and none has passed since)."""
        return self._down_since is not None

    def pending_frames(self) -> int:
        """Frames read and not yet committed: the pending ones and the source's queue."""
        return sum(len(p.frames) for p in self.source.streams) + self.source.queued_frames()

    def failed(self, exc: StoreError) -> float:
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
        interrupted = self.source.interrupted
        if interrupted or (self.store_wait is not None and down >= self.store_wait):
            pr.uncommitted = self.pending_frames()
            raise StoreError("%s; gave up after %.1f s unavailable%s: %d frames read were not "
                             "committed (not stored)"
                             % (exc, down, " (interrupted)" if interrupted else "",
                                pr.uncommitted)) from None
        wait, self._backoff = self._backoff, min(self._backoff * 2, STORE_RETRY_MAX)
        return wait

    def ok(self) -> None:
        """A write passed: an outage, if any, is over."""
        if self._down_since is not None:
            down = time.monotonic() - self._down_since
            self._down_total += down
            self._down_since = None
            pr = self.progress
            pr.store_unavailable, pr.store_down = self._down_total, 0.0
            self.log("zeal: store available again after %.1f s unavailable; writing what "
                     "was held" % down)

    def unavailable_for(self) -> float:
        """Seconds the current outage has lasted (0 when the store is up)."""
        return 0.0 if self._down_since is None else time.monotonic() - self._down_since

    def call(self, fn):
        """fn() (a store write), tried again while the store is unavailable (see failed):
        a refused write changed nothing, so its batch is written whole."""
        while True:
            try:
                result = fn()
            except (StoreError, OSError) as exc:
                err = self.transient(exc)
                if err is None:
                    raise
                self.source.release(self.failed(err))
                continue
            self.ok()
            return result

    # ---- committing -----------------------------------------------------------------------------
    def commit(self, p) -> None:
        """p's pending records in one transaction (retried while the store is away)."""
        if not (p.busy or p.link_bytes != p.committed_bytes):
            return
        # a link's bytes are those that stored something new (taken as the previous
        # commit's until this one is known; see repeats)
        delta = p.link_bytes - p.committed_bytes
        link = ((p.link, p.link_bytes - p.repeat_bytes - (delta if p.repeating else 0))
                if p.link is not None else None)
        new = self.call(lambda: self.store.write(
            p.frames, p.events, link=link, unresolved=[u.record for u in p.unresolved],
            resolved=p.resolved_ids, spans=list(p.spans.values())))
        self.repeats(p, p.frames, p.events, new, delta)
        self.stored(p.frames, [u.record for u in p.unresolved], new)
        # their rows' ids, so that a later HELLO can delete them
        for item, row_id in zip(p.unresolved, self.store.last_unresolved_ids):
            item.id = row_id
        change = len(p.unresolved) - self.store.last_resolved_deleted \
            - self.store.last_unresolved_dropped
        p.stored_unresolved += change
        p.unresolved, p.spans = [], {}
        self.settle(p)
        p.committed_bytes = p.link_bytes

    def commit_together(self, streams, events, link, delta: int, link_owner) -> None:
        """Every stream's pending records and `events` in ONE transaction (a fleet has
        thousands of devices), `link` (id, bytes) with them; not retried here (the caller
        keeps what it read and tries again: StoreError). `delta`: the link's bytes read since
        the last commit; `link_owner` keeps the link's repeating and repeat_bytes."""
        busy = [p for p in streams if p.busy]
        frames = [f for p in busy for f in p.frames]
        events = list(events) + [e for p in busy for e in p.events]
        unresolved = [u.record for p in busy for u in p.unresolved]
        new = self.store.write(frames, events, link=link, unresolved=unresolved,
                               resolved=[i for p in busy for i in p.resolved_ids],
                               spans=[s for p in busy for s in p.spans.values()])
        self.repeats(link_owner, frames, events, new, delta)
        self.stored(frames, unresolved, new)
        ids = iter(self.store.last_unresolved_ids)  # in the order given to write()
        for p in busy:
            for item in p.unresolved:
                item.id = next(ids)
            p.stored_unresolved += len(p.unresolved) - len(p.resolved_ids)
            p.unresolved, p.spans = [], {}
            p.link_bytes = p.nbytes
            self.settle(p)

    def stored(self, frames, unresolved, new: int) -> None:
        """Progress after a write of `frames` and `unresolved` records (`new` frames new)."""
        store, pr = self.store, self.progress
        self.note_lost(store.last_lost)
        pr.reports += store.last_new_reports  # frames stored before are not counted
        pr.frames += new
        pr.duplicates += len(frames) - new
        pr.devices.update(f.device_id for f in frames)
        pr.devices_dropped += getattr(store, "last_devices_dropped", 0)
        dropped = store.last_unresolved_dropped
        pr.unresolved += len(unresolved) - store.last_resolved_deleted - dropped
        pr.unresolved_dropped += dropped

    def settle(self, p) -> None:
        """p's bookkeeping once its records are stored: latency, events counted, STOPPED."""
        self.note_latency(p)
        pr = self.progress
        pr.resolved += p.resolved_frames
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
        p.frames, p.events, p.resolved_ids = [], [], []
        p.resolved_frames = 0
        p.stop_pending = False

    def note_lost(self, lost: dict) -> None:
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

    def repeats(self, p, frames, events, new: int, delta: int) -> None:
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

    def note_latency(self, p) -> None:
        """The frames of p's reads are committed: their latency (reading -> now)."""
        if p.reads:
            done = time.time()
            for arrival, n in p.reads:
                self.progress.latency.add(done - arrival, n)
            p.reads = []
