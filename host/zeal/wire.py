"""Wire frames from a device (shared_spec/wire_format.md): COBS(body || CRC-32) || 0x00.

HELLO and STATUS carry the plain CRC-32 of their body; DATA carries the CRC-32 of its body
seeded by its session (the 20 bytes device id || fingerprint || boot of the HELLO that
announced it), so DATA is only ever readable under the HELLO it belongs to.

Three layers, each usable alone:

- pure codec functions: `cobs_encode`/`cobs_decode`, `encode_hello`/`encode_data`/
  `encode_status` (the host's reference encoder, used for vectors and tests),
  `decode_run` (one run between delimiters -> Hello | Status | SealedData),
  `SealedData.open(session)` (-> Data), `unpack_reports`; they raise `FrameError`, whose
  `reason` is one of `REASONS`;
- `Deframer`: fed arbitrary chunks of a byte stream, returns the frames it completes. It
  resynchronises at every 0x00, drops over-long runs without buffering them and counts every
  rejected run and byte by reason; nothing raises out of `feed`. It checks the CRC of HELLO
  and STATUS; DATA comes out sealed (CRC unchecked): only the line's Decoder knows its session;
- `Decoder`: one serial line. It keeps the latest HELLO, opens DATA with that HELLO's session
  (DATA of any other session fails its CRC), rebuilds it only under a known profile, tracks
  sequence numbers (gaps, wrap, duplicates, reboots) and returns `Batch`es of offsets and
  float64 values. Every loss is counted.

COBS comes from the `cobs` package (maintained, C-accelerated, the canonical encoding the
spec names); CRC-32 from `zlib.crc32`. The bit unpacking is vectorised with numpy.
"""
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Tuple, Union

import numpy as np
from cobs import cobs as _cobs

from . import reports
from .errors import ReportError, ZealError
from .profile import Profile

PROTOCOL = 1
TYPE_HELLO, TYPE_DATA, TYPE_STATUS = 1, 2, 3
TYPE_NAMES = {TYPE_HELLO: "HELLO", TYPE_DATA: "DATA", TYPE_STATUS: "STATUS"}
FLAG_VECTOR = 0x10
TYPE_MASK = 0x0F
RESERVED_MASK = 0xE0

CRC_LEN = 4
SESSION_LEN = 20  # device id (8) || fingerprint (8) || boot (u32 LE): HELLO bytes 5..24
HELLO_LEN = 28
DATA_HEADER = 4
STATUS_HEADER = 14
MAX_MESSAGE = 200
MAX_COUNT = 255
MAX_BITS = 52
MAX_SEQ = 0xFFFF
MIN_RUN_BODY = 1  # a body has at least its type byte
MAX_BODY = DATA_HEADER + (MAX_COUNT * MAX_BITS + 7) // 8  # 1662

STATUS_CODES = {0: "OK", 1: "NO_PROFILE", 2: "BAD_PROFILE", 3: "SENSOR", 4: "STOPPED",
                5: "CONFIG", 6: "CRASH"}

# Why a run or frame was refused. Deframer (one run between delimiters): ---------------------
#   cobs, short, crc, reserved_flags, type, malformed, version, overlong
#   (for DATA, crc, reserved_flags and malformed are found by the Decoder when it opens the
#   sealed frame with the session of the line's latest HELLO)
# Decoder (a well-formed frame that cannot be used): ------------------------------------------
#   no_hello, unknown_profile, bad_hello, length, padding, grid, duplicate,
#   vector (VECTOR data while vectors are not accepted), internal (a bug: never expected)
DEFRAMER_REASONS = ("cobs", "short", "crc", "reserved_flags", "type", "malformed", "version",
                    "overlong")
DECODER_REASONS = ("no_hello", "unknown_profile", "bad_hello", "length", "padding", "grid",
                   "duplicate", "vector", "internal")
REASONS = DEFRAMER_REASONS + DECODER_REASONS


