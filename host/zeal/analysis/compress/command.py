"""`zeal compress`: a collection (or a file of `zeal perturb` output) as a compact archive, and
the size table of the codecs it tried on its reports (with --table: of every available codec).

The table, per codec, over the same streams the archive holds (the reports of each device
under each profile, in arrival order):
- bits per report = 8 x the codec's output bytes / n (every stream's blob, its own header
  included; the archive's manifest, profiles and frame table are counted apart);
- CR = bits per report / 64 (against the raw float64 doubles);
- ratio to the entropy bound = bits per report / H, H in bits per report;
- MB/s = float64 input (8 bytes a report) compressed per second on this machine, with
  --table the best of repeated runs (at least 50 ms of runs per codec), else the one pass
  that made the archive's candidates (its check included in decode_mb_per_s, likewise; "-"
  for packed where its size was computed, not run: archive_write.encode_each).

The entropy bound H (`entropy_basis` says which):
- `--readings FILE` (the true readings behind the reports, one decimal a line; the demo and a
  replay know them): the exact entropy of the report distribution averaged over those inputs,
  H(mixture of P(j | x_i)), from the mechanism's exact output probabilities
  (compress.entropy). A collection must then be under one profile with n = the readings.
- otherwise (a database holds no readings): the plug-in entropy of the observed report
  frequencies, -sum (c/n) log2 (c/n) per profile, n-weighted over profiles. It is an
  estimate, biased low (at most log2 n, far below the bound when n is not much larger than
  the cells the reports reach), so ratios to it are optimistic.

Which codec the archive uses: each stream in the smallest of the candidates, ties to the
first named; a reader needs that codec's library (`zeal analyze --archive` says which package
if missing). The candidates are `--codec`'s, else with `--table` every available codec,
else DEFAULT_CODECS (packed and adaptive: why those, at DEFAULT_CODECS).

What runs: by default only the candidates, each once on each stream (its figures from that
one pass; packed's size is computed where it would lose: archive_write.encode_each), and the
table lists only them; `--table` measures every available codec as described above (the best
of repeated runs), which costs what the slowest codecs cost (lzma compresses at 0.2-2 MB/s)
and holds every stream in memory (A.measure times whole passes).

Volumes (compress.archive_volumes): a store of more than VOLUME_REPORTS reports (or
VOLUME_FRAMES frames) of window-grid and table profiles is written as a set -- volume 1 at
--out, volumes 2..k beside it (NAME.v2.zeal.zip, ...) -- each volume's codecs run and its
archive made as the store's pages fill it (volume 1 last: it takes the store's events, read
at the end); the size table is summed over the volumes (each volume's streams coded apart:
its adaptive model learnt afresh), and --json's "volumes" lists the set's paths ("archive":
volume 1's path, the set's bytes). A store within one volume is the archive of before
volumes, byte for byte. Progress: a line per volume on stderr (not with --json). Measured at
10^8 reports (48 volumes): 10 s and 55 MB with 1 device, 31 s and 66 MB with 1,000. What a
volume costs: each device's stream is cut at each volume (a zip entry and a blob header, about
100 B, and the adaptive model learnt again), so with 1,000 devices the set takes 4.36 bits a
report where one archive of 10^7 takes 3.98 (1 device: 3.875 against 3.872).

Memory (issue "Scale: a billion reports in constant memory"): the store is read a page at a
time (compress.store_streams) into a temporary file (compress.spill); packed and adaptive on
a grid's or table's streams run a block at a time from it (compress.streamed); the blobs are
kept in the file and copied into the archive a piece at a time. So without --table the
command holds a page, a block and one stream's ANS words, whatever n. What needs a whole
stream in memory: every other codec (greedygd's split search, pcodec, zstd, lz4, bz2, lzma as
their libraries' one-shot calls, rans's stored counts) and every codec on multi and shuffle
streams (their shapes' coders group a stream's values by attribute or coordinate); --table,
every stream at once (of a volume, in a set); --reports, the file's reports.
"""
import json
import math
import os
import sys

import numpy as np

from ...errors import ReportError, ZealError
from ...text import progress_bar
from . import archive as A
from . import archive_volumes
from . import entropy
from . import kind_codecs
from . import streams as SH

