"""MQTT fleet benchmark: boards -> Mosquitto -> `zeal collect --mqtt` -> store.

One run, on this machine, with a throw-away Mosquitto on a free loopback port
(tests/mqtt_broker.py; needs mosquitto, mosquitto_passwd and, for the raw baseline,
mosquitto_sub from mosquitto-clients):

1. throughput: the same MESSAGES payloads (one DATA frame each, from BOARDS boards, made with
   the host codec) through broker + collector(s) + store, against `mosquitto_sub` receiving
   them raw at QoS 1 from the same broker: reports/s of each and their ratio (goal >= 0.3),
   with 1 and with 2 collectors in one shared-subscription group; beside them the same
   messages into 1 and 2 paho-only sinks (paho-mqtt v5 with the collector's settings and
   network loop, receiving and acknowledging, nothing else): the MQTT client's own ceiling,
   and the collectors' CPU microseconds per message.
2. fleet: FLEET boards (lightweight publishers over raw sockets, one broker user and one TCP
   connection each, not interpreters) each sending one frame per second for SECONDS s
   through 2 collectors into PostgreSQL when the PostgreSQL server binaries are found
   (tests/pg_server.py), else SQLite: frames lost and duplicated (the store's keys against
   what the broker acknowledged), reports/s, CPU seconds of broker and collectors.

    python tools/bench_mqtt.py [--messages N] [--fleet N] [--seconds S] [--json]
"""
import argparse
import json
import os
import resource
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "tests")]

from mqtt_broker import Broker, board_frames, device_id, find  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host"))
REPORTS_PER_FRAME = 8


# ---- a minimal MQTT 3.1.1 publisher: many connections, one thread ---------------------------------
def _s(text: bytes) -> bytes:
    return struct.pack(">H", len(text)) + text


def _packet(kind: int, body: bytes) -> bytes:
    n, length = len(body), b""
    while True:
        byte, n = n % 128, n // 128
        length += bytes([byte | (0x80 if n else 0)])
        if not n:
            return bytes([kind]) + length + body


