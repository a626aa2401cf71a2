"""TLS where the port supports it (issue 12): Mosquitto's TLS listener with a throw-away CA
(tests/mqtt_broker.py Broker(tls=True), made with the openssl command line), end to end.

- host collector: `zeal collect --mqtt mqtts://... --ca-file CA` stores every frame published
  over TLS (paho publishers checking the same CA); a CA that did not sign the broker's
  certificate, or a --ca-file that cannot be read, ends the run with ONE `zeal:` line and
  exit status 1 (no traceback, no endless retry);
- firmware: the MicroPython unix port here has `ssl.SSLContext` (mbedTLS) with
  `load_verify_locations(cadata=...)`, DER only (this build's mbedTLS parses no PEM). The
  whole firmware, configured as `zeal flash --config` stages it (output mqtts:// with a `ca`
  file on the board), publishes over TLS with umqtt.simple (zeal.board.umqtt) into a TLS
  collector; the firmware's MQTT output given another CA refuses the broker (the broker logs
  the board's "unknown ca" alert): no connection, nothing published, the frame kept in its
  ring (counters connects / published / pending); a CA file the port cannot read (PEM here,
  or missing) is STATUS CONFIG naming the key.
Every password of these runs is checked to appear in no output.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import HOST
from mp_unix import FIRMWARE, marked, micropython
from mqtt_broker import Broker, Publisher, board_frames, device_id, need_mosquitto, throwaway_ca
from zeal import wire
from zeal.mechanism.grid import profile as P

ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))
DEV = device_id(7)
PROF = P.from_bits(23.5, 83.9, 1.0, 8)
BOARD_PW = "Tls-board-3f9a-secret"


@pytest.fixture(scope="module", autouse=True)
def _mosquitto():
    need_mosquitto()
    pytest.importorskip("paho.mqtt.client", reason="MQTT tests need paho-mqtt >= 2: "
                        "pip install 'zeal-mcu[fleet]'")


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "broker", users={DEV.hex(): "pw-" + DEV.hex(), "board-t": BOARD_PW,
                                          "board-w": BOARD_PW + "-w"}, tls=True).start()
    yield b
    b.stop()


def der(pem, out):
    """A PEM certificate as DER (what the unix port's mbedTLS reads), with the stdlib."""
    import ssl
    with open(pem) as f:
        data = ssl.PEM_cert_to_DER_cert(f.read())
    with open(out, "wb") as f:
        f.write(data)
    return str(out)


def secrets(broker):
    return list(broker.users.values())


def collect(broker, db, prof_file, ca_file, *extra):
    cmd = [sys.executable, "-m", "zeal.cli", "collect", "--mqtt", broker.url(tls=True),
           "--ca-file", str(ca_file), "--db", str(db), "--profile", str(prof_file), "--json"]
    return subprocess.Popen(cmd + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV, text=True)


def finish(proc, timeout=20):
    import signal
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # a service's stop (Ctrl-C ends with 130 instead)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def stored(db):
    """{(device id, seq)} of the stored frames, and the stored reports."""
    try:
        with sqlite3.connect(str(db)) as c:
            keys = {(bytes(d), s) for d, s in c.execute(
                "SELECT d.device_id, f.seq FROM frames f JOIN devices d ON d.id = f.device")}
            n = c.execute("SELECT COALESCE(SUM(count), 0) FROM frames").fetchone()[0]
    except sqlite3.Error:
        return set(), 0
    return keys, n


def wait_until(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.05)


def connected(db):
    try:
        with sqlite3.connect(str(db)) as c:
            return c.execute("SELECT COUNT(*) FROM events WHERE kind = 'connect'"
                             ).fetchone()[0] > 0
    except sqlite3.Error:
        return False


@pytest.fixture
def prof_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(PROF.to_json())
    return path


# ---- the host collector ----------------------------------------------------------------------
def test_collector_stores_frames_published_over_tls(tmp_path, broker):
    prof, frames = board_frames(DEV, 0, 60)
    (tmp_path / "q.json").write_text(prof.to_json())
    db = tmp_path / "z.db"
    proc = collect(broker, db, tmp_path / "q.json", broker.ca_file)
    try:
        wait_until(lambda: connected(db) or proc.poll() is not None, 20, "the TLS collector")
        assert proc.poll() is None, proc.communicate()
        pub = Publisher(broker, DEV.hex(), ca_file=broker.ca_file)
        assert pub.connected.wait(10), pub.refused
        sent = {(DEV, seq) for seq in range(60)}
        infos = [pub.publish(frame).mid for frame in frames]
        wait_until(lambda: set(infos) <= pub.acked, 20, "the broker's PUBACKs over TLS")
        pub.close()
        wait_until(lambda: stored(db)[0] == sent, 20, "every frame stored")
    finally:
        rc, out, err = finish(proc)
    assert rc == 0, err
    assert json.loads(out)["frames"] == len(sent)
    # the connection really was TLS: the broker's TLS port, a TLS client of this user
    log = broker.read_log()
    assert "on port %d" % broker.tls_port in log
    for pw in secrets(broker):
        assert pw not in out + err


def one_line_and_out(broker, proc, what):
    """The collector's exit status and its one stderr line; fails if it is still running
    after 10 s (retrying forever) or wrote more than one line (a traceback)."""
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("zeal collect with %s still running after 10 s (retrying forever?): %s"
                    % (what, err.strip()))
    for pw in secrets(broker):
        assert pw not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and out == "", err
    return proc.returncode, lines[0]


def test_collector_with_a_ca_that_did_not_sign_the_broker_is_one_line(tmp_path, broker,
                                                                       prof_file):
    wrong, _ = throwaway_ca(tmp_path / "other", "other")
    rc, line = one_line_and_out(broker, collect(broker, tmp_path / "z.db", prof_file, wrong,
                                                "--duration", "30"), "another CA")
    assert rc == 1 and line.startswith("zeal: ") and "certificate verify failed" in line, line


def test_collector_with_an_unreadable_ca_file_is_one_line(tmp_path, broker, prof_file):
    rc, line = one_line_and_out(broker, collect(broker, tmp_path / "z.db", prof_file,
                                                tmp_path / "absent.pem", "--duration", "30"),
                                "a missing --ca-file")
    assert rc == 1 and line.startswith("zeal: ") and "--ca-file" in line, line


def test_collector_pointed_at_the_plain_port_says_so_and_keeps_its_duration(tmp_path, broker,
                                                                             prof_file):
    """mqtts:// at the broker's plain listener: never a hang (the TLS handshake has paho's
    connect timeout), one line saying the broker is not reachable, and --duration ends the
    run even though it never connected (exit 1: the broker was never reached)."""
    url = broker.url(tls=True).replace(":%d" % broker.tls_port, ":%d" % broker.port)
    cmd = [sys.executable, "-m", "zeal.cli", "collect", "--mqtt", url, "--ca-file",
           str(broker.ca_file), "--db", str(tmp_path / "z.db"), "--profile", str(prof_file),
           "--duration", "3"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=60)
    assert time.monotonic() - t0 < 20
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in done.stderr
    assert [ln for ln in lines if "not reachable" in ln] and lines[0].startswith("zeal: broker")
    for pw in secrets(broker):
        assert pw not in done.stdout + done.stderr


# ---- the firmware under the unix port ---------------------------------------------------------
def mp_env(*paths):
    """MICROPYPATH for the firmware on the unix port: .frozen first (the port's `ssl` is a
    frozen module there, as on a board's sys.path), the firmware, umqtt.simple."""
    from zeal.board.umqtt import umqtt_path
    return dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", FIRMWARE, umqtt_path(),
                                                         *paths]))


