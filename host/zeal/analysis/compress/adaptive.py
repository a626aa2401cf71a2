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

A model shared by the streams of one profile (an archive's context): the decoder of an
archive has decoded the earlier streams of a profile before a later one, whatever their
codecs, so a stream's model may start from the counts of all of them (`histogram`, kept per
profile and per group of values by the archive, zeal.analysis.compress.archive_read and
archive_write; shared_spec/archive.md). The 4 boards of a demo then learn one model, not 4.

Blob: magic "ZAD1", n (LEB128), t, b (u8), the number of 32-bit ANS words (LEB128), the words
(little-endian), the packed low bits. One ANS stream a blob, whatever it holds. The pairs and messages shapes (compress.kind_codecs) code
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


def _lg(x) -> float:
    return float(np.sum([math.lgamma(v) for v in np.asarray(x, dtype=np.float64)]))


def kt_bits(counts: np.ndarray, prior=None) -> float:
    """The Krichevsky-Trofimov code length in bits of a sequence with these bucket counts
    (independent of the order), the model starting from the `prior` counts (default none):
    -log2 prod_s G(p_s + c_s + 1/2)/G(p_s + 1/2) * G(P + B/2)/G(P + n + B/2)."""
    c = np.asarray(counts, dtype=np.float64)
    p = np.zeros_like(c) if prior is None else np.asarray(prior, dtype=np.float64)
    big_b = c.shape[0]
    live = c > 0
    ln = (math.lgamma(p.sum() + c.sum() + big_b / 2) - math.lgamma(p.sum() + big_b / 2)
          - _lg(p[live] + c[live] + 0.5) + _lg(p[live] + 0.5))
    return ln / math.log(2)


def _top(t: int) -> int:
    return min(t, B_MAX_BITS)


def _reduce(hist: np.ndarray, b: int) -> np.ndarray:
    return hist.reshape(1 << b, -1).sum(axis=1)


def histogram(j: np.ndarray, t: int) -> np.ndarray:
    """The counts of j's top min(t, B_MAX_BITS) bits: what a context keeps of a stream."""
    top = _top(t)
    v = j >> np.uint64(t - top)
    # one temporary: the shifted values (below 2^12) read as int64, which bincount takes as is
    return np.bincount(v.view(np.int64) if v.dtype == np.uint64 else v.astype(np.int64),
                       minlength=1 << top)


def choose_bits(j: np.ndarray, t: int, prior=None) -> int:
    """b in [0, min(t, B_MAX_BITS)] minimising the KT bits of the buckets (after `prior`, a
    histogram at the top bits) + the raw low bits."""
    return choose_bits_of(histogram(j, t), j.shape[0], t, prior)


def choose_bits_of(counts: np.ndarray, n: int, t: int, prior=None) -> int:
    """choose_bits from the `histogram` of the n values (what a stream read in pieces keeps:
    compress.streamed)."""
    top = _top(t)
    best, best_cost = 0, None
    for b in range(top, -1, -1):
        c = _reduce(counts, b)
        pc = None if prior is None else _reduce(prior, b)
        cost = (kt_bits(c, pc) if b else 0.0) + n * (t - b)
        if best_cost is None or cost < best_cost:
            best, best_cost = b, cost
    return best