#: The codecs the archive tries by default (`--codec` names others; `--table` measures every
#: one), in the order ties are broken. Why these, and why the choice costs at most about twice
#: the fastest codec's time:
#: - `adaptive` is the known best: it stores no model and learns one per profile over the
#:   profile's streams, so it was the smallest of every codec on each demo kind (grid, table,
#:   multi, shuffle: within 1.01-1.04 x the plug-in entropy, tests/test_archive_kinds.py), and
#:   it falls back to raw bits (b = 0) where modelling does not pay. It codes a grid's stream
#:   at 400 MB/s of float64 input, about 0.6 x `packed`'s speed (the fastest codec: the m bits
#:   the devices sent, no modelling), and both run a block at a time (compress.streamed);
#: - `packed` is the floor whatever the data, and the codec when `constriction` (adaptive's
#:   library) is not installed. Its size is exact without running it (header + the devices'
#:   bits), so it is made only on a stream where it is not larger than adaptive's blob
#:   (archive_write.encode_each): usually never, and the choice costs one adaptive pass.
#: The general-purpose compressors cost up to 1000 x more (lzma, bz2: 0.2-12 MB/s) and lost to
#: adaptive on every store measured, so they run only when named or with --table.
DEFAULT_CODECS = ("packed", "adaptive")

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


# ---- entropy ------------------------------------------------------------------------------------
def entropy_bound(streams, profiles, readings=None, counts=None) -> tuple:
    """(bits per report, basis) over all streams (module docstring); `counts` (fingerprint
    -> store_streams.Counts, kept as the store was read) gives the plug-in entropy."""
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
    reports = {}
    for s in streams:
        reports[s.fp] = reports.get(s.fp, 0) + s.n
    total = 0.0
    for fp in profiles:
        # a report of several symbols is one value (store_streams.Counts keeps its row)
        total += reports[fp] * entropy.entropy_bits_per_report_of_counts(counts[fp].counts())
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
        timed = s.get("timed_n", n)       # the reports of the streams it was run on
        rows.append({"codec": name, "bits_per_report": bpr, "cr": bpr / cr_bits,
                     "ratio_to_entropy": bpr / entropy if entropy > 0 else None,
                     "mb_per_s": 8 * timed / 1e6 / s["encode_s"] if s["encode_s"] > 0
                     else None,
                     "decode_mb_per_s": (8 * timed / 1e6 / s["decode_s"] if s["decode_s"] > 0
                                         else None),
                     "bytes": s["bytes"]})
        if s.get("computed"):
            rows[-1]["computed"] = True
    return {"n": n, "unit": unit, "entropy_bits_per_report": entropy, "entropy_basis": basis,
            "codecs": rows}


def _groups(streams, profiles):
    """[(shape, indices of its streams, their profiles)] for each stream shape present."""
    out = []
    for shape in GROUPS:
        idx = [i for i, s in enumerate(streams)
               if SH.shape_of(profiles[s.fp]).name == shape]
        if idx:
            fps = {streams[i].fp for i in idx}
            out.append((shape, idx, {fp: p for fp, p in profiles.items() if fp in fps}))
    return out


def group_bounds(streams, profiles, counts, readings=None) -> list:
    """[(bits per report, basis)] the entropy bound of each shape's streams (`_groups`' order):
    computed before any codec runs, so that --readings that do not fit are refused first."""
    return [entropy_bound([streams[i] for i in idx], profs,
                          readings if shape == "patterns" else None, counts)
            for shape, idx, profs in _groups(streams, profiles)]


def group_tables(streams, profiles, bounds, sizes_of) -> list:
    """[size table per stream shape present]: each shape's streams (store_streams
    SpilledStream) measured apart, against its entropy bound (`group_bounds`),
    sizes_of(indices of the shape's streams, their profiles) giving {codec: {"bytes",
    "encode_s", "decode_s", "applies"}} (compress.archive.measure's figures, or one pass's)."""
    tables = []
    for (shape, idx, profs), (bound, basis) in zip(_groups(streams, profiles), bounds):
        info = GROUPS[shape]
        mine = [streams[i] for i in idx]
        n = sum(s.n for s in mine)
        sizes = sizes_of(idx, profs)
        if shape == "patterns":
            cr = 64.0
        else:
            cr = sum(s.payload_bits for s in mine) / n
        doc = size_table(n, sizes, bound, basis, unit=info["unit"], cr_bits=cr)
        doc.update(shape=shape, label=info["label"], cr_basis=info["cr_basis"],
                   cr_bits=cr)
        law = [kind_codecs.exact_law(p) for p in profs.values()]
        if any(law):
            doc["exact_law"] = [{"fingerprint": fp, "part": w[0], "outcomes": w[1],
                                 "bits": math.log2(w[1])}
                                for fp, w in zip(profs, law) if w]
        tables.append(doc)
    return tables


