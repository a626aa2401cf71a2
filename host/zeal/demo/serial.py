"""`zeal demo`: the whole product without hardware, explained as it runs.

Four virtual boards (the real firmware under the MicroPython unix port, each behind a
pseudo-terminal) replay the first 5000 Aarhus humidity readings between them, each board a
contiguous slice, privatising each reading on the "device"; the collector reads the four
serial lines into SQLite; the analysis prints, per device and overall, the private estimate
beside the true mean of that device's readings, and says what the figures mean: the paper's
AVG* and its bias on a coarse grid, the bits per report measured on the wire, and what eps
protects (one reading) and how it adds up over a day of one board's readings.

`--mechanism` (default grid): a table kind (optimal, pm, hm, duchi, three-outputs, pm-sub,
three-outputs-lp, n-output-lp) runs a table profile (zeal-table/1) on the boards instead of the window grid; AVG*
is then not applicable (null in the document: a window-grid notion), and the demo section
names the mechanism and its exact worst-case variance.

`run_demo` returns `zeal analyze`'s document ({"overall", "devices", "profiles"}, the same
keys) with what only the demo knows added: "true_mean" and "readings" in the overall entry and
in every device's, and a "demo" section (readings, unit, AVG*'s expectation for these readings,
the wire cost split, the privacy accounting).
"""
import math
import os
import tempfile
from collections import Counter
from fractions import Fraction

from ..analysis.analyze import analyze, device_name, format_table
from .common import board_slices, check_arguments, printer
from .data import DemoData, aarhus_humidity
from ..collect.store import Store
from ..collect.virtual import VirtualDevice, collect_boards
from ..mechanism.grid import choose
from ..mechanism import kinds
from ..mechanism.grid.estimate import Estimator

TIMEOUT = 120.0  # seconds; the run takes a few
RAW_DOUBLE_BITS = 64
PERIOD_S = 60    # the sampling period the privacy accounting is stated for (1 reading/min)
DAY_S = 86400


def _exact_mean(xs) -> Fraction:
    return sum(Fraction(x) * c for x, c in Counter(xs).items()) / len(xs)


def expected_avg_star(profile, readings) -> Fraction:
    """E[AVG*] for reports made from `readings`: AVG* is affine in the mean offset, and
    E[j | x] = ExactGrid.mean_offset(x) exactly, so E[AVG*] = AVG*(sum_x E[j | x], n)."""
    est = Estimator(profile)
    total = sum(est.grid.mean_offset(Fraction(x)) * c for x, c in Counter(readings).items())
    return est.avg_star(total, len(readings))


def privacy_accounting(epsilon: float, ratio: Fraction, period_s: float = PERIOD_S) -> dict:
    """What eps protects and how it adds up: each report is eps-DP for the one reading it
    carries; k readings from one board compose sequentially to k * eps (basic composition: the
    reports use independent randomness)."""
    per_day = DAY_S / period_s
    return {"epsilon": epsilon, "ratio_bound": float(ratio), "protects": "one reading",
            "period_s": period_s, "readings_per_day": per_day,
            "epsilon_per_board_day": per_day * epsilon}


def build_profile(lo, hi, epsilon, mechanism="grid", bits="auto", progress=None):
    """The demo's profile: the window grid (choose.build) or a table profile of `mechanism`
    (zeal.analysis.compare.build_table_profile; --bits auto = the mechanism's natural size)."""
    if mechanism == "grid":
        return choose.build(lo, hi, epsilon, bits=bits)
    from ..analysis.compare import build_table_profile, table_bits

    return build_table_profile(lo, hi, epsilon, mechanism, table_bits(mechanism, bits),
                               progress=progress)


