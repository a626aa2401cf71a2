"""The firmware's MQTT output (firmware/zealfw/mqtt_out.py) against a real Mosquitto: the real
firmware under the MicroPython unix port (zeal.collect.virtual.VirtualDevice(mqtt=...)) with
umqtt.simple (zeal.board.umqtt: micropython-lib's, from PyPI) over a real socket.

- the payloads, joined, are byte for byte the stream the same board (vector mode, same key)
  writes on its serial line; the control topic's "!hello" and "!stop" work; no credential
  appears in anything the board sends or prints;
- broker down at the start, up later: a board with room in its ring delivers every frame
  (one connection, nothing dropped); a board with a small ring drops the frames that did not
  fit and says how many in STATUS frames_dropped, which equals the DATA sequence numbers
  missing at the collector;
- a bad output config ends the start with STATUS CONFIG naming the key, never its value.

Tests use tests/mqtt_broker.py (a throw-away broker with a password file and the deployment's
ACL: a device publishes only under zeal/<its user>/).
"""
import os
import subprocess
import threading
import time

import pytest

from mqtt_broker import Broker
from zeal import wire
from zeal.board import conformance as C
from zeal.collect.virtual import VirtualDevice
from zeal.mechanism.grid import profile as P

KEY = bytes(range(32))
PROF = P.from_bits(23.5, 83.9, 1.0, 8)


def lines(n, start=30.0):
    return [start + (i * 7) % 50 for i in range(n)]


class Sink:
    """A paho subscriber (the test's collector user) keeping each topic's payloads in order."""

    def __init__(self, broker, topic="zeal/+/frames"):
        import paho.mqtt.client as mqtt

        self.got = {}
        self.lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="sink",
                                  protocol=mqtt.MQTTv5)
        self.client.username_pw_set("collector", broker.users["collector"])
        self.client.on_message = self._on_message
        ready = threading.Event()
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.connect("127.0.0.1", broker.port)
        self.client.subscribe(topic, qos=1)
        self.client.loop_start()
        assert ready.wait(10), "the test subscriber did not subscribe"

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.got.setdefault(msg.topic.split("/")[1], []).append(bytes(msg.payload))

    def stream(self, dev):
        with self.lock:
            return b"".join(self.got.get(dev, []))

    def send(self, dev, line):
        self.client.publish("zeal/%s/control" % dev, line, qos=1).wait_for_publish(10)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


class Gate:
    """A port that refuses connections (nothing listens: a broker that is down) until opened,
    then forwards each connection to the broker. The test's subscriber connects to the broker
    itself before the gate opens, so no frame a board sends once it gets through can be
    published before the subscription exists."""

    def __init__(self, target_port):
        from mqtt_broker import free_port

        self.port = free_port()
        self.target = target_port
        self.sock = None

    def open(self):
        import socket

        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(8)
        self.sock = s
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket

        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        import socket

        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        if self.sock is not None:
            self.sock.close()


def events(data):
    ev = wire.Decoder([PROF], vectors=True).feed(data)
    kinds = {"hello": wire.Hello, "batch": wire.Batch, "status": wire.Status}
    return {k: [e for e in ev if isinstance(e, t)] for k, t in kinds.items()}


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.05)


def serial_stream(tmp_path, readings, cfg):
    """What the same firmware writes on its serial line (output repl) for these readings."""
    import json

    folder = tmp_path / "serial"
    folder.mkdir()
    (folder / "zeal_profile.json").write_text(PROF.to_json())
    (folder / "zeal_config.json").write_text(json.dumps(cfg))
    (folder / "zeal_id.bin").write_bytes(b"dev-a\0\0\0")
    from zeal.collect.virtual import f64_line

    feed = "\n".join([f64_line(x) for x in readings] + ["!stop"]) + "\n"
    done = subprocess.run([C.locate_micropython(), "-c", "import zealfw.main as m;m.run()"],
                          cwd=folder, input=feed.encode(), capture_output=True, timeout=60,
                          env=dict(os.environ, MICROPYPATH=C.FIRMWARE))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def test_frames_arrive_intact_and_the_control_topic_works(mp_port, tmp_path):
    users = {"dev-a": "pa-Secret-1", "dev-b": "pb-Secret-2"}
    with Broker(tmp_path / "broker", users=users) as broker:
        sink = Sink(broker)
        readings = lines(300)
        base = {"start_delay_ms": 0, "period_ms": 0, "batch": 8, "hello_every": 8,
                "status_every": 16, "vector_mode": True, "vector_key": KEY.hex()}
        opts = {"user": "dev-a", "password": users["dev-a"]}
        a = VirtualDevice(readings, profile=PROF, vector_key=KEY, device_id=b"dev-a",
                          batch=8, hello_every=8, status_every=16,
                          mqtt="mqtt://127.0.0.1:%d" % broker.port, mqtt_options=opts)
        # dev-b: credentials in the URL, a live replay stopped by the control topic
        b = VirtualDevice(lines(40), profile=PROF, device_id=b"dev-b", batch=4, live=True,
                          mqtt="mqtt://dev-b:%s@127.0.0.1:%d" % (users["dev-b"], broker.port))
        try:
            a.start()
            b.start()
            assert a.wait(60) == 0, a.stderr()
            wait_for(lambda: events(sink.stream("dev-a"))["status"][-1:]
                     and events(sink.stream("dev-a"))["status"][-1].code_name == "STOPPED",
                     20, "dev-a's STOPPED")
            # byte for byte the serial line's stream
            assert sink.stream("dev-a") == serial_stream(tmp_path, readings, base)
            ev = events(sink.stream("dev-a"))
            assert sum(len(x) for x in ev["batch"]) == 300
            assert [s.frames_dropped for s in ev["status"]] == [0] * len(ev["status"])

            wait_for(lambda: sum(len(x) for x in events(sink.stream("dev-b"))["batch"]) == 40,
                     20, "dev-b's 40 reports")
            hellos = len(events(sink.stream("dev-b"))["hello"])
            sink.send("dev-b", b"!hello")
            wait_for(lambda: len(events(sink.stream("dev-b"))["hello"]) > hellos
                     or b.feed(lines(1)), 20, "the HELLO asked for on the control topic")
            assert b.running
            sink.send("dev-b", b"!stop")
            wait_for(lambda: not b.running or b.feed(lines(1)), 20, "the stop asked for")
            assert b.wait(20) == 0, b.stderr()
            ev = events(sink.stream("dev-b"))
            assert ev["status"][-1].code_name == "STOPPED"
            assert ev["hello"][0].device_id == b"dev-b\0\0\0"
            # no credential in what the boards sent or printed
            for dev, user in ((a, "dev-a"), (b, "dev-b")):
                assert users[user].encode() not in sink.stream(user)
                assert users[user] not in dev.stderr()
        finally:
            a.close()
            b.close()
            sink.close()


