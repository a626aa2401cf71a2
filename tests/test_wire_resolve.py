"""Late attach and resolve (shared_spec/wire_format.md, "Attaching mid-stream"): DATA a
Decoder cannot open yet comes out as Unresolved, a collector keeps it raw and resolves it at
the next HELLO. Through modelled boards: a collector attaching at every frame boundary, one
restarting mid-stream, a reboot whose boot HELLO is lost — every frame sent after the attach
ends up as a Batch exactly once (by feed or by resolve), and `lost` counts only frames truly
never received since the attach.
"""
import json
import os
import random
from collections import namedtuple

import pytest

from zeal.mechanism.grid import profile as P
from zeal import wire

from conftest import ROOT

with open(os.path.join(ROOT, "shared_spec", "vectors", "profiles.json")) as _fh:
    PROFILES = {c["id"]: P.from_dict(c["profile"]) for c in json.load(_fh)["cases"]
                if c["result"] == "valid"}
HAND = PROFILES["hand"]
DEV = bytes.fromhex("0102030405060708")

Frame = namedtuple("Frame", "kind key wire")  # key: (boot, nonce, u32 for DATA / None)


def board(boot, nonce, nframes, *, hello_every=8, start=0, boot_hello=True, prof=HAND,
          device=DEV, requests=()):
    """The frames one boot of a modelled board writes: its boot HELLO (unless lost), DATA
    from u32 `start` with a HELLO after every `hello_every`, and a HELLO answering `!hello`
    before each DATA index in `requests` (the board answers at its next tick)."""
    sess = wire.session_bytes(device, prof.fingerprint, boot, nonce)

    def hello(n):
        return Frame("hello", (boot, nonce, None), wire.encode_hello(
            device_id=device, fingerprint=prof.fingerprint, boot=boot, nonce=nonce,
            next_seq=n, bits=prof.bits, batch=4))

    out = [hello(start)] if boot_hello else []
    lo = (1 << prof.bits) - 1 - prof.n_cells
    for i in range(nframes):
        u = start + i
        if i in requests:
            out.append(hello(u))
        lows = [lo + (u * 7 + j) % prof.n_cells for j in range(4)]
        out.append(Frame("data", (boot, nonce, u), wire.encode_data(
            seq=u, bits=prof.bits, reports=lows, session=sess)))
        if hello_every and (u + 1) % hello_every == 0:
            out.append(hello(u + 1))
    return out


class Collector:
    """What zeal's collector does with a line, reduced to the wire: feed, keep Unresolved,
    resolve the kept frames after every feed that brought a HELLO, store each Batch once."""

    def __init__(self, pool=()):
        self.dec = wire.Decoder([HAND])
        self.pool = list(pool)
        self.stored = {}

    def _store(self, b):
        key = (b.boot, b.nonce, b.seq)
        assert key not in self.stored, "stored twice: %r" % (key,)
        self.stored[key] = b

    def feed(self, chunk):
        evs = self.dec.feed(chunk)
        for e in evs:
            if isinstance(e, wire.Unresolved):
                self.pool.append(e)
            elif isinstance(e, wire.Batch):
                self._store(e)
        if self.pool and any(isinstance(e, wire.Hello) for e in evs):
            keep = []
            for item, ans in zip(self.pool, self.dec.resolve(self.pool)):
                if isinstance(ans, wire.Batch):
                    self._store(ans)
                elif ans is None:
                    keep.append(item)
            self.pool = keep


def pieces(data, rnd):
    out, i = [], 0
    while i < len(data):
        n = rnd.choice((1, 3, 17, 64, 500))
        out.append(data[i:i + n])
        i += n
    return out


def run(frames, rnd=None, collector=None):
    c = collector or Collector()
    if rnd is None:
        for f in frames:
            c.feed(f.wire)
    else:
        for p in pieces(b"".join(f.wire for f in frames), rnd):
            c.feed(p)
    return c


def data_keys(frames):
    return [f.key for f in frames if f.kind == "data"]


NONCE_A, NONCE_B = bytes.fromhex("a1a2a3a4a5a6a7a8"), bytes.fromhex("b1b2b3b4b5b6b7b8")