class Boards:
    """`names` boards, each a TCP connection under its own user; publish(i, payload) sends a
    QoS 1 PUBLISH on zeal/<name>/frames; acked counts the PUBACKs."""

    def __init__(self, port, users: dict):
        self.sel = selectors.DefaultSelector()
        self.socks, self.names, self.acked, self.sent = [], list(users), 0, 0
        self.mid = 0
        for name in self.names:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            body = _s(b"MQTT") + bytes([4, 0xC2]) + struct.pack(">H", 60) + \
                _s(("b-" + name).encode()) + _s(name.encode()) + _s(users[name].encode())
            s.sendall(_packet(0x10, body))
            ack = s.recv(4)
            if len(ack) < 4 or ack[3] != 0:
                raise RuntimeError("board %s refused: %r" % (name, ack))
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ)
            self.socks.append(s)

    def publish(self, i: int, payload: bytes) -> None:
        self.mid = self.mid % 65535 + 1
        topic = ("zeal/%s/frames" % self.names[i]).encode()
        data = _packet(0x32, _s(topic) + struct.pack(">H", self.mid) + payload)
        s = self.socks[i]
        s.setblocking(True)
        s.sendall(data)
        s.setblocking(False)
        self.sent += 1

    def publish_rounds(self, streams, per: int) -> float:
        """Messages 1..per of every board's stream, board after board in each round, as
        fast as the sockets take them; returns time.monotonic() at the start."""
        t0 = time.monotonic()
        for k in range(1, per + 1):
            for b in range(len(self.socks)):
                self.publish(b, streams[b][k])
            self.poll()
        return t0

    def poll(self, timeout=0.0) -> None:
        for key, _ in self.sel.select(timeout):
            try:
                data = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            self.acked += data.count(b"\x40\x02")  # PUBACKs (4 bytes each, nothing else comes)

    def wait_acked(self, timeout=60.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.acked < self.sent and time.monotonic() < deadline:
            self.poll(0.05)
        return self.acked >= self.sent

    def close(self) -> None:
        for s in self.socks:
            try:
                s.sendall(b"\xe0\x00")
            except OSError:
                pass
            s.close()


def _raise_fd_limit(want: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def _cpu(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _count(db) -> tuple:
    """(rows, distinct keys) of the store's frames."""
    from zeal.collect.store import open_store
    s = open_store(db, read_only=True) if "://" in str(db) else None
    if s is not None:
        try:
            return s._query("SELECT COUNT(*), COUNT(DISTINCT (device, boot, nonce, seq)) "
                            "FROM frames")[0]
        finally:
            s.close()
    import sqlite3
    with sqlite3.connect(str(db)) as c:
        return c.execute("SELECT COUNT(*), COUNT(*) FROM frames").fetchone()  # UNIQUE key


def _collector(broker, db, prof_file, cid, group="bench"):
    cmd = [sys.executable, "-m", "zeal.cli", "collect", "--mqtt", broker.url(), "--db", str(db),
           "--profile", str(prof_file), "--group", group, "--client-id", cid, "--json"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                            text=True)


def _collectors(broker, db, prof_file, name, n):
    """n collectors, one after the other (the first makes the database's schema)."""
    procs = []
    for i in range(n):
        procs.append(_collector(broker, db, prof_file, "%s-%d" % (name, i)))
        time.sleep(2.0)
    return procs


def _wait_rows(db, n, timeout):
    deadline = time.monotonic() + timeout
    rows = (0, 0)
    while time.monotonic() < deadline:
        try:
            rows = _count(db)
        except Exception:
            rows = (0, 0)
        if rows[0] >= n:
            return rows, time.monotonic()
        time.sleep(0.05)
    return rows, None


def _stop(procs):
    import signal
    out = []
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        o, e = p.communicate(timeout=60)
        out.append(json.loads(o) if o.strip().startswith("{") else {"error": e[-500:]})
    return out


def _payloads(boards, per_board):
    """Each board's stream: a HELLO message, then one DATA frame per message."""
    msgs = []
    for b in range(boards):
        _, frames = board_frames(device_id(b), 0, per_board, hello_every=0)
        msgs.append(frames)
    return msgs


def _db(folder, pg, name):
    """A fresh database: a new PostgreSQL database on the cluster, or an SQLite file."""
    if pg is not None:
        return pg.create_database()
    return os.path.join(folder, name + ".db")


def throughput(folder, messages, boards, collectors, pg, prof_file):
    """Reports/s through broker + `collectors` collectors + store for `messages` frames."""
    users = {device_id(b).hex(): "pw%d" % b for b in range(boards)}
    per = messages // boards
    streams = _payloads(boards, per)
    broker = Broker(os.path.join(folder, "b%d" % collectors), users=users).start()
    db = _db(folder, pg, "t%d" % collectors)
    try:
        procs = _collectors(broker, db, prof_file, "bench", collectors)
        pub = Boards(broker.port, users)
        for b in range(boards):  # the HELLOs first, then timing starts
            pub.publish(b, streams[b][0])
        _wait_rows(db, 0, 1)
        time.sleep(0.5)
        cpu0 = sum(_cpu(p.pid) for p in procs)
        t0 = pub.publish_rounds(streams, per)
        rows, t1 = _wait_rows(db, boards * per, 120)
        cpu = sum(_cpu(p.pid) for p in procs) - cpu0
        pub.wait_acked()
        pub.close()
        _stop(procs)
    finally:
        broker.stop()
    if t1 is None:
        raise SystemExit("bench: only %d of %d frames stored" % (rows[0], boards * per))
    return boards * per * REPORTS_PER_FRAME / (t1 - t0), cpu / (boards * per) * 1e6


SINK = """
import select, sys, time
import paho.mqtt.client as m
host, port, user, pw, group, n, cid = sys.argv[1:8]
n = int(n); got = [0]; acks = []
def on_message(c, u, msg):
    got[0] += 1
    acks.append((msg.mid, msg.qos))
c = m.Client(m.CallbackAPIVersion.VERSION2, client_id=cid, protocol=m.MQTTv5, manual_ack=True)
c.username_pw_set(user, pw)
c.on_message = on_message
c.max_queued_messages_set(0)
from paho.mqtt.properties import Properties
from paho.mqtt.packettypes import PacketTypes
props = Properties(PacketTypes.CONNECT); props.ReceiveMaximum = 20000
c.connect(host, int(port), clean_start=True, properties=props)
c.subscribe("$share/%s/zeal/+/frames" % group, qos=1)
print("ready", flush=True)
sock = c.socket(); t_ack = time.monotonic() + 0.2
while True:
    r, _, _ = select.select([sock], [sock] if c.want_write() else [], [], 0.05)
    if r:
        for _ in range(2000):
            before = got[0]
            if c.loop_read() or got[0] == before:
                break
    if time.monotonic() >= t_ack:
        for a in acks:
            c.ack(*a)
        acks.clear(); t_ack = time.monotonic() + 0.2
        print(got[0], flush=True)
    if c.want_write():
        c.loop_write()
    c.loop_misc()
"""


def paho_only(folder, messages, boards, sinks):
    """The MQTT client library's own ceiling: `sinks` processes that only receive and
    acknowledge (paho-mqtt v5, the collector's settings and network loop, no decoding, no
    store), in one shared-subscription group: reports/s."""
    users = {device_id(b).hex(): "pw%d" % b for b in range(boards)}
    per = messages // boards
    streams = _payloads(boards, per)
    broker = Broker(os.path.join(folder, "sink%d" % sinks), users=users).start()
    procs = []
    try:
        for i in range(sinks):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", SINK, "127.0.0.1", str(broker.port), "collector",
                 broker.users["collector"], "sink", str(messages), "sink-%d" % i],
                stdout=subprocess.PIPE, text=True, env=ENV))
            procs[-1].stdout.readline()
        pub = Boards(broker.port, users)
        t0 = pub.publish_rounds(streams, per)
        pub.wait_acked()  # the broker has them all; now wait until the sinks have
        counts = [0] * sinks
        sel = selectors.DefaultSelector()
        for i, p in enumerate(procs):
            sel.register(p.stdout, selectors.EVENT_READ, i)
        deadline = time.monotonic() + 120
        while sum(counts) < boards * per and time.monotonic() < deadline:
            for key, _ in sel.select(1.0):
                line = key.fileobj.readline()
                if line.strip().isdigit():
                    counts[key.data] = int(line)
        t1 = time.monotonic()
        pub.close()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        broker.stop()
    if sum(counts) < boards * per:
        raise SystemExit("bench: the paho sinks got %d of %d messages" % (sum(counts),
                                                                        boards * per))
    return boards * per * REPORTS_PER_FRAME / (t1 - t0)


