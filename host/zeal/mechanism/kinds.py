"""The profile kinds, one object each, behind one interface: the registry.

A profile file is one of four kinds (profile.md, table.md, multi.md, shuffle.md): the window
grid, a table (`zeal-table/1`), multi-attribute (`zeal-multi/1`) and shuffle
(`zeal-shuffle/2`). Each kind lives in its own sub-package (zeal.mechanism.grid, .table,
.multi, .shuffle; its object in `<kind>/kind.py`, the shared defaults and helpers in
core/kind.py). Code outside this registry and those sub-packages asks the kind object what it
needs and never which kind it holds:

    kind = kinds.of(profile)              # the kind object of a loaded profile
    kind = kinds.sniff(data)              # of a file's bytes (the sniff rule, first 503 bytes)
    profile = kinds.loads(data, fetch)    # a checked profile of any kind
    profile = kinds.load(path)

Each kind object answers:
  name                   "grid", "table", "multi", "shuffle" (what JSON documents print)
  export(profile, rows, counts, io)
                         the export's rows for the frames `rows` stored under `profile`:
                         a dict of equal-length arrays (EXPORT_FIELDS); `io` decodes the
                         stored payloads of fixed-width reports (zeal.analysis.decode: the
                         wire's bit layout is the analysis side's to read)
  export_doc(profile, unit, reports)
                         the export metadata's entry for the profile
  stream_shape           what an archive keeps per report (zeal.analysis.compress.streams):
                         "patterns" (grid, table: one 64-bit pattern), "pairs" (multi: the k
                         (attribute, value) pairs), "messages" (shuffle: the message integer)
  uniform_part(profile)  (what, N): the part of a report whose law the mechanism fixes,
                         whatever the readings: uniform over N outcomes (multi: the attribute
                         subset, C(d, k); shuffle: the coordinate, d); None where no part is
                         (an archive's rANS codes that part under this exact law)
  report_pattern(profile)
                         (base, high): the 64-bit pattern an archive keeps for offset j is
                         base + j, and for the m bits sent, high + low (the grid's: its float64
                         x*; a table's: the cell itself)
  distribution_plots     whether analyze's per-profile histogram and running-mean plots
                         apply (a scalar report of one reading)
  rows_per_attribute     what one attribute's export rows count (a plot's axis label)
  refers_to_others       its file names other profile files by fingerprint (a multi header's
                         attribute files): a store loads it after the others
  files(profile)         [(fingerprint, file text)] of the profile and every file it refers to
                         (what a store keeps, so that the profile loads from it)
  write(profile, path)   the profile's file at `path` and those it refers to beside it
  split_payload(profile, payload, count)
                         a DATA payload's reports where they are not one fixed width (a multi
                         report: its (attribute, value) pairs; multi_profile.PayloadError for
                         a bad one), None where every report is `bits` wide
  join_payload(profile, reports)
                         the inverse of split_payload: a DATA payload of those reports (an
                         archive read back rebuilds its frames)
  value_attributes(profile)
                         the attributes of a reading tuple given as a value's index (a multi
                         profile's categorical ones), for whoever writes replay lines
  double_reports         its reports are the paper's float64 patterns x* (the window grid):
                         what an archive keeps, decode_values gives and AVG* averages
  privacy_ratio(profile) the exact worst-case likelihood ratio of a report (e^epsilon bound)
  privacy(profile)       the exact privacy figures, Fractions: covers (what the guarantee is
                         about: one report, a shuffled batch), epsilon, delta (None for pure
                         LDP), ratio (the worst-case likelihood ratio of what `covers` names,
                         None for shuffle) and bound (the certified rational lower bound of
                         e^epsilon it stays within, None for shuffle)
  variance(profile, readings=None)
                         per estimated quantity (one reading; a multi profile's attributes; a
                         shuffle profile's coordinates) a dict: name, of (one report's / one
                         message's estimate), worst (exact, Fraction: max over the range),
                         worst_upper (= worst where the maximum is exact, else an upper
                         bound), worst_input (a reading reaching it, or None), data_mean
                         (the average over `readings` clamped to the range, or None) and
                         data_readings
  summary(profile, unit) one line naming the profile's figures (range, epsilon, bits, cells)
  facts(profile, unit)   the kind's own figures for a JSON document (None: nothing to add)
  title_note(profile)    what a plot's title adds about the kind ("" for the window grid)
  fields                 what a reading tuple's fields are ("attributes", "coordinates"), or
                         None: one reading a tick (a replay line, a perturb line)
  board_files(profile, name)
                         [(file name, label, text)] of the files a board needs beside the
                         profile file `name` (a multi header's attribute files)
  estimator(profile, confidence)
                         the calibrated-mean estimator of a one-reading profile's offsets
  formats                `zeal perturb --format` choices, the default first
  perturber(profile, words, fmt)
                         `zeal perturb`: .lines(text) -> the output lines for one input line
                         (InputError for a line that is no reading), .notes() -> stderr lines
  aggregate(profile, lines)
                         `zeal aggregate`: (JSON document, text lines) of `zeal perturb`'s
                         output lines [(line number, text)] (ReportError naming the line)

The export's rows. Every row is one unbiased estimate: grouped by (fingerprint, attribute,
value) the mean of `estimate` is exactly the figure `zeal analyze` prints for that group
(up to the rounding of each estimate to float64):
  grid, table  one row per report: attribute 0, name "reading", value "mean", low = the m
               bits sent, estimate =
               the report's unbiased estimate of its reading (the grid's affine map, the
               table's cell value)
  multi        one row per report and numeric attribute (value "mean"), and per report,
               categorical attribute and domain value v (value "frequency of v"): low = the
               value the report carried for the
               attribute (-1: not carried), estimate = mid + (d/k)(g(y) - mid) when carried,
               else mid (numeric; its mean over the n reports is MultiEstimator's
               mid + (d/k)/n sum (g(y) - mid)); for a categorical value v, (d/k)(B_v - q) /
               (p - q) when carried, else 0 (the mean is the frequency estimate)
  shuffle      one row per message (the shuffler's frames: no board identity): attribute =
               the coordinate c, name "coordinate c", value "mean", low = its level y, estimate = lo_c + (hi_c - lo_c)
               (y/k - gamma/2) / (1 - gamma); the mean over a coordinate's messages is
               shuffle.Analyzer's debiased mean. A message no randomiser sends (analyze
               counts it as invalid): attribute -1, low = the message, estimate NaN
"""

