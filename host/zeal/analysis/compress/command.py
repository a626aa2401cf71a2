"""`zeal compress`: a collection (or a file of `zeal perturb` output) as a compact archive, and
the size table of every available codec on its reports.

The table, per codec, over the same streams the archive holds (the reports of each device
under each profile, in arrival order):
- bits per report = 8 x the codec's output bytes / n (every stream's blob, its own header
  included; the archive's manifest, profiles and frame table are counted apart);
- CR = bits per report / 64 (against the raw float64 doubles);
- ratio to the entropy bound = bits per report / H, H in bits per report;
- MB/s = float64 input (8 bytes a report) compressed per second, the best of repeated runs
  (at least 50 ms of runs per codec), on this machine; decode_mb_per_s likewise.

The entropy bound H (`entropy_basis` says which):
- `--readings FILE` (the true readings behind the reports, one decimal a line; the demo and a
  replay know them): the exact entropy of the report distribution averaged over those inputs,
  H(mixture of P(j | x_i)), from the mechanism's exact output probabilities
  (compress.entropy). A collection must then be under one profile with n = the readings.
- otherwise (a database holds no readings): the plug-in entropy of the observed report
  frequencies, -sum (c/n) log2 (c/n) per profile, n-weighted over profiles. It is an
  estimate, biased low (at most log2 n, far below the bound when n is not much larger than
  the cells the reports reach), so ratios to it are optimistic.

Which codec the archive uses: each stream in the smallest of the candidates (`--codec`,
default every available codec), ties to the first named -- the best available by size; a
reader needs that codec's library (`zeal analyze --archive` says which package if missing).
"""
import json
import math

import numpy as np

from ...errors import ReportError, ZealError
from ...text import progress_bar
from . import archive as A
from . import entropy
from . import kind_codecs
from . import streams as SH

ENTROPY_EXACT = "exact: the mechanism's report distribution averaged over the given readings"
ENTROPY_PLUGIN = ("plug-in: observed report frequencies (the readings are unknown; biased low "
                  "when n is not much larger than the cells reached)")