def test_broker_down_at_start_buffered_delivered_and_overflow_counted(mp_port, tmp_path):
    users = {"big": "pw-big", "small": "pw-small"}
    broker = Broker(tmp_path / "broker", users=users)
    # the boards see a broker that is down (a closed port) until the gate opens; the test's
    # subscriber is on the broker before that (under load it could otherwise subscribe after
    # a board had reconnected and flushed its ring, and miss those frames: seen in CI)
    gate = Gate(broker.port)
    url = "mqtt://127.0.0.1:%d" % gate.port
    boards = []
    sink = None
    try:
        broker.start()
        sink = Sink(broker)
        for user, ring in (("big", 16384), ("small", 150)):
            boards.append(VirtualDevice(
                lines(240), profile=PROF, device_id=user.encode(), batch=4, hello_every=0,
                status_every=0, period_ms=25,
                config={"write_timeout_ms": 0},
                mqtt=url, mqtt_options={"user": user, "password": users[user],
                                        "ring_bytes": ring, "linger_ms": 20000}))
        for b in boards:
            b.start()
        time.sleep(1.5)          # the boards sample; the broker is not there
        gate.open()
        for b in boards:
            assert b.wait(60) == 0, b.stderr()
        for user in users:
            wait_for(lambda: [s.code_name for s in events(sink.stream(user))["status"]]
                     == ["STOPPED"], 20, user + "'s STOPPED")
        big, small = events(sink.stream("big")), events(sink.stream("small"))
        # room in the ring: everything delivered, nothing dropped
        assert sum(len(x) for x in big["batch"]) == 240
        assert sorted(x.seq for x in big["batch"]) == list(range(60))
        assert big["status"][0].frames_dropped == 0 and big["status"][0].ticks == 240
        # a small ring: the frames that did not fit are dropped and counted
        seqs = sorted(x.seq for x in small["batch"])
        missing = 60 - len(seqs)
        assert seqs, ("no batch of the small board decoded", len(sink.stream("small")),
                      [s.code_name for s in small["status"]], len(small["hello"]))
        assert missing > 0 and len(set(seqs)) == len(seqs)
        assert small["status"][0].frames_dropped == missing
        assert sum(len(x) for x in small["batch"]) == 240 - 4 * missing
        assert len(small["hello"]) == 2 and small["status"][0].ticks == 240
    finally:
        for b in boards:
            b.close()
        if sink is not None:
            sink.close()
        gate.close()
        broker.stop()


@pytest.mark.parametrize("output,needle", [
    ({"kind": "mqtt"}, "needs a url"),
    ({"kind": "mqtt", "url": "http://h:1"}, "mqtt://"),
    ({"kind": "mqtt", "url": "mqtt://h:99999"}, "port"),
    ({"kind": "mqtt", "url": "mqtt://h:1", "password": "Hush-42"}, "needs a user"),
    ({"kind": "mqtt", "url": "mqtt://h:1", "ring_bytes": 3}, "ring_bytes"),
    ({"kind": "mqtt", "url": "mqtt://u:Hush-42@h:1", "bogus": 1}, "unknown output key bogus"),
])
def test_bad_mqtt_output_is_status_config_without_secrets(mp_port, tmp_path, output, needle):
    import json

    (tmp_path / "zeal_profile.json").write_text(PROF.to_json())
    (tmp_path / "zeal_config.json").write_text(json.dumps({"output": output,
                                                           "start_delay_ms": 0}))
    done = subprocess.run([C.locate_micropython(), "-c", "import zealfw.main as m;m.run()"],
                          cwd=tmp_path, input=b"", capture_output=True, timeout=60,
                          env=dict(os.environ, MICROPYPATH=C.FIRMWARE))
    assert done.returncode == 0, done.stderr
    st = events(done.stdout)["status"]
    assert [s.code_name for s in st] == ["CONFIG"] and needle in st[0].message, st
    assert b"Hush-42" not in done.stdout + done.stderr
