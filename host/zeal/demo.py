"""`zeal demo`: the whole product without hardware.

Four virtual boards (the real firmware under the MicroPython unix port, each behind a
pseudo-terminal) replay the first 5000 Aarhus humidity readings between them, privatising
each on the "device"; the collector reads the four serial lines into SQLite; the analysis
prints the private estimate beside the true mean.
"""
import os
import sys
import tempfile
import threading
import time
from fractions import Fraction

from .analysis import datasets
from .analysis.analyze import analyze, format_table
from .collect.collector import Collector, _ProgressLine, summary_lines
from .collect.store import Store
from .collect.virtual import VirtualDevice
from .errors import ZealError
from .mechanism import choose

TIMEOUT = 120.0  # seconds; the run takes a few


def _start_when_open(collector, devices, failed):
    """pyserial flushes a port's input when it opens it (a board's too), so each virtual
    board boots only once the collector holds every port."""
    deadline = time.monotonic() + 30
    while not all(p.serial is not None for p in collector.ports):
        if time.monotonic() > deadline:
            failed.append("the collector did not open the ports")
            collector.stop()
            return
        time.sleep(0.01)
    for dev in devices:
        dev.start()


def run_demo(*, db=None, epsilon=1.0, bits="auto", count=5000, devices=4, plots=None,
             progress=True) -> dict:
    if count < devices:
        raise ZealError("--count must be at least the number of devices (%d)" % devices)
    if not 1 <= devices <= 16:
        raise ZealError("--devices must be 1 to 16")
    if db is not None and os.path.exists(db):
        raise ZealError("%s exists: the demo writes a new database (choose another --db)" % db)
    try:
        texts = datasets.aarhus("humidity", count)
    except ValueError as exc:
        raise ZealError(str(exc)) from None
    lo, hi = datasets.HUMIDITY_RANGE
    prof = choose.build(lo, hi, epsilon, bits=bits)
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    say("profile: range [%g, %g], epsilon %g, %d bits per report (E = %d, %d cells), "
        "fingerprint %s" % (lo, hi, epsilon, prof.bits, prof.exponent, prof.n_cells,
                            prof.fingerprint[:16]))

    readings = [float(t) for t in texts]  # what a sensor driver hands the firmware
    share = -(-count // devices)
    slices = [readings[i:i + share] for i in range(0, count, share)]
    with tempfile.TemporaryDirectory(prefix="zeal-demo-") as tmp:
        path = db if db is not None else os.path.join(tmp, "demo.db")
        boards = []
        try:
            for i, part in enumerate(slices):
                boards.append(VirtualDevice(part, profile=prof, device_id=b"demo-%03d" % i,
                                            folder=os.path.join(tmp, "board%d" % i)))
            say("%d virtual boards (MicroPython unix port behind ptys): %s"
                % (len(boards), ", ".join(b.port for b in boards)))
            with Store(path) as store:
                show = _ProgressLine() if progress else None
                col = Collector([b.port for b in boards], store, profiles=[prof],
                                on_progress=show, log=show.say if show is not None else say)
                failed = []
                starter = threading.Thread(target=_start_when_open, args=(col, boards, failed),
                                           daemon=True)
                starter.start()
                try:
                    pr = col.run(until_stopped=True, duration=TIMEOUT)
                finally:
                    if show is not None:
                        show.end()
                starter.join()
                if failed:
                    raise ZealError(failed[0])
                for line in summary_lines(pr):
                    say(line)
                if pr.reports != count:
                    errs = "; ".join(b.stderr().strip()[-200:] for b in boards if b.stderr())
                    raise ZealError("stored %d of %d reports (%s)%s"
                                    % (pr.reports, count, pr.reason,
                                       (": " + errs) if errs else ""))
                doc = analyze(store)
                if plots:
                    from .analysis import plots as plot_mod

                    doc["plots"] = plot_mod.plot_store(store, plots)
        finally:
            for b in boards:
                b.close()
    true_mean = float(sum(Fraction(x) for x in readings) / count)
    doc["true_mean"] = true_mean
    doc["overall"]["true_mean"] = true_mean
    doc["database"] = db
    if progress:
        print(format_table(doc))
        o = doc["overall"]
        print()
        print("true mean of the %d readings   %.6f" % (count, true_mean))
        print("private estimate (calibrated)  %.6f   99%% interval [%.4f, %.4f]"
              % ((o["mean_calibrated"],) + tuple(o["ci99"])))
        print("each report: %d bits on the device's grid, privacy ratio <= e^%g (exact)"
              % (prof.bits, epsilon))
        for p in doc.get("plots", []):
            print("plot written to %s" % p)
        if db is not None:
            print("database: %s (zeal analyze --db %s)" % (db, db))
    return doc
