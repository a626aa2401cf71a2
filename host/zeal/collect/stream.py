"""One stream of wire bytes (a serial line, or an MQTT device topic) and its session: the
deframing, the DATA kept unresolved until its HELLO, the events keyed so that collecting a
stream twice stores each once, the spans of the sessions it has news of -- and what the
writer has pending for it until the next commit. A source (zeal.collect.collector's serial
readers, zeal.collect.mqtt's broker) feeds `decode`; its records go through the source's
queue to the writer (zeal.collect.writer), which takes them in the stream's order.

The records of a read, in the line's order, as (what, record): ("frame", FrameRecord),
("unresolved", Item), ("resolved", (Item, opened)), ("event", EventRecord), ("span",
accounting.Span), ("hello", wire.Hello), ("status", (wire.Status, device id, session hex,
time)), ("dropped", None).
"""
import time
from collections import Counter
from typing import Optional

from .. import wire
from .accounting import Span
from .progress import MAX_BACKLOG
from .store import EventRecord, FrameRecord, UnresolvedRecord


def session_hex(hello) -> str:
    return bytes(hello.session).hex()


class Item:
    """An unresolved DATA frame kept by a stream for Decoder.resolve (which reads .body and
    .crc). `id`: its row in the store once committed (set by the writer), `record`: the
    UnresolvedRecord the writer stores (None for rows loaded from an earlier run)."""

    __slots__ = ("body", "crc", "arrival", "id", "record")

    def __init__(self, body, crc, arrival, row_id=None, record=None):
        self.body, self.crc, self.arrival = body, crc, arrival
        self.id, self.record = row_id, record


