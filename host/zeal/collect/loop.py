"""What every source's run loop shares (zeal.collect.collector's serial ports, zeal.collect.mqtt's
broker): the conditions that end a run, Ctrl-C and SIGTERM as a stop, and the last word."""
import contextlib
import signal
import threading
import time
from typing import Optional

FLUSH = 0.2    # seconds between commits


class Ending:
    """A run's end conditions: `duration` seconds, `reports` stored, every stream's device
    STOPPED (until_stopped). `reason(progress, streams)`: why the run ends now, None when
    it ends on `reports` (named after the final commit: one number, the committed), or
    False to go on."""

    def __init__(self, duration: Optional[float], reports: Optional[int], until_stopped: bool):
        self.duration, self.reports, self.until_stopped = duration, reports, until_stopped
        self.why = "stopped"  # the reason, once `over` has said the run ends (else stop())

    def over(self, progress, streams) -> bool:
        """Whether the run ends now (its reason kept for `final`)."""
        why = self.reason(progress, streams)
        if why is False:
            return False
        self.why = why
        return True

    def final(self, interrupted: bool):
        """The run's reason for `finish`: "interrupted" by a signal, else what ended it."""
        return "interrupted" if interrupted else self.why

    def reason(self, progress, streams):
        if self.duration is not None and progress.elapsed >= self.duration:
            return "duration reached"
        if self.reports is not None and progress.reports >= self.reports:
            return None
        if self.until_stopped and streams and all(p.stopped for p in streams):
            return "every device sent STOPPED or an error status"
        return False


@contextlib.contextmanager
def stop_signals(handler):
    """SIGINT and SIGTERM call `handler` (in the main thread only: elsewhere Python cannot
    set them) until the block ends."""
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


def finish(progress, reason, on_progress):
    """The run's last word: its reason in Progress, passed to on_progress; the Progress."""
    progress.reason = reason if reason is not None else "%d reports stored" % progress.reports
    if on_progress is not None:
        on_progress(progress)
    return progress


class Source:
    """What every source shares: `stop()` (from another thread or a signal handler: the run
    commits and returns), Ctrl-C (the first stops, a second raises KeyboardInterrupt), and
    `pause(seconds)`, a wait that an interruption cuts short (`release`: the writer's, the same
    unless the source has readers to let go meanwhile)."""

    def __init__(self):
        self._stop = threading.Event()
        self.interrupted = False
        self.stopped_by = None  # the signal that stopped the run (SIGINT: Ctrl-C), if any

    def stop(self) -> None:
        """Ask `run` to end: it commits and returns."""
        self._stop.set()

    def _on_signal(self, signum, frame):
        if self.interrupted:  # a second Ctrl-C: the user insists
            raise KeyboardInterrupt
        self.interrupted = True
        self.stopped_by = signum
        self._stop.set()

    def release(self, seconds: float) -> None:
        """The writer's wait before it tries the store again (zeal.collect.writer)."""
        self.pause(seconds)

    def pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.interrupted and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
