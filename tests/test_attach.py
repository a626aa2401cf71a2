"""Nothing lost on attach (issue 7, item 5), through virtual boards: a collector that opens the
line while the board streams (late attach), or that is killed with SIGKILL and started again
mid-stream, stores every report the board sends after the attach — counted exactly.

The boards run in vector mode (a given key: every report is known from the readings), with
hello_every = 1000 frames, so no periodic HELLO comes during the run: only the collector's
`!hello` request and the unresolved path (DATA kept raw, resolved when the HELLO arrives) can
save the frames sent before that HELLO.

What the board sent before the attach is fixed exactly: the test reads the line itself (a
"tap") while the board streams with nobody attached, then freezes the firmware (SIGSTOP),
reads what is left, queues the next readings in its replay input, lets the collector open the
port (it sends `!hello`, which the virtual board puts behind those readings: the firmware
reads them first, so their DATA leaves before the HELLO), and only then lets the firmware
run again (SIGCONT). Every DATA frame the tap did not see was sent after the attach.
"""
import signal
import subprocess
import threading
import time
from fractions import Fraction

import pytest

from zeal import wire
from zeal.analysis import datasets
from zeal.mechanism.grid import profile as P
from zeal.wire import transport
from zeal.collect.collector import Collector
from zeal.board.firmware import locate_micropython
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.grid.reports import offsets_from_low
from zeal.collect.store import Store
from zeal.collect.virtual import VirtualDevice
from zeal.mechanism.core.words import CounterWords

from conftest import HUMIDITY
from test_collector import ENV, collect_cmd, count, wait_for

pytestmark = pytest.mark.skipif(locate_micropython() is None,
                                reason="the MicroPython unix port is not installed")

KEY = bytes(range(32))
PROF = P.from_bits(*HUMIDITY, 1.0, 8)
BATCH = 16
READINGS = [float(x) for x in datasets.aarhus("humidity", 3200)]
WANT = None


def reference():
    """Every report the board makes from READINGS (vector mode: known from the key)."""
    global WANT
    if WANT is None:
        mech = ExactZeal(profile=PROF, words=CounterWords(KEY))
        WANT = [mech.sample_offset(Fraction(x)) for x in READINGS]
    return WANT


def board(**kw):
    return VirtualDevice(READINGS[:1000], profile=PROF, vector_key=KEY, batch=BATCH,
                         hello_every=1000, status_every=0, live=True, device_id=b"attach",
                         **kw)


def tap(port, dec, *, until, quiet=0.3, timeout=30.0):
    """Read the line (as nobody's collector) until `until(dec)` holds and it has been quiet
    for `quiet` seconds; DATA frames seen are counted in dec['seqs'] (u16 from the body)."""
    last = time.monotonic()
    deadline = last + timeout
    while time.monotonic() < deadline:
        chunk = transport.read_chunk(port)
        if chunk:
            last = time.monotonic()
            for f in dec["framer"].feed(chunk):
                if isinstance(f, wire.SealedData):
                    dec["seqs"].append(f.body[1] | f.body[2] << 8)
        elif until(dec) and time.monotonic() - last >= quiet:
            return
    raise AssertionError("the tap timed out")


def stored(db):
    """seq -> offsets of the stored (vector) frames."""
    with Store(db) as store:
        rows = store.frames(vector=True)
    out = {}
    for r in rows:
        lows = wire.unpack_reports(r[5], r[4], PROF.bits)
        out[r[2]] = [int(j) for j in offsets_from_low(PROF, lows)]
    return out


def check_after_attach(got, first_after, total_frames):
    """Every frame from `first_after` on is stored, with exactly the reports the board made."""
    want = reference()
    for seq in range(first_after, total_frames):
        assert seq in got, "frame %d (sent after the attach) is missing" % seq
        assert got[seq] == want[seq * BATCH:(seq + 1) * BATCH], seq


