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


def _read_model(view, at: int, limit: int, name: str, full: bool = False):
    """(counts int64, shift, next offset) of a model written by _value_model for values in
    0..limit-1 (`full`: as it was called); ZealError for one it cannot have written."""
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
    if full and shift:
        raise ZealError("%s: a level model with buckets" % name)
    counts = unpack_bits(view[at:at + size], buckets, width).astype(np.int64)
    return counts, shift, at + size


class _Ans:
    """constriction's stack coder: the parts pushed in reverse of the order they are read. A
    model is None where there is one outcome (nothing to code)."""

    def __init__(self):
        import constriction
        self.lib = constriction

    def uniform(self, size):
        return self.lib.stream.model.Uniform(int(size)) if size > 1 else None

    def categorical(self, counts):
        if counts.size <= 1:
            return None
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


# ---- what the four codecs share: a shape (pairs, messages) times a coder (packed, rans) ---------
class _Codec:
    """The profile required; a blob's header (MAGIC, then FMT's fields, n first) read and
    checked before anything else: n against `limit` (in the shape's symbols), the fields
    against the profile (the shape's or the codec's `_check`); then `_decode` reads the rest."""
    needs_profile = True
    name = package = shape = MAGIC = FMT = None

    def encode(self, symbols, profile) -> bytes:
        self._need(profile)
        return self._encode(symbols, profile)

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        self._need(profile)
        size = len(self.MAGIC) + struct.calcsize(self.FMT)
        if len(blob) < size or bytes(blob[:len(self.MAGIC)]) != self.MAGIC:
            raise ZealError("%s: not a %s blob of this stream's shape" % (self.name, self.name))
        fields = struct.unpack_from(self.FMT, blob, len(self.MAGIC))
        if limit is not None and self._symbols(*fields) > limit:
            raise ZealError("%s: the blob holds more than the %d symbols expected"
                            % (self.name, limit))
        self._check(profile, *fields)
        return self._read(memoryview(blob), size, fields[0], profile)

    def _need(self, profile):
        if profile is None:
            raise ZealError("codec %r needs the reports' profile" % self.name)

    def _head(self, *fields) -> bytes:
        return self.MAGIC + struct.pack(self.FMT, *fields)

    def _read(self, view, at, n, profile):
        # packed's own errors pass as they are (the archive names their type); rans guards
        return self._decode(view, at, n, profile)

    def __repr__(self):
        return "<codec %s (%s)>" % (self.name, self.shape)


class _Packed(_Codec):
    name, package = "packed", None


class _Rans(_Codec):
    """Per group of values (a pairs stream's attributes, a messages stream's coordinates) one
    stored value model and its part of the ANS words; a damaged blob is one ZealError line
    whatever constriction or numpy raise on it."""
    name, package = "rans", "constriction"

    def __init__(self):
        self._ans = _Ans()

    def _read(self, view, at, n, profile):
        try:
            return self._decode(view, at, n, profile)
        except ZealError:
            raise
        except Exception as exc:   # constriction's and numpy's errors on a damaged blob
            raise ZealError("%s: cannot decode the blob (%s)" % (self.name, type(exc).__name__)) \
                from None

    def _models(self, groups, limits, full=False):
        """(the groups' value models as stored, their ANS parts, their shifts)."""
        stored, parts, shifts = [], [], []
        for values, limit in zip(groups, limits):
            model, sym, counts, shift = _value_model(values, limit, full)
            stored.append(model)
            parts.append((sym, self._ans.categorical(counts)))
            shifts.append(shift)
        return b"".join(stored), parts, shifts

    def _read_models(self, view, at, limits, full=False):
        """([(counts, shift)] as `_models` stored them, next offset)."""
        models = []
        for limit in limits:
            counts, shift, at = _read_model(view, at, limit, self.name, full)
            models.append((counts, shift))
        return models, at

    def _decode_groups(self, coder, models, labels, mismatch):
        """[(where, bucket symbols)] a group, decoded in turn: group g stands where labels == g,
        and its model must count as many values as stand there (ZealError `mismatch` % (g,
        counted, there) otherwise)."""
        out = []
        for g, (counts, _shift) in enumerate(models):
            where = labels == g
            there = int(where.sum())
            if int(counts.sum()) != there:
                raise ZealError(mismatch % (g, int(counts.sum()), there))
            out.append((where, _decode_symbols(coder, self._ans.categorical(counts), there)))
        return out


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


class _Pairs(_Codec):
    shape, FMT = "pairs", "<QBB"     # n reports, d, k

    @staticmethod
    def _symbols(n, d, k):
        return 2 * k * n

    def _check(self, profile, n, d, k):
        if (d, k) != (profile.d, profile.k):
            raise ZealError("%s: blob made for d = %d, k = %d; the profile has d = %d, k = %d"
                            % (self.name, d, k, profile.d, profile.k))


