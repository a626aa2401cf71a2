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
non-private build) are dropped and counted; so are VECTOR-flagged ones (test keys), unless a
caller keeps them (`keep_vector`, the seeded demo and tests only): they are then pooled apart
and forwarded with the VECTOR flag, so test data never leaves the shuffler looking real.

`shuffle_ports(ports, sink, batch, ...)` is the loop `zeal shuffle` runs (and
`zeal demo --shuffle` in a thread); `PortSink(port=...)` writes to a port already open.
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
    kept in memory to check DATA's CRC, nothing else; DATA before any HELLO is dropped.

    Pool key: (fingerprint, bits), or (fingerprint, bits, "vector") for test-mode frames,
    which are dropped unless `keep_vector`."""

    def __init__(self, keep_vector: bool = False):
        self.deframer = Deframer()
        self._hello = None
        self.dropped = Counter()
        self.keep_vector = keep_vector

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
            key = (h.fingerprint, h.bits)
            if data.vector or h.vector:
                if not self.keep_vector:
                    self.dropped["vector"] += len(reports)
                    continue
                key += (VECTOR,)
            out.append((key, [int(v) for v in reports]))
        return out

    @property
    def rejected(self) -> Counter:
        return self.deframer.rejected + self.dropped


# ---- batches out --------------------------------------------------------------------------------
VECTOR = "vector"  # the third element of a test-mode pool's key


def _split_key(key):
    """(fingerprint, bits, vector) of a pool key."""
    return key[0], key[1], key[2:] == (VECTOR,)


class FileSink:
    """Released batches as text: a `# batch` line, then one hex message per line."""

    def __init__(self, path: str):
        try:
            self.fh = open(path, "a", encoding="ascii")
        except OSError as exc:
            raise ZealError("cannot write %s: %s" % (path, exc.strerror or exc)) from None

    def write(self, key, batch) -> None:
        fingerprint, bits, vector = _split_key(key)
        digits = (bits + 3) // 4
        lines = ["# batch fingerprint=%s bits=%d messages=%d%s\n"
                 % (fingerprint.hex(), bits, len(batch), " test-mode" if vector else "")]
        lines += ["%0*x\n" % (digits, m) for m in batch]
        self.fh.write("".join(lines))
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


SHUFFLER_ID = b"shuffler"


class PortSink:
    """Released batches as Zeal frames from the one device "shuffler" (a HELLO per profile
    change, then DATA frames of <= 255 reports; a test-mode pool's frames carry the VECTOR
    flag). `url` is opened here; or `port`, anything with write/flush/close, is used as is
    (the demo's pty)."""

    def __init__(self, url: str = None, *, port=None):
        self.port = port if port is not None else transport.open_port(url, exclusive=False)
        self.nonce = secrets.token_bytes(codec.NONCE_LEN)
        self.seq = 0
        self.key = None

    def write(self, key, batch) -> None:
        fingerprint, bits, vector = _split_key(key)
        flags = codec.FLAG_VECTOR if vector else 0
        session = codec.session_bytes(SHUFFLER_ID, fingerprint, 0, self.nonce)
        out = []
        if key != self.key:
            out.append(codec.encode_hello(device_id=SHUFFLER_ID, fingerprint=fingerprint,
                                          boot=0, bits=bits, batch=codec.MAX_COUNT,
                                          nonce=self.nonce, next_seq=self.seq, flags=flags))
            self.key = key
        for i in range(0, len(batch), codec.MAX_COUNT):
            out.append(codec.encode_data(seq=self.seq, bits=bits,
                                         reports=batch[i:i + codec.MAX_COUNT],
                                         session=session, flags=flags))
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
def shuffle_ports(ports, sink, batch: int, *, duration=None, messages=None,
                  keep_vector: bool = False, stop=None, tap=None) -> dict:
    """Read `ports` ({name: open serial port}), shuffle, write released batches to `sink`;
    returns the summary (`zeal shuffle --json`'s document). Ends when every port has closed,
    after `duration` seconds, once at least `messages` reports are written, or when `stop`
    (a threading.Event) is set. The ports are closed on return, the sink is not. What is held
    below a batch at the end is dropped (counted). `tap(name, chunk)`: sees each chunk read
    (the demo's identity witness; None in `zeal shuffle`)."""
    import serial

    ports = dict(ports)
    readers = {name: LineReader(keep_vector) for name in ports}
    pools = {}
    written = batches = 0
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while ports:
            if deadline is not None and time.monotonic() >= deadline:
                break
            if messages is not None and written >= messages:
                break
            if stop is not None and stop.is_set():
                break
            for name in list(ports):
                try:
                    chunk = transport.read_chunk(ports[name])
                except (serial.SerialException, OSError):
                    ports.pop(name).close()
                    continue
                if tap is not None and chunk:
                    tap(name, chunk)
                for key, reports in readers[name].feed(chunk):
                    pool = pools.setdefault(key, Shuffler(batch))
                    for out in pool.add(reports):
                        sink.write(key, out)
                        written += len(out)
                        batches += 1
    except KeyboardInterrupt:
        pass
    finally:
        for port in ports.values():
            port.close()
    discarded = sum(pool.discard() for pool in pools.values())
    rejected = Counter()
    for r in readers.values():
        rejected.update(r.rejected)
    received = sum(pool.received for pool in pools.values())
    return {"reports_received": received, "reports_written": written, "batches": batches,
            "reports_discarded": discarded, "batch": batch,
            "dropped": dict(sorted(rejected.items()))}


def cmd_shuffle(args) -> int:
    import json

    if args.batch is None or args.batch < 1:
        raise ZealError("--batch must be a positive integer")
    for url in args.inputs:
        why = transport.never_a_port(url)
        if why:
            raise ZealError("cannot open %s: %s" % (url, why))
    ports = {}
    try:
        for url in args.inputs:
            ports[url] = transport.open_port(url, exclusive=False)
        sink = PortSink(args.out) if _is_port(args.out) else FileSink(args.out)
    except BaseException:
        for port in ports.values():
            port.close()
        raise
    try:
        doc = shuffle_ports(ports, sink, args.batch, duration=args.duration,
                            messages=args.messages)
    finally:
        sink.close()
    received, written = doc["reports_received"], doc["reports_written"]
    discarded, batches = doc["reports_discarded"], doc["batches"]
    if discarded:
        print("zeal: %d reports held below a batch of %d were dropped (never written)"
              % (discarded, args.batch), file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print("reports received   %d" % received)
        print("reports written    %d (in %d batches of >= %d)" % (written, batches, args.batch))
        print("reports dropped    %d (held below a batch at the end)" % discarded)
        for reason, count in sorted(doc["dropped"].items()):
            print("frames/reports dropped (%s)  %d" % (reason, count))
    return 0