class Stream:
    """One stream, named `url` (its port in the store). Source-owned (the thread that
    decodes): decoder, nbytes, the `_seen_*` counters, the event-key anchors, the backlog;
    `serial` (the serial source's open port), failures, opened. Writer-owned: link,
    link_bytes, the pending records, unresolved bookkeeping."""

    def __init__(self, url: str, decoder: wire.Decoder):
        self.url = url
        self.decoder = decoder
        self.serial = None
        self.nbytes = 0               # bytes read on the current link
        self.session = None           # latest HELLO session seen on this stream
        self.session_hex = None
        self.device = None            # its device id
        self._seen_rejects = Counter()
        self._seen_total = 0          # sum of _seen_rejects' counts when last looked
        self._seen_lost = 0
        self._seen_restarts = 0
        self.anchor = None            # (session hex or None, last seq seen) for event keys
        self.ordinal = Counter()      # reason -> rejects since the anchor moved
        self.failures = 0             # reader exceptions
        self.opened = False           # the stream opened at least once this run
        self.backlog = []             # Item: unresolved DATA of this stream, oldest first
        self.touched = set()          # sessions with news since the last read was queued
        # writer
        self.link = None
        self.link_bytes = 0
        self.committed_bytes = 0      # link_bytes as last committed
        self.frames = []              # FrameRecord
        self.events = []              # EventRecord in arrival order
        self.unresolved = []          # Item whose record is not yet stored
        self.resolved_ids = []        # stored unresolved rows to delete at the next commit
        self.stored_unresolved = 0    # rows of this stream in the store (as last known)
        self.writer_device = None     # its device id, for duplicate_id
        self.stop_pending = False     # a STOPPED status is among the pending events
        self.stopped = False          # ... and is committed
        self.error_status = None      # (code name, message) of an error STATUS
        self.frames_seen = 0          # DATA frames of this stream committed (new or duplicate)
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

    @property
    def busy(self) -> bool:
        """Records pending for the store."""
        return bool(self.frames or self.events or self.unresolved or self.resolved_ids
                    or self.spans)

    # ---- decoding (the source's thread) ---------------------------------------------------------
    def decode(self, data: bytes) -> list:
        """The records of `data` (see the module docstring). The decoder is fed frame by
        frame (each piece ends at a delimiter), so that every record and event is placed
        exactly in the line's order: a HELLO resolves only what came before it, and events
        get keys that do not depend on how reads cut the stream."""
        now = time.time()
        recs = []
        start, n = 0, len(data)
        while start < n:
            z = data.find(0, start)
            end = n if z < 0 else z + 1
            self.feed(data[start:end] if start or end < n else data, now, recs)
            start = end
        self.add_spans(recs)
        return recs

    def feed(self, piece: bytes, now: float, recs: list) -> None:
        """One piece (up to a delimiter) through the decoder: its records appended."""
        dec = self.decoder
        hello = False
        for ev in dec.feed(piece):
            if isinstance(ev, wire.Batch):
                self.anchor_at(self.session_hex, ev.seq)  # a fed Batch is of the latest HELLO
                recs.append(("frame", FrameRecord.from_batch(ev, now)))
            elif isinstance(ev, wire.Unresolved):
                rec = UnresolvedRecord(self.url, now, bytes(ev.body), ev.crc, ev.reason)
                item = Item(rec.body, rec.crc, now, None, rec)
                self.backlog.append(item)
                if len(self.backlog) > MAX_BACKLOG:  # the store drops its oldest rows too
                    del self.backlog[:len(self.backlog) - MAX_BACKLOG]
                recs.append(("unresolved", item))
            elif isinstance(ev, wire.Hello):
                sess = session_hex(ev)
                if ev.session != self.session:
                    kind = "reboot" if self.device == ev.device_id else "session"
                    recs.append(("event", EventRecord(
                        kind, "boot %d fingerprint %s%s%s"
                        % (ev.boot, ev.fingerprint.hex(), " vector" if ev.vector else "",
                           " debug" if ev.debug else ""),
                        device_id=ev.device_id, port=self.url, time=now, key="hello:" + sess)))
                    self.session, self.session_hex, self.device = ev.session, sess, ev.device_id
                self.anchor_at(sess, ev.next_seq - 1)
                recs.append(("hello", ev))
                hello = True
            elif isinstance(ev, wire.Status):
                recs.append(("status", (ev, self.device_now, self.session_hex, now)))
        if hello and self.backlog:
            self.resolve(recs)
        self.account(now, recs)
        if self.session is not None:
            self.touched.add(self.session)

    def resolve(self, recs: list) -> None:
        """A HELLO came: the line's decoder opens what it can of the backlog now, before any
        later frame is read (so its loss count and sequence places are right)."""
        keep = []
        for item, res in zip(self.backlog, self.decoder.resolve(self.backlog)):
            if res is None:
                keep.append(item)
                continue
            recs.append(("resolved", (item, res is not False)))
            if res is not False:
                sess = wire.session_bytes(res.device_id, wire.fingerprint_key(res.profile),
                                          res.boot, res.nonce)
                self.touched.add(sess)
                recs.append(("frame", FrameRecord.from_batch(res, item.arrival)))
        self.backlog = keep

    def add_spans(self, recs: list) -> None:
        """What the line's decoder knows of each session with news (accounting.Span: from
        where it listened to the highest number known sent), for the store's loss rows."""
        for sess in self.touched:
            span = self.decoder.span(sess)
            if span is not None:
                recs.append(("span", Span.of(sess, span[0], span[1], self.url)))
        self.touched = set()

    def anchor_at(self, sess, seq) -> None:
        if self.anchor != (sess, seq):
            self.anchor = (sess, seq)
            self.ordinal = Counter()

    def account(self, now: float, recs: list) -> None:
        """Rejects, gaps and restarts counted by the decoder since the last piece."""
        dec = self.decoder
        dev = self.device_now
        total = dec.rejected_total
        rejected = dec.rejected if total != self._seen_total else self._seen_rejects
        self._seen_total = total
        if rejected != self._seen_rejects:
            where, seq = self.anchor if self.anchor is not None else (None, -1)
            where = where if where is not None else self.url
            for reason, n in rejected.items():
                for _ in range(n - self._seen_rejects[reason]):
                    self.ordinal[reason] += 1
                    recs.append(("event", EventRecord(
                        "reject", reason, 1, device_id=dev, port=self.url, time=now,
                        key="reject:%s:%d:%s:%d" % (where, seq, reason, self.ordinal[reason]))))
            self._seen_rejects = rejected
        if dec.restarts != self._seen_restarts:
            sess, seq = self.anchor if self.anchor is not None else (self.url, -1)
            recs.append(("event", EventRecord("restart", "", dec.restarts - self._seen_restarts,
                                              device_id=dev, port=self.url, time=now,
                                              key="restart:%s:%d" % (sess, seq))))
            self._seen_restarts = dec.restarts
