"""`zeal perturb`: privatise readings, one report (or several) a line."""
import sys

from .common import InputError, ZealError, lines, open_io

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
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip (and count) NaN, infinite or malformed lines instead of stopping")
    p.set_defaults(func=run)


def _perturb_format(args):
    """--format, and the old `--output bits|low|float` (one release): a value that is a format
    name is taken as the format, with a note on stderr; any other value is the output file."""
    if args.output in FORMATS:
        if args.format not in (None, args.output):
            raise ZealError("--format %s and --output %s disagree (--output now names a file; "
                            "write to a file of that name with -o ./%s)"
                            % (args.format, args.output, args.output))
        print("zeal: note: `--output %s` is the old spelling of `--format %s` (accepted in this "
              "release only; -o/--output now names the output file, e.g. -o ./%s)"
              % ((args.output,) * 3), file=sys.stderr)
        args.format, args.output = args.output, None
    if args.format is None:
        args.format = "bits"


def run(args) -> int:
    from ..mechanism import kinds
    from ..mechanism.core.words import CounterWords, key_from_hex, system_words

    prof = kinds.load(args.profile)
    kind = kinds.of(prof)
    if kind.formats == FORMATS:
        _perturb_format(args)
    elif args.output in FORMATS and args.format is None:  # the old --output spelling
        args.format, args.output = args.output, None
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
    with open_io(args.output, "w") as out:
        for lineno, line in lines(args.input):
            try:
                got = mech.lines(line)
            except InputError as exc:
                if not args.skip_invalid:
                    raise InputError("line %d: %s" % (lineno, exc)) from None
                skipped += 1
                continue
            out.write("".join(t + "\n" for t in got))
    for note in mech.notes():
        print("zeal: %s" % note, file=sys.stderr)
    if skipped:
        print("zeal: skipped %d invalid line(s)" % skipped, file=sys.stderr)
    return 0