def _measured(streams, profiles, codecs, tick):
    """(sizes_of for group_tables, {codec: {"blobs": [per stream]}}): `--table`: every codec
    timed on whole streams (compress.archive.measure), every stream in memory at once."""
    mem = [A.Stream(s.device, s.fp, s.vector, s.bits(), s.n) for s in streams]
    blobs = {name: [None] * len(streams) for name in codecs}

    def sizes_of(idx, profs):
        sizes = A.measure([mem[i] for i in idx], profs, codecs, tick)
        for name, got in sizes.items():
            for i, b in zip(idx, got["blobs"]):
                blobs[name][i] = b
        return sizes
    return sizes_of, {name: {"blobs": b} for name, b in blobs.items()}


def _tried(streams, profiles, codecs, spill, tick):
    """(sizes_of for group_tables, {codec: {"blobs": [per stream]}}): each codec once on each
    stream (compress.archive.encode_each), blobs in the spill."""
    runs = A.encode_each(streams, profiles, codecs, spill, tick)

    def sizes_of(idx, profs):
        out = {}
        for name, per in runs.items():
            mine = [(per[i], streams[i].n) for i in idx]
            ran = [(b, n) for (b, _, _), n in mine if b is not None
                   and not isinstance(b, A.Sized)]
            out[name] = {"bytes": sum(len(b) for (b, _, _), _ in mine if b is not None),
                         "applies": all(b is not None for (b, _, _), _ in mine),
                         "encode_s": sum(e for (_, e, _), _ in mine),
                         "decode_s": sum(d for (_, _, d), _ in mine),
                         "timed_n": sum(n for _, n in ran),
                         "computed": len(ran) < sum(b is not None for (b, _, _), _ in mine)}
        return out
    return sizes_of, {name: {"blobs": [b for b, _, _ in per]} for name, per in runs.items()}


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
    computed = [r["codec"] for r in doc["codecs"] if r.get("computed")]
    if computed:
        lines.append("%s: size computed exactly (header + the bits the devices sent), not "
                     "run on the streams where another codec was smaller"
                     % ", ".join(computed))
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
        volumes = doc.get("volumes") or []
        if len(volumes) > 1:
            lines.append("in %d volumes (the bytes above are the set's): %s%s; each is an "
                         "archive of its frames, and `zeal analyze --archive` on any of them "
                         "reads them all" % (len(volumes), volumes[0],
                                             ", " + volumes[1] if len(volumes) == 2 else
                                             ", %s ... %s" % (volumes[1], volumes[-1])))
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
    from .spill import Spill

    if (args.db is None) == (args.reports is None):
        raise ZealError("give --db FILE or --reports FILE (with --profile)")
    table = bool(getattr(args, "table", False))
    available = codecs()
    named = []
    for name in args.codec or []:
        codec = get(name)          # unknown or missing library: one line naming the package
        available.setdefault(name, codec)
        if name not in named:
            named.append(name)
    if not available:
        raise ZealError("no codec is available (see zeal.analysis.compress)")
    if named:
        candidates = named
    elif table:
        candidates = list(available)
    else:
        candidates = [c for c in DEFAULT_CODECS if c in available] or list(available)[:1]
    run = available if table else {name: available[name] for name in candidates}
    readings = read_readings(args.readings) if args.readings else None
    if args.db is not None:
        if args.profile is not None:
            raise ZealError("--profile goes with --reports (a database holds its profiles)")
        from ...collect.store import is_url

        if is_url(args.db) and not args.out:
            raise ZealError("--db is a PostgreSQL URL: name the archive with --out FILE")
    elif args.profile is None:
        raise ZealError("--reports needs --profile FILE (the profile they were made under)")
    if args.db is not None:
        doc, manifest, paths, n = _compress_store(args, run, candidates, readings, table)
    else:
        from ...mechanism import kinds
        from .store_streams import read_offsets

        with Spill() as spill:
            prof = kinds.load(args.profile)
            _one_reading_profile(prof)
            src = read_offsets(prof, read_reports(args.reports, prof), spill)
            doc, manifest, out = _compress(args, src, "reports", args.reports, run,
                                           candidates, readings, table, spill)
        paths, n = [out], src.n
    doc["archive"] = {"path": paths[0], "bytes": manifest["bytes"],
                      "bits_per_report": 8 * manifest["bytes"] / n,
                      "version": manifest["version"],
                      "stream_codecs": [s["codec"] for s in manifest["streams"]],
                      "absent": manifest["absent"]}
    doc["volumes"] = paths
    absent = missing()
    doc["codecs_not_installed"] = absent
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(format_size_table(doc))
        if not table:
            print("codecs: those the archive tried, each once a stream; --table measures "
                  "every available codec")
        if absent:  # their rows are not in the table: said, with what installs them
            print("not installed, so not measured: %s (pip install 'zeal-mcu[compress]')"
                  % ", ".join("%s (%s)" % kv for kv in sorted(absent.items())))
    return 0


