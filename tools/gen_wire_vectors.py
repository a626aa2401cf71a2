#!/usr/bin/env python3
"""Write shared_spec/vectors/wire.json from the host's reference codec (zeal.wire).

Encode cases (target "both": the device encodes them, the host decodes them) give fields
and the exact bytes written; decode cases (target "host") give a byte stream and what a
Decoder knowing every profile of profiles.json must make of it. A hand-derived frame is
checked against the reference, and CRC-32 against an independent bitwise implementation:
if either disagrees, nothing is written.
Usage: python tools/gen_wire_vectors.py [--check]   (--check: exit 1 if the file is stale)
"""
import argparse
import hashlib
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from zeal.mechanism.grid import profile as P  # noqa: E402
from zeal.mechanism.grid import reports  # noqa: E402
from zeal import wire  # noqa: E402
from zeal.wire.conformance import decode_stream, encode_case  # noqa: E402

OUT = os.path.join(ROOT, "shared_spec", "vectors", "wire.json")
PROFILES = os.path.join(ROOT, "shared_spec", "vectors", "profiles.json")
VERSION = 2  # protocol 2: 40-byte HELLO (nonce, next_seq), 18-byte STATUS header

# ---- hand-derived: DATA seq=1, m = 4, reports [5, 10] ---------------------------------------
#   session = 01 02 03 04 05 06 07 08      device id
#             cd 5b 49 17 58 3d 31 22      fingerprint of profiles.json "hand" (first 8 bytes)
#             01 00 00 00                  boot 1
#             a1 a2 a3 a4 a5 a6 a7 a8      nonce
#            (the HELLO of vector "hello-hand", bytes 5..32)
#   body    = 02            type DATA, no flags
#             01 00         seq 1 (the low 16 bits of the u32 sequence number), little-endian
#             02            count 2
#             a5            report 0 = 5 = 0101b in bits 0-3, report 1 = 10 = 1010b in bits 4-7
#   CRC     = crc32(body, crc32(session)) = crc32(session || body)
#           = crc32(02 01 00 02 a5, 0xbe17a7d4) = 0x5f32381b -> little-endian: 1b 38 32 5f
#   COBS of 02 01 00 02 a5 1b 38 32 5f (one zero, at index 2):
#             block "02 01" closed by the zero  -> code 03
#             block "02 a5 1b 38 32 5f" to the end -> code 07
#   frame   = 03 02 01 07 02 a5 1b 38 32 5f 00                        (11 bytes)
HAND_SESSION = bytes.fromhex("0102030405060708" "cd5b4917583d3122" "01000000"
                             "a1a2a3a4a5a6a7a8")
HAND_SESSION_CRC = 0xBE17A7D4
HAND_BODY = bytes([0x02, 0x01, 0x00, 0x02, 0xA5])
HAND_CRC = 0x5F32381B
HAND_FRAME = "0302010702a51b38325f00"
HAND_DEVICE, HAND_BOOT, HAND_NONCE = "0102030405060708", 1, "a1a2a3a4a5a6a7a8"

TRACEBACK = (b"Traceback (most recent call last):\r\n"
             b"  File \"main.py\", line 42, in <module>\r\n"
             b"  File \"zealfw/sensors.py\", line 17, in read\r\n"
             b"OSError: [Errno 116] ETIMEDOUT\r\n"
             b"MicroPython v1.29.0 on 2026-07-05; Raspberry Pi Pico with RP2040\r\n"
             b"Type \"help()\" for more information.\r\n>>> ")
BOOT_LOG = (b"\x1b[0;32mI (29) boot: ESP-IDF v5.2.2 2nd stage bootloader\x1b[0m\r\n"
            b"MPY: soft reboot\r\n")


