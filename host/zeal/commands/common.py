"""What the commands share: the parser class, stdin/stdout or a file, the non-blank lines of
an input, the option types that check a spelling, the options several commands take (each
defined here once, each command giving its own help) and how a figure is printed."""
import argparse
import re
import sys

from ..errors import InputError, ZealError

STDIO = "-"  # `-o -`, `--input -`: stdout / stdin


# ---- input and output ---------------------------------------------------------------------------
class _Std:
    """stdin or stdout as a context manager that leaves the stream open."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        if self.stream is sys.stdout:
            self.stream.flush()
        return False


def open_io(path, mode):
    """A file by name, or stdin/stdout for None or "-" (never closed), as a context manager.
    mode "r"/"w" (UTF-8 text) or "rb"; a file that cannot be opened is one ZealError line."""
    if path in (None, STDIO):
        if "r" in mode:
            return _Std(getattr(sys.stdin, "buffer", sys.stdin) if "b" in mode else sys.stdin)
        return _Std(sys.stdout)
    try:
        if "b" in mode:
            return open(path, mode)
        return open(path, mode, encoding="utf-8")
    except OSError as exc:
        raise ZealError("cannot %s %s: %s" % ("read" if "r" in mode else "write", path,
                                              exc.strerror or exc)) from None


def lines(path):
    """(line number, text) of the non-blank lines of a file or stdin. A line that is not
    UTF-8 is an InputError naming it (never a traceback)."""
    with open_io(path, "rb") as src:
        try:
            for lineno, line in enumerate(src, 1):
                if isinstance(line, bytes):
                    try:
                        line = line.decode("utf-8")
                    except UnicodeDecodeError:
                        raise InputError("line %d: not UTF-8 text" % lineno) from None
                if line.strip():
                    yield lineno, line
        except OSError as exc:
            raise ZealError("cannot read %s: %s" % (path or "stdin",
                                                    exc.strerror or exc)) from None


def fmt(value):
    """A figure as `zeal profile` prints it (None: float64 overflowed)."""
    if value is None:
        return "n/a (float64 overflow)"
    return "%.10g" % value if isinstance(value, float) else str(value)


def progress(line):
    print("zeal: %s" % line, file=sys.stderr, flush=True)


# ---- option types (argparse calls them: a bad spelling is one usage line) ------------------------
def bits_arg(text):
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("bits must be an integer or 'auto'") from None


def positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("not a number: %r" % text) from None
        if value <= 0:
            raise argparse.ArgumentTypeError("must be positive")
        return value
    return parse


def non_negative_int(text):
    if not text.isdigit():
        raise argparse.ArgumentTypeError("give a non-negative integer (milliseconds)")
    return int(text)


def seconds_arg(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("give seconds, 0..3600")
    return value


# ---- options several commands take ---------------------------------------------------------------
def add_json(p, help):
    p.add_argument("--json", action="store_true", help=help)


def add_db(p, help, *, required=False, metavar="FILE|URL"):
    p.add_argument("--db", required=required, metavar=metavar, help=help)


def add_output(p, help, *, metavar="FILE"):
    p.add_argument("-o", "--output", metavar=metavar, help=help)


# ---- the parser ---------------------------------------------------------------------------------
# argparse takes "-40" for a number but "-1e3" or "-.5e2" for an option; readings and ranges
# are often negative, so every parser of ours accepts any float spelling after a minus, and a
# negative p/q (calibrations: --cal-gain -220000/7519049).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$|^-\d+/\d+$")


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER


def add_epsilon(p, help, **kwargs):
    p.add_argument("--epsilon", metavar="EPS", help=help, **kwargs)
