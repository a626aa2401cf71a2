"""Collector: serial ports -> wire.Decoder -> SQLite store.

Threads: one reader per port (pyserial, short read timeout) decodes its own line and queues
frame and event records; the thread that calls `run()` is the only writer (it owns the
sqlite connection) and commits what is queued every FLUSH seconds, one transaction per port
(frames, events and the link's byte count together). A frame counts as stored only once that
transaction has committed: every figure in `Progress` is of committed data.

A port that fails to open at the start is a user mistake (PortError). A port that fails
later (USB unplugged, a board reset that re-enumerates, the pty of a virtual device gone) is
retried every RETRY seconds until the run ends; each link (one open..close of a port) is a
row in `links`, with connect/disconnect events.

Events stored: session (first HELLO of a device on a port), reboot (a new session of the same
device), gap (DATA frames missing from the sequence; count = frames), restart (sequence
restarted inside one session), reject (by reason; count), status (STATUS frames: code and
counters), connect, disconnect.

VECTOR frames (made with a given test key) are refused, and counted as rejects of reason
`vector`, unless keep_vector=True; then they are stored with vector=1, which analysis skips
unless asked.
"""
import argparse
import queue
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

import serial

from . import transport, wire
from .errors import ZealError
from .store import EventRecord, FrameRecord, Store

FLUSH = 0.2    # seconds between commits
RETRY = 1.0    # seconds between attempts to reopen a lost port
STOPPED = 4    # STATUS code STOPPED: the device has flushed its last frame
# Rejects that are not damage on the line, shown apart: test-key frames, DATA under a profile
# the host lacks, DATA before the first HELLO (a host that connects mid-stream).
NOT_ERRORS = ("vector", "unknown_profile", "no_hello")


@dataclass
class Progress:
    """Committed figures, passed to `on_progress` after each commit and returned by `run`."""

    elapsed: float = 0.0
    reports: int = 0          # reports in newly stored frames
    frames: int = 0           # newly stored frames
    duplicates: int = 0       # frames already in the store (a stream collected twice)
    rejects: Counter = field(default_factory=Counter)  # reason -> count
    gaps: int = 0             # DATA frames lost
    reboots: int = 0
    disconnects: int = 0
    bytes: int = 0            # bytes read on every link
    devices: set = field(default_factory=set)
    connected: int = 0        # ports open now
    stopped: int = 0          # ports whose device sent STATUS STOPPED
    reason: str = ""          # why the run ended ("" while running)

    @property
    def rate(self) -> float:
        return self.reports / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def errors(self) -> int:
        """CRC and format rejects: damage on the line."""
        return sum(n for r, n in self.rejects.items() if r not in NOT_ERRORS)

    def line(self, rate: Optional[float] = None) -> str:
        """One progress line; `rate`: reports/s to show instead of the run's average."""
        text = ("reports %d (%.0f/s)  frames %d  rejects %d  gaps %d  devices %d"
                % (self.reports, self.rate if rate is None else rate, self.frames,
                   self.errors, self.gaps, len(self.devices)))
        for reason in NOT_ERRORS:
            if self.rejects[reason]:
                text += "  %s %d" % (reason.replace("_", "-"), self.rejects[reason])
        return text


class _Port:
    """One serial line. Reader-owned: serial, decoder, nbytes and the `_seen_*` counters.
    Writer-owned: link, link_bytes, pending records."""

    def __init__(self, url: str, decoder: wire.Decoder):
        self.url = url
        self.decoder = decoder
        self.serial = None
        self.nbytes = 0               # bytes read on the current link
        self.session = None           # latest HELLO session seen on this port
        self.device = None
        self._seen_rejects = Counter()
        self._seen_lost = 0
        self._seen_restarts = 0
        self.link = None
        self.link_bytes = 0
        self.committed_bytes = 0      # link_bytes as last committed
        self.frames = []              # FrameRecord
        self.events = []              # EventRecord in arrival order
        self.counted = Counter()      # (device, kind, detail) -> count, merged per commit
        self.stop_pending = False     # a STOPPED status is among the pending events
        self.stopped = False          # ... and is committed

    @property
    def device_now(self) -> Optional[bytes]:
        h = self.decoder.hello
        return None if h is None else h.device_id