class Adaptive:
    """The adaptive coder (module doc). `encode_all` / `decode_all` code a uniform part and
    groups of values in one ANS stream (no magic, no n: the shapes of compress.kind_codecs
    frame them); `encode_symbols` / `decode_symbols` the whole blob of one group."""
    name, package, needs_profile = "adaptive", "constriction", True

    def __init__(self):
        import constriction
        self._lib = constriction

    def _model(self, counts):
        p = counts.astype(np.float64) + 0.5
        return self._lib.stream.model.Categorical(p / p.sum(), perfect=False)

    def _start(self, prior, b):
        return (np.zeros(1 << b, dtype=np.int64) if prior is None
                else _reduce(prior, b).astype(np.int64))

    def encode_all(self, uniform, groups) -> bytes:
        """One ANS stream for a blob: `uniform` (size, symbols) -- a part whose exact law,
        uniform on 0..size-1, the decoder knows -- or None, then `groups`, [(values, t,
        prior)]: each group's bucket bits b (u8 each), the word count (LEB128) and words,
        then each group's raw low bits. One coder for every part: its final state and the
        rounding to 32-bit words are paid once a blob, not once a part."""
        plans = []
        for values, t, prior in groups:
            values = np.asarray(values, dtype=np.uint64)
            n = values.shape[0]
            b = choose_bits(values, t, prior) if n else 0
            shift = t - b
            sym = (values >> np.uint64(shift)).astype(np.int64)
            spans, models = (blocks(n) if b and n else []), []
            counts = self._start(prior, b)
            for lo, hi in spans:
                models.append(self._model(counts))
                counts = counts + np.bincount(sym[lo:hi], minlength=1 << b)
            plans.append((b, shift, sym, spans, models, values))
        coder = self._lib.stream.stack.AnsCoder()
        for b, shift, sym, spans, models, _ in reversed(plans):
            for (lo, hi), model in zip(reversed(spans), reversed(models)):
                coder.encode_reverse(sym[lo:hi].astype(np.int32), model)
        if uniform is not None and uniform[0] > 1 and len(uniform[1]):
            coder.encode_reverse(np.asarray(uniform[1], dtype=np.int32),
                                 self._lib.stream.model.Uniform(int(uniform[0])))
        words = coder.get_compressed().astype("<u4")
        return b"".join([bytes(p[0] for p in plans), _leb(words.shape[0]), words.tobytes()]
                        + [pack_bits(p[5], p[1]) for p in plans])

    def decode_all(self, view, at: int, uniform, ngroups: int, groups_for):
        """(uniform symbols or None, [values per group], offset after): the inverse of
        encode_all; `uniform` (size, n) or None; `groups_for(uniform symbols)` gives the
        groups' [(count, t, prior)] (their counts may depend on the uniform part)."""
        if at + ngroups > len(view):
            raise ZealError("adaptive: blob truncated")
        bs = [view[at + g] for g in range(ngroups)]
        nwords, at = _unleb(view, at + ngroups)
        if at + 4 * nwords > len(view):
            raise ZealError("adaptive: blob truncated")
        words = np.frombuffer(bytes(view[at:at + 4 * nwords]), dtype="<u4").astype(np.uint32)
        at += 4 * nwords
        # (no words: every symbol fitted in the coder's initial state, as it can when they
        # are all alike)
        coder = self._lib.stream.stack.AnsCoder(words)
        sym_u = None
        if uniform is not None:
            size, n = uniform
            if size > 1 and n:
                sym_u = np.asarray(coder.decode(self._lib.stream.model.Uniform(int(size)), n),
                                   dtype=np.int64)
            else:
                sym_u = np.zeros(n, dtype=np.int64)
        specs = groups_for(sym_u)
        if len(specs) != ngroups:
            raise ZealError("adaptive: blob made for another profile")
        syms = []
        for b, (n, t, prior) in zip(bs, specs):
            if b > min(t, B_MAX_BITS):
                raise ZealError("adaptive: blob made for another profile (t = %d, b = %d)"
                                % (t, b))
            sym = np.zeros(n, dtype=np.int64)
            if b and n:
                counts = self._start(prior, b)
                for lo, hi in blocks(n):
                    got = np.asarray(coder.decode(self._model(counts), hi - lo), dtype=np.int64)
                    sym[lo:hi] = got
                    counts = counts + np.bincount(got, minlength=1 << b)
            syms.append((sym, t - b))
        out = []
        for (sym, shift), (n, t, _prior) in zip(syms, specs):
            value = sym.view(np.uint64)    # the buckets (>= 0), made the values in place
            if shift:
                value <<= np.uint64(shift)
                value |= unpack_bits(view[at:], n, shift)
                at += -(-n * shift // 8)
            out.append(value)
        return sym_u, out, at

    def encode_symbols(self, j: np.ndarray, t: int, prior=None) -> bytes:
        """The blob of offsets j (uint64, each < 2^t)."""
        return (MAGIC + _leb(j.shape[0]) + struct.pack("<B", t)
                + self.encode_all(None, [(j, t, prior)]))

    def decode_symbols(self, blob, t_expected: int, limit=None, prior=None) -> np.ndarray:
        view = memoryview(blob)
        n, at = header(view, MAGIC, limit)
        if at >= len(view) or view[at] != t_expected:
            raise ZealError("adaptive: blob made for another profile")
        _, (j,), _ = self.decode_all(view, at + 1, None, 1,
                                     lambda _u: [(n, t_expected, prior)])
        return j


def header(view, magic: bytes, limit=None):
    """(n, offset after it) of a blob starting with `magic` and n (LEB128), n <= limit."""
    if len(view) < len(magic) or bytes(view[:len(magic)]) != magic:
        raise ZealError("adaptive: not an adaptive blob of this stream's shape")
    n, at = _unleb(view, len(magic))
    if limit is not None and n > limit:
        raise ZealError("adaptive: the blob holds %d symbols, more than the %d expected"
                        % (n, limit))
    return n, at
