"""Writing an archive (compress.archive): each codec measured on every stream (`measure`),
then every stream in the smallest codec that applies, with the manifest and the profile files,
refused in one line where the archive would go past a cap that `read` holds it to."""
import json
import os
import time
import zipfile
from typing import Dict, List, Optional

import numpy as np

from ...mechanism import kinds
from ...mechanism.grid.profile import Profile
from . import streams as SH
from . import archive_format as F
from .archive_format import ArchiveError
from .archive_frames import Runs, runs
from .archive_streams import Stream, stream_codec
from .archive_zip import entry_info
from ..export import write_atomically


MIN_TIME_S = 0.05   # each codec's timing repeats its whole pass until this long (best pass)


def _best_time(fn, budget: float = MIN_TIME_S):
    """(fn(), the shortest of its runs): runs again until `budget` seconds are spent."""
    best, spent, out = float("inf"), 0.0, None
    while spent < budget:
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
    return out, best


def shared(coders, streams, profiles, what, blobs=None) -> list:
    """Every stream encoded (what="encode": bytes) or its blob decoded ("decode"), in the
    archive's order. A codec that shares a model between the streams of one profile (one
    with `observe`: adaptive) gets a context per profile, which every stream of that profile
    is added to once coded: the order the reader decodes them (archive_read)."""
    contexts, out = {}, []
    for i, (c, s) in enumerate(zip(coders, streams)):
        if c is None:
            out.append(None)
            continue
        prof = profiles[s.fp]
        if not hasattr(c, "observe"):
            out.append(bytes(c.encode(s.bits, prof)) if what == "encode"
                       else c.decode(blobs[i], prof))
            continue
        ctx = contexts.setdefault(s.fp, {})
        out.append(bytes(c.encode(s.bits, prof, context=ctx)) if what == "encode"
                   else c.decode(blobs[i], prof, context=ctx))
        c.observe(ctx, s.bits, prof)
    return out


def measure(streams: List[Stream], profiles: Dict[str, Profile], codecs: dict,
            tick=None) -> dict:
    """{codec name: {"blobs": [bytes per stream, None where the codec does not apply to the
    stream's shape], "bytes", "encode_s", "decode_s"}} for every codec (times: one pass over
    every stream, the best of passes filling MIN_TIME_S), each blob checked to decode to its
    stream exactly (ArchiveError otherwise: a codec that does not round-trip is a bug, never
    a silently wrong archive). tick(name), if given, is called as each codec is done."""
    out = {}
    for name, codec in codecs.items():
        coders = [stream_codec(name, codec, profiles[s.fp]) for s in streams]
        blobs, enc_s = _best_time(lambda: shared(coders, streams, profiles, "encode"))
        backs, dec_s = _best_time(lambda: shared(coders, streams, profiles, "decode", blobs))
        for s, back in zip(streams, backs):
            if back is not None and not np.array_equal(np.asarray(back, dtype=np.uint64),
                                                       s.bits):
                raise ArchiveError("codec %s does not decode its own output exactly" % name)
        out[name] = {"blobs": blobs, "bytes": sum(len(b) for b in blobs if b is not None),
                     "applies": all(b is not None for b in blobs),
                     "encode_s": enc_s, "decode_s": dec_s}
        if tick is not None:
            tick(name)
    return out


class Sized:
    """The size of a blob that was not made (`encode_each`: packed, where another codec's
    blob was smaller): len() only; never chosen (`choose` takes the smaller blob)."""

    def __init__(self, size: int):
        self.size = int(size)

    def __len__(self) -> int:
        return self.size


