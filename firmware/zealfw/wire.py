# Wire frames, device side, protocol 2 (shared_spec/wire_format.md): what runs while sampling.
#
#     frame = COBS(body || CRC LE) || 0x00      HELLO and STATUS: one 0x00 before too
#     CRC   = crc32(body)                      HELLO, STATUS
#     CRC   = crc32(body, crc32(session))      DATA; session = device id || fingerprint ||
#                                                      boot || nonce (HELLO bytes 5..32)
#
# Seeding DATA's CRC with the 28-byte session binds every DATA frame to the HELLO that
# announced its profile and its boot's random nonce, at zero bytes of cost.
#
# Heap: this module stays loaded while sampling, so it holds the per-frame code only. The
# Sender's construction (checks, the session CRC, the HELLO made once, buffers sized once) is
# in zealfw.wire_setup, which zealfw.build frees before sampling; the protocol's named constants
# are in zealfw.reference (tests, conformance runner import it).
# Constants here are `_NAME = const(...)`: inlined, no name kept.
#
# The per-report path (`add`) only ORs bits into a preallocated bytearray and, for m <= 30,
# touches small ints only. `add` never writes: a full batch waits until the caller's
# `flush()` (the main loop calls it at the start of the next sampling tick, so when a frame
# leaves depends on the tick schedule, not on how long a reading took). Per frame two
# memoryviews are made (and, where ints are 31-bit, the CRC as a big int); nothing per report.
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

_TYPE_DATA = const(2)          # wire_format.md: DATA, STATUS types; HELLO length; ...
_TYPE_STATUS = const(3)
_HELLO_LEN = const(40)
_DATA_HEADER = const(4)
_STATUS_HEADER = const(18)
_MAX_MESSAGE = const(200)
_CRC_LEN = const(4)
_U32 = const(0xFFFFFFFF)


def cobs_encode_into(src, n, out, start):
    """COBS-encode src[0:n] into out from index start; return the index after the last byte.

    out must hold max_encoded_length(n) bytes from start. Canonical form: a block is closed
    by a zero in the input (code = 1 + its length) or after 254 non-zero bytes (code 0xFF,
    no zero implied); after a 0xFF block a new block is opened only if input remains.
    """
    code_at = start
    at = start + 1
    code = 1
    i = 0
    while i < n:
        b = src[i]
        i += 1
        if b == 0:
            out[code_at] = code
            code_at = at
            at += 1
            code = 1
        else:
            out[at] = b
            at += 1
            code += 1
            if code == 0xFF:
                out[code_at] = 0xFF
                if i == n:
                    return at
                code_at = at
                at += 1
                code = 1
    out[code_at] = code
    return at


class Sender:
    """Frames and writes HELLO, DATA and STATUS to `stream` (anything with .write(buf)).

    bits: m, 1..52 (0: no valid profile; then only HELLO and STATUS can be sent)
    batch: reports per DATA frame, 1..255; hello_every: a HELLO after every this many DATA
    frames (0: only when hello() is called); nonce: this boot's 8-byte session nonce;
    vector / debug: set the VECTOR / DEBUG flag on every frame; write_timeout_ms: a frame the
    stream has not taken after this long is dropped (counted in frames_dropped); idle: called
    while a write waits (the main loop passes the watchdog's feed).
    Read while sampling: seq (next DATA frame's u32 number), sent (reports sent), frames,
    frames_dropped.
    """

    def __init__(self, stream, bits, *, batch=64, device_id=None, fingerprint=None, boot=0,
                 nonce=None, firmware=(0, 1, 0), hello_every=16, vector=False, debug=False,
                 write_timeout_ms=250, idle=None):
        from .wire_setup import init_sender  # set-up code, freed before sampling

        init_sender(self, stream, bits, batch, device_id, fingerprint, boot, nonce, firmware,
                    hello_every, vector, debug, write_timeout_ms, idle)

    def _emit(self, b, n, seed):
        """CRC b[0:n] from `seed` (None: 0, and a leading 0x00 as HELLO and STATUS have),
        COBS it and write the frame."""
        start = 0 if seed is None or self._cut else 1
        struct.pack_into("<I", b, n, binascii.crc32(memoryview(b)[:n], seed or 0) & _U32)
        enc = self._enc
        enc[0] = 0
        end = cobs_encode_into(b, n + _CRC_LEN, enc, 1)
        enc[end] = 0
        # Write enc[start:end + 1] within write_timeout_ms, or drop the frame (counted).
        mv = memoryview(enc)
        end += 1
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
                    return
                if self.idle is not None:
                    self.idle()
                sleep_ms(1)
                continue
            t0 = None
            start += r
        self.frames += 1
        self._cut = False

    def hello(self):
        """HELLO (made at construction): only next_seq changes."""
        struct.pack_into("<I", self._hello, 33, self.seq & _U32)
        self._emit(self._hello, _HELLO_LEN, None)
        self._since_hello = 0

    def status(self, code, message=b"", *, ticks=0, replaced=0, clamped=0):
        """A STATUS: code, ticks since boot, this sender's frames_dropped, the replaced and
        clamped counters (the caller passes 0 unless this is a debug build), a message (at
        most 200 bytes, cut at a UTF-8 character boundary)."""
        if type(code) is not int or not 0 <= code <= 255:
            raise ValueError("code must be an integer in [0, 255]")
        for v in (ticks, replaced, clamped):
            if not isinstance(v, int) or v < 0:
                raise ValueError("counters are non-negative integers")
        if isinstance(message, str):
            message = message.encode("utf-8")
        n = len(message)
        if n > _MAX_MESSAGE:
            n = _MAX_MESSAGE
            while n > 0 and message[n] & 0xC0 == 0x80:
                n -= 1
        b = self._ctl
        struct.pack_into("<BBIIII", b, 0, _TYPE_STATUS | self.flags, code, ticks & _U32,
                         self.frames_dropped & _U32, replaced & _U32, clamped & _U32)
        b[_STATUS_HEADER:_STATUS_HEADER + n] = message[:n]
        self._emit(b, _STATUS_HEADER + n, None)

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
        i = _DATA_HEADER + (p >> 3)
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

    def flush(self, end=False):
        """Send the packed reports (a short batch if fewer than `batch`) as one DATA frame,
        then a HELLO if hello_every DATA frames went out since the last. True if a DATA frame
        was made (written, or dropped by a stalled stream: its sequence number is used).
        end: the stream's last flush, followed by a closing HELLO if DATA went out since
        the last HELLO (a collector that attached since then can still resolve the frames
        it kept: a "!hello" read just before "!stop" would otherwise go unanswered)."""
        count = self._count
        if not count:
            if end and self._since_hello:
                self.hello()
            return False
        b = self._body
        struct.pack_into("<BHB", b, 0, _TYPE_DATA | self.flags, self.seq & 0xFFFF, count)
        self._emit(b, _DATA_HEADER + (self._bitpos + 7) // 8, self._crc0)
        self.seq = (self.seq + 1) & _U32
        self.sent += count
        self._count = 0
        self._bitpos = 0
        self._since_hello += 1
        if end or self.hello_every and self._since_hello >= self.hello_every:
            self.hello()
        return True