def _compress_store(args, run, candidates, readings, table) -> tuple:
    """(the size table's document, the manifest, [the volumes' paths], reports) of --db: the
    store read page by page (compress.store_streams.read_volumes); one volume's worth is the
    archive `_compress` writes, as before volumes; past it a set (compress.archive_volumes),
    each volume coded as it fills (`_Set`)."""
    from .spill import Spill
    from .store_streams import read_volumes

    bar = [None]
    volumes = read_volumes(args.db, Spill, lambda frames: bar[0].update(frames))
    made = None
    try:
        while True:
            with progress_bar(None, "frame", "reading the store", quiet=args.json) as b:
                bar[0] = b
                got = next(volumes, None)
            if got is None:
                break
            src, spill, last = got
            if last and made is None:        # one volume: the archive of before volumes
                with spill:
                    doc, manifest, out = _compress(args, src, "database", args.db, run,
                                                   candidates, readings, table, spill)
                return doc, manifest, [out], src.n
            if made is None:
                made = _Set(args, run, candidates, table)
            made.add(src, spill, last)
        return made.finish(readings)
    finally:
        volumes.close()
        if made is not None:
            made.close()


class _Total:
    """A profile's streams over the volumes of a set, as group_bounds and group_tables read a
    stream: its profile, reports and payload bits."""

    def __init__(self, fp: str):
        self.fp, self.n, self.payload_bits = fp, 0, 0


class _Set:
    """A set of volumes being written (compress.archive_volumes): each volume's codecs run
    and its archive made as it comes (`add`), volume 1 kept (its spill open) until the last,
    whose events it takes (`finish`); the size table summed over the volumes."""

    def __init__(self, args, run, candidates, table):
        self.args, self.run, self.candidates, self.table = args, run, candidates, table
        self.out = args.out or A.default_path(args.db)
        self.set_id = A.new_set_id()
        self.count = 0
        self.first = None          # (source, spill, chosen) of volume 1, written last
        self.temps = []            # volumes 2..: (temporary path, final path)
        self.profiles, self.totals, self.counts = {}, {}, {}
        self.sizes = {}            # shape -> codec -> summed figures
        self.codecs, self.frames, self.reports = [], [], []   # per volume

    def _say(self, text: str) -> None:
        if not self.args.json:
            print(text, file=sys.stderr, flush=True)

    def add(self, src, spill, last: bool) -> None:
        self.count += 1
        i = self.count
        try:
            chosen = self._code(src, spill)
        except BaseException:
            spill.close()
            raise
        for fp, prof in src.profiles.items():
            self.profiles.setdefault(fp, prof)
        for s in src.streams:
            t = self.totals.setdefault(s.fp, _Total(s.fp))
            t.n += s.n
            t.payload_bits += s.payload_bits
        self.counts = src.counts
        self.frames.append(src.nframes)
        self.reports.append(src.n)
        if i == 1:
            self.first = (src, spill, chosen)
            self._say("volume 1: %d reports in %d frames coded (written last, with the "
                      "store's events)" % (src.n, src.nframes))
            return
        if last:
            self.events = (src.losses, src.statuses, src.link_bytes)
        final = A.volume_path(self.out, i)
        temp = archive_volumes.temporary_path(final)
        self.temps.append((temp, final))
        with spill:
            manifest = A.write(temp, source="database", profiles=src.profiles,
                               devices=src.devices, columns=None, frames=src.frames,
                               nframes=src.nframes, streams=src.streams, chosen=chosen,
                               losses=[], statuses=[], link_bytes=0,
                               volume=(i, 0, self.set_id))
        self.codecs.append([s["codec"] for s in manifest["streams"]])
        self._say("volume %d: %d reports in %d frames coded" % (i, src.n, src.nframes))

    def _code(self, src, spill) -> list:
        """Each codec on the volume's streams (every one timed with --table, else once), the
        figures added to the set's, and the (codec, blob) chosen for each stream."""
        streams, profiles = src.streams, src.profiles
        groups = _groups(streams, profiles)
        total = len(self.run) * (len(groups) if self.table else len(streams))
        with progress_bar(total, "codec", "measuring codecs", quiet=self.args.json) as bar:
            def tick(name):
                bar.set_postfix_str(name)
                bar.update(1)

            if self.table:
                sizes_of, blobs = _measured(streams, profiles, self.run, tick)
            else:
                sizes_of, blobs = _tried(streams, profiles, self.run, spill, tick)
            for shape, idx, profs in groups:
                n = sum(streams[i].n for i in idx)
                acc = self.sizes.setdefault(shape, {})
                for name, got in sizes_of(idx, profs).items():
                    a = acc.setdefault(name, {"bytes": 0, "applies": True, "encode_s": 0.0,
                                              "decode_s": 0.0, "timed_n": 0,
                                              "computed": False})
                    a["bytes"] += got["bytes"]
                    a["applies"] = a["applies"] and got.get("applies", True)
                    a["encode_s"] += got["encode_s"]
                    a["decode_s"] += got["decode_s"]
                    a["timed_n"] += got.get("timed_n", n)
                    a["computed"] = a["computed"] or bool(got.get("computed"))
        return A.choose(streams, profiles, blobs, self.candidates)

    def finish(self, readings) -> tuple:
        """(document, the set's manifest figures, [paths], reports): the entropy bounds over
        the whole store (--readings refused here when they do not fit), volumes 2.. given
        their count, volume 1 written with the events."""
        stubs = list(self.totals.values())
        bounds = group_bounds(stubs, self.profiles, self.counts, readings)
        k = self.count
        paths, size = [self.out], 0
        for temp, final in self.temps:
            size += A.finalize(temp, final, k)
            paths.append(final)
        self.temps = []
        src, spill, chosen = self.first
        losses, statuses, link_bytes = self.events
        with spill:
            first = A.write(self.out, source="database", profiles=src.profiles,
                            devices=src.devices, columns=None, frames=src.frames,
                            nframes=src.nframes, streams=src.streams, chosen=chosen,
                            losses=losses, statuses=statuses, link_bytes=link_bytes,
                            volume=(1, k, self.set_id))
        self.first = None
        self.codecs.insert(0, [s["codec"] for s in first["streams"]])
        size += first["bytes"]
        self._say("%d volumes written: %s, then %s ... %s"
                  % (k, paths[0], paths[1], paths[-1]) if k > 2 else
                  "%d volumes written: %s and %s" % (k, paths[0], paths[1]))
        shapes = {g: self.sizes[g] for g in GROUPS if g in self.sizes}

        def sizes_of(idx, profs):
            return shapes[SH.shape_of(next(iter(profs.values()))).name]
        tables = group_tables(stubs, self.profiles, bounds, sizes_of)
        doc = dict(tables[0])
        doc["groups"] = tables
        doc["table"] = self.table
        manifest = {"bytes": size, "version": first["version"], "absent": first["absent"],
                    "streams": [{"codec": c} for v in self.codecs for c in v]}
        return doc, manifest, paths, sum(self.reports)

    def close(self) -> None:
        """What an interrupted set leaves: its temporary volumes removed, volume 1's spill
        closed."""
        for temp, _ in self.temps:
            try:
                os.unlink(temp)
            except OSError:
                pass
        self.temps = []
        if self.first is not None:
            self.first[1].close()
            self.first = None


