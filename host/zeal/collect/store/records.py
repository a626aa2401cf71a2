"""What a store takes and what it refuses with: the records a write is made of, the caps and
the schema version every backend shares, and StoreError."""
import time
from dataclasses import dataclass
from typing import Optional

from ...errors import ZealError

SCHEMA_VERSION = 2

MAX_DEVICES = 100_000
MAX_EVENTS = 1_000_000
MAX_UNRESOLVED_PER_PORT = 65_536


class StoreError(ZealError):
    """The database cannot be opened, read or written (busy, corrupt, full, newer schema...).
    `transient`: the failure may pass (busy, disk full, a server's connection lost): a
    write refused so changed nothing and may be tried again (the collector does)."""

    def __init__(self, *args, transient: bool = False):
        super().__init__(*args)
        self.transient = transient


@dataclass(frozen=True)
class FrameRecord:
    device_id: bytes
    boot: int
    nonce: bytes            # 8 bytes: the session nonce of the frame's HELLO
    seq: int                # the full u32 sequence number
    crc: int
    fingerprint: str
    count: int
    payload: bytes
    arrival: float
    vector: bool = False
    debug: bool = False

    @classmethod
    def from_batch(cls, batch, arrival: Optional[float] = None) -> "FrameRecord":
        """From a zeal.wire.Batch."""
        return cls(device_id=bytes(batch.device_id), boot=batch.boot, nonce=bytes(batch.nonce),
                   seq=batch.seq, crc=batch.crc, fingerprint=batch.profile.fingerprint,
                   count=len(batch), payload=bytes(batch.payload),
                   arrival=time.time() if arrival is None else arrival,
                   vector=bool(batch.vector), debug=bool(getattr(batch, "debug", False)))


@dataclass(frozen=True)
class EventRecord:
    kind: str
    detail: str = ""
    count: int = 1
    device_id: Optional[bytes] = None
    port: Optional[str] = None
    time: float = 0.0
    key: Optional[str] = None   # identity: an event whose key is stored already is ignored


@dataclass(frozen=True)
class UnresolvedRecord:
    port: str
    arrival: float
    body: bytes
    crc: int
    reason: str
