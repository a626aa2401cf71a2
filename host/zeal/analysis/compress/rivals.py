"""The rivals of GreedyGD, on the same input: the reports' float64 bit patterns (uint64).

Every codec has the shape the registry (zeal.analysis.compress) documents: `name`,
`needs_profile`, `package` (the pip package it needs, None for the standard library),
`encode(bits, profile) -> bytes`, `decode(blob, profile) -> uint64 array`. Blobs carry n.

- zstd (`zstandard`, level 3, its default), lz4 (`lz4.frame`, default level), bz2 (level 9),
  lzma (preset 6, the default): the little-endian float64 byte stream, library defaults;
  n = decompressed length / 8.
- pcodec (`pcodec`, `standalone.simple_compress`, default ChunkConfig) on the uint64 array;
  PCODEC_DTYPE says why uint64 rather than float64.
- packed: the known-prefix packer: every report of a profile shares its top 64 - m bits
  (sign, exponent, top mantissa bits, `Profile.high_bits`), so only low = k mod 2^m is
  stored, m bits each, packed tightly: exactly what the device sends, plus a header.
- rans: an order-0 static entropy coder. The offsets j = k - k_lo (0..N-1) are split into a
  bucket (their top b bits) and the low t - b bits (t = bit length of N - 1). The buckets are
  coded with rANS (`constriction`'s AnsCoder and Categorical model) under the static model
  of their counts in this data, stored in the blob; the low bits are packed raw (uniform
  within a bucket). b is chosen per blob to minimise model + coded size; for m <= 16 that is
  usually every cell (b = t), i.e. the model is the count of each of the N cells. Buckets
  exist because at m = 52 a table of N = 2^52 cell counts cannot be stored (nor be worth
  storing for 10^6 reports); the mechanism's output density is flat between window edges,
  so uniform low bits lose almost nothing. `constriction` is used rather than hand-written
  coding (issue 9: a maintained package is preferred).

- adaptive: order-0 rANS whose model the decoder learns as it decodes (compress.adaptive):
  no counts stored, so small streams cost near their entropy.

Headers are little-endian; a blob of the wrong kind, or one made for another profile's m, is
refused with a ZealError.

Decoding untrusted blobs (`decode(blob, profile, limit)`, the registry's contract): every codec
refuses, before allocating them, more than `limit` reports. The general-purpose compressors
decompress through their streaming objects with a maximum output of 8 limit bytes (zstd: the
frame's declared content size and window are checked first; lzma: a decoder memory limit
LZMA_MEMLIMIT); pcodec decodes into an array of limit + 1 values; packed, rans and greedygd
check the n of their header. Without `limit` (the writer checking its own output) decoding is
unbounded, as the libraries' one-shot calls are.
"""
import bz2
import lzma
import struct

import numpy as np

from ...errors import ZealError
from ...mechanism import kinds
from ...wire.bits import pack_bits, unpack_bits

_U64 = np.dtype("<u8")


def as_bits(bits) -> np.ndarray:
    """`bits` as a contiguous little-endian uint64 array (a copy only when needed)."""
    arr = np.asarray(bits)
    if arr.dtype == np.float64:
        arr = arr.view(np.uint64)
    if arr.dtype.kind != "u" or arr.dtype.itemsize != 8 or arr.ndim != 1:
        raise ZealError("codecs take a 1-D uint64 array of float64 bit patterns, got %s %r"
                        % (arr.dtype, arr.shape))
    return np.ascontiguousarray(arr, dtype=_U64)


#: zstd: the largest window a frame may ask for. The writer's level 3 uses 2^21 bytes (zstd's
#: parameter table, windowLog 21; smaller inputs use their own size); 4 x that leaves room for
#: another zstd build's table while the decoder's window stays at 8 MiB (a hostile frame may ask
#: for 2 GiB).
ZSTD_MAX_WINDOW = 1 << 23
#: lzma: the decoder's memory limit. The writer's preset 6 has an 8 MiB dictionary (xz's table:
#: 9 MiB to decode); 16 MiB refuses the larger dictionaries (up to 1.5 GiB) a hostile stream names.
LZMA_MEMLIMIT = 1 << 24


