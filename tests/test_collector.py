"""Collector unit tests: hand-made frame streams (the host's reference encoder) served through
ptys and sockets; events, rejects, VECTOR frames, an unplugged port, user mistakes, Ctrl-C."""
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from zeal import wire
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal.cli import main as cli_main
from zeal.collect.collector import Collector
from zeal.collect.store import Store, StoreError
from zeal.wire.transport import PortBusy, PortNotFound, open_port
from zeal.collect.virtual import Pty

from conftest import HOST, HUMIDITY

PROF = P.from_bits(*HUMIDITY, 1.0, 4)
FP = bytes.fromhex(PROF.fingerprint)[:8]
DEV = b"board-01"
ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))


def nonce(boot):
    """A session nonce per boot (a real board draws it fresh at every boot)."""
    return bytes([boot + 1]) * 8


def hello(boot, flags=0, dev=DEV, next_seq=0):
    return wire.encode_hello(device_id=dev, fingerprint=FP, boot=boot, bits=PROF.bits,
                             batch=8, flags=flags, nonce=nonce(boot), next_seq=next_seq)


LOWS = [reports.to_low(PROF, PROF.k_lo + j) for j in range(PROF.n_cells)]  # on the grid


def data(boot, seq, flags=0, dev=DEV, n=8):
    return wire.encode_data(seq=seq, bits=PROF.bits,
                            reports=[LOWS[(seq + i) % len(LOWS)] for i in range(n)],
                            session=wire.session_bytes(dev, FP, boot, nonce(boot)), flags=flags)


def status(code=0, ticks=0, flags=0, message=None):
    return wire.encode_status(code=code, ticks=ticks,
                              message=("stopped" if code == 4 else "") if message is None
                              else message, flags=flags)


STOP = status(4)


def background(col, **kw):
    """Run the collector in a thread (the store is used only there: opened inside)."""
    out = {}

    def go():
        try:
            out["progress"] = col().run(**kw)
        except Exception as exc:  # reported to the test
            out["error"] = exc

    t = threading.Thread(target=go)
    t.start()
    return t, out


def wait_for(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def count(db, sql):
    """One figure from the collector's database (0 until it exists), via its own reader."""
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    finally:
        con.close()


def run_stream(tmp_path, stream, *, keep_vector=False, profiles=(PROF,)):
    """Serve `stream` on a pty to a collector that stops at STATUS STOPPED."""
    tmp_path.mkdir(exist_ok=True)
    db = str(tmp_path / "z.db")
    links = count(db, "SELECT COUNT(*) FROM links")
    with Pty() as line:
        t, out = background(lambda: Collector([line.port], Store(db), profiles=profiles,
                                              keep_vector=keep_vector),
                            until_stopped=True, duration=20)
        # pyserial flushes the input when it opens the port: write only once it is open
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == links + 1)
        line.write(stream)
        t.join()
    assert "error" not in out, out.get("error")
    return out["progress"], Store(db)


def store_port(store):
    """The one port a test's collector read."""
    return store._engine.db.execute("SELECT port FROM links").fetchone()[0]


def test_events_reboot_gap_rejects_status(tmp_path):
    raw = bytearray(wire.cobs_decode(data(1, 5)[:-1]))
    raw[5] ^= 0x40  # one flipped payload bit: fails its CRC (kept unresolved; frame 5 lost)
    bad = wire.cobs_encode(raw) + b"\0"
    stream = (hello(1) + data(1, 0) + data(1, 1) + data(1, 4)       # gap: 2, 3
              + b"boot log text\x00" + bytes(bad) + data(1, 6) + status(0, 32)
              + hello(2) + data(2, 0) + data(2, 1) + STOP)
    progress, store = run_stream(tmp_path, stream)
    with store:
        ref = wire.Decoder([PROF])
        ref.feed(stream)
        assert progress.reports == 8 * 6 and progress.frames == 6
        assert progress.gaps == ref.lost == 3 and progress.reboots == 1
        assert progress.rejects == ref.rejected and ref.unresolved["crc"] == 1
        assert progress.unresolved == 1 and len(store.unresolved(store_port(store))) == 1
        ev = store.event_counts()
        assert ev[(DEV, "reboot", "boot 2 fingerprint %s" % FP.hex())] == 1
        assert ev[(DEV, "session", "boot 1 fingerprint %s" % FP.hex())] == 1
        # one loss row per session, set from what is stored (zeal.collect.accounting)
        assert ev[(DEV, "gap", "missing: sent 7; heard 0-6; stored 4; refused 0")] == 3
        assert ev[(DEV, "gap", "missing: sent 2; heard 0-1; stored 2; refused 0")] == 0
        assert progress.lost == {"gap": 3}
        assert ev[(DEV, "status", "OK ticks=32 frames_dropped=0")] == 1
        assert ev[(DEV, "status", "STOPPED ticks=0 frames_dropped=0 stopped")] == 1
        assert sum(n for (_, k, r), n in ev.items() if k == "reject") == sum(ref.rejected.values())
        assert ev[(None, "connect", "")] == 1
        assert store.link_bytes() == len(stream) == progress.bytes
        closed = store._engine.db.execute("SELECT COUNT(*) FROM links WHERE closed IS NULL").fetchone()
        assert closed[0] == 0
        assert sorted((r[1], r[2]) for r in store.frames()) == [(1, 0), (1, 1), (1, 4), (1, 6),
                                                                (2, 0), (2, 1)]


