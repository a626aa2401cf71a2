"""Silent losses in the collector (issue 7, items 7, 8, 15), each reproduced by a test that
failed before its fix: a frame completed by the delimiter fed at reconnect, a reader thread
killed by an unexpected exception, more ports than select() can serve, events doubled by
re-ingesting a stream, two numbers for one report target, a device id on two ports, device
STATUS errors invisible to the user."""
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from zeal.analysis import analyze as A
from zeal.collect import collector as C
from zeal import wire
from zeal.wire import transport
from zeal.cli import main as cli_main
from zeal.collect.collector import Collector
from zeal.errors import ZealError
from zeal.collect.store import Store
from zeal.collect.virtual import Pty

from test_collector import (DEV, ENV, FP, PROF, STOP, background, collect_cmd, count, data,
                            hello, run_stream, status, wait_for)


def test_frame_completed_by_the_reconnect_delimiter_is_stored(tmp_path):
    """The line drops after a frame's last byte but before its delimiter: the 0x00 the
    collector feeds at reconnect completes it, and it is stored like any other frame (it was
    decoded and thrown away, and not even counted as lost, since the next frame follows it)."""
    db = str(tmp_path / "z.db")
    alias = str(tmp_path / "ttyZEAL")
    first = Pty()
    os.symlink(first.port, alias)
    t, out = background(lambda: Collector([alias], Store(db), profiles=[PROF]),
                        until_stopped=True, duration=30)
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
    first.write(hello(1) + data(1, 0) + data(1, 1) + data(1, 2)[:-1])  # all but its 0x00
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") == 2)
    first.close()
    os.remove(alias)
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM events WHERE kind = 'disconnect'") == 1)
    with Pty() as second:
        os.symlink(second.port, alias)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 2)
        second.write(data(1, 3) + STOP)
        t.join()
    assert "error" not in out, out.get("error")
    progress = out["progress"]
    assert progress.frames == 4 and progress.gaps == 0 and progress.errors == 0
    with Store(db) as store:
        assert [r[2] for r in store.frames()] == [0, 1, 2, 3]


def test_a_reader_that_fails_is_reported_and_retried(tmp_path, monkeypatch):
    """Any exception in a port's reader (here a RuntimeError from the first read; in the field
    pyserial's select() on a descriptor >= 1024, or a bug) used to end its thread silently:
    the port was never read again and the run exited 0. Now: an event, a log line, the port
    reopened, its data stored, and a non-zero exit status."""
    real = transport.read_chunk
    calls = []

    def flaky(port):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real(port)

    monkeypatch.setattr(C.transport, "read_chunk", flaky)
    db = str(tmp_path / "z.db")
    said = []
    with Pty() as line:
        t, out = background(lambda: Collector([line.port], Store(db), profiles=[PROF],
                                              log=said.append),
                            until_stopped=True, duration=30)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
        line.write(b"\x00")  # something to read (an idle line is not read, only watched)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 2)  # reopened
        line.write(hello(1) + data(1, 0) + data(1, 1) + STOP)
        t.join()
    assert "error" not in out, out.get("error")
    pr = out["progress"]
    assert pr.frames == 2 and pr.reader_errors == 1
    assert any("RuntimeError: boom" in s and line.port in s for s in said)
    assert C.exit_status(pr) == C.EXIT_READER_ERROR
    with Store(db) as store:
        ev = store.event_counts()
        assert ev[(None, "reader_error", "RuntimeError: boom")] == 1
        assert ev[(None, "disconnect", "reader error: RuntimeError: boom")] == 1


