"""Wire frames from a device, protocol 2 (shared_spec/wire_format.md): COBS(body || CRC-32) || 0x00.

HELLO and STATUS carry the plain CRC-32 of their body; DATA carries the CRC-32 of its body
seeded by its session (the 28 bytes device id || fingerprint || boot || nonce of the HELLO
that announced it), so DATA is only ever readable under the HELLO it belongs to, and the
random per-boot nonce keeps two boots apart even when id, profile and boot counter agree.

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
- `Decoder`: one serial line. It keeps the sessions announced on the line, opens DATA with
  the latest HELLO's session, rebuilds it only under a known profile, extends the u16
  sequence number on the wire to the session's u32 (anchored by HELLO.next_seq), and returns
  `Batch`es. DATA it cannot open yet (before any HELLO, or failing its CRC under the latest
  session) comes out as `Unresolved`, for the caller to keep and pass to `Decoder.resolve`
  when a HELLO arrives (late attach, a reboot whose boot HELLO was lost). Every loss is
  counted.

COBS comes from the `cobs` package (maintained, C-accelerated, the canonical encoding the
spec names); CRC-32 from `zlib.crc32`. The bit unpacking is vectorised with numpy.
"""
import bisect
import struct
import zlib
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Tuple, Union

import numpy as np
from cobs import cobs as _cobs

from . import reports
from .errors import ReportError, ZealError
from .profile import Profile

PROTOCOL = 2
TYPE_HELLO, TYPE_DATA, TYPE_STATUS = 1, 2, 3
TYPE_NAMES = {TYPE_HELLO: "HELLO", TYPE_DATA: "DATA", TYPE_STATUS: "STATUS"}
FLAG_VECTOR = 0x10  # made in vector/test mode with a given key: never real data
FLAG_DEBUG = 0x20   # from a non-private debug build: never call its data private
TYPE_MASK = 0x0F
RESERVED_MASK = 0xC0

CRC_LEN = 4
NONCE_LEN = 8
# device id (8) || fingerprint (8) || boot (u32 LE) || nonce (8): HELLO bytes 5..32
SESSION_LEN = 28
HELLO_LEN = 40
DATA_HEADER = 4
STATUS_HEADER = 18
MAX_MESSAGE = 200
MAX_COUNT = 255
MAX_BITS = 52
MAX_SEQ = 0xFFFF          # the sequence number on the wire: the low 16 bits
MAX_SEQ32 = 0xFFFFFFFF    # the session's full sequence number (HELLO.next_seq, Batch.seq)
MIN_RUN_BODY = 1  # a body has at least its type byte
MAX_BODY = DATA_HEADER + (MAX_COUNT * MAX_BITS + 7) // 8  # 1662

# Host -> device control lines (ASCII, on the device's input line)
HELLO_REQUEST = b"!hello\n"  # the device sends a HELLO at its next sampling tick
STOP_REQUEST = b"!stop\n"    # the device stops streaming (STATUS STOPPED)

OK, NO_PROFILE, BAD_PROFILE, SENSOR, STOPPED, CONFIG, CRASH, HELD = range(8)
STATUS_CODES = {OK: "OK", NO_PROFILE: "NO_PROFILE", BAD_PROFILE: "BAD_PROFILE",
                SENSOR: "SENSOR", STOPPED: "STOPPED", CONFIG: "CONFIG", CRASH: "CRASH",
                HELD: "HELD"}
ERROR_CODES = frozenset((NO_PROFILE, BAD_PROFILE, CONFIG, CRASH))  # the device sends no data

# Why a run or frame was refused. Deframer (one run between delimiters): ---------------------
#   cobs, short, crc, reserved_flags, type, malformed, version, overlong
#   (for DATA, reserved_flags and malformed are found by the Decoder when it opens the sealed
#   frame with a session; DATA failing its CRC is not refused but Unresolved)
# Decoder (a well-formed frame that cannot be used): ------------------------------------------
#   unknown_profile, bad_hello, length, padding, grid, duplicate, sequence (resolve: no u32
#   below the HELLO's next_seq fits), vector (VECTOR data while vectors are not accepted),
#   internal (a bug: never expected)
DEFRAMER_REASONS = ("cobs", "short", "crc", "reserved_flags", "type", "malformed", "version",
                    "overlong")
