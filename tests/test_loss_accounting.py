"""Accounting that adds up (issue 18, findings 3 and 8): the frames a session lost are a function
of what the store holds (zeal.collect.accounting), per reason, never a sum of guesses.

- The store: loss rows are set from the frames and spans, not added to; frames that arrive
  late withdraw a loss; no row is negative; on SQLite and PostgreSQL alike.
- Serial: one loss just before a periodic HELLO was three gap events (+5, +5, -5): one row
  now, never negative; the unresolved summary says what is stored and what the cap dropped;
  re-ingesting a stream twice leaves `zeal analyze --json` unchanged (the overall wire bits
  per report doubled).
- Frames of a known session sent before the collector attached are counted lost
  (`before_attach`): a board that streamed before `zeal collect` started (virtual board).
- MQTT (a real Mosquitto): a group member away while the others store their share left
  ~800 phantom gap events behind; with the frames in, analyze says nothing is lost; a
  stream published again changes no figure.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from zeal import wire
from zeal.cli import main as cli_main
from zeal.collect.collector import Collector, summary_doc, summary_lines
from zeal.collect.store import EventRecord, FrameRecord, Store, open_store

from test_collector import (DEV, ENV, FP, PROF, STOP, background, count, data, hello,
                            nonce, run_stream, status, wait_for)


def analyze_json(capsys, db):
    assert cli_main(["analyze", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def gap_rows(db):
    """(key, detail, count) of every gap event, by key."""
    with sqlite3.connect(str(db)) as c:
        return sorted(c.execute("SELECT key, detail, count FROM events WHERE kind = 'gap'"))


# ---- the store ----------------------------------------------------------------------------------
def record(seq, boot=1, dev=DEV):
    return FrameRecord(device_id=dev, boot=boot, nonce=nonce(boot), seq=seq, crc=seq,
                       fingerprint=PROF.fingerprint, count=8,
                       payload=wire.pack_reports([1] * 8, PROF.bits), arrival=1000.0 + seq)


def span(lo, top, boot=1, port="p"):
    from zeal.collect import accounting
    return accounting.Span.of(wire.session_bytes(DEV, FP, boot, nonce(boot)), lo, top, port)


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "z.db")


def lost_figures(st):
    """{reason: count} of the store's gap rows (no row may be negative)."""
    out = {}
    for e in st.events():
        if e["kind"] == "gap":
            assert e["count"] >= 0, e
            reason = e["detail"].split(":")[0]
            out[reason] = out.get(reason, 0) + e["count"]
    return out


def test_loss_rows_are_set_from_the_frames_stored(where):
    from zeal.collect import accounting
    sess = span(0, 0).session
    with open_store(where) as st:
        st.add_profile(PROF)
        # a collector that began listening at 20: frames 20..29 and 35..39 came, 40 announced
        st.write(frames=[record(s) for s in range(20, 30)], spans=[span(20, 30)])
        assert st.last_lost == {sess: (0, 20, 0)}
        st.write(frames=[record(s) for s in range(35, 40)], spans=[span(20, 41)])
        assert st.last_lost == {sess: (6, 20, 0)}               # 30..34 and 40
        assert lost_figures(st) == {"missing": 6, "before_attach": 20}
        # frames 30..34 arrive late (another collector, a resolve): the loss is withdrawn,
        # and a refused frame (its number used, counted by its reject) is no loss either
        st.write(frames=[record(s) for s in range(30, 35)], spans=[span(30, 35, port="q")],
                 events=[EventRecord("reject", "grid", 1, device_id=DEV,
                                     key="reject:%s:39:grid:1" % sess)])
        assert st.last_lost == {sess: (0, 20, 0)}
        # the same again (a re-ingest): nothing changes, not even a row's time
        before = st.events()
        st.write(frames=[record(s) for s in range(20, 40)], spans=[span(20, 41)])
        assert st.last_lost == {sess: (0, 20, 0)} and st.events() == before
        # a second collector run that started at 60 after nobody listened from 41 on
        st.write(frames=[record(s) for s in range(60, 64)], spans=[span(60, 66)])
        assert st.last_lost == {sess: (2, 20, 19)}              # 64, 65; 41..59
        assert lost_figures(st) == {"missing": 2, "before_attach": 20, "unattended": 19}
        # frames stored without a span (no collector's news) still count once a row exists
        st.write(frames=[record(64)])
        assert st.last_lost == {sess: (1, 20, 19)}
        assert accounting.parse(
            next(e["detail"] for e in st.events() if e["detail"].startswith("missing"))) \
            == accounting.State(sent=66, first=20, heard=[[20, 41], [60, 66]], stored=25,
                                refused=1)