def _too_many(name: str, limit: int) -> ZealError:
    return ZealError("%s: the blob holds more than the %d reports expected" % (name, limit))


def _from_bytes(raw: bytes) -> np.ndarray:
    if len(raw) % 8:
        raise ZealError("decoded stream is %d bytes, not a whole number of float64" % len(raw))
    return np.frombuffer(raw, dtype=_U64).astype(np.uint64)


# ---- general-purpose compressors on the float64 byte stream ---------------------------------
class _Bytes:
    """A byte-stream compressor on the reports' little-endian float64 bytes."""
    needs_profile = False

    def __init__(self, name, package, module):
        self.name, self.package, self._module = name, package, module

    def _lib(self):
        import importlib
        return importlib.import_module(self._module)

    def encode(self, bits, profile=None) -> bytes:
        return self._compress(as_bits(bits).tobytes())

    def decode(self, blob: bytes, profile=None, limit=None) -> np.ndarray:
        """The reports; with `limit`, at most 8 limit bytes are ever decompressed (more:
        ZealError)."""
        try:
            if limit is None:
                raw = self._decompress(bytes(blob))
            else:
                raw = self._decompress_at_most(bytes(blob), 8 * int(limit))
                if raw is None:
                    raise _too_many(self.name, limit)
        except ZealError:
            raise
        except Exception as exc:  # each library has its own error types
            raise ZealError("%s: cannot decode the blob (%s)" % (self.name, exc)) from None
        return _from_bytes(raw)

    def _decompress_at_most(self, blob: bytes, most: int):
        """The decompressed bytes if there are at most `most` of them, else None; never more
        than most + 1 bytes held. A streaming decompressor object (bz2, lzma, lz4 share the
        interface: decompress(data, max_length), eof, unused_data)."""
        d = self._decompressor()
        out = d.decompress(blob, max_length=most + 1)
        if len(out) > most:
            return None
        if not d.eof:
            raise ZealError("%s: the blob ends before its stream does" % self.name)
        if d.unused_data:
            raise ZealError("%s: %d bytes follow the end of the stream"
                            % (self.name, len(d.unused_data)))
        return out

    def __repr__(self):
        return "<codec %s>" % self.name


class Zstd(_Bytes):
    LEVEL = 3

    def __init__(self):
        super().__init__("zstd", "zstandard", "zstandard")
        lib = self._lib()
        self._c = lib.ZstdCompressor(level=self.LEVEL)  # writes the content size in the frame
        self._d = lib.ZstdDecompressor()

    def _compress(self, raw):
        return self._c.compress(raw)

    def _decompress(self, blob):
        return self._d.decompress(blob)

    def _decompress_at_most(self, blob, most):
        lib = self._lib()
        p = lib.get_frame_parameters(blob)         # ZstdError when there is no frame header
        if p.window_size > ZSTD_MAX_WINDOW:
            raise ZealError("zstd: the frame asks for a %d-byte window; at most %d"
                            % (p.window_size, ZSTD_MAX_WINDOW))
        if p.content_size != lib.CONTENTSIZE_UNKNOWN and p.content_size > most:
            return None
        d = lib.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        if p.content_size != lib.CONTENTSIZE_UNKNOWN:   # at most `most`: the buffer's size
            return d.decompress(blob)
        out = bytearray()                               # streamed, most + 1 bytes at most
        with d.stream_reader(blob, read_across_frames=False) as reader:
            while len(out) <= most:
                chunk = reader.read(most + 1 - len(out))
                if not chunk:
                    break
                out += chunk
        return None if len(out) > most else bytes(out)


class Lz4(_Bytes):
    def __init__(self):
        super().__init__("lz4", "lz4", "lz4.frame")
        self._f = self._lib()

    def _compress(self, raw):
        return self._f.compress(raw, store_size=True)

    def _decompress(self, blob):
        return self._f.decompress(blob)

    def _decompressor(self):
        return self._f.LZ4FrameDecompressor()


