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
import sys

import numpy as np

from ...errors import ReportError, ZealError
from . import archive as A

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
    _grid_profiles_only(data.profiles[fp] for fp in data.by_fp)
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
def plugin_entropy(offsets: np.ndarray) -> float:
    """-sum (c/n) log2(c/n) over the observed values (bits)."""
    _, counts = np.unique(offsets, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum()) + 0.0


def entropy_bound(streams, profiles, readings=None) -> tuple:
    """(bits per report, basis) over all streams (module docstring)."""
    n = sum(s.bits.size for s in streams)
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
        bits = [s.bits for s in streams if s.fp == fp]
        joined = np.concatenate(bits)
        total += joined.size * plugin_entropy(joined)
    return total / n, ENTROPY_PLUGIN


# ---- the table ----------------------------------------------------------------------------------
def size_table(n: int, sizes: dict, entropy: float, basis: str) -> dict:
    rows = []
    for name, s in sizes.items():
        bpr = 8 * s["bytes"] / n
        rows.append({"codec": name, "bits_per_report": bpr, "cr": bpr / 64,
                     "ratio_to_entropy": bpr / entropy if entropy > 0 else None,
                     "mb_per_s": 8 * n / 1e6 / s["encode_s"] if s["encode_s"] > 0 else None,
                     "decode_mb_per_s": (8 * n / 1e6 / s["decode_s"] if s["decode_s"] > 0
                                         else None),
                     "bytes": s["bytes"]})
    return {"n": n, "entropy_bits_per_report": entropy, "entropy_basis": basis,
            "codecs": rows}


def _f(value, spec):
    return "-" if value is None else spec % value


def format_size_table(doc: dict) -> str:
    lines = ["%d reports; entropy bound %.4f bits per report (%s)"
             % (doc["n"], doc["entropy_bits_per_report"], doc["entropy_basis"])]
    head = "%-10s %12s %10s %12s %14s %14s" % ("codec", "bits/report", "CR (/64)",
                                              "x entropy", "compress MB/s", "decompress MB/s")
    lines += [head, "-" * len(head)]
    for r in doc["codecs"]:
        lines.append("%-10s %12.4f %10.5f %12s %14s %14s"
                     % (r["codec"], r["bits_per_report"], r["cr"],
                        _f(r["ratio_to_entropy"], "%.4f"), _f(r["mb_per_s"], "%.1f"),
                        _f(r["decode_mb_per_s"], "%.1f")))
    lines.append("bits/report: the codec's output over all streams (its headers included); "
                 "CR: against 64-bit doubles; MB/s: float64 input (8 bytes a report)")
    a = doc.get("archive")
    if a:
        used = {}
        for c in a["stream_codecs"]:
            used[c] = used.get(c, 0) + 1
        lines.append("archive written to %s: %d bytes, %.4f bits per report with its "
                     "manifest, profiles and frame table; streams: %s"
                     % (a["path"], a["bytes"], a["bits_per_report"],
                        ", ".join("%s x%d" % kv for kv in used.items())))
    return "\n".join(lines)


# ---- command ------------------------------------------------------------------------------------
def _grid_profiles_only(profiles) -> None:
    """The archive stores reports as binade doubles: window-grid profiles only. Any other
    kind (zeal.mechanism.kinds: `archivable` says why not) is one ZealError line, before any
    work, never a traceback."""
    from ...mechanism import kinds

    for prof in profiles:
        kind = kinds.of(prof)
        if kind.archivable is not None:
            raise ZealError("zeal compress keeps window-grid and table profiles; profile %s "
                            "is a %s profile (%s)" % (prof.fingerprint[:16], kind.name,
                                                      kind.archivable))


def cmd_compress(args) -> int:
    from . import codecs, get
    from ...mechanism import kinds

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
        prof = kinds.load(args.profile)
        _grid_profiles_only([prof])
        j = read_reports(args.reports, prof)
        src = {"profiles": {prof.fingerprint: prof}, "devices": [], "columns": None,
               "streams": [A.Stream(None, prof.fingerprint, False, A.report_bits(prof, j))],
               "losses": None, "statuses": None, "link_bytes": None}
        source, origin = "reports", args.reports
    streams, profiles = src["streams"], src["profiles"]
    n = sum(int(s.bits.size) for s in streams)
    entropy, basis = entropy_bound(streams, profiles, readings)
    sizes = A.measure(streams, profiles, available)
    doc = size_table(n, sizes, entropy, basis)
    out = args.out or A.default_path(origin)
    manifest = A.write(out, source=source, profiles=profiles, devices=src["devices"],
                       columns=src["columns"], streams=streams, sizes=sizes,
                       candidates=candidates, losses=src["losses"], statuses=src["statuses"],
                       link_bytes=src["link_bytes"])
    doc["archive"] = {"path": out, "bytes": manifest["bytes"],
                      "bits_per_report": 8 * manifest["bytes"] / n, "version": A.VERSION,
                      "stream_codecs": [s["codec"] for s in manifest["streams"]],
                      "absent": manifest["absent"]}
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(format_size_table(doc))
    return 0


def register(subparsers) -> None:
    """Add `zeal compress` to the CLI's sub-command table."""
    p = subparsers.add_parser(
        "compress", help="a compact archive of a collection (or of `zeal perturb` output) and "
        "the size table of every codec",
        description="Compress the reports of a collector database (--db) or of a file of "
        "`zeal perturb` output (--reports with --profile) into a versioned archive that "
        "`zeal analyze --archive` reads, and print, for every available codec, bits per "
        "report, CR against 64-bit doubles, the ratio to the entropy bound and MB/s.")
    p.add_argument("--db", metavar="FILE|URL", help="the collector's database, an SQLite file "
                   "or a postgresql:// URL (opened read-only)")
    p.add_argument("--reports", metavar="FILE", help="a file of `zeal perturb` output (any "
                   "--format), instead of --db")
    p.add_argument("--profile", metavar="FILE", help="the profile the --reports were made "
                   "under")
    p.add_argument("--out", metavar="ARCHIVE", help="the archive to write (default: the "
                   "source's name with .zeal.zip)")
    p.add_argument("--codec", nargs="+", action="extend", metavar="NAME",
                   help="the codecs the archive may use, each stream in the smallest "
                   "(default: every available codec); the table shows every available one")
    p.add_argument("--readings", metavar="FILE", help="the true readings behind the reports, "
                   "one decimal a line: the entropy bound is then the exact one (default: "
                   "the plug-in entropy of the observed reports)")
    p.add_argument("--json", action="store_true", help='print {"n", '
                   '"entropy_bits_per_report", "entropy_basis", "codecs": [...], "archive"} '
                   "as JSON")
    p.set_defaults(func=cmd_compress)
