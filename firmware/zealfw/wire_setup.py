# The Sender's set-up, off the sampling path (protocol 2, shared_spec/wire_format.md): the
# id/fingerprint/nonce helpers, the Sender's construction (argument checks, the session
# CRC, the HELLO made once, buffers sized once) and the start's error end (a HELLO without
# a profile and one STATUS). zealfw.wire keeps only what runs while
# sampling; zealfw.build frees this module before sampling. The protocol's named constants
# (STATUS_*, FLAG_*, MAX_BODY, FIRMWARE), which only tests and the conformance runner read,
# are in zealfw.reference.
#
# Runs unchanged under CPython (the tests do) and the MicroPython unix port. No asserts: bad
# arguments raise ValueError.
import binascii
import struct

try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


# Inlined constants only: every global name costs heap for good (its interned string),
# even after this module is freed. The named ones are in zealfw.reference.
_FLAG_VECTOR = const(0x10)
_FLAG_DEBUG = const(0x20)
_PROTOCOL = const(2)
_TYPE_HELLO = const(1)
_HELLO_LEN = const(40)
_DATA_HEADER = const(4)
_STATUS_HEADER = const(18)
_MAX_MESSAGE = const(200)
_MAX_COUNT = const(255)
_MAX_BITS = const(52)
_CRC_LEN = const(4)
_NONCE_LEN = const(8)


def nonce_of(key):
    """The session nonce of a generator key: SHA-256(b"zeal-nonce" || key)[:8]. Public: the
    key is fresh every boot, and SHA-256 of it says nothing about the words it generates
    (those hash b"zeal-ctr" || key || counter)."""
    import hashlib

    h = hashlib.sha256(b"zeal-nonce")
    h.update(bytes(key))
    return h.digest()[:_NONCE_LEN]


def max_encoded_length(n):
    """Largest COBS encoding of n bytes, delimiter not included: 1 byte per started 254."""
    if n <= 0:
        return 1
    return n + 1 + (n - 1) // 254


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


def stop_with_status(Sender, out, dev, debug, code, message):
    """A HELLO without a profile, then STATUS `code` with `message`: how the start ends when
    the board can send no data (CONFIG, NO_PROFILE, BAD_PROFILE). Sender: zealfw.wire's,
    given by the caller (this set-up module imports nothing of the sampling path's)."""
    sender = Sender(out, 0, device_id=dev, debug=debug)
    sender.hello()
    sender.status(code, message)
    if hasattr(out, "poll"):  # an MQTT board (zealfw.mqtt_out): publish them now
        out.close()


def _int_in(name, v, lo, hi):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise ValueError("%s must be an integer in [%d, %d]" % (name, lo, hi))
    return v


def init_sender(s, stream, bits, batch, device_id, fingerprint, boot, nonce, firmware,
                hello_every, vector, debug, write_timeout_ms, idle):
    """Sender.__init__ (see zealfw.wire.Sender): checks, the HELLO made once, buffers."""
    s.stream = stream
    s.bits = _int_in("bits", bits, 0, _MAX_BITS)
    s.batch = _int_in("batch", batch, 1, _MAX_COUNT)
    s.hello_every = _int_in("hello_every", hello_every, 0, 0xFFFF)
    _int_in("boot", boot, 0, 0xFFFFFFFF)
    nonce = bytes(_NONCE_LEN) if nonce is None else bytes(nonce)
    if len(nonce) != _NONCE_LEN:
        raise ValueError("nonce must be 8 bytes")
    if len(firmware) != 3:
        raise ValueError("firmware is (major, minor, patch)")
    for part in firmware:
        _int_in("firmware", part, 0, 255)
    s.flags = (_FLAG_VECTOR if vector else 0) | (_FLAG_DEBUG if debug else 0)
    s.write_timeout_ms = _int_in("write_timeout_ms", write_timeout_ms, 0, 0x3FFFFFFF)
    s.idle = idle
    # device id || fingerprint || boot || nonce: HELLO bytes 5..32
    session = (device_id8(device_id if device_id is not None else b"")
               + fingerprint8(fingerprint) + struct.pack("<I", boot) + nonce)
    # DATA's CRC starts from this (the session of this boot's HELLO); HELLO and STATUS from 0.
    # Fixed for the Sender's life, as is every HELLO byte but next_seq (33..36): the HELLO
    # is made here, in a buffer of its own, and hello() only packs next_seq into it.
    s._crc0 = binascii.crc32(session)
    s._mask = (1 << bits) - 1
    hello = bytearray(_HELLO_LEN + _CRC_LEN)
    struct.pack_into("<BBBBB", hello, 0, _TYPE_HELLO | s.flags, _PROTOCOL, firmware[0],
                     firmware[1], firmware[2])
    hello[5:33] = session
    struct.pack_into("<BH", hello, 37, bits, batch)
    s._hello = hello
    # DATA packs reports into _body over many add() calls, so a STATUS sent meanwhile must
    # not touch it; it uses _ctl.
    ctl_max = _STATUS_HEADER + _MAX_MESSAGE
    body_max = _DATA_HEADER + (batch * bits + 7) // 8
    s._body = bytearray(body_max + _CRC_LEN)
    s._ctl = bytearray(ctl_max + _CRC_LEN)
    # leading 0x00, the encoding, the closing 0x00
    s._enc = bytearray(max_encoded_length(max(body_max, ctl_max) + _CRC_LEN) + 2)
    s.seq = 0             # u32 sequence number of the next DATA frame (u16 on the wire)
    s.sent = 0            # reports in DATA frames made since boot
    s.frames = 0          # frames written whole
    s.frames_dropped = 0  # frames the stream would not take in time
    s._cut = False        # the last frame was cut short: resync with a leading 0x00
    s._count = 0
    s._bitpos = 0
    s._since_hello = 0
