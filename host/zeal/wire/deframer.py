"""The host framer: a byte stream in arbitrary chunks -> frames (shared_spec/wire_format.md).

`Deframer` resynchronises at every 0x00, drops over-long runs without buffering them and
counts every rejected run and byte by reason; nothing raises out of `feed`. Frames are the
codec's (zeal.wire.codec); DATA comes out sealed, for the line's Decoder to open.
"""
from collections import Counter
from typing import List

from .codec import MAX_ENCODED, FrameError, Framed, decode_run


class Deframer:
    """Splits a byte stream into frames. `feed(chunk)` returns the frames completed by it.

    Frames come out as Hello and Status (CRC checked) and SealedData (DATA: its CRC is seeded
    by the session, so the Decoder checks it; see SealedData.open).

    Accounting (every byte fed is in exactly one of these):
      frame_bytes    bytes of frames passed on (sealed DATA included), delimiter included
      dropped_bytes  Counter reason -> bytes of refused runs, their delimiter included
      idle_bytes     delimiters that closed an empty run (the leading 0x00 of HELLO/STATUS)
      pending        bytes of the unfinished run (not yet judged)
    `rejected` counts the refused runs by reason.
    """

    def __init__(self, *, max_encoded: int = MAX_ENCODED):
        self.max_encoded = max_encoded
        self._buf = bytearray()
        self._skip = None  # bytes of an over-long run being dropped, or None
        self.bytes_in = 0
        self.frames = 0
        self.frame_bytes = 0
        self.idle_bytes = 0
        self.rejected = Counter()
        self.dropped_bytes = Counter()
        self.last_error = None

    @property
    def pending(self) -> int:
        return self._skip if self._skip is not None else len(self._buf)

    def _reject(self, reason: str, nbytes: int, message: str = "") -> None:
        self.rejected[reason] += 1
        self.dropped_bytes[reason] += nbytes
        self.last_error = "%s: %s" % (reason, message) if message else reason

    def feed(self, chunk) -> List[Framed]:
        data = bytes(chunk)
        self.bytes_in += len(data)
        out = []
        start, n = 0, len(data)
        while start < n:
            z = data.find(0, start)
            end = n if z < 0 else z
            seg = end - start
            if self._skip is not None:
                self._skip += seg
            elif len(self._buf) + seg > self.max_encoded:
                self._skip = len(self._buf) + seg  # drop it, keep only the count
                self._buf.clear()
            elif seg:
                self._buf += data[start:end]
            if z < 0:
                break
            start = z + 1
            if self._skip is not None:
                self._reject("overlong", self._skip + 1, "run of %d bytes" % self._skip)
                self._skip = None
            elif not self._buf:
                self.idle_bytes += 1
            else:
                run = bytes(self._buf)
                self._buf.clear()
                try:
                    frame = decode_run(run)
                except FrameError as exc:
                    self._reject(exc.reason, len(run) + 1, str(exc))
                except Exception as exc:  # a bug in this module: count it, never raise out
                    self._reject("internal", len(run) + 1, repr(exc))
                else:
                    self.frames += 1
                    self.frame_bytes += len(run) + 1
                    out.append(frame)
        return out

