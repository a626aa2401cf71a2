# Wire frames, device side (shared_spec/wire_format.md):
#
#     frame = COBS(body || CRC LE) || 0x00      HELLO and STATUS: one 0x00 before too
#     CRC   = crc32(body)                      HELLO, STATUS
#     CRC   = crc32(body, crc32(session))      DATA; session = device id || fingerprint || boot
#
# The session is the 20 bytes at offsets 5..24 of this boot's HELLO: seeding DATA's CRC with
# it binds every DATA frame to the HELLO that announced its profile, at zero bytes of cost (a
# host that missed this boot's HELLO refuses its DATA as CRC errors instead of rebuilding it
# under the previous boot's profile). binascii.crc32(data, value) continues a running CRC, as
# zlib.crc32 does; the session's CRC is computed once, in Sender.__init__.
#
# A Sender owns every buffer it needs, sized once for its bits and batch; the per-report path
# (`add`) only ORs bits into a preallocated bytearray and, for m <= 30, touches small ints
# only. A full batch becomes one DATA frame: CRC via binascii.crc32, COBS into a second
# preallocated buffer, one write. Per frame a memoryview slice is allocated (and, where ints
# are 31-bit, the CRC as a big int); nothing per report.
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

PROTOCOL = const(1)
TYPE_HELLO = const(1)
TYPE_DATA = const(2)
TYPE_STATUS = const(3)
FLAG_VECTOR = const(0x10)

HELLO_LEN = const(28)
DATA_HEADER = const(4)
STATUS_HEADER = const(14)
MAX_MESSAGE = const(200)
MAX_COUNT = const(255)
MAX_BITS = const(52)
CRC_LEN = const(4)
SESSION_LEN = const(20)  # device id (8) || fingerprint (8) || boot (u32 LE): HELLO bytes 5..24
MAX_BODY = const(1662)  # DATA_HEADER + ceil(MAX_COUNT * MAX_BITS / 8)

STATUS_OK = const(0)
STATUS_NO_PROFILE = const(1)
STATUS_BAD_PROFILE = const(2)
STATUS_SENSOR = const(3)
STATUS_STOPPED = const(4)
STATUS_CONFIG = const(5)
STATUS_CRASH = const(6)

FIRMWARE = (0, 1, 0)

_WRITE_TRIES = const(1000)  # a stream that takes nothing this many times in a row: frame lost


def max_encoded_length(n):
    """Largest COBS encoding of n bytes, delimiter not included: 1 byte per started 254."""
    if n <= 0:
        return 1
    return n + 1 + (n - 1) // 254


def data_body_length(count, bits):
    return DATA_HEADER + (count * bits + 7) // 8


