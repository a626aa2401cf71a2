"""Text from a device or a file, as it may be shown on a terminal.

A STATUS message, a stored event's detail, a port or device name read back from a database
or an archive are data, not terminal commands: `shown(text)` escapes every character that
is not printable (str.isprintable: C0 and C1 controls such as ESC, DEL, line breaks, tabs,
bidirectional overrides such as U+202E, other format characters, unassigned code points,
lone surrogates; the ASCII space stays) the way repr() does: \\x1b, \\n, \\t, \\u202e,
\\U000e0001. Everything else is kept as it is, backslashes included, so `shown` is
idempotent (applied at the source and again where a line is printed, it changes nothing the
second time); a device's literal text "\\x1b" reads the same as an escaped ESC, and neither
does anything to the terminal. Machine-readable output (JSON) keeps the text as data:
json.dumps escapes it itself.

`progress_bar(...)`: the bar long work draws on stderr (tqdm), for the commands and the
analysis they call alike.
"""
import sys

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c: str) -> str:
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    if n < 0x100:
        return "\\x%02x" % n
    if n < 0x10000:
        return "\\u%04x" % n
    return "\\U%08x" % n


def shown(text) -> str:
    """`text` (str; anything else as str()) with its non-printable characters escaped."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else _escape(c) for c in text)


def progress_bar(total=None, unit="it", what=None, quiet=False):
    """A progress bar on stderr (tqdm), as a context manager with update(n): drawn only when
    stderr is a terminal and not `quiet` (a command's --json); else every call does nothing."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=what, file=sys.stderr,
                unit_scale=total is None or total >= 10_000,  # 1.2M/3.4M, but 7/52
                leave=False, dynamic_ncols=True,
                disable=quiet or not getattr(sys.stderr, "isatty", lambda: False)())
