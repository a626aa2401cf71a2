"""An archive read back as a store: what `zeal analyze` reads from a database (profiles,
frames with their DATA payloads, event counts, STATUS events, link bytes), rebuilt from a
`compress.archive.Archive`, so that `analyze` runs the very code it runs on the database.

Each frame's payload is rebuilt from its stream (compress.streams: `payloads`), byte for byte
what the collector stored (a grid's or table's m-bit reports packed, a multi frame's pairs
packed by multi_profile.pack_multi, a shuffle frame's messages packed); arrival and nonce,
which analyze does not read, are None. Events other than the losses (reject, gap, reboot:
summed counts) and STATUS details are absent, as the archive's manifest says.
"""
from typing import List, Optional

import numpy as np

from ...mechanism import kinds
from . import streams as SH


class ArchiveStore:
    """The read side of a Store (profiles, frames, event_counts, events, link_bytes,
    profile_docs, path) over an archive of a database."""

    def __init__(self, archive):
        m = archive.manifest
        self.path = archive.path
        self._profiles = dict(archive.profiles)
        self._docs = []
        for fp, prof in archive.profiles.items():
            for ffp, text in kinds.of(prof).files(prof):
                if ffp not in dict(self._docs):
                    self._docs.append((ffp, text))
        for ffp, text in self._docs:              # a multi header's attribute files
            if ffp not in self._profiles:
                self._profiles[ffp] = kinds.loads(text)
        fps = m["profiles"]
        devices = [bytes.fromhex(d) for d in m["devices"]]
        cols = archive.columns
        nframes = cols["count"].size
        payloads: List[Optional[bytes]] = [None] * nframes
        label = (cols["profile"] * max(len(devices), 1) + cols["device"]) * 2 + cols["vector"]
        for s, symbols in zip(m["streams"], archive.stream_offsets):
            p = fps.index(s["profile"])
            key = (p * max(len(devices), 1) + s["device"]) * 2 + int(s["vector"])
            frames = np.flatnonzero(label == key)
            prof = archive.profiles[s["profile"]]
            got = SH.shape_of(prof).payloads(prof, symbols, cols["count"][frames].tolist())
            for i, payload in zip(frames.tolist(), got):
                payloads[i] = payload
        self._rows = [(devices[d], int(b), int(q), fps[p], int(c), payload, None, None, int(g),
                       bool(v))
                      for d, p, c, g, b, q, v, payload in zip(
                          *(cols[k].tolist() for k in ("device", "profile", "count", "debug",
                                                       "boot", "seq", "vector")), payloads)]
        self._events = {(None if d is None else bytes.fromhex(d), kind, ""): int(c)
                        for d, kind, c in m["losses"]}
        self._statuses = [{"time": None, "device": d, "port": None, "kind": "status",
                           "detail": detail, "count": 1} for d, detail in m["statuses"]]
        self._link_bytes = int(m["link_bytes"])

    def profiles(self) -> dict:
        return dict(self._profiles)

    def profile_docs(self) -> list:
        return list(self._docs)

    def frames(self, *, fingerprint: Optional[str] = None, vector: bool = False) -> list:
        return [r[:9] for r in self._rows if r[9] == bool(vector)
                and (fingerprint is None or r[3] == fingerprint)]

    def event_counts(self) -> dict:
        return dict(self._events)

    def events(self, device_id: Optional[bytes] = None) -> list:
        return [e for e in self._statuses
                if device_id is None or e["device"] == bytes(device_id).hex()]

    def link_bytes(self) -> int:
        return self._link_bytes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self) -> None:
        pass