def test_late_attach_stores_everything_sent_after_it(tmp_path):
    db = str(tmp_path / "z.db")
    with board() as dev:
        line = transport.open_port(dev.port)
        dev.start()
        seen = {"framer": wire.Deframer(), "seqs": []}
        tap(line, seen, until=lambda d: len(d["seqs"]) >= 1000 // BATCH - 1)
        dev.pause()
        tap(line, seen, until=lambda d: True, quiet=0.2)
        assert seen["framer"].pending == 0  # frames leave whole
        line.close()
        before = len(seen["seqs"])
        assert seen["seqs"] == list(range(before)) and before == 1000 // BATCH
        # the next 2000 readings wait in the replay input; the collector's !hello goes after
        dev.feed(READINGS[1000:3000])
        wait_for(lambda: dev.lines_written == 3000)
        col = {}

        def run():
            with Store(db) as store:
                c = Collector([dev.port], store, profiles=[PROF], keep_vector=True,
                              log=lambda s: None)
                col["c"] = c
                col["progress"] = c.run(until_stopped=True, duration=60)

        t = threading.Thread(target=run)
        t.start()
        wait_for(lambda: dev.hellos_forwarded == 1)
        dev.resume()
        dev.feed(READINGS[3000:])  # the HELLO comes at the tick after the !hello line
        dev.end_replay()
        t.join()
        assert dev.wait(10) == 0, dev.stderr()
    pr = col["progress"]
    total = -(-len(READINGS) // BATCH)
    got = stored(db)
    assert sorted(got) == list(range(before, total))  # after the attach: all, and only those
    check_after_attach(got, before, total)
    assert pr.reports == len(READINGS) - before * BATCH
    # the unresolved path saved the frames sent before the HELLO: at least the 2000 queued
    # readings' frames minus the partial batch
    assert pr.resolved >= (3000 - 1000) // BATCH - 1
    assert pr.unresolved == 0 and pr.errors == 0
    # the frames sent before the attach are counted lost, as such (issue 18, finding 8)
    assert pr.gaps == before and +pr.lost == {"before_attach": before}
    with Store(db) as store:
        assert store.unresolved(dev.port) == []
        lost = {(e["detail"].split(":")[0], e["count"]) for e in store.events()
                if e["kind"] == "gap" and e["count"]}
        assert lost == {("before_attach", before)}


def test_collector_killed_and_restarted_mid_stream_loses_nothing_after_restart(tmp_path):
    db = str(tmp_path / "z.db")
    prof_file = tmp_path / "p.json"
    prof_file.write_text(PROF.to_json())
    cmd = collect_cmd() + ["--db", db, "--profile", str(prof_file), "--keep-vector"]
    with board(period_ms=2) as dev:
        first = subprocess.Popen(cmd + ["--port", dev.port], env=ENV,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            dev.start()
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM frames") >= 10)
            first.send_signal(signal.SIGKILL)  # mid-stream: the board keeps sending
            first.wait()
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        kept = set(stored(db))
        # nobody reads the line now; the tap takes what the board sent until it is frozen
        line = transport.open_port(dev.port)
        seen = {"framer": wire.Deframer(), "seqs": []}
        time.sleep(0.3)
        dev.pause()
        tap(line, seen, until=lambda d: True, quiet=0.2)
        line.close()
        assert seen["framer"].pending == 0
        last_before = max(seen["seqs"] + sorted(kept))
        assert last_before < 1000 // BATCH - 1  # the kill and the pause were mid-stream
        dev.feed(READINGS[1000:3000])
        wait_for(lambda: dev.lines_written == 3000)
        second = subprocess.Popen(cmd + ["--port", dev.port, "--until-stopped"], env=ENV,
                                  text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: dev.hellos_forwarded == 1)
            dev.resume()
            dev.feed(READINGS[3000:])
            dev.end_replay()
            out, err = second.communicate(timeout=60)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        assert dev.wait(10) == 0, dev.stderr()
    assert second.returncode == 0, err
    total = -(-len(READINGS) // BATCH)
    got = stored(db)
    assert set(got) == kept | set(range(last_before + 1, total))
    check_after_attach(got, last_before + 1, total)
    for seq in kept:  # what the first collector committed is intact
        assert got[seq] == reference()[seq * BATCH:(seq + 1) * BATCH]
    fresh = total - (last_before + 1)
    reports = len(READINGS) - (last_before + 1) * BATCH
    assert "stored %d reports in %d frames" % (reports, fresh) in out
    assert "stored late:" in out and "unresolved:" not in out
    # what the board sent while no collector listened is counted lost, as such (issue 18,
    # finding 8): the frames the tap took, and any the first collector read but never committed
    unheard = last_before + 1 - len(kept)
    assert "lost frames (gaps): %d (unattended %d);" % (unheard, unheard) in out, out
