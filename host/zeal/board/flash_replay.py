"""Replay readings from a file on the board (`zeal flash --replay-file FILE`): each line checked
as the device's replay source will read it, the copy normalised (zeal_replay.txt)."""
import re

from ..errors import ZealError

# The longest replay line the device takes (its line buffer, zealfw/sources.py); a longer line
# is refused on the board, so it is refused here first.
REPLAY_LINE_MAX = 40


def _replay_lines(path):
    """(line number, bytes, text) of every line of a replay file as the board reads it: lines
    end at LF, CR is dropped anywhere, the LF ending the last line starts no further line;
    text is trimmed of spaces and tabs only, as on the device (a blank line's is "")."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ZealError("cannot read replay file %s: %s" % (path, exc.strerror or exc)) from None
    lines = data.replace(b"\r", b"").split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the final LF ends the last line: no line after it
    for lineno, raw in enumerate(lines, 1):
        try:
            yield lineno, raw, raw.decode("ascii").strip(" \t")
        except UnicodeDecodeError:
            raise ZealError("replay file %s line %d: not ASCII" % (path, lineno)) from None


def _replay_copy(path, out):
    """The text to copy and its number of lines; a file with no reading at all is refused
    (blank lines alone are almost surely the wrong file)."""
    if not any(out):
        raise ZealError("replay file %s holds no readings%s"
                        % (path, " (only blank lines)" if out else ""))
    return "\n".join(out) + "\n", len(out)


def check_replay_file(path, calibrated=True):
    """A --replay-file: (normalised text to copy to the board, number of lines = ticks).

    One reading per line, as the device's replay source reads it (zealfw/src_replay.py): 16 hex
    digits (a float64 bit pattern), 8 hex digits (a float32 bit pattern), or otherwise a
    decimal integer (a raw count, e.g. "+12345678" for a count of eight digits). A blank line
    is kept: the board makes its tick from the public value, as for any missing reading (a
    skipped line would shift every later report and show where the gaps are). A line longer
    than REPLAY_LINE_MAX characters, anything else, and raw counts under a profile without a
    calibration are refused with the line number. The copy has "\n" line ends, each line
    trimmed (a blank line empty)."""
    out = []
    for lineno, line, text in _replay_lines(path):
        where = "replay file %s line %d" % (path, lineno)
        if len(line) > REPLAY_LINE_MAX:
            raise ZealError("%s: %d characters, the board takes at most %d"
                            % (where, len(line), REPLAY_LINE_MAX))
        if not text:
            pass  # a missing reading: replaced on the board, never skipped
        elif len(text) in (8, 16) and re.fullmatch(r"[0-9a-fA-F]+", text):
            pass  # a bit pattern (so is "12345678": write a raw count of 8 digits as +N)
        elif not re.fullmatch(r"[-+]?[0-9]+", text):
            raise ZealError("%s: %r is not a reading (%s)" % (where, text, (
                "a line of %d characters is a float%d bit pattern: %d hex digits"
                % (len(text), 4 * len(text), len(text))) if len(text) in (8, 16) else
                "16 hex digits: float64 bits, 8 hex digits: float32 bits, or a decimal "
                "integer: a raw count"))
        elif not calibrated:
            raise ZealError("%s: %r is a raw count, and the profile has no calibration"
                            % (where, text))
        out.append(text)
    return _replay_copy(path, out)


def check_multi_replay_file(path, profile):
    """A --replay-file for a profile of reading tuples (multi, shuffle): (text to copy,
    number of lines = ticks).
    Each line holds d comma-separated fields (multi.md, "Replay lines"), or is blank (kept:
    the board makes its tick with every value invalid); a field the board will find invalid
    is replaced there by the public value, so only the field count is refused."""
    from ..mechanism import kinds

    out = []
    for lineno, _, text in _replay_lines(path):
        if text and text.count(",") + 1 != profile.d:
            raise ZealError("replay file %s line %d: %d fields, the profile has %d %s"
                            % (path, lineno, text.count(",") + 1, profile.d,
                               kinds.of(profile).fields))
        out.append(text)
    return _replay_copy(path, out)
