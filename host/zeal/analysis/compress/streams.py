"""The shapes of an archive's streams: what an archive keeps per report, kind by kind.

A stream is the reports of one device under one profile (and test mode), in arrival order, as
a 1-D uint64 array of *symbols*; its shape is the profile kind's `stream_shape`
(zeal.mechanism.kinds):

- "patterns" (window grid, table): one symbol a report, its 64-bit pattern (a grid's float64
  x*, a table's cell: kinds' `report_pattern`). The archive's version 1 stream.
- "pairs" (multi-attribute, `zeal-multi/1`): a report is its k (attribute j, value y) pairs,
  j ascending below d, y a value of attribute j; the stream is the pairs flattened,
  j1, y1, j2, y2, ..., jk, yk per report, 2k symbols a report. The pair count of a report is
  the profile's k (the payload format fixes it: multi_profile.unpack_multi), so it is not
  stored.
- "messages" (shuffle, `zeal-shuffle/2`): one symbol a message, the message integer
  c | y << coord_bits as the shuffler stored it (m bits); messages no randomiser sends are
  kept as they are (zeal analyze counts them as invalid).

Each shape object answers `per_report(profile)` (symbols a report), `unit` ("report" or
"message": what the size table's bits are per), `models(profile)` (how many value models a
rANS blob may carry: the archive's byte cap), `symbols(profile, rows, data)` (the stream's
symbols from stored frames), `check(profile, symbols, what)` (ArchiveError for a symbol no
report of the profile holds: the reader's check), `payloads(profile, symbols, counts)` (the
frames' DATA payloads rebuilt exactly, byte for byte: what `zeal analyze` reads from a
store) and `codec(name, codec)` (the codec the archive runs on this shape: the generic ones
as they are, `packed` and `rans` by their shape-aware versions in compress.kind_codecs).
"""
import numpy as np

from ...errors import ZealError
from ...mechanism import kinds
from ...wire.bits import pack_bits
from ..decode import ROW_FP, DecodeError, PayloadReader


class StreamShapeError(ZealError):
    """A stream's symbols that no report of its profile holds."""


def shape_of(profile):
    """The shape object of a profile's streams (its kind's `stream_shape`)."""
    return SHAPES[kinds.of(profile).stream_shape]


class Patterns:
    name = "patterns"
    unit = "report"

    @staticmethod
    def per_report(profile) -> int:
        return 1

    @staticmethod
    def models(profile) -> int:
        return 1

    @staticmethod
    def payloads(profile, offsets, counts) -> list:
        """Offsets j -> every frame's payload (low = pattern - high, m bits each)."""
        base, high = kinds.of(profile).report_pattern(profile)
        low = np.asarray(offsets, dtype=np.int64).astype(np.uint64) + np.uint64(base) \
            - np.uint64(high)
        ends = np.cumsum(counts)
        return [pack_bits(low[e - c:e], profile.bits) for e, c in zip(ends.tolist(),
                                                                       list(counts))]

    @staticmethod
    def codec(name, codec):
        return codec


class Pairs:
    name = "pairs"
    unit = "report"

    @staticmethod
    def per_report(profile) -> int:
        return 2 * profile.k

    @staticmethod
    def models(profile) -> int:
        return profile.d

    @staticmethod
    def limits(profile) -> np.ndarray:
        """Per attribute, the values its reports take: 0..limit-1 (uint64)."""
        return np.array(profile.value_limits(), dtype=np.uint64)

    @staticmethod
    def symbols(profile, rows, data=None) -> np.ndarray:
        out = []
        for r in rows:
            for rep in PayloadReader.multi_reports(profile, r):
                for j, y in rep:
                    out += (j, y)
        return np.array(out, dtype=np.uint64)

    @classmethod
    def check(cls, profile, symbols, what: str) -> None:
        k = profile.k
        s = np.asarray(symbols, dtype=np.uint64)
        if s.size % (2 * k):
            raise StreamShapeError("%s: %d symbols, not whole reports of %d pairs"
                                   % (what, s.size, k))
        pairs = s.reshape(-1, k, 2)
        j, y = pairs[:, :, 0], pairs[:, :, 1]
        bad = np.flatnonzero((j >= np.uint64(profile.d)).any(axis=1))
        if not bad.size and k > 1:
            bad = np.flatnonzero((j[:, 1:] <= j[:, :-1]).any(axis=1))
        if not bad.size:
            bad = np.flatnonzero((y >= cls.limits(profile)[j.astype(np.int64)]).any(axis=1))
        if bad.size:
            raise StreamShapeError("%s: report %d is no report of the profile (attribute "
                                   "indices ascending below d = %d, each value one of its "
                                   "attribute's)" % (what, bad[0], profile.d))

    @staticmethod
    def reports(profile, symbols) -> list:
        """Symbols -> [[(j, y)] * k] per report."""
        pairs = np.asarray(symbols, dtype=np.uint64).reshape(-1, profile.k, 2).tolist()
        return [[(j, y) for j, y in rep] for rep in pairs]

    @classmethod
    def payloads(cls, profile, symbols, counts) -> list:
        kind = kinds.of(profile)
        reps = cls.reports(profile, symbols)
        out, at = [], 0
        for c in counts:
            out.append(kind.join_payload(profile, reps[at:at + c]))
            at += c
        return out

    @staticmethod
    def codec(name, codec):
        from . import kind_codecs

        return kind_codecs.for_pairs(name, codec)


class Messages:
    name = "messages"
    unit = "message"

    @staticmethod
    def per_report(profile) -> int:
        return 1

    @staticmethod
    def models(profile) -> int:
        return 1

    @staticmethod
    def symbols(profile, rows, data=None) -> np.ndarray:
        return np.asarray(PayloadReader.lows(profile, rows), dtype=np.uint64)

    @staticmethod
    def check(profile, symbols, what: str) -> None:
        s = np.asarray(symbols, dtype=np.uint64)
        bad = np.flatnonzero(s >> np.uint64(profile.bits)) if profile.bits < 64 else []
        if len(bad):
            raise StreamShapeError("%s: message %d (%d) does not fit the profile's %d bits"
                                   % (what, bad[0], int(s[bad[0]]), profile.bits))

    @staticmethod
    def payloads(profile, symbols, counts) -> list:
        s = np.asarray(symbols, dtype=np.uint64)
        ends = np.cumsum(counts)
        return [pack_bits(s[e - c:e], profile.bits) for e, c in zip(ends.tolist(),
                                                                     list(counts))]

    @staticmethod
    def codec(name, codec):
        from . import kind_codecs

        return kind_codecs.for_messages(name, codec)


SHAPES = {"patterns": Patterns, "pairs": Pairs, "messages": Messages}


def rows_symbols(profile, rows) -> np.ndarray:
    """The symbols of stored frames under a pairs or messages profile (DecodeError naming a
    frame that holds no reports of it)."""
    if not rows:
        return np.zeros(0, dtype=np.uint64)
    if {r[ROW_FP] for r in rows} != {profile.fingerprint}:
        raise DecodeError("frames of another profile")
    return shape_of(profile).symbols(profile, rows)


def symbols_count(profile, n: int) -> int:
    return n * shape_of(profile).per_report(profile)


__all__ = ["SHAPES", "Patterns", "Pairs", "Messages", "StreamShapeError", "shape_of",
           "rows_symbols", "symbols_count"]