@pytest.mark.parametrize("delay", [None, 0, 1, 3])
def test_attach_at_every_frame_boundary(delay):
    """A board mid-stream (u32 from 70000: past the u16 wrap), a collector attaching before
    any frame. delay None: no `!hello` answered (the periodic HELLO resolves the kept
    frames); else the board answers `!hello` after `delay` DATA frames. Every DATA frame
    after the attach is stored once, with its true u32; nothing counted lost."""
    rnd = random.Random(31)
    n = 40
    for cut in range(0, n + 1):
        req = () if delay is None else (cut + delay,)
        frames = board(1, NONCE_A, n, start=70000, requests=req, boot_hello=False)
        starts = [i for i, f in enumerate(frames) if f.kind == "data"]
        at = starts[cut] if cut < n else len(frames)
        # the request's HELLO sits before DATA index cut + delay: frames after the attach
        tail = frames[at:]
        for r in (None, rnd):
            c = run(tail, r)
            assert sorted(c.stored) == sorted(data_keys(tail)), (cut, delay)
            assert all(b.seq == k[2] for k, b in c.stored.items())
            assert c.dec.lost == 0 and not c.dec.rejected
            # kept frames all resolve at the first HELLO; with no HELLO in the tail at
            # all, every frame stays kept (and none is stored)
            hello_after = [i for i, f in enumerate(tail) if f.kind == "hello"]
            if hello_after:
                assert c.pool == []
            else:
                assert len(c.pool) == len(data_keys(tail)) and not c.stored


@pytest.mark.parametrize("request_delay", [None, 1])
def test_reboot_with_lost_boot_hello_attach_anywhere(request_delay):
    """Boot 1 (HELLO every 8), then boot 2 of the same board with a fresh nonce and the same
    boot counter (a lost seed file) whose boot HELLO is lost. The collector attaches at every
    frame boundary. Boot 2's frames before its first periodic HELLO fail boot 1's CRC (or come
    before any HELLO) and are kept; that HELLO resolves them. Every frame after the attach is
    stored, except the frames of a session none of whose HELLOs reaches the collector: boot
    1's frames after its last HELLO when the attach falls there and `!hello` is not answered
    before the reboot. Those stay kept (resolve answers None), never stored wrongly."""
    rnd = random.Random(32)
    one = board(1, NONCE_A, 21, start=0)
    two = board(1, NONCE_B, 20, start=0, boot_hello=False)
    stream = one + two
    starts = [i for i, f in enumerate(stream) if f.kind == "data"]
    last_hello_one = max(i for i, f in enumerate(one) if f.kind == "hello")
    for at in starts + [len(stream)]:
        tail = list(stream[at:])
        if request_delay is not None and tail:
            d = [i for i, f in enumerate(tail) if f.kind == "data"]
            pos = d[min(request_delay, len(d) - 1)] if d else 0
            src = tail[pos].key if tail[pos].kind == "data" else None
            if src is not None:
                boot, nonce, u = src
                tail.insert(pos, Frame("hello", (boot, nonce, None), wire.encode_hello(
                    device_id=DEV, fingerprint=HAND.fingerprint, boot=boot, nonce=nonce,
                    next_seq=u, bits=HAND.bits, batch=4)))
        c = run(tail, rnd if at % 2 else None)
        want = data_keys(tail)
        announced = {f.key[:2] for f in tail if f.kind == "hello"}
        stranded = [k for k in want if k[:2] not in announced]
        # only ever boot 1's tail attached after its last HELLO, or the stream's own end
        # (after the last HELLO: the next HELLO, past this test, would resolve them)
        end_two = max(i for i, f in enumerate(stream) if f.kind == "hello")
        for k in stranded:
            assert (k[1] == NONCE_A and last_hello_one < at < len(one)) or at > end_two
        if request_delay is not None and at < end_two:
            assert all(k[1] == NONCE_A for k in stranded)
        assert sorted(c.stored) == sorted(set(want) - set(stranded)), at
        assert len(c.pool) == len(stranded)
        assert c.dec.resolve(c.pool) == [None] * len(stranded)
        assert all(b.seq == k[2] for k, b in c.stored.items())
        assert c.dec.lost == 0 and not c.dec.rejected
        keys = list(c.stored)
        assert len(keys) == len(set(keys))