class Bz2(_Bytes):
    def __init__(self):
        super().__init__("bz2", None, "bz2")

    def _compress(self, raw):
        return bz2.compress(raw, 9)

    def _decompress(self, blob):
        return bz2.decompress(blob)

    def _decompressor(self):
        return bz2.BZ2Decompressor()


class Lzma(_Bytes):
    def __init__(self):
        super().__init__("lzma", None, "lzma")

    def _compress(self, raw):
        return lzma.compress(raw, preset=6)

    def _decompress(self, blob):
        return lzma.decompress(blob)

    def _decompressor(self):
        return lzma.LZMADecompressor(memlimit=LZMA_MEMLIMIT)


#: pcodec is given the uint64 bit patterns, the exact stream every other codec sees. Its float64
#: view gave byte-identical sizes on 2*10^5 humidity reports at m = 2, 4, 16 and 52 (measured
#: while writing this module, not re-checked by a test).
PCODEC_DTYPE = np.uint64


class Pcodec:
    name, package, needs_profile = "pcodec", "pcodec", False
    _EMPTY = b"\x00PCO-EMPTY"  # pcodec's standalone format of zero values has no dtype

    def __init__(self):
        from pcodec import ChunkConfig, standalone
        self._std, self._config = standalone, ChunkConfig()

    def encode(self, bits, profile=None) -> bytes:
        arr = as_bits(bits)
        if arr.size == 0:
            return self._EMPTY
        return self._std.simple_compress(arr.view(PCODEC_DTYPE), self._config)

    def decode(self, blob, profile=None, limit=None) -> np.ndarray:
        if bytes(blob) == self._EMPTY:
            return np.zeros(0, dtype=np.uint64)
        try:
            if limit is None:
                out = self._std.simple_decompress(bytes(blob))
            else:  # into limit + 1 values: a blob holding more does not fit
                out = np.empty(int(limit) + 1, dtype=PCODEC_DTYPE)
                progress = self._std.simple_decompress_into(bytes(blob), out)
                if progress.n_processed > limit or not progress.finished:
                    raise _too_many(self.name, limit)
                out = out[:progress.n_processed]
        except ZealError:
            raise
        except Exception as exc:
            raise ZealError("pcodec: cannot decode the blob (%s)" % exc) from None
        if out is None or np.asarray(out).dtype != PCODEC_DTYPE:
            raise ZealError("pcodec: the blob holds %s values, not %s"
                            % (getattr(out, "dtype", None), np.dtype(PCODEC_DTYPE)))
        return np.ascontiguousarray(out).view(np.uint64)

    def __repr__(self):
        return "<codec pcodec>"


# ---- codecs that know the profile -----------------------------------------------------------
def _need_profile(name, profile):
    if profile is None:
        raise ZealError("codec %r needs the reports' profile" % name)


def _offsets(name, bits, profile) -> np.ndarray:
    """j = k - k_lo for every report (uint64); ZealError if one is not on the profile's grid."""
    _need_profile(name, profile)
    base = np.uint64(kinds.of(profile).report_pattern(profile)[0])
    j = as_bits(bits) - base                       # wraps for bits < base: caught below
    bad = j >= np.uint64(profile.n_cells)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ZealError("%s: %d report(s) are not on the profile's grid (first at index %d: "
                        "0x%016x)" % (name, int(bad.sum()), i, int(as_bits(bits)[i])))
    return j


def _header(blob, magic, fmt, name):
    size = len(magic) + struct.calcsize(fmt)
    if len(blob) < size or bytes(blob[:len(magic)]) != magic:
        raise ZealError("%s: not a %s blob" % (name, name))
    return struct.unpack_from(fmt, blob, len(magic)), size


