# Wire frames, device side, protocol 2 (shared_spec/wire_format.md):
#
#     frame = COBS(body || CRC LE) || 0x00      HELLO and STATUS: one 0x00 before too
#     CRC   = crc32(body)                      HELLO, STATUS
#     CRC   = crc32(body, crc32(session))      DATA; session = device id || fingerprint ||
#                                                      boot || nonce (HELLO bytes 5..32)
#
# Seeding DATA's CRC with the 28-byte session binds every DATA frame to the HELLO that
# announced its profile and its boot's random nonce, at zero bytes of cost. The session's CRC
# is computed once, in Sender.__init__.
#
# A Sender owns every buffer it needs, sized once for its bits and batch; the per-report path
# (`add`) only ORs bits into a preallocated bytearray and, for m <= 30, touches small ints
# only. `add` never writes: a full batch waits until the caller's `flush()` (the main loop
# calls it at the start of the next sampling tick, so when a frame leaves depends on the
# tick schedule, not on how long a reading took). Per frame a memoryview slice is allocated
# (and, where ints are 31-bit, the CRC as a big int); nothing per report.
#
# Bounded writes: a frame the stream will not take within `write_timeout_ms` (writes that
# return 0, or None as a MicroPython UART does on its own timeout) is dropped and counted in
# `frames_dropped`; `idle` (e.g. the watchdog's feed) is called while waiting. After a frame
# was cut short, the next frame gets a leading 0x00 so the host resynchronises there.
#
# COBS is hand-written: MicroPython has no cobs module and micropython-lib has none either.
# The encoding is the canonical one of the `cobs` Python package the host uses (a final block
# of 254 non-zero bytes gets code 0xFF and no further code byte); vectors pin it down.
#
# Runs unchanged under CPython (the tests do) and the MicroPython unix port. No int.bit_length,
# no stepped slices, no asserts: bad arguments raise ValueError.
try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


import binascii
import struct

try:
    from time import sleep_ms, ticks_diff, ticks_ms
except ImportError:  # CPython (tests, the conformance runner)
    import time as _time

    def ticks_ms():
        return int(_time.monotonic() * 1000)

    def ticks_diff(a, b):
        return a - b

    def sleep_ms(ms):
        _time.sleep(ms / 1000)

PROTOCOL = const(2)
TYPE_HELLO = const(1)
TYPE_DATA = const(2)
TYPE_STATUS = const(3)
FLAG_VECTOR = const(0x10)
FLAG_DEBUG = const(0x20)

HELLO_LEN = const(40)
DATA_HEADER = const(4)
STATUS_HEADER = const(18)
MAX_MESSAGE = const(200)
MAX_COUNT = const(255)
MAX_BITS = const(52)
CRC_LEN = const(4)
NONCE_LEN = const(8)
# device id (8) || fingerprint (8) || boot (u32 LE) || nonce (8): HELLO bytes 5..32
SESSION_LEN = const(28)
MAX_BODY = const(1662)  # DATA_HEADER + ceil(MAX_COUNT * MAX_BITS / 8)
_U32 = const(0xFFFFFFFF)

STATUS_OK = const(0)
STATUS_NO_PROFILE = const(1)
STATUS_BAD_PROFILE = const(2)
STATUS_SENSOR = const(3)   # debug build only
STATUS_STOPPED = const(4)
STATUS_CONFIG = const(5)
STATUS_CRASH = const(6)
STATUS_HELD = const(7)

FIRMWARE = (0, 1, 0)

WRITE_TIMEOUT_MS = const(250)  # default: a frame not taken in this time is dropped


def nonce_of(key):
    """The session nonce of a generator key: SHA-256(b"zeal-nonce" || key)[:8]. Public: the
    key is fresh every boot, and SHA-256 of it says nothing about the words it generates
    (those hash b"zeal-ctr" || key || counter)."""
    import hashlib

    h = hashlib.sha256(b"zeal-nonce")
    h.update(bytes(key))
    return h.digest()[:NONCE_LEN]


