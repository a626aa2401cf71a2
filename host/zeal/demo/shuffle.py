"""`zeal demo --shuffle`: shuffle mode end to end (seed 004; shared_spec/shuffle.md).

    virtual boards (the real firmware, MicroPython unix port, behind ptys)
      -> the shuffler (collect.shuffler.shuffle_ports in a thread of this process: it keeps
         only each report, holds them until a batch of all n, permutes them with a CSPRNG)
      -> one pty, as the device "shuffler" (collect.shuffler.PortSink)
      -> the collector (collect.collector.Collector) -> the SQLite store
      -> the analyzer (analysis.shuffle_report via `zeal analyze`'s document)

The boards read d = 3 Aarhus citylab columns at once (light, humidity, temperature: one replay
line of three fields per row, the multi-attribute demo's ranges, which are the data's extremes
widened by one unit; humidity the Zeal paper's [23.5, 83.9]); each board replays a contiguous
slice of the first `count` rows and sends one message per row (t = 1 coordinate at levels
0..3). The profile is built for n = count (so the one batch the shuffler releases is the whole
configured batch) at the given epsilon and delta; a count too small for any gamma < 1 is a
one-line error naming the smallest count that works. With `data` (zeal demo --shuffle --data
FILE) the boards replay the file's columns instead: d = the number of columns, each on its
--range (or the data's own, not private), the batch n = every row (or --count).

Identities. The demo started the boards, so it knows their identities: each board's device id
and the session nonce of every boot (read from the boards' own HELLO frames by a witness
Deframer on the shuffler's input, held in memory only). `identities_stored` counts those found
anywhere in the store: every text and blob cell of every table (as bytes, as text, as hex) and
the raw bytes of the database files. It must be 0. Boot counters are small integers, not told
apart from any other number; the nonce is the boot's identity. The same search on a store
written by the plain collector from one board (`identity_control`) finds that board's id and
nonce: the search can find what it looks for.

seed (tests only): the boards run in vector mode with keys derived from the seed (test-mode
frames, flagged VECTOR all the way through the shuffler and the store: never private data),
so every message, hence the estimate, is reproducible; the shuffler's order is still drawn
by the CSPRNG (the estimate does not depend on the order).

Document: `zeal analyze`'s shuffle report of the stored batch (analysis.shuffle_report) plus
normalized_mse (squared error of the mean vector in [0, 1]^3 against the true mean of the
mapped readings), mse_expected (its exact expectation for these readings, `expected_mse`),
mse_bound (a bound on the expected value at the k used, for any data) and mse_bound_paper, epsilon/delta (delivered)
and epsilon_configured/delta_configured, identities_stored, identity_search,
identity_control, coordinates (name, unit, range, estimate and true mean in reading units and
in [0, 1], pairs), and a demo section (dataset, boards, batch, seconds, shuffler summary).
"""
import hashlib
import json
import os
import tempfile
import threading
import time
from fractions import Fraction

from ..collect import shuffler as SH
from ..collect.store import Store, open_existing
from ..errors import ProfileError, ZealError
from ..mechanism.shuffle import mechanism as S
from ..mechanism.shuffle import profile as SP
from ..wire import codec, transport
from ..wire.deframer import Deframer
from ..analysis.analyze import analyze
from .attributes import RANGES, UNITS
from .common import board_slices, check_arguments, printer
from .data import aarhus_tuples, range_notes


COLUMNS = ("light", "humidity", "temperature")
LEVELS = 3          # the paper's best k
T = 1               # messages (coordinates) per reading: the paper's best t
DELTA = 1e-6
BOARD_BATCH = 64    # reports per DATA frame on each board
CONTROL_READINGS = 64
TIMEOUT = 120.0


# ---- the profile --------------------------------------------------------------------------------
def demo_profile(epsilon, delta, n, t=T, ranges=None):
    """The demo's shuffle profile (d = one coordinate per range, default the 3 columns'
    RANGES; levels 0..3, t messages a reading, batch of n readings)."""
    ranges = [RANGES[c] for c in COLUMNS] if ranges is None else list(ranges)
    try:
        return SP.build_from(epsilon=epsilon, delta=delta, n=n, d=len(ranges), k=LEVELS, t=t,
                             ranges=ranges)
    except ProfileError as exc:
        msg = str(exc)
        if msg.startswith("no blanket probability"):
            low = S.smallest_n(Fraction(SP.float_at_most(epsilon, "epsilon")),
                               Fraction(SP.float_at_most(delta, "delta")), len(ranges),
                               LEVELS, t)
            if low is not None:
                msg = ("no blanket probability below 1 exists for a batch of %d readings at "
                       "epsilon %g, delta %g, t = %d: give a batch of %d readings or more "
                       "(--count, or a --data file of that many rows)"
                       % (n, epsilon, delta, t, low))
        raise ZealError(msg) from None


