"""The default codecs of `zeal compress`, `packed` and `adaptive`, on a window grid's or a
table's stream read from a spill a block at a time (compress.store_streams), so that memory does
not grow with the stream: their blobs are byte for byte what rivals.Packed and
rivals.AdaptiveOffsets make of the whole array (tests/test_compress_scale.py checks it), and
each blob is checked to decode to the stream, again a block at a time, before the archive
takes it (a codec that does not round-trip is a bug, never a silently wrong archive).

- packed: the header, then each block's m-bit fields (a block of BLOCK reports is a whole
  number of bytes, so the pieces join into the one bit stream). Checked by rivals.Packed's own
  decoder, a block at a time. Its size is known without making it (`packed_size`, every
  shape): header + the bits the devices sent.
- adaptive (compress.adaptive): the bucket bits b from the stream's histogram (kept while the
  store was read); the ANS coder is a stack, so the blocks are coded last to first, each under
  the model of the buckets before it: the prior (the profile's earlier streams) plus the
  stream's histogram less the buckets of this block and the blocks after it, the same integer
  counts the whole-array coder adds up first to last. Then the raw low bits, first to last.
  Checked by decoding the words block by block as compress.adaptive decodes them.
What is held: a block of the stream, the stream's ANS words while they are made and checked
(its compressed size: about 3.6 bits a report for the demo's 4-bit grid), never the stream.
"""
import struct

import numpy as np

from ...mechanism import kinds
from ...wire.bits import pack_bits, unpack_bits
from . import adaptive as AD
from .archive_format import ArchiveError
from .rivals import Packed

BLOCK = AD.BLOCK_MAX     # reports a block (a multiple of 8: whole bytes of any width)


def _t(profile) -> int:
    return int(profile.n_cells - 1).bit_length()


def _blocks(n: int):
    return [(lo, min(n, lo + BLOCK)) for lo in range(0, n, BLOCK)]


def _bad(name: str) -> ArchiveError:
    return ArchiveError("codec %s does not decode its own output exactly" % name)


def _offsets(stream, lo: int, hi: int) -> np.ndarray:
    return stream.read(lo, hi).astype(np.uint64)


# ---- packed -------------------------------------------------------------------------------------
def packed_encode(stream, spill):
    """The `packed` blob of a patterns stream (rivals.Packed.encode's bytes), as a BlobRef."""
    prof = stream.profile
    n, m = stream.symbols, prof.bits
    base = np.uint64(kinds.of(prof).report_pattern(prof)[0])
    w = spill.blob()
    w.write(Packed.MAGIC + struct.pack(Packed.FMT, n, m))
    for lo, hi in _blocks(n):
        w.write(pack_bits(_offsets(stream, lo, hi) + base, m))   # pack_bits keeps the low m
    return w.done()


