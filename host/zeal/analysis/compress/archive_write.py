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
from .archive_frames import runs
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


def write(path: str, *, source: str, profiles: Dict[str, Profile], devices: List[bytes],
          columns: Optional[dict], streams: List[Stream], sizes: dict, candidates: List[str],
          losses=None, statuses=None, link_bytes: Optional[int] = None) -> dict:
    """Write the archive (atomically: a temporary file renamed over `path`); each stream in
    the smallest of the `candidates` codecs (measured in `sizes`; ties: the first named).
    Returns the manifest, with "bytes" (the archive's size) added."""
    fps = list(profiles)
    # version 1 where every stream is of 64-bit patterns (what a zeal reading version 1 only
    # reads), version 2 where a stream is of pairs or messages
    plain = all(SH.shape_of(profiles[fp]) is SH.Patterns for fp in fps)
    version = 1 if plain else F.VERSION
    manifest = {"format": F.FORMAT, "version": version, "source": source,
                "profiles": fps, "devices": [d.hex() for d in devices], "streams": [],
                "frames": None if columns is None else
                {name: runs(columns[name]) for name in F.COLUMNS},
                "losses": losses, "statuses": statuses, "link_bytes": link_bytes,
                "absent": F.ABSENT if source == "database" else
                ["devices", "frames", "losses", "events", "wire bytes"]}
    entries = []
    for i, s in enumerate(streams):
        usable = [c for c in candidates if sizes[c]["blobs"][i] is not None]
        if not usable:
            raise ArchiveError("none of the codecs %s applies to the %s streams of profile %s"
                               % (", ".join(candidates), SH.shape_of(profiles[s.fp]).name,
                                  s.fp[:16]))
        best = min(usable, key=lambda c: (len(sizes[c]["blobs"][i]), candidates.index(c)))
        blob = sizes[best]["blobs"][i]
        entry = "streams/%d" % i
        item = {"entry": entry, "device": s.device, "profile": s.fp, "vector": s.vector,
                "codec": best, "n": s.n, "bytes": len(blob)}
        if int(s.bits.size) != s.n:
            item["symbols"] = int(s.bits.size)
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
            z.writestr(entry_info(F.MANIFEST), json.dumps(manifest, separators=(",", ":")),
                       compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for ffp, text in files.items():
                z.writestr(entry_info(F.profile_entry(ffp)), text,
                           compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            for entry, blob in entries:
                z.writestr(entry_info(entry), blob, compress_type=zipfile.ZIP_STORED)

    past = _past_caps(manifest, columns)
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


def _past_caps(manifest: dict, columns: Optional[dict]):
    """(what the archive would hold, the cap) for the first cap `manifest` goes past, or None:
    what `read` refuses, `write` does not write."""
    nframes = 0 if columns is None else len(columns["count"])
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
    size = len(json.dumps(manifest, separators=(",", ":")).encode("utf-8"))
    if size > F.MAX_MANIFEST_BYTES:
        return ("a manifest of %d bytes" % size, "%d bytes" % F.MAX_MANIFEST_BYTES)
    return None
