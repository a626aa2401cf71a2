"""`zeal demo --attributes`: multi-attribute reports end to end.

The demo: boards read four Aarhus citylab columns at once (light, humidity, noise,
temperature; one reading tuple per row), each board a contiguous slice of the first `count`
rows; each report carries k of the 4 attributes (seed 001's Algorithm 4, k from Eq. 12); the
collector (or, with boards="reference", the host decoder fed the host reference's exact byte
stream) stores the frames; `zeal analyze` gives every attribute's mean with its 99% interval,
shown beside the true mean of the readings.

boards: "virtual" (the firmware on the MicroPython unix port, behind ptys, as `zeal demo`),
"reference" (the host reference boards: multi_profile.MultiSampler + the wire encoder, the
same bytes a board sends, decoded by wire.Decoder into the store; no firmware), "auto"
(virtual when the firmware has multi profiles and MicroPython is there, else reference).

Document: `zeal analyze`'s multi document (analysis.multi_report) with "true_mean" added to
each numeric attribute, and a "demo" section (dataset, boards, units, the wire-cost goal).
"""
import hashlib
import os
import re
import tempfile
import time
from fractions import Fraction

from .. import wire
from ..collect.store import FrameRecord, Store
from ..errors import ZealError
from ..mechanism.multi import profile as MP
from ..mechanism.multi.mechanism import Numeric
from ..mechanism.core.words import CounterWords, system_words
from ..wire.codec import device_name, encode_data_payload
from ..analysis.analyze import analyze
from ..analysis.multi_report import format_text
from .common import board_slices, check_arguments, printer
from .data import aarhus_tuples, range_notes

COLUMNS = ("light", "humidity", "noise", "temperature")
# ranges: the data's extremes +- 1 (tools/exp_multi.py's convention), humidity the Zeal
# paper's [23.5, 83.9]
RANGES = {"light": (-1.0, 99.92), "humidity": (23.5, 83.9), "noise": (49.0, 101.0),
          "temperature": (-41.0, 37.45)}
UNITS = {"light": "(0-100 scale)", "humidity": "%RH", "noise": "dB", "temperature": "degC"}
BATCH = 64
HELLO_EVERY = 16
WIRE_GOAL = 1.3   # wire bits per report <= 1.3 k (ceil(log2 d) + m) at batch 64 (issue 11)
TIMEOUT = 120.0


# ---- the demo ---------------------------------------------------------------------------------------
def attribute_names(columns) -> tuple:
    """A multi profile's attribute names for these columns: each column's name with every
    character outside A-Z a-z 0-9 - made "-", cut to 16 characters (multi.md); names that
    come out alike are a one-line error."""
    names = tuple((re.sub(r"[^A-Za-z0-9-]", "-", c) or "-")[:16] for c in columns)
    if len(set(names)) != len(names):
        raise ZealError("columns %s give the same attribute name (A-Z a-z 0-9 -, at most 16 "
                        "characters): rename them in the file" % ", ".join(map(repr, columns)))
    return names


def demo_profile(epsilon=1.0, k=None, columns=COLUMNS, ranges=None):
    """The multi profile of numeric `columns` on `ranges` ({name: (lo, hi)}; default the
    Aarhus columns' RANGES)."""
    ranges = RANGES if ranges is None else ranges
    return MP.build([Numeric(c, *ranges[c]) for c in columns], epsilon, k=k)


def _firmware_has_multi() -> bool:
    try:
        from ..board.firmware import find_firmware, locate_micropython
        if locate_micropython() is None:
            return False
        root = find_firmware()
    except Exception:   # no firmware folder at all: reference boards
        return False
    root = root[0] if isinstance(root, tuple) else root
    for base in (root, os.path.join(str(root), "zealfw")):
        if os.path.exists(os.path.join(str(base), "mprofile.py")) or \
                os.path.exists(os.path.join(str(base), "mprofile.mpy")):
            return True
    return False


