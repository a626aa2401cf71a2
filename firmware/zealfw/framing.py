# The wire protocol's names and set-up, off the sampling path (protocol 2,
# shared_spec/wire_format.md): the constants, the id/fingerprint/nonce helpers and the
# Sender's construction (argument checks, the session CRC, buffers sized once). zealfw.frames
# keeps only what runs while sampling and forwards every other name here (its module
# __getattr__), so `frames.STATUS_STOPPED` or `frames.device_id8` still work for tests and the
# conformance runner. zealfw.build frees this module before sampling: the names it defines
# cost heap only while a Sender is made.
#
# Runs unchanged under CPython (the tests do) and the MicroPython unix port. No asserts: bad
# arguments raise ValueError.
import binascii
import struct

PROTOCOL = 2
TYPE_HELLO = 1
TYPE_DATA = 2
TYPE_STATUS = 3
FLAG_VECTOR = 0x10
FLAG_DEBUG = 0x20

HELLO_LEN = 40
DATA_HEADER = 4
STATUS_HEADER = 18
MAX_MESSAGE = 200
MAX_COUNT = 255
MAX_BITS = 52
CRC_LEN = 4
NONCE_LEN = 8
# device id (8) || fingerprint (8) || boot (u32 LE) || nonce (8): HELLO bytes 5..32
SESSION_LEN = 28
MAX_BODY = 1662  # DATA_HEADER + ceil(MAX_COUNT * MAX_BITS / 8)

STATUS_OK = 0
STATUS_NO_PROFILE = 1
STATUS_BAD_PROFILE = 2
STATUS_SENSOR = 3   # debug build only
STATUS_STOPPED = 4
STATUS_CONFIG = 5
STATUS_CRASH = 6
STATUS_HELD = 7

FIRMWARE = (0, 1, 0)

WRITE_TIMEOUT_MS = 250  # default: a frame not taken in this time is dropped


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


def init_sender(s, stream, bits, batch, device_id, fingerprint, boot, nonce, firmware,
                hello_every, vector, debug, write_timeout_ms, idle):
    """Sender.__init__ (see zealfw.frames.Sender): checks, the HELLO made once, buffers."""
    s.stream = stream
    s.bits = _int_in("bits", bits, 0, MAX_BITS)
    s.batch = _int_in("batch", batch, 1, MAX_COUNT)
    s.hello_every = _int_in("hello_every", hello_every, 0, 0xFFFF)
    _int_in("boot", boot, 0, 0xFFFFFFFF)
    nonce = bytes(NONCE_LEN) if nonce is None else bytes(nonce)
    if len(nonce) != NONCE_LEN:
        raise ValueError("nonce must be 8 bytes")
    if len(firmware) != 3:
        raise ValueError("firmware is (major, minor, patch)")
    for part in firmware:
        _int_in("firmware", part, 0, 255)
    s.flags = (FLAG_VECTOR if vector else 0) | (FLAG_DEBUG if debug else 0)
    s.write_timeout_ms = _int_in("write_timeout_ms", write_timeout_ms, 0, 0x3FFFFFFF)
    s.idle = idle
    session = session_bytes(device_id8(device_id if device_id is not None else b""),
                            fingerprint8(fingerprint), boot, nonce)
    # DATA's CRC starts from this (the session of this boot's HELLO); HELLO and STATUS from 0.
    # Fixed for the Sender's life, as is every HELLO byte but next_seq (33..36): the HELLO
    # is made here, in a buffer of its own, and hello() only packs next_seq into it.
    s._crc0 = binascii.crc32(session)
    s._mask = (1 << bits) - 1
    hello = bytearray(HELLO_LEN + CRC_LEN)
    struct.pack_into("<BBBBB", hello, 0, TYPE_HELLO | s.flags, PROTOCOL, firmware[0],
                     firmware[1], firmware[2])
    hello[5:33] = session
    struct.pack_into("<BH", hello, 37, bits, batch)
    s._hello = hello
    # DATA packs reports into _body over many add() calls, so a STATUS sent meanwhile must
    # not touch it; it uses _ctl.
    ctl_max = STATUS_HEADER + MAX_MESSAGE
    body_max = data_body_length(batch, bits) if bits else 0
    s._body = bytearray(body_max + CRC_LEN)
    s._ctl = bytearray(ctl_max + CRC_LEN)
    # leading 0x00, the encoding, the closing 0x00
    s._enc = bytearray(max_encoded_length(max(body_max, ctl_max) + CRC_LEN) + 2)
    s.seq = 0             # u32 sequence number of the next DATA frame (u16 on the wire)
    s.sent = 0            # reports in DATA frames made since boot
    s.frames = 0          # frames written whole
    s.frames_dropped = 0  # frames the stream would not take in time
    s._cut = False        # the last frame was cut short: resync with a leading 0x00
    s._count = 0
    s._bitpos = 0
    s._since_hello = 0
