"""`zeal perturb`: privatise readings, one report (or several) a line."""
import sys

from .common import InputError, ZealError, lines, open_io
from ..text import progress_bar

FORMATS = ("bits", "low", "float")


def add(sub):
    p = sub.add_parser("perturb", help="privatise readings (one decimal per line)",
                       description="Privatise readings, one exact decimal per line; one "
                                   "report per line on stdout (or -o FILE).")
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="profile made by `zeal profile -o FILE`")
    p.add_argument("--input", metavar="FILE",
                   help="readings file, UTF-8 ('-' or default: stdin)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the reports here ('-' or default: stdout)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="bits: the 64-bit pattern in hex; low: the m transmitted bits; "
                        "float: the double (default: bits)")
    p.add_argument("--seed", metavar="HEX", help="generator key, up to 64 hex digits "
                   "(reproducible runs only; default: the OS's secure source)")
    p.add_argument("--column", metavar="C",
                   help="the input is a CSV file with a header line: privatise this column "
                        "(default: one reading a line; a first line of words, not a number, "
                        "is taken as a header)")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip (and count) NaN, infinite or malformed lines instead of stopping")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..mechanism import kinds
    from ..mechanism.core.words import CounterWords, key_from_hex, system_words

    prof = kinds.load(args.profile)
    kind = kinds.of(prof)
    if args.format is None:
        args.format = kind.formats[0]
    if args.format not in kind.formats:
        raise ZealError("a %s profile's reports are written as %s: use --format %s"
                        % (kind.name, " or ".join(kind.formats), kind.formats[0]))
    if args.seed is not None:
        try:
            words = CounterWords(key_from_hex(args.seed))
        except ValueError as exc:
            raise ZealError(str(exc)) from None
    else:
        words = system_words()
    mech = kind.perturber(prof, words, args.format)
    skipped = 0
    header = None
    with open_io(args.output, "w") as out, progress_bar(_size(args.input), "B",
                                                        "perturb") as bar:
        for lineno, line in _readings(args):
            bar.update(len(line))
            try:
                got = mech.lines(line)
            except InputError as exc:
                if lineno == 1 and args.column is None and kind.fields is None \
                        and _a_header(line):
                    # a header line (a CSV's); NaN, inf, a bad number are readings refused
                    header = line.strip()
                    continue
                if not args.skip_invalid:
                    raise InputError("line %d: %s" % (lineno, exc)) from None
                skipped += 1
                continue
            out.write("".join(t + "\n" for t in got))
    if header is not None:
        print("zeal: line 1 is not a reading; taken as a header (%s)" % header[:60],
              file=sys.stderr)
    for note in mech.notes():
        print("zeal: %s" % note, file=sys.stderr)
    if skipped:
        print("zeal: skipped %d invalid line(s)" % skipped, file=sys.stderr)
    return 0


def _readings(args):
    """(line number, text) of each reading: the lines of the input, or with --column the
    cells of that column of a CSV file (exact text: never through a float)."""
    if args.column is None:
        return lines(args.input)
    if args.input in (None, "-"):
        raise ZealError("--column reads a CSV file: give it with --input FILE")
    from ..analysis.datasets import load_csv_column

    return ((n, text) for n, text in enumerate(load_csv_column(args.input, args.column), 2))


def _a_header(text: str) -> bool:
    """A first line of one-reading lines that names a column: words, not a number (NaN,
    inf or a malformed number are readings, refused as such)."""
    try:
        float(text)
    except ValueError:
        return any(c.isalpha() for c in text)
    return False


def _size(path):
    """The input's size in bytes (the progress bar's total), None for stdin."""
    import os

    if path in (None, "-"):
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None
