"""The profile-aware codecs (`packed`, `rans`) on the streams of multi-attribute and shuffle
profiles (compress.streams: the "pairs" and "messages" shapes). The other codecs of the table
(greedygd, zstd, lz4, bz2, lzma, pcodec) need no profile and take these streams as they take
the grid's: the symbols as a uint64 array.

pairs (a multi report: k pairs (j, y), j ascending below d; stream j1, y1, ..., jk, yk):
- packed ("ZPP1"): the payload's own bits, reordered: every index field (ceil(log2 d) bits),
  then every value field at its attribute's width (m, or c for a categorical attribute), both
  in report order, least significant bit first: exactly the bits the devices sent, without
  the frames' padding. Header: magic, n reports (u64), d, k (u8).
- rans ("ZRP1"): a report's attribute subset under its exact law (kinds: `uniform_part`):
  the sampler draws a uniform k-subset of the d attributes, so the subset's colex rank
  r = sum_i C(j_i, i + 1) is coded with rANS under the uniform law on 0..C(d, k) - 1 (no
  model stored: log2 C(d, k) bits a report); then, attribute by attribute, the values its
  reports carried (in report order) under the empirical law of their top bits (the counts of
  each bucket, stored, as the grid's rans: rivals.Rans) with the low bits raw. A value's law
  depends on the readings, so no exact law exists for it. Header: magic, n (u64), d, k (u8),
  then per attribute t, shift (u8), buckets (u32), count width (u8) and the packed counts,
  then the number of 32-bit ANS words (u64), the words, and per attribute the packed low
  bits.

messages (a shuffle message m = c | y << coord_bits, c the coordinate, y the level):
- packed ("ZPM1"): the m bits of each message, packed: what the shuffler stored. Header:
  magic, n (u64), m (u8).
- rans ("ZRM1"): a message's coordinate under its exact law (randomise: UNIFORM(d), 1 / d
  each), then per coordinate its messages' levels under their empirical law (counts of the
  k + 1 levels, stored). Messages no randomiser sends (c >= d or y > k: none in a store the
  collector wrote from real shufflers) are kept apart: their count, positions and m bits.
  Header: magic, n (u64), m, coord_bits (u8), d (u16), levels (u16), the d level models, the
  ANS words (count u64), then the invalid messages: count (u64), positions packed at
  bitlength(n) bits, messages at m bits.

The exact laws are quantised by the coder (constriction's Uniform model, 24-bit precision);
`exact_law_bits(profile)` is their cost in bits a report (log2 N).

Decoding untrusted blobs: n is checked against `limit` (in symbols: 2 k n for pairs, n for
messages) before anything is allocated; every header field is checked against the profile;
model counts must sum to the values decoded; anything else a damaged blob does is a
ZealError, one line.
"""
import math
import struct
from functools import lru_cache
from itertools import combinations

import numpy as np

from ...errors import ZealError
from ...mechanism import kinds
from ...wire.bits import pack_bits, pack_varwidth, unpack_bits, unpack_varwidth
from .rivals import RANS_MAX_BUCKET_BITS, choose_buckets


# ---- the exact laws -----------------------------------------------------------------------------
def exact_law(profile):
    """(what, N): the report part whose law is uniform over N outcomes (kinds' uniform_part),
    or None."""
    return kinds.of(profile).uniform_part(profile)


def exact_law_bits(profile) -> float:
    """log2 N: the bits a report's exact part costs under its law (0 without one)."""
    law = exact_law(profile)
    return math.log2(law[1]) if law else 0.0


@lru_cache(maxsize=64)
def subsets(d: int, k: int) -> np.ndarray:
    """Every k-subset of range(d), ascending within, in colex order: row r is the subset of
    rank r = sum_i C(j_i, i + 1)."""
    rows = sorted(combinations(range(d), k), key=lambda c: c[::-1])
    return np.array(rows, dtype=np.int64).reshape(len(rows), k)


