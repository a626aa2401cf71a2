"""Random 64-bit words for the mechanism (shared_spec/generator.md), device side.

    block_i = SHA-256(b"zeal-ctr" || key || LE64(i)),  i = 0, 1, 2, ...
    words   = each block read as four little-endian u64, in order

The hash input is 48 bytes, so each block is one SHA-256 compression of one padded 64-byte
block, which lives in one preallocated bytearray; only the counter bytes change
(struct.pack_into). Where native code runs, zealfw.sha256_viper hashes it into a preallocated
digest with no heap allocation. Elsewhere (CPython, a port without a native emitter)
hashlib does: MicroPython's hashlib.sha256 has no .copy(), refuses update() after digest()
("hash is final") and has no digest-into-buffer, so every block then costs one fresh hash
object and one 32-byte digest (224 heap bytes on the 64-bit unix port, 192 on a 32-bit
board). Words are not unpacked: the mechanism reads a word in place, from the
digest's bytes (`advance()` returns its offset in `block`), so no 4-tuple and no 64-bit
integer is made per word (a word above 2^62 would be a heap int on the unix port, and every
word above 2^30 one on a 32-bit board). `next()` still returns the word as an int for
callers that want it (conformance runs, `take`).

`CounterWords(key)` with a *given* key is vector/test mode: reproducible, hence not private
against anyone who knows the key. Production keys come from `zealfw.seed.derive_boot_key`, which
mixes os.urandom, timing jitter and a persisted seed that is advanced and rewritten at every
boot, so a reboot never replays a stream (a separate module: it runs once at boot and is
freed after).
"""
import hashlib
import struct

try:  # native code: the digest without allocation (its docstring says why and where)
    from .sha256_viper import digest1
except Exception:  # CPython (no viper), no native emitter, an .mpy for another architecture
    digest1 = None

try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

_KEY_BYTES = const(32)
_COUNTER_AT = const(40)     # input = b"zeal-ctr" (8) || key (32) || LE64 counter (8)
_INPUT_BYTES = const(48)


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
        # the input padded as SHA-256 pads it: 0x80, zeros, its length (384 bits) as a
        # big-endian u64 in the last 8 bytes; hashlib takes the first 48 bytes
        self._input = bytearray(b"zeal-ctr" + bytes(key) + bytes(8) + b"\x80" + bytes(13)
                                + b"\x01\x80")
        self._counter = 0   # index of the next block to hash
        self._index = 4     # words of the current block already used
        if digest1 is not None:
            self.block = bytearray(32)   # the current block, rewritten in place
            self._w = bytearray(256)     # digest1's scratch
        else:
            self.block = b""             # the current block (a new digest each time)
            self._head = memoryview(self._input)[:_INPUT_BYTES]

    def advance(self):
        i = self._index
        if i == 4:
            struct.pack_into("<Q", self._input, _COUNTER_AT, self._counter)
            if digest1 is not None:
                digest1(self.block, self._input, self._w)
            else:
                self.block = hashlib.sha256(self._head).digest()
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
