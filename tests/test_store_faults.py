"""Faults the collector rides out (issue 18, finding 2): a SQLite database locked longer than
the collector's lock wait, a full disk (the store's write failing 'database or disk is full' /
ENOSPC for a while), a PostgreSQL server restarted during a serial and an MQTT collect. The
writer keeps what it read and retries; every frame sent ends up stored, once; when it must give
up, one line says how many frames read were not committed.

Checked against what was sent (the store's frame keys), never against the collector's figures.
Before this, each of these ended the run: 'database ... is busy', 'disk full', 'terminating
connection due to administrator command' (the frames read thrown away, uncounted)."""
import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from zeal.collect import store as S
from zeal.collect.collector import Collector
from zeal.collect.store import Store, StoreError, open_store
from zeal.collect.virtual import Pty

from test_collector import PROF, STOP, background, count, data, hello, wait_for

N = 200
STREAM = hello(1) + b"".join(data(1, s) for s in range(N)) + STOP


def _stored(db):
    return count(db, "SELECT COUNT(*) FROM frames")


def _start(db, store, **kw):
    """A collector on a pty, running until STATUS STOPPED; the line, thread, result."""
    line = Pty().__enter__()
    t, out = background(lambda: Collector([line.port], store(), profiles=(PROF,), **kw),
                        until_stopped=True, duration=60)
    wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1)
    return line, t, out


def test_locked_longer_than_the_lock_wait_then_released_stores_everything(tmp_path):
    db = str(tmp_path / "z.db")
    lines = []
    line, t, out = _start(db, lambda: Store(db, timeout=0.2), log=lines.append)
    try:
        line.write(hello(1) + b"".join(data(1, s) for s in range(20)))
        wait_for(lambda: _stored(db) == 20)
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # another program writes, 15x the lock wait
        try:
            line.write(b"".join(data(1, s) for s in range(20, N)) + STOP)
            time.sleep(3.0)
            assert _stored(db) == 20 and t.is_alive()
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        t.join(30)
    finally:
        line.__exit__(None, None, None)
    assert "error" not in out, out.get("error")
    pr = out["progress"]
    assert count(db, "SELECT COUNT(*) FROM frames") == N
    assert count(db, "SELECT COUNT(DISTINCT seq) FROM frames") == N
    assert pr.frames == N and pr.gaps == 0 and pr.uncommitted == 0
    assert pr.store_outages >= 1 and pr.store_unavailable >= 2.5
    text = "\n".join(lines)
    assert "store unavailable" in text and "busy" in text and "available again" in text


def test_locked_past_store_wait_gives_up_saying_how_many_frames_were_not_committed(tmp_path):
    db = str(tmp_path / "z.db")
    line, t, out = _start(db, lambda: Store(db, timeout=0.1), store_wait=1.0,
                          log=lambda text: None)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        line.write(STREAM)
        t.join(30)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        line.__exit__(None, None, None)
    err = out.get("error")
    assert isinstance(err, StoreError) and "\n" not in str(err), err
    assert "busy" in str(err) and "gave up" in str(err)
    assert "%d frames read were not committed" % N in str(err), err
    assert _stored(db) == 0


class _FullFor:
    """A Store whose writes of frames fail as a full disk does, for `seconds` after the
    first one that held frames (`how`: SQLite's error, or OSError ENOSPC)."""

    def __init__(self, db, seconds, how):
        self.inner, self.seconds, self.how, self.since = Store(db), seconds, how, None
        self.failures = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write(self, frames=(), *args, **kw):
        frames = list(frames)
        if frames and self.since is None:
            self.since = time.monotonic()
        if self.since is not None and time.monotonic() - self.since < self.seconds:
            self.failures += 1
            if self.how == "sqlite":
                raise S.wrap_sql_error(sqlite3.OperationalError("database or disk is full"),
                                       self.inner.path)
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.inner.write(frames, *args, **kw)


@pytest.mark.parametrize("how", ["sqlite", "enospc"])
def test_disk_full_for_a_while_stores_everything_once_there_is_room(tmp_path, how):
    db = str(tmp_path / "z.db")
    box = {}

    def make():
        box["store"] = _FullFor(db, 2.0, how)
        return box["store"]
    line, t, out = _start(db, make, log=lambda text: None)
    try:
        line.write(STREAM)
        t.join(30)
    finally:
        line.__exit__(None, None, None)
    assert "error" not in out, out.get("error")
    pr = out["progress"]
    assert box["store"].failures >= 2
    assert count(db, "SELECT COUNT(DISTINCT seq) FROM frames") == N
    assert count(db, "SELECT COUNT(*) FROM frames") == N
    assert pr.frames == N and pr.gaps == 0 and pr.store_outages == 1


# ---- PostgreSQL restarted ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def pg():
    import pg_server
    why = pg_server.missing()
    if why:
        pytest.skip(why)
    pytest.importorskip("psycopg")
    cluster = pg_server.PgCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


