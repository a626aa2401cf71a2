"""The shuffler of shuffle mode (seed 004; shared_spec/shuffle.md): messages in, identities out.

`Shuffler(batch)` takes messages that are only the randomiser's payload (bytes or ints: no
device id, no sequence number, no nonce, no arrival time), holds them until at least `batch`
are buffered, then releases ALL it holds in an order drawn by a CSPRNG
(secrets.SystemRandom's shuffle: Fisher-Yates, each index from os.urandom, so every order is
equally likely). It never emits a partial batch; what is still held at the end is dropped,
never written. It keeps no record of where a message came from: it is never told.

`zeal shuffle --in PORT... --out FILE|PORT --batch B` reads Zeal wire frames from the ports
(zeal.wire's Deframer; a DATA frame is checked against its line's latest HELLO session, held
in memory only for that check), splits every DATA payload into its m-bit reports (each report
is one user's message), forgets the frame (device id, boot, nonce, sequence number, which
port), and writes each released batch:
- to a FILE: a line `# batch fingerprint=<16 hex> bits=<m> messages=<N>`, then one message
  per line as hex (ceil(m/4) digits, the report's integer);
- to a PORT: as the device "shuffler": a HELLO (fresh random nonce, the profile fingerprint
  the devices announced) and DATA frames of at most 255 reports, which `zeal collect` stores
  under that one device.
Messages of different profiles (fingerprint, bits) are pooled apart. DEBUG-flagged frames (a
non-private build) and VECTOR-flagged ones (test keys) are dropped and counted.
Proposed; not yet wired into `zeal` (cli.py registers it: `shuffler.register(sub)`).
"""
import os
import secrets
import stat
import sys
import time
from collections import Counter

from ..errors import ZealError
from ..wire import codec, transport
from ..wire.deframer import Deframer


class Shuffler:
    """Holds messages and releases them in CSPRNG order, only in batches of >= `batch`.

    `rng`: anything with `shuffle(list)`; secrets.SystemRandom() unless given (tests pass
    a seeded random.Random to check the order's distribution)."""

    def __init__(self, batch: int, *, rng=None):
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ZealError("--batch must be a positive integer, got %r" % (batch,))
        self.batch = batch
        self._rng = rng if rng is not None else secrets.SystemRandom()
        self._held = []
        self.received = 0
        self.released = 0

    @property
    def pending(self) -> int:
        return len(self._held)

    def add(self, messages) -> list:
        """Take messages (an iterable of bytes or ints); return the batches this releases:
        [] while fewer than `batch` are held, else one list of everything held, permuted."""
        for m in messages:
            if not isinstance(m, (bytes, int)) or isinstance(m, bool):
                raise TypeError("a message is the randomiser's payload: bytes or int")
            self._held.append(m)
            self.received += 1
        if len(self._held) < self.batch:
            return []
        out, self._held = self._held, []
        self._rng.shuffle(out)
        self.released += len(out)
        return [out]

    def discard(self) -> int:
        """Drop what is held (below a batch: never released). Returns how many."""
        n = len(self._held)
        self._held = []
        return n


# ---- frames in ----------------------------------------------------------------------------------
class LineReader:
    """One input line: bytes in, (pool key, [report ints]) out. The latest HELLO's session is
    kept in memory to check DATA's CRC, nothing else; DATA before any HELLO is dropped."""

    def __init__(self):
        self.deframer = Deframer()
        self._hello = None
        self.dropped = Counter()

    def feed(self, chunk: bytes) -> list:
        out = []
        for frame in self.deframer.feed(chunk):
            if isinstance(frame, codec.Hello):
                self._hello = frame if frame.has_profile and frame.bits else None
                continue
            if isinstance(frame, codec.Status):
                continue
            h = self._hello
            if h is None:
                self.dropped["no_hello"] += 1
                continue
            try:
                data = frame.open(h.session)
                reports = codec.unpack_reports(data.payload, data.count, h.bits)
            except codec.FrameError as exc:
                self.dropped[exc.reason] += 1
                continue
            if data.debug or h.debug:
                self.dropped["debug"] += len(reports)
                continue
            if data.vector or h.vector:
                self.dropped["vector"] += len(reports)
                continue
            out.append(((h.fingerprint, h.bits), [int(v) for v in reports]))
        return out

    @property
    def rejected(self) -> Counter:
        return self.deframer.rejected + self.dropped


# ---- batches out --------------------------------------------------------------------------------
class FileSink:
    """Released batches as text: a `# batch` line, then one hex message per line."""

    def __init__(self, path: str):
        try:
            self.fh = open(path, "a", encoding="ascii")
        except OSError as exc:
            raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None

    def write(self, key, batch) -> None:
        fingerprint, bits = key
        digits = (bits + 3) // 4
        lines = ["# batch fingerprint=%s bits=%d messages=%d\n"
                 % (fingerprint.hex(), bits, len(batch))]
        lines += ["%0*x\n" % (digits, m) for m in batch]
        self.fh.write("".join(lines))
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