# ---- identities ---------------------------------------------------------------------------------
def _forms(value: bytes) -> list:
    """The spellings of an identity a store could hold: the bytes, their hex (both cases),
    the device-name text (printable ids), and the bytes without HELLO's zero padding."""
    out = {bytes(value), value.hex().encode(), value.hex().upper().encode()}
    name = codec.device_name(value).encode()
    out.add(name)
    stripped = bytes(value).rstrip(b"\0")
    if len(stripped) >= 4:
        out.add(stripped)
    return sorted(out)


def identity_hits(path: str, identities: dict) -> list:
    """[(identity label, where)] for every identity of `identities` ({label: bytes}) found in
    the database at `path`: each text/blob cell of every table (tables listed from
    sqlite_master), then the raw bytes of the file and its -wal/-journal if present."""
    needles = {label: _forms(v) for label, v in identities.items()}
    hits = set()
    with open_existing(path) as store:     # read-only
        for table, col, data in store.cells():
            for label, forms in needles.items():
                if any(f in data for f in forms):
                    hits.add((label, "%s.%s" % (table, col)))
    for suffix in ("", "-wal", "-journal"):
        try:
            with open(path + suffix, "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        for label, forms in needles.items():
            if any(f in raw for f in forms):
                hits.add((label, "file%s" % (suffix or " bytes")))
    return sorted(hits)


class _Witness:
    """The demo's record of the boards' identities: each HELLO's device id and nonce, seen on
    the shuffler's input. Memory only; never handed to the shuffler or the store."""

    def __init__(self):
        self._framers = {}
        self.ids = {}
        self.lock = threading.Lock()

    def __call__(self, name, chunk):
        framer = self._framers.setdefault(name, Deframer())
        for frame in framer.feed(chunk):
            if isinstance(frame, codec.Hello):
                dev = bytes(frame.device_id)
                with self.lock:
                    self.ids["device %s" % codec.device_name(dev)] = dev
                    self.ids["nonce %s (device %s, boot %d)" % (
                        bytes(frame.nonce).hex(), codec.device_name(dev), frame.boot)] = \
                        bytes(frame.nonce)


# ---- the run ------------------------------------------------------------------------------------
class _PtyPort:
    """The shuffler's output port: the master side of a pty whose slave the collector reads."""

    def __init__(self, pty):
        self.pty = pty

    def write(self, data):
        self.pty.write(data)

    def flush(self):
        pass

    def close(self):
        pass


def _wait_open(collector, timeout=30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not all(p.serial is not None for p in collector.ports):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _run_pipeline(prof, slices, ids, keys, path, tmp, say, progress):
    """Boards -> shuffler thread -> pty -> collector -> store. Returns (analyze doc, shuffler
    summary, identities seen, seconds)."""
    from ..collect.collector import Collector
    from ..collect.progress import ProgressLine, summary_lines
    from ..collect.virtual import Pty, VirtualDevice

    vector = keys[0] is not None
    n = sum(len(s) for s in slices) * prof.t   # messages: t a reading
    boards, inputs = [], {}
    out_pty = None
    witness = _Witness()
    stop = threading.Event()
    result, failed = {}, []
    try:
        for i, part in enumerate(slices):
            boards.append(VirtualDevice(part, profile=prof, device_id=ids[i],
                                        vector_key=keys[i], batch=BOARD_BATCH,
                                        folder=os.path.join(tmp, "board%d" % i)))
        out_pty = Pty()
        for b in boards:  # opened before a board boots: pyserial flushes input on open
            inputs[b.port] = transport.open_port(b.port, exclusive=False)
        sink = SH.PortSink(port=_PtyPort(out_pty))
        say("%d virtual boards (MicroPython unix port behind ptys) -> shuffler (batch %d) -> "
            "%s -> collector" % (len(boards), n, out_pty.port))

        def shuffle():
            try:
                result["shuffler"] = SH.shuffle_ports(inputs, sink, n, messages=n,
                                                      keep_vector=vector, stop=stop,
                                                      tap=witness)
            except Exception as exc:  # reported by the main thread
                failed.append("the shuffler failed: %s" % exc)
            finally:
                if "shuffler" not in result and col_ref:
                    col_ref[0].stop()

        col_ref = []
        started = time.monotonic()
        with Store(path) as store:
            show = ProgressLine() if progress else None
            col = Collector([out_pty.port], store, profiles=[prof], keep_vector=vector,
                            on_progress=show, log=show.say if show is not None else say)
            col_ref.append(col)

            def start():
                if not _wait_open(col):
                    failed.append("the collector did not open the shuffler's port")
                    col.stop()
                    return
                worker.start()
                for b in boards:
                    b.start()

            worker = threading.Thread(target=shuffle, name="shuffler", daemon=True)
            starter = threading.Thread(target=start, daemon=True)
            starter.start()
            try:
                pr = col.run(reports=n, duration=TIMEOUT)
            finally:
                if show is not None:
                    show.end()
                stop.set()
            starter.join()
            if worker.ident is not None:  # started
                worker.join(10)
            if failed:
                raise ZealError(failed[0])
            for line in summary_lines(pr):
                say(line)
            if pr.reports != n:
                errs = "; ".join(b.stderr().strip()[-200:] for b in boards if b.stderr())
                raise ZealError("stored %d of %d messages (%s)%s" % (
                    pr.reports, n, pr.reason, (": " + errs) if errs else ""))
            doc = analyze(store, include_vector=vector)
        seconds = time.monotonic() - started
    finally:
        stop.set()
        for port in inputs.values():
            try:
                port.close()
            except Exception:
                pass
        for b in boards:
            b.close()
        if out_pty is not None:
            out_pty.close()
    with witness.lock:
        seen = dict(witness.ids)
    return doc, result.get("shuffler"), seen, seconds


def identity_control(prof, tmp, key=None) -> dict:
    """The negative control: one board straight into the plain collector (no shuffler); the
    same search finds its id and nonce in that store."""
    from ..collect.collector import Collector
    from ..collect.virtual import VirtualDevice

    dev_id = b"sctrl-00"
    rows = [tuple((lo + hi) / 2 for lo, hi in prof.ranges)] * CONTROL_READINGS
    path = os.path.join(tmp, "control.db")
    with VirtualDevice(rows, profile=prof, device_id=dev_id, vector_key=key,
                       folder=os.path.join(tmp, "control")) as board:
        with Store(path) as store:
            col = Collector([board.port], store, profiles=[prof], keep_vector=key is not None,
                            log=lambda line: None)

            def start():
                if _wait_open(col):
                    board.start()
                else:
                    col.stop()

            th = threading.Thread(target=start, daemon=True)
            th.start()
            want = CONTROL_READINGS * prof.t   # t reports a reading
            pr = col.run(reports=want, duration=30)
            th.join()
            if pr.reports != want:
                raise ZealError("identity control: stored %d of %d reports"
                                % (pr.reports, want))
            # the board's nonce, as the plain collector keeps it in each frame's key (which is
            # the point of the control)
            nonces = store.nonces()
    ids = {"device %s" % codec.device_name(dev_id): dev_id}
    ids.update(("nonce %s" % v.hex(), v) for v in nonces)
    hits = identity_hits(path, ids)
    return {"store": "the plain collector, one board, %d readings, no shuffler"
                     % CONTROL_READINGS,
            "identities_searched": len(ids),
            "identities_found": len({label for label, _ in hits}),
            "found_in": sorted({"%s in %s" % h for h in hits})}


def run_shuffle_demo(*, db=None, epsilon=1.0, delta=None, count=5000, devices=4,
                     progress=True, seed=None, t=None, data=None) -> dict:
    """Run the shuffle demo and return its document (module docstring); print the explained
    figures on stdout (progress on stderr) unless progress=False. data: the reading tuples to
    replay (a demo.data.TupleData; default the first `count` rows of the 3 Aarhus
    columns)."""
    delta = DELTA if delta is None else delta
    t = T if t is None else t
    if data is None:
        data = aarhus_tuples(COLUMNS, RANGES, UNITS, count)
    count, d = len(data.rows), len(data.names)
    check_arguments(count, devices, db)
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= d:
        raise ZealError("--t must be 1 to %d (the demo's %d columns), got %r" % (d, d, t))
    say = printer(progress)
    rows = data.rows
    prof = demo_profile(epsilon, delta, count, t, data.ranges)
    say("shuffle profile %s: %s, epsilon %g, delta %g, n = %d, levels 0..%d, t = %d, gamma %.4f, "
        "%d bits per message" % (prof.fingerprint[:16], ", ".join(data.names), prof.epsilon,
                                 prof.delta, prof.n, prof.levels, prof.t, float(prof.gamma),
                                 prof.bits))
    slices, ids, keys = board_slices(rows, devices, b"sdemo-%02d", seed, b"zeal-shuffle-demo")
    with tempfile.TemporaryDirectory(prefix="zeal-sdemo-") as tmp:
        path = db if db is not None else os.path.join(tmp, "demo.db")
        doc, summary, seen, seconds = _run_pipeline(prof, slices, ids, keys, path, tmp, say,
                                                    progress)
        for dev in ids:  # the ids the demo gave the boards, whether or not a HELLO was seen
            seen.setdefault("device %s" % codec.device_name(dev), dev)
        hits = identity_hits(path, seen)
        control = identity_control(prof, tmp, keys[0] and hashlib.sha256(keys[0]).digest())
    out = explain(doc, prof, data, summary, seen, hits, control, seconds, len(slices))
    out["database"] = db
    if progress:
        print(format_demo(out))
    return out


def _truth(prof, rows):
    """Per coordinate: the exact mean of the readings and of the mapped readings in [0, 1]."""
    n = len(rows)
    raw = [sum(Fraction(r[c]) for r in rows) / n for c in range(prof.d)]
    mapped = [sum(SP.map_reading(prof, c, r[c]) for r in rows) / n for c in range(prof.d)]
    return raw, mapped


def expected_mse(prof, rows) -> float:
    """The exact expected normalised MSE of the analyzer's estimate for these readings (given
    every coordinate is reported): per coordinate c, with N = n t messages and n_c ~
    Binomial(N, 1/d) the messages on it, E[1/n_c] * mean_i Var(pair | x_ic)
    (shuffle.Analyzer.pair_variance, exact) plus the coordinate-sampling term
    sigma_c^2 E[(N - n_c)/((N - 1) n_c)] with sigma_c^2 the readings' population variance in
    [0, 1]. What mse_bound bounds from above for any data."""
    from collections import Counter

    p = prof.params
    n = len(rows)
    big_n = n * p.t
    inv, _ = S._inverse_count_moments(big_n, 1 / p.d)
    ana = S.Analyzer(p)
    total = 0.0
    for c in range(prof.d):
        xs = Counter(SP.map_reading(prof, c, r[c]) for r in rows)
        noise = sum(ana.pair_variance(x) * m for x, m in xs.items()) / n
        mean = sum(x * m for x, m in xs.items()) / n
        spread = sum((x - mean) ** 2 * m for x, m in xs.items()) / n
        total += float(noise) * inv + float(spread) * (big_n * inv - 1) / (big_n - 1)
    return total


def explain(doc, prof, data, summary, seen, hits, control, seconds, boards) -> dict:
    """The demo's document from `zeal analyze`'s (module docstring)."""
    (r,) = [s for s in doc["shuffle"] if s["fingerprint"] == prof.fingerprint]
    rows = data.rows
    raw, mapped = _truth(prof, rows)
    coords = []
    for c, name in enumerate(data.names):
        coords.append({"name": name, "unit": data.units[c], "range": list(prof.ranges[c]),
                       "estimate": r["mean"][c], "true_mean": float(raw[c]),
                       "estimate01": r["mean01"][c], "true_mean01": float(mapped[c]),
                       "pairs": r["pairs_per_coordinate"][c]})
    mse = None
    if all(x["estimate01"] is not None for x in coords):
        mse = float(sum((Fraction(x["estimate01"]) - m) ** 2 for x, m in zip(coords, mapped)))
    found = sorted({label for label, _ in hits})
    return {
        "normalized_mse": mse, "mse_expected": expected_mse(prof, rows),
        "mse_bound": r["mse_bound"],
        "mse_bound_paper": r["mse_bound_paper"],
        "epsilon": r["epsilon"], "delta": r["delta"], "guarantee": r["guarantee"],
        "epsilon_configured": r["epsilon_configured"], "delta_configured": r["delta_configured"],
        "identities_stored": len(found),
        "identity_search": {"identities_searched": len(seen), "found": found,
                            "found_in": sorted({"%s in %s" % h for h in hits}),
                            "where": "every text and blob cell of every table (bytes, text, "
                                     "hex) and the raw database file bytes"},
        "identity_control": control,
        "coordinates": coords,
        "shuffle": r,
        "demo": {"dataset": data.label, "range_from_data": data.range_from_data,
                 "readings_outside_range": data.outside,
                 "boards": boards, "batch": prof.n, "batch_messages": prof.n * prof.t,
                 "messages_per_reading": prof.t, "seconds": seconds,
                 "gamma": float(prof.gamma), "bits_per_message": prof.bits,
                 "shuffler": summary},
    }


def _g(x, spec="%.6g"):
    return "n/a" if x is None else spec % x


def format_demo(doc) -> str:
    r, d = doc["shuffle"], doc["demo"]
    lines = ["shuffle mode: %d boards -> shuffler -> collector -> analysis; %s"
             % (d["boards"], d["dataset"]),
             "messages stored             %d (one batch: n = %d readings, t = %d message%s "
             "each, released by the shuffler in a CSPRNG order; %d bits per message, "
             "gamma = %.4f)"
             % (r["messages"], d["batch"], d["messages_per_reading"],
                "" if d["messages_per_reading"] == 1 else "s", d["bits_per_message"],
                d["gamma"])]
    width = max([4] + [len(c["unit"].strip("()")) for c in doc["coordinates"]])
    lines.append("%-12s %-*s %14s %14s %12s %12s %7s" % ("coordinate", width, "unit",
                                                         "estimate", "true mean", "est. [0,1]",
                                                         "true [0,1]", "pairs"))
    for c in doc["coordinates"]:  # the unit whole (it was cut: "0-100 sc")
        lines.append("%-12s %-*s %14s %14.4f %12s %12.6f %7d"
                     % (c["name"], width, c["unit"].strip("()"), _g(c["estimate"], "%.4f"),
                        c["true_mean"], _g(c["estimate01"], "%.6f"), c["true_mean01"],
                        c["pairs"]))
    lines.extend(range_notes(d))
    lines.append("normalised MSE              %s (squared error of the mean vector in [0, 1]^%d, "
                 "dimensionless)" % (_g(doc["normalized_mse"]), len(doc["coordinates"])))
    lines.append("expected MSE                %s (exact, for these readings: what one run "
                 "scatters around)" % _g(doc["mse_expected"]))
    lines.append("MSE bound at k = %d          %s (a bound on the EXPECTED MSE for any data in "
                 "the ranges: the paper's proof at the k used, plus coordinate sampling; one "
                 "run may exceed it); the paper's closed form %s"
                 % (r["levels"], _g(doc["mse_bound"]), _g(doc["mse_bound_paper"])))
    if doc["guarantee"] == "configured":
        lines.append("privacy (shuffled batch)    (epsilon, delta) = (%s, %s) per reading (all "
                     "%d coordinates; it holds for any t): the configured guarantee, for the "
                     "batch of %d messages as a whole (not per report)"
                     % (_g(doc["epsilon"]), _g(doc["delta"]), len(doc["coordinates"]),
                        r["messages"]))
    else:
        lines.append("privacy (shuffled batch)    %s: the configured (%s, %s) is NOT delivered"
                     % ("none" if doc["epsilon"] is None else "(%s, %s) only"
                        % (_g(doc["epsilon"]), _g(doc["delta"])),
                        _g(doc["epsilon_configured"]), _g(doc["delta_configured"])))
    s, c = doc["identity_search"], doc["identity_control"]
    lines.append("identities stored           %d of %d board identities (device ids and boot "
                 "nonces) found in the store: %s" % (doc["identities_stored"],
                                                    s["identities_searched"], s["where"]))
    lines.append("identity control            the same search finds %d of %d in a store written "
                 "by %s" % (c["identities_found"], c["identities_searched"], c["store"]))
    lines.append("run time                    %.1f s" % d["seconds"])
    return "\n".join(lines)


def cmd_demo_shuffle(args, data=None) -> int:
    """`zeal demo --shuffle`; data: the reading tuples of --data FILE (demo.data.TupleData)."""
    if getattr(args, "attributes", False):
        raise ZealError("--shuffle and --attributes are two demos: give one")
    for opt, default in (("mechanism", "grid"), ("bits", "auto"), ("plots", None)):
        if getattr(args, opt, default) != default:
            raise ZealError("--%s does not apply to the shuffle demo" % opt)
    doc = run_shuffle_demo(db=args.db, epsilon=args.epsilon, delta=args.delta,
                           count=args.count, devices=args.devices, progress=not args.json,
                           t=getattr(args, "t", None), data=data)
    if args.json:
        print(json.dumps(doc, indent=1))
    return 0