class FrameError(ZealError):
    """A frame (or a value to encode) is not valid; `reason` is one of REASONS or 'encode'."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# ---- size bounds -------------------------------------------------------------------------------
def max_encoded_length(n: int) -> int:
    """Largest COBS encoding of n bytes (delimiter not included): 1 byte per started 254."""
    if n < 0:
        raise ValueError("a length is not negative")
    return n + 1 + (n - 1) // 254 if n else 1


MAX_ENCODED = max_encoded_length(MAX_BODY + CRC_LEN)  # 1673: longer runs are garbage


def data_body_length(count: int, bits: int) -> int:
    return DATA_HEADER + (count * bits + 7) // 8


def frame_length(body_length: int, *, leading: bool = False) -> int:
    """Upper bound of the bytes on the wire for one frame with a body of that length."""
    return max_encoded_length(body_length + CRC_LEN) + 1 + (1 if leading else 0)


# ---- COBS and CRC ------------------------------------------------------------------------------
def cobs_encode(data: bytes) -> bytes:
    return _cobs.encode(bytes(data))


def cobs_decode(data: bytes) -> bytes:
    try:
        return _cobs.decode(bytes(data))
    except _cobs.DecodeError as exc:
        raise FrameError("cobs", "bad COBS encoding: %s" % exc) from None


def crc32(data: bytes, seed: int = 0) -> int:
    """CRC-32 (zlib) of data, continuing from `seed` (0: a plain CRC-32)."""
    return zlib.crc32(data, seed) & 0xFFFFFFFF


def session_bytes(device_id, fingerprint, boot: int) -> bytes:
    """The session that seeds DATA's CRC: HELLO bytes 5..24, i.e. device id (8 bytes),
    profile fingerprint (8 bytes), boot counter (u32 LE). Ids as bytes or hex."""
    return (_bytes8("device_id", device_id) + _bytes8("fingerprint", fingerprint)
            + struct.pack("<I", _check_int("boot", boot, 0, 0xFFFFFFFF)))


def frame_body(body: bytes, *, leading: bool = False, seed: int = 0) -> bytes:
    """body -> the bytes on the wire: [0x00] COBS(body || CRC LE) 0x00, the CRC-32 of the
    body continued from `seed` (0 for HELLO and STATUS, crc32(session) for DATA)."""
    body = bytes(body)
    crc = crc32(body, seed)
    return (b"\x00" if leading else b"") + cobs_encode(body + struct.pack("<I", crc)) + b"\x00"


# ---- frames ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hello:
    flags: int
    protocol: int
    firmware: Tuple[int, int, int]
    device_id: bytes
    fingerprint: bytes  # first 8 bytes of the profile's SHA-256; all zero: no valid profile
    boot: int
    bits: int
    batch: int

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def has_profile(self) -> bool:
        return any(self.fingerprint)

    @property
    def session(self) -> bytes:
        """The 20 bytes (device id, fingerprint, boot) that seed the CRC of this boot's DATA."""
        return self.device_id + self.fingerprint + struct.pack("<I", self.boot)


@dataclass(frozen=True)
class Data:
    flags: int
    seq: int
    count: int
    payload: bytes

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)


@dataclass(frozen=True)
class Status:
    flags: int
    code: int
    dropped: int
    clamped: int
    sent: int
    message: str

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def code_name(self) -> str:
        return STATUS_CODES.get(self.code, "CODE_%d" % self.code)


@dataclass(frozen=True)
class SealedData:
    """A DATA run as the Deframer leaves it: COBS-decoded, CRC not checked yet. DATA's CRC is
    seeded by its session, which only the line's latest HELLO tells; `open` checks it."""

    body: bytes
    crc: int  # as stored after the body

    def open(self, session: bytes) -> Data:
        """The Data, if its CRC matches under `session` (20 bytes, `Hello.session`); else
        FrameError 'crc' — a corrupted frame and a frame of another session look the same —
        then, as for any frame, 'reserved_flags' or 'malformed'."""
        if crc32(self.body, crc32(session)) != self.crc:
            raise FrameError("crc", "CRC-32 mismatch under the session of the latest HELLO "
                             "(corrupted, or DATA of another session)")
        return parse_body(self.body)


Frame = Union[Hello, Data, Status]
Framed = Union[Hello, Status, SealedData]  # what the Deframer returns


