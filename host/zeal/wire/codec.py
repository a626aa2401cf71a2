"""Wire frames from a device, protocol 2 (shared_spec/wire_format.md): COBS(body || CRC-32) || 0x00.

The codec: constants, frame types, pure encode/decode functions. The stream layers are
zeal.wire.deframer (Deframer) and zeal.wire.decoder (Decoder); `zeal.wire` re-exports all three.

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
import struct
import zlib
from dataclasses import dataclass
from typing import Iterable, List, Tuple, Union

import numpy as np
from cobs import cobs as _cobs

from ..errors import ZealError
from .bits import pack_bits

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
class _Flagged:
    """The flag bits every frame body carries in byte 0 (`flags`)."""

    @property
    def vector(self) -> bool:
        return bool(self.flags & FLAG_VECTOR)

    @property
    def debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)


@dataclass(frozen=True)
class Hello(_Flagged):
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
    def has_profile(self) -> bool:
        return any(self.fingerprint)

    @property
    def session(self) -> bytes:
        """The 28 bytes (device id, fingerprint, boot, nonce) that seed the CRC of this
        boot's DATA: HELLO bytes 5..32."""
        return self.device_id + self.fingerprint + struct.pack("<I", self.boot) + self.nonce


@dataclass(frozen=True)
class Data(_Flagged):
    flags: int
    seq: int  # the u16 on the wire
    count: int
    payload: bytes


@dataclass(frozen=True)
class Status(_Flagged):
    flags: int
    code: int
    ticks: int           # sampling ticks since boot (public)
    frames_dropped: int  # frames the output would not take in time (public)
    replaced: int        # readings replaced by the public value: 0 unless DEBUG
    clamped: int         # readings clamped to [lo, hi]: 0 unless DEBUG
    message: str

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


def parse_body(body: bytes, *, variable: bool = False) -> Frame:
    """A CRC-checked body (plain for HELLO/STATUS, seeded for DATA) -> Hello | Data | Status,
    or FrameError. variable: DATA of a session whose HELLO announced bits = 0 (a multi
    profile's variable-length reports, multi.md): any body up to MAX_BODY, whatever its count
    (the decoder checks its length against the reports it holds)."""
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
        if n > (MAX_BODY if variable else data_body_length(count, MAX_BITS)):
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
    """count m-bit integers, least-significant bit first: each checked (an exact Python int
    in range), then packed by bits.pack_bits."""
    _check_int("bits", bits, 1, MAX_BITS)
    values = [_check_int("report", v, 0, (1 << bits) - 1) for v in values]
    return pack_bits(np.array(values, dtype=np.uint64), bits)


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


def encode_data_payload(*, seq: int, count: int, payload: bytes, session: bytes,
                        flags: int = 0) -> bytes:
    """One DATA frame around a payload packed elsewhere (a multi profile's variable-length
    reports: zeal.mechanism.multi.profile.pack_multi), as encode_data frames it."""
    _check_flags(flags)
    session = bytes(session)
    if len(session) != SESSION_LEN:
        raise FrameError("encode", "a session is %d bytes, got %d" % (SESSION_LEN, len(session)))
    _check_int("count", count, 1, MAX_COUNT)
    body = struct.pack("<BHB", TYPE_DATA | flags, _check_int("seq", seq, 0, MAX_SEQ32) & MAX_SEQ,
                       count) + bytes(payload)
    if len(body) > MAX_BODY:
        raise FrameError("encode", "a DATA body of %d bytes is above MAX_BODY (%d)"
                         % (len(body), MAX_BODY))
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
    used = count * bits
    if used <= SMALL_PAYLOAD_BITS:
        return np.array(unpack_small(payload, count, bits), dtype=np.uint64)
    flat = np.unpackbits(np.frombuffer(payload, dtype=np.uint8), bitorder="little")
    if flat[used:].any():
        raise FrameError("padding", "non-zero padding bits after the last report")
    grid = flat[:used].reshape(count, bits).astype(np.uint64)
    return (grid << np.arange(bits, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


# A frame of at most this many payload bits is unpacked with Python integers: numpy's cost
# per call (about 10 us) is most of a small frame's decoding, and a collector decodes each
# frame on its own. Above it, shifting one big integer costs more than numpy.
SMALL_PAYLOAD_BITS = 1024


def unpack_small(payload: bytes, count: int, bits: int) -> list:
    """unpack_reports for a payload of the right length (checked by the caller), as a list of
    ints: the same values, the same 'padding' refusal."""
    v = int.from_bytes(payload, "little")
    if v >> (count * bits):
        raise FrameError("padding", "non-zero padding bits after the last report")
    mask = (1 << bits) - 1
    return [(v >> (i * bits)) & mask for i in range(count)]


# ---- names -------------------------------------------------------------------------------------
def device_name(device_id: bytes) -> str:
    """A device id as people read it: its text when the id (without the zero padding HELLO
    adds) is printable ASCII, e.g. "demo-000", else its 16 hex digits."""
    raw = bytes(device_id)
    text = raw.rstrip(b"\0")
    if text and all(0x20 < c < 0x7f for c in text):
        return text.decode("ascii")
    return raw.hex()