def test_collector_restart_mid_stream():
    """Collector A reads the stream up to byte x and is killed; its kept Unresolved frames
    survive (the store), and collector B (a new Decoder) reads from byte y >= x. Every frame
    whose bytes lie wholly in [0, x) or [y, end) is stored exactly once by A or B; frames cut
    by x or y, or sent in between, are not, and B counts as lost exactly those it knows were
    sent after the earliest frame it resolved."""
    rnd = random.Random(33)
    stream = board(1, NONCE_A, 60, start=65530, hello_every=16, boot_hello=False)
    blob = b"".join(f.wire for f in stream)
    bounds, pos = [], 0
    for f in stream:
        bounds.append((pos, pos + len(f.wire), f))
        pos += len(f.wire)
    cuts = sorted({b[0] for b in bounds} | {rnd.randrange(len(blob)) for _ in range(25)})
    for x in cuts:
        for y in (x, min(len(blob), x + rnd.randrange(1, 400))):
            a = Collector()
            a.feed(blob[:x])
            b = Collector(pool=a.pool)  # the store hands B what A kept
            b.feed(blob[y:])
            both = dict(a.stored)
            for k, v in b.stored.items():
                assert k not in both, "stored twice across the restart: %r" % (k,)
                both[k] = v
            whole = [f.key for s, e, f in bounds if f.kind == "data" and (e <= x or s >= y)]
            if not any(f.kind == "hello" for s, e, f in bounds if s >= y):
                # no HELLO after the restart: what A kept and B read stays kept
                whole = [k for k in whole if k in both]
            assert sorted(both) == sorted(whole), (x, y)
            got = sorted(k[2] for k in b.stored)
            if got:  # B answers from its earliest stored frame on: the rest it lost
                span = set(range(got[0], max(got) + 1))
                assert b.dec.lost == len(span - set(got)), (x, y)


def test_late_attach_counts_only_true_losses():
    """Kept frames 37 and 39 (38 lost on the line), HELLO next_seq 40, DATA 40, 42: lost is
    38 and 41 — not the 37 frames sent before the attach."""
    frames = {f.key[2]: f.wire for f in board(1, NONCE_A, 43, start=0, hello_every=0)
              if f.kind == "data"}
    dec = wire.Decoder([HAND])
    h = wire.encode_hello(device_id=DEV, fingerprint=HAND.fingerprint, boot=1, nonce=NONCE_A,
                          next_seq=40, bits=HAND.bits, batch=4)
    evs = dec.feed(frames[37] + frames[39] + h + frames[40] + frames[42])
    pool = [e for e in evs if isinstance(e, wire.Unresolved)]
    assert [e.reason for e in pool] == ["no_hello", "no_hello"]
    assert dec.lost == 1  # 41, before resolving
    got = dec.resolve(pool)
    assert [g.seq for g in got] == [37, 39] and [g.lost_before for g in got] == [0, 1]
    assert dec.lost == 2 and dec.resolved == 2
    assert [b.seq for b in evs if isinstance(b, wire.Batch)] == [40, 42]