def test_more_ports_than_select_can_serve_are_refused(tmp_path):
    with Store(tmp_path / "z.db") as store:
        # measured with the store open, as the collector measures it (its files take fds)
        cap, why = transport.port_capacity()
        assert cap is not None and 0 < cap < transport.SELECT_LIMIT // transport.FDS_PER_PORT
        ports = [str(tmp_path / ("tty%d" % i)) for i in range(cap + 1)]
        with pytest.raises(ZealError, match=r"at most \d+") as refused:
            Collector(ports, store)
        # other threads of the test session may hold a descriptor or two for a moment
        said = int(re.search(r"at most (\d+)", str(refused.value)).group(1))
        assert cap - 2 <= said <= cap
    # the open-file limit too, through the CLI: one line, before any port is opened
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
            "from zeal.cli import main; sys.exit(main(sys.argv[1:]))")
    argv = ["collect", "--db", str(tmp_path / "y.db")]
    for i in range(20):
        argv += ["--port", str(tmp_path / ("tty%d" % i))]
    done = subprocess.run([sys.executable, "-c", code] + argv, capture_output=True, text=True,
                          env=ENV, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("zeal: 20 ports are more than") and "ulimit -n" in lines[0]


def test_capacity_keeps_every_descriptor_below_the_select_limit():
    """With 150 ptys open in this process (300 descriptors), open as many ports as
    port_capacity then allows: every descriptor pyserial got is below 1024, so select()
    works on each (above it, pyserial's read raises ValueError)."""
    lines, ports = [], []
    try:
        for _ in range(150):
            lines.append(Pty())
        cap, _ = transport.port_capacity()
        assert 0 < cap < len(lines)
        for ln in lines[:cap]:
            ports.append(transport.open_port(ln.port))
        top = max(max(p.fd, p.pipe_abort_read_r, p.pipe_abort_read_w, p.pipe_abort_write_r,
                      p.pipe_abort_write_w) for p in ports)
        assert top < transport.SELECT_LIMIT
        assert transport.read_chunk(ports[-1]) == b""  # select() on the highest works
    finally:
        for p in ports:
            p.close()
        for ln in lines:
            ln.close()


def test_reingesting_a_stream_does_not_double_events(tmp_path):
    """The README's kill-and-recollect recovery feeds the same stream twice: frames were kept
    once, but every gap, reject, session, reboot and status was stored again, and analyze
    doubled them."""
    raw = bytearray(wire.cobs_decode(data(1, 5)[:-1]))
    raw[5] ^= 0x40
    stream = (hello(1) + data(1, 0) + data(1, 3) + b"boot text\x00" + bytes(wire.cobs_encode(raw))
              + b"\x00" + data(1, 6) + status(0, 32) + hello(2) + data(2, 0) + b"\xff\x01\x00"
              + STOP)
    _, store = run_stream(tmp_path, stream)
    with store:
        once = store.event_counts()
        doc1 = A.analyze(store)["overall"]
    _, store = run_stream(tmp_path, stream)
    with store:
        twice = store.event_counts()
        doc2 = A.analyze(store)["overall"]
    run_only = ("connect", "disconnect")
    stream_events = {k: n for k, n in once.items() if k[1] not in run_only}
    assert stream_events == {k: n for k, n in twice.items() if k[1] not in run_only}
    assert sum(n for k, n in stream_events.items() if k[1] == "gap") == 2 + 2  # 1,2 and 4,5
    assert sum(n for k, n in stream_events.items() if k[1] == "reject") >= 2
    for key in ("rejected_frames", "gaps", "reboots"):
        assert doc1[key] == doc2[key]
    assert twice[(None, "connect", "")] == 2


def test_the_report_target_names_the_committed_number(tmp_path):
    """`--reports N` printed "ended: 20224 reports stored" and "stored 20736 reports": the
    reason was written before the final commit. One number now, the committed one."""
    db = str(tmp_path / "z.db")
    stop = threading.Event()
    with Pty() as line:
        t, out = background(lambda: Collector([line.port], Store(db), profiles=[PROF]),
                            reports=400, duration=30)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)

        def stream():
            line.write(hello(1))
            seq = 0
            while not stop.is_set():
                line.write(b"".join(data(1, s) for s in range(seq, seq + 20)))
                seq += 20
                time.sleep(0.002)

        writer = threading.Thread(target=stream, daemon=True)
        writer.start()
        t.join()
        stop.set()
        while writer.is_alive():  # nobody reads the line any more: unblock the writer
            line.discard_input()
            writer.join(0.05)
    pr = out["progress"]
    assert pr.reports >= 400
    assert pr.reason == "%d reports stored" % pr.reports
    lines = C.summary_lines(pr)
    assert lines[0].startswith("stored %d reports" % pr.reports)


