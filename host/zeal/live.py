"""`zeal run`: one board in one step -- flash it, collect its frames into a store with a live
line (reports, rate and the running estimate with its 99 % interval), and stop it cleanly.

The steps are the commands a user would type (`zeal flash`, `zeal collect --until-stopped`,
`zeal analyze`), run in turn on one port:

1. flash (zeal.board.flash.flash; skipped with --no-flash): firmware, profile, config;
   the board resets and starts its main.py;
2. collect (zeal.collect.collector.Collector on the one port: a port that is re-enumerating
   after the reset is waited for, and the collector's `!hello` on opening gets the board's
   HELLO): the progress line carries the estimate, recomputed from the store at most every
   --every seconds (and never more often than five times what one analysis took, so a big
   store is not re-read without end);
3. the end: a replay that has run out (STATUS STOPPED), --duration or --reports; or Ctrl-C
   (or SIGTERM), which STOPS THE BOARD: the line `!stop` goes to it, the collector keeps
   reading until its STATUS STOPPED (the frames it sent before stopping are stored) or
   --stop-wait seconds, then commits. A second Ctrl-C ends at once (what was read is
   committed). The summary and the estimate are printed either way; after Ctrl-C the command
   ends as every command does on it (`zeal: interrupted`, exit status 130).

A board stopped so is at its REPL (a board whose watchdog runs resets into a held REPL:
zeal.board.stop), where `zeal flash` or mpremote reach it.
"""
import sys
import threading
import time

from .analysis.analyze import analyze, format_table, headline
from .collect.collector import Collector, run_command
from .collect.progress import ProgressLine
from .errors import ZealError
from .wire import codec, transport

EVERY = 2.0          # seconds between two estimates on the live line (at least)
COST_FACTOR = 5.0    # ... and at least this many times what the last one took


class LiveEstimate:
    """The live line's estimate: `zeal analyze`'s figures for the store, recomputed when the
    reports have changed and the last one is at least `every` seconds (and COST_FACTOR times
    its cost) old. Runs in the collector's writer thread, which owns the store."""

    def __init__(self, store, every: float = EVERY, unit: str = ""):
        self.store, self.every, self.unit = store, every, unit
        self.text, self.at, self.cost, self.reports = "estimate: no report yet", None, 0.0, 0

    def __call__(self, progress) -> str:
        now = time.monotonic()
        if progress.reports == self.reports or (
                self.at is not None and now - self.at < max(0.9 * self.every,
                                                            COST_FACTOR * self.cost)):
            return self.text
        try:
            self.text = headline(analyze(self.store), self.unit)
        except ZealError as exc:  # nothing analysable yet (only test-key frames, ...)
            self.text = "estimate: %s" % exc
        self.at, self.reports = time.monotonic(), progress.reports
        self.cost = self.at - now
        return self.text


class BoardCollector(Collector):
    """A Collector whose first Ctrl-C (or SIGTERM) stops the board rather than the run: it
    sends `!stop` and lets the run go on until the board's STATUS STOPPED (the run's
    until_stopped end) or `stop_wait` seconds; a second one stops the run."""

    def __init__(self, *args, stop_wait: float = 5.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.stop_wait = stop_wait
        self.stop_asked = None   # the signal that asked the board to stop

    def _on_signal(self, signum, frame):
        if self.stop_asked is not None:  # the second: the run stops now
            return super()._on_signal(signum, frame)
        self.stop_asked = signum
        self.stopped_by = signum
        # not in the handler itself: a write may wait for the line (its write timeout)
        threading.Thread(target=self._stop_board, daemon=True, name="zeal-stop").start()

    def _stop_board(self) -> None:
        sent = 0
        for p in self.ports:
            try:
                if p.serial is not None and transport.send_line(p.serial,
                                                                codec.STOP_REQUEST):
                    sent += 1
            except OSError as exc:  # the line is gone: nothing to stop
                self.log("zeal: cannot send !stop to %s: %s" % (p.url, exc))
        self.log("zeal: stopping the board (!stop sent%s); waiting up to %g s for its STATUS "
                 "STOPPED; Ctrl-C again ends at once" % ("" if sent else " to no open port",
                                                        self.stop_wait))
        deadline = time.monotonic() + self.stop_wait
        while time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.05)
        if not self._stop.is_set():
            self.log("zeal: no STATUS STOPPED within %g s; ending the run" % self.stop_wait)
            self.stop()


def cmd_run(args) -> int:
    from .board.devices import resolve_port
    from .board.flash import flash
    from .mechanism.kinds import load as load_any

    if args.every <= 0:
        raise ZealError("--every must be a positive number of seconds")
    profile = load_any(args.profile)  # a bad profile before the board is touched
    port = resolve_port(args.port)
    if args.no_flash:
        given = [o for o, v in (("--sensor", args.sensor), ("--config", args.config),
                                ("--replay-file", args.replay_file),
                                ("--watchdog-ms", args.watchdog_ms)) if v is not None]
        if given:
            raise ZealError("%s: with --no-flash the board keeps what it has; drop it or "
                            "flash" % ", ".join(given))
    else:
        flash(port, args.profile, sensor=args.sensor, config=args.config,
              compile=not args.no_compile, watchdog_ms=args.watchdog_ms,
              replay_file=args.replay_file)
    args.until_stopped = True  # a replay's end, or the board stopped by Ctrl-C

    def finale(store, doc):
        try:
            result = analyze(store)
        except ZealError as exc:
            doc["analysis"] = None
            return ["no estimate: %s" % exc]
        doc["analysis"] = result
        return ["", format_table(result)]

    def show(store):
        return ProgressLine(extra=LiveEstimate(store, args.every, args.unit or ""),
                            every=None if sys.stderr.isatty() else args.every)

    return run_command(args, lambda store, line: BoardCollector(
        [port], store, profiles=[profile], on_progress=line, baudrate=args.baud,
        log=line.say, stop_wait=args.stop_wait), show=show, finale=finale)


