"""What a collector tells: `Progress` (the committed figures, after each commit and at the end),
the commit latency, the bounded set of devices seen, rate-limited STATUS lines, the progress
line on a terminal, and the summary (text, `--json`, exit status)."""
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..text import shown
from .accounting import REASONS
from .store import MAX_DEVICES

MAX_BACKLOG = 65_536  # unresolved DATA a stream keeps (the store's cap per port too)
# STATUS lines on stderr (every STATUS is stored all the same): at most STATUS_LINES a port
# and STATUS_LINES_ALL in all every STATUS_WINDOW seconds; the rest are counted, and said
# in one line when the window ends.
STATUS_LINES = 10
STATUS_LINES_ALL = 100
STATUS_WINDOW = 10.0
# Rejects that are not damage on the line, shown apart: test-key frames, DATA under a profile
# the host lacks.
NOT_ERRORS = ("vector", "unknown_profile")
EXIT_DEVICE_ERROR = 3
EXIT_READER_ERROR = 4


@dataclass
class Progress:
    """Committed figures, passed to `on_progress` after each commit and returned by `run`."""

    elapsed: float = 0.0
    reports: int = 0          # reports in newly stored frames
    frames: int = 0           # newly stored frames
    duplicates: int = 0       # frames already in the store (a stream collected twice)
    resolved: int = 0         # frames stored late: DATA kept until its session's HELLO came
    unresolved: int = 0       # unresolved DATA rows of these ports in the store: kept raw,
                              # waiting for its HELLO (net of resolved and of the cap's drops)
    unresolved_dropped: int = 0  # unresolved rows the store's per-port cap deleted this run
    rejects: Counter = field(default_factory=Counter)  # reason -> count
    gaps: int = 0             # DATA frames lost, any reason (= sum of `lost`)
    # frames lost in the sessions this run stored or heard of, by reason (gap, before_attach,
    # unattended: zeal.collect.accounting), as the store counts them now (they can go down)
    lost: Counter = field(default_factory=Counter)
    repeated_bytes: int = 0   # bytes read that stored nothing new (a stream read again)
    reboots: int = 0
    disconnects: int = 0
    reader_errors: int = 0    # readers that failed with an unexpected exception (retried)
    duplicate_ids: int = 0    # device ids seen on two ports at once
    devices_dropped: int = 0  # frames and events not stored: their device would exceed the
                              # store's cap on devices (its event devices_dropped)
    status_suppressed: int = 0  # STATUS lines not shown (rate limit; every STATUS is stored)
    bytes: int = 0            # bytes read on every link
    devices: set = field(default_factory=set)
    connected: int = 0        # ports open now
    stopped: int = 0          # ports whose device sent STATUS STOPPED (or an error status)
    failed_devices: list = field(default_factory=list)  # (port, device hex, code, message)
    never_opened: list = field(default_factory=list)  # ports absent for the whole run
    reason: str = ""          # why the run ended ("" while running)
    commits: int = 0          # rounds of commits (one transaction per port with news)
    queue_peak: int = 0       # most bytes the readers had queued for the writer at once
    reader_wait: float = 0.0  # seconds readers waited for room in the queue (back-pressure)
    store_outages: int = 0    # times the store became unavailable (locked, full, restarting)
    store_unavailable: float = 0.0  # seconds it was, in all (the writer retried meanwhile)
    store_down: float = 0.0   # seconds the current outage has lasted (0: the store is up)
    uncommitted: int = 0      # frames read and not committed when the run gave up
    latency: "Latency" = field(default_factory=lambda: Latency())  # reading -> commit

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
        if self.unresolved:
            text += "  unresolved %d" % self.unresolved
        if self.store_down:
            text += "  store unavailable for %.0f s" % self.store_down
        return text


class Devices(set):
    """Progress.devices: the ids of the devices whose frames or events this run stored. An id
    the store did not take (a device beyond its cap, store.max_devices, whose frames and
    events it counts in devices_dropped) is not kept, and never more than the cap's number:
    the memory is bounded by the store's configuration, not by how many ids the input
    names (each new id grew it by ~150 bytes before, past the cap too). Filled after each
    write, from the store's last_devices."""

    def __init__(self, store):
        super().__init__()
        self._store = store

    def add(self, device_id) -> None:
        held = getattr(self._store, "last_devices", None)
        if device_id is None or device_id in self or (held is not None
                                                      and device_id not in held):
            return
        if len(self) < getattr(self._store, "max_devices", MAX_DEVICES):
            set.add(self, device_id)

    def update(self, *others) -> None:
        for other in others:
            for device_id in other:
                self.add(device_id)


