"""`zeal demo --attributes` and `zeal profile --attributes`: multi-attribute reports end to end.

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

What every demo shares (`zeal demo`, `--attributes`, `--shuffle`, `--mqtt`) is here too, the
lowest of the demo modules: the one-line errors of their common arguments (`check_arguments`),
progress on stderr (`printer`), the Aarhus rows (`aarhus_rows`) and how the demo names them
(`dataset_text`), and the rows split among the boards with their ids and seeded keys
(`board_slices`).
"""
import decimal
import hashlib
import os
import sys
import tempfile
import time
from fractions import Fraction

from .. import wire
from ..collect.store import FrameRecord, Store
from ..errors import ProfileError, ZealError
from ..mechanism.multi import profile as MP
from ..mechanism.multi.mechanism import Categorical, Numeric, float_or_none
from ..mechanism.core.words import CounterWords, system_words
from ..wire.codec import device_name, encode_data_payload
from . import datasets
from .analyze import analyze
from .multi_report import format_text

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


# ---- what the demos share -------------------------------------------------------------------------
def check_arguments(count, devices, db):
    """The one-line errors for the arguments every serial demo takes."""
    if count < devices:
        raise ZealError("--count must be at least the number of devices (%d)" % devices)
    if not 1 <= devices <= 16:
        raise ZealError("--devices must be 1 to 16")
    if db is not None and os.path.exists(db):
        raise ZealError("%s exists: the demo writes a new database (choose another --db)" % db)


def printer(progress):
    """say(*parts): a progress line on stderr, or nothing when progress is off."""
    return (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)


def aarhus_rows(columns, count):
    """The first `count` rows of the Aarhus citylab `columns`, each a tuple of floats (what a
    sensor driver hands the firmware); too many rows asked for is a one-line error."""
    try:
        cols = [datasets.aarhus(c, count) for c in columns]
    except ValueError as exc:
        raise ZealError(str(exc)) from None
    return [tuple(float(col[i]) for col in cols) for i in range(count)]


def dataset_text(columns, rows):
    """The demo document's "dataset" for `rows` rows of several Aarhus columns."""
    return "Aarhus citylab, columns %s, first %d rows" % (", ".join(columns), rows)


