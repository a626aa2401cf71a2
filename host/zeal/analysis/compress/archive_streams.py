"""An archive's streams (compress.archive): the reports of one device under one profile as
the symbols of its shape (compress.streams), made from a database's rows, checked back against
the profile's grid, and the codec that runs on them."""
from typing import Optional, Sequence

import numpy as np

from ...mechanism import kinds
from ...mechanism.grid.profile import Profile
from . import streams as SH
from .archive_format import ArchiveError
from ..decode import ROW_BOOT, ROW_COUNT, ROW_DEBUG, ROW_DEVICE, ROW_FP, ROW_SEQ


class Stream:
    """The reports of one device (or of a reports file: device None) under one profile:
    `bits`, the symbols of its shape (compress.streams: a grid's or table's 64-bit patterns,
    a multi report's pairs, shuffle messages), `n` reports (messages)."""

    def __init__(self, device: Optional[int], fp: str, vector: bool, bits: np.ndarray,
                 n: Optional[int] = None):
        self.device, self.fp, self.vector, self.bits = device, fp, vector, bits
        self.n = int(bits.size) if n is None else int(n)

    @property
    def symbols(self) -> int:
        return int(self.bits.size)


def report_bits(profile: Profile, offsets: np.ndarray) -> np.ndarray:
    """Offsets j -> the reports' 64-bit patterns (uint64): a window grid's float64 x*, a
    table's cell (zeal.mechanism.kinds: report_pattern)."""
    base = np.uint64(kinds.of(profile).report_pattern(profile)[0])
    return np.asarray(offsets, dtype=np.int64).astype(np.uint64) + base


def offsets_of(profile: Profile, bits: np.ndarray, what: str,
               in_place: bool = False) -> np.ndarray:
    """Bit patterns -> offsets (int64), every one checked against the profile's grid;
    in_place: made in `bits`' own memory where it is writeable (a reader's decoded stream,
    which then holds the offsets), so that no second array of the stream is made."""
    bits = np.asarray(bits, dtype=np.uint64)
    base = int(kinds.of(profile).report_pattern(profile)[0])
    if in_place and bits.flags.writeable:
        bits -= np.uint64(base)
        j = bits
    else:
        j = bits - np.uint64(base)
    # one test: a pattern below the grid's first wraps past its last (base + n_cells <= 2^64)
    bad = np.flatnonzero(j >= np.uint64(profile.n_cells))
    if bad.size:
        raise ArchiveError("%s: report %d (0x%016x) is outside the profile's grid"
                           % (what, bad[0], (int(j[bad[0]]) + base) % (1 << 64)))
    return j.view(np.int64)


def database_streams(data, vector_flags: Sequence[int]) -> tuple:
    """(devices [bytes], frame columns {name: int array}, streams [Stream]) from a
    `decode.Loaded` made with include_vector=True (rows: real frames, then test-mode ones;
    vector_flags: 1 for each test-mode row)."""
    rows = data.rows
    devices = sorted({bytes(r[ROW_DEVICE]) for r in rows})
    dev_ix = {d: i for i, d in enumerate(devices)}
    fps = list(data.by_fp)
    fp_ix = {fp: i for i, fp in enumerate(fps)}
    cols = {
        "device": np.fromiter((dev_ix[bytes(r[ROW_DEVICE])] for r in rows), np.int64, len(rows)),
        "profile": np.fromiter((fp_ix[r[ROW_FP]] for r in rows), np.int64, len(rows)),
        "vector": np.asarray(vector_flags, dtype=np.int64),
        "count": np.fromiter((r[ROW_COUNT] for r in rows), np.int64, len(rows)),
        "debug": np.fromiter((int(r[ROW_DEBUG]) for r in rows), np.int64, len(rows)),
        "boot": np.fromiter((r[ROW_BOOT] for r in rows), np.int64, len(rows)),
        "seq": np.fromiter((r[ROW_SEQ] for r in rows), np.int64, len(rows)),
    }
    streams = []
    for fp in fps:
        prof = data.profiles[fp]
        mine = cols["profile"] == fp_ix[fp]
        shape = SH.shape_of(prof)
        if shape is not SH.Patterns:           # pairs, messages: from each label's frames
            frame_label = cols["device"][mine] * 2 + cols["vector"][mine]
            fp_rows = data.by_fp[fp]               # in the order of `mine`
            for key in np.unique(frame_label):
                sel = np.flatnonzero(frame_label == key).tolist()
                streams.append(Stream(int(key) // 2, fp, bool(key % 2),
                                      SH.rows_symbols(prof, [fp_rows[i] for i in sel]),
                                      int(cols["count"][mine][sel].sum())))
            continue
        j = data.offsets(fp)                           # this profile's rows, in order
        label = np.repeat(cols["device"][mine] * 2 + cols["vector"][mine], cols["count"][mine])
        for key in np.unique(label):
            streams.append(Stream(int(key) // 2, fp, bool(key % 2),
                                  report_bits(prof, j[label == key])))
    return devices, cols, streams


def stream_codec(name: str, codec, profile):
    """The codec `name` as it runs on this profile's streams (compress.streams: the generic
    codecs as they are, packed and rans by their shape's versions), or None where it does not
    apply."""
    return SH.shape_of(profile).codec(name, codec)

