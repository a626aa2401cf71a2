"""`adaptive`: an order-0 entropy coder that stores no model: the decoder learns it as it
decodes, so a small stream does not pay for a table of counts (`rans` stores one per stream:
at 1,250 reports of a 4-bit grid its model and header were 6.7 % of the blob).

The offsets j = k - k_lo (0..N-1, t = bit length of N - 1) are split as `rans` splits them: a
bucket (the top b bits, b chosen by the encoder) and the low t - b bits, packed raw. The
buckets are coded with rANS (`constriction`) block by block; block i is coded under the
Krichevsky-Trofimov estimate of the buckets seen before it, (count + 1/2)/(seen + B/2) for
each of the B = 2^b buckets, so encoder and decoder build the same model from what is
already decoded. Blocks are FIRST symbols, then twice that, doubling up to BLOCK_MAX: the model is
refreshed log2(n) times, each decode is one vectorised call, and the cost over the ideal
adaptive coder stays a few bits per bucket a refresh. b minimises the exact KT code length
(log-gamma sums, no coding) plus the raw bits.

Blob: magic "ZAD1", n (LEB128), t, b (u8), the number of 32-bit ANS words (LEB128), the words
(little-endian), the packed low bits. The pairs and messages shapes (compress.kind_codecs) code
their uniform part (the attribute subset, the coordinate) under its exact law and each group
of values (an attribute's, a coordinate's levels) as such a part. Untrusted blobs: n is checked against `limit` before
anything is allocated, t against the profile, b <= min(t, B_MAX_BITS).
"""
import math
import struct

import numpy as np

from ...errors import ZealError
from ...wire.bits import pack_bits, unpack_bits

MAGIC = b"ZAD1"
B_MAX_BITS = 12       # at most 4,096 buckets (a model refresh is a vector of that size)
FIRST = 32            # the first block's symbols
BLOCK_MAX = 1 << 16   # blocks double up to this many symbols