def test_resolve_answers():
    """Batch (opened), False (opened but refused: counted, delete it), None (no session of
    this line: keep it); any object with .body and .crc; sessions tried latest first."""
    Row = namedtuple("Row", "body crc")
    dec = wire.Decoder([HAND])
    sess_a = wire.session_bytes(DEV, HAND.fingerprint, 1, NONCE_A)
    sess_b = wire.session_bytes(DEV, HAND.fingerprint, 1, NONCE_B)

    def sealed(frame):
        (s,) = wire.Deframer().feed(frame)
        return Row(s.body, s.crc)

    def D(u, sess, lows=(3, 4)):
        return wire.encode_data(seq=u, bits=4, reports=list(lows), session=sess)

    def H(nonce, n):
        return wire.encode_hello(device_id=DEV, fingerprint=HAND.fingerprint, boot=1,
                                 nonce=nonce, next_seq=n, bits=4, batch=4)

    items = [sealed(D(3, sess_a)), sealed(D(4, sess_a, lows=(3, 15))),  # 15: off the grid
             sealed(D(5, sess_b)), sealed(D(9, sess_a))]
    assert dec.resolve(items) == [None] * 4  # no HELLO yet: nothing to open
    dec.feed(H(NONCE_A, 9) + H(NONCE_B, 100))  # two sessions in one chunk: A, then B
    got = dec.resolve(items)
    assert got[0].seq == 3 and got[0].nonce == NONCE_A  # under A, though B is latest
    assert got[1] is False and dec.rejected["grid"] == 1
    assert got[2].seq == 5 and got[2].nonce == NONCE_B
    # 9 is not below A's next_seq 9: the largest u32 below it with low bits 9 is negative
    assert got[3] is False and dec.rejected["sequence"] == 1
    assert dec.resolve(items[:1]) == [False] and dec.rejected["duplicate"] == 1
    assert dec.resolve([Row(b"", 0), Row(b"\x01" * 40, 0)]) == [None, None]
    assert "internal" not in dec.rejected


def test_unresolved_reasons_and_counters():
    dec = wire.Decoder([HAND])
    sess = wire.session_bytes(DEV, HAND.fingerprint, 1, NONCE_A)
    d0 = wire.encode_data(seq=0, bits=4, reports=[3], session=sess)
    (u,) = dec.feed(d0)
    assert (u.reason, dec.unresolved) == ("no_hello", {"no_hello": 1})
    h = wire.encode_hello(device_id=DEV, fingerprint=HAND.fingerprint, boot=2, nonce=NONCE_A,
                          bits=4, batch=4)
    evs = dec.feed(h + d0)
    assert [type(e).__name__ for e in evs] == ["Hello", "Unresolved"]
    assert evs[1].reason == "crc" and dec.unresolved == {"no_hello": 1, "crc": 1}
    assert not dec.rejected


def test_open_late_places_a_redelivered_frame_once():
    """A transport that redelivers (MQTT at QoS 1): frame 3 comes after 4..9. feed keeps it
    Unresolved ("sequence"); open_late places it at 3, the largest number below 10 whose low
    16 bits are 3 — worked by hand: 9 - ((9 - 3) mod 2^16) = 3 — with its own reports; a
    second copy is done with (False), and nothing of it is counted lost."""
    nonce = b"\x11" * 8
    frames = board(0, nonce, 10, hello_every=0)
    late = next(f for f in frames if f.key[2] == 3)
    dec = wire.Decoder([HAND])
    got = []
    for f in frames:
        if f is not late:
            got += dec.feed(f.wire)
    assert dec.lost == 1
    kept = [e for e in dec.feed(late.wire) if isinstance(e, wire.Unresolved)]
    assert [k.reason for k in kept] == ["sequence"]
    batch = dec.open_late(kept[0].body, kept[0].crc)
    assert isinstance(batch, wire.Batch) and batch.seq == 3
    lo = (1 << HAND.bits) - 1 - HAND.n_cells
    assert [int(v) for v in batch.lows] == [lo + (3 * 7 + j) % HAND.n_cells for j in range(4)]
    assert dec.open_late(kept[0].body, kept[0].crc) is False
    assert dec.lost == 0


def test_refeed_opens_data_kept_before_its_hello():
    """DATA that came before its HELLO (another topic, another collector's republish) is
    kept Unresolved ("no_hello"); once the HELLO is in, refeed opens it as feed would."""
    nonce = b"\x22" * 8
    frames = board(0, nonce, 3, hello_every=0)
    dec = wire.Decoder([HAND])
    kept = [e for f in frames[1:] for e in dec.feed(f.wire)]
    assert [k.reason for k in kept] == ["no_hello"] * 3
    dec.feed(frames[0].wire)
    out = [e for k in kept for e in dec.refeed(k.body, k.crc)]
    assert [b.seq for b in out if isinstance(b, wire.Batch)] == [0, 1, 2]
