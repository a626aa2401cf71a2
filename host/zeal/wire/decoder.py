"""The host decoder of one serial line: sessions, sequence numbers, losses (protocol 2).

`Decoder` keeps the sessions announced on its line, opens DATA with the latest HELLO's
session, rebuilds it only under a known profile, extends the u16 sequence number on the wire
to the session's u32 and returns `Batch`es; DATA it cannot open yet comes out `Unresolved`,
for `Decoder.resolve` when a HELLO arrives. The frames are zeal.wire.codec's; the stream is
split by zeal.wire.deframer's Deframer.
"""
import bisect
import struct
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from ..errors import ReportError
from ..mechanism.grid import reports
from ..mechanism import kinds
from ..mechanism.grid.profile import Profile
from ..mechanism.multi.profile import PayloadError
from .codec import (MAX_SEQ32, TYPE_DATA, TYPE_MASK, Data, FrameError, Hello, SealedData,
                    Status, cobs_encode, crc32, parse_body, session_bytes, unpack_reports)
from .deframer import Deframer


@dataclass(frozen=True)
class Batch:
    """The reports of one accepted DATA frame, rebuilt under the profile its session announced."""

    device_id: bytes
    boot: int
    nonce: bytes                             # the session's 8-byte nonce (fresh every boot)
    seq: int                                 # the FULL u32 sequence number in the session
    profile: Profile
    lows: np.ndarray = field(repr=False)     # uint64, the m bits as sent
    offsets: np.ndarray = field(repr=False)  # int64, j = k - k_lo
    vector: bool = False                     # made in vector mode: never store
    debug: bool = False                      # from a non-private debug build
    lost_before: int = 0                     # frames of the session missing just before it
    payload: bytes = field(default=b"", repr=False)  # the packed m-bit payload as received
    crc: int = 0                             # the frame's stored (session-seeded) CRC-32
    reports: tuple = field(default=None, repr=False)  # multi profile: [(j, y_j)] per report

    @property
    def fingerprint(self) -> str:
        return self.profile.fingerprint

    @property
    def session(self) -> bytes:
        """The 28 bytes that seed this frame's CRC (`Hello.session` of its boot)."""
        return session_bytes(self.device_id, self.fingerprint, self.boot, self.nonce)

    @property
    def values(self) -> np.ndarray:
        """float64 x*, bit-exact, built on demand (the collector stores payloads, not these)."""
        if self.reports is not None:
            raise ReportError("a multi-attribute batch has (index, value) pairs, not floats")
        return reports.floats_from_offsets(self.profile, self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) if self.reports is None else len(self.reports)


@dataclass(frozen=True)
class Unresolved:
    """A DATA frame the Decoder cannot open now: `reason` "no_hello" (no HELLO yet on this
    line), "crc" (fails its CRC under the latest session: corrupted, or of a session whose
    HELLO has not arrived) or "sequence" (of the latest session, but its u16 number lies
    2^15 or more ahead of the expected one: only a HELLO can place it). Keep it raw and pass
    it (or anything with `.body` and `.crc`) to `Decoder.resolve` when a HELLO arrives."""

    body: bytes = field(repr=False)
    crc: int
    reason: str


def fingerprint_key(profile: Profile) -> bytes:
    return bytes.fromhex(profile.fingerprint)[:8]