class StatusLines:
    """The rate limit of STATUS lines: `say(key, text)` passes text to `log` unless `key`
    (a port) had `per_key` lines, or all keys `per_all`, in the current window of `window`
    seconds; then it counts it and returns False. `roll()` (called on every say, after each
    commit, and with final=True at the end) ends a window that is over: one line says how
    many were suppressed in it. Memory: a count per port heard in the window."""

    def __init__(self, log, per_key: int = STATUS_LINES, per_all: int = STATUS_LINES_ALL,
                 window: float = STATUS_WINDOW):
        self.log, self.per_key, self.per_all, self.window = log, per_key, per_all, window
        self.start = time.monotonic()
        self.shown = Counter()
        self.held = 0        # suppressed in the current window
        self.held_ports = 0

    def say(self, key, text: str) -> bool:
        self.roll()
        if self.shown[key] >= self.per_key or sum(self.shown.values()) >= self.per_all:
            self.held += 1
            return False
        self.shown[key] += 1
        self.log(text)
        return True

    def roll(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.start < self.window:
            return
        if self.held:
            self.log("zeal: %d more STATUS line(s) suppressed in the last %.0f s (at most %d "
                     "a port and %d in all every %g s); every STATUS is stored: zeal events "
                     "--kind status" % (self.held, max(now - self.start, 1.0), self.per_key,
                                        self.per_all, self.window))
        self.start, self.held = now, 0
        self.shown = Counter()


class Latency:
    """Commit latency of frames (seconds from a frame's reading to the commit that stored
    it): a histogram of bounded size (1 ms buckets up to 10 s, 1 s buckets up to an hour,
    longer ones in the last), so its memory does not grow with the run."""

    def __init__(self):
        self.counts = Counter()
        self.n = 0
        self.max = 0.0

    @staticmethod
    def _bucket(seconds: float) -> int:
        ms = int(seconds * 1000.0) if seconds > 0 else 0
        return ms if ms < 10_000 else 10_000 + min(int(seconds) - 10, 3590)

    @staticmethod
    def _upper(bucket: int) -> float:
        return (bucket + 1) / 1000.0 if bucket < 10_000 else float(bucket - 10_000 + 11)

    def add(self, seconds: float, n: int = 1) -> None:
        self.counts[self._bucket(seconds)] += n
        self.n += n
        self.max = max(self.max, seconds)

    def quantile(self, q: float) -> float:
        """The upper end of the bucket holding quantile q (0 without data)."""
        if not self.n:
            return 0.0
        want, seen = q * self.n, 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= want:
                return min(self._upper(bucket), self.max)
        return self.max




class ProgressLine:
    """~2 updates/s rewritten in place on a terminal; a plain line every 5 s otherwise (or
    every `every` s); `extra(progress)`, if given, adds its text to each update. The
    rate shown is that since the previous update (the summary gives the run's average).
    `say(text)`: a line of its own (a device STATUS...), above the progress line."""

    def __init__(self, stream=None, extra=None, every=None):
        self.stream = stream if stream is not None else sys.stderr  # as it is now
        self.tty = self.stream.isatty()
        self.every = every if every is not None else 0.5 if self.tty else 5.0
        self.extra = extra  # extra(progress): text added to the line (zeal run's estimate)
        self.last = (0.0, 0)  # (elapsed, reports) at the previous update
        self.width = 0
        self.text = ""

    def __call__(self, pr: Progress) -> None:
        dt = pr.elapsed - self.last[0]
        if dt < self.every:
            return
        rate = (pr.reports - self.last[1]) / dt
        self.last = (pr.elapsed, pr.reports)
        text = "%6.1f s  %s" % (pr.elapsed, pr.line(rate))
        if self.extra is not None:
            text += "  " + self.extra(pr)
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            self.text = text
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def say(self, line: str) -> None:
        line = shown(line)  # device- or file-supplied text never drives the terminal
        if self.tty and self.width:
            self.stream.write("\r" + line.ljust(self.width) + "\n" + self.text)
        else:
            self.stream.write(line + "\n")
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
    if pr.resolved:
        lines.append("stored late: %d frames that arrived before their session's HELLO"
                     % pr.resolved)
    if pr.unresolved:
        lines.append("unresolved: %d frames stored raw until their session's HELLO arrives "
                     "(collect again while the board streams)" % pr.unresolved)
    if pr.unresolved_dropped:
        lines.append("unresolved, dropped: %d frames, the oldest beyond the cap of %d per "
                     "port (zeal events --kind unresolved_dropped)"
                     % (pr.unresolved_dropped, MAX_BACKLOG))
    rej = ", ".join("%s %d" % kv for kv in sorted(pr.rejects.items())) or "none"
    lines.append("rejected frames: %s" % rej)
    why = ", ".join("%s %d" % (reason.replace("_", " "), pr.lost[reason])
                    for reason in REASONS if pr.lost[reason])
    lines.append("lost frames (gaps): %d%s; reboots: %d; disconnects: %d; bytes read: %d"
                 % (pr.gaps, " (%s)" % why if why else "", pr.reboots, pr.disconnects,
                    pr.bytes))
    if pr.lost["before_attach"]:
        lines.append("note: %d frames of these sessions were sent before any collector "
                     "listened (counted lost: before attach)" % pr.lost["before_attach"])
    if pr.repeated_bytes:
        lines.append("read again: %d bytes stored nothing new (a stream collected before; "
                     "not counted as the link's)" % pr.repeated_bytes)
    if pr.devices_dropped:
        lines.append("not stored: %d frames and events of devices beyond the database's cap "
                     "on devices (zeal events --kind devices_dropped)" % pr.devices_dropped)
    if pr.status_suppressed:
        lines.append("STATUS lines not shown: %d (at most %d a port every %g s; every STATUS "
                     "is stored: zeal events --kind status)"
                     % (pr.status_suppressed, STATUS_LINES, STATUS_WINDOW))
    if pr.store_outages:
        lines.append("store unavailable: %.1f s in %d outage(s) (locked, full or restarting; "
                     "the writer kept what it had read and retried: nothing read was dropped)"
                     % (pr.store_unavailable, pr.store_outages))
    if pr.reader_wait >= 0.05:
        lines.append("back-pressure: the readers waited %.1f s for the writer (the boards "
                     "held their data meanwhile; nothing read was dropped)" % pr.reader_wait)
    if pr.rejects["unknown_profile"]:
        lines.append("note: a device announced a profile this database does not know; "
                     "pass its file with --profile")
    if pr.rejects["vector"]:
        lines.append("note: VECTOR (test-key) frames were not stored; --keep-vector keeps them")
    if pr.duplicate_ids:
        lines.append("warning: %d device id(s) seen on two ports at once (zeal events "
                     "--kind duplicate_id)" % pr.duplicate_ids)
    if pr.reader_errors:
        lines.append("error: a port's reader failed %d time(s) (retried; zeal events --kind "
                     "reader_error)" % pr.reader_errors)
    for port, dev, code, message in pr.failed_devices:
        lines.append("error: device %s on %s reported %s%s and sent no data"
                     % (dev or "?", port, code, (": " + message) if message else ""))
    for port in pr.never_opened:
        lines.append("error: %s was absent for the whole run" % port)
    return [shown(line) for line in lines]  # a STATUS message is the device's text


def summary_doc(pr: Progress) -> dict:
    """The summary as `zeal collect --json` prints it (units in the key names)."""
    return {
        "reports": pr.reports, "frames": pr.frames,
        "devices": sorted(d.hex() for d in pr.devices if d is not None),
        "elapsed_s": round(pr.elapsed, 3), "reports_per_s": round(pr.rate, 3),
        "ended": pr.reason, "duplicate_frames": pr.duplicates,
        "resolved_frames": pr.resolved, "unresolved_frames": pr.unresolved,
        "rejected_frames": dict(sorted(pr.rejects.items())), "lost_frames": pr.gaps,
        "lost_by_reason": {reason: pr.lost[reason] for reason in REASONS},
        "unresolved_dropped": pr.unresolved_dropped, "repeated_bytes": pr.repeated_bytes,
        "reboots": pr.reboots, "disconnects": pr.disconnects, "bytes_read": pr.bytes,
        "duplicate_ids": pr.duplicate_ids, "reader_errors": pr.reader_errors,
        "devices_dropped": pr.devices_dropped, "status_lines_suppressed": pr.status_suppressed,
        "failed_devices": [{"port": port, "device": dev, "code": code, "message": message}
                           for port, dev, code, message in pr.failed_devices],
        "never_opened": list(pr.never_opened),
        "exit_status": exit_status(pr),
        "commits": pr.commits,
        "commit_latency_p99_s": round(pr.latency.quantile(0.99), 3),
        "commit_latency_max_s": round(pr.latency.max, 3),
        "queue_peak_bytes": pr.queue_peak, "reader_wait_s": round(pr.reader_wait, 3),
        "store_outages": pr.store_outages,
        "store_unavailable_s": round(pr.store_unavailable, 3),
        "uncommitted_frames": pr.uncommitted,
    }


def exit_status(pr: Progress) -> int:
    """0, or EXIT_DEVICE_ERROR / EXIT_READER_ERROR, or 1 for a port absent for the whole run
    (see `zeal collect --help`)."""
    if pr.failed_devices:
        return EXIT_DEVICE_ERROR
    if pr.reader_errors:
        return EXIT_READER_ERROR
    if pr.never_opened:
        return 1
    return 0