# ---- inputs -------------------------------------------------------------------------------------
def _text_lines(path: str, what: str):
    """(line number, stripped text) of a UTF-8 file's non-blank lines; one-line errors."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ZealError("cannot read %s %s: %s" % (what, path, exc.strerror or exc)) from None
    for lineno, line in enumerate(raw.split(b"\n"), 1):
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise ZealError("%s %s, line %d: not UTF-8 text" % (what, path, lineno)) from None
        if text:
            yield lineno, text


def read_readings(path: str) -> list:
    out = []
    for lineno, text in _text_lines(path, "readings"):
        try:
            x = float(text)
        except ValueError:
            x = float("nan")
        if not math.isfinite(x):
            raise ZealError("readings %s, line %d: not a finite decimal: %r"
                            % (path, lineno, text[:40]))
        out.append(x)
    if not out:
        raise ZealError("readings %s: no readings" % path)
    return out


def read_reports(path: str, profile) -> np.ndarray:
    """Offsets j of a `zeal perturb` output file (any --format), by reports.parse_line."""
    from ...mechanism.grid.reports import parse_line

    out = []
    cache = {}
    for lineno, text in _text_lines(path, "reports"):
        k = cache.get(text)
        if k is None:
            try:
                k = parse_line(profile, text)
            except ReportError as exc:
                raise ReportError("reports %s, line %d: %s" % (path, lineno, exc)) from None
            cache[text] = k
        out.append(k - profile.k_lo)
    if not out:
        raise ZealError("reports %s: no reports" % path)
    return np.array(out, dtype=np.int64)


def _database(path: str) -> dict:
    """Everything the archive carries from a database, read once."""
    from ...collect.store import open_store
    from ..decode import Loaded

    with open_store(path, read_only=True) as store:
        data = Loaded(store, include_vector=True)
        nvec = len(store.frames(vector=True))
    if not data.rows:
        raise ZealError("no reports stored in %s" % path)
    flags = [0] * (len(data.rows) - nvec) + [1] * nvec
    devices, cols, streams = A.database_streams(data, flags)
    losses = {}
    for (dev, kind, _detail), count in data.events.items():
        if kind in A.LOSS_KINDS:
            key = (None if dev is None else bytes(dev).hex(), kind)
            losses[key] = losses.get(key, 0) + int(count)
    return {"profiles": {fp: data.profiles[fp] for fp in data.by_fp}, "devices": devices,
            "columns": cols, "streams": streams,
            "losses": [[d, k, c] for (d, k), c in sorted(losses.items(),
                                                         key=lambda kv: (kv[0][0] or "",
                                                                         kv[0][1]))],
            "statuses": [[e["device"], e["detail"]] for e in data.statuses],
            "link_bytes": int(data.link_bytes)}


# ---- entropy ------------------------------------------------------------------------------------
def entropy_bound(streams, profiles, readings=None) -> tuple:
    """(bits per report, basis) over all streams (module docstring)."""
    n = sum(s.n for s in streams)
    if readings is not None:
        from .entropy import entropy_bits_per_report

        if len(profiles) != 1:
            raise ZealError("--readings needs reports under one profile; these are under %d"
                            % len(profiles))
        if len(readings) != n:
            raise ZealError("--readings gives %d readings for %d reports" % (len(readings), n))
        from ...mechanism import kinds

        prof = next(iter(profiles.values()))
        if not kinds.of(prof).double_reports:
            raise ZealError("--readings: the exact entropy bound is computed for window-grid "
                            "profiles; without --readings the table is measured against the "
                            "reports' plug-in entropy")
        return float(entropy_bits_per_report(prof, readings)), ENTROPY_EXACT
    total = 0.0
    for fp, prof in profiles.items():
        per = SH.shape_of(prof).per_report(prof)
        bits = [s.bits for s in streams if s.fp == fp]
        joined = np.concatenate(bits)
        if per > 1:   # a report is its `per` symbols together: one value a distinct report
            _, joined = np.unique(joined.reshape(-1, per), axis=0, return_inverse=True)
        total += joined.size * entropy.plugin_entropy_of_bits(joined.reshape(-1))
    return total / n, ENTROPY_PLUGIN


# ---- the table ----------------------------------------------------------------------------------
#: the size table's groups: one per stream shape (compress.streams), in this order
GROUPS = {
    "patterns": {"label": "window-grid and table reports", "unit": "report",
                 "cr_basis": "64-bit doubles"},
    "pairs": {"label": "multi-attribute reports (k (attribute, value) pairs each)",
              "unit": "report", "cr_basis": "the payload bits the devices sent"},
    "messages": {"label": "shuffle messages", "unit": "message",
                 "cr_basis": "the payload bits the shuffler stored"},
}


def payload_bits(profile, stream) -> int:
    """The bits the devices sent for a stream's reports (without frame padding)."""
    shape = SH.shape_of(profile)
    if shape is SH.Pairs:
        j = stream.bits.reshape(-1, 2)[:, 0].astype(np.int64)
        widths = np.array([a.bits for a in profile.attributes], dtype=np.int64)
        return int(j.size * profile.index_bits + widths[j].sum())
    return stream.n * profile.bits


def size_table(n: int, sizes: dict, entropy: float, basis: str, *, unit: str = "report",
               cr_bits: float = 64.0) -> dict:
    rows = []
    for name, s in sizes.items():
        if not s.get("applies", True):
            rows.append({"codec": name, "bits_per_report": None, "cr": None,
                         "ratio_to_entropy": None, "mb_per_s": None, "decode_mb_per_s": None,
                         "bytes": None, "applies": False})
            continue
        bpr = 8 * s["bytes"] / n
        rows.append({"codec": name, "bits_per_report": bpr, "cr": bpr / cr_bits,
                     "ratio_to_entropy": bpr / entropy if entropy > 0 else None,
                     "mb_per_s": 8 * n / 1e6 / s["encode_s"] if s["encode_s"] > 0 else None,
                     "decode_mb_per_s": (8 * n / 1e6 / s["decode_s"] if s["decode_s"] > 0
                                         else None),
                     "bytes": s["bytes"]})
    return {"n": n, "unit": unit, "entropy_bits_per_report": entropy, "entropy_basis": basis,
            "codecs": rows}