def run_demo(*, db=None, epsilon=1.0, bits="auto", count=5000, devices=4, plots=None,
             progress=True, seed=None, mechanism="grid", data: DemoData = None,
             paper: bool = False) -> dict:
    """Run the demo; print its explained results on stdout (progress on stderr) unless
    progress=False, and return its document (module docstring).

    data: the readings to replay (zeal.demo.data: a user's file); default the first `count`
    Aarhus humidity readings. paper: the text also gives the paper's estimator (AVG*).
    seed: tests only. The boards then run in vector mode with keys derived from the seed, so
    a run is reproducible; their frames are test-mode frames (the analysis counts them here
    only), never private data. None (the default): fresh keys on every board, as in the field.
    """
    if data is None:
        check_arguments(count, devices, db)
        data = aarhus_humidity(count)
    count = len(data.readings)
    check_arguments(count, devices, db)
    readings, lo, hi, unit = data.readings, data.lo, data.hi, data.unit
    say = printer(progress)
    if data.range_from_data:
        say("zeal demo: range [%g, %g] %s taken from the data (its minimum and maximum): fine "
            "for a trial, but it depends on the readings and is not private; in the field "
            "fix the range before collecting (--range LO HI)" % (lo, hi, unit))
    if data.outside:
        say("zeal demo: %d of %d readings lie outside [%g, %g] %s: the mechanism clamps them "
            "to the range" % (data.outside, count, lo, hi, unit))
    prof = build_profile(lo, hi, epsilon, mechanism, bits,
                         progress=lambda line: say("zeal demo: " + line))
    kind = kinds.of(prof)
    say("profile: %s%s" % ("" if mechanism == "grid" else mechanism + " ",
                            kind.summary(prof, unit)))

    # the seeded keys are run_mqtt_demo's too: the same boards over serial and over MQTT
    slices, ids, keys = board_slices(readings, devices, b"demo-%03d", seed, b"zeal-demo-seed")
    vector = seed is not None
    with tempfile.TemporaryDirectory(prefix="zeal-demo-") as tmp:
        path = db if db is not None else os.path.join(tmp, "demo.db")
        boards = []
        try:
            for i, part in enumerate(slices):
                boards.append(VirtualDevice(part, profile=prof, device_id=ids[i],
                                            vector_key=keys[i],
                                            folder=os.path.join(tmp, "board%d" % i)))
            say("%d virtual boards (MicroPython unix port behind ptys): %s"
                % (len(boards), ", ".join("%s on %s" % (device_name(b.device_id), b.port)
                                          for b in boards)))
            with Store(path) as store:
                collect_boards(boards, store, [prof], expected=count, keep_vector=vector,
                               progress=progress, say=say, timeout=TIMEOUT)
                doc = analyze(store, include_vector=vector)
                if plots:
                    from ..analysis import plots as plot_mod

                    doc["plots"] = plot_mod.plot_store(
                        store, plots, include_vector=vector, unit=unit or None,
                        readings=dict(zip(ids, slices)))
        finally:
            for b in boards:
                b.close()
    explain(doc, prof, readings, dict(zip(ids, slices)), mechanism=mechanism, data=data)
    doc["database"] = db
    if progress:
        print(format_demo(doc, paper=paper))
        for p in doc.get("plots", []):
            print("plot written to %s" % p)
        if db is not None:
            print("database: %s (zeal analyze --db %s)" % (db, db))
    return doc


def explain(doc: dict, prof, readings, by_device: dict, mechanism: str = "grid",
            data: DemoData = None) -> dict:
    """Add what only the demo knows to `zeal analyze`'s document `doc` (in place): each
    device's and the overall true mean, AVG*'s expectation, the wire cost split, the
    privacy accounting, the mechanism (and for a table profile its exact worst-case
    variance; AVG*'s figures are then None: a window-grid notion)."""
    truth = {dev.hex(): xs for dev, xs in by_device.items()}
    for d in doc["devices"]:
        xs = truth.get(d["device"])
        d["true_mean"] = float(_exact_mean(xs)) if xs else None
        d["readings"] = len(xs) if xs else 0
    o = doc["overall"]
    o["true_mean"] = float(_exact_mean(readings))
    o["readings"] = len(readings)
    n = o["n"]
    link_bits = o["wire_bits_per_report"]
    kind = kinds.of(prof)
    ratio = kind.privacy_ratio(prof)
    if not kind.double_reports:  # AVG* is the average of the paper's doubles
        avg = {"value": None, "expected_for_these_readings": None, "bias": None,
               "n_cells": prof.n_cells, "n_window": None}
    else:
        expected = expected_avg_star(prof, readings)
        avg = {"value": o["avg_star"], "expected_for_these_readings": float(expected),
               "bias": float(expected - _exact_mean(readings)),
               "n_cells": prof.n_cells, "n_window": prof.n_window}
    doc["demo"] = {
        "dataset": data.label if data is not None else "%d readings" % len(readings),
        "unit": data.unit if data is not None else "",
        "range": [prof.lo, prof.hi],
        "range_from_data": bool(data is not None and data.range_from_data),
        "readings_outside_range": data.outside if data is not None else 0,
        "mechanism": mechanism,
        "avg_star": avg,
        "wire": {"bits_per_report": link_bits, "report_bits": prof.bits,
                 "data_frame_bits_per_report": o["data_bits_per_report"],
                 "hello_status_bits_per_report": (None if link_bits is None
                                                  else link_bits - o["data_bits_per_report"]),
                 "bytes_read": None if link_bits is None else round(link_bits * n / 8),
                 "raw_double_bits": RAW_DOUBLE_BITS},
        "privacy": privacy_accounting(prof.epsilon, ratio),
    }
    facts = kind.facts(prof, doc["demo"]["unit"])
    if facts is not None:  # (a table profile's: "table")
        doc["demo"][kind.name] = facts
    return doc