DECODER_REASONS = ("unknown_profile", "bad_hello", "length", "padding", "grid", "duplicate",
                   "sequence", "vector", "internal")
REASONS = DEFRAMER_REASONS + DECODER_REASONS
# Why a DATA frame came out Unresolved (Decoder.unresolved counts them): no HELLO yet; fails
# its CRC under the latest session; opened, but its u16 lies 2^15 or more ahead of the
# expected number (a replay, or 2^15 frames lost with their HELLOs): the next HELLO places it
UNRESOLVED_REASONS = ("no_hello", "crc", "sequence")


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


def session_bytes(device_id, fingerprint, boot: int, nonce=bytes(NONCE_LEN)) -> bytes:
    """The session that seeds DATA's CRC: HELLO bytes 5..32, i.e. device id (8 bytes),
    profile fingerprint (8 bytes), boot counter (u32 LE), nonce (8 bytes). Ids as bytes or
    hex."""
    return (_bytes8("device_id", device_id) + _bytes8("fingerprint", fingerprint)
            + struct.pack("<I", _check_int("boot", boot, 0, MAX_SEQ32))
            + _bytes8("nonce", nonce))


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
    nonce: bytes        # 8 bytes, fresh every boot
    next_seq: int       # u32 sequence number of this boot's next DATA frame
    bits: int
    batch: int

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)

    @property
    def has_profile(self) -> bool:
        return any(self.fingerprint)

    @property
    def session(self) -> bytes:
        """The 28 bytes (device id, fingerprint, boot, nonce) that seed the CRC of this
        boot's DATA: HELLO bytes 5..32."""
        return self.device_id + self.fingerprint + struct.pack("<I", self.boot) + self.nonce


@dataclass(frozen=True)
class Data:
    flags: int
    seq: int  # the u16 on the wire
    count: int
    payload: bytes

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)


@dataclass(frozen=True)
class Status:
    flags: int
    code: int
    ticks: int           # sampling ticks since boot (public)
    frames_dropped: int  # frames the output would not take in time (public)
    replaced: int        # readings replaced by the public value: 0 unless DEBUG
    clamped: int         # readings clamped to [lo, hi]: 0 unless DEBUG
    message: str

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)

    @property
    def code_name(self) -> str:
        return STATUS_CODES.get(self.code, "CODE_%d" % self.code)

    @property
    def is_error(self) -> bool:
        """The device reports it cannot sample (NO_PROFILE, BAD_PROFILE, CONFIG, CRASH)."""
        return self.code in ERROR_CODES