def test_loss_rows_keep_the_events_cap(tmp_path):
    """The rows are events: beyond the store's cap they are not made, and each one refused
    is counted in events_dropped (the counter row is always kept)."""
    with Store(str(tmp_path / "z.db")) as st:
        st.add_profile(PROF)
        st.max_events = 1
        st.write(frames=[record(s) for s in range(20, 30)], spans=[span(20, 30)])
        kinds = [(e["kind"], e["detail"].split(":")[0], e["count"]) for e in st.events()]
    assert kinds == [("gap", "missing", 0), ("events_dropped", "events beyond the cap of 1 rows",
                                             1)]


def test_loss_rows_withstand_two_writers_at_once(postgres_url):
    """Two writers (two collectors of a group) store the two halves of a session at once,
    each announcing the whole span: whatever the interleaving, once both committed the
    session has lost nothing (the last to commit counts the other's frames)."""
    with open_store(postgres_url) as st:
        st.add_profile(PROF)
    errors = []

    def writer(parity):
        try:
            with open_store(postgres_url) as st:
                for lo in range(0, 400, 20):
                    st.write(frames=[record(s) for s in range(lo, lo + 20) if s % 2 == parity],
                             spans=[span(0, lo + 20)])
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with open_store(postgres_url, read_only=True) as st:
        assert st.meta()["frames"] == 400
        assert lost_figures(st) == {"missing": 0}
        rows = [e for e in st.events() if e["kind"] == "gap"]
        assert [e["detail"] for e in rows] == \
            ["missing: sent 400; heard 0-399; stored 400; refused 0"]


# ---- serial -------------------------------------------------------------------------------------
def test_a_loss_before_a_periodic_hello_is_one_row_never_negative(tmp_path, capsys):
    """Five frames lost just before a periodic HELLO were stored as three gap events: +5 (the
    HELLO's next_seq), +5 (the next frame's distance from the last) and -5 (the correction):
    a negative row, and a crash between the commits could leave +10."""
    stream = (hello(1) + b"".join(data(1, s) for s in range(0, 11))
              + hello(1, next_seq=16) + b"".join(data(1, s) for s in range(16, 20)) + STOP)
    progress, store = run_stream(tmp_path, stream)
    store.close()
    rows = gap_rows(tmp_path / "z.db")
    assert all(n >= 0 for _, _, n in rows), rows
    assert [n for _, _, n in rows if n] == [5]
    assert progress.gaps == 5 and progress.lost == {"gap": 5}
    assert analyze_json(capsys, tmp_path / "z.db")["overall"]["gaps"] == 5


def test_unresolved_summary_says_what_is_stored_and_what_the_cap_dropped(tmp_path):
    """25 DATA frames whose HELLO never comes, under a cap of 10 rows: the summary said 25
    frames were "kept" while the store held 10 (the cap's 15 only in an event)."""
    db = str(tmp_path / "z.db")

    def make():
        store = Store(db)
        store.max_unresolved_per_port = 10
        return Collector([line.port], store, profiles=[PROF])

    from zeal.collect.virtual import Pty
    with Pty() as line:
        t, out = background(make, until_stopped=True, duration=20)
        wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
        for s in range(25):  # a few commits' worth, so the cap acts more than once
            line.write(data(3, s))
            if s % 8 == 7:
                time.sleep(0.3)
        line.write(STOP)
        t.join()
    pr = out["progress"]
    assert count(db, "SELECT COUNT(*) FROM unresolved") == 10
    assert pr.unresolved == 10 and pr.unresolved_dropped == 15
    doc = summary_doc(pr)
    assert doc["unresolved_frames"] == 10 and doc["unresolved_dropped"] == 15
    lines = summary_lines(pr)
    assert any(ln.startswith("unresolved: 10 frames stored raw") for ln in lines), lines
    assert any(ln.startswith("unresolved, dropped: 15 frames") for ln in lines), lines
    assert count(db, "SELECT SUM(count) FROM events WHERE kind = 'unresolved_dropped'") == 15