class Collector:
    """Collect from `ports` (pyserial URLs) into `store` (a zeal.store.Store). Build it and
    call `run` (once) in the thread that opened the store: sqlite connections are per thread.

    profiles: Profile objects the devices may announce; added to the store. Profiles already
    in the store are known too. DATA under any other profile is refused (`unknown_profile`).
    on_progress: called with a Progress after each commit and once at the end.
    """

    def __init__(self, ports, store: Store, *, profiles=(), keep_vector: bool = False,
                 on_progress=None, baudrate: int = transport.DEFAULT_BAUD):
        urls = [ports] if isinstance(ports, str) else list(ports)
        if not urls:
            raise ZealError("no port to collect from")
        if len(set(urls)) != len(urls):
            raise ZealError("a port is given twice")
        self.store = store
        self.keep_vector = keep_vector
        self.on_progress = on_progress
        self.baudrate = baudrate
        for prof in profiles:
            store.add_profile(prof)
        known = store.profiles()
        self.ports = [_Port(u, wire.Decoder(known, vectors=keep_vector)) for u in urls]
        self.progress = Progress()
        self._queue = queue.Queue()
        self._stop = threading.Event()
        self._threads = []
        self._closed_bytes = 0
        self._interrupted = False

    # ---- reader threads -----------------------------------------------------------------------
    def _reader(self, p: _Port) -> None:
        while not self._stop.is_set():
            if p.serial is None:
                if self._stop.wait(RETRY):
                    break
                try:
                    p.serial = transport.open_port(p.url, baudrate=self.baudrate)
                except transport.PortError:
                    continue  # still unplugged: try again in RETRY seconds
                self._connected(p)
            try:
                data = transport.read_chunk(p.serial)
            except (serial.SerialException, OSError) as exc:
                self._disconnected(p, str(exc) or type(exc).__name__)
                continue
            if data:
                p.nbytes += len(data)
                self._decode(p, data)
        if p.serial is not None:
            self._disconnected(p, "")

    def _connected(self, p: _Port) -> None:
        p.nbytes = 0
        if p.decoder.deframer.pending:
            # End the frame cut by the disconnect here, so it cannot swallow the first whole
            # frame of the new link (it is counted as one reject, as it should be).
            p.decoder.feed(b"\x00")
        self._queue.put(("connect", p, None))

    def _disconnected(self, p: _Port, why: str) -> None:
        try:
            p.serial.close()
        except Exception:  # closing a port that is already gone
            pass
        p.serial = None
        self._queue.put(("disconnect", p, (why, p.nbytes)))

    def _decode(self, p: _Port, data: bytes) -> None:
        now = time.time()
        frames, events, stop = [], [], False
        dec = p.decoder
        for ev in dec.feed(data):
            if isinstance(ev, wire.Batch):
                frames.append(FrameRecord.from_batch(ev, now))
            elif isinstance(ev, wire.Hello):
                if ev.session != p.session:
                    kind = "reboot" if p.device == ev.device_id else "session"
                    events.append(EventRecord(
                        kind, "boot %d fingerprint %s%s" % (ev.boot, ev.fingerprint.hex(),
                                                            " vector" if ev.vector else ""),
                        device_id=ev.device_id, port=p.url, time=now))
                    p.session, p.device = ev.session, ev.device_id
            elif isinstance(ev, wire.Status):
                events.append(EventRecord(
                    "status", "%s dropped=%d clamped=%d sent=%d%s"
                    % (ev.code_name, ev.dropped, ev.clamped, ev.sent,
                       (" " + ev.message) if ev.message else ""),
                    device_id=p.device_now, port=p.url, time=now))
                stop = stop or ev.code == STOPPED
        dev = p.device_now
        rejected = dec.rejected
        if rejected != p._seen_rejects:
            for reason, n in rejected.items():
                if n > p._seen_rejects[reason]:
                    events.append(EventRecord("reject", reason, n - p._seen_rejects[reason],
                                              device_id=dev, port=p.url, time=now))
            p._seen_rejects = rejected
        if dec.lost != p._seen_lost:
            events.append(EventRecord("gap", "", dec.lost - p._seen_lost, device_id=dev,
                                      port=p.url, time=now))
            p._seen_lost = dec.lost
        if dec.restarts != p._seen_restarts:
            events.append(EventRecord("restart", "", dec.restarts - p._seen_restarts,
                                      device_id=dev, port=p.url, time=now))
            p._seen_restarts = dec.restarts
        if frames or events:
            self._queue.put(("data", p, (frames, events, p.nbytes, stop)))
        else:
            self._queue.put(("bytes", p, p.nbytes))

    # ---- writer -------------------------------------------------------------------------------
    def _take(self, item) -> None:
        kind, p, arg = item
        if kind == "data":
            frames, events, nbytes, stop = arg
            p.frames.extend(frames)
            for e in events:
                if e.kind in ("reject", "gap", "restart"):  # merged: one row per commit
                    p.counted[(e.device_id, e.kind, e.detail)] += e.count
                else:
                    p.events.append(e)
            p.link_bytes = nbytes
            p.stop_pending = p.stop_pending or stop
        elif kind == "bytes":
            p.link_bytes = arg
        elif kind == "connect":
            self._commit(p)
            p.link = self.store.open_link(p.url)
            p.link_bytes = p.committed_bytes = 0
            p.events.append(EventRecord("connect", device_id=p.device, port=p.url,
                                        time=time.time()))
            self.progress.connected += 1
        elif kind == "disconnect":
            why, nbytes = arg
            p.link_bytes = nbytes
            if why:  # "" when the run ends: a close, not a disconnect
                p.events.append(EventRecord("disconnect", why, device_id=p.device,
                                            port=p.url, time=time.time()))
            self._commit(p)
            self.store.close_link(p.link, p.link_bytes)
            self._closed_bytes += p.link_bytes
            p.link, p.link_bytes, p.committed_bytes = None, 0, 0
            self.progress.connected -= 1

    def _commit(self, p: _Port) -> None:
        if not (p.frames or p.events or p.counted or p.link_bytes != p.committed_bytes):
            return
        events = p.events + [EventRecord(kind, detail, n, device_id=dev, port=p.url)
                             for (dev, kind, detail), n in p.counted.items()]
        link = (p.link, p.link_bytes) if p.link is not None else None
        new = self.store.write(p.frames, events, link=link)
        pr = self.progress
        pr.reports += self.store.last_new_reports  # frames stored before are not counted
        pr.frames += new
        pr.duplicates += len(p.frames) - new
        pr.devices.update(f.device_id for f in p.frames)
        for e in events:
            if e.kind == "reject":
                pr.rejects[e.detail] += e.count
            elif e.kind == "gap":
                pr.gaps += e.count
            elif e.kind == "reboot":
                pr.reboots += 1
            elif e.kind == "disconnect":
                pr.disconnects += 1
            if e.kind in ("session", "reboot"):
                pr.devices.add(e.device_id)
        if p.stop_pending and not p.stopped:
            p.stopped = True
            pr.stopped += 1
        p.frames, p.events, p.counted, p.stop_pending = [], [], Counter(), False
        p.committed_bytes = p.link_bytes

    def _drain(self) -> None:
        while True:
            try:
                self._take(self._queue.get_nowait())
            except queue.Empty:
                return

    def _commit_all(self, started: float) -> None:
        for p in self.ports:
            self._commit(p)
        self.progress.bytes = self._closed_bytes + sum(p.link_bytes for p in self.ports
                                                       if p.link is not None)
        self.progress.elapsed = time.monotonic() - started
        if self.on_progress is not None:
            self.on_progress(self.progress)

    def stop(self) -> None:
        """Ask `run` to end (from another thread or a signal handler): it commits and returns."""
        self._stop.set()

    def _on_signal(self, signum, frame):
        if self._interrupted:  # a second Ctrl-C: the user insists
            raise KeyboardInterrupt
        self._interrupted = True
        self._stop.set()

    def run(self, *, duration: Optional[float] = None, reports: Optional[int] = None,
            until_stopped: bool = False) -> Progress:
        """Collect until `duration` seconds have passed, at least `reports` reports are
        stored, every port's device has sent STATUS STOPPED (until_stopped), `stop()` is
        called, or SIGINT/SIGTERM (Ctrl-C) arrives; then commit everything read and close
        the links. Without a condition it runs until stopped or interrupted.

        Raises PortError if a port cannot be opened at the start, StoreError if the store
        cannot be written (busy beyond its timeout, disk full)."""
        self.store.write()  # fail now, not at the first commit, if the database is locked
        for p in self.ports:
            try:
                p.serial = transport.open_port(p.url, baudrate=self.baudrate)
            except transport.PortError:
                for q in self.ports:
                    if q.serial is not None:
                        q.serial.close()
                        q.serial = None
                raise
        for p in self.ports:
            self._connected(p)
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handlers[sig] = signal.signal(sig, self._on_signal)
        started = time.monotonic()
        self._threads = [threading.Thread(target=self._reader, args=(p,), daemon=True,
                                          name="zeal-read %s" % p.url) for p in self.ports]
        for t in self._threads:
            t.start()
        reason = "stopped"
        try:
            next_commit = started + FLUSH
            while not self._stop.is_set():
                wait = next_commit - time.monotonic()
                if wait > 0:
                    try:
                        self._take(self._queue.get(timeout=min(wait, FLUSH)))
                    except queue.Empty:
                        pass
                    continue
                self._drain()
                self._commit_all(started)
                next_commit = time.monotonic() + FLUSH
                if duration is not None and self.progress.elapsed >= duration:
                    reason = "duration reached"
                elif reports is not None and self.progress.reports >= reports:
                    reason = "%d reports stored" % self.progress.reports
                elif until_stopped and all(p.stopped for p in self.ports):
                    reason = "every device sent STOPPED"
                else:
                    continue
                break
            if self._interrupted:
                reason = "interrupted"
        finally:
            self._stop.set()
            for t in self._threads:
                t.join()
            for sig, old in handlers.items():
                signal.signal(sig, old)
        self._drain()  # includes each reader's final close
        self.progress.reason = reason
        self._commit_all(started)
        return self.progress