@dataclass(frozen=True)
class SealedData:
    """A DATA run as the Deframer leaves it: COBS-decoded, CRC not checked yet. DATA's CRC is
    seeded by its session, which only the line's latest HELLO tells; `open` checks it."""

    body: bytes
    crc: int  # as stored after the body

    def open(self, session: bytes) -> Data:
        """The Data, if its CRC matches under `session` (28 bytes, `Hello.session`); else
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
        # the version first: a HELLO of another protocol has another length too
        if n >= 2 and body[1] != PROTOCOL:
            raise FrameError("version", "protocol version %d (this host reads %d)"
                             % (body[1], PROTOCOL))
        if n != HELLO_LEN:
            raise FrameError("malformed", "HELLO of %d bytes (expected %d)" % (n, HELLO_LEN))
        boot, = struct.unpack_from("<I", body, 21)
        next_seq, bits, batch = struct.unpack_from("<IBH", body, 33)
        return Hello(flags=flags, protocol=body[1], firmware=tuple(body[2:5]),
                     device_id=bytes(body[5:13]), fingerprint=bytes(body[13:21]), boot=boot,
                     nonce=bytes(body[25:33]), next_seq=next_seq, bits=bits, batch=batch)
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
        ticks, frames_dropped, replaced, clamped = struct.unpack_from("<IIII", body, 2)
        message = bytes(body[STATUS_HEADER:]).decode("utf-8", errors="replace")
        return Status(flags=flags, code=code, ticks=ticks, frames_dropped=frames_dropped,
                      replaced=replaced, clamped=clamped, message=message)
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
    if flags & ~(FLAG_VECTOR | FLAG_DEBUG):
        raise FrameError("encode", "only the VECTOR (0x10) and DEBUG (0x20) flags may be set")
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
                 nonce=bytes(NONCE_LEN), next_seq: int = 0, firmware=(0, 1, 0),
                 flags: int = 0, protocol: int = PROTOCOL) -> bytes:
    """A HELLO as written by a device: 0x00, COBS(body || CRC), 0x00. `next_seq`: the u32
    sequence number of the boot's next DATA frame (= DATA frames sent so far this boot)."""
    _check_flags(flags)
    fw = tuple(firmware)
    if len(fw) != 3:
        raise FrameError("encode", "firmware is (major, minor, patch)")
    for part in fw:
        _check_int("firmware", part, 0, 255)
    body = struct.pack("<BB3B8s8sI8sIBH", TYPE_HELLO | flags,
                       _check_int("protocol", protocol, 0, 255), *fw,
                       _bytes8("device_id", device_id), _bytes8("fingerprint", fingerprint),
                       _check_int("boot", boot, 0, MAX_SEQ32), _bytes8("nonce", nonce),
                       _check_int("next_seq", next_seq, 0, MAX_SEQ32),
                       _check_int("bits", bits, 0, MAX_BITS),
                       _check_int("batch", batch, 1, MAX_COUNT))
    return frame_body(body, leading=True)


def encode_data(*, seq: int, bits: int, reports: List[int], session: bytes,
                flags: int = 0) -> bytes:
    """One DATA frame (no leading delimiter) with the u32 sequence number `seq` (its low 16
    bits travel), its CRC seeded by `session` (28 bytes: `session_bytes(...)` or
    `Hello.session` of the boot that sends it)."""
    _check_flags(flags)
    session = bytes(session)
    if len(session) != SESSION_LEN:
        raise FrameError("encode", "a session is %d bytes, got %d" % (SESSION_LEN, len(session)))
    values = list(reports)
    _check_int("count", len(values), 1, MAX_COUNT)
    body = struct.pack("<BHB", TYPE_DATA | flags,
                       _check_int("seq", seq, 0, MAX_SEQ32) & MAX_SEQ,
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


def encode_status(*, code: int, ticks: int = 0, frames_dropped: int = 0, replaced: int = 0,
                  clamped: int = 0, message="", flags: int = 0) -> bytes:
    """A STATUS as written by a device (leading 0x00); counters wrap at 2^32, the message is
    cut to 200 bytes at a character boundary, as the device does. (A private build sends
    replaced = clamped = 0; the encoder does not enforce it, the vectors pin both.)"""
    _check_flags(flags)
    msg = message.encode("utf-8") if isinstance(message, str) else bytes(message)
    counters = (("ticks", ticks), ("frames_dropped", frames_dropped), ("replaced", replaced),
                ("clamped", clamped))
    for name, v in counters:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise FrameError("encode", "%s must be a non-negative integer" % name)
    body = struct.pack("<BBIIII", TYPE_STATUS | flags, _check_int("code", code, 0, 255),
                       *(v & MAX_SEQ32 for _, v in counters))
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
        return reports.floats_from_offsets(self.profile, self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)


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
        if not isinstance(profile, Profile):
            raise TypeError("profiles are zeal.profile.Profile objects")
        self._profiles[fingerprint_key(profile)] = profile

    @property
    def rejected(self) -> Counter:
        return self.deframer.rejected + self._rejected

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
            d = parse_body(body)  # reserved_flags, malformed
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
            d = parse_body(body)
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
                     debug=d.debug, lost_before=gap, payload=d.payload, crc=crc)