class Packed:
    """The m bits the device sends per report, packed tightly; header: magic, n, m."""
    name, package, needs_profile = "packed", None, True
    MAGIC = b"ZPK1"
    FMT = "<QB"

    def encode(self, bits, profile) -> bytes:
        _offsets(self.name, bits, profile)        # every report on the grid: low says it all
        low = as_bits(bits) & np.uint64((1 << profile.bits) - 1)
        return (self.MAGIC + struct.pack(self.FMT, low.shape[0], profile.bits)
                + pack_bits(low, profile.bits))

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need_profile(self.name, profile)
        (n, m), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and n > limit:
            raise _too_many(self.name, limit)
        if m != profile.bits:
            raise ZealError("packed: blob has m = %d bits, the profile m = %d" % (m, profile.bits))
        low = unpack_bits(memoryview(blob)[at:], n, m)
        return low + np.uint64(kinds.of(profile).report_pattern(profile)[1])

    def __repr__(self):
        return "<codec packed>"


#: the most bucket bits the rANS model may use (a table of at most 2^16 counts)
RANS_MAX_BUCKET_BITS = 16


def _bits_needed(v: int) -> int:
    return int(v).bit_length()


def choose_buckets(j: np.ndarray, t: int, max_bits: int = RANS_MAX_BUCKET_BITS) -> int:
    """The bucket bits b in [0, min(t, max_bits)] that minimise the estimated blob size:
    model (counts, packed at the width of the largest) + sum of -log2(count/n) + raw bits."""
    n = j.shape[0]
    top = min(t, max_bits)
    counts = np.bincount((j >> np.uint64(t - top)).astype(np.int64), minlength=1 << top)
    best, best_cost = 0, None
    for b in range(top, -1, -1):
        c = counts.reshape(1 << b, -1).sum(axis=1) if b < top else counts
        nz = c[c > 0].astype(np.float64)
        coded = float(np.sum(nz * np.log2(n / nz)))
        cost = coded + n * (t - b) + (1 << b) * _bits_needed(int(c.max()))
        if best_cost is None or cost < best_cost:
            best, best_cost = b, cost
    return best