def unframe(run: bytes) -> Tuple[bytes, int]:
    """One run between delimiters -> (body, stored CRC); the CRC is not checked here."""
    raw = cobs_decode(run)
    if len(raw) < MIN_RUN_BODY + CRC_LEN:
        raise FrameError("short", "frame of %d bytes is shorter than type + CRC" % len(raw))
    return raw[:-CRC_LEN], struct.unpack("<I", raw[-CRC_LEN:])[0]


def parse_body(body: bytes) -> Frame:
    """A CRC-checked body (plain for HELLO/STATUS, seeded for DATA) -> Hello | Data | Status,
    or FrameError."""
    head = body[0]
    flags, kind = head & ~TYPE_MASK & 0xFF, head & TYPE_MASK
    if head & RESERVED_MASK:
        raise FrameError("reserved_flags", "reserved flag bits 0x%02x set" % (head & RESERVED_MASK))
    n = len(body)
    if kind == TYPE_HELLO:
        if n != HELLO_LEN:
            raise FrameError("malformed", "HELLO of %d bytes (expected %d)" % (n, HELLO_LEN))
        if body[1] != PROTOCOL:
            raise FrameError("version", "protocol version %d (this host reads %d)"
                             % (body[1], PROTOCOL))
        boot, = struct.unpack_from("<I", body, 21)
        batch, = struct.unpack_from("<H", body, 26)
        return Hello(flags=flags, protocol=body[1], firmware=tuple(body[2:5]),
                     device_id=bytes(body[5:13]), fingerprint=bytes(body[13:21]), boot=boot,
                     bits=body[25], batch=batch)
    if kind == TYPE_DATA:
        if n < DATA_HEADER:
            raise FrameError("malformed", "DATA of %d bytes has no header" % n)
        seq, count = struct.unpack_from("<HB", body, 1)
        if count == 0:
            raise FrameError("malformed", "DATA with a count of 0")
        if n > data_body_length(count, MAX_BITS):
            raise FrameError("malformed", "DATA of %d bytes is too long for %d reports"
                             % (n, count))
        return Data(flags=flags, seq=seq, count=count, payload=bytes(body[DATA_HEADER:]))
    if kind == TYPE_STATUS:
        if not STATUS_HEADER <= n <= STATUS_HEADER + MAX_MESSAGE:
            raise FrameError("malformed", "STATUS of %d bytes (expected %d to %d)"
                             % (n, STATUS_HEADER, STATUS_HEADER + MAX_MESSAGE))
        code = body[1]
        dropped, clamped, sent = struct.unpack_from("<III", body, 2)
        message = bytes(body[STATUS_HEADER:]).decode("utf-8", errors="replace")
        return Status(flags=flags, code=code, dropped=dropped, clamped=clamped, sent=sent,
                      message=message)
    raise FrameError("type", "unknown frame type %d" % kind)


def decode_run(run: bytes) -> Framed:
    """The bytes between two delimiters -> Hello | Status (CRC checked) | SealedData (a body
    whose type nibble is DATA: its CRC needs the session), or FrameError with the reason."""
    if len(run) > MAX_ENCODED:
        raise FrameError("overlong", "run of %d bytes exceeds MAX_ENCODED" % len(run))
    body, crc = unframe(run)
    if body[0] & TYPE_MASK == TYPE_DATA:
        return SealedData(body=bytes(body), crc=crc)
    if crc != crc32(body):
        raise FrameError("crc", "CRC-32 mismatch")
    return parse_body(body)


