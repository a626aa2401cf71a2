"""Terminal escape injection (issue 18, finding 6): a device's STATUS text, and any text read
back from a database, is printed by `zeal collect`, `zeal events` and `zeal analyze` with its
control characters escaped (zeal.text.shown), never raw: before, an ESC sequence in a
STATUS message reached the terminal as it was (it can retitle the window, clear the screen,
recolour or hide what follows; a U+202E reverses the text after it). JSON output keeps the
text as data (json.dumps escapes it)."""
import json
import subprocess
import sys

from zeal import wire
from zeal.collect.virtual import Pty
from zeal.text import shown

from test_collector import ENV, collect_cmd, count, hello, wait_for

# OSC window title, clear screen, red, bell, a line break that would fake a log line, a
# right-to-left override, C1 CSI, DEL
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\nzeal: fake line \u202eevil\x9b\x7f"
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\x7f")


def test_shown_escapes_controls_and_is_idempotent():
    assert shown("plain text, café 42") == "plain text, café 42"
    out = shown(HOSTILE)
    assert not any(c in out for c in RAW) and "\n" not in out
    assert out == ("\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x1b[0m\\nzeal: fake line "
                   "\\u202eevil\\x9b\\x7f")
    assert shown(out) == out                    # applied twice: the same
    assert shown("\udcff\t\r") == "\\udcff\\t\\r"  # a lone surrogate cannot even be printed
    assert shown(b"\x1b") == "b'\\x1b'"           # not a str: its str()


def _no_raw(text):
    return not any(c in text for c in RAW)


def test_status_text_is_escaped_by_collect_events_and_analyze(tmp_path):
    """A board sends its HELLO and a CRASH whose message is HOSTILE (no data): `zeal collect`
    shows the STATUS line (stderr) and the failed device (summary, stdout) escaped; `zeal
    events` lists it escaped, `zeal events --json` keeps the message as data; `zeal analyze`
    names the device's errors escaped."""
    db = str(tmp_path / "z.db")
    with Pty() as line:
        proc = subprocess.Popen(collect_cmd() + ["--port", line.port, "--db", db,
                                                 "--until-stopped", "--duration", "20"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                                text=True)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            line.write(hello(1) + wire.encode_status(code=wire.CRASH, ticks=3,
                                                     message=HOSTILE))
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 3, (out, err)
    assert _no_raw(err) and _no_raw(out)
    escaped = shown(HOSTILE)
    shown_line = [ln for ln in err.splitlines() if "CRASH" in ln]
    assert len(shown_line) == 1 and shown_line[0].endswith("CRASH: " + escaped)
    assert not [ln for ln in err.splitlines() if ln.startswith("zeal: fake line")]
    assert [ln for ln in out.splitlines() if "reported CRASH: " + escaped in ln]

    def zeal(*args):
        return subprocess.run([sys.executable, "-m", "zeal.cli", *args], capture_output=True,
                              text=True, env=ENV)

    done = zeal("events", "--db", db, "--kind", "status")
    assert done.returncode == 0, done.stderr
    assert _no_raw(done.stdout) and escaped in done.stdout
    assert len(done.stdout.strip().splitlines()) == 1  # the \n inside stays inside its line
    done = zeal("events", "--db", db, "--kind", "status", "--json")
    (row,) = json.loads(done.stdout)
    assert row["detail"].endswith(HOSTILE)  # data, as the device sent it
    assert _no_raw(done.stdout)             # JSON escapes it itself
    done = zeal("analyze", "--db", db)
    assert done.returncode == 1 and "CRASH" in done.stderr
    assert _no_raw(done.stderr) and "\\x1b[2J" in done.stderr
