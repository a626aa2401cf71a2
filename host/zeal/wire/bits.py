"""Bit packing, vectorised (numpy): values of a fixed or per-value width, least significant
bit first, padded to a whole byte — the wire's DATA payload layout (wire_format.md), which
the archive's codecs reuse for their sections. The wire's reference encoder
(codec.pack_reports) checks its reports and packs them here.

- `pack_bits(values, width)` / `unpack_bits(buf, n, width)`: one width, 0..64 bits;
- `pack_varwidth(values, widths)` / `unpack_varwidth(buf, widths)`: each value its own width.
"""
import math

import numpy as np

from ..errors import ZealError

_U64 = np.dtype("<u8")


# ---- one width (one numpy pass per residue class, no per-record loop) -------------------------
def pack_bits(values: np.ndarray, width: int) -> bytes:
    """The low `width` bits of each value, packed tightly, least significant bit first;
    ceil(n * width / 8) bytes."""
    values = np.asarray(values, dtype=np.uint64)
    n = values.shape[0]
    if width == 0 or n == 0:
        return b""
    if not 0 < width <= 64:
        raise ValueError("width %d" % width)
    if width < 64:
        values = values & np.uint64((1 << width) - 1)
    lanes = 64 // math.gcd(64, width)          # values per period of whole words
    words_per = lanes * width // 64
    groups = -(-n // lanes)
    out = np.zeros(groups * words_per + 1, dtype=np.uint64)
    for r in range(min(lanes, n)):
        v = values[r::lanes]
        p0 = r * width
        word = np.arange(v.shape[0], dtype=np.int64) * words_per + (p0 >> 6)
        sh = p0 & 63
        out[word] |= v << np.uint64(sh)
        if sh and sh + width > 64:
            out[word + 1] |= v >> np.uint64(64 - sh)
    return out.astype(_U64).tobytes()[:-(-n * width // 8)]


def unpack_bits(buf, n: int, width: int) -> np.ndarray:
    """Inverse of pack_bits: n values of `width` bits from `buf` (uint64)."""
    if width == 0 or n == 0:
        return np.zeros(n, dtype=np.uint64)
    need = -(-n * width // 8)
    if len(buf) < need:
        raise ZealError("blob truncated: %d bytes of packed bits, %d needed" % (len(buf), need))
    lanes = 64 // math.gcd(64, width)
    words_per = lanes * width // 64
    groups = -(-n // lanes)
    raw = bytes(buf[:need]) + bytes((groups * words_per + 1) * 8 - need)
    words = np.frombuffer(raw, dtype=_U64).astype(np.uint64)
    out = np.empty(n, dtype=np.uint64)
    mask = np.uint64((1 << width) - 1) if width < 64 else None
    for r in range(min(lanes, n)):
        count = len(range(r, n, lanes))
        p0 = r * width
        word = np.arange(count, dtype=np.int64) * words_per + (p0 >> 6)
        sh = p0 & 63
        v = words[word] >> np.uint64(sh)
        if sh and sh + width > 64:
            v |= words[word + 1] << np.uint64(64 - sh)
        out[r::lanes] = v & mask if mask is not None else v
    return out


# ---- a width per value (positions by a running sum) --------------------------------------------
def pack_varwidth(values, widths) -> bytes:
    """Each value's low widths[i] bits (1..64), one after the other, least significant bit
    first, padded to a byte (vectorised: positions by a running sum)."""
    v = np.asarray(values, dtype=np.uint64)
    w = np.asarray(widths, dtype=np.int64)
    total = int(w.sum())
    if total == 0:
        return b""
    pos = np.cumsum(w) - w
    word, sh = pos >> 6, (pos & 63).astype(np.uint64)
    mask = np.where(w >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << np.minimum(w, 63).astype(np.uint64)) - np.uint64(1))
    v = v & mask
    out = np.zeros((total >> 6) + 2, dtype=np.uint64)
    np.bitwise_or.at(out, word, v << sh)
    spill = (sh > 0) & (sh.astype(np.int64) + w > 64)
    np.bitwise_or.at(out, word[spill] + 1, v[spill] >> (np.uint64(64) - sh[spill]))
    return out.astype("<u8").tobytes()[:-(-total // 8)]


def unpack_varwidth(buf, widths) -> np.ndarray:
    w = np.asarray(widths, dtype=np.int64)
    total = int(w.sum())
    need = -(-total // 8)
    if len(buf) < need:
        raise ZealError("blob truncated: %d bytes of packed bits, %d needed" % (len(buf), need))
    if total == 0:
        return np.zeros(w.size, dtype=np.uint64)
    nwords = (total >> 6) + 2
    words = np.frombuffer(bytes(buf[:need]) + bytes(nwords * 8 - need), dtype="<u8") \
        .astype(np.uint64)
    pos = np.cumsum(w) - w
    word, sh = pos >> 6, (pos & 63).astype(np.uint64)
    v = words[word] >> sh
    spill = (sh > 0) & (sh.astype(np.int64) + w > 64)
    v[spill] |= words[word[spill] + 1] << (np.uint64(64) - sh[spill])
    mask = np.where(w >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << np.minimum(w, 63).astype(np.uint64)) - np.uint64(1))
    return v & mask