def test_the_port_has_sslcontext_with_cadata(tmp_path, broker):
    """What the firmware's TLS needs of the port: ssl.SSLContext, load_verify_locations with
    cadata, CERT_REQUIRED; DER read, PEM refused by this build (so the docs say DER)."""
    ca_der = der(broker.ca_file, tmp_path / "ca.der")
    script = """
import json, ssl
out = [hasattr(ssl, "SSLContext"), hasattr(ssl, "CERT_REQUIRED")]
for name in (%r, %r):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        c.load_verify_locations(cadata=open(name, "rb").read())
        out.append("ok")
    except ValueError:
        out.append("refused")
print("@@" + json.dumps(out))
""" % (ca_der, broker.ca_file)
    done = subprocess.run([micropython(), "-c", script], cwd=str(tmp_path), env=mp_env(),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marked(done.stdout) == [[True, True, "ok", "refused"]]


def test_flashed_tls_config_publishes_over_tls_into_a_tls_collector(tmp_path, broker,
                                                                    prof_file, capsys):
    """zeal flash --config stages output {url: mqtts://..., ca: zeal_ca.der}: the firmware run
    with that very config and the CA file beside it delivers every report over TLS."""
    from zeal.board import flash as D
    from zeal.cli import main

    url = "mqtts://127.0.0.1:%d" % broker.tls_port
    conf = tmp_path / "c.json"
    pw = tmp_path / "pw"
    pw.write_text(BOARD_PW + "\n")
    conf.write_text(json.dumps({"start_delay_ms": 0, "period_ms": 0, "batch": 4,
                                "output": {"kind": "mqtt", "url": url, "user": "board-t",
                                           "password": BOARD_PW, "ca": "zeal_ca.der",
                                           "linger_ms": 10000}}))
    assert main(["flash", "--port", "/dev/ttyACM0", "--profile", str(prof_file), "--config",
                 str(conf), "--dry-run", "--json"]) == 0
    out, err = capsys.readouterr()
    assert BOARD_PW not in out + err
    plan = json.loads(out)
    shown = next(s for s in plan["steps"] if s.get("board_file") == "zeal_config.json")
    assert json.loads(shown["text"])["output"]["ca"] == "zeal_ca.der"
    steps = D.plan_flash("/dev/ttyACM0", str(prof_file), config=str(conf))
    staged = next(s for s in steps if s.kind == "write" and s.path.endswith("zeal_config.json"))
    board = tmp_path / "board"
    board.mkdir()
    (board / "zeal_config.json").write_text(staged.data)
    (board / "zeal_profile.json").write_text(PROF.to_json())
    (board / "zeal_id.bin").write_bytes(b"board-t\0")
    der(broker.ca_file, board / "zeal_ca.der")

    db = tmp_path / "z.db"
    proc = collect(broker, db, prof_file, broker.ca_file)
    readings = [30.0 + (i * 7) % 50 for i in range(120)]
    from zeal.collect.virtual import f64_line
    feed = ("\n".join(f64_line(x) for x in readings) + "\n!stop\n").encode()
    try:
        wait_until(lambda: connected(db) or proc.poll() is not None, 20, "the TLS collector")
        done = subprocess.run([micropython(), "-c", "import zealfw.main as m;m.run()"],
                              cwd=str(board), input=feed, capture_output=True, timeout=60,
                              env=mp_env())
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout == b""   # no STATUS CONFIG: every frame went to the broker
        wait_until(lambda: stored(db)[1] == len(readings), 20, "every report stored")
    finally:
        rc, out, err = finish(proc)
    assert rc == 0, err
    assert "as zeal-board-t" in broker.read_log()  # the board's own client
    for pw in secrets(broker):
        assert pw not in out + err
        assert pw.encode() not in done.stdout + done.stderr


MQTT_OUT = """
import json, time
import zealfw.mqtt_cfg as M
spec = json.loads(%r)
try:
    o = M.make(spec, b"board-w")
except ValueError as e:
    print("@@" + json.dumps(["config", str(e)]))
    raise SystemExit
o.write(b"\\x02\\x01\\x01\\x00")
t = time.ticks_ms()
while time.ticks_diff(time.ticks_ms(), t) < 1500 and not o.published:
    o.poll()
    time.sleep_ms(20)
print("@@" + json.dumps(["run", o.connects, o.published, o.pending]))
o.close()
"""


def run_output(tmp_path, broker, ca):
    spec = {"kind": "mqtt", "url": "mqtts://127.0.0.1:%d" % broker.tls_port,
            "user": "board-w", "password": broker.users["board-w"], "linger_ms": 0}
    if ca is not None:
        spec["ca"] = ca
    done = subprocess.run([micropython(), "-c", MQTT_OUT % json.dumps(spec)],
                          cwd=str(tmp_path), env=mp_env(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    for pw in secrets(broker):
        assert pw.encode() not in done.stdout + done.stderr
    return marked(done.stdout)[0]


def test_firmware_refuses_a_broker_its_ca_did_not_sign(tmp_path, broker):
    wrong, _ = throwaway_ca(tmp_path / "other", "other")
    right = der(broker.ca_file, tmp_path / "right.der")
    # the right CA: one connection, the frame published, the ring empty
    assert run_output(tmp_path, broker, right) == ["run", 1, 1, 0]
    # another CA: no connection, nothing published, the frame still in the ring
    assert run_output(tmp_path, broker, der(wrong, tmp_path / "wrong.der")) == ["run", 0, 0, 4]
    log = broker.read_log()
    assert "unknown ca" in log            # the board's TLS alert: it refused the certificate
    assert log.count("as zeal-board-w") == 1  # only the right-CA run got in


@pytest.mark.parametrize("ca,needle", [("PEM", "output ca: not a certificate this port reads"),
                                       ("absent.der", "output ca: cannot read")])
def test_a_ca_the_port_cannot_use_is_a_config_error(tmp_path, broker, ca, needle):
    if ca == "PEM":
        ca = shutil.copy(broker.ca_file, tmp_path / "ca.pem")
    kind, message = run_output(tmp_path, broker, str(ca))
    assert kind == "config" and message.startswith(needle), message


def test_hello_over_tls_decodes(tmp_path, broker):
    """A payload published by the firmware over TLS is the serial stream's bytes: its HELLO
    decodes with the host codec (the TLS path changes nothing in the frames)."""
    import paho.mqtt.client as mqtt

    got = []
    sink = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="sink",
                       protocol=mqtt.MQTTv5)
    sink.username_pw_set("collector", broker.users["collector"])
    sink.tls_set(ca_certs=broker.ca_file)
    sink.on_message = lambda c, u, m: got.append(bytes(m.payload))
    sink.connect("127.0.0.1", broker.tls_port)
    sink.subscribe("zeal/board-t/frames", qos=1)
    sink.loop_start()
    try:
        time.sleep(0.3)
        board = tmp_path / "b"
        board.mkdir()
        (board / "zeal_profile.json").write_text(PROF.to_json())
        (board / "zeal_id.bin").write_bytes(b"board-t\0")
        (board / "zeal_config.json").write_text(json.dumps({
            "start_delay_ms": 0, "period_ms": 0, "batch": 4, "output": {
                "kind": "mqtt", "url": "mqtts://board-t:%s@127.0.0.1:%d" % (
                    BOARD_PW, broker.tls_port), "ca": der(broker.ca_file, board / "ca.der")}}))
        done = subprocess.run([micropython(), "-c", "import zealfw.main as m;m.run()"],
                              cwd=str(board), input=b"!stop\n", capture_output=True,
                              timeout=60, env=mp_env())
        assert done.returncode == 0, done.stderr.decode()
        wait_until(lambda: any(isinstance(e, wire.Status)
                               for e in wire.Decoder([PROF]).feed(b"".join(got))),
                   20, "the board's STATUS over TLS")
    finally:
        sink.loop_stop()
        sink.disconnect()
    ev = wire.Decoder([PROF]).feed(b"".join(got))
    hello = next(e for e in ev if isinstance(e, wire.Hello))
    assert hello.device_id == b"board-t\0"
    assert BOARD_PW.encode() not in b"".join(got) + done.stdout + done.stderr