def rich_stream():
    """Sessions, a reboot, losses inside the stream, rejects, garbage, STATUS."""
    raw = bytearray(wire.cobs_decode(data(1, 5)[:-1]))
    raw[5] ^= 0x40                                   # a corrupted frame: unresolved, lost
    return (hello(1, next_seq=2) + data(1, 2) + data(1, 3) + b"boot text\x00"
            + bytes(wire.cobs_encode(raw)) + b"\x00" + data(1, 7) + status(0, 64)
            + hello(1, next_seq=9) + data(1, 9) + hello(2) + data(2, 0) + b"\xff\x01\x00"
            + data(2, 2) + STOP)


def test_reingesting_a_stream_twice_leaves_analyze_unchanged(tmp_path, capsys):
    """The overall wire bits per report doubled with every re-ingest (every byte read on
    every link / the reports): the bytes of a commit that stored nothing new are not the
    link's now (`repeated_bytes`), and every other figure was a sum of keyed events."""
    stream = rich_stream()
    first, store = run_stream(tmp_path, stream)
    store.close()
    db = tmp_path / "z.db"
    want = analyze_json(capsys, db)
    rows = gap_rows(db)
    runs = []
    for _ in range(2):
        again, store = run_stream(tmp_path, stream)
        store.close()
        runs.append(again)
        assert analyze_json(capsys, db) == want      # every figure, wire bits included
        assert gap_rows(db) == rows
    # boot 1: 0, 1 before the attach; 4, 5, 6 and 8 (announced by a HELLO); boot 2: 1
    assert want["overall"]["gaps"] == 2 + 4 + 1
    assert first.lost == {"before_attach": 2, "gap": 5} and first.repeated_bytes == 0
    with sqlite3.connect(str(db)) as c:
        assert c.execute("SELECT bytes FROM links ORDER BY id").fetchall() == \
            [(len(stream),), (0,), (0,)]
    for again in runs:
        assert again.frames == 0 and again.repeated_bytes == len(stream)
        assert again.gaps == first.gaps                  # the sessions' losses, as stored


@pytest.mark.skipif(__import__("zeal.board.firmware", fromlist=["x"]).locate_micropython()
                    is None, reason="the MicroPython unix port is not installed")