def encode_each(streams, profiles: Dict[str, Profile], codecs: dict, spill,
                tick=None) -> dict:
    """{codec name: [(blob, encode s, decode s)] a stream}: each codec once on each stream,
    in the archive's order, its blob checked to decode to the stream exactly (ArchiveError
    otherwise) and kept in the spill (a compress.spill.BlobRef); blob None where the codec does
    not apply. The streams are compress.store_streams.SpilledStream: packed and adaptive on a
    grid's or table's stream run a block at a time (compress.streamed); every other codec,
    and every codec on the pairs and messages shapes, is given the whole stream (its symbols
    read into memory, one stream at a time). The adaptive codec's model is shared by the
    streams of a profile as `shared` shares it.

    `packed` (the registry's), beside other codecs, is made only where it is not larger than
    all of their blobs: its size is exact without making it (streamed.packed_size), so where
    it would lose, its entry is that size (a `Sized`, encode and decode s 0). So the usual
    default run (adaptive smaller on every stream) codes each stream once.
    tick(name), if given, after each codec on each stream."""
    from . import streamed
    from .rivals import Packed

    out = {name: [] for name in codecs}
    contexts = {name: {} for name in codecs}   # per codec, per profile (`shared`'s contexts)
    priors = {}        # per profile: the histogram of its earlier streams (streamed adaptive)
    lazy = [name for name, c in codecs.items() if name == "packed" and type(c) is Packed
            and len(codecs) > 1]
    for s in streams:
        prof = profiles[s.fp]
        whole = []         # the stream's bits, read once for the codecs that take them whole
        got = {}
        for name, codec in list(codecs.items()):
            if name in lazy:
                continue
            got[name] = _encode_one(name, codec, s, prof, spill, whole,
                                    contexts[name].setdefault(s.fp, {}), priors.get(s.fp))
            if tick is not None:
                tick(name)
        for name in lazy:
            size = streamed.packed_size(s)
            others = [len(b) for b, _, _ in got.values() if b is not None]
            got[name] = ((Sized(size), 0.0, 0.0) if others and size > min(others) else
                         _encode_one(name, codecs[name], s, prof, spill, whole, {}, None))
            if tick is not None:
                tick(name)
        for name in codecs:
            out[name].append(got[name])
        if getattr(s, "hist", None) is not None:
            priors[s.fp] = s.hist if s.fp not in priors else priors[s.fp] + s.hist
    return out


def _encode_one(name, codec, s, prof, spill, whole: list, ctx: dict, prior) -> tuple:
    """(blob, encode s, decode s) of one codec on one stream: streamed (compress.streamed)
    where it can be, else on the whole stream."""
    from . import streamed

    if not streamed.applies(name, codec, prof):
        return _encode_whole(name, codec, s, prof, spill, whole, ctx)
    t0 = time.perf_counter()
    if name == "packed":
        blob = streamed.packed_encode(s, spill)
        t1 = time.perf_counter()
        streamed.packed_check(s, blob, codec)
    else:
        blob = streamed.adaptive_encode(s, spill, codec._coder, prior)
        t1 = time.perf_counter()
        streamed.adaptive_check(s, blob, codec._coder, prior)
    return blob, t1 - t0, time.perf_counter() - t1


def _encode_whole(name, codec, s, prof, spill, whole: list, ctx) -> tuple:
    """(blob, encode s, decode s) of one codec on a whole stream (`whole`: [its bits] once
    read, else [])."""
    coder = stream_codec(name, codec, prof)
    if coder is None:
        return None, 0.0, 0.0
    if not whole:
        whole.append(s.bits())
    bits = whole[0]
    shares = hasattr(coder, "observe")
    t0 = time.perf_counter()
    raw = bytes(coder.encode(bits, prof, context=ctx) if shares else coder.encode(bits, prof))
    t1 = time.perf_counter()
    back = coder.decode(raw, prof, context=ctx) if shares else coder.decode(raw, prof)
    t2 = time.perf_counter()
    if not np.array_equal(np.asarray(back, dtype=np.uint64), bits):
        raise ArchiveError("codec %s does not decode its own output exactly" % name)
    del back
    if shares:
        coder.observe(ctx, bits, prof)
    w = spill.blob()
    w.write(raw)
    return w.done(), t1 - t0, t2 - t1