from ..errors import ProfileError
from .core.kind import EXPORT_FIELDS, Kind, as_bytes  # noqa: F401  (EXPORT_FIELDS: export's)
from .grid import profile as GP
from .grid.kind import GridKind
from .multi import profile as MP
from .multi.kind import MultiKind
from .shuffle import profile as SP
from .shuffle.kind import ShuffleKind
from .table import profile as TP
from .table.kind import TableKind

MAX_ANY_FILE = max(GP.MAX_FILE, TP.MAX_TABLE_FILE, MP.MAX_MULTI_FILE, SP.MAX_SHUFFLE_FILE)


# ---- the registry ------------------------------------------------------------------------------
GRID, TABLE, MULTI, SHUFFLE = GridKind(), TableKind(), MultiKind(), ShuffleKind()
KINDS = (MULTI, SHUFFLE, TABLE, GRID)   # the sniff rule's order


def sniff(data) -> Kind:
    """The kind of a profile file's bytes (or text), by the sniff rule (first 503 bytes)."""
    data = as_bytes(data)
    for kind in KINDS:
        if kind.matches(data):
            return kind
    return GRID  # not reached: the grid matches anything


def loads(data, fetch=None):
    """A checked profile of any kind from a file's bytes (or text). fetch(i, fingerprint)
    gives a multi header's attribute file i (None: reason "attr<i>:missing")."""
    data = as_bytes(data)
    return sniff(data).loads(data, fetch)


def load(path):
    """A checked profile of any kind from a file; a multi header's attribute files are read
    beside it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ANY_FILE + 1)
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None
    return loads(data, MP.file_fetcher(path))


def is_profile(obj) -> bool:
    """Is `obj` a loaded profile of any kind?"""
    return any(kind.owns(obj) for kind in KINDS)


def of(profile) -> Kind:
    """The kind object of a loaded profile."""
    for kind in KINDS:
        if kind.owns(profile):
            return kind
    raise TypeError("not a profile: %r" % (type(profile).__name__,))