# ---- reference encoders ------------------------------------------------------------------------
def _check_int(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise FrameError("encode", "%s must be an integer in [%d, %d], got %r"
                         % (name, lo, hi, value))
    return value


def _check_flags(flags):
    _check_int("flags", flags, 0, 0xFF)
    if flags & ~FLAG_VECTOR:
        raise FrameError("encode", "only the VECTOR flag (0x10) may be set")
    return flags


def _bytes8(name, value) -> bytes:
    if isinstance(value, str):
        try:
            value = bytes.fromhex(value)
        except ValueError:
            raise FrameError("encode", "%s is not hex" % name) from None
    value = bytes(value)
    if len(value) < 8:
        raise FrameError("encode", "%s needs 8 bytes, got %d" % (name, len(value)))
    return value[:8]


def pack_reports(values: Iterable[int], bits: int) -> bytes:
    """count m-bit integers, least-significant bit first (reference, exact Python ints)."""
    _check_int("bits", bits, 1, MAX_BITS)
    acc, count = 0, 0
    for v in values:
        _check_int("report", v, 0, (1 << bits) - 1)
        acc |= v << (count * bits)
        count += 1
    return acc.to_bytes((count * bits + 7) // 8, "little")


def encode_hello(*, device_id, fingerprint, boot: int, bits: int, batch: int,
                 firmware=(0, 1, 0), flags: int = 0, protocol: int = PROTOCOL) -> bytes:
    """A HELLO as written by a device: 0x00, COBS(body || CRC), 0x00."""
    _check_flags(flags)
    fw = tuple(firmware)
    if len(fw) != 3:
        raise FrameError("encode", "firmware is (major, minor, patch)")
    for part in fw:
        _check_int("firmware", part, 0, 255)
    body = struct.pack("<BB3B8s8sIBH", TYPE_HELLO | flags,
                       _check_int("protocol", protocol, 0, 255), *fw,
                       _bytes8("device_id", device_id), _bytes8("fingerprint", fingerprint),
                       _check_int("boot", boot, 0, 0xFFFFFFFF),
                       _check_int("bits", bits, 0, MAX_BITS),
                       _check_int("batch", batch, 1, MAX_COUNT))
    return frame_body(body, leading=True)


def encode_data(*, seq: int, bits: int, reports: List[int], session: bytes,
                flags: int = 0) -> bytes:
    """One DATA frame (no leading delimiter), its CRC seeded by `session` (20 bytes:
    `session_bytes(...)` or `Hello.session` of the boot that sends it)."""
    _check_flags(flags)
    session = bytes(session)
    if len(session) != SESSION_LEN:
        raise FrameError("encode", "a session is %d bytes, got %d" % (SESSION_LEN, len(session)))
    values = list(reports)
    _check_int("count", len(values), 1, MAX_COUNT)
    body = struct.pack("<BHB", TYPE_DATA | flags, _check_int("seq", seq, 0, MAX_SEQ),
                       len(values)) + pack_reports(values, bits)
    return frame_body(body, seed=crc32(session))


def truncate_utf8(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes, cut at a UTF-8 character boundary."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut]


def encode_status(*, code: int, dropped: int, clamped: int, sent: int, message="",
                  flags: int = 0) -> bytes:
    """A STATUS as written by a device (leading 0x00); counters wrap at 2^32, the message is
    cut to 200 bytes at a character boundary, as the device does."""
    _check_flags(flags)
    msg = message.encode("utf-8") if isinstance(message, str) else bytes(message)
    for name, v in (("dropped", dropped), ("clamped", clamped), ("sent", sent)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise FrameError("encode", "%s must be a non-negative integer" % name)
    body = struct.pack("<BBIII", TYPE_STATUS | flags, _check_int("code", code, 0, 255),
                       dropped & 0xFFFFFFFF, clamped & 0xFFFFFFFF, sent & 0xFFFFFFFF)
    return frame_body(body + truncate_utf8(msg, MAX_MESSAGE), leading=True)


# ---- payload -----------------------------------------------------------------------------------
def unpack_reports(payload: bytes, count: int, bits: int) -> np.ndarray:
    """The DATA payload -> `count` m-bit values (uint64). FrameError 'length' or 'padding'."""
    need = (count * bits + 7) // 8
    if len(payload) != need:
        raise FrameError("length", "DATA payload of %d bytes; %d reports of %d bits need %d"
                         % (len(payload), count, bits, need))
    flat = np.unpackbits(np.frombuffer(payload, dtype=np.uint8), bitorder="little")
    used = count * bits
    if flat[used:].any():
        raise FrameError("padding", "non-zero padding bits after the last report")
    grid = flat[:used].reshape(count, bits).astype(np.uint64)
    return (grid << np.arange(bits, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


# ---- stream: deframer --------------------------------------------------------------------------
class Deframer:
    """Splits a byte stream into frames. `feed(chunk)` returns the frames completed by it.

    Frames come out as Hello and Status (CRC checked) and SealedData (DATA: its CRC is seeded
    by the session, so the Decoder checks it; see SealedData.open).

    Accounting (every byte fed is in exactly one of these):
      frame_bytes    bytes of frames passed on (sealed DATA included), delimiter included
      dropped_bytes  Counter reason -> bytes of refused runs, their delimiter included
      idle_bytes     delimiters that closed an empty run (the leading 0x00 of HELLO/STATUS)
      pending        bytes of the unfinished run (not yet judged)
    `rejected` counts the refused runs by reason.
    """

    def __init__(self, *, max_encoded: int = MAX_ENCODED):
        self.max_encoded = max_encoded
        self._buf = bytearray()
        self._skip = None  # bytes of an over-long run being dropped, or None
        self.bytes_in = 0
        self.frames = 0
        self.frame_bytes = 0
        self.idle_bytes = 0
        self.rejected = Counter()
        self.dropped_bytes = Counter()
        self.last_error = None

    @property
    def pending(self) -> int:
        return self._skip if self._skip is not None else len(self._buf)

    def _reject(self, reason: str, nbytes: int, message: str = "") -> None:
        self.rejected[reason] += 1
        self.dropped_bytes[reason] += nbytes
        self.last_error = "%s: %s" % (reason, message) if message else reason

    def feed(self, chunk) -> List[Framed]:
        data = bytes(chunk)
        self.bytes_in += len(data)
        out = []
        start, n = 0, len(data)
        while start < n:
            z = data.find(0, start)
            end = n if z < 0 else z
            seg = end - start
            if self._skip is not None:
                self._skip += seg
            elif len(self._buf) + seg > self.max_encoded:
                self._skip = len(self._buf) + seg  # drop it, keep only the count
                self._buf.clear()
            elif seg:
                self._buf += data[start:end]
            if z < 0:
                break
            start = z + 1
            if self._skip is not None:
                self._reject("overlong", self._skip + 1, "run of %d bytes" % self._skip)
                self._skip = None
            elif not self._buf:
                self.idle_bytes += 1
            else:
                run = bytes(self._buf)
                self._buf.clear()
                try:
                    frame = decode_run(run)
                except FrameError as exc:
                    self._reject(exc.reason, len(run) + 1, str(exc))
                except Exception as exc:  # a bug in this module: count it, never raise out
                    self._reject("internal", len(run) + 1, repr(exc))
                else:
                    self.frames += 1
                    self.frame_bytes += len(run) + 1
                    out.append(frame)
        return out


# ---- stream: decoder ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Batch:
    """The reports of one accepted DATA frame, rebuilt under the profile its line announced."""

    device_id: bytes
    boot: int
    seq: int
    profile: Profile
    lows: np.ndarray = field(repr=False)     # uint64, the m bits as sent
    offsets: np.ndarray = field(repr=False)  # int64, j = k - k_lo
    vector: bool = False                     # made in vector mode: never store
    lost_before: int = 0                     # DATA frames missing just before this one
    payload: bytes = field(default=b"", repr=False)  # the packed m-bit payload as received
    crc: int = 0                             # the frame's stored (session-seeded) CRC-32

    @property
    def fingerprint(self) -> str:
        return self.profile.fingerprint

    @property
    def values(self) -> np.ndarray:
        """float64 x*, bit-exact, built on demand (the collector stores payloads, not these)."""
        return reports.floats_from_offsets(self.profile, self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)


def fingerprint_key(profile: Profile) -> bytes:
    return bytes.fromhex(profile.fingerprint)[:8]


class Decoder:
    """One serial line: frames -> events (Hello, Status, Batch). Never raises from `feed`.

    profiles: the profiles the host knows (Profile objects or a mapping with Profile values);
    vectors: return VECTOR-flagged DATA (flagged) instead of dropping it — conformance only.
    Counters: `rejected` (framer and decoder reasons together), `lost` (DATA frames missing
    from the sequence, whatever the cause), `reboots` (HELLOs of a new session after the
    first), `restarts` (sequence restarts inside one session), `batches`, `reports`.

    DATA is opened with the session of the latest HELLO: DATA of any other session (a reboot
    whose HELLO was lost) fails its CRC and is refused as 'crc', never rebuilt.
    """

    SEQ_MOD = 1 << 16
    SEQ_BACK = 1 << 15  # a jump of at least this is backwards: the sequence restarted

    def __init__(self, profiles=(), *, vectors: bool = False):
        self.deframer = Deframer()
        self.vectors = vectors
        self._profiles = {}
        values = profiles.values() if hasattr(profiles, "values") else profiles
        for prof in values:
            self.add_profile(prof)
        self.hello: Optional[Hello] = None
        self.profile: Optional[Profile] = None
        self._last_seq: Optional[int] = None
        self._rejected = Counter()
        self.lost = 0
        self.reboots = 0
        self.restarts = 0
        self.batches = 0
        self.reports = 0
        self.hellos = 0
        self.statuses = 0
        self.last_error = None

    def add_profile(self, profile: Profile) -> None:
        if not isinstance(profile, Profile):
            raise TypeError("profiles are zeal.profile.Profile objects")
        self._profiles[fingerprint_key(profile)] = profile

    @property
    def rejected(self) -> Counter:
        return self.deframer.rejected + self._rejected

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

    def _on_frame(self, frame):
        if isinstance(frame, Hello):
            return self._on_hello(frame)
        if isinstance(frame, Status):
            self.statuses += 1
            return frame
        return self._on_data(frame)

    def _on_hello(self, h: Hello) -> Hello:
        self.hellos += 1
        old = self.hello
        new_session = old is None or old.session != h.session
        if new_session and old is not None:
            self.reboots += 1
        if new_session or old.bits != h.bits:
            # A new session of the same device is a reboot: its sequence restarted at 0, so
            # DATA of it before this HELLO (its boot HELLO lost) counts as lost. Otherwise (the
            # first HELLO seen, another device) the sequence starts at the next DATA frame.
            rebooted = old is not None and new_session and old.device_id == h.device_id
            self._last_seq = MAX_SEQ if rebooted else None
        self.hello = h
        prof = self._profiles.get(h.fingerprint) if h.has_profile else None
        if prof is not None and prof.bits != h.bits:
            self._reject("bad_hello", "HELLO says %d bits, profile %s has %d"
                         % (h.bits, prof.fingerprint[:16], prof.bits))
            prof = None
        self.profile = prof
        return h

    def _on_data(self, sealed: SealedData):
        if self.hello is None:
            self._reject("no_hello", "DATA before any HELLO (no session to check its CRC)")
            return None
        try:
            d = sealed.open(self.hello.session)
        except FrameError as exc:  # crc (corrupted, or another session), reserved_flags, ...
            self._reject(exc.reason, str(exc))
            return None
        if self.profile is None:
            self._reject("unknown_profile", "DATA seq %d under fingerprint %s"
                         % (d.seq, self.hello.fingerprint.hex()))
            return None
        lost = 0
        if self._last_seq is not None:
            step = (d.seq - self._last_seq) % self.SEQ_MOD
            if step == 0:
                self._reject("duplicate", "DATA seq %d repeated" % d.seq)
                return None
            if step >= self.SEQ_BACK:
                # Backwards inside one session: the device restarted its sequence without a
                # new session (vector mode's boot 0, a lost seed file). The profile is part of
                # the session, so the frame is good; frames 0 .. seq - 1 of the restart are
                # lost. (A loss of 2^15 or more frames looks the same modulo 2^16.)
                self.restarts += 1
                lost = d.seq
            else:
                lost = step - 1
        self._last_seq = d.seq  # a CRC-valid frame's number is real even if refused below
        self.lost += lost
        prof = self.profile
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
            self._reject("vector", "VECTOR DATA seq %d not stored" % d.seq)
            return None
        self.batches += 1
        self.reports += d.count
        return Batch(device_id=self.hello.device_id, boot=self.hello.boot, seq=d.seq,
                     profile=prof, lows=lows, offsets=offsets,
                     vector=d.vector,
                     lost_before=lost, payload=d.payload, crc=sealed.crc)