def raw(folder, messages, boards):
    """mosquitto_sub receiving the same payloads at QoS 1: reports/s."""
    sub_bin = find("mosquitto_sub")
    if sub_bin is None:
        return None
    users = {device_id(b).hex(): "pw%d" % b for b in range(boards)}
    per = messages // boards
    streams = _payloads(boards, per)
    broker = Broker(os.path.join(folder, "raw"), users=users).start()
    try:
        n = boards * per
        sub = subprocess.Popen([sub_bin, "-h", "127.0.0.1", "-p", str(broker.port), "-u",
                                "collector", "-P", broker.users["collector"], "-q", "1",
                                "-t", "zeal/+/frames", "-C", str(n), "-F", "%l"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.0)
        pub = Boards(broker.port, users)
        t0 = pub.publish_rounds(streams, per)
        out, _ = sub.communicate(timeout=120)
        t1 = time.monotonic()
        got = len(out.split())
        pub.close()
    finally:
        broker.stop()
    if got != n:
        raise SystemExit("bench: mosquitto_sub got %d of %d messages" % (got, n))
    return n * REPORTS_PER_FRAME / (t1 - t0)


def fleet(folder, boards, seconds, pg, prof_file):
    users = {device_id(b).hex(): "pw%d" % b for b in range(boards)}
    streams = _payloads(boards, seconds)
    _raise_fd_limit(boards * 2 + 256)
    broker = Broker(os.path.join(folder, "fleet"), users=users).start()
    db = _db(folder, pg, "fleet")
    try:
        procs = _collectors(broker, db, prof_file, "fleet", 2)
        cpu0 = [_cpu(p.pid) for p in procs] + [_cpu(broker.proc.pid)]
        pub = Boards(broker.port, users)
        t0 = time.monotonic()
        for b in range(boards):
            pub.publish(b, streams[b][0])
        for k in range(1, seconds + 1):  # each second, every board sends its next frame,
            tick = t0 + k - 1             # spread over the second
            for b in range(boards):
                at = tick + b / boards
                while time.monotonic() < at:
                    pub.poll(max(0.0, min(0.01, at - time.monotonic())))
                pub.publish(b, streams[b][k])
        acked = pub.wait_acked()
        rows, t1 = _wait_rows(db, boards * seconds, 120)
        cpu1 = [_cpu(p.pid) for p in procs] + [_cpu(broker.proc.pid)]
        pub.close()
        docs = _stop(procs)
    finally:
        broker.stop()
    sent = boards * seconds
    stored, distinct = rows
    elapsed = (t1 or time.monotonic()) - t0
    return {"boards": boards, "seconds": seconds, "frames_sent": sent,
            "broker_acked_all": acked, "frames_stored": stored, "lost": sent - distinct,
            "duplicated": stored - distinct, "reports_per_s": round(stored * REPORTS_PER_FRAME
                                                                    / elapsed, 1),
            "cpu_s_collectors": round(sum(cpu1[:2]) - sum(cpu0[:2]), 2),
            "cpu_s_broker": round(cpu1[2] - cpu0[2], 2), "wall_s": round(elapsed, 1),
            "store": "postgresql" if pg else "sqlite",
            "collector_frames": [d.get("frames") for d in docs]}


def _start_pg():
    """A throw-away PostgreSQL cluster (tests/pg_server.py), or None (then SQLite)."""
    try:
        import pg_server
        return pg_server.PgCluster()
    except Exception as exc:  # no PostgreSQL server here
        print("bench: PostgreSQL not started (%s); using SQLite" % exc, file=sys.stderr)
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--boards", type=int, default=50, help="boards of the throughput runs")
    ap.add_argument("--fleet", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL is found")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    _raise_fd_limit(4096)
    with tempfile.TemporaryDirectory() as folder:
        prof, _ = board_frames(device_id(0), 0, 1)
        prof_file = os.path.join(folder, "p.json")
        with open(prof_file, "w") as f:
            f.write(prof.to_json())
        pg = None if args.sqlite else _start_pg()
        try:
            doc = {"store": "postgresql" if pg else "sqlite",
                   "messages": args.messages, "boards": args.boards}
            doc["raw_mosquitto_sub_reports_per_s"] = raw(folder, args.messages, args.boards)
            for n in (1, 2):
                print("bench: %d paho-only sink(s)" % n, file=sys.stderr)
                doc["paho_only_%d_reports_per_s" % n] = round(
                    paho_only(folder, args.messages, args.boards, n), 1)
                print("bench: %d collector(s)" % n, file=sys.stderr)
                rate, us = throughput(folder, args.messages, args.boards, n, pg, prof_file)
                doc["collectors_%d_reports_per_s" % n] = round(rate, 1)
                doc["collectors_%d_cpu_us_per_message" % n] = round(us, 1)
            if doc["raw_mosquitto_sub_reports_per_s"]:
                r = doc["raw_mosquitto_sub_reports_per_s"]
                doc["raw_mosquitto_sub_reports_per_s"] = round(r, 1)
                for n in (1, 2):
                    doc["ratio_%d_collectors_to_raw" % n] = round(
                        doc["collectors_%d_reports_per_s" % n] / r, 3)
                    doc["ratio_%d_paho_only_to_raw" % n] = round(
                        doc["paho_only_%d_reports_per_s" % n] / r, 3)
            if args.fleet:
                doc["fleet"] = fleet(folder, args.fleet, args.seconds, pg, prof_file)
        finally:
            if pg is not None:
                pg.stop()
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for k, v in doc.items():
            print("%-36s %s" % (k, v))


if __name__ == "__main__":
    main()