class _Track:
    """Sequence bookkeeping of one session on one line: which u32 numbers came in intact.

    `runs` are the disjoint, sorted intervals [start, end) of numbers received intact (by feed
    or resolve); `lo` is the first number this line is answerable for (0 if the line was
    listening to the same device when the session began, else the lowest of the first HELLO's
    next_seq and every number received), `top` one past the highest number known sent (a
    frame received, or a HELLO's next_seq). Lost = numbers in [lo, top) not received.
    Intervals that resolve can no longer reach (below the latest next_seq - 2^16) are folded
    into `folded` when there are many, so memory stays bounded on a lossy line."""

    MAX_RUNS = 1024

    def __init__(self, hello: "Hello", attached: bool):
        self.hello = hello
        self.seed = crc32(hello.session)
        self.profile = None
        self.hello_at = 0  # the Decoder's frame number of this session's latest HELLO
        self.restarted_at = None  # the frame number of a vector-mode restart, if any
        self.attached = attached
        self.reset(hello)

    def reset(self, hello: "Hello") -> None:
        self.hello = hello
        self.lo = 0 if self.attached else hello.next_seq
        self.top = hello.next_seq
        self.next = hello.next_seq  # expected number of the next DATA frame by feed
        self.starts: List[int] = []
        self.ends: List[int] = []
        self.received = 0  # numbers inside runs
        self.last_gap = 0  # numbers missing just before the one added last
        self.folded = 0    # numbers received in runs folded away
        self.floor = 0     # numbers below this are settled (their runs folded)

    def anchor(self, hello: "Hello") -> None:
        """A HELLO of this session: frames below next_seq were sent; the next DATA is next_seq."""
        self.hello = hello
        self.top = max(self.top, hello.next_seq)
        self.next = max(self.next, hello.next_seq)

    def lost(self) -> int:
        return (self.top - self.lo) - (self.received + self.folded)

    def seen(self, u: int) -> bool:
        i = bisect.bisect_right(self.starts, u) - 1
        return i >= 0 and u < self.ends[i]

    def add(self, u: int) -> int:
        """Record number u as received; return how many numbers just before it are missing."""
        if not self.attached and u < self.lo:
            self.lo = u
        self.top = max(self.top, u + 1)
        starts, ends = self.starts, self.ends
        i = bisect.bisect_right(starts, u) - 1  # the run starting at or before u
        gap = u - max(ends[i] if i >= 0 else self.lo, self.lo, self.floor)
        joins_left = i >= 0 and ends[i] == u
        joins_right = i + 1 < len(starts) and starts[i + 1] == u + 1
        if joins_left and joins_right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = u + 1
        elif joins_right:
            starts[i + 1] = u
        else:
            starts.insert(i + 1, u)
            ends.insert(i + 1, u + 1)
        self.received += 1
        if len(starts) > self.MAX_RUNS:
            self._fold()
        return max(gap, 0)

    def _fold(self) -> None:
        limit = self.hello.next_seq - (1 << 16)
        k = 0
        while k < len(self.starts) and self.ends[k] <= limit:
            k += 1
        if k < len(self.starts) // 2:  # no periodic HELLO moved the window: fold half anyway
            k = len(self.starts) // 2
        n = sum(e - s for s, e in zip(self.starts[:k], self.ends[:k]))
        self.folded += n
        self.received -= n
        self.floor = max(self.floor, self.ends[k - 1])
        del self.starts[:k], self.ends[:k]