def _restart(cluster, down=2.0):
    """Stop the server (fast: every session told 'terminating connection due to administrator
    command'), keep it down for `down` s, start it again on its port."""
    cluster._tool("pg_ctl", "stop", "-D", cluster.data, "-m", "fast", "-w")
    time.sleep(down)
    opts = ("-p %d -k %s -c listen_addresses=127.0.0.1 -F -c full_page_writes=off "
            "-c synchronous_commit=off -c max_connections=60 -c shared_buffers=16MB"
            % (cluster.port, cluster.dir))
    cluster._tool("pg_ctl", "start", "-w", "-t", "30", "-D", cluster.data, "-l", cluster.log,
                  "-o", opts)


def _pg_frames(url):
    """{(device, boot, seq): rows} in the database at url (a new connection: a restart ends
    the old ones)."""
    import psycopg
    for _ in range(100):
        try:
            with psycopg.connect(url) as conn:
                rows = conn.execute("SELECT d.device_id, f.boot, f.seq, COUNT(*) FROM frames f "
                                    "JOIN devices d ON d.id = f.device "
                                    "GROUP BY d.device_id, f.boot, f.nonce, f.seq").fetchall()
                return {(bytes(dev), boot, seq): n for dev, boot, seq, n in rows}
        except psycopg.Error:
            time.sleep(0.1)
    raise AssertionError("the server did not come back")


def test_postgresql_restart_during_a_serial_collect(pg):
    url = pg.create_database()
    lines = []
    box = {}
    line = Pty().__enter__()
    try:
        t, out = background(lambda: Collector([line.port], open_store(url), profiles=(PROF,),
                                              log=lines.append),
                            until_stopped=True, duration=60)
        wait_for(lambda: len(_pg_frames(url)) == 0 and box.setdefault("ok", True), 20)
        time.sleep(0.5)
        line.write(hello(1) + b"".join(data(1, s) for s in range(100)))
        wait_for(lambda: len(_pg_frames(url)) == 100, 20)
        stopper = threading.Thread(target=_restart, args=(pg,))
        stopper.start()
        time.sleep(0.3)
        line.write(b"".join(data(1, s) for s in range(100, N)) + STOP)  # while it is down
        stopper.join()
        t.join(60)
    finally:
        line.__exit__(None, None, None)
    assert "error" not in out, out.get("error")
    keys = _pg_frames(url)
    assert len(keys) == N and set(keys.values()) == {1}
    assert out["progress"].frames == N and out["progress"].gaps == 0
    assert any("store unavailable" in text for text in lines), lines


def test_postgresql_restart_during_an_mqtt_group_collect(tmp_path, pg):
    pytest.importorskip("paho.mqtt.client")
    from mqtt_broker import need_mosquitto
    need_mosquitto()
    from test_mqtt import DEVICES, NAMES, Broker, board_frames, collect, publish_all, stop

    url = pg.create_database()
    prof, _ = board_frames(DEVICES[0], 0, 1)
    prof_file = tmp_path / "p.json"
    prof_file.write_text(prof.to_json())
    broker = Broker(tmp_path / "b", users={n: "pw-" + n for n in NAMES}).start()
    procs = {}
    restarter = {}

    def between(i):
        if i == 60:
            restarter["t"] = threading.Thread(target=_restart, args=(pg,))
            restarter["t"].start()

    try:
        procs["a"] = collect(broker, url, prof_file, client_id="c-a")
        procs["b"] = collect(broker, url, prof_file, client_id="c-b")
        time.sleep(3.0)  # both subscribed (their schema and links made)
        streams = {dev: board_frames(dev, 0, 150)[1] for dev in DEVICES}
        sent = publish_all(broker, streams, chunk=2, pause=0.01, between=between)
        restarter["t"].join()
        want = {(dev, 0, seq) for dev, seq in sent}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not want <= set(_pg_frames(url)):
            assert procs["a"].poll() is None and procs["b"].poll() is None
            time.sleep(0.3)
        results = {name: stop(proc) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        broker.stop()
    for name, (rc, out, err) in results.items():
        assert rc == 0, (name, err[-2000:])
    keys = _pg_frames(url)
    assert set(keys) == want and set(keys.values()) == {1}
    docs = [json.loads(out) for _rc, out, _err in results.values()]
    assert sum(d["frames"] for d in docs) == len(want)
    assert sum(d["store_outages"] for d in docs) >= 1


def test_cli_ctrl_c_while_locked_gives_up_in_one_line_with_the_count(tmp_path):
    """`zeal collect` interrupted while the database is locked: exit 1, one line on stderr
    (after the progress lines) naming how many frames read were not committed."""
    from test_collector import ENV
    db = str(tmp_path / "z.db")
    Store(db).close()
    prof_file = tmp_path / "p.json"
    prof_file.write_text(PROF.to_json())
    with Pty() as line:
        proc = subprocess.Popen([sys.executable, "-m", "zeal.cli", "collect", "--port",
                                 line.port, "--db", db, "--profile", str(prof_file), "--json"],
                                env=ENV, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: count(db, "SELECT COUNT(*) FROM links") == 1, 20)
            holder = sqlite3.connect(db, isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")
            try:
                line.write(STREAM)
                time.sleep(2.0)
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=30)
            finally:
                holder.execute("ROLLBACK")
                holder.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert "store unavailable" in err and "Traceback" not in err
    last = lines[-1]
    assert last.startswith("zeal: ") and "gave up" in last and "interrupted" in last, lines
    assert "%d frames read were not committed" % N in last, err
    assert _stored(db) == 0