def subset_ranks(j: np.ndarray, d: int) -> np.ndarray:
    """(n, k) ascending attribute indices -> their colex ranks (int64)."""
    j = np.asarray(j, dtype=np.int64)
    k = j.shape[1]
    comb = np.array([[math.comb(a, b) for b in range(k + 1)] for a in range(d)],
                    dtype=np.int64)
    return comb[j, np.arange(1, k + 1)].sum(axis=1) if k else np.zeros(j.shape[0], np.int64)


# ---- helpers ------------------------------------------------------------------------------------
def _too_many(name, limit):
    return ZealError("%s: the blob holds more than the %d symbols expected" % (name, limit))


def _header(blob, magic, fmt, name):
    size = len(magic) + struct.calcsize(fmt)
    if len(blob) < size or bytes(blob[:len(magic)]) != magic:
        raise ZealError("%s: not a %s blob of this stream's shape" % (name, name))
    return struct.unpack_from(fmt, blob, len(magic)), size


def _need(profile, name):
    if profile is None:
        raise ZealError("codec %r needs the reports' profile" % name)


_MODEL = "<BBIB"


def _value_model(values: np.ndarray, limit: int, full: bool = False):
    """(model bytes, bucket symbols int64, counts, shift) of values in 0..limit-1: their top
    bits' counts (rivals.Rans's buckets; every value its own bucket when `full`), the rest
    raw."""
    values = np.asarray(values, dtype=np.uint64)
    n = values.size
    t = int(limit - 1).bit_length()
    b = t if full else (choose_buckets(values, t) if n else 0)
    shift = t - b
    sym = (values >> np.uint64(shift)).astype(np.int64)
    buckets = ((limit - 1) >> shift) + 1
    counts = np.bincount(sym, minlength=buckets)
    width = int(counts.max()).bit_length() if n else 0
    return (struct.pack(_MODEL, t, shift, buckets, width)
            + pack_bits(counts.astype(np.uint64), width)), sym, counts, shift