def group_tables(streams, profiles, available, readings=None, tick=None) -> tuple:
    """([size table per stream shape present], {codec: {"blobs": [per stream]}}): each
    shape's streams measured apart (compress.archive.measure; tick(codec) as each is done),
    the blobs in stream order."""
    tables, blobs = [], {name: [None] * len(streams) for name in available}
    for shape, info in GROUPS.items():
        idx = [i for i, s in enumerate(streams)
               if SH.shape_of(profiles[s.fp]).name == shape]
        if not idx:
            continue
        mine = [streams[i] for i in idx]
        fps = {s.fp for s in mine}
        profs = {fp: profiles[fp] for fp in fps}
        n = sum(s.n for s in mine)
        entropy, basis = entropy_bound(mine, profs, readings if shape == "patterns" else None)
        sizes = A.measure(mine, profs, available, tick)
        if shape == "patterns":
            cr = 64.0
        else:
            cr = sum(payload_bits(profs[s.fp], s) for s in mine) / n
        doc = size_table(n, sizes, entropy, basis, unit=info["unit"], cr_bits=cr)
        doc.update(shape=shape, label=info["label"], cr_basis=info["cr_basis"],
                   cr_bits=cr)
        law = [kind_codecs.exact_law(p) for p in profs.values()]
        if any(law):
            doc["exact_law"] = [{"fingerprint": fp, "part": w[0], "outcomes": w[1],
                                 "bits": math.log2(w[1])}
                                for fp, w in zip(profs, law) if w]
        tables.append(doc)
        for name, s in sizes.items():
            for i, b in zip(idx, s["blobs"]):
                blobs[name][i] = b
    return tables, {name: {"blobs": b} for name, b in blobs.items()}


def _f(value, spec):
    return "-" if value is None else spec % value


def _format_group(doc: dict) -> list:
    unit = doc.get("unit", "report")
    basis = doc.get("cr_basis", "64-bit doubles")
    cr_head = "CR (/64)" if basis == "64-bit doubles" else "CR (/%.2f)" % doc["cr_bits"]
    lines = ["%s%d %ss; entropy bound %.4f bits per %s (%s)"
             % ("%s: " % doc["label"] if "label" in doc else "", doc["n"], unit,
                doc["entropy_bits_per_report"], unit, doc["entropy_basis"])]
    for law in doc.get("exact_law", []):
        lines.append("exact law of the %s (profile %s): uniform over %d, %.4f bits per %s"
                     % (law["part"], law["fingerprint"][:16], law["outcomes"], law["bits"],
                        unit))
    head = "%-10s %12s %10s %12s %14s %14s" % ("codec", "bits/" + unit, cr_head,
                                              "x entropy", "compress MB/s", "decompress MB/s")
    lines += [head, "-" * len(head)]
    for r in doc["codecs"]:
        if r.get("applies", True) is False:
            lines.append("%-10s %12s %10s %12s %14s %14s" % (r["codec"], "n/a", "-", "-", "-",
                                                           "-"))
            continue
        lines.append("%-10s %12.4f %10.5f %12s %14s %14s"
                     % (r["codec"], r["bits_per_report"], r["cr"],
                        _f(r["ratio_to_entropy"], "%.4f"), _f(r["mb_per_s"], "%.1f"),
                        _f(r["decode_mb_per_s"], "%.1f")))
    lines.append("bits/%s: the codec's output over all streams (its headers included); "
                 "CR: against %s%s; MB/s: the stream as 8-byte words (a float64 a report; a "
                 "symbol for pairs and messages)"
                 % (unit, basis, "" if basis == "64-bit doubles"
                    else " (%.2f bits per %s)" % (doc["cr_bits"], unit)))
    return lines


def format_size_table(doc: dict) -> str:
    lines = []
    for i, group in enumerate(doc.get("groups") or [doc]):
        if i:
            lines.append("")
        lines += _format_group(group)
    a = doc.get("archive")
    if a:
        used = {}
        for c in a["stream_codecs"]:
            used[c] = used.get(c, 0) + 1
        units = {g.get("unit", "report") for g in doc.get("groups") or [doc]}
        unit = units.pop() if len(units) == 1 else "report or message"
        lines.append("archive written to %s: %d bytes, %.4f bits per %s with its "
                     "manifest, profiles and frame table; streams: %s"
                     % (a["path"], a["bytes"], a["bits_per_report"], unit,
                        ", ".join("%s x%d" % kv for kv in used.items())))
    return "\n".join(lines)


