"""A broker's device topic as a stream: `TopicStream` (zeal.collect.stream.Stream with what a
broker changes: DATA that comes late or before its HELLO, redeliveries, and a topic that
stands for one device id -- see zeal.collect.mqtt's docstring), the --topic-map file, and
`IdGuard`, which says whether a topic may announce a device id (warning once per pair)."""
import time
from collections import Counter
from typing import Optional

from .. import wire
from ..errors import ZealError
from .store import EventRecord, FrameRecord
from .stream import Stream

MAX_MISMATCH_WARNED = 4096  # (topic, device id) pairs a run warns of (then: counted only)


def load_topic_map(path: str) -> dict:
    """A --topic-map file: {topic id: set of 8-byte device ids}. Lines "TOPIC-ID DEVICE-ID"
    (blank lines and lines starting with # skipped); a device id is 16 hex digits or its
    text (up to 8 printable ASCII characters, zero-padded as HELLO pads it). One-line
    errors naming the line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ZealError("cannot read --topic-map %s: %s"
                        % (path, getattr(exc, "strerror", None) or exc)) from None
    out = {}
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) != 2 or any(c in parts[0] for c in "/+#"):
            raise ZealError("--topic-map %s line %d: want \"TOPIC-ID DEVICE-ID\" (a topic id "
                            "without / + #)" % (path, n))
        dev = _device_id(parts[1])
        if dev is None:
            raise ZealError("--topic-map %s line %d: the device id is 16 hex digits or up to "
                            "8 printable ASCII characters" % (path, n))
        out.setdefault(parts[0], set()).add(dev)
    return out


def _device_id(text: str) -> Optional[bytes]:
    if len(text) == 16:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    raw = text.encode("ascii", "replace")
    if 0 < len(raw) <= 8 and all(0x20 < c < 0x7f for c in raw):
        return raw.ljust(8, b"\0")
    return None


def stands_for(topic_id: str, device_id: bytes, topic_map: Optional[dict] = None) -> bool:
    """Whether a board publishing on zeal/<topic_id>/frames may announce `device_id`: the
    map's ids for a topic it lists; else the id in hex (any case) or, for a printable id,
    its text."""
    device_id = bytes(device_id)
    if topic_map and topic_id in topic_map:
        return device_id in topic_map[topic_id]
    if topic_id.lower() == device_id.hex():
        return True
    name = wire.device_name(device_id)
    return name != device_id.hex() and topic_id == name


def device_of(topic: str) -> Optional[str]:
    """The <device-id> of zeal/<device-id>/frames (or /hello), else None."""
    bits = topic.split("/")
    if len(bits) == 3 and bits[0] == "zeal" and bits[1] and bits[2] in ("frames", "hello"):
        return bits[1]
    return None


class IdGuard:
    """Whether a topic id may announce a device id (stands_for, under `topic_map`); a
    refusal is said once per (topic id, device id) pair through `log` (at most
    MAX_MISMATCH_WARNED pairs: then counted only, as rejects)."""

    def __init__(self, topic_map: Optional[dict], log):
        self.topic_map = topic_map or {}
        self.log = log
        self._warned = set()

    def fine(self, topic_id: str, device_id) -> bool:
        if device_id is None:
            return True
        device_id = bytes(device_id)
        ok = stands_for(topic_id, device_id, self.topic_map)
        if not ok and (topic_id, device_id) not in self._warned \
                and len(self._warned) < MAX_MISMATCH_WARNED:
            self._warned.add((topic_id, device_id))
            self.log("zeal: warning: topic zeal/%s/frames announced device %s, which its topic "
                     "id does not stand for: its frames are refused (id_mismatch; --topic-map "
                     "maps topic ids to device ids)" % (topic_id, wire.device_name(device_id)))
        return ok


class TopicStream(Stream):
    """The stream of zeal/<topic id>/frames. `guard`: the IdGuard; `republish(piece)`: called
    with each piece that held a HELLO (the collector republishes it, retained, for the
    others of its group)."""

    def __init__(self, topic: str, decoder: wire.Decoder, guard: IdGuard, republish):
        super().__init__("mqtt:" + topic, decoder)
        self.opened = True
        self.topic_id = topic.split("/")[1]
        self.guard = guard
        self.republish = republish

    def feed(self, piece, now, recs):
        before = len(recs)
        super().feed(piece, now, recs)
        self._late(recs, before)
        self._check_ids(recs, before)
        if any(r[0] == "hello" for r in recs[before:]):
            self.republish(piece)

    def _late(self, recs, before) -> None:
        """DATA of the latest session that came late (QoS 1 redelivery after a collector
        restart or a broker restart; a serial line never goes back): the decoder keeps it
        Unresolved ("sequence"); here it is placed at once (Decoder.open_late)."""
        dec = self.decoder
        for i in range(before, len(recs)):
            what, item = recs[i]
            if what != "unresolved" or item.record.reason != "sequence":
                continue
            batch = dec.open_late(item.body, item.crc)
            if batch is None:
                continue
            self.backlog.remove(item)
            recs[i] = (("frame", FrameRecord.from_batch(batch, item.arrival))
                       if batch is not False else ("dropped", None))

    def _check_ids(self, recs, before) -> None:
        """Refuse what the topic's line says under a device id the topic does not stand for
        (see zeal.collect.mqtt's docstring): frames become rejects `id_mismatch` (no device,
        keyed so that a redelivery counts once), session events and spans are dropped, other
        events lose the device."""
        ok = {}

        def fine(dev):
            if dev is None:
                return True
            dev = bytes(dev)
            if dev not in ok:
                ok[dev] = self.guard.fine(self.topic_id, dev)
            return ok[dev]

        def refused(key, now):
            return ("event", EventRecord("reject", "id_mismatch", 1, port=self.url, time=now,
                                         key="reject:%s:id_mismatch" % key))

        out = recs[:before]
        for what, rec in recs[before:]:
            if what == "frame" and not fine(rec.device_id):
                if out and out[-1][0] == "resolved" and out[-1][1][1]:
                    out[-1] = ("resolved", (out[-1][1][0], False))  # opened, then refused
                sess = wire.session_bytes(rec.device_id, bytes.fromhex(rec.fingerprint)[:8],
                                          rec.boot, rec.nonce).hex()
                out.append(refused("%s:%d" % (sess, rec.seq), rec.arrival))
            elif what == "hello" and not fine(rec.device_id):
                out.append(refused("%s:hello%d" % (rec.session.hex(), rec.next_seq),
                                   time.time()))
            elif what == "status" and not fine(rec[1]):
                st, _dev, sess, now = rec
                out.append(refused("%s:status%d:%d" % (sess, st.ticks, st.code), now))
            elif what == "span" and not fine(rec.device_id):
                continue
            elif what == "event" and not fine(rec.device_id):
                if rec.kind in ("session", "reboot"):
                    continue
                out.append(("event", EventRecord(rec.kind, rec.detail, rec.count, port=rec.port,
                                                 time=rec.time, key=rec.key)))
            else:
                out.append((what, rec))
        recs[:] = out

    def add_spans(self, recs) -> None:
        before = len(recs)
        super().add_spans(recs)
        # no loss rows for what the topic may not announce
        recs[before:] = [r for r in recs[before:]
                         if stands_for(self.topic_id, r[1].device_id, self.guard.topic_map)]

    def resolve(self, recs):
        """A HELLO came. Over MQTT it may come after DATA sent after it (another topic, or
        another collector's republish), which a serial line never does: so the kept DATA is
        first fed again as if it followed the HELLO (what opens is stored); only what does
        not is left to the serial stream's resolve (DATA sent before the HELLO)."""
        dec = self.decoder
        keep = []
        for item in sorted(self.backlog, key=lambda it: (int.from_bytes(it.body[1:3], "little"),
                                                         it.arrival)):
            out = dec.refeed(item.body, item.crc)
            batch = next((b for b in out if isinstance(b, wire.Batch)), None)
            if batch is not None:
                recs.append(("resolved", (item, True)))
                recs.append(("frame", FrameRecord.from_batch(batch, item.arrival)))
            elif any(isinstance(u, wire.Unresolved) for u in out):
                keep.append(item)
            else:  # a duplicate (already stored) or refused: counted by the decoder
                recs.append(("resolved", (item, False)))
        keep.sort(key=lambda it: it.arrival)
        self.backlog = keep
        if keep:
            super().resolve(recs)

    def account(self, now, recs):
        """As a serial stream's, but a redelivered frame is no reject, a stale HELLO no
        restart, and gaps come from the store (see zeal.collect.mqtt's docstring)."""
        dec = self.decoder
        dup = 0
        if dec.rejected_total != self._seen_total:
            dup = dec.rejected["duplicate"] - self._seen_rejects["duplicate"]
        if dup:
            seen = Counter(self._seen_rejects)
            seen["duplicate"] += dup
            self._seen_rejects = seen
        self._seen_lost = dec.lost
        self._seen_restarts = dec.restarts
        super().account(now, recs)
