"""A collector killed (SIGKILL) mid-stream loses nothing it committed, and collecting the
whole stream again stores each frame exactly once.

The device's output is recorded once (the real firmware in production mode, through a pty),
then served slowly through a pty this test controls to `zeal collect` running as a separate
process.
"""
import signal
import sqlite3
import subprocess
import threading
import time

import pytest

from zeal import wire
from zeal.analysis import datasets
from zeal.mechanism.grid import profile as P
from zeal.wire import transport
from zeal.board.firmware import locate_micropython
from zeal.collect.virtual import Pty, VirtualDevice

from conftest import HUMIDITY
from test_collector import ENV, collect_cmd, count, wait_for

pytestmark = pytest.mark.skipif(locate_micropython() is None,
                                reason="the MicroPython unix port is not installed")

FRAMES = "SELECT d.device_id, f.boot, f.seq, f.crc, f.payload FROM frames f " \
         "JOIN devices d ON d.id = f.device"


def record(prof, readings):
    """Every byte the device writes, until its STATUS STOPPED."""
    with VirtualDevice(readings, profile=prof, batch=16) as dev:
        port = transport.open_port(dev.port)
        dev.start()
        dec, out, done = wire.Decoder([prof]), bytearray(), False
        deadline = time.monotonic() + 60
        while not done and time.monotonic() < deadline:
            chunk = transport.read_chunk(port)
            out += chunk
            done = any(isinstance(e, wire.Status) and e.code_name == "STOPPED"
                       for e in dec.feed(chunk))
        port.close()
        assert done and dev.wait(10) == 0
    return bytes(out)


def serve(line, data, *, piece, pause, stop=None):
    for i in range(0, len(data), piece):
        if stop is not None and stop.is_set():
            return
        line.write(data[i:i + piece])
        time.sleep(pause)


def test_sigkill_mid_stream_then_recollect(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    stream = record(prof, [float(x) for x in datasets.aarhus("humidity", 4000)])
    (tmp_path / "stream.bin").write_bytes(stream)
    ref = wire.Decoder([prof])
    want = {(b.device_id, b.boot, b.seq, b.crc, b.payload) for b in ref.feed(stream)
            if isinstance(b, wire.Batch)}
    assert len(want) == 250 and sum(ref.rejected.values()) == 0

    db = str(tmp_path / "z.db")
    prof_file = tmp_path / "p.json"
    prof_file.write_text(prof.to_json())
    cmd = collect_cmd() + ["--db", db, "--profile", str(prof_file), "--until-stopped"]
    with Pty() as line:
        first = subprocess.Popen(cmd + ["--port", line.port], env=ENV,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stop = threading.Event()
        server = threading.Thread(target=serve, args=(line, stream),
                                  kwargs=dict(piece=64, pause=0.02, stop=stop))
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            server.start()  # ~3 s for the whole stream: the kill lands mid-stream
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") >= 60)
            first.send_signal(signal.SIGKILL)
            first.wait()
        finally:
            stop.set()
            if server.is_alive():
                server.join()
            if first.poll() is None:
                first.kill()
                first.wait()
        con = sqlite3.connect(db)
        before = set(con.execute(FRAMES).fetchall())
        con.close()
        assert 60 <= len(before) < len(want)  # killed mid-stream
        assert before <= want

        second = subprocess.Popen(cmd + ["--port", line.port], env=ENV, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 2)
            serve(line, stream, piece=4096, pause=0)
            out, err = second.communicate(timeout=30)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
    assert second.returncode == 0, err
    fresh = len(want) - len(before)
    assert "stored %d reports in %d frames" % (16 * fresh, fresh) in out
    assert "already stored: %d frames" % len(before) in out
    con = sqlite3.connect(db)
    rows = con.execute(FRAMES).fetchall()
    con.close()
    assert len(rows) == len(set(rows)) == len(want)  # none duplicated
    assert set(rows) == want                         # none lost, every payload as sent