def max_encoded_length(n):
    """Largest COBS encoding of n bytes, delimiter not included: 1 byte per started 254."""
    if n <= 0:
        return 1
    return n + 1 + (n - 1) // 254


def data_body_length(count, bits):
    return DATA_HEADER + (count * bits + 7) // 8


def session_bytes(device_id, fingerprint, boot, nonce):
    """The 28 bytes that seed DATA's CRC: HELLO bytes 5..32 (ids and nonce already 8 bytes)."""
    return bytes(device_id) + bytes(fingerprint) + struct.pack("<I", boot) + bytes(nonce)


def cobs_encode_into(src, n, dst, start):
    """COBS-encode src[0:n] into dst from index start; return the index after the last byte.

    dst must hold max_encoded_length(n) bytes from start. Canonical form: a block is closed
    by a zero in the input (code = 1 + its length) or after 254 non-zero bytes (code 0xFF,
    no zero implied); after a 0xFF block a new block is opened only if input remains.
    """
    code_at = start
    out = start + 1
    code = 1
    i = 0
    while i < n:
        b = src[i]
        i += 1
        if b == 0:
            dst[code_at] = code
            code_at = out
            out += 1
            code = 1
        else:
            dst[out] = b
            out += 1
            code += 1
            if code == 0xFF:
                dst[code_at] = 0xFF
                if i == n:
                    return out
                code_at = out
                out += 1
                code = 1
    dst[code_at] = code
    return out


def device_id8(uid):
    """machine.unique_id() -> 8 bytes: zero-padded when shorter, else SHA-256-truncated."""
    uid = bytes(uid)
    if len(uid) <= 8:
        return uid + bytes(8 - len(uid))
    import hashlib

    return hashlib.sha256(uid).digest()[:8]


def fingerprint8(fp):
    """A profile fingerprint (64 hex digits, or bytes) -> its first 8 bytes; None -> zeros."""
    if fp is None:
        return bytes(8)
    if isinstance(fp, str):
        if len(fp) < 16:
            raise ValueError("fingerprint: need at least 16 hex digits")
        try:
            return binascii.unhexlify(fp[:16])
        except ValueError:
            raise ValueError("fingerprint is not hex")
    fp = bytes(fp)
    if len(fp) < 8:
        raise ValueError("fingerprint: need at least 8 bytes")
    return fp[:8]