# ---- command ------------------------------------------------------------------------------------
def _one_reading_profile(prof) -> None:
    """--reports reads `zeal perturb` lines of one reading (window grid, table): a multi or
    shuffle profile's reports file is one ZealError line (their stores compress with --db)."""
    from ...mechanism import kinds

    if SH.shape_of(prof) is not SH.Patterns:
        raise ZealError("zeal compress --reports keeps window-grid and table reports files; "
                        "profile %s is a %s profile (compress its store with --db)"
                        % (prof.fingerprint[:16], kinds.of(prof).name))


def cmd_compress(args) -> int:
    from . import codecs, get, missing

    if (args.db is None) == (args.reports is None):
        raise ZealError("give --db FILE or --reports FILE (with --profile)")
    available = codecs()
    candidates = []
    for name in args.codec or []:
        codec = get(name)          # unknown or missing library: one line naming the package
        available.setdefault(name, codec)
        if name not in candidates:
            candidates.append(name)
    if not available:
        raise ZealError("no codec is available (see zeal.analysis.compress)")
    if not candidates:
        candidates = list(available)
    readings = read_readings(args.readings) if args.readings else None
    if args.db is not None:
        if args.profile is not None:
            raise ZealError("--profile goes with --reports (a database holds its profiles)")
        from ...collect.store import is_url

        if is_url(args.db) and not args.out:
            raise ZealError("--db is a PostgreSQL URL: name the archive with --out FILE")
        src = _database(args.db)
        source, origin = "database", args.db
    else:
        if args.profile is None:
            raise ZealError("--reports needs --profile FILE (the profile they were made under)")
        from ...mechanism import kinds

        prof = kinds.load(args.profile)
        _one_reading_profile(prof)
        j = read_reports(args.reports, prof)
        src = {"profiles": {prof.fingerprint: prof}, "devices": [], "columns": None,
               "streams": [A.Stream(None, prof.fingerprint, False, A.report_bits(prof, j))],
               "losses": None, "statuses": None, "link_bytes": None}
        source, origin = "reports", args.reports
    streams, profiles = src["streams"], src["profiles"]
    n = sum(s.n for s in streams)
    if readings is not None and len(profiles) == 1 and \
            SH.shape_of(next(iter(profiles.values()))) is not SH.Patterns:
        raise ZealError("--readings: the exact entropy bound is computed for window-grid "
                        "profiles; without --readings the table is measured against the "
                        "reports' plug-in entropy")
    shapes = {SH.shape_of(profiles[s.fp]).name for s in streams}
    with progress_bar(len(available) * len(shapes), "codec", "measuring codecs",
                      quiet=args.json) as bar:
        def tick(name):
            bar.set_postfix_str(name)
            bar.update(1)

        tables, sizes = group_tables(streams, profiles, available, readings, tick)
    doc = dict(tables[0])          # the first group's figures at the top (as before groups)
    doc["groups"] = tables
    out = args.out or A.default_path(origin)
    manifest = A.write(out, source=source, profiles=profiles, devices=src["devices"],
                       columns=src["columns"], streams=streams, sizes=sizes,
                       candidates=candidates, losses=src["losses"], statuses=src["statuses"],
                       link_bytes=src["link_bytes"])
    doc["archive"] = {"path": out, "bytes": manifest["bytes"],
                      "bits_per_report": 8 * manifest["bytes"] / n,
                      "version": manifest["version"],
                      "stream_codecs": [s["codec"] for s in manifest["streams"]],
                      "absent": manifest["absent"]}
    absent = missing()
    doc["codecs_not_installed"] = absent
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(format_size_table(doc))
        if absent:  # their rows are not in the table: said, with what installs them
            print("not installed, so not measured: %s (pip install 'zeal-mcu[compress]')"
                  % ", ".join("%s (%s)" % kv for kv in sorted(absent.items())))
    return 0