def format_demo(doc: dict, paper: bool = False) -> str:
    """The analysis table with each device's true mean, then what the figures mean in plain
    words; `paper`: also the paper's own estimator (AVG*) and what it is."""
    o, d = doc["overall"], doc["demo"]
    a, w, p = d["avg_star"], d["wire"], d["privacy"]
    unit = d["unit"]
    lines = [format_table(doc, footer=False), ""]
    lines.append("true mean of the %d readings  %.6f %s   (each device: its own slice of the "
                 "data, column 'true mean')" % (o["readings"], o["true_mean"], unit))
    lines.append("private estimate of the mean  %.6f %s   99%% interval [%.4f, %.4f] %s "
                 "(computed from the private reports alone)"
                 % ((o["mean_calibrated"], unit) + tuple(o["ci99"]) + (unit,)))
    t = d.get("table")
    if t is not None:
        lines.append("mechanism: %s table profile, %d cells, %d anchor rows; exact worst-case "
                     "variance of one report's estimate %.4f %s over [%g, %g] %s"
                     % (d["mechanism"], t["cells"], t["anchor_rows"], t["worst_variance"],
                        t["variance_unit"], d["range"][0], d["range"][1], unit))
        if paper:
            lines.append("AVG* (the paper's estimator): not applicable to a table profile (it "
                         "inverts the window grid's continuous mechanism); the estimate above "
                         "is exactly unbiased: lo + (hi - lo) sum a_j / (n Q)")
    elif paper:
        lines.append("AVG* (the Zeal paper's estimator: the mean of the perturbed doubles x* "
                     "minus the public bias Abar)  %.4f %s: expected %.4f "
                     "for these readings, bias %+.4f: it inverts the continuous mechanism's "
                     "mean, which a %d-cell grid with %d-cell windows only approximates (the "
                     "coarser the grid, the larger the bias); the calibrated mean inverts the "
                     "grid's exact E[j | x]"
                     % (a["value"], unit, a["expected_for_these_readings"], a["bias"],
                        a["n_cells"], a["n_window"]))
    if w["bits_per_report"] is not None:
        lines.append("wire: %.2f bits per report measured in the frames received (%d bytes for %d "
                     "reports) vs %d for a raw double: %d report bits + %.2f DATA framing "
                     "(header, CRC, COBS) + %.2f HELLO/STATUS frames (session and health "
                     "messages)"
                     % (w["bits_per_report"], w["bytes_read"], o["n"], w["raw_double_bits"],
                        w["report_bits"], w["data_frame_bits_per_report"] - w["report_bits"],
                        w["hello_status_bits_per_report"]))
    lines.append("privacy: eps = %g protects ONE reading (any two values of it change the odds "
                 "of its report by at most e^%g = %.4g x; exact ratio %.4g)"
                 % (p["epsilon"], p["epsilon"], math.exp(p["epsilon"]), p["ratio_bound"]))
    lines.append("         a board's readings add up (sequential composition: eps per reading "
                 "x readings): at one reading a minute, %d readings a day give eps = %g for "
                 "one board's day (the demo's boards replay as fast as they can)"
                 % (p["readings_per_day"], p["epsilon_per_board_day"]))
    return "\n".join(lines)