def _read_model(view, at: int, limit: int, name: str):
    """(counts int64, shift, next offset) of a model written by _value_model for values in
    0..limit-1; ZealError for one it cannot have written."""
    if len(view) < at + struct.calcsize(_MODEL):
        raise ZealError("%s: blob truncated in a value model" % name)
    t, shift, buckets, width = struct.unpack_from(_MODEL, view, at)
    at += struct.calcsize(_MODEL)
    if t != int(limit - 1).bit_length() or shift > t or width > 64 \
            or buckets > 1 << RANS_MAX_BUCKET_BITS or buckets != ((limit - 1) >> shift) + 1:
        raise ZealError("%s: a value model made for another profile or out of range (t = %d, "
                        "shift %d, %d buckets, counts of %d bits)" % (name, t, shift, buckets,
                                                                      width))
    size = -(-buckets * width // 8)
    if len(view) < at + size:
        raise ZealError("%s: blob truncated in a value model" % name)
    counts = unpack_bits(view[at:at + size], buckets, width).astype(np.int64)
    return counts, shift, at + size


class _Ans:
    """constriction's stack coder: the parts pushed in reverse of the order they are read."""

    def __init__(self):
        import constriction
        self.lib = constriction

    def uniform(self, size):
        return self.lib.stream.model.Uniform(int(size))

    def categorical(self, counts):
        return self.lib.stream.model.Categorical(np.asarray(counts, dtype=np.float64),
                                                 perfect=False)

    def encode(self, parts) -> bytes:
        """parts: [(symbols, model or None)] in reading order -> u64 word count + words."""
        coder = self.lib.stream.stack.AnsCoder()
        for sym, model in reversed(parts):
            if model is not None and len(sym):
                coder.encode_reverse(np.asarray(sym, dtype=np.int32), model)
        words = coder.get_compressed().astype("<u4")
        return struct.pack("<Q", words.shape[0]) + words.tobytes()

    def decoder(self, view, at: int, name: str):
        if len(view) < at + 8:
            raise ZealError("%s: blob truncated before its ANS words" % name)
        (nwords,) = struct.unpack_from("<Q", view, at)
        at += 8
        if len(view) < at + 4 * nwords:
            raise ZealError("%s: blob truncated in its ANS words" % name)
        words = np.frombuffer(bytes(view[at:at + 4 * nwords]), dtype="<u4").astype(np.uint32)
        return self.lib.stream.stack.AnsCoder(words), at + 4 * nwords


def _decode_symbols(coder, model, count: int, constant: int = 0) -> np.ndarray:
    if model is None or count == 0:
        return np.full(count, constant, dtype=np.int64)
    return np.asarray(coder.decode(model, int(count)), dtype=np.int64)


def _values_part(ans, counts, shift):
    """The model to code one attribute's (coordinate's) bucket symbols with: None where there is
    one bucket (nothing to code)."""
    return ans.categorical(counts) if counts.size > 1 else None


def _guard(name, fn):
    try:
        return fn()
    except ZealError:
        raise
    except Exception as exc:   # constriction's and numpy's errors on a damaged blob
        raise ZealError("%s: cannot decode the blob (%s)" % (name, type(exc).__name__)) \
            from None


# ---- pairs ------------------------------------------------------------------------------------
def _pairs(symbols, profile):
    s = np.asarray(symbols, dtype=np.uint64)
    k = profile.k
    if s.size % (2 * k):
        raise ZealError("pairs: %d symbols are not whole reports of k = %d pairs" % (s.size, k))
    p = s.reshape(-1, k, 2)
    return p[:, :, 0].astype(np.int64), p[:, :, 1]


def _limits(profile):
    """Per attribute, the values its reports take: 0..limit-1."""
    return [int(v) for v in profile.value_limits()]


class PairsPacked:
    name, package, needs_profile = "packed", None, True
    MAGIC, FMT = b"ZPP1", "<QBB"

    def encode(self, symbols, profile) -> bytes:
        _need(profile, self.name)
        j, y = _pairs(symbols, profile)
        widths = np.array([a.bits for a in profile.attributes], dtype=np.int64)
        return (self.MAGIC + struct.pack(self.FMT, j.shape[0], profile.d, profile.k)
                + pack_varwidth(j.reshape(-1), np.full(j.size, profile.index_bits))
                + pack_varwidth(y.reshape(-1), widths[j.reshape(-1)]))

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need(profile, self.name)
        (n, d, k), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and 2 * k * n > limit:
            raise _too_many(self.name, limit)
        if (d, k) != (profile.d, profile.k):
            raise ZealError("packed: blob made for d = %d, k = %d; the profile has d = %d, "
                            "k = %d" % (d, k, profile.d, profile.k))
        view = memoryview(blob)
        ib = profile.index_bits
        j = unpack_varwidth(view[at:], np.full(n * k, ib)).astype(np.int64)
        at += -(-n * k * ib // 8)
        if j.size and int(j.max()) >= d:
            raise ZealError("packed: an attribute index %d >= d = %d" % (int(j.max()), d))
        widths = np.array([a.bits for a in profile.attributes], dtype=np.int64)
        y = unpack_varwidth(view[at:], widths[j])
        return np.stack([j.astype(np.uint64), y], axis=1).reshape(-1)

    def __repr__(self):
        return "<codec packed (pairs)>"


class PairsRans:
    name, package, needs_profile = "rans", "constriction", True
    MAGIC, FMT = b"ZRP1", "<QBB"

    def __init__(self):
        self._ans = _Ans()

    def encode(self, symbols, profile) -> bytes:
        _need(profile, self.name)
        j, y = _pairs(symbols, profile)
        d, k, n = profile.d, profile.k, j.shape[0]
        size = math.comb(d, k)
        out = [self.MAGIC, struct.pack(self.FMT, n, d, k)]
        parts = [(subset_ranks(j, d), self._ans.uniform(size) if size > 1 else None)]
        lows = []
        for a, limit in enumerate(_limits(profile)):
            vals = y[j == a]                    # one pair of attribute a a report at most
            model, sym, counts, shift = _value_model(vals, limit)
            out.append(model)
            parts.append((sym, _values_part(self._ans, counts, shift)))
            lows.append(pack_bits(vals, shift))
        out.append(self._ans.encode(parts))
        return b"".join(out + lows)

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need(profile, self.name)
        (n, d, k), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and 2 * k * n > limit:
            raise _too_many(self.name, limit)
        if (d, k) != (profile.d, profile.k):
            raise ZealError("rans: blob made for d = %d, k = %d; the profile has d = %d, k = %d"
                            % (d, k, profile.d, profile.k))
        return _guard(self.name, lambda: self._decode(memoryview(blob), at, n, profile))

    def _decode(self, view, at, n, profile):
        d, k = profile.d, profile.k
        limits = _limits(profile)
        models = []
        for limit in limits:
            counts, shift, at = _read_model(view, at, limit, self.name)
            models.append((counts, shift))
        coder, at = self._ans.decoder(view, at, self.name)
        size = math.comb(d, k)
        ranks = _decode_symbols(coder, self._ans.uniform(size) if size > 1 else None, n)
        j = subsets(d, k)[ranks]
        y = np.zeros(j.shape, dtype=np.uint64)
        syms = []
        for a, (counts, shift) in enumerate(models):
            where = j == a
            c = int(where.sum())
            if int(counts.sum()) != c:
                raise ZealError("rans: attribute %d's model counts %d values; its reports "
                                "carry %d" % (a, int(counts.sum()), c))
            syms.append((where, c, _decode_symbols(coder, _values_part(self._ans, counts,
                                                                       shift), c)))
        for (where, c, sym), (counts, shift) in zip(syms, models):
            low = unpack_bits(view[at:], c, shift)
            at += -(-c * shift // 8)
            y[where] = (sym.astype(np.uint64) << np.uint64(shift)) | low
        return np.stack([j.astype(np.uint64), y], axis=2).reshape(-1)

    def __repr__(self):
        return "<codec rans (pairs)>"


# ---- messages ---------------------------------------------------------------------------------
class MessagesPacked:
    name, package, needs_profile = "packed", None, True
    MAGIC, FMT = b"ZPM1", "<QB"

    def encode(self, symbols, profile) -> bytes:
        _need(profile, self.name)
        s = np.asarray(symbols, dtype=np.uint64)
        return self.MAGIC + struct.pack(self.FMT, s.size, profile.bits) + pack_bits(
            s, profile.bits)

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need(profile, self.name)
        (n, m), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and n > limit:
            raise _too_many(self.name, limit)
        if m != profile.bits:
            raise ZealError("packed: blob has m = %d bits, the profile m = %d"
                            % (m, profile.bits))
        return unpack_bits(memoryview(blob)[at:], n, m)

    def __repr__(self):
        return "<codec packed (messages)>"


class MessagesRans:
    name, package, needs_profile = "rans", "constriction", True
    MAGIC, FMT = b"ZRM1", "<QBBHH"

    def __init__(self):
        self._ans = _Ans()

    @staticmethod
    def _split(s, p):
        cb = p.coord_bits
        c = (s & np.uint64((1 << cb) - 1)).astype(np.int64)
        y = s >> np.uint64(cb)
        valid = (c < p.d) & (y <= np.uint64(p.k))
        return c, y, valid

    def encode(self, symbols, profile) -> bytes:
        _need(profile, self.name)
        p = profile.params
        s = np.asarray(symbols, dtype=np.uint64)
        c, y, valid = self._split(s, p)
        out = [self.MAGIC, struct.pack(self.FMT, s.size, profile.bits, p.coord_bits, p.d,
                                       p.k + 1)]
        cv, yv = c[valid], y[valid]
        parts = [(cv, self._ans.uniform(p.d) if p.d > 1 else None)]
        for coord in range(p.d):
            model, sym, counts, shift = _value_model(yv[cv == coord], p.k + 1, full=True)
            out.append(model)
            parts.append((sym, _values_part(self._ans, counts, shift)))
        out.append(self._ans.encode(parts))
        bad = np.flatnonzero(~valid)
        width = int(s.size).bit_length()
        out += [struct.pack("<Q", bad.size), pack_bits(bad.astype(np.uint64), width),
                pack_bits(s[bad], profile.bits)]
        return b"".join(out)

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need(profile, self.name)
        p = profile.params
        (n, m, cb, d, levels), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and n > limit:
            raise _too_many(self.name, limit)
        if (m, cb, d, levels) != (profile.bits, p.coord_bits, p.d, p.k + 1):
            raise ZealError("rans: blob made for another shuffle profile (m = %d, %d "
                            "coordinates, %d levels)" % (m, d, levels))
        return _guard(self.name, lambda: self._decode(memoryview(blob), at, n, profile))

    def _decode(self, view, at, n, profile):
        p = profile.params
        models = []
        for _ in range(p.d):
            counts, shift, at = _read_model(view, at, p.k + 1, self.name)
            if shift:
                raise ZealError("rans: a level model with buckets")
            models.append(counts)
        coder, at = self._ans.decoder(view, at, self.name)
        if len(view) < at + 8:
            raise ZealError("rans: blob truncated before its invalid messages")
        # the invalid messages' count comes after the ANS words, but is needed first
        (nbad,) = struct.unpack_from("<Q", view, at)
        at += 8
        if nbad > n:
            raise ZealError("rans: %d invalid messages among %d" % (nbad, n))
        nvalid = n - nbad
        cv = _decode_symbols(coder, self._ans.uniform(p.d) if p.d > 1 else None, nvalid)
        yv = np.zeros(nvalid, dtype=np.uint64)
        for coord, counts in enumerate(models):
            where = cv == coord
            cnt = int(where.sum())
            if int(counts.sum()) != cnt:
                raise ZealError("rans: coordinate %d's model counts %d levels; %d messages "
                                "carry it" % (coord, int(counts.sum()), cnt))
            yv[where] = _decode_symbols(coder, _values_part(self._ans, counts, 0), cnt) \
                .astype(np.uint64)
        width = int(n).bit_length()
        pos = unpack_bits(view[at:], nbad, width).astype(np.int64)
        at += -(-nbad * width // 8)
        bad = unpack_bits(view[at:], nbad, profile.bits)
        if nbad and (int(pos.max()) >= n or np.unique(pos).size != nbad):
            raise ZealError("rans: invalid messages' positions out of range or repeated")
        out = np.empty(n, dtype=np.uint64)
        mask = np.ones(n, dtype=bool)
        mask[pos] = False
        out[mask] = cv.astype(np.uint64) | (yv << np.uint64(p.coord_bits))
        out[pos] = bad
        return out

    def __repr__(self):
        return "<codec rans (messages)>"


# ---- the registry's codecs on these shapes ------------------------------------------------------
def _adapt(name, codec, table):
    if not getattr(codec, "needs_profile", False):
        return codec                  # a generic codec: the symbols as a uint64 array
    make = table.get(name)
    return make() if make is not None else None


def for_pairs(name, codec):
    """The codec the archive runs on pairs streams for the registry's codec `name` (None: it
    does not apply)."""
    return _adapt(name, codec, {"packed": PairsPacked, "rans": PairsRans})


def for_messages(name, codec):
    return _adapt(name, codec, {"packed": MessagesPacked, "rans": MessagesRans})


__all__ = ["PairsPacked", "PairsRans", "MessagesPacked", "MessagesRans", "exact_law",
           "exact_law_bits", "subsets", "subset_ranks", 
           "for_pairs", "for_messages"]