class PairsPacked(_Pairs, _Packed):
    MAGIC = b"ZPP1"

    def _encode(self, symbols, profile) -> bytes:
        j, y = _pairs(symbols, profile)
        widths = np.array([a.bits for a in profile.attributes], dtype=np.int64)
        return (self._head(j.shape[0], profile.d, profile.k)
                + pack_varwidth(j.reshape(-1), np.full(j.size, profile.index_bits))
                + pack_varwidth(y.reshape(-1), widths[j.reshape(-1)]))

    def _decode(self, view, at, n, profile):
        d, k = profile.d, profile.k
        ib = profile.index_bits
        j = unpack_varwidth(view[at:], np.full(n * k, ib)).astype(np.int64)
        at += -(-n * k * ib // 8)
        if j.size and int(j.max()) >= d:
            raise ZealError("packed: an attribute index %d >= d = %d" % (int(j.max()), d))
        widths = np.array([a.bits for a in profile.attributes], dtype=np.int64)
        y = unpack_varwidth(view[at:], widths[j])
        return np.stack([j.astype(np.uint64), y], axis=1).reshape(-1)


class PairsRans(_Pairs, _Rans):
    MAGIC = b"ZRP1"

    def _encode(self, symbols, profile) -> bytes:
        j, y = _pairs(symbols, profile)
        d, k = profile.d, profile.k
        limits = _limits(profile)
        groups = [y[j == a] for a in range(len(limits))]   # a report has one pair of a at most
        models, parts, shifts = self._models(groups, limits)
        ranks = (subset_ranks(j, d), self._ans.uniform(math.comb(d, k)))
        lows = [pack_bits(vals, shift) for vals, shift in zip(groups, shifts)]
        return b"".join([self._head(j.shape[0], d, k), models, self._ans.encode([ranks] + parts)]
                        + lows)

    def _decode(self, view, at, n, profile):
        d, k = profile.d, profile.k
        models, at = self._read_models(view, at, _limits(profile))
        coder, at = self._ans.decoder(view, at, self.name)
        ranks = _decode_symbols(coder, self._ans.uniform(math.comb(d, k)), n)
        j = subsets(d, k)[ranks]
        y = np.zeros(j.shape, dtype=np.uint64)
        groups = self._decode_groups(coder, models, j, "rans: attribute %d's model counts %d "
                                     "values; its reports carry %d")
        for (where, sym), (counts, shift) in zip(groups, models):
            low = unpack_bits(view[at:], sym.size, shift)
            at += -(-sym.size * shift // 8)
            y[where] = (sym.astype(np.uint64) << np.uint64(shift)) | low
        return np.stack([j.astype(np.uint64), y], axis=2).reshape(-1)


# ---- messages ---------------------------------------------------------------------------------
class _Messages(_Codec):
    shape = "messages"

    @staticmethod
    def _symbols(n, *fields):
        return n


class MessagesPacked(_Messages, _Packed):
    MAGIC, FMT = b"ZPM1", "<QB"      # n, m

    def _encode(self, symbols, profile) -> bytes:
        s = np.asarray(symbols, dtype=np.uint64)
        return self._head(s.size, profile.bits) + pack_bits(s, profile.bits)

    def _check(self, profile, n, m):
        if m != profile.bits:
            raise ZealError("packed: blob has m = %d bits, the profile m = %d"
                            % (m, profile.bits))

    def _decode(self, view, at, n, profile):
        return unpack_bits(view[at:], n, profile.bits)


class MessagesRans(_Messages, _Rans):
    MAGIC, FMT = b"ZRM1", "<QBBHH"   # n, m, coord_bits, d, levels

    @staticmethod
    def _split(s, p):
        cb = p.coord_bits
        c = (s & np.uint64((1 << cb) - 1)).astype(np.int64)
        y = s >> np.uint64(cb)
        valid = (c < p.d) & (y <= np.uint64(p.k))
        return c, y, valid

    def _encode(self, symbols, profile) -> bytes:
        p = profile.params
        s = np.asarray(symbols, dtype=np.uint64)
        c, y, valid = self._split(s, p)
        cv, yv = c[valid], y[valid]
        models, parts, _ = self._models([yv[cv == coord] for coord in range(p.d)],
                                        [p.k + 1] * p.d, full=True)
        bad = np.flatnonzero(~valid)
        width = int(s.size).bit_length()
        return b"".join([self._head(s.size, profile.bits, p.coord_bits, p.d, p.k + 1), models,
                         self._ans.encode([(cv, self._ans.uniform(p.d))] + parts),
                         struct.pack("<Q", bad.size), pack_bits(bad.astype(np.uint64), width),
                         pack_bits(s[bad], profile.bits)])

    def _check(self, profile, n, m, cb, d, levels):
        p = profile.params
        if (m, cb, d, levels) != (profile.bits, p.coord_bits, p.d, p.k + 1):
            raise ZealError("rans: blob made for another shuffle profile (m = %d, %d "
                            "coordinates, %d levels)" % (m, d, levels))

    def _decode(self, view, at, n, profile):
        p = profile.params
        models, at = self._read_models(view, at, [p.k + 1] * p.d, full=True)
        coder, at = self._ans.decoder(view, at, self.name)
        if len(view) < at + 8:
            raise ZealError("rans: blob truncated before its invalid messages")
        # the invalid messages' count comes after the ANS words, but is needed first
        (nbad,) = struct.unpack_from("<Q", view, at)
        at += 8
        if nbad > n:
            raise ZealError("rans: %d invalid messages among %d" % (nbad, n))
        nvalid = n - nbad
        cv = _decode_symbols(coder, self._ans.uniform(p.d), nvalid)
        yv = np.zeros(nvalid, dtype=np.uint64)
        for where, sym in self._decode_groups(coder, models, cv, "rans: coordinate %d's model "
                                              "counts %d levels; %d messages carry it"):
            yv[where] = sym.astype(np.uint64)
        pos, bad, _ = _invalid(view, at, n, nbad, profile, self.name)
        return _messages(n, pos, bad, cv, yv, p)


def _invalid(view, at, n, nbad, profile, name):
    """(positions, messages, next offset) of the invalid messages a blob keeps apart."""
    width = int(n).bit_length()
    pos = unpack_bits(view[at:], nbad, width).astype(np.int64)
    at += -(-nbad * width // 8)
    bad = unpack_bits(view[at:], nbad, profile.bits)
    at += -(-nbad * profile.bits // 8)
    if nbad and (int(pos.max()) >= n or np.unique(pos).size != nbad):
        raise ZealError("%s: invalid messages' positions out of range or repeated" % name)
    return pos, bad, at


def _messages(n, pos, bad, cv, yv, p) -> np.ndarray:
    """The n messages: the valid ones rebuilt from coordinate and level, the invalid in
    their places."""
    out = np.empty(n, dtype=np.uint64)
    mask = np.ones(n, dtype=bool)
    mask[pos] = False
    out[mask] = cv.astype(np.uint64) | (yv << np.uint64(p.coord_bits))
    out[pos] = bad
    return out


# ---- adaptive (compress.adaptive): the uniform part under its exact law, each group of values
# under a model the decoder learns as it decodes (no model stored) ----------------------------------
def _t(limit: int) -> int:
    return max(int(limit) - 1, 0).bit_length()


class _AdaptiveShape:
    """The profile required; a damaged blob is one ZealError whatever constriction raises."""
    needs_profile, name, package = True, "adaptive", "constriction"

    def __init__(self):
        from .adaptive import Adaptive
        self._coder = Adaptive()

    def encode(self, symbols, profile, context=None) -> bytes:
        if profile is None:
            raise ZealError("codec %r needs the reports' profile" % self.name)
        return self._encode(symbols, profile, {} if context is None else context)

    def decode(self, blob, profile, limit=None, context=None) -> np.ndarray:
        from .adaptive import header

        if profile is None:
            raise ZealError("codec %r needs the reports' profile" % self.name)
        view = memoryview(blob)
        n, at = header(view, self.MAGIC, None if limit is None else self._reports(limit,
                                                                                   profile))
        try:
            return self._decode(view, at, n, profile, {} if context is None else context)
        except ZealError:
            raise
        except Exception as exc:   # constriction's and numpy's errors on a damaged blob
            raise ZealError("adaptive: cannot decode the blob (%s)" % type(exc).__name__) \
                from None

    def observe(self, context, symbols, profile) -> None:
        """Add a stream's values to the context (per group: its histogram)."""
        from .adaptive import histogram

        for g, (values, t) in enumerate(self._groups(symbols, profile)):
            h = histogram(values.astype(np.uint64), t)
            context[g] = h if g not in context else context[g] + h

    def __repr__(self):
        return "<codec adaptive (%s)>" % self.shape


class PairsAdaptive(_AdaptiveShape):
    """Blob: "ZAP1", n (LEB128), the subset ranks' ANS words (uniform on C(d, k)), then per
    attribute its values (in report order) as an adaptive part at the attribute's width."""
    shape, MAGIC = "pairs", b"ZAP1"

    @staticmethod
    def _reports(limit, profile):
        return limit // (2 * profile.k)

    def _groups(self, symbols, profile):
        j, y = _pairs(symbols, profile)
        return [(y[j == a], _t(limit)) for a, limit in enumerate(_limits(profile))]

    def _encode(self, symbols, profile, context) -> bytes:
        j, y = _pairs(symbols, profile)
        d, k = profile.d, profile.k
        groups = [(y[j == a], _t(limit), context.get(a))
                  for a, limit in enumerate(_limits(profile))]
        return b"".join([self.MAGIC, self._coder_leb(j.shape[0]), self._coder.encode_all(
            (math.comb(d, k), subset_ranks(j, d)), groups)])

    def _coder_leb(self, n):
        from .adaptive import _leb
        return _leb(n)

    def _decode(self, view, at, n, profile, context):
        d, k = profile.d, profile.k
        limits = _limits(profile)
        table = subsets(d, k)

        def groups_for(ranks):
            if ranks.size and int(ranks.max()) >= math.comb(d, k):
                raise ZealError("adaptive: a subset rank out of range")
            j = table[ranks]
            return [(int((j == a).sum()), _t(limit), context.get(a))
                    for a, limit in enumerate(limits)]

        ranks, values, at = self._coder.decode_all(view, at, (math.comb(d, k), n),
                                                   len(limits), groups_for)
        j = table[ranks]
        y = np.zeros(j.shape, dtype=np.uint64)
        for a, (limit, vals) in enumerate(zip(limits, values)):
            if vals.size and int(vals.max()) >= limit:
                raise ZealError("adaptive: attribute %d has a value out of its range" % a)
            y[j == a] = vals
        return np.stack([j.astype(np.uint64), y], axis=2).reshape(-1)


class MessagesAdaptive(_AdaptiveShape):
    """Blob: "ZAM1", n (LEB128), the count of invalid messages (LEB128), their positions and
    m bits (as rans keeps them), the coordinates' ANS words (uniform on d), then per
    coordinate its levels as an adaptive part."""
    shape, MAGIC = "messages", b"ZAM1"

    @staticmethod
    def _reports(limit, profile):
        return limit

    def _groups(self, symbols, profile):
        p = profile.params
        c, y, valid = MessagesRans._split(np.asarray(symbols, dtype=np.uint64), p)
        cv, yv = c[valid], y[valid]
        return [(yv[cv == coord], _t(p.k + 1)) for coord in range(p.d)]

    def _encode(self, symbols, profile, context) -> bytes:
        from .adaptive import _leb

        p = profile.params
        s = np.asarray(symbols, dtype=np.uint64)
        c, y, valid = MessagesRans._split(s, p)
        bad = np.flatnonzero(~valid)
        width = int(s.size).bit_length()
        cv, yv = c[valid], y[valid]
        groups = [(yv[cv == coord], _t(p.k + 1), context.get(coord)) for coord in range(p.d)]
        return b"".join([self.MAGIC, _leb(s.size), _leb(bad.size),
                         pack_bits(bad.astype(np.uint64), width), pack_bits(s[bad], profile.bits),
                         self._coder.encode_all((p.d, cv), groups)])

    def _decode(self, view, at, n, profile, context):
        from .adaptive import _unleb

        p = profile.params
        nbad, at = _unleb(view, at)
        if nbad > n:
            raise ZealError("adaptive: %d invalid messages among %d" % (nbad, n))
        pos, bad, at = _invalid(view, at, n, nbad, profile, self.name)
        nvalid = n - nbad

        def groups_for(cv):
            if cv.size and int(cv.max()) >= p.d:
                raise ZealError("adaptive: a coordinate out of range")
            return [(int((cv == coord).sum()), _t(p.k + 1), context.get(coord))
                    for coord in range(p.d)]

        cv, values, at = self._coder.decode_all(view, at, (p.d, nvalid), p.d, groups_for)
        yv = np.zeros(nvalid, dtype=np.uint64)
        for coord, vals in enumerate(values):
            if vals.size and int(vals.max()) > p.k:
                raise ZealError("adaptive: a level out of range")
            yv[cv == coord] = vals
        return _messages(n, pos, bad, cv, yv, p)


# ---- the registry's codecs on these shapes ------------------------------------------------------
def _adapt(name, codec, table):
    if not getattr(codec, "needs_profile", False):
        return codec                  # a generic codec: the symbols as a uint64 array
    make = table.get(name)
    return make() if make is not None else None


def for_pairs(name, codec):
    """The codec the archive runs on pairs streams for the registry's codec `name` (None: it
    does not apply)."""
    return _adapt(name, codec, {"packed": PairsPacked, "rans": PairsRans,
                                "adaptive": PairsAdaptive})


def for_messages(name, codec):
    return _adapt(name, codec, {"packed": MessagesPacked, "rans": MessagesRans,
                                "adaptive": MessagesAdaptive})


__all__ = ["PairsPacked", "PairsRans", "MessagesPacked", "MessagesRans", "PairsAdaptive",
           "MessagesAdaptive", "exact_law",
           "exact_law_bits", "subsets", "subset_ranks", 
           "for_pairs", "for_messages"]