def _leb(v: int) -> bytes:
    out = bytearray()
    while True:
        byte, v = v & 0x7F, v >> 7
        out.append(byte | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _unleb(blob, at: int):
    v, shift = 0, 0
    while True:
        if at >= len(blob) or shift > 63:
            raise ZealError("adaptive: blob header damaged")
        byte = blob[at]
        at += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return v, at


def blocks(n: int):
    """[(start, stop)] of the blocks of n symbols."""
    out, at, size = [], 0, FIRST
    while at < n:
        out.append((at, min(n, at + size)))
        at += size
        size = min(2 * size, BLOCK_MAX)
    return out


def kt_bits(counts: np.ndarray) -> float:
    """The Krichevsky-Trofimov code length in bits of a sequence with these bucket counts
    (independent of the order): -log2 prod_s G(c_s + 1/2)/G(1/2) * G(B/2)/G(n + B/2)."""
    c = counts[counts > 0].astype(np.float64)
    big_b = counts.shape[0]
    n = float(counts.sum())
    ln = (math.lgamma(n + big_b / 2) - math.lgamma(big_b / 2)
          - float(np.sum([math.lgamma(x + 0.5) for x in c])) + c.shape[0] * math.lgamma(0.5))
    return ln / math.log(2)


def choose_bits(j: np.ndarray, t: int) -> int:
    """b in [0, min(t, B_MAX_BITS)] minimising KT bits of the buckets + raw low bits."""
    n = j.shape[0]
    top = min(t, B_MAX_BITS)
    counts = np.bincount((j >> np.uint64(t - top)).astype(np.int64), minlength=1 << top)
    best, best_cost = 0, None
    for b in range(top, -1, -1):
        c = counts.reshape(1 << b, -1).sum(axis=1) if b < top else counts
        cost = (kt_bits(c) if b else 0.0) + n * (t - b)
        if best_cost is None or cost < best_cost:
            best, best_cost = b, cost
    return best


class Adaptive:
    """The adaptive coder (module doc). `encode_parts(j, t)` / `decode_parts(view, at, n, t)`
    are the coded part alone (b, the ANS words, the low bits: no magic, no n), for the
    shapes that code several groups (compress.kind_codecs); `encode_symbols` /
    `decode_symbols` the whole blob of one group."""
    name, package, needs_profile = "adaptive", "constriction", True

    def __init__(self):
        import constriction
        self._lib = constriction

    def _model(self, counts):
        p = counts.astype(np.float64) + 0.5
        return self._lib.stream.model.Categorical(p / p.sum(), perfect=False)

    def uniform(self, size: int, symbols) -> bytes:
        """Symbols uniform on 0..size-1 (an exact law the decoder knows): the ANS words."""
        if size <= 1 or not len(symbols):
            return _leb(0)
        coder = self._lib.stream.stack.AnsCoder()
        coder.encode_reverse(np.asarray(symbols, dtype=np.int32),
                             self._lib.stream.model.Uniform(int(size)))
        words = coder.get_compressed().astype("<u4")
        return _leb(words.shape[0]) + words.tobytes()

    def read_uniform(self, view, at: int, size: int, n: int):
        nwords, at = _unleb(view, at)
        if at + 4 * nwords > len(view):
            raise ZealError("adaptive: blob truncated")
        if size <= 1 or n == 0:
            return np.zeros(n, dtype=np.int64), at + 4 * nwords
        words = np.frombuffer(bytes(view[at:at + 4 * nwords]), dtype="<u4").astype(np.uint32)
        coder = self._lib.stream.stack.AnsCoder(words)
        sym = np.asarray(coder.decode(self._lib.stream.model.Uniform(int(size)), n),
                         dtype=np.int64)
        return sym, at + 4 * nwords

    def encode_parts(self, j: np.ndarray, t: int) -> bytes:
        n = j.shape[0]
        b = choose_bits(j, t) if n else 0
        shift = t - b
        sym = (j >> np.uint64(shift)).astype(np.int64)
        words = np.zeros(0, dtype="<u4")
        if b and n:
            spans = blocks(n)
            models, counts = [], np.zeros(1 << b, dtype=np.int64)
            for lo, hi in spans:
                models.append(self._model(counts))
                counts += np.bincount(sym[lo:hi], minlength=1 << b)
            coder = self._lib.stream.stack.AnsCoder()
            for (lo, hi), model in zip(reversed(spans), reversed(models)):
                coder.encode_reverse(sym[lo:hi].astype(np.int32), model)
            words = coder.get_compressed().astype("<u4")
        return b"".join([struct.pack("<B", b), _leb(words.shape[0]), words.tobytes(),
                         pack_bits(j, shift)])

    def decode_parts(self, view, at: int, n: int, t: int):
        """(j, the offset after the part)."""
        if at >= len(view):
            raise ZealError("adaptive: blob truncated")
        b = view[at]
        if b > min(t, B_MAX_BITS):
            raise ZealError("adaptive: blob made for another profile (t = %d, b = %d)" % (t, b))
        nwords, at = _unleb(view, at + 1)
        if at + 4 * nwords > len(view):
            raise ZealError("adaptive: blob truncated")
        shift = t - b
        if b and n:
            words = np.frombuffer(bytes(view[at:at + 4 * nwords]), dtype="<u4").astype(np.uint32)
            coder = self._lib.stream.stack.AnsCoder(words)
            sym = np.empty(n, dtype=np.int64)
            counts = np.zeros(1 << b, dtype=np.int64)
            for lo, hi in blocks(n):
                got = np.asarray(coder.decode(self._model(counts), hi - lo), dtype=np.int64)
                sym[lo:hi] = got
                counts += np.bincount(got, minlength=1 << b)
        else:
            sym = np.zeros(n, dtype=np.int64)
        at += 4 * nwords
        low = unpack_bits(view[at:], n, shift)
        at += -(-n * shift // 8)
        return (sym.astype(np.uint64) << np.uint64(shift)) | low, at

    def encode_symbols(self, j: np.ndarray, t: int) -> bytes:
        """The blob of offsets j (uint64, each < 2^t)."""
        return MAGIC + _leb(j.shape[0]) + struct.pack("<B", t) + self.encode_parts(j, t)

    def decode_symbols(self, blob, t_expected: int, limit=None) -> np.ndarray:
        view = memoryview(blob)
        n, at = header(view, MAGIC, limit)
        if at >= len(view) or view[at] != t_expected:
            raise ZealError("adaptive: blob made for another profile")
        return self.decode_parts(view, at + 1, n, t_expected)[0]


def header(view, magic: bytes, limit=None):
    """(n, offset after it) of a blob starting with `magic` and n (LEB128), n <= limit."""
    if len(view) < len(magic) or bytes(view[:len(magic)]) != magic:
        raise ZealError("adaptive: not an adaptive blob of this stream's shape")
    n, at = _unleb(view, len(magic))
    if limit is not None and n > limit:
        raise ZealError("adaptive: the blob holds %d symbols, more than the %d expected"
                        % (n, limit))
    return n, at