def _compress(args, src, source, origin, run, candidates, readings, table, spill) -> tuple:
    """(the size table's document, the manifest, the archive's path): the codecs `run` on the
    source's streams (all of them timed with --table, else each once), the archive written."""
    streams, profiles = src.streams, src.profiles
    if readings is not None and len(profiles) == 1 and \
            SH.shape_of(next(iter(profiles.values()))) is not SH.Patterns:
        raise ZealError("--readings: the exact entropy bound is computed for window-grid "
                        "profiles; without --readings the table is measured against the "
                        "reports' plug-in entropy")
    bounds = group_bounds(streams, profiles, src.counts, readings)
    shapes = {SH.shape_of(profiles[s.fp]).name for s in streams}
    total = len(run) * (len(shapes) if table else len(streams))
    with progress_bar(total, "codec", "measuring codecs", quiet=args.json) as bar:
        def tick(name):
            bar.set_postfix_str(name)
            bar.update(1)

        if table:
            sizes_of, blobs = _measured(streams, profiles, run, tick)
        else:
            sizes_of, blobs = _tried(streams, profiles, run, spill, tick)
        tables = group_tables(streams, profiles, bounds, sizes_of)
    doc = dict(tables[0])          # the first group's figures at the top (as before groups)
    doc["groups"] = tables
    doc["table"] = table
    chosen = A.choose(streams, profiles, blobs, candidates)
    del blobs
    out = args.out or A.default_path(origin)
    manifest = A.write(out, source=source, profiles=profiles, devices=src.devices,
                       columns=None, frames=src.frames, nframes=src.nframes, streams=streams,
                       chosen=chosen, losses=src.losses, statuses=src.statuses,
                       link_bytes=src.link_bytes)
    return doc, manifest, out
