"""Caps hold for memory too (issue 18, finding 9): the collector's per-device memory stays
within the store's cap on devices however many device ids the input names, and a STATUS
flood prints a bounded number of lines on stderr (with a count of the suppressed ones) while
the store keeps every STATUS event.

Before, every device id went into the run's device set, past the cap too (+53 MB at 425k
ids, ~150 bytes an id), and every STATUS frame printed a line.
"""
import json
import os
import re
import sqlite3
import subprocess
import threading
import time

from zeal import wire
from zeal.collect import collector as C
from zeal.collect.progress import StatusLines
from zeal.collect.store import Store

from test_collector import ENV, FP, LOWS, PROF, collect_cmd, count, hello, nonce, wait_for
from zeal.collect.virtual import Pty

IDS = 3000   # distinct device ids, each a HELLO and one DATA frame
CAP = 300    # the store's cap on devices, lowered for the test
PER_READ = 50


def _dev(i):
    return b"d" + i.to_bytes(7, "big")


def _one_device(i):
    dev = _dev(i)
    return (wire.encode_hello(device_id=dev, fingerprint=FP, boot=1, bits=PROF.bits, batch=8,
                              nonce=nonce(1), next_seq=0)
            + wire.encode_data(seq=0, bits=PROF.bits, reports=LOWS[:8],
                               session=wire.session_bytes(dev, FP, 1, nonce(1))))


class _IdFlood:
    """One fake port whose reads return PER_READ new device ids each (HELLO + DATA), IDS in
    all, then nothing (its fileno() stops being readable)."""

    def __init__(self, url):
        self.url, self.next = url, 0
        self.r, self.w = os.pipe()
        os.write(self.w, b"x")

    def fileno(self):
        return self.r

    def write(self, data):  # the collector's !hello
        return len(data)

    def close(self):
        os.close(self.r)
        os.close(self.w)

    @staticmethod
    def read(port):
        if port.next >= IDS:
            os.set_blocking(port.r, False)
            try:
                os.read(port.r, 1)
            except BlockingIOError:
                pass
            return b""
        start, port.next = port.next, min(IDS, port.next + PER_READ)
        return b"".join(_one_device(i) for i in range(start, port.next))


def test_many_device_ids_keep_the_device_cache_at_the_cap(tmp_path, monkeypatch):
    ports = []

    def open_port(url, **kw):
        ports.append(_IdFlood(url))
        return ports[-1]
    monkeypatch.setattr(C.transport, "open_port", open_port)
    monkeypatch.setattr(C.transport, "read_chunk", _IdFlood.read)
    db = str(tmp_path / "z.db")
    store = Store(db)
    store.max_devices = CAP
    col = C.Collector(["loop://?ids"], store, profiles=[PROF], log=lambda line: None)

    def stop_when_read():
        wait_for(lambda: ports and ports[0].next >= IDS, timeout=120)
        time.sleep(3 * C.FLUSH)
        col.stop()
    t = threading.Thread(target=stop_when_read)
    t.start()
    pr = col.run(duration=120)
    t.join()
    stored = {bytes(r[0]) for r in store._engine.db.execute("SELECT device_id FROM devices")}
    dropped = store._engine.db.execute("SELECT count FROM events WHERE kind = 'devices_dropped'"
                               ).fetchone()[0]
    store.close()
    assert ports[0].next == IDS and pr.frames == CAP == len(stored)
    # the caches: no more entries than the cap, whatever the input names
    assert len(store._devices) <= CAP
    assert pr.devices == stored and len(pr.devices) == CAP
    assert len(col.writer.owner) <= 1 and len(col.ports[0].decoder._tracks) <= 8
    # what the cap refused is counted: a session event and a frame of each further id
    assert dropped == pr.devices_dropped >= 2 * (IDS - CAP)
    assert "not stored: %d frames and events of devices beyond" % dropped in "\n".join(
        C.summary_lines(pr))
    assert C.summary_doc(pr)["devices_dropped"] == dropped
    assert len(C.summary_doc(pr)["devices"]) == CAP


# ---- STATUS flood -------------------------------------------------------------------------------
FLOOD = 600   # STATUS SENSOR frames, each with its own tick count (each a distinct event)


def test_a_status_flood_prints_a_bounded_number_of_lines_and_stores_every_status(tmp_path):
    db = str(tmp_path / "z.db")
    stream = hello(1) + b"".join(
        wire.encode_status(code=wire.SENSOR, ticks=t, message="sensor %d failed" % t)
        for t in range(FLOOD)) + wire.encode_status(code=wire.STOPPED, ticks=FLOOD,
                                                   message="stopped")
    with Pty() as line:
        proc = subprocess.Popen(collect_cmd() + ["--port", line.port, "--db", db,
                                                 "--until-stopped", "--duration", "60",
                                                 "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                                text=True)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
            line.write(stream)
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    lines = err.splitlines()
    status_lines = [ln for ln in lines if re.search(r" (SENSOR|STOPPED)(: |$)", ln)]
    suppressed = [int(m.group(1)) for m in (re.match(r"zeal: (\d+) more STATUS line\(s\) "
                                                     r"suppressed", ln) for ln in lines) if m]
    # a bounded number of lines (the flood takes well under a window, STATUS_WINDOW = 10 s,
    # of STATUS_LINES = 10 a port: one window's worth, two at most)
    assert len(lines) <= 25, (len(lines), lines[:3])
    assert 1 <= len(status_lines) <= 20
    assert suppressed and len(status_lines) + sum(suppressed) == FLOOD + 1
    doc = json.loads(out)
    assert doc["status_lines_suppressed"] == sum(suppressed)
    # nothing lost in the store: every STATUS is an event
    con = sqlite3.connect(db)
    n = con.execute("SELECT COUNT(*) FROM events WHERE kind = 'status'").fetchone()[0]
    ticks = {int(re.search(r"ticks=(\d+)", d).group(1)) for (d,) in con.execute(
        "SELECT detail FROM events WHERE kind = 'status'")}
    con.close()
    assert n == FLOOD + 1 and ticks == set(range(FLOOD + 1))


def test_status_lines_are_limited_per_port_and_in_all_for_each_window():
    said = []
    lim = StatusLines(said.append, per_key=2, per_all=3, window=0.3)
    shown = [lim.say(key, "%s %d" % (key, i)) for key, i in
             [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("a", 3)]]
    assert shown == [True, True, False, True, False, False]
    assert said == ["a 0", "a 1", "b 0"]
    lim.roll()                       # the window is not over: nothing to say yet
    assert len(said) == 3
    time.sleep(0.35)
    assert lim.say("b", "b 2")       # a new window: the count of the last one first
    assert said[3].startswith("zeal: 3 more STATUS line(s) suppressed") and said[4] == "b 2"
    lim.say("b", "b 3")
    lim.say("b", "b 4")
    lim.roll(final=True)             # the end of a run: what the window held back is said
    assert said[-1].startswith("zeal: 1 more STATUS line(s) suppressed")
    lim.roll(final=True)
    assert said[-1].startswith("zeal: 1 more") and len(said) == 7
