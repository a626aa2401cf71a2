"""Progress bars (issue 22): long work draws a bar on stderr when stderr is a terminal -- and
only then, and never with --json: `zeal perturb` (bytes read), `zeal compress` (codecs
measured), `zeal export --format csv` (rows written), `zeal reproduce` (its longest step, the
exact grids of CRandTR; the other steps are progress lines). Each command runs with its stderr on a
pseudo-terminal, then on a pipe, then (on the terminal) with --json."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from conftest import ROOT

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host"))


def _stderr(argv, cwd, tty):
    """(exit status, what the command wrote on stderr) with stderr a terminal or a pipe."""
    if not tty:
        done = subprocess.run([sys.executable, "-m", "zeal", *argv], cwd=str(cwd), env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        return done.returncode, done.stderr.decode()
    master, slave = pty.openpty()
    # a terminal of 24 x 100 (a pty starts at 0 x 0, where a bar has no room to draw)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        proc = subprocess.Popen([sys.executable, "-m", "zeal", *argv], cwd=str(cwd), env=ENV,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        got = bytearray()
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other end closed: the command is done
                break
            if not chunk:
                break
            got.extend(chunk)
        return proc.wait(timeout=300), got.decode(errors="replace")
    finally:
        os.close(master)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("bars")
    run = lambda *a: subprocess.run([sys.executable, "-m", "zeal", *a], cwd=str(d), env=ENV,
                                    check=True, capture_output=True)
    run("profile", "--range", "0", "100", "--epsilon", "1", "--bits", "4", "-o", "p.json")
    (d / "r.txt").write_text("".join("%d.5\n" % (i % 100) for i in range(20000)))
    run("demo", "--count", "400", "--devices", "2", "--db", "demo.db", "--json")
    return d


@pytest.mark.parametrize("argv, bar", [
    (["perturb", "--profile", "p.json", "--input", "r.txt", "-o", "out.txt"], "B/s"),
    (["compress", "--db", "demo.db", "--out", "a.zeal"], "measuring codecs"),
    (["export", "--db", "demo.db", "--format", "csv", "-o", "x.csv"], "writing CSV"),
    (["reproduce", "--quick", "--out", "figures"], "CRandTR: humidity exact mechanism:"),
])
def test_a_bar_on_a_terminal_only(work, argv, bar):
    rc, err = _stderr(argv, work, tty=True)
    assert rc == 0 and bar in err, err[-2000:]
    rc, err = _stderr(argv, work, tty=False)
    assert rc == 0 and bar not in err and "\r" not in err, err[-2000:]
    if argv[0] not in ("perturb", "reproduce"):  # (no --json: their output is files)
        rc, err = _stderr(argv + ["--json"], work, tty=True)
        assert rc == 0 and bar not in err, err[-2000:]