SHUFFLER_ID = b"shuffler"


class PortSink:
    """Released batches as Zeal frames from the one device "shuffler" (a HELLO per profile
    change, then DATA frames of <= 255 reports)."""

    def __init__(self, url: str):
        self.port = transport.open_port(url, exclusive=False)
        self.nonce = secrets.token_bytes(codec.NONCE_LEN)
        self.seq = 0
        self.key = None

    def write(self, key, batch) -> None:
        fingerprint, bits = key
        session = codec.session_bytes(SHUFFLER_ID, fingerprint, 0, self.nonce)
        out = []
        if key != self.key:
            out.append(codec.encode_hello(device_id=SHUFFLER_ID, fingerprint=fingerprint,
                                          boot=0, bits=bits, batch=codec.MAX_COUNT,
                                          nonce=self.nonce, next_seq=self.seq))
            self.key = key
        for i in range(0, len(batch), codec.MAX_COUNT):
            out.append(codec.encode_data(seq=self.seq, bits=bits,
                                         reports=batch[i:i + codec.MAX_COUNT],
                                         session=session))
            self.seq += 1
        self.port.write(b"".join(out))
        self.port.flush()

    def close(self) -> None:
        self.port.close()


def _is_port(target: str) -> bool:
    if "://" in target:
        return True
    try:
        return stat.S_ISCHR(os.stat(target).st_mode)
    except OSError:
        return False


# ---- the command --------------------------------------------------------------------------------
def register(subparsers):
    """Add `zeal shuffle` to the CLI's sub-command table."""
    p = subparsers.add_parser(
        "shuffle", help="shuffle mode: strip identities, batch and permute reports",
        description="Read Zeal frames from serial ports, keep only each report (never the "
                    "device id, boot, nonce, sequence number or port), hold them until a "
                    "batch of at least B is buffered, and write it in a CSPRNG-drawn order. "
                    "Held reports below a batch at the end are dropped, never written.")
    p.add_argument("--in", dest="inputs", nargs="+", required=True, metavar="PORT",
                   help="serial ports or pyserial URLs to read (a pty path, socket://...)")
    p.add_argument("--out", required=True, metavar="FILE|PORT",
                   help="a file (appended: one hex message a line, a '# batch' line before "
                        "each batch) or a port / URL (frames from the device 'shuffler')")
    p.add_argument("--batch", type=int, required=True, metavar="B",
                   help="release only batches of at least B reports")
    p.add_argument("--duration", type=float, metavar="S",
                   help="stop after S seconds (default: until every input has closed)")
    p.add_argument("--messages", type=int, metavar="N",
                   help="stop once at least N reports are written (default: no limit)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_shuffle)
    return p


def cmd_shuffle(args) -> int:
    import json

    import serial

    if args.batch is None or args.batch < 1:
        raise ZealError("--batch must be a positive integer")
    for url in args.inputs:
        why = transport.never_a_port(url)
        if why:
            raise ZealError("cannot open %s: %s" % (url, why))
    pools = {}
    readers = {}
    ports = {}
    try:
        for url in args.inputs:
            ports[url] = transport.open_port(url, exclusive=False)
            readers[url] = LineReader()
        sink = PortSink(args.out) if _is_port(args.out) else FileSink(args.out)
    except BaseException:
        for port in ports.values():
            port.close()
        raise
    written = batches = 0
    deadline = None if args.duration is None else time.monotonic() + args.duration
    try:
        while ports:
            if deadline is not None and time.monotonic() >= deadline:
                break
            if args.messages is not None and written >= args.messages:
                break
            for url in list(ports):
                try:
                    chunk = transport.read_chunk(ports[url])
                except (serial.SerialException, OSError):
                    ports.pop(url).close()
                    continue
                for key, reports in readers[url].feed(chunk):
                    pool = pools.setdefault(key, Shuffler(args.batch))
                    for out in pool.add(reports):
                        sink.write(key, out)
                        written += len(out)
                        batches += 1
    except KeyboardInterrupt:
        pass
    finally:
        for port in ports.values():
            port.close()
        sink.close()
    discarded = sum(pool.discard() for pool in pools.values())
    rejected = Counter()
    for r in readers.values():
        rejected.update(r.rejected)
    received = sum(pool.received for pool in pools.values())
    doc = {"reports_received": received, "reports_written": written, "batches": batches,
           "reports_discarded": discarded, "batch": args.batch,
           "dropped": dict(sorted(rejected.items()))}
    if discarded:
        print("zeal: %d reports held below a batch of %d were dropped (never written)"
              % (discarded, args.batch), file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print("reports received   %d" % received)
        print("reports written    %d (in %d batches of >= %d)" % (written, batches, args.batch))
        print("reports dropped    %d (held below a batch at the end)" % discarded)
        for reason, count in sorted(rejected.items()):
            print("frames/reports dropped (%s)  %d" % (reason, count))
    return 0