def truncate_utf8(data, limit):
    """At most limit bytes, cut at a UTF-8 character boundary."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut]


def _int_in(name, v, lo, hi):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise ValueError("%s must be an integer in [%d, %d]" % (name, lo, hi))
    return v


class Sender:
    """Frames and writes HELLO, DATA and STATUS to `stream` (anything with .write(buf)).

    bits: m, 1..52 (0: no valid profile; then only HELLO and STATUS can be sent)
    batch: reports per DATA frame, 1..255; hello_every: a HELLO after every this many DATA
    frames (0: only when hello() is called); nonce: this boot's 8-byte session nonce;
    vector / debug: set the VECTOR / DEBUG flag on every frame; write_timeout_ms: a frame the
    stream has not taken after this long is dropped (counted in frames_dropped); idle: called
    while a write waits (the main loop passes the watchdog's feed).
    """

    def __init__(self, stream, bits, *, batch=64, device_id=None, fingerprint=None, boot=0,
                 nonce=None, firmware=FIRMWARE, hello_every=16, vector=False, debug=False,
                 write_timeout_ms=WRITE_TIMEOUT_MS, idle=None):
        self.stream = stream
        self.bits = _int_in("bits", bits, 0, MAX_BITS)
        self.batch = _int_in("batch", batch, 1, MAX_COUNT)
        self.hello_every = _int_in("hello_every", hello_every, 0, 0xFFFF)
        self.boot = _int_in("boot", boot, 0, _U32)
        self.device_id = device_id8(device_id if device_id is not None else b"")
        self.fingerprint = fingerprint8(fingerprint)
        nonce = bytes(NONCE_LEN) if nonce is None else bytes(nonce)
        if len(nonce) != NONCE_LEN:
            raise ValueError("nonce must be 8 bytes")
        self.nonce = nonce
        if len(firmware) != 3:
            raise ValueError("firmware is (major, minor, patch)")
        for part in firmware:
            _int_in("firmware", part, 0, 255)
        self.firmware = tuple(firmware)
        self.flags = (FLAG_VECTOR if vector else 0) | (FLAG_DEBUG if debug else 0)
        self.write_timeout_ms = _int_in("write_timeout_ms", write_timeout_ms, 0, 0x3FFFFFFF)
        self.idle = idle
        # DATA's CRC starts from this (the session of this boot's HELLO); HELLO and STATUS
        # start from 0. Fixed for the Sender's life: device id, fingerprint, boot and nonce are.
        self._session_crc = binascii.crc32(
            session_bytes(self.device_id, self.fingerprint, self.boot, self.nonce))
        self._mask = (1 << bits) - 1
        # Two bodies: DATA packs reports into _body over many add() calls, so a HELLO or
        # STATUS sent meanwhile must not touch it; they use _ctl.
        ctl_max = STATUS_HEADER + MAX_MESSAGE
        body_max = data_body_length(self.batch, bits) if bits else 0
        self._body = bytearray(body_max + CRC_LEN)
        self._ctl = bytearray(ctl_max + CRC_LEN)
        # leading 0x00, the encoding, the closing 0x00
        self._enc = bytearray(max_encoded_length(max(body_max, ctl_max) + CRC_LEN) + 2)
        self._body_mv = memoryview(self._body)
        self._ctl_mv = memoryview(self._ctl)
        self._enc_mv = memoryview(self._enc)
        self.seq = 0             # u32 sequence number of the next DATA frame (u16 on the wire)
        self.sent = 0            # reports in DATA frames made since boot
        self.frames = 0          # frames written whole
        self.frames_dropped = 0  # frames the stream would not take in time
        self._cut = False        # the last frame was cut short: resync with a leading 0x00
        self._count = 0
        self._bitpos = 0
        self._since_hello = 0

    @property
    def vector(self):
        return bool(self.flags & FLAG_VECTOR)

    @property
    def debug(self):
        return bool(self.flags & FLAG_DEBUG)

    @property
    def pending(self):
        """Reports packed but not yet sent."""
        return self._count

    @property
    def full(self):
        """A whole batch is packed and waits for flush()."""
        return self._count >= self.batch

    # ---- output ---------------------------------------------------------------------------
    def _emit(self, body, mv, n, leading, seed):
        """CRC body[0:n] (mv: its memoryview) from `seed`, COBS it and write the frame."""
        struct.pack_into("<I", body, n, binascii.crc32(mv[:n], seed) & _U32)
        enc = self._enc
        enc[0] = 0
        end = cobs_encode_into(body, n + CRC_LEN, enc, 1)
        enc[end] = 0
        self._write(0 if leading or self._cut else 1, end + 1)

    def _write(self, start, end):
        """Write enc[start:end] within write_timeout_ms, or drop the frame (counted)."""
        mv = self._enc_mv
        first = start
        t0 = None
        while start < end:
            r = self.stream.write(mv[start:end])
            if r is None or r <= 0:
                # Nothing taken: None is a MicroPython UART's own timeout, 0 a full buffer
                # (USB-CDC with no host reading). Wait, feeding the watchdog, up to the bound.
                if t0 is None:
                    t0 = ticks_ms()
                elif ticks_diff(ticks_ms(), t0) >= self.write_timeout_ms:
                    self.frames_dropped += 1
                    if start > first:  # part of it went out: resync before the next frame
                        self._cut = True
                    return False
                if self.idle is not None:
                    self.idle()
                sleep_ms(1)
                continue
            t0 = None
            start += r
        self.frames += 1
        self._cut = False
        return True

    # ---- frames ---------------------------------------------------------------------------
    def hello(self):
        b = self._ctl
        fw = self.firmware
        struct.pack_into("<BBBBB", b, 0, TYPE_HELLO | self.flags, PROTOCOL, fw[0], fw[1], fw[2])
        b[5:13] = self.device_id
        b[13:21] = self.fingerprint
        struct.pack_into("<I", b, 21, self.boot)
        b[25:33] = self.nonce
        struct.pack_into("<IBH", b, 33, self.seq & _U32, self.bits, self.batch)
        self._emit(b, self._ctl_mv, HELLO_LEN, True, 0)
        self._since_hello = 0

    def status(self, code, message=b"", *, ticks=0, replaced=0, clamped=0):
        """A STATUS: code, ticks since boot, this sender's frames_dropped, the replaced and
        clamped counters (the caller passes 0 unless this is a debug build), a message."""
        _int_in("code", code, 0, 255)
        for v in (ticks, replaced, clamped):
            if not isinstance(v, int) or v < 0:
                raise ValueError("counters are non-negative integers")
        if isinstance(message, str):
            message = message.encode("utf-8")
        message = truncate_utf8(bytes(message), MAX_MESSAGE)
        b = self._ctl
        struct.pack_into("<BBIIII", b, 0, TYPE_STATUS | self.flags, code, ticks & _U32,
                         self.frames_dropped & _U32, replaced & _U32, clamped & _U32)
        n = STATUS_HEADER + len(message)
        b[STATUS_HEADER:n] = message
        self._emit(b, self._ctl_mv, n, True, 0)

    def add(self, low):
        """Pack one report's low m bits; returns True when the batch is now full.

        A full batch is sent by flush(); an add() to a full batch flushes it first.
        """
        m = self.bits
        if m == 0:
            raise ValueError("no valid profile: DATA cannot be sent")
        if not isinstance(low, int) or low < 0 or low > self._mask:
            raise ValueError("a report is an integer of %d bits" % m)
        if self._count >= self.batch:
            self.flush()
        b = self._body
        p = self._bitpos
        i = DATA_HEADER + (p >> 3)
        s = p & 7
        # first (maybe shared) byte: OR in the low 8-s bits; shifts stay below 256
        if s:
            b[i] |= (low & (0xFF >> s)) << s
        else:
            b[i] = low & 0xFF
        left = m - 8 + s
        low >>= 8 - s
        # whole bytes are written fresh, so earlier contents need no clearing and the unused
        # high bits of the last byte stay 0 (the padding the host checks)
        while left > 0:
            i += 1
            b[i] = low & 0xFF
            low >>= 8
            left -= 8
        self._bitpos = p + m
        self._count += 1
        return self._count >= self.batch

    def add_k(self, k):
        """Pack a mantissa k (only its low m bits travel)."""
        return self.add(k & self._mask)

    def flush(self):
        """Send the packed reports (a short batch if fewer than `batch`) as one DATA frame,
        then a HELLO if hello_every DATA frames went out since the last. True if a DATA frame
        was made (written, or dropped by a stalled stream: its sequence number is used)."""
        count = self._count
        if not count:
            return False
        struct.pack_into("<BHB", self._body, 0, TYPE_DATA | self.flags, self.seq & 0xFFFF, count)
        self._emit(self._body, self._body_mv, data_body_length(count, self.bits), False,
                   self._session_crc)
        self.seq = (self.seq + 1) & _U32
        self.sent += count
        self._count = 0
        self._bitpos = 0
        self._since_hello += 1
        if self.hello_every and self._since_hello >= self.hello_every:
            self.hello()
        return True