def reference_stream(prof, rows, *, device_id, words, boot=1, nonce=None,
                     batch=BATCH, hello_every=HELLO_EVERY) -> bytes:
    """The bytes a board sends for `rows` under a multi profile (host reference): a HELLO
    (bits 0), DATA frames of `batch` reports (a HELLO after every `hello_every` frames), the
    last frame short; one report per row (MultiSampler, the word contract of multi.md)."""
    nonce = bytes(8) if nonce is None else nonce
    fp8 = bytes.fromhex(prof.fingerprint)[:8]
    session = wire.session_bytes(device_id, fp8, boot, nonce)
    sampler = MP.MultiSampler(prof, words)
    batch = min(batch, prof.max_batch())
    out = [wire.encode_hello(device_id=device_id, fingerprint=fp8, boot=boot, bits=0,
                             batch=batch, nonce=nonce)]
    seq = 0
    for i in range(0, len(rows), batch):
        reps = [sampler.sample(r) for r in rows[i:i + batch]]
        out.append(encode_data_payload(seq=seq, count=len(reps),
                                       payload=MP.pack_multi(prof, reps), session=session))
        seq += 1
        if seq % hello_every == 0:
            out.append(wire.encode_hello(device_id=device_id, fingerprint=fp8, boot=boot,
                                         bits=0, batch=batch, nonce=nonce, next_seq=seq))
    return b"".join(out)


def _run_reference(prof, slices, ids, keys, path, say):
    store = Store(path)
    link_bytes = 0
    try:
        store.add_profile(prof)
        for dev, part, key in zip(ids, slices, keys):
            words = CounterWords(key) if key is not None else system_words()
            nonce = hashlib.sha256(b"nonce" + dev + (key or os.urandom(8))).digest()[:8]
            stream = reference_stream(prof, part, device_id=dev, words=words, nonce=nonce)
            link_bytes += len(stream)
            dec = wire.Decoder([prof], vectors=True)
            frames = [FrameRecord.from_batch(ev) for ev in dec.feed(stream)
                      if isinstance(ev, wire.Batch)]
            if sum(f.count for f in frames) != len(part) or dec.rejected:
                raise ZealError("reference board %s: %d of %d reports decoded (%s)"
                                % (device_name(dev), sum(f.count for f in frames), len(part),
                                   dict(dec.rejected)))
            store.write(frames=frames)
            say("reference board %s: %d reports in %d frames, %d bytes"
                % (device_name(dev), len(part), len(frames), len(stream)))
        doc = analyze(store, include_vector=True)
    finally:
        store.close()
    return doc, link_bytes


def _run_virtual(prof, slices, ids, keys, path, tmp, say, progress):
    from ..collect.virtual import VirtualDevice, collect_boards
    boards = []
    vector = keys[0] is not None
    try:
        for i, part in enumerate(slices):
            boards.append(VirtualDevice(part, profile=prof, device_id=ids[i],
                                        vector_key=keys[i], batch=min(BATCH, prof.max_batch()),
                                        folder=os.path.join(tmp, "board%d" % i)))
        with Store(path) as store:
            collect_boards(boards, store, [prof], expected=sum(len(x) for x in slices),
                           keep_vector=vector, progress=progress, say=say, timeout=TIMEOUT)
            doc = analyze(store, include_vector=vector)
            link = store.link_bytes()
    finally:
        for b in boards:
            b.close()
    return doc, int(link)