def crc32_bitwise(data: bytes) -> int:
    """CRC-32/ISO-HDLC, reflected polynomial 0xEDB88320, bit by bit (independent of zlib)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def check_hand(hand) -> None:
    session = wire.session_bytes(HAND_DEVICE, fp8(hand), HAND_BOOT, HAND_NONCE)
    if session != HAND_SESSION:
        raise SystemExit("hand case: session %s, hand gives %s" % (session.hex(),
                                                                 HAND_SESSION.hex()))
    if crc32_bitwise(HAND_SESSION) != HAND_SESSION_CRC \
            or wire.crc32(HAND_SESSION) != HAND_SESSION_CRC:
        raise SystemExit("hand case: session CRC-32 disagrees (bitwise %08x, zlib %08x)"
                         % (crc32_bitwise(HAND_SESSION), wire.crc32(HAND_SESSION)))
    # seeding with crc32(session) is the CRC of session || body: checked bit by bit too
    seeded = wire.crc32(HAND_BODY, HAND_SESSION_CRC)
    if crc32_bitwise(HAND_SESSION + HAND_BODY) != HAND_CRC or seeded != HAND_CRC:
        raise SystemExit("hand case: CRC-32 disagrees (bitwise %08x, zlib %08x, hand %08x)"
                         % (crc32_bitwise(HAND_SESSION + HAND_BODY), seeded, HAND_CRC))
    got = wire.encode_data(seq=1, bits=4, reports=[5, 10], session=HAND_SESSION).hex()
    if got != HAND_FRAME:
        raise SystemExit("hand case: reference gives %s, hand gives %s" % (got, HAND_FRAME))


# ---- helpers -----------------------------------------------------------------------------------
def load_profiles() -> dict:
    with open(PROFILES) as fh:
        doc = json.load(fh)
    return {c["id"]: P.from_dict(c["profile"]) for c in doc["cases"] if c["result"] == "valid"}


def grid_lows(prof, label: str, count: int, nonzero_bytes: bool = False) -> list:
    """`count` deterministic low values on the profile's grid: [2^m - 1 - N, 2^m - 2]."""
    lo = (1 << prof.bits) - 1 - prof.n_cells
    span = prof.n_cells
    out, i = [], 0
    while len(out) < count:
        h = hashlib.sha256(("zeal-wire:%s:%d" % (label, i)).encode()).digest()
        v = lo + int.from_bytes(h[:8], "little") % span
        i += 1
        if nonzero_bytes and v & 0xFF == 0:
            continue
        out.append(v)
    return out


def fp8(prof) -> str:
    return prof.fingerprint[:16]


def values_hex(prof, lows) -> list:
    return ["%016x" % reports.to_bits(prof, reports.from_low(prof, v)) for v in lows]


def body_frame(body: bytes, crc_delta: int = 0, session: bytes = b"") -> bytes:
    """A frame of any body; DATA bodies give the session that seeds their CRC."""
    crc = (wire.crc32(body, wire.crc32(session) if session else 0) + crc_delta) & 0xFFFFFFFF
    return wire.cobs_encode(body + struct.pack("<I", crc)) + b"\x00"