# ---- command line -------------------------------------------------------------------------------
def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("not a number: %r" % text) from None
        if value <= 0:
            raise argparse.ArgumentTypeError("must be positive")
        return value
    return parse


def register(subparsers):
    """Add `zeal collect` to the CLI's sub-command table."""
    p = subparsers.add_parser(
        "collect", help="read frames from serial ports into a SQLite database",
        description="Read Zeal frames from one or more serial ports (pyserial URLs: "
                    "/dev/ttyACM0, a pty path, socket://host:port) and store them in a SQLite "
                    "database. A frame counts as stored once committed (every 0.2 s). "
                    "Ctrl-C stops cleanly.")
    p.add_argument("--port", action="append", required=True, metavar="URL",
                   help="serial port or pyserial URL (repeatable)")
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database (created)")
    p.add_argument("--profile", action="append", default=[], metavar="FILE",
                   help="profile file the devices use (repeatable; profiles already in the "
                        "database are known too)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--duration", type=_positive(float), metavar="S",
                   help="stop after S seconds")
    g.add_argument("--reports", type=_positive(int), metavar="N",
                   help="stop once at least N reports are stored")
    p.add_argument("--until-stopped", action="store_true",
                   help="stop once every device has sent STATUS STOPPED (after `zeal stop` "
                        "or the end of a replay)")
    p.add_argument("--keep-vector", action="store_true",
                   help="store VECTOR (test-key) frames too, marked vector=1")
    p.add_argument("--baud", type=int, default=transport.DEFAULT_BAUD)
    p.set_defaults(func=cmd_collect)
    return p


