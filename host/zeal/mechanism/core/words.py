"""Random 64-bit words: the only source of randomness the mechanism sees.

`CounterWords` is the SHA-256 counter-mode generator of shared_spec/generator.md, the same
on the device and the host: block i = SHA-256(b"zeal-ctr" || key || i as 8 bytes LE), each
32-byte block read as four little-endian 64-bit words, in order.
"""
import hashlib
import secrets
import struct

PREFIX = b"zeal-ctr"
KEY_BYTES = 32


class CounterWords:
    """Deterministic words from a 32-byte key (vectors, tests, reproducible runs)."""

    def __init__(self, key: bytes):
        if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_BYTES:
            raise ValueError("generator key must be %d bytes" % KEY_BYTES)
        self._prefix = hashlib.sha256(PREFIX + bytes(key))  # copied per block
        self._counter = 0
        self._buffer = ()
        self._index = 0

    def _refill(self):
        h = self._prefix.copy()
        h.update(struct.pack("<Q", self._counter))
        self._counter += 1
        self._buffer = struct.unpack("<4Q", h.digest())
        self._index = 0

    def __call__(self) -> int:
        if self._index == len(self._buffer):
            self._refill()
        word = self._buffer[self._index]
        self._index += 1
        return word

    def take(self, n: int) -> list:
        return [self() for _ in range(n)]


def system_words() -> CounterWords:
    """Production default: a counter-mode generator keyed from the OS's secure source."""
    return CounterWords(secrets.token_bytes(KEY_BYTES))


def key_from_hex(text: str) -> bytes:
    """A CLI seed: up to 64 hex digits, left-padded with zeros to a 32-byte key."""
    text = text.strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if not text or len(text) > 2 * KEY_BYTES or any(c not in "0123456789abcdef" for c in text):
        raise ValueError("seed must be 1 to 64 hex digits, got %r" % text)
    return bytes.fromhex(text.rjust(2 * KEY_BYTES, "0"))


class Recorder:
    """Wraps a word source and keeps what each caller consumed (tests, bulk cross-checks)."""

    def __init__(self, source):
        self.source = source
        self.used = []

    def __call__(self) -> int:
        word = self.source()
        self.used.append(word)
        return word


class ListWords:
    """Words from a given list; raises when exhausted (tests and crafted vectors)."""

    def __init__(self, words):
        self.words = list(words)
        self.index = 0

    def __call__(self) -> int:
        if self.index >= len(self.words):
            raise IndexError("word list exhausted after %d words" % self.index)
        word = self.words[self.index]
        self.index += 1
        return word