def test_frames_sent_before_the_collector_attached_are_counted(tmp_path, capsys):
    """A board streams before `zeal collect` starts: its first frames went to a line nobody
    read. Collect and analyze said 0 gaps while the store held a part of the session. Now
    every frame of the session is stored or counted lost: those before the attach as
    `before_attach` (the HELLO the collector's !hello brings says where the board is)."""
    from zeal.analysis import datasets
    from zeal.collect.virtual import VirtualDevice
    from zeal.wire import transport

    readings = [float(x) for x in datasets.aarhus("humidity", 3000)]
    db = str(tmp_path / "z.db")
    prof_file = tmp_path / "p.json"
    prof_file.write_text(PROF.to_json())
    with VirtualDevice(readings[:640], profile=PROF, batch=64, live=True, status_every=0,
                       device_id=b"late") as dev:
        line = transport.open_port(dev.port)
        dev.start()
        framer, seen = wire.Deframer(), []           # nobody's collector reads the line
        deadline = time.monotonic() + 30
        while len(seen) < 10:
            assert time.monotonic() < deadline, "the board did not stream"
            for f in framer.feed(transport.read_chunk(line)):
                if isinstance(f, wire.SealedData):
                    seen.append(f.body[1] | f.body[2] << 8)
        line.close()
        assert seen == list(range(10))
        proc = subprocess.Popen([sys.executable, "-m", "zeal.cli", "collect", "--port", dev.port,
                                 "--db", db, "--profile", str(prof_file), "--until-stopped",
                                 "--json"], env=ENV, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            wait_for(lambda: dev.hellos_forwarded == 1, timeout=30)
            dev.feed(readings[640:])
            dev.end_replay()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert dev.wait(10) == 0, dev.stderr()
    assert proc.returncode == 0, err
    total = -(-3000 // 64)                          # 47 frames: 46 full, one of 56
    doc = json.loads(out)
    assert doc["frames"] == total - 10
    assert doc["lost_frames"] == 10 and doc["lost_by_reason"]["before_attach"] == 10
    assert doc["frames"] + doc["lost_frames"] == total  # every frame accounted for
    o = analyze_json(capsys, db)["overall"]
    assert o["gaps"] == 10 and o["n"] == 3000 - 640
    rows = [r for r in gap_rows(db) if r[2]]
    assert [(d.split(":")[0], n) for _, d, n in rows] == [("before_attach", 10)]


# ---- MQTT ---------------------------------------------------------------------------------------
@pytest.fixture
def mqtt():
    from mqtt_broker import need_mosquitto
    need_mosquitto()
    pytest.importorskip("paho.mqtt.client", reason="MQTT tests need paho-mqtt >= 2: "
                        "pip install 'zeal-mcu[fleet]'")
    import test_mqtt
    return test_mqtt


def test_a_group_member_away_leaves_no_phantom_gaps(tmp_path, mqtt, capsys):
    """Collector b of a group is frozen (SIGSTOP) while the boards publish: the broker holds
    its share. Collector a stores its own share and ends, and counted b's share as gaps
    (events never withdrawn: analyze reported them lost). b comes back and stores its share:
    now nothing is lost, and no loss row is negative."""
    m = mqtt
    broker = m.Broker(tmp_path / "b", users={n: "pw-" + n for n in m.NAMES}).start()
    db = tmp_path / "z.db"
    procs = {}
    try:
        procs["a"] = m.collect(broker, db, _prof(tmp_path), client_id="c-a")
        assert m.wait_connected(db, 1)
        procs["b"] = m.collect(broker, db, _prof(tmp_path), client_id="c-b")
        assert m.wait_connected(db, 2)
        procs["b"].send_signal(signal.SIGSTOP)
        streams = {dev: m.board_frames(dev, 0, 120)[1] for dev in m.DEVICES}
        sent = m.publish_all(broker, streams)
        # a's share in: a few seconds without a new frame
        last, still = -1, time.monotonic()
        while time.monotonic() - still < 2.0:
            n = len(m.stored(db)[0])
            if n != last:
                last, still = n, time.monotonic()
            time.sleep(0.2)
        assert 0 < last < len(sent)                  # b holds the rest
        ra = m.stop(procs["a"])
        procs["b"].send_signal(signal.SIGCONT)
        keys = m.wait_stored(db, sent, timeout=40)
        time.sleep(0.5)
        rb = m.stop(procs["b"])
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
        broker.stop()
    assert ra[0] == 0 and rb[0] == 0, (ra[2], rb[2])
    keys, gaps, kinds = m.stored(db)
    assert set(keys) == sent
    assert gaps == 0, gap_rows(db)
    assert all(n >= 0 for _, _, n in gap_rows(db))
    doc = analyze_json(capsys, db)
    assert doc["overall"]["gaps"] == 0 and all(d["gaps"] == 0 for d in doc["devices"])


def _prof(tmp_path):
    path = tmp_path / "p.json"
    if not path.exists():
        path.write_text(PROF.to_json())
    return path


def test_a_stream_published_again_changes_no_figure(tmp_path, mqtt, capsys):
    """The same frames published twice more (a replayed capture, a board's retries): every
    frame and event is stored already, and `zeal analyze --json` gives the same document."""
    m = mqtt
    broker = m.Broker(tmp_path / "b", users={n: "pw-" + n for n in m.NAMES}).start()
    db = tmp_path / "z.db"
    streams = {dev: m.board_frames(dev, 0, 60)[1] for dev in m.DEVICES}
    skip = {(m.DEVICES[0], 20), (m.DEVICES[2], 59)}
    docs = []
    try:
        for run in range(3):
            a = m.collect(broker, db, _prof(tmp_path), client_id="c-a", group=None)
            assert m.wait_connected(db, run + 1)
            sent = m.publish_all(broker, streams, skip=skip, chunk=3)
            m.wait_stored(db, sent)
            time.sleep(0.8)
            rc, out, err = m.stop(a)
            assert rc == 0, err
            docs.append((json.loads(out), analyze_json(capsys, db)))
    finally:
        broker.stop()
    (first, want), *again = docs
    for summary, doc in again:
        assert doc == want
        assert summary["frames"] == 0 and summary["repeated_bytes"] > 0
    assert want["overall"]["gaps"] == 1              # frame 20 of board 0 (59: never announced)
    assert first["repeated_bytes"] == 0