def packed_check(stream, blob, codec: Packed) -> None:
    """ArchiveError unless `blob` decodes (by codec.decode, block by block) to the stream."""
    prof = stream.profile
    n, m = stream.symbols, prof.bits
    base = np.uint64(kinds.of(prof).report_pattern(prof)[0])
    head = len(Packed.MAGIC) + struct.calcsize(Packed.FMT)
    if bytes(blob.read(0, head)) != Packed.MAGIC + struct.pack(Packed.FMT, n, m) or \
            len(blob) != head + -(-n * m // 8):
        raise _bad("packed")
    for lo, hi in _blocks(n):
        piece = blob.read(head + lo * m // 8, head + -(-hi * m // 8))
        back = codec.decode(Packed.MAGIC + struct.pack(Packed.FMT, hi - lo, m) + piece, prof)
        if not np.array_equal(back, _offsets(stream, lo, hi) + base):
            raise _bad("packed")


# ---- adaptive -----------------------------------------------------------------------------------
def adaptive_encode(stream, spill, coder: AD.Adaptive, prior=None):
    """The `adaptive` blob of a patterns stream (rivals.AdaptiveOffsets.encode's bytes, the
    shared model starting from `prior`, the histogram of the profile's earlier streams or
    None), as a BlobRef."""
    prof = stream.profile
    n, t = stream.symbols, _t(prof)
    b = AD.choose_bits_of(stream.hist, n, t, prior) if n else 0
    shift = t - b
    ans = coder._lib.stream.stack.AnsCoder()
    if b and n:
        start = coder._start(prior, b)
        total = AD._reduce(stream.hist, b).astype(np.int64)
        after = np.zeros(1 << b, dtype=np.int64)     # the buckets of this block and later
        for lo, hi in reversed(AD.blocks(n)):
            sym = (_offsets(stream, lo, hi) >> np.uint64(shift)).astype(np.int64)
            after += np.bincount(sym, minlength=1 << b)
            ans.encode_reverse(sym.astype(np.int32), coder._model(start + (total - after)))
    words = ans.get_compressed().astype("<u4", copy=False)
    del ans
    w = spill.blob()
    w.write(AD.MAGIC + AD._leb(n) + struct.pack("<B", t) + bytes([b])
            + AD._leb(words.shape[0]))
    w.write(memoryview(np.ascontiguousarray(words)).cast("B"))
    del words
    if shift:
        for lo, hi in _blocks(n):
            w.write(pack_bits(_offsets(stream, lo, hi), shift))
    return w.done()


def adaptive_check(stream, blob, coder: AD.Adaptive, prior=None) -> None:
    """ArchiveError unless `blob` decodes to the stream, as compress.adaptive decodes it
    (decode_symbols: the header, then the buckets block by block under the models built from
    what is decoded, then the low bits), a block at a time."""
    prof = stream.profile
    n, t = stream.symbols, _t(prof)
    view = memoryview(blob.read(0, 64))
    try:
        got_n, at = AD.header(view, AD.MAGIC, n)
        got_t, b = view[at], view[at + 1]
        nwords, at = AD._unleb(view, at + 2)
    except Exception:                      # a header this coder did not write
        raise _bad("adaptive") from None
    shift = t - b
    if got_n != n or got_t != t or b > min(t, AD.B_MAX_BITS) or \
            len(blob) != at + 4 * nwords + -(-n * shift // 8):
        raise _bad("adaptive")
    if b and n:
        words = np.frombuffer(blob.read(at, at + 4 * nwords), dtype="<u4").astype(np.uint32,
                                                                                  copy=False)
        dec = coder._lib.stream.stack.AnsCoder(words)
        del words
        counts = coder._start(prior, b)
        for lo, hi in AD.blocks(n):
            got = np.asarray(dec.decode(coder._model(counts), hi - lo), dtype=np.int64)
            want = (_offsets(stream, lo, hi) >> np.uint64(shift)).astype(np.int64)
            if not np.array_equal(got, want):
                raise _bad("adaptive")
            counts = counts + np.bincount(got, minlength=1 << b)
        del dec
    at += 4 * nwords
    if shift:
        mask = np.uint64((1 << shift) - 1)
        for lo, hi in _blocks(n):
            piece = blob.read(at + lo * shift // 8, at + -(-hi * shift // 8))
            if not np.array_equal(unpack_bits(piece, hi - lo, shift),
                                  _offsets(stream, lo, hi) & mask):
                raise _bad("adaptive")


def packed_size(stream) -> int:
    """The exact size of the `packed` blob of a stream of any shape, without making it: its
    header and the bits the devices sent, each section padded to a byte (rivals.Packed,
    kind_codecs.PairsPacked: indices, then values; MessagesPacked)."""
    from . import kind_codecs as KC
    from . import streams as SH

    prof = stream.profile
    shape = SH.shape_of(prof)
    if shape is SH.Pairs:
        index = stream.n * prof.k * prof.index_bits
        return (len(KC.PairsPacked.MAGIC) + struct.calcsize(KC.PairsPacked.FMT)
                + -(-index // 8) + -(-(stream.payload_bits - index) // 8))
    head = (Packed if shape is SH.Patterns else KC.MessagesPacked)
    return len(head.MAGIC) + struct.calcsize(head.FMT) + -(-stream.symbols * prof.bits // 8)


def applies(name: str, codec, profile) -> bool:
    """Whether the registry's codec `name` runs streamed here: packed and adaptive on a
    window grid's or table's stream."""
    from . import streams as SH
    from .rivals import AdaptiveOffsets

    if SH.shape_of(profile) is not SH.Patterns:
        return False
    return (name == "packed" and type(codec) is Packed) or \
        (name == "adaptive" and type(codec) is AdaptiveOffsets)


__all__ = ["BLOCK", "packed_encode", "packed_check", "packed_size", "adaptive_encode",
           "adaptive_check", "applies"]