def test_vector_frames_are_not_stored_by_default(tmp_path):
    v = wire.FLAG_VECTOR
    stream = hello(0, v) + data(0, 0, v) + data(0, 1, v) + status(4, flags=v)
    progress, store = run_stream(tmp_path / "a", stream)
    with store:
        assert store.frames() == [] and store.frames(vector=True) == []
        assert progress.reports == 0 and progress.rejects["vector"] == 2
        assert progress.errors == 0  # not line damage
    progress, store = run_stream(tmp_path / "b", stream, keep_vector=True)
    with store:
        assert store.frames() == [] and len(store.frames(vector=True)) == 2
        assert progress.reports == 16


def test_unknown_profile_is_refused_and_counted(tmp_path):
    stream = hello(1) + data(1, 0) + STOP
    progress, store = run_stream(tmp_path, stream, profiles=())
    store.close()
    assert progress.reports == 0 and progress.rejects["unknown_profile"] == 1
    # The profile given later (or found in the store) makes the same stream readable.
    progress, store = run_stream(tmp_path, stream, profiles=(PROF,))
    store.close()
    assert progress.reports == 8
    progress, store = run_stream(tmp_path, hello(2) + data(2, 0) + STOP, profiles=())
    store.close()
    assert progress.reports == 8  # known from the store now


def test_unplugged_port_is_retried(tmp_path):
    """The port's path vanishes (a USB adapter pulled) and comes back: the collector records
    the disconnect, retries, reconnects and carries on with the same line state."""
    db = str(tmp_path / "z.db")
    alias = str(tmp_path / "ttyZEAL")
    first = Pty()
    os.symlink(first.port, alias)
    t, out = background(lambda: Collector([alias], Store(db), profiles=[PROF]),
                        until_stopped=True, duration=30)
    links = lambda: count(db, "SELECT COUNT(*) FROM links")  # noqa: E731
    wait_for(lambda: os.path.exists(db) and links() == 1)
    first.write(hello(1) + data(1, 0) + data(1, 1) + data(1, 2)[:5])  # cut mid-frame
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") == 2)
    first.close()
    os.remove(alias)
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM events WHERE kind = 'disconnect'") == 1)
    time.sleep(1.5)  # at least one failed retry while the path is missing
    with Pty() as second:
        os.symlink(second.port, alias)
        wait_for(lambda: links() == 2)
        second.write(data(1, 3) + data(1, 5) + STOP)  # no new HELLO: same session
        t.join()
    assert "error" not in out, out.get("error")
    progress = out["progress"]
    assert progress.frames == 4 and progress.disconnects == 1
    assert progress.gaps == 2  # frame 2 (cut by the unplug) and frame 4
    with Store(db) as store:
        ev = store.event_counts()
        assert ev[(DEV, "connect", "")] == 1 and ev[(None, "connect", "")] == 1
        assert sum(n for (_, k, _), n in ev.items() if k == "disconnect") == 1
        assert [r[2] for r in store.frames()] == [0, 1, 3, 5]
        assert store._engine.db.execute("SELECT COUNT(*) FROM links WHERE closed IS NULL "
                                "OR bytes = 0").fetchone()[0] == 0