def test_a_device_id_on_two_ports_at_once_is_a_warning(tmp_path):
    """Two boards with the same id (the unix port's b"unix" fallback): both kept (distinct
    session nonces), and the user told."""
    db = str(tmp_path / "z.db")
    said = []
    with Pty() as a, Pty() as b:
        t, out = background(lambda: Collector([a.port, b.port], Store(db), profiles=[PROF],
                                              log=said.append),
                            until_stopped=True, duration=30)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 2)
        a.write(hello(1) + data(1, 0) + data(1, 1))
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") == 2)
        b.write(hello(3) + data(3, 0) + data(3, 1))  # same DEV, another boot/nonce
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") == 4)
        a.write(STOP)
        b.write(STOP)
        t.join()
    pr = out["progress"]
    assert pr.frames == 4 and pr.duplicate_ids == 1
    assert [s for s in said if "two ports" in s and DEV.hex() in s]
    with Store(db) as store:
        dup = [e for e in store.events() if e["kind"] == "duplicate_id"]
        assert len(dup) == 1 and dup[0]["device"] == DEV.hex()
    assert any("two ports" in ln for ln in C.summary_lines(pr))


def no_profile_stream(message="no zeal_profile.json"):
    h = wire.encode_hello(device_id=DEV, fingerprint=bytes(8), boot=1, bits=0, batch=1,
                          nonce=b"n" * 8)
    return h + status(wire.NO_PROFILE, message=message)


def test_collect_shows_device_status_and_exits_3_on_an_error_without_data(tmp_path):
    """A board that reports NO_PROFILE looked like a board that sends nothing: "stored 0
    reports ... rejected frames: none", exit 0."""
    db = str(tmp_path / "z.db")
    with Pty() as line:
        proc = subprocess.Popen(collect_cmd() + ["--port", line.port, "--db", db,
                                                 "--until-stopped", "--duration", "20"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                                text=True)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            line.write(status(wire.OK, ticks=5) + no_profile_stream())
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 3, (out, err)
    shown = [ln for ln in err.splitlines() if "NO_PROFILE" in ln]
    # the device is named as people read it (its id is printable text here)
    assert len(shown) == 1 and wire.device_name(DEV) in shown[0]
    assert "no zeal_profile.json" in shown[0]
    assert not [ln for ln in err.splitlines() if " OK" in ln]  # heartbeats only if --verbose
    assert "reported NO_PROFILE" in out and "sent no data" in out
    assert "ended: every device sent STOPPED or an error status" in out
    # the error is stored: zeal events lists it, zeal analyze names the device
    done = subprocess.run([sys.executable, "-m", "zeal.cli", "events", "--db", db, "--json",
                           "--kind", "status"], capture_output=True, text=True, env=ENV)
    rows = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert [(r["detail"].split()[0], r["device"]) for r in rows] == \
        [("OK", None), ("NO_PROFILE", DEV.hex())]  # the OK came before any HELLO
    done = subprocess.run([sys.executable, "-m", "zeal.cli", "analyze", "--db", db],
                          capture_output=True, text=True, env=ENV)
    # analyze names a device by its id as text when the id is printable ASCII, else in hex
    assert done.returncode == 1 and "NO_PROFILE" in done.stderr
    assert DEV.decode("ascii", "replace") in done.stderr or DEV.hex() in done.stderr


def test_an_error_status_with_data_is_not_exit_3(tmp_path):
    """A device that sent data and then an error (a CRASH mid-run) is shown but exits 0."""
    stream = hello(1) + data(1, 0) + status(wire.CRASH, message="ValueError")
    said = []
    db = str(tmp_path / "z.db")
    with Pty() as line:
        t, out = background(lambda: Collector([line.port], Store(db), profiles=[PROF],
                                              log=said.append),
                            until_stopped=True, duration=20)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
        line.write(stream)
        t.join()
    pr = out["progress"]
    assert pr.frames == 1 and pr.failed_devices == [] and C.exit_status(pr) == 0
    assert [s for s in said if "CRASH: ValueError" in s]


def test_verbose_shows_heartbeats(tmp_path):
    said = []
    db = str(tmp_path / "z.db")
    with Pty() as line:
        t, out = background(lambda: Collector([line.port], Store(db), profiles=[PROF],
                                              log=said.append, verbose=True),
                            until_stopped=True, duration=20)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
        line.write(hello(1) + status(wire.OK, ticks=64) + STOP)
        t.join()
    assert [s for s in said if " OK" in s] and [s for s in said if "STOPPED" in s]


def test_cli_rejects_a_bad_device_filter(tmp_path, capsys):
    db = str(tmp_path / "z.db")
    Store(db).close()
    # neither hex nor a name (a name is up to 8 printable characters, as the tables show it)
    for bad in ("not-a-device-name", "a b"):
        assert cli_main(["events", "--db", db, "--device", bad]) == 1
        err = capsys.readouterr().err
        assert err.startswith("zeal: --device") and err.count("\n") == 1