class _ProgressLine:
    """~2 updates/s rewritten in place on a terminal; a plain line every 5 s otherwise. The
    rate shown is that since the previous update (the summary gives the run's average)."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.every = 0.5 if self.tty else 5.0
        self.last = (0.0, 0)  # (elapsed, reports) at the previous update
        self.width = 0

    def __call__(self, pr: Progress) -> None:
        dt = pr.elapsed - self.last[0]
        if dt < self.every:
            return
        rate = (pr.reports - self.last[1]) / dt
        self.last = (pr.elapsed, pr.reports)
        text = "%6.1f s  %s" % (pr.elapsed, pr.line(rate))
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


def summary_lines(pr: Progress) -> list:
    lines = ["stored %d reports in %d frames from %d device(s) in %.1f s (%.0f reports/s)"
             % (pr.reports, pr.frames, len(pr.devices), pr.elapsed, pr.rate),
             "ended: %s" % pr.reason]
    if pr.duplicates:
        lines.append("already stored: %d frames (ignored)" % pr.duplicates)
    rej = ", ".join("%s %d" % kv for kv in sorted(pr.rejects.items())) or "none"
    lines.append("rejected frames: %s" % rej)
    lines.append("lost frames (gaps): %d; reboots: %d; disconnects: %d; bytes read: %d"
                 % (pr.gaps, pr.reboots, pr.disconnects, pr.bytes))
    if pr.rejects["unknown_profile"]:
        lines.append("note: a device announced a profile this database does not know; "
                     "pass its file with --profile")
    if pr.rejects["vector"]:
        lines.append("note: VECTOR (test-key) frames were not stored; --keep-vector keeps them")
    return lines


def cmd_collect(args) -> int:
    from .profile import load

    profiles = [load(path) for path in args.profile]
    # A short busy timeout at the start (a locked database is reported at once), a long one
    # while running (another writer's transaction must not end the collection).
    store = Store(args.db, timeout=1.0)
    try:
        show = _ProgressLine()
        col = Collector(args.port, store, profiles=profiles, keep_vector=args.keep_vector,
                        on_progress=show, baudrate=args.baud)
        store.write()
        store.db.execute("PRAGMA busy_timeout = 30000")
        try:
            pr = col.run(duration=args.duration, reports=args.reports,
                         until_stopped=args.until_stopped)
        finally:
            show.end()
    finally:
        store.close()
    for line in summary_lines(pr):
        print(line)
    return 0
