"""A plain callable returning u64 words, seen as the word cursor zealfw.mechanism reads
(advance()/block): crafted word lists and bound .next methods drive the same code as
zealfw.words.CounterWords. For the conformance runner and tests; imported by zealfw.mech_setup
only when such a source is given (never by the sampling loop, which keeps it out of the
heap at start)."""
import struct


class CallWords:
    def __init__(self, fn):
        self._fn = fn
        self.block = bytearray(8)

    def advance(self):
        struct.pack_into("<Q", self.block, 0, self._fn())
        return 0