class Decoder:
    """One serial line: frames -> events (Hello, Status, Batch, Unresolved). Never raises
    from `feed` or `resolve`.

    profiles: the profiles the host knows (Profile objects or a mapping with Profile values);
    vectors: return VECTOR-flagged DATA (flagged) instead of dropping it — conformance only.

    DATA is opened with the session of the latest HELLO. DATA before any HELLO, or failing
    its CRC under the latest session (corrupted, or of a boot whose HELLO has not come yet),
    is returned as `Unresolved` and counted in `unresolved` (by reason), not in `rejected`:
    the caller keeps it and passes it to `resolve` when a HELLO arrives.

    Sequence numbers: `Batch.seq` is the session's u32. A HELLO anchors it (the next DATA is
    HELLO.next_seq); each DATA frame by feed is the first number at or after the expected one
    whose low 16 bits match (a frame matching a number already received is a `duplicate`);
    a frame opened by `resolve` is the largest number below the HELLO's next_seq whose low 16
    bits match (it came before that HELLO).

    Counters: `rejected` (framer and decoder reasons together), `unresolved` (by reason),
    `lost` (see there), `reboots` (HELLOs of a new session after the first), `restarts`
    (a HELLO whose next_seq is below what its session already sent: only a device that
    restarted without a new session, i.e. vector mode, whose nonce follows from its key),
    `batches`, `reports`, `hellos`, `statuses`, `resolved` (frames opened by resolve).
    """

    SEQ_MOD = 1 << 16
    SEQ_BACK = 1 << 15  # a step of at least this from the expected number looks backwards
    MAX_SESSIONS = 8    # sessions of this line that resolve still tries (latest first)

    def __init__(self, profiles=(), *, vectors: bool = False):
        self.deframer = Deframer()
        self.vectors = vectors
        self._profiles = {}
        values = profiles.values() if hasattr(profiles, "values") else profiles
        for prof in values:
            self.add_profile(prof)
        self.hello: Optional[Hello] = None
        self.profile: Optional[Profile] = None
        self._tracks: "OrderedDict[bytes, _Track]" = OrderedDict()  # latest session last
        self._retired_lost = 0
        self._rejected = Counter()
        self.unresolved = Counter()
        self.reboots = 0
        self.restarts = 0
        self.batches = 0
        self.reports = 0
        self.hellos = 0
        self.statuses = 0
        self.resolved = 0
        self.last_error = None
        self._frame_no = 0  # frames taken from the deframer
        # Unresolved frames this Decoder handed out -> the frame number they came at, so that
        # resolve never places a frame by a HELLO that came before it (bounded: a frame
        # forgotten here is taken to predate the line's HELLOs, as one from another Decoder)
        self._kept: "OrderedDict[tuple, int]" = OrderedDict()

    MAX_KEPT = 4096

    def _unresolved(self, sealed: "SealedData", reason: str) -> "Unresolved":
        self.unresolved[reason] += 1
        key = (sealed.crc, len(sealed.body), hash(sealed.body))
        self._kept[key] = self._frame_no
        self._kept.move_to_end(key)
        while len(self._kept) > self.MAX_KEPT:
            self._kept.popitem(last=False)
        return Unresolved(body=sealed.body, crc=sealed.crc, reason=reason)

    def add_profile(self, profile: Profile) -> None:
        # a table profile (zeal.mechanism.table.profile) travels the same way: its reports
        # are cells 0..N-1 in m bits, so it exposes the grid's k_lo/k_hi/wire_base offsets; a
        # multi profile (multi_profile.MultiProfile, bits 0) has variable-length reports; a
        # shuffle profile's message is one fixed-width report (offset = the message integer)
        if not kinds.is_profile(profile):
            raise TypeError("profiles are zeal.mechanism.grid.profile.Profile, "
                            "table_profile.TableProfile, multi_profile.MultiProfile or "
                            "shuffle_profile.ShuffleProfile objects")
        self._profiles[fingerprint_key(profile)] = profile

    @property
    def rejected(self) -> Counter:
        return self.deframer.rejected + self._rejected

    @property
    def rejected_total(self) -> int:
        """sum(rejected.values()), without building a Counter: a collector asks after
        every frame whether anything new was refused."""
        return self.deframer.rejected.total() + self._rejected.total()

    @property
    def lost(self) -> int:
        """DATA frames this line is answerable for that never came out intact — neither as a
        Batch nor as a refused frame (counted in `rejected`) — by feed or by resolve.

        Per session, the line answers for the numbers from `lo` up to the highest number
        known sent (a frame received, or a HELLO's next_seq): `lo` is 0 when the line was
        listening to the same device as the session began (a reboot, its boot HELLO lost or
        not: every frame of the new boot was sent while we listened), else (the first session
        on the line: a late attach or a restarted collector; another device) the lowest of
        the first HELLO's next_seq and every number received — frames sent before the attach
        are not losses. So a caller that keeps every Unresolved and resolves it at the next
        HELLO ends with `lost` = the frames truly never received intact since the attach.
        `lost` can go down: a frame resolved later stops being lost (and one resolved below
        `lo` extends the attach window). Read it after resolving."""
        return self._retired_lost + sum(t.lost() for t in self._tracks.values())

    def span(self, session) -> Optional[tuple]:
        """(lo, top) of a session announced on this line (`lost`'s window: the line answers
        for the numbers lo .. top - 1, top being one past the highest known sent), or None
        for a session it does not know (never announced here, or retired)."""
        track = self._tracks.get(bytes(session))
        return None if track is None else (track.lo, track.top)

    def _reject(self, reason: str, message: str = "") -> None:
        self._rejected[reason] += 1
        self.last_error = "%s: %s" % (reason, message) if message else reason

    def feed(self, chunk) -> list:
        events = []
        for frame in self.deframer.feed(chunk):
            try:
                ev = self._on_frame(frame)
            except Exception as exc:  # a bug here must not lose the rest of the stream
                self._reject("internal", repr(exc))
                continue
            if ev is not None:
                events.append(ev)
        return events

    def resolve(self, items) -> list:
        """Open kept Unresolved frames (anything with `.body` and `.crc`) under the sessions
        announced on this line, the latest first. One answer per item, in order:
        a Batch (opened and rebuilt: store it; its seq is the largest u32 below its session's
        latest HELLO.next_seq with the low 16 bits on the wire), False (opened under a session
        but refused: length, padding, grid, vector, unknown profile, duplicate, sequence, or
        a malformed body; counted in `rejected`: delete it), or None (of no session this
        line has announced: keep it)."""
        out = []
        for item in items:
            try:
                out.append(self._resolve_one(item))
            except Exception as exc:  # a bug (or a strange item) must not lose the others
                self._reject("internal", repr(exc))
                out.append(None)
        return out

    def open_late(self, body, crc):
        """A CRC-valid DATA body of the latest session that feed kept Unresolved as
        "sequence" because it came after later frames (a transport that redelivers, as MQTT
        at QoS 1 after a reconnect; a serial line never goes back): placed at the largest
        number below the session's highest (received or announced) with its 16 bits. A
        Batch; False when that number was read already or the frame is refused (it is done
        with); None when it has no place (keep it)."""
        track = self._tracks.get(self.hello.session) if self.hello is not None else None
        if track is None:
            return None
        body, crc = bytes(body), int(crc)
        n = max(track.next, track.hello.next_seq)
        u = n - 1 - ((n - 1 - (body[1] | body[2] << 8)) % self.SEQ_MOD)
        if u < 0:
            return None
        self._kept.pop((crc, len(body), hash(body)), None)
        if track.seen(u):
            return False
        track.add(u)
        try:
            d = parse_body(body, variable=track.hello.bits == 0)
            batch = self._rebuild(track, d, u, crc)
        except FrameError:
            batch = None
        return batch if batch is not None else False

    def refeed(self, body, crc) -> list:
        """Feed a kept DATA frame again as if it arrived now, after the latest HELLO (a
        transport whose HELLO can come after DATA sent after it): what feed returns. Its
        place among the kept frames is left as it was, since where it was first kept decides
        what resolve may do with it."""
        body = bytes(body)
        key = (int(crc), len(body), hash(body))
        was = self._kept.get(key)
        out = self.feed(cobs_encode(body + struct.pack("<I", int(crc))) + b"\x00")
        if was is None:
            self._kept.pop(key, None)
        else:
            self._kept[key] = was
        return out

    def _on_frame(self, frame):
        self._frame_no += 1
        if isinstance(frame, Hello):
            return self._on_hello(frame)
        if isinstance(frame, Status):
            self.statuses += 1
            return frame
        return self._on_data(frame)

    def _on_hello(self, h: Hello) -> Hello:
        self.hellos += 1
        old = self.hello
        if old is not None and old.session != h.session:
            self.reboots += 1
        track = self._tracks.get(h.session)
        if track is None:
            # The same device under a new session while we listened: a reboot, so every
            # frame of it was sent after the attach. Otherwise (first HELLO on the line,
            # another device) the line answers from this HELLO on (and from frames resolved).
            attached = old is not None and old.device_id == h.device_id
            track = _Track(h, attached)
            track.hello_at = self._frame_no
            self._tracks[h.session] = track
            while len(self._tracks) > self.MAX_SESSIONS:
                _, gone = self._tracks.popitem(last=False)
                self._retired_lost += gone.lost()
        else:
            self._tracks.move_to_end(h.session)
            if h.next_seq < track.next:
                # The sequence went back inside one session. A private device cannot do
                # this (a fresh nonce every boot); vector mode can (the nonce follows from
                # the key): settle what was counted and start again from here. Frames kept
                # before this HELLO can no longer be placed under it (two runs share the
                # numbers): resolve leaves them kept. Otherwise the HELLO is stale (a replay):
                # counted, not followed.
                self.restarts += 1
                if h.vector:
                    self._retired_lost += track.lost()
                    track.attached = True
                    track.reset(h)
                    track.restarted_at = track.hello_at = self._frame_no
            else:
                track.anchor(h)
                track.hello_at = self._frame_no
        self.hello = h
        prof = self._profiles.get(h.fingerprint) if h.has_profile else None
        if prof is not None and prof.bits != h.bits:
            self._reject("bad_hello", "HELLO says %d bits, profile %s has %d"
                         % (h.bits, prof.fingerprint[:16], prof.bits))
            prof = None
        track.profile = prof
        self.profile = prof
        return h

    def _on_data(self, sealed: SealedData):
        if self.hello is None:
            return self._unresolved(sealed, "no_hello")
        track = self._tracks[self.hello.session]
        if crc32(sealed.body, track.seed) != sealed.crc:
            return self._unresolved(sealed, "crc")
        body = sealed.body
        u = self._place_next(track, body)
        if u == "sequence":
            return self._unresolved(sealed, "sequence")
        try:
            d = parse_body(body, variable=track.hello.bits == 0)  # reserved_flags, malformed
        except FrameError as exc:
            self._reject(exc.reason, str(exc))
            return None
        if u is None:
            self._reject("duplicate", "DATA seq %d repeated" % d.seq)
            return None
        return self._rebuild(track, d, u, sealed.crc)

    @staticmethod
    def _wire_seq(body: bytes) -> Optional[int]:
        """The u16 sequence number of a CRC-valid DATA body, if it has that many bytes (a
        frame refused as reserved_flags or malformed still used its number)."""
        return body[1] | body[2] << 8 if len(body) >= 3 else None

    def _place_next(self, track: _Track, body: bytes):
        """Number a CRC-valid DATA frame read by feed: the u32 at or after the expected one
        with its low 16 bits, if fewer than 2^15 ahead; None for a duplicate (or a body too
        short to carry a number); "sequence" for a frame 2^15 or more ahead that is no
        duplicate — a replayed old frame, or 2^15 frames lost with every HELLO between them:
        the two look alike modulo 2^16, so it is kept Unresolved for the next HELLO to place
        (resolve), never given a guessed number. The number is recorded as received (even if
        the frame is then refused: it was sent and came in intact, so it is no loss)."""
        seq = self._wire_seq(body)
        if seq is None:
            return None
        nxt = track.next
        step = (seq - nxt) % self.SEQ_MOD
        u = nxt + step
        if step >= self.SEQ_BACK:
            back = u - self.SEQ_MOD
            if back >= 0 and track.seen(back):
                return None
            return "sequence"
        if track.seen(u):
            return None
        track.last_gap = track.add(u)
        track.next = u + 1
        return u

    def _place_before(self, track: _Track, body: bytes):
        """Number a DATA frame opened by resolve: the largest u32 below the session's latest
        next_seq with its low 16 bits. (u or None, reason-if-refused)."""
        seq = self._wire_seq(body)
        if seq is None:
            return None, None
        n = track.hello.next_seq
        u = n - 1 - ((n - 1 - seq) % self.SEQ_MOD)
        if u < 0:
            return None, "sequence"
        if track.seen(u):
            return None, "duplicate"
        track.last_gap = track.add(u)
        return u, None

    def _resolve_one(self, item):
        body, crc = bytes(item.body), int(item.crc)
        if not body:
            return None
        for track in reversed(list(self._tracks.values())):
            if crc32(body, track.seed) == crc:
                break
        else:
            return None
        key = (crc, len(body), hash(body))
        at = self._kept.get(key)
        if at is not None and at > track.hello_at:
            return None  # it came after its session's latest HELLO: the next one places it
        if track.restarted_at is not None and (at is None or at < track.restarted_at):
            return None  # before a vector-mode restart of its session: not placeable
        self._kept.pop(key, None)
        self.resolved += 1
        if body[0] & TYPE_MASK != TYPE_DATA:  # only DATA is ever Unresolved
            self._reject("type", "a frame to resolve is not DATA")
            return False
        u, why = self._place_before(track, body)
        try:
            d = parse_body(body, variable=track.hello.bits == 0)
        except FrameError as exc:
            self._reject(exc.reason, str(exc))
            return False
        if why is not None:
            self._reject(why, "DATA seq %d: %s below next_seq %d"
                         % (d.seq, "already received" if why == "duplicate"
                            else "no u32 fits", track.hello.next_seq))
            return False
        ev = self._rebuild(track, d, u, crc)
        return ev if ev is not None else False

    def _rebuild(self, track: _Track, d: Data, u: int, crc: int):
        prof = track.profile
        h = track.hello
        gap = track.last_gap
        if prof is None:
            self._reject("unknown_profile", "DATA seq %d under fingerprint %s"
                         % (u, h.fingerprint.hex()))
            return None
        try:  # reports of no one fixed width (a multi report's pairs), else None
            multi = kinds.of(prof).split_payload(prof, d.payload, d.count)
        except PayloadError as exc:  # length, padding, grid
            self._reject(exc.reason, str(exc))
            return None
        if multi is not None:
            lows = offsets = np.zeros(0, dtype=np.int64)
        else:
            try:
                lows = unpack_reports(d.payload, d.count, prof.bits)
            except FrameError as exc:
                self._reject(exc.reason, str(exc))
                return None
            try:
                offsets = reports.offsets_from_low(prof, lows)
            except ReportError as exc:
                self._reject("grid", str(exc))
                return None
        if d.vector and not self.vectors:
            self._reject("vector", "VECTOR DATA seq %d not stored" % u)
            return None
        self.batches += 1
        self.reports += d.count
        return Batch(device_id=h.device_id, boot=h.boot, nonce=h.nonce, seq=u & MAX_SEQ32,
                     profile=prof, lows=lows, offsets=offsets, vector=d.vector,
                     debug=d.debug, lost_before=gap, payload=d.payload, crc=crc,
                     reports=multi)