# ---- cases -------------------------------------------------------------------------------------
def build_cases(profiles: dict) -> list:
    cases = []
    hand = profiles["hand"]

    def add(case):
        cases.append(case)
        return case

    # -- HELLO --
    def hello_case(cid, comment, **f):
        fields = {"flags": 0, "firmware": [0, 1, 0], "device_id": "0102030405060708",
                  "fingerprint": "00" * 8, "boot": 0, "nonce": HAND_NONCE, "next_seq": 0,
                  "bits": 0, "batch": 64}
        fields.update(f)
        frame = wire.encode_hello(**fields)
        add({"id": cid, "comment": comment, "result": "valid", "target": "both", "op": "hello",
             "fields": fields, "frame": frame.hex()})

    hello_case("hello-hand", "HELLO for the hand profile (m = 4), boot 1, nonce a1..a8, "
               "next_seq 0 (the boot HELLO); written as 0x00, COBS(body || CRC), 0x00",
               fingerprint=fp8(hand), boot=1, bits=4)
    hello_case("hello-periodic", "a periodic HELLO of the hand boot: next_seq 70000 (beyond "
               "u16: the host anchors the u32 sequence there)", fingerprint=fp8(hand), boot=1,
               bits=4, next_seq=70000)
    hello_case("hello-vector-zeros", "VECTOR HELLO, all-zero device id and nonce (COBS codes "
               "for every zero), m = 52, batch 255", flags=wire.FLAG_VECTOR, device_id="00" * 8,
               fingerprint=fp8(profiles["hum-e1-m52"]), boot=0, nonce="00" * 8, bits=52,
               batch=255)
    hello_case("hello-no-profile", "no valid profile: fingerprint zero, m = 0; boot counter "
               "and next_seq at their maximum", firmware=[1, 2, 3], device_id="e66138528b6e2f2a",
               boot=0xFFFFFFFF, next_seq=0xFFFFFFFF, bits=0, batch=64)
    hello_case("hello-debug", "DEBUG flag (0x20): a non-private debug build", flags=wire.FLAG_DEBUG,
               fingerprint=fp8(hand), boot=7, nonce="0011223344556677", bits=4, batch=1)

    # -- DATA --
    def data_case(cid, comment, pid, bits, lows, seq=0, batch=None, flags=0):
        """DATA of a boot whose HELLO would be: device 0102030405060708, boot 1, nonce
        a1..a8, the fingerprint of profile `pid` (zero for None); that session seeds the CRC.
        `seq` is the u32 of the first frame; its low 16 bits travel."""
        batch = batch or max(1, min(len(lows), wire.MAX_COUNT))
        fields = {"flags": flags, "device_id": HAND_DEVICE,
                  "fingerprint": fp8(profiles[pid]) if pid else "00" * 8, "boot": HAND_BOOT,
                  "nonce": HAND_NONCE, "seq": seq, "bits": bits, "batch": batch,
                  "reports": lows}
        case = {"id": cid, "comment": comment, "result": "valid", "target": "both",
                "op": "data", "fields": fields,
                "frame": encode_case("data", fields).hex(), "profile": pid}
        if pid is not None:
            case["values"] = values_hex(profiles[pid], lows)
        return add(case)

    if data_case("data-hand", "hand-derived in tools/gen_wire_vectors.py: seq 1, m = 4, "
                 "reports [5, 10]", "hand", 4, [5, 10], seq=1)["frame"] != HAND_FRAME:
        raise SystemExit("hand case: vector differs from the hand derivation")
    m2 = profiles["hum-e1-m2"]
    data_case("data-m2-count1", "m = 2, one report (6 padding bits)", "hum-e1-m2", 2,
              grid_lows(m2, "m2-1", 1))
    data_case("data-m2-count255", "m = 2, 255 reports (largest count)", "hum-e1-m2", 2,
              grid_lows(m2, "m2-255", 255), seq=2)
    m4 = profiles["hum-e1-m4"]
    data_case("data-m4-count64", "m = 4, the default batch of 64", "hum-e1-m4", 4,
              grid_lows(m4, "m4-64", 64), seq=300)
    m16 = profiles["hum-e1-m16"]
    data_case("data-m16-count64", "m = 16, batch 64", "hum-e1-m16", 16,
              grid_lows(m16, "m16-64", 64), seq=0x1234)
    data_case("data-m16-count255", "m = 16, 255 reports: body+CRC 518 bytes, three COBS "
              "blocks at least", "hum-e1-m16", 16, grid_lows(m16, "m16-255", 255), seq=0xFF00)
    m52 = profiles["hum-e1-m52"]
    data_case("data-m52-count1", "m = 52: reports beyond 31-bit small ints", "hum-e1-m52", 52,
              grid_lows(m52, "m52-1", 1), seq=9)
    data_case("data-m52-count255", "m = 52, 255 reports: the largest body (MAX_BODY = 1662)",
              "hum-e1-m52", 52, grid_lows(m52, "m52-255", 255), seq=10)

    # COBS block boundary: body+CRC of 253, 254, 255 bytes with no zero byte anywhere.
    m8 = profiles["hum-e1-m8"]
    for count, what in ((245, "253 bytes: one block, code 0xfe"),
                        (246, "254 bytes: one full block, code 0xff and no trailing code"),
                        (247, "255 bytes: a full block, then a block of 1 (code 0x02)")):
        k = 0
        while True:  # a salt that leaves no zero byte in the CRC either
            lows = grid_lows(m8, "m8-%d-%d" % (count, k), count, nonzero_bytes=True)
            frame = wire.encode_data(seq=0x0101, bits=8, reports=lows,
                                     session=wire.session_bytes(HAND_DEVICE, fp8(m8), HAND_BOOT,
                                                                HAND_NONCE))
            if len(frame) == wire.max_encoded_length(count + 8) + 1:  # no zero anywhere
                break
            k += 1
        data_case("data-cobs-%d" % (count + 8), "COBS boundary, body+CRC " + what,
                  "hum-e1-m8", 8, lows, seq=0x0101)
    lows = grid_lows(m8, "m8-zero", 252, nonzero_bytes=True)
    lows[250] = 0  # input byte 254 is zero, right after 254 non-zero bytes
    data_case("data-cobs-zero-after-full-block", "body+CRC byte 254 is zero, right after a "
              "full 0xff block (not on a grid: no values)", None, 8, lows, seq=0x0101)
    data_case("data-seq-wrap", "two frames of batch 3 from seq 65535: seq 65535, then 0",
              "hand", 4, grid_lows(hand, "wrap", 6), seq=0xFFFF, batch=3)
    data_case("data-batch-split", "130 reports at batch 64: frames of 64, 64 and a short 2",
              "hum-e1-m16", 16, grid_lows(m16, "split", 130), seq=40, batch=64)
    data_case("data-vector", "VECTOR flag on DATA (never stored by a host)", "hand", 4,
              grid_lows(hand, "vector", 3), seq=7, flags=wire.FLAG_VECTOR)
    data_case("data-debug", "DEBUG flag on DATA (a debug build: decoded, never called "
              "private)", "hand", 4, grid_lows(hand, "debug", 3), seq=8, flags=wire.FLAG_DEBUG)
    data_case("data-seq-u32", "two frames from the u32 sequence number 0x1fffe: the wire "
              "carries fffe, then ffff", "hand", 4, grid_lows(hand, "u32", 2), seq=0x1FFFE,
              batch=1)
    data_case("data-seq-u32-wrap", "two frames from 0xffffffff: the u32 wraps to 0 (the wire "
              "carries ffff, then 0000)", "hand", 4, grid_lows(hand, "u32w", 2),
              seq=0xFFFFFFFF, batch=1)

    # -- STATUS --
    def status_case(cid, comment, **f):
        fields = {"flags": 0, "code": 0, "ticks": 0, "frames_dropped": 0, "replaced": 0,
                  "clamped": 0, "message": ""}
        fields.update(f)
        add({"id": cid, "comment": comment, "result": "valid", "target": "both",
             "op": "status", "fields": fields, "frame": wire.encode_status(**fields).hex()})

    status_case("status-heartbeat", "OK heartbeat, zero counters, empty message")
    status_case("status-ticks", "OK with ticks and frames_dropped (public counters), "
                "replaced = clamped = 0 as in every private build", ticks=65536,
                frames_dropped=3)
    status_case("status-debug-sensor", "DEBUG build: SENSOR with the replaced and clamped "
                "counters and a message", flags=wire.FLAG_DEBUG, code=wire.SENSOR, ticks=300,
                replaced=1, clamped=256, message="i2c timeout")
    status_case("status-max", "STOPPED, counters at 2^32 - 1, a 200-byte message",
                code=wire.STOPPED, ticks=0xFFFFFFFF, frames_dropped=0xFFFFFFFF,
                flags=wire.FLAG_DEBUG, replaced=0xFFFFFFFF, clamped=0xFFFFFFFF,
                message="z" * 200)
    status_case("status-wrap", "counters beyond u32 wrap modulo 2^32", code=wire.OK,
                ticks=(1 << 33) + 7, frames_dropped=(1 << 32) + 5)
    status_case("status-utf8-cut", "CONFIG, message of 201 UTF-8 bytes: cut to 199 at the "
                "character boundary, never inside 'é'", code=wire.CONFIG,
                message="x" * 199 + "é")
    status_case("status-held", "HELD (7): reset into a held REPL after a stop",
                code=wire.HELD, ticks=12, message="watchdog running: held")
    status_case("status-crash", "CRASH in a private build: the exception's type name only",
                code=wire.CRASH, ticks=5, message="ValueError")
    status_case("status-vector", "VECTOR STATUS", flags=wire.FLAG_VECTOR,
                code=wire.NO_PROFILE, message="no profile")

    # -- a whole session through a Sender --
    sess = {"flags": 0, "firmware": [0, 1, 0], "device_id": b"zeal-dev".hex(),
            "fingerprint": fp8(hand), "boot": 3, "nonce": "5a5b5c5d5e5f6061", "bits": 4,
            "batch": 4, "hello_every": 2, "seq": 0, "reports": grid_lows(hand, "session", 11),
            "status": {"code": wire.STOPPED, "ticks": 11, "message": "bye"}}
    ss = wire.session_bytes(sess["device_id"], sess["fingerprint"], sess["boot"],
                            sess["nonce"])

    def sess_hello(n):
        return wire.encode_hello(flags=0, firmware=sess["firmware"],
                                 device_id=sess["device_id"], fingerprint=sess["fingerprint"],
                                 boot=3, nonce=sess["nonce"], next_seq=n, bits=4, batch=4)

    r = sess["reports"]
    stream = (sess_hello(0) + wire.encode_data(seq=0, bits=4, reports=r[0:4], session=ss)
              + wire.encode_data(seq=1, bits=4, reports=r[4:8], session=ss) + sess_hello(2)
              + wire.encode_data(seq=2, bits=4, reports=r[8:11], session=ss)
              + wire.encode_status(code=wire.STOPPED, ticks=11, message="bye"))
    if encode_case("session", sess) != stream:
        raise SystemExit("session: encode_case disagrees with the frame-by-frame stream")
    add({"id": "session-hand", "comment": "Sender: HELLO (next_seq 0), 11 reports at batch 4 "
         "with a HELLO after every 2 DATA frames (next_seq 2), flush of the short batch, then "
         "STATUS STOPPED (ticks 11)",
         "result": "valid", "target": "both", "op": "session", "fields": sess,
         "frame": stream.hex(), "profile": "hand", "values": values_hex(hand, sess["reports"])})
    late = {k: v for k, v in sess.items() if k != "status"}
    late.update(seq=65534, reports=grid_lows(hand, "session-late", 12))
    add({"id": "session-late", "comment": "Sender from u32 sequence number 65534 (a board "
         "that ran a while): HELLO next_seq 65534, DATA 65534, 65535, HELLO next_seq 65536, "
         "DATA 65536 (wire 0000)", "result": "valid", "target": "both", "op": "session",
         "fields": late, "frame": encode_case("session", late).hex(), "profile": "hand",
         "values": values_hex(hand, late["reports"])})

    # -- encoding refused (device: handle() answers not ok) --
    def refuse(cid, comment, op, fields):
        add({"id": cid, "comment": comment, "result": "invalid", "reason": "encode",
             "target": "both", "op": op, "fields": fields})

    refuse("encode-report-too-wide", "a report of 5 bits at m = 4", "data",
           {"flags": 0, "seq": 0, "bits": 4, "batch": 1, "reports": [16]})
    refuse("encode-report-negative", "a negative report", "data",
           {"flags": 0, "seq": 0, "bits": 4, "batch": 1, "reports": [-1]})
    refuse("encode-bits-53", "m = 53 is more than a mantissa", "data",
           {"flags": 0, "seq": 0, "bits": 53, "batch": 1, "reports": [1]})
    refuse("encode-data-no-profile", "m = 0 (no profile) cannot carry DATA", "data",
           {"flags": 0, "seq": 0, "bits": 0, "batch": 1, "reports": [0]})
    refuse("encode-batch-256", "a batch above 255", "data",
           {"flags": 0, "seq": 0, "bits": 4, "batch": 256, "reports": [1]})
    hf = {"flags": 0, "firmware": [0, 1, 0], "device_id": "0102030405060708",
          "fingerprint": fp8(hand), "boot": 1, "nonce": HAND_NONCE, "next_seq": 0, "bits": 4,
          "batch": 64}
    refuse("encode-hello-boot-2^32", "boot counter beyond u32", "hello", dict(hf, boot=1 << 32))
    refuse("encode-hello-next-seq-2^32", "next_seq beyond u32", "hello",
           dict(hf, next_seq=1 << 32))
    refuse("encode-hello-nonce-short", "a nonce of 7 bytes", "hello",
           dict(hf, nonce="a1a2a3a4a5a6a7"))
    refuse("encode-hello-flag-0x40", "reserved flag bit 6", "hello", dict(hf, flags=0x40))
    refuse("encode-data-flag-0x80", "reserved flag bit 7", "data",
           {"flags": 0x80, "seq": 0, "bits": 4, "batch": 1, "reports": [1]})
    refuse("encode-data-seq-2^32", "a sequence number beyond u32", "data",
           {"flags": 0, "seq": 1 << 32, "bits": 4, "batch": 1, "reports": [1]})
    refuse("encode-status-flag-0x40", "reserved flag bit 6 on STATUS", "status",
           {"flags": 0x40, "code": 0, "ticks": 0, "frames_dropped": 0, "replaced": 0,
            "clamped": 0, "message": ""})

    # -- decode: must-reject and stream rules (host only) --
    def HS(device=HAND_DEVICE, fingerprint=fp8(hand), boot=1, bits=4, nonce=HAND_NONCE,
           next_seq=0, flags=0):
        """A HELLO (batch 64) and the session that seeds the CRC of its boot's DATA."""
        return (wire.encode_hello(device_id=device, fingerprint=fingerprint, boot=boot,
                                  nonce=nonce, next_seq=next_seq, bits=bits, batch=64,
                                  flags=flags),
                wire.session_bytes(device, fingerprint, boot, nonce))

    S = HS()[1]  # the session of every D() unless told: 0102030405060708, hand, boot 1, a1..a8

    def H(next_seq):
        return HS(next_seq=next_seq)[0]

    def D(seq, flags=0, lows=(3, 4, 5), session=S):
        return wire.encode_data(seq=seq, bits=4, reports=list(lows), flags=flags,
                                session=session)

    def hbody40():  # the body of H(0), built field by field
        return (bytes.fromhex("01" "02" "000100" + HAND_DEVICE) + bytes.fromhex(fp8(hand))
                + struct.pack("<I", 1) + bytes.fromhex(HAND_NONCE)
                + struct.pack("<IBH", 0, 4, 64))

    def DB(body, crc_delta=0):  # a hand-made DATA body, CRC under S
        return body_frame(body, crc_delta, session=S)

    def decode_case(cid, comment, stream, reason=None, vectors=False):
        expect = decode_stream(stream, vectors=vectors, profiles=list(profiles.values()))
        counted = dict(expect["rejected"])
        for k, v in expect["unresolved"].items():
            counted[k] = counted.get(k, 0) + v
        if reason is not None and counted.get(reason, 0) < 1:
            raise SystemExit("decode case %s: reference did not count %s (%r)"
                             % (cid, reason, counted))
        if reason is None and any(k not in ("cobs", "crc") for k in expect["rejected"]):
            raise SystemExit("decode case %s: unexpected rejections %r" % (cid, counted))
        case = {"id": cid, "comment": comment, "result": "invalid" if reason else "valid",
                "target": "host", "op": "decode", "vectors": vectors, "stream": stream.hex(),
                "expect": expect}
        if reason:
            case["reason"] = reason
        add(case)
        return expect

    bad_crc = DB(bytes([2, 2, 0, 3, 0x43, 0x05]), crc_delta=1)
    decode_case("reject-crc", "DATA seq 2 with its CRC off by one: Unresolved (crc), kept by a "
                "collector but never opened; counted as 1 lost", H(1) + D(1) + bad_crc + D(3),
                "crc")
    flipped = bytearray(D(2))
    flipped[5] ^= 0x01  # a data byte of the second COBS block, not a code byte
    decode_case("reject-bit-flip", "one bit flipped inside DATA seq 2", H(1) + D(1)
                + bytes(flipped) + D(3), "crc")
    cut = D(2)[:-4] + b"\x00"
    decode_case("reject-truncated", "DATA seq 2 with its last 3 bytes lost: a COBS code points "
                "past the end", H(1) + D(1) + cut + D(3), "cobs")
    decode_case("reject-short", "three bytes of a frame: fewer than type + CRC",
                H(2) + D(2)[:3] + b"\x00" + D(3), "short")
    decode_case("reject-bad-cobs", "code 0x05 with only two bytes after it",
                H(3) + bytes([5, 1, 2, 0]) + D(3), "cobs")
    decode_case("reject-reserved-flag-6", "DATA with reserved flag bit 6 (0x40) set, CRC valid",
                H(2) + DB(bytes([0x42, 2, 0, 3, 0x43, 0x05])) + D(3), "reserved_flags")
    decode_case("reject-reserved-flag-7", "DATA with reserved bit 7 set and VECTOR, CRC valid",
                H(2) + DB(bytes([0x92, 2, 0, 3, 0x43, 0x05])) + D(3), "reserved_flags")
    decode_case("reject-reserved-flag-hello", "HELLO with reserved flag bit 6: refused, so the "
                "DATA after it has no session (Unresolved no_hello)",
                b"\x00" + body_frame(bytes([0x41]) + hbody40()[1:]) + D(0),
                "reserved_flags")
    decode_case("decode-debug-flag", "DEBUG (0x20) on HELLO and DATA: accepted (Batch.debug)",
                HS(flags=wire.FLAG_DEBUG)[0] + D(0, flags=wire.FLAG_DEBUG)
                + D(1, flags=wire.FLAG_DEBUG))
    decode_case("reject-type-4", "unknown type 4",
                H(3) + body_frame(bytes([4, 1, 2, 3])) + D(3), "type")
    decode_case("reject-type-0", "type 0", H(3) + body_frame(bytes([0, 0, 0, 0, 0])) + D(3),
                "type")
    decode_case("reject-padding", "m = 4, one report 5 with padding nibble 1",
                H(2) + DB(bytes([2, 2, 0, 1, 0x15])) + D(3), "padding")
    decode_case("reject-count-0", "DATA with a count of 0", H(2) + DB(bytes([2, 2, 0, 0]))
                + D(3), "malformed")
    decode_case("reject-data-too-long", "DATA count 1 with 8 payload bytes (more than m = 52 "
                "needs)", H(2) + DB(bytes([2, 2, 0, 1]) + b"\x01" * 8) + D(3), "malformed")
    decode_case("reject-data-length", "DATA count 3 at m = 4 with 1 payload byte (needs 2)",
                H(2) + DB(bytes([2, 2, 0, 3, 0x43])) + D(3), "length")
    decode_case("reject-overlong", "a run of MAX_ENCODED + 1 non-zero bytes is dropped unread",
                H(1) + D(1) + b"\x5a" * (wire.MAX_ENCODED + 1) + b"\x00" + D(2), "overlong")
    hbody = hbody40()
    if body_frame(hbody, 0) != H(0)[1:]:
        raise SystemExit("hand-built HELLO body disagrees with encode_hello")
    decode_case("reject-hello-short", "HELLO of 39 bytes", body_frame(hbody[:39]) + D(0),
                "malformed")
    decode_case("reject-hello-long", "HELLO of 41 bytes", body_frame(hbody + b"\x00") + D(0),
                "malformed")
    v1 = (bytes.fromhex("01" "01" "000100" "0102030405060708") + bytes.fromhex(fp8(hand))
          + struct.pack("<IBH", 1, 4, 64))
    decode_case("reject-hello-version-1", "a protocol 1 HELLO (28 bytes): refused as version; "
                "the DATA after it stays Unresolved (no_hello)", b"\x00" + body_frame(v1)
                + D(0), "version")
    decode_case("reject-hello-version-3", "HELLO with protocol version 3",
                body_frame(hbody[:1] + b"\x03" + hbody[2:]) + D(0), "version")
    sbody = struct.pack("<BBIIII", 3, 0, 0, 0, 0, 0)
    decode_case("reject-status-long", "STATUS with a 201-byte message",
                H(0) + body_frame(sbody + b"m" * 201) + D(0), "malformed")
    decode_case("reject-status-short", "STATUS of 17 bytes (a protocol 1 header is 14)",
                H(0) + body_frame(sbody[:17]) + D(0), "malformed")
    decode_case("reject-grid", "m = 4 report 15: k = 2^52 - 1 is above k_hi",
                H(0) + D(0, lows=(3, 15, 4)) + D(1), "grid")
    # -- late attach: Unresolved, then resolved at the HELLO --
    decode_case("attach-no-hello", "DATA 0, 1 before any HELLO: Unresolved (no_hello); the "
                "HELLO (next_seq 2) resolves them as 0 and 1; nothing lost",
                D(0) + D(1) + H(2) + D(2), "no_hello")
    decode_case("attach-late", "a collector attaching at u32 70037: DATA 70037-70039 "
                "Unresolved, the periodic HELLO (next_seq 70040) resolves them (largest u32 "
                "below 70040 with those low 16 bits); nothing before the attach is lost",
                D(70037) + D(70038) + D(70039) + H(70040) + D(70040) + D(70041), "no_hello")
    decode_case("attach-late-gap", "late attach with DATA 38 lost between the kept 37 and 39: "
                "lost 1, counted once the pool is resolved",
                D(37) + D(39) + H(40) + D(40), "no_hello")
    decode_case("attach-other-session", "DATA of a boot that ended before the first HELLO "
                "came (its HELLO never seen): Unresolved and never resolved (null)",
                D(5, session=HS(boot=9)[1]) + H(0) + D(0), "no_hello")
    h_ff, s_ff = HS(fingerprint="ff" * 8)
    decode_case("reject-unknown-profile", "HELLO with a fingerprint no profile has; DATA of "
                "its session (CRC good) is not rebuilt", h_ff + D(0, session=s_ff),
                "unknown_profile")
    h_00, s_00 = HS(fingerprint="00" * 8, bits=0)
    decode_case("reject-no-profile-hello", "HELLO of a device without a profile (zeros)",
                h_00 + D(0, session=s_00), "unknown_profile")
    decode_case("reject-hello-bits", "HELLO with the hand fingerprint but m = 5: its DATA is "
                "not rebuilt", HS(bits=5)[0] + D(0), "bad_hello")
    decode_case("reject-duplicate", "DATA seq 5 twice: the copy is dropped",
                H(5) + D(5) + D(5) + D(6), "duplicate")
    h2, s2 = HS(fingerprint=fp8(profiles["hum-e1-m4"]), boot=2, nonce="b1b2b3b4b5b6b7b8",
                next_seq=3)
    decode_case("reject-other-session", "boot 1 (hand, m = 4) at 40000, 40001; reboot as "
                "boot 2 with profile hum-e1-m4 (m = 4 too), its boot HELLO lost: its DATA 0-2 "
                "fail their CRC under boot 1's session (Unresolved crc, never rebuilt under "
                "boot 1); its periodic HELLO (next_seq 3) resolves them as 0, 1, 2: one reboot, "
                "nothing lost", H(40000) + D(40000) + D(40001) + D(0, session=s2)
                + D(1, session=s2) + D(2, session=s2) + h2 + D(3, session=s2), "crc")
    decode_case("decode-reboot-hello-and-data-lost", "as above, but DATA 0 of boot 2 lost "
                "too: the line was listening to the device, so frame 0 counts as lost",
                H(40000) + D(40000) + D(1, session=s2) + D(2, session=s2) + h2
                + D(3, session=s2), "crc")
    h_n, s_n = HS(nonce="c1c2c3c4c5c6c7c8", next_seq=2)
    decode_case("reject-nonce-only", "a lost seed file: the board reboots with the same id, "
                "profile and boot counter (1) but a fresh nonce, its boot HELLO lost: its "
                "DATA fails the old session's CRC (Unresolved crc) until its HELLO "
                "(next_seq 2): a reboot, resolved as 0, 1, not merged with boot 1's 0, 1",
                H(0) + D(0) + D(1) + D(0, session=s_n) + D(1, session=s_n) + h_n
                + D(2, session=s_n), "crc")
    hv = HS(flags=wire.FLAG_VECTOR)[0]
    V = wire.FLAG_VECTOR
    decode_case("decode-seq-restart", "vector mode (the nonce follows from the key): the same "
                "session sends its boot HELLO again (next_seq 0) after 0-2: a restart, the "
                "new 0, 1 are rebuilt", hv + D(0, V) + D(1, V) + D(2, V) + hv + D(0, V)
                + D(1, V), vectors=True)
    decode_case("reject-stale-hello", "a private session's HELLO cannot go back (a fresh "
                "nonce every boot): a replayed HELLO next_seq 0 after 0-2 is not followed, "
                "the replayed 0, 1 are duplicates", H(0) + D(0) + D(1) + D(2) + H(0) + D(0)
                + D(1), "duplicate")
    decode_case("reject-vector-data", "VECTOR DATA on a collecting host: counted, not returned",
                H(1) + D(1, flags=wire.FLAG_VECTOR) + D(2), "vector")
    decode_case("decode-vector-data", "the same with vectors accepted (conformance mode)",
                H(1) + D(1, flags=wire.FLAG_VECTOR) + D(2), vectors=True)
    decode_case("decode-gap", "seq 1 then 4: 2 frames lost", H(1) + D(1) + D(4))
    decode_case("decode-wrap", "wire seq ffff, 0, 1 after HELLO next_seq 65535: u32 65535, "
                "65536, 65537, nothing lost", H(65535) + D(65535) + D(65536) + D(65537))
    decode_case("decode-wrap-gap", "u32 65535 then 65537 (wire ffff, 0001): 65536 lost",
                H(65535) + D(65535) + D(65537))
    decode_case("decode-hello-gap", "DATA 10, 11; 12-16 and the HELLO after 15 lost; HELLO "
                "next_seq 17 then DATA 17: 5 lost, exactly", H(10) + D(10) + D(11) + H(17)
                + D(17))
    decode_case("decode-gap-2^16", "DATA 10, then 65536 frames lost, HELLO next_seq 65547, "
                "DATA 65547 (wire 000b, as 11): the HELLO tells the gap, not a duplicate",
                H(10) + D(10) + H(65547) + D(65547))
    h_b2, s_b2 = HS(boot=2, nonce="d1d2d3d4d5d6d7d8")
    decode_case("decode-reboot", "boot 1 5, 6; HELLO boot 2 (next_seq 0); 0: one reboot, "
                "no loss", H(5) + D(5) + D(6) + h_b2 + D(0, session=s_b2))
    decode_case("decode-reboot-gap", "boot 1 5; HELLO boot 2 (next_seq 0); 2: frames 0 and 1 "
                "of boot 2 lost", H(5) + D(5) + h_b2 + D(2, session=s_b2))
    h_dev, s_dev = HS(device="0807060504030201", nonce="e1e2e3e4e5e6e7e8", next_seq=7)
    decode_case("decode-new-device", "another device id on the line is a reboot too; the line "
                "answers for it from its HELLO (next_seq 7: no loss)",
                H(7) + D(7) + h_dev + D(7, session=s_dev))
    decode_case("decode-periodic-hello", "a repeated HELLO of the same boot keeps the sequence",
                H(1) + D(1) + H(2) + D(2) + H(3) + D(3))
    decode_case("decode-status-first", "STATUS needs no HELLO", wire.encode_status(
        code=wire.NO_PROFILE, message="no profile") + H(0) + D(0))
    decode_case("decode-boot-log", "boot log before the first HELLO: the HELLO's leading 0x00 "
                "ends the garbage run, nothing else is lost", BOOT_LOG + H(0) + D(0) + D(1))
    decode_case("decode-traceback", "a MicroPython traceback between frames swallows the next "
                "DATA frame (no leading 0x00): one run refused, one frame lost, the rest kept",
                H(0) + D(0) + TRACEBACK + D(1) + D(2) + BOOT_LOG + H(3) + D(3))
    for sid in ("session-hand", "session-late"):
        decode_case("decode-" + sid, "the %s stream" % sid, bytes.fromhex(
            [c for c in cases if c["id"] == sid][0]["frame"]))
    return cases