def session_bytes(device_id, fingerprint, boot):
    """The 20 bytes that seed DATA's CRC: HELLO bytes 5..24 (ids already 8 bytes each)."""
    return bytes(device_id) + bytes(fingerprint) + struct.pack("<I", boot)


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
    frames (0: only when hello() is called); vector: set the VECTOR flag on every frame.
    """

    def __init__(self, stream, bits, *, batch=64, device_id=None, fingerprint=None, boot=0,
                 firmware=FIRMWARE, hello_every=16, vector=False):
        self.stream = stream
        self.bits = _int_in("bits", bits, 0, MAX_BITS)
        self.batch = _int_in("batch", batch, 1, MAX_COUNT)
        self.hello_every = _int_in("hello_every", hello_every, 0, 0xFFFF)
        self.boot = _int_in("boot", boot, 0, 0xFFFFFFFF)
        self.device_id = device_id8(device_id if device_id is not None else b"")
        self.fingerprint = fingerprint8(fingerprint)
        if len(firmware) != 3:
            raise ValueError("firmware is (major, minor, patch)")
        for part in firmware:
            _int_in("firmware", part, 0, 255)
        self.firmware = tuple(firmware)
        self.flags = FLAG_VECTOR if vector else 0
        # DATA's CRC starts from this (the session of this boot's HELLO); HELLO and STATUS
        # start from 0. Fixed for the Sender's life: device id, fingerprint and boot are.
        self._session_crc = binascii.crc32(
            session_bytes(self.device_id, self.fingerprint, self.boot))
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
        self.seq = 0          # of the next DATA frame
        self.sent = 0         # reports in DATA frames written since boot
        self.frames = 0       # frames written
        self.write_errors = 0  # frames the stream would not take
        self._count = 0
        self._bitpos = 0
        self._since_hello = 0

    @property
    def vector(self):
        return bool(self.flags & FLAG_VECTOR)

    @property
    def pending(self):
        """Reports packed but not yet sent."""
        return self._count

    # ---- output ---------------------------------------------------------------------------
    def _emit(self, body, mv, n, leading, seed):
        """CRC body[0:n] (mv: its memoryview) from `seed`, COBS it and write the frame."""
        struct.pack_into("<I", body, n, binascii.crc32(mv[:n], seed) & 0xFFFFFFFF)
        enc = self._enc
        enc[0] = 0
        end = cobs_encode_into(body, n + CRC_LEN, enc, 1)
        enc[end] = 0
        self._write(0 if leading else 1, end + 1)
        self.frames += 1

    def _write(self, start, end):
        mv = self._enc_mv
        tries = 0
        while start < end:
            r = self.stream.write(mv[start:end])
            if r is None:
                # Streams that return nothing took it all (fakes, some stdout wrappers); a
                # MicroPython UART returns None on timeout having written nothing: the frame
                # is then lost whole, and the host counts the gap in the sequence numbers.
                return
            if r <= 0:
                tries += 1
                if tries >= _WRITE_TRIES:
                    self.write_errors += 1
                    return
                continue
            tries = 0
            start += r

    # ---- frames ---------------------------------------------------------------------------
    def hello(self):
        b = self._ctl
        fw = self.firmware
        struct.pack_into("<BBBBB", b, 0, TYPE_HELLO | self.flags, PROTOCOL, fw[0], fw[1], fw[2])
        b[5:13] = self.device_id
        b[13:21] = self.fingerprint
        struct.pack_into("<IBH", b, 21, self.boot, self.bits, self.batch)
        self._emit(b, self._ctl_mv, HELLO_LEN, True, 0)
        self._since_hello = 0

    def status(self, code, dropped=0, clamped=0, message=b""):
        """A STATUS with the counters since boot; `sent` is this sender's own count."""
        _int_in("code", code, 0, 255)
        if isinstance(message, str):
            message = message.encode("utf-8")
        message = truncate_utf8(bytes(message), MAX_MESSAGE)
        b = self._ctl
        struct.pack_into("<BBIII", b, 0, TYPE_STATUS | self.flags, code,
                         dropped & 0xFFFFFFFF, clamped & 0xFFFFFFFF, self.sent & 0xFFFFFFFF)
        n = STATUS_HEADER + len(message)
        b[STATUS_HEADER:n] = message
        self._emit(b, self._ctl_mv, n, True, 0)

    def add(self, low):
        """Append one report's low m bits; returns True when this made a DATA frame go out."""
        m = self.bits
        if m == 0:
            raise ValueError("no valid profile: DATA cannot be sent")
        if not isinstance(low, int) or low < 0 or low > self._mask:
            raise ValueError("a report is an integer of %d bits" % m)
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
        if self._count >= self.batch:
            self.flush()
            return True
        return False

    def add_k(self, k):
        """Append a mantissa k (only its low m bits travel)."""
        return self.add(k & self._mask)

    def flush(self):
        """Send the packed reports (a short batch if fewer than `batch`) as one DATA frame."""
        count = self._count
        if not count:
            return False
        struct.pack_into("<BHB", self._body, 0, TYPE_DATA | self.flags, self.seq, count)
        self._emit(self._body, self._body_mv, data_body_length(count, self.bits), False,
                   self._session_crc)
        self.seq = (self.seq + 1) & 0xFFFF
        self.sent += count
        self._count = 0
        self._bitpos = 0
        self._since_hello += 1
        if self.hello_every and self._since_hello >= self.hello_every:
            self.hello()
        return True
