"""Random 64-bit words for the mechanism (shared_spec/generator.md), device side.

    block_i = SHA-256(b"zeal-ctr" || key || LE64(i)),  i = 0, 1, 2, ...
    words   = each block read as four little-endian u64, in order

MicroPython's hashlib.sha256 has no .copy() and refuses update() after digest() ("hash is
final"), and there is no digest-into-buffer: every block costs one fresh hash object and one
32-byte digest (224 heap bytes on the 64-bit unix port, measured with gc.mem_alloc), which is
the floor. The input lives in one preallocated bytearray; only the counter bytes change
(struct.pack_into). Words are not unpacked: the mechanism reads a word in place, from the
digest's bytes (`advance()` returns its offset in `block`), so no 4-tuple and no 64-bit
integer is made per word (a word above 2^62 would be a heap int on the unix port, and every
word above 2^30 one on a 32-bit board). `next()` still returns the word as an int for
callers that want it (conformance runs, `take`).

`CounterWords(key)` with a *given* key is vector/test mode: reproducible, hence not private
against anyone who knows the key. Production keys come from `derive_boot_key`, which mixes
os.urandom, timing jitter and a persisted seed that is advanced and rewritten at every boot,
so a reboot never replays a stream.
"""
import hashlib
import os
import struct

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

try:
    from time import ticks_cpu, ticks_diff, ticks_us
except ImportError:  # CPython (the conformance runner also runs there)
    from time import perf_counter_ns as ticks_cpu

    def ticks_us():
        return ticks_cpu() // 1000

    def ticks_diff(a, b):
        return a - b

_KEY_BYTES = const(32)
_COUNTER_AT = const(40)     # input = b"zeal-ctr" (8) || key (32) || LE64 counter (8)
_SEED_FILE_LEN = const(36)  # 32-byte seed + u32 LE boot counter
_JITTER_ROUNDS = const(8)
_U32 = const(0xFFFFFFFF)


class CounterWords:
    """SHA-256 counter-mode words from a 32-byte key.

    Cursor interface (what zealfw.mechanism uses): `advance()` moves to the next word and
    returns its byte offset o in `block` (the current digest; read `block` after advancing,
    a new block replaces it every fourth word); the word is the little-endian u64 in
    block[o:o + 8], most significant byte block[o + 7]. `next()` (or calling the object)
    returns the next word as an int.
    """

    def __init__(self, key):
        if len(key) != _KEY_BYTES:
            raise ValueError("generator key must be 32 bytes")
        self._input = bytearray(b"zeal-ctr" + bytes(key) + bytes(8))
        self._counter = 0   # index of the next block to hash
        self.block = b""    # the current block (32-byte digest)
        self._index = 4     # words of the current block already used

    def advance(self):
        i = self._index
        if i == 4:
            struct.pack_into("<Q", self._input, _COUNTER_AT, self._counter)
            self.block = hashlib.sha256(self._input).digest()
            self._counter += 1
            i = 0
        self._index = i + 1
        return i << 3

    def next(self):
        o = self.advance()
        return struct.unpack_from("<Q", self.block, o)[0]

    __call__ = next

    def used(self):
        """Words consumed so far (for conformance runs and counters)."""
        return (self._counter - 1) * 4 + self._index

    def take(self, n):
        return [self.next() for _ in range(n)]


# ---- boot key --------------------------------------------------------------------------------
def _jitter():
    """Timing noise around os.urandom calls: low 16 bits of tick differences, as bytes.

    ticks_cpu() is 0 on ports without a cycle counter (unix); ticks_us still varies. This
    only adds entropy: the key is safe as long as any one input (urandom, seed) is secret.
    """
    buf = bytearray(4 * _JITTER_ROUNDS + 4)
    t0 = ticks_us()
    c0 = ticks_cpu()
    struct.pack_into("<I", buf, 0, t0 & _U32)
    for i in range(_JITTER_ROUNDS):
        os.urandom(1 + (i & 3))
        t1 = ticks_us()
        c1 = ticks_cpu()
        struct.pack_into("<HH", buf, 4 + 4 * i, ticks_diff(t1, t0) & 0xFFFF,
                         ticks_diff(c1, c0) & 0xFFFF)
        t0 = t1
        c0 = c1
    return buf


def _read_seed(path):
    """The 36-byte seed record, or None if absent or not exactly 36 bytes (half-written)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SEED_FILE_LEN + 1)
    except OSError:
        return None
    if len(data) != _SEED_FILE_LEN:
        return None
    return data


def _write_seed(path, seed, counter):
    """Write to path + ".tmp" and rename over path: a power cut leaves the old or the new.

    On littlefs and POSIX the rename replaces atomically. FAT's rename removes the old file
    first, so there is a moment with only the .tmp file: `_read_seed` falls back to it.
    """
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(seed + struct.pack("<I", counter))
    os.rename(tmp, path)
    sync = getattr(os, "sync", None)
    if sync is not None:
        sync()


def derive_boot_key(seed_path, extra=b""):
    """Advance the persisted seed and return (key, boot_counter) for this boot.

    new_seed = SHA-256(b"zeal-seed" || old_seed || urandom(32) || jitter || extra)
    key      = SHA-256(b"zeal-key"  || new_seed || urandom(32) || jitter' || extra)

    The new seed and boot_counter + 1 are written back (temp file + rename) *before* the key
    is returned, so a crash after sampling never restarts from the same seed. A missing or
    malformed seed file starts from a zero seed and counter 0 (urandom and jitter still make
    the key fresh). `extra` may carry e.g. machine.unique_id(). Returns the counter written.
    """
    rec = _read_seed(seed_path)
    if rec is None:
        rec = _read_seed(seed_path + ".tmp")  # FAT: power cut between remove and rename
    if rec is None:
        old_seed = bytes(32)
        counter = 0
    else:
        old_seed = rec[0:32]
        counter = struct.unpack_from("<I", rec, 32)[0]
    h = hashlib.sha256(b"zeal-seed")
    h.update(old_seed)
    h.update(os.urandom(32))
    h.update(_jitter())
    h.update(extra)
    new_seed = h.digest()
    counter = (counter + 1) & _U32
    _write_seed(seed_path, new_seed, counter)
    h = hashlib.sha256(b"zeal-key")
    h.update(new_seed)
    h.update(os.urandom(32))
    h.update(_jitter())
    h.update(extra)
    return h.digest(), counter
