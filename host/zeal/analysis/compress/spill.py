"""A stream's symbols and a codec's blobs on disk while `zeal compress` works (issue "Scale: a
billion reports in constant memory"): one unnamed temporary file (removed when closed, or when
the process ends), so that what the command holds in memory does not grow with the store.

- `Spill.append(key, values)`: values (a 1-D integer array) added to the end of `key`'s
  array, kept in the file's dtype of that key (the first append's); appends are buffered in
  memory up to BUFFER bytes in all, then every key's buffer is written as one piece, so a
  key's pieces are large when few keys are written and the index stays small when many are.
- `Spill.read(key, lo, hi)`: values lo..hi-1 of a key, read from its pieces.
- `Spill.blob()`: a `BlobWriter` whose pieces (bytes) go to the end of the file, one after the
  other, and whose `done()` gives a `BlobRef`: a blob's place in the file, read back whole
  (`bytes()`), by range (`read(lo, hi)`) or copied to another file (`copy_to`).
Memory: the buffers (BUFFER bytes) and, per piece, three 8-byte integers of index.
"""
import bisect
import tempfile
from array import array

import numpy as np

BUFFER = 1 << 20       # bytes of appends held before every buffer is written out
COPY_CHUNK = 1 << 20   # bytes a copy or a whole read moves at a time
ARRAY_OVERHEAD = 112   # bytes a held array costs beside its data (numpy's header): counted


def uint_dtype(top: int) -> np.dtype:
    """The narrowest unsigned dtype holding 0..top."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


class _Key:
    __slots__ = ("dtype", "starts", "offsets", "count", "buffer")

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.starts = array("q")    # each piece's first index in the key's array
        self.offsets = array("q")   # ... and its byte offset in the file
        self.count = 0              # values in the pieces (the buffer's come after)
        self.buffer = []


class Spill:
    def __init__(self, buffer=None):
        self._fh = tempfile.TemporaryFile(prefix="zeal-compress-")
        self._end = 0
        self._keys = {}
        self._held = 0
        self._limit = int(BUFFER if buffer is None else buffer)
        self._writing = False

    # ---- arrays --------------------------------------------------------------------------------
    def append(self, key, values, dtype=None) -> None:
        k = self._keys.get(key)
        if k is None:
            k = self._keys[key] = _Key(dtype if dtype is not None else np.asarray(values).dtype)
        arr = np.ascontiguousarray(np.asarray(values).astype(k.dtype, copy=False))
        if arr.ndim != 1:
            raise ValueError("a spill holds 1-D arrays")
        if arr.size:
            k.buffer.append(arr)
            self._held += arr.nbytes + ARRAY_OVERHEAD
            if self._held > self._limit:
                self.flush()

    def flush(self) -> None:
        """Every key's buffer written as one piece."""
        for k in self._keys.values():
            if not k.buffer:
                continue
            k.starts.append(k.count)
            k.offsets.append(self._end)
            for arr in k.buffer:            # one after the other: one piece in the file
                self._write(memoryview(arr).cast("B"))
                k.count += arr.size
            k.buffer = []
        self._held = 0

    def count(self, key) -> int:
        k = self._keys.get(key)
        return 0 if k is None else k.count + sum(a.size for a in k.buffer)

    def dtype(self, key) -> np.dtype:
        return self._keys[key].dtype

    def read(self, key, lo: int, hi: int) -> np.ndarray:
        """Values lo..hi-1 of `key` (its dtype)."""
        k = self._keys[key]
        if k.buffer:
            self.flush()
        lo, hi = max(0, int(lo)), min(int(hi), k.count)
        out = np.empty(max(0, hi - lo), dtype=k.dtype)
        at, size = lo, k.dtype.itemsize
        i = bisect.bisect_right(k.starts, lo) - 1
        while at < hi:
            start = k.starts[i]
            stop = k.starts[i + 1] if i + 1 < len(k.starts) else k.count
            take = min(hi, stop) - at
            self._fh.seek(k.offsets[i] + (at - start) * size)
            view = memoryview(out[at - lo:at - lo + take]).cast("B")
            if self._fh.readinto(view) != take * size:
                raise OSError("the temporary file of zeal compress is shorter than written")
            at += take
            i += 1
        return out

    # ---- blobs ---------------------------------------------------------------------------------
    def blob(self) -> "BlobWriter":
        if self._writing:
            raise RuntimeError("one blob at a time")
        self.flush()
        self._writing = True
        return BlobWriter(self, self._end)

    def _write(self, data) -> None:
        self._fh.seek(self._end)
        self._fh.write(data)
        self._end += len(data)

    def _pread(self, offset: int, size: int) -> bytes:
        self._fh.seek(offset)
        data = self._fh.read(size)
        if len(data) != size:
            raise OSError("the temporary file of zeal compress is shorter than written")
        return data

    def close(self) -> None:
        self._fh.close()
        self._keys = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class BlobWriter:
    """Bytes written one piece after another to the end of a spill; `done()` -> BlobRef."""

    def __init__(self, spill: Spill, offset: int):
        self._spill, self._offset, self.size = spill, offset, 0

    def write(self, data) -> None:
        if data:
            self._spill._write(data)
            self.size += len(data)

    def done(self) -> "BlobRef":
        self._spill._writing = False
        return BlobRef(self._spill, self._offset, self.size)


class BlobRef:
    """A blob in a spill: len(), bytes(), read(lo, hi), copy_to(fh)."""

    def __init__(self, spill: Spill, offset: int, size: int):
        self._spill, self._offset, self._size = spill, offset, size

    def __len__(self) -> int:
        return self._size

    def read(self, lo: int, hi: int) -> bytes:
        lo, hi = max(0, lo), min(hi, self._size)
        return self._spill._pread(self._offset + lo, max(0, hi - lo))

    def __bytes__(self) -> bytes:
        return self.read(0, self._size)

    def copy_to(self, fh) -> None:
        for at in range(0, self._size, COPY_CHUNK):
            fh.write(self.read(at, at + COPY_CHUNK))