def run_multi_demo(*, db=None, epsilon=1.0, k=None, count=2000, devices=4, progress=True,
                   seed=None, boards="auto", data=None) -> dict:
    """Run the multi-attribute demo and return its document (module docstring); print the
    explained table on stdout (progress on stderr) unless progress=False. data: the reading
    tuples to replay (a demo.data.TupleData; default the first `count` rows of the Aarhus
    columns). seed: tests only (vector mode keys: reproducible, never private data)."""
    if data is None:
        data = aarhus_tuples(COLUMNS, RANGES, UNITS, count)
    check_arguments(len(data.rows), devices, db)
    if boards not in ("auto", "virtual", "reference"):
        raise ZealError("boards must be auto, virtual or reference")
    say = printer(progress)
    rows = data.rows
    names = attribute_names(data.names)
    if names != tuple(data.names):
        say("attribute names: %s (a multi profile's names are A-Z a-z 0-9 -, at most 16 "
            "characters)" % ", ".join("%s for %s" % (a, c) for a, c in zip(names, data.names)
                                      if a != c))
        data.names = names
    prof = demo_profile(epsilon, k, data.names, dict(zip(data.names, data.ranges)))
    if boards == "auto":
        boards = "virtual" if _firmware_has_multi() else "reference"
    say("multi profile %s: %s, epsilon %g, k = %d of d = %d per report, %d bits per report "
        "(%d index + %s)" % (prof.fingerprint[:16], ", ".join(prof.names), prof.epsilon,
                             prof.k, prof.d, prof.max_report_bits(), prof.index_bits,
                             "/".join(str(prof.value_bits(j)) for j in range(prof.d))))
    slices, ids, keys = board_slices(rows, devices, b"mdemo-%02d", seed, b"zeal-multi-demo")
    with tempfile.TemporaryDirectory(prefix="zeal-mdemo-") as tmp:
        path = db if db is not None else os.path.join(tmp, "demo.db")
        started = time.monotonic()
        if boards == "virtual":
            doc, link = _run_virtual(prof, slices, ids, keys, path, tmp, say, progress)
        else:
            doc, link = _run_reference(prof, slices, ids, keys, path, say)
        elapsed = time.monotonic() - started
    explain(doc, prof, data, boards, link, elapsed)
    doc["database"] = db
    if progress:
        print(format_demo(doc))
    return doc


def explain(doc, prof, data, boards, link_bytes, elapsed) -> dict:
    """Add the true means and the demo section to the multi document (in place)."""
    rows = data.rows
    units = dict(zip(data.names, data.units))
    for j, a in enumerate(doc["attributes"]):
        if a["kind"] == "numeric":
            total = sum(Fraction(r[j]) for r in rows)
            a["true_mean"] = float(total / len(rows))
            a["unit"] = units.get(a["name"]) or None
    p = doc["profiles"][0]
    bound = prof.k * (prof.index_bits + max(a.bits for a in prof.attributes))
    n = doc["overall"]["n"]
    doc["demo"] = {
        "dataset": data.label,
        "boards": boards, "units": units,
        "ranges": {c: list(r) for c, r in zip(data.names, data.ranges)}, "seconds": elapsed,
        "range_from_data": data.range_from_data, "readings_outside_range": data.outside,
        "wire": {"bits_per_report_data_frames": p["wire_bits_per_report"],
                 "bits_per_report_link": 8 * link_bytes / n if link_bytes else None,
                 "report_bits_bound": bound,
                 "goal_bits_per_report": WIRE_GOAL * bound,
                 "within_goal": p["wire_bits_per_report"] <= WIRE_GOAL * bound,
                 "batch": min(BATCH, prof.max_batch())},
    }
    return doc


def format_demo(doc) -> str:
    w = doc["demo"]["wire"]
    lines = [format_text(doc, {a["name"]: a.get("unit") or "" for a in doc["attributes"]}), ""]
    lines.append("boards: %s; %s" % (doc["demo"]["boards"], doc["demo"]["dataset"]))
    lines.extend(range_notes(doc["demo"]))
    lines.append("wire: %.2f bits per report in DATA frames (goal <= 1.3 x %d = %.2f bits: %s)%s"
                 % (w["bits_per_report_data_frames"], w["report_bits_bound"],
                    w["goal_bits_per_report"], "met" if w["within_goal"] else "NOT met",
                    "" if w["bits_per_report_link"] is None else
                    "; %.2f bits per report with HELLO/STATUS frames on the line"
                    % w["bits_per_report_link"]))
    lines.append("privacy: epsilon = %g protects one reading TUPLE (all %d attributes of a row "
                 "together): each report carries k = %d attribute(s) at epsilon/k each"
                 % (doc["profiles"][0]["epsilon"], doc["profiles"][0]["d"],
                    doc["profiles"][0]["k"]))
    return "\n".join(lines)