def board_slices(rows, devices, id_pattern, seed, seed_label):
    """(slices, ids, keys): `rows` cut into contiguous slices, one per board (at most
    `devices`); each board's id (`id_pattern` % i, zero-padded to the 8 bytes of a HELLO);
    and for a seeded run (tests only) its vector-mode key SHA-256(seed_label " seed i), else
    None (fresh keys on the board, as in the field)."""
    share = -(-len(rows) // devices)
    slices = [rows[i:i + share] for i in range(0, len(rows), share)]
    ids = [(id_pattern % i).ljust(8, b"\0") for i in range(len(slices))]
    keys = ([hashlib.sha256(seed_label + b" %d %d" % (seed, i)).digest()
             for i in range(len(slices))] if seed is not None else [None] * len(slices))
    return slices, ids, keys


# ---- zeal profile --attributes --------------------------------------------------------------------
def parse_attribute(text: str):
    """NAME:LO:HI[:MECH[:BITS]] -> multi.Numeric (MECH grid or a table kind, BITS an int or
    auto)."""
    parts = text.split(":")
    if not 3 <= len(parts) <= 5:
        raise ProfileError("--attribute %r: give NAME:LO:HI[:MECH[:BITS]]" % text)
    name = parts[0]
    try:
        lo, hi = float(parts[1]), float(parts[2])
    except ValueError:
        raise ProfileError("--attribute %r: LO and HI must be numbers" % text) from None
    mech = parts[3] if len(parts) > 3 and parts[3] else "grid"
    bits = "auto"
    if len(parts) > 4 and parts[4] not in ("", "auto"):
        try:
            bits = int(parts[4])
        except ValueError:
            raise ProfileError("--attribute %r: BITS must be an integer or auto" % text) from None
    return Numeric(name, lo, hi, bits=bits, mechanism=mech)


def parse_categorical(text: str):
    """NAME:C -> multi.Categorical with c values (2..63)."""
    name, sep, c = text.partition(":")
    if not sep or not c.isdigit():
        raise ProfileError("--categorical %r: give NAME:C (C values, 2 to 63)" % text)
    return Categorical(name, int(c))


def sci(value, digits: int = 6) -> str:
    """A rational in "%.<digits>g" style: its float64's where float64 holds it, else from the
    exact value (a variance of 1e600 prints as 1e+600, not inf)."""
    value = Fraction(value)
    f = float_or_none(value)
    if f is not None and (value == 0 or abs(f) >= sys.float_info.min):   # not subnormal
        return "%.*g" % (digits, f)
    with decimal.localcontext() as ctx:
        ctx.prec = digits
        q = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
    return format(q.normalize(), ".%dg" % digits)   # normalize: no trailing zeros, as %g


def profile_figures(prof) -> dict:
    """What `zeal profile --attributes` prints: the header, each attribute, the report size.
    worst_variance: the worst-case variance of one report's estimate of the attribute
    (multi.worst_variance_bounds' upper end: the exact maximum, or for a grid of more than
    EXACT_STEPS window positions an exact upper bound of it) as a float64, null where float64
    cannot hold it (a numeric attribute's is about (hi - lo)^2: past 1.8e308 for ranges wider
    than about 1e154); worst_variance_rational: the same figure exactly, as "p/q"."""
    m = prof.multi()
    atts = []
    for j, (name, a) in enumerate(zip(prof.names, prof.attributes)):
        var = m.worst_variance_bounds(j)[1]
        doc = {"name": name, "kind": "categorical" if a.kind == "oue" else a.kind,
               "value_bits": prof.value_bits(j), "worst_variance": float_or_none(var),
               "worst_variance_rational": "%d/%d" % (var.numerator, var.denominator)}
        if a.kind == "oue":
            doc.update(values=a.c, ratio=a.ratio_num / (1 << 32))
        else:
            doc.update(lo=a.lo, hi=a.hi, epsilon=a.epsilon, fingerprint=a.fingerprint)
        atts.append(doc)
    return {"fingerprint": prof.fingerprint, "epsilon": prof.epsilon, "d": prof.d, "k": prof.k,
            "index_bits": prof.index_bits, "max_report_bits": prof.max_report_bits(),
            "max_batch": prof.max_batch(), "privacy_ratio": float(m.privacy_ratio()),
            "attributes": atts}


def cmd_profile_attributes(args) -> int:
    """`zeal profile --attributes`: build a multi profile from --attribute/--categorical."""
    import json

    specs = [parse_attribute(t) if kind == "a" else parse_categorical(t)
             for kind, t in getattr(args, "multi_specs", None) or ()]
    if not specs:
        raise ZealError("--attributes needs at least one --attribute NAME:LO:HI[:MECH[:BITS]] "
                        "or --categorical NAME:C")
    prof = MP.build(specs, args.epsilon, k=args.k)
    doc = profile_figures(prof)
    if args.output:
        if args.output == "-":
            raise ZealError("a multi profile is several files: give -o FILE.json")
        doc["files"] = prof.write(args.output)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for key in ("fingerprint", "epsilon", "d", "k", "index_bits", "max_report_bits",
                    "max_batch", "privacy_ratio"):
            print("%-16s %s%s" % (key, doc[key], " bits" if key.endswith("bits") else ""))
        for a in doc["attributes"]:
            print("attribute %-16s %-11s %2d bits  worst variance %s%s"
                  % (a["name"], a["kind"], a["value_bits"],
                     sci(Fraction(a["worst_variance_rational"])),
                     " (frequency^2)" if a["kind"] == "categorical" else " (unit^2)"))
        for path in doc.get("files", []):
            print("written to %s" % path)
    return 0


# ---- the demo ---------------------------------------------------------------------------------------
def demo_profile(epsilon=1.0, k=None, columns=COLUMNS):
    return MP.build([Numeric(c, *RANGES[c]) for c in columns], epsilon, k=k)


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
            link = store.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM links").fetchone()[0]
    finally:
        for b in boards:
            b.close()
    return doc, int(link)


def run_multi_demo(*, db=None, epsilon=1.0, k=None, count=2000, devices=4, progress=True,
                   seed=None, boards="auto") -> dict:
    """Run the multi-attribute demo and return its document (module docstring); print the
    explained table on stdout (progress on stderr) unless progress=False. seed: tests only
    (vector mode keys: reproducible, never private data)."""
    check_arguments(count, devices, db)
    if boards not in ("auto", "virtual", "reference"):
        raise ZealError("boards must be auto, virtual or reference")
    say = printer(progress)
    rows = aarhus_rows(COLUMNS, count)
    prof = demo_profile(epsilon, k)
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
    explain(doc, prof, rows, boards, link, elapsed)
    doc["database"] = db
    if progress:
        print(format_demo(doc))
    return doc


def explain(doc, prof, rows, boards, link_bytes, elapsed) -> dict:
    """Add the true means and the demo section to the multi document (in place)."""
    for j, a in enumerate(doc["attributes"]):
        if a["kind"] == "numeric":
            total = sum(Fraction(r[j]) for r in rows)
            a["true_mean"] = float(total / len(rows))
            a["unit"] = UNITS.get(a["name"])
    p = doc["profiles"][0]
    bound = prof.k * (prof.index_bits + max(a.bits for a in prof.attributes))
    n = doc["overall"]["n"]
    doc["demo"] = {
        "dataset": dataset_text(COLUMNS, len(rows)),
        "boards": boards, "units": UNITS, "ranges": RANGES, "seconds": elapsed,
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