def test_socket_url(tmp_path):
    """Any pyserial URL: here socket://, the line a network serial server gives."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    url = "socket://127.0.0.1:%d" % srv.getsockname()[1]
    db = str(tmp_path / "z.db")
    t, out = background(lambda: Collector([url], Store(db), profiles=[PROF]),
                        until_stopped=True, duration=20)
    conn, _ = srv.accept()
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)  # its open drains input
    stream = hello(1) + b"".join(data(1, s) for s in range(50)) + STOP
    for i in range(0, len(stream), 7):  # small pieces: frames split across reads
        conn.sendall(stream[i:i + 7])
    t.join()
    conn.close()
    srv.close()
    assert out["progress"].frames == 50 and out["progress"].errors == 0


def test_missing_port(tmp_path, capsys):
    """An absent port is waited for (the README's promise: retried every second), with one
    line on stderr; at the end of a run during which it never appeared the summary says so and
    the exit status is 1. Without waiting (the library's wait_for_ports=False) it is
    PortNotFound at once."""
    missing = str(tmp_path / "no-such-tty")
    with Store(tmp_path / "z.db") as store:
        with pytest.raises(PortNotFound):
            Collector([missing], store, wait_for_ports=False).run(duration=1)
    rc = cli_main(["collect", "--port", missing, "--db", str(tmp_path / "z.db"),
                   "--duration", "1.2"])
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err
    assert err == ("zeal: no port %s (is the board plugged in? `zeal devices` lists the boards "
                   "attached); waiting for it (tried every 1 s)\n" % missing), err
    assert "error: %s was absent for the whole run" % missing in out


def test_port_absent_at_the_start_is_collected_once_it_appears(tmp_path, capsys):
    """The port's path does not exist when collect starts; it appears later (a board plugged
    in): its frames are stored and the run ends normally."""
    db = str(tmp_path / "z.db")
    alias = str(tmp_path / "ttyLATE")
    lines = []
    t, out = background(lambda: Collector([alias], Store(db), profiles=[PROF], log=lines.append),
                        until_stopped=True, duration=30)
    wait_for(lambda: lines)
    assert lines[0].startswith("zeal: no port %s (is the board plugged in?" % alias)
    time.sleep(1.2)  # at least one retry while absent
    with Pty() as line:
        os.symlink(line.port, alias)
        wait_for(lambda: os.path.exists(db) and count(db, "SELECT COUNT(*) FROM links") == 1)
        line.write(hello(1) + data(1, 0) + data(1, 1) + STOP)
        t.join()
    assert "error" not in out, out.get("error")
    assert out["progress"].frames == 2 and out["progress"].never_opened == []


@pytest.mark.parametrize("port, why", [
    ("DIR", "a directory, not a serial port"),
    ("FILE", "a regular file, not a serial port"),
    ("nosuch://x", "unknown URL scheme 'nosuch'"),
    ("socket://no-port-here", "needs HOST:PORT"),
])
def test_a_name_that_can_never_be_a_port_is_one_line_at_once(tmp_path, capsys, port, why):
    (tmp_path / "plain").write_text("")
    port = {"DIR": str(tmp_path), "FILE": str(tmp_path / "plain")}.get(port, port)
    start = time.monotonic()
    rc = cli_main(["collect", "--port", port, "--db", str(tmp_path / "z.db")])
    err = capsys.readouterr().err
    assert rc == 1 and time.monotonic() - start < 5
    assert err == "zeal: cannot open %s: %s" % (port, err.split(": ", 2)[2]) and why in err
    assert err.count("\n") == 1


def test_busy_port():
    with Pty() as line, open_port(line.port):
        with pytest.raises(PortBusy):
            open_port(line.port)


def test_busy_database(tmp_path, capsys):
    db = str(tmp_path / "z.db")
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program is writing
    try:
        with Pty() as line:
            with Store(db, timeout=0.2) as store:
                with pytest.raises(StoreError, match="busy"):
                    Collector([line.port], store).run(duration=1)
            rc = cli_main(["collect", "--port", line.port, "--db", db])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert rc == 1 and "busy" in err and err.startswith("zeal: ") and "Traceback" not in err


def test_unreadable_profile(tmp_path, capsys):
    with Pty() as line:
        rc = cli_main(["collect", "--port", line.port, "--db", str(tmp_path / "z.db"),
                           "--profile", str(tmp_path / "nope.json")])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("zeal: cannot read profile")


def collect_cmd():
    """`zeal collect` as a subprocess."""
    return [sys.executable, "-m", "zeal.cli", "collect"]


def test_ctrl_c_stops_cleanly(tmp_path, capfd):
    db = str(tmp_path / "z.db")
    prof_file = tmp_path / "p.json"
    prof_file.write_text(PROF.to_json())
    capfd.readouterr()
    with Pty() as line:
        proc = subprocess.Popen(collect_cmd() + ["--port", line.port, "--db", db, "--profile",
                                                 str(prof_file)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                                text=True)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            line.write(hello(1) + b"".join(data(1, s) for s in range(20)))
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") == 20)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # Ctrl-C: the summary, then `zeal: interrupted` and 130, as every command ends on it
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.rstrip().splitlines()[-1] == "zeal: interrupted"
    assert "stored 160 reports in 20 frames" in out and "ended: interrupted" in out
    assert count(db, "SELECT COUNT(*) FROM links WHERE closed IS NULL") == 0