class Rans:
    """Order-0 static rANS of the offsets' top bits, raw low bits (see the module docstring).

    Blob: magic, n (u64), t, shift (u8), buckets (u32), count width (u8), the packed counts,
    the number of 32-bit ANS words (u64), the ANS words (little-endian u32), the packed low
    `shift` bits of every report."""
    name, package, needs_profile = "rans", "constriction", True
    MAGIC = b"ZRA1"
    FMT = "<QBBIB"

    def __init__(self, max_bucket_bits=RANS_MAX_BUCKET_BITS):
        import constriction
        self._lib = constriction
        self.max_bucket_bits = max_bucket_bits

    def _model(self, counts):
        return self._lib.stream.model.Categorical(counts.astype(np.float64), perfect=False)

    def encode(self, bits, profile) -> bytes:
        j = _offsets(self.name, bits, profile)
        n = j.shape[0]
        t = _bits_needed(profile.n_cells - 1)
        b = choose_buckets(j, t, self.max_bucket_bits) if n else 0
        shift = t - b
        sym = (j >> np.uint64(shift)).astype(np.int64)
        buckets = ((profile.n_cells - 1) >> shift) + 1
        counts = np.bincount(sym, minlength=buckets)
        width = _bits_needed(int(counts.max())) if n else 0
        out = [self.MAGIC, struct.pack(self.FMT, n, t, shift, buckets, width),
               pack_bits(counts.astype(np.uint64), width)]
        if buckets > 1 and n:
            coder = self._lib.stream.stack.AnsCoder()
            coder.encode_reverse(sym.astype(np.int32), self._model(counts))
            words = coder.get_compressed().astype("<u4")
        else:
            words = np.zeros(0, dtype="<u4")
        out += [struct.pack("<Q", words.shape[0]), words.tobytes(), pack_bits(j, shift)]
        return b"".join(out)

    def decode(self, blob, profile, limit=None) -> np.ndarray:
        _need_profile(self.name, profile)
        (n, t, shift, buckets, width), at = _header(blob, self.MAGIC, self.FMT, self.name)
        if limit is not None and n > limit:
            raise _too_many(self.name, limit)
        if t != _bits_needed(profile.n_cells - 1) or buckets != ((profile.n_cells - 1) >> shift) + 1:
            raise ZealError("rans: blob made for another profile (t = %d, %d buckets)"
                            % (t, buckets))
        # the encoder's model has at most 2^RANS_MAX_BUCKET_BITS buckets of counts < 2^64: a
        # header asking for more (2^52 zero-width counts cost no blob bytes) is not one it wrote
        if buckets > 1 << RANS_MAX_BUCKET_BITS or width > 64 or shift > t:
            raise ZealError("rans: blob header out of range (%d buckets, counts of %d bits, "
                            "shift %d)" % (buckets, width, shift))
        view = memoryview(blob)
        csize = -(-buckets * width // 8)
        counts = unpack_bits(view[at:at + csize], buckets, width).astype(np.int64)
        at += csize
        if int(counts.sum()) != n:
            raise ZealError("rans: the model's counts sum to %d, not n = %d"
                            % (int(counts.sum()), n))
        (nwords,) = struct.unpack_from("<Q", blob, at)
        at += 8
        if buckets > 1 and n:
            words = np.frombuffer(bytes(view[at:at + 4 * nwords]), dtype="<u4").astype(np.uint32)
            coder = self._lib.stream.stack.AnsCoder(words)
            sym = np.asarray(coder.decode(self._model(counts), n), dtype=np.int64)
        else:
            sym = np.full(n, int(np.flatnonzero(counts)[0]) if n else 0, dtype=np.int64)
        at += 4 * nwords
        low = unpack_bits(view[at:], n, shift)
        j = (sym.astype(np.uint64) << np.uint64(shift)) | low
        return j + np.uint64(kinds.of(profile).report_pattern(profile)[0])

    def __repr__(self):
        return "<codec rans>"


class AdaptiveOffsets:
    """`adaptive` (compress.adaptive) on the grid's and tables' offsets j = k - k_lo. A
    `context` (a dict the caller keeps per profile) holds the histogram of the earlier
    streams' offsets, which `observe` adds each stream to: the model starts from it."""
    name, package, needs_profile = "adaptive", "constriction", True

    def __init__(self):
        from .adaptive import Adaptive
        self._coder = Adaptive()

    def encode(self, bits, profile, context=None) -> bytes:
        j = _offsets(self.name, bits, profile)
        prior = None if context is None else context.get("j")
        return self._coder.encode_symbols(j, _bits_needed(profile.n_cells - 1), prior)

    def decode(self, blob, profile, limit=None, context=None) -> np.ndarray:
        _need_profile(self.name, profile)
        prior = None if context is None else context.get("j")
        j = self._coder.decode_symbols(blob, _bits_needed(profile.n_cells - 1), limit, prior)
        if j.shape[0] and int(j.max()) >= profile.n_cells:
            raise ZealError("adaptive: a decoded report is not on the profile's grid")
        j += np.uint64(kinds.of(profile).report_pattern(profile)[0])   # j is the decoder's
        return j

    def observe(self, context, bits, profile) -> None:
        self.observe_offsets(context, _offsets(self.name, bits, profile), profile)

    def observe_offsets(self, context, j, profile) -> None:
        """`observe` from the stream's offsets j = k - k_lo (uint64), already checked."""
        from .adaptive import histogram

        h = histogram(j, _bits_needed(profile.n_cells - 1))
        context["j"] = h if "j" not in context else context["j"] + h

    def __repr__(self):
        return "<codec adaptive>"


#: (name, pip package or None, factory) for every rival; a factory raises ImportError when
#: its library is missing (the registry then leaves the codec out, and `get` names the package)
CODECS = (
    ("zstd", "zstandard", Zstd),
    ("lz4", "lz4", Lz4),
    ("bz2", None, Bz2),
    ("lzma", None, Lzma),
    ("pcodec", "pcodec", Pcodec),
    ("packed", None, Packed),
    ("rans", "constriction", Rans),
    ("adaptive", "constriction", AdaptiveOffsets),
)