def choose(streams: List[Stream], profiles: Dict[str, Profile], sizes: dict,
           candidates: List[str]) -> list:
    """[(codec name, blob)] a stream: the smallest of the `candidates` codecs that apply
    (measured in `sizes`; ties: the first named)."""
    out = []
    for i, s in enumerate(streams):
        usable = [c for c in candidates if sizes[c]["blobs"][i] is not None]
        if not usable:
            raise ArchiveError("none of the codecs %s applies to the %s streams of profile %s"
                               % (", ".join(candidates), SH.shape_of(profiles[s.fp]).name,
                                  s.fp[:16]))
        best = min(usable, key=lambda c: (len(sizes[c]["blobs"][i]), candidates.index(c)))
        if isinstance(sizes[best]["blobs"][i], Sized):      # encode_each made the smaller
            raise ArchiveError("codec %s was not run on stream %d" % (best, i))
        out.append((best, sizes[best]["blobs"][i]))
    return out


def write(path: str, *, source: str, profiles: Dict[str, Profile], devices: List[bytes],
          columns: Optional[dict], streams: List[Stream], sizes: Optional[dict] = None,
          candidates: Optional[List[str]] = None, losses=None, statuses=None,
          link_bytes: Optional[int] = None, chosen: Optional[list] = None,
          frames: Optional[dict] = None, nframes: Optional[int] = None,
          volume: Optional[tuple] = None) -> dict:
    """Write the archive (atomically: a temporary file renamed over `path`); each stream in
    the smallest of the `candidates` codecs (measured in `sizes`; ties: the first named), or
    in the (codec name, blob) `chosen` for it. A blob is bytes or a compress.spill.BlobRef
    (copied into the zip a piece at a time). The frame table is `columns` (a column an
    array), or `frames` (the columns' runs already made) of `nframes` frames. `volume`:
    (volume, volumes, set id) for a volume of a set (compress.archive_volumes: the keys follow
    "version"); None, an archive without volumes (no such keys).
    Returns the manifest, with "bytes" (the archive's size) added."""
    fps = list(profiles)
    if chosen is None:
        chosen = choose(streams, profiles, sizes, candidates)
    if frames is None and columns is not None:
        frames = {name: runs(columns[name]) for name in F.COLUMNS}
        nframes = len(columns["count"])
    # version 1 where every stream is of 64-bit patterns (what a zeal reading version 1 only
    # reads), version 2 where a stream is of pairs or messages
    plain = all(SH.shape_of(profiles[fp]) is SH.Patterns for fp in fps)
    version = 1 if plain else F.VERSION
    manifest = {"format": F.FORMAT, "version": version}
    if volume is not None:
        manifest.update(zip(("volume", "volumes", "set"), volume))
    manifest.update({"source": source, "profiles": fps,
                     "devices": [d.hex() for d in devices], "streams": [], "frames": frames,
                     "losses": losses, "statuses": statuses, "link_bytes": link_bytes,
                     "absent": F.ABSENT if source == "database" else
                     ["devices", "frames", "losses", "events", "wire bytes"]})
    entries = []
    for i, (s, (best, blob)) in enumerate(zip(streams, chosen)):
        entry = "streams/%d" % i
        item = {"entry": entry, "device": s.device, "profile": s.fp, "vector": s.vector,
                "codec": best, "n": s.n, "bytes": len(blob)}
        if s.symbols != s.n:
            item["symbols"] = s.symbols
        manifest["streams"].append(item)
        entries.append((entry, blob))
    # every profile's file and those it refers to (a multi header's attribute files), once
    files = {}
    for fp in fps:
        for ffp, text in kinds.of(profiles[fp]).files(profiles[fp]):
            files.setdefault(ffp, text)

    def write(fh):
        with zipfile.ZipFile(fh, "w") as z:
            z.comment = b"zeal-archive %d" % version
            info = entry_info(F.MANIFEST)     # as writestr makes it, the text in pieces
            info.compress_type = zipfile.ZIP_DEFLATED
            info._compresslevel = 9
            info.file_size = _manifest_size(manifest)
            with z.open(info, mode="w") as dest:
                for piece in _manifest_chunks(manifest):
                    dest.write(piece.encode("utf-8"))
            for ffp, text in files.items():
                z.writestr(entry_info(F.profile_entry(ffp)), text,
                           compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for entry, blob in entries:
                if isinstance(blob, (bytes, bytearray, memoryview)):
                    z.writestr(entry_info(entry), blob, compress_type=zipfile.ZIP_STORED)
                    continue
                info = entry_info(entry)         # as writestr makes it, the bytes copied
                info.compress_type = zipfile.ZIP_STORED
                info.file_size = len(blob)
                with z.open(info, mode="w") as dest:
                    blob.copy_to(dest)

    past = _past_caps(manifest, nframes or 0)
    total = sum(len(text.encode("utf-8")) for text in files.values())
    if past is None and total > F.MAX_PROFILE_TOTAL:
        past = ("%d bytes of profile files" % total, "%d" % F.MAX_PROFILE_TOTAL)
    if past is None and 1 + len(files) + len(entries) > F.MAX_ENTRIES:
        past = ("%d zip entries" % (1 + len(files) + len(entries)), "%d" % F.MAX_ENTRIES)
    if past:
        raise ArchiveError("the archive would hold %s; zeal analyze --archive reads at most %s "
                           "(the limits of zeal.analysis.compress.archive)" % past)
    write_atomically(path, write, binary=True)  # a temporary file renamed over path
    manifest["bytes"] = os.path.getsize(path)
    return manifest


def _past_caps(manifest: dict, nframes: int):
    """(what the archive would hold, the cap) for the first cap `manifest` goes past, or None:
    what `read` refuses, `write` does not write."""
    details = [d for _, d in manifest["statuses"] or []]
    longest = max(map(len, details)) if details else 0
    counts = (("reports", sum(s["n"] for s in manifest["streams"]), F.MAX_REPORTS),
              ("symbols (a multi report: 2k)", sum(s.get("symbols", s["n"])
                                                   for s in manifest["streams"]), F.MAX_SYMBOLS),
              ("frames", nframes, F.MAX_FRAMES),
              ("devices", len(manifest["devices"]), F.MAX_DEVICES),
              ("streams", len(manifest["streams"]), F.MAX_STREAMS),
              ("profiles", len(manifest["profiles"]), F.MAX_PROFILES),
              ("STATUS events", len(details), F.MAX_STATUSES),
              ("characters in a STATUS detail", longest, F.MAX_STATUS_DETAIL),
              ("loss entries", len(manifest["losses"] or []), F.MAX_LOSSES))
    for what, n, cap in counts:
        if n > cap:
            return ("%d %s" % (n, what), "%d" % cap)
    size = _manifest_size(manifest)
    if size > F.MAX_MANIFEST_BYTES:
        return ("a manifest of %d bytes" % size, "%d bytes" % F.MAX_MANIFEST_BYTES)
    return None


def _manifest_chunks(manifest: dict):
    """The manifest's JSON text (json.dumps's, no spaces: ASCII), a piece at a time: a frame
    column kept as archive_frames.Runs is written from its compact form, never as the lists
    of Python integers json.dumps would need (one a run: most of the manifest's size when a
    collection is irregular)."""
    frames = manifest.get("frames")
    if not frames or not any(isinstance(v, Runs) for v in frames.values()):
        yield json.dumps(manifest, separators=(",", ":"))
        return
    text = json.dumps(dict(manifest, frames=None), separators=(",", ":"))
    # the key's quotes are unescaped only where it is the key (inside a string they are \")
    at = text.index('"frames":null') + len('"frames":')
    yield text[:at]
    for i, (name, column) in enumerate(frames.items()):
        yield ("{" if i == 0 else ",") + json.dumps(name) + ":"
        if isinstance(column, Runs):
            yield from column.json_chunks()
        else:
            yield json.dumps(column, separators=(",", ":"))
    yield "}"
    yield text[at + len("null"):]


def _manifest_size(manifest: dict) -> int:
    return sum(len(piece.encode("utf-8")) for piece in _manifest_chunks(manifest))