def render() -> dict:
    profiles = load_profiles()
    check_hand(profiles["hand"])
    cases = build_cases(profiles)
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate case ids")
    return {"schema": "zeal-vectors/wire", "version": VERSION, "count": len(cases),
            "notes": "Frames of wire_format.md protocol 2 as hex. target 'both': op "
                     "hello/data/status/session gives fields and the exact bytes a device "
                     "writes ('frame'; HELLO and STATUS include their leading 0x00). hello: "
                     "flags, firmware, device_id, fingerprint, boot, nonce (8 bytes hex), "
                     "next_seq (u32), bits, batch. data: seq is the u32 sequence number of the "
                     "first frame (its low 16 bits travel), +1 per frame, full batches then a "
                     "short one, the CRC seeded by the session of device_id, fingerprint, "
                     "boot, nonce (defaults: zero, zero, 0, zero). status: code, ticks, "
                     "frames_dropped, replaced, clamped, message. session: a Sender's whole "
                     "output from u32 seq (each HELLO carries next_seq = the Sender's seq "
                     "then; the final STATUS takes code, ticks, replaced, clamped, message "
                     "from 'status', frames_dropped 0). A host decodes them ('values': the "
                     "64-bit patterns under 'profile' of profiles.json); result 'invalid' "
                     "with reason 'encode': the encoder must refuse the fields. target "
                     "'host': op decode feeds 'stream' to one Decoder knowing every valid "
                     "profile of profiles.json (VECTOR DATA returned only if 'vectors'), then "
                     "passes every Unresolved it returned to one resolve call; it must end "
                     "with exactly 'expect': rejected and unresolved counts by reason, u32 "
                     "seq of the batches returned by feed, the resolve answers in order (u32 "
                     "seq of a Batch, false: refused, null: kept), lost frames (read after "
                     "resolve), reboots, HELLO and STATUS frames seen.",
            "cases": cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare with the file")
    args = ap.parse_args()
    doc = render()
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    old = open(OUT).read() if os.path.exists(OUT) else None
    stale = old != text
    if stale and not args.check:
        with open(OUT, "w") as fh:
            fh.write(text)
    print("%-16s %4d cases %s" % ("wire.json", doc["count"], "(changed)" if stale else ""))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
