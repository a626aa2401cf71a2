"""A throw-away Mosquitto for the tests, the product's (zeal.demo.broker.ThrowAwayBroker)
extended: loopback only, a free port, a password file and an ACL made in a temp dir (the same
rules as deploy/mosquitto/: a device may publish only under its own topic), stopped at
teardown.

`Broker(tmp_path, users={"name": "password", ...}, collectors=("collector",))` writes the
files; `start()` runs `mosquitto -c FILE` and waits until the port answers; `stop()` ends it
(SIGTERM: it saves its persistence file, so a restart on the same port and folder keeps the
sessions and queued messages, as a real deployment's broker would). `url(user)` gives the
mqtt:// URL a client of that user connects with.

`Broker(..., tls=True)` adds a TLS listener on a second free loopback port (`tls_port`) with a
throw-away CA and a server certificate for 127.0.0.1 and localhost (`ca_file`: the CA a client
checks the broker against), made with the `openssl` command line (no Python dependency: the
`cryptography` package is not one of the project's); `url(user, tls=True)` gives its mqtts://
URL. The plain listener stays, with the same users and ACL. `throwaway_ca(folder)` makes
another CA (a wrong one, for the tests of a refused certificate).

`need_mosquitto()` returns the binary's path, or skips the test with one loud line saying how
to install it (CI installs it in .ci/run; under CI=true tests/conftest.py fails on the skip).
"""
import os
import pwd
import shutil
import subprocess

import pytest

from zeal.demo.broker import ThrowAwayBroker, find_mosquitto as find, free_port

INSTALL = "apt-get install mosquitto (Debian/Ubuntu), brew install mosquitto (macOS)"


def need_mosquitto() -> str:
    path = find("mosquitto")
    if path is None or find("mosquitto_passwd") is None:
        pytest.skip("MQTT tests need the Mosquitto broker, which is not installed: %s"
                    % INSTALL)
    return path


def _openssl(*argv) -> None:
    """Run the openssl command line; its own error text when it fails."""
    binary = shutil.which("openssl")
    if binary is None:
        pytest.fail("the TLS broker needs the openssl command line (apt-get install openssl)")
    done = subprocess.run([binary, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, "openssl %s: %s" % (argv[0], done.stderr.decode(errors="replace"))


def throwaway_ca(folder, name: str = "ca"):
    """A self-signed CA made in `folder` for a test (EC P-256, valid 2 days): the paths
    (NAME.pem, NAME.key)."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    pem, key = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".key")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", pem, "-days", "2",
             "-subj", "/CN=zeal throw-away test CA %s" % name,
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return pem, key


def server_certificate(folder, ca_pem: str, ca_key: str, name: str = "server"):
    """A server certificate for 127.0.0.1 and localhost signed by the CA: (NAME.pem,
    NAME.key)."""
    folder = str(folder)
    pem, key = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".key")
    csr, ext = os.path.join(folder, name + ".csr"), os.path.join(folder, name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    _openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-set_serial",
             str(int.from_bytes(os.urandom(8), "big")), "-days", "2", "-extfile", ext,
             "-out", pem)
    return pem, key


def acl_text(collectors) -> str:
    """The ACL of deploy/mosquitto/acl with the collector users of a test."""
    lines = ["# collectors: read every device's frames, share sessions, talk to the devices"]
    for user in collectors:
        lines += ["user %s" % user, "topic read zeal/+/frames", "topic readwrite zeal/+/hello",
                  "topic write zeal/+/control", ""]
    lines += ["# devices (any other user): only under their own name",
              "pattern write zeal/%u/frames", "pattern read zeal/%u/control", ""]
    return "\n".join(lines)


class Broker(ThrowAwayBroker):
    """The product's throw-away broker (zeal.demo.broker) with users, an ACL, TLS and
    persistence: its config_lines and ports."""

    def __init__(self, folder, users=None, collectors=("collector",), port=None, tls=False):
        need_mosquitto()
        super().__init__(folder, port or free_port())
        self.users = dict(users or {})
        for c in collectors:
            self.users.setdefault(c, "pw-" + c)
        self.collectors = tuple(collectors)
        self.log = os.path.join(self.folder, "mosquitto.log")
        self.tls_port = self.ca_file = None
        if tls:
            self.tls_port = free_port()
            while self.tls_port == self.port:
                self.tls_port = free_port()
            self.ca_file, ca_key = throwaway_ca(self.folder, "ca")
            self._cert, self._key = server_certificate(self.folder, self.ca_file, ca_key)
        self._write_files()

    def _write_files(self) -> None:
        pw = os.path.join(self.folder, "passwd")
        open(pw, "w").close()
        os.chmod(pw, 0o600)
        with open(pw, "w") as f:  # plain text, hashed in place by mosquitto_passwd -U
            f.writelines("%s:%s\n" % kv for kv in self.users.items())
        subprocess.run([find("mosquitto_passwd"), "-U", pw], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._passwd = pw
        self._acl = os.path.join(self.folder, "acl")
        with open(self._acl, "w") as f:
            f.write(acl_text(self.collectors))

    def config_lines(self) -> list:
        # the TLS listener (per_listener_settings false: the same users and ACL as the plain one)
        tls = ["listener %d 127.0.0.1" % self.tls_port, "cafile %s" % self.ca_file,
               "certfile %s" % self._cert, "keyfile %s" % self._key] if self.tls_port else []
        return [
            "per_listener_settings false",
            # started as root, mosquitto drops to this user: stay the owner of the files
            "user %s" % pwd.getpwuid(os.getuid()).pw_name,
            "listener %d 127.0.0.1" % self.port,
            "allow_anonymous false",
            "password_file %s" % self._passwd] + tls + [
            "acl_file %s" % self._acl,
            "persistence true",
            "persistence_location %s/" % self.folder,
            "autosave_interval 1",
            # a collector may hold many unacknowledged messages (it acknowledges after its
            # commit) and may be away for a while: never drop queued messages in a test
            "max_queued_messages 0",
            "max_inflight_messages 0",
            "log_dest file %s" % self.log,
            "log_type error", "log_type warning", "log_type notice",
            "log_type information", "connection_messages true"]

    def ports(self) -> list:
        return [p for p in (self.port, self.tls_port) if p]

    def url(self, user=None, password=None, tls=False) -> str:
        """The URL a client of `user` connects with: mqtt://, or mqtts:// to the TLS
        listener (tls=True; the broker must have been made with tls=True)."""
        user = user or self.collectors[0]
        password = self.users[user] if password is None else password
        if tls:
            assert self.tls_port, "this Broker has no TLS listener: Broker(..., tls=True)"
            return "mqtts://%s:%s@127.0.0.1:%d" % (user, password, self.tls_port)
        return "mqtt://%s:%s@127.0.0.1:%d" % (user, password, self.port)

    def read_log(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# ---- boards: captured frames replayed by publishers ---------------------------------------------
def board_frames(device_id: bytes, boot: int, n: int, *, hello_every: int = 16):
    """The serial stream of a board's boot as a list of wire frames (bytes, each ending in its
    0x00): a HELLO, then n DATA frames (8 reports of a 4-bit humidity profile each) with a
    HELLO after every `hello_every` of them, made with the host codec. Returns (profile,
    frames); frames[i] is a DATA frame exactly when it is in `data_seq` order."""
    from zeal import wire
    from zeal.mechanism.grid import profile as P
    from zeal.mechanism.grid import reports

    prof = P.from_bits(23.5, 83.9, 1.0, 4)
    fp = bytes.fromhex(prof.fingerprint)[:8]
    nonce = (device_id[-4:] + boot.to_bytes(4, "little"))
    sess = wire.session_bytes(device_id, fp, boot, nonce)
    lows = [reports.to_low(prof, prof.k_lo + j) for j in range(prof.n_cells)]

    def hello(next_seq):
        return wire.encode_hello(device_id=device_id, fingerprint=fp, boot=boot, bits=prof.bits,
                                 batch=8, nonce=nonce, next_seq=next_seq)

    out = [hello(0)]
    for seq in range(n):
        out.append(wire.encode_data(seq=seq, bits=prof.bits, session=sess,
                                    reports=[lows[(seq * 7 + i + boot) % len(lows)]
                                             for i in range(8)]))
        if hello_every and (seq + 1) % hello_every == 0:
            out.append(hello(seq + 1))
    return prof, out


def device_id(i: int) -> bytes:
    return b"dev%05d" % i


class Publisher:
    """One board: a paho client under its own user publishing its frames on
    zeal/<device hex>/frames at QoS 1 (paho resends what the broker had not acknowledged
    after a reconnect)."""

    def __init__(self, broker, user, topic_device=None, password=None, ca_file=None):
        """ca_file: publish over TLS to the broker's TLS listener, checking its certificate
        against this CA (a Broker made with tls=True; its own CA is broker.ca_file)."""
        import paho.mqtt.client as mqtt
        self.topic = "zeal/%s/frames" % (topic_device or user)
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="pub-" + user,
                                  protocol=mqtt.MQTTv311, clean_session=False)
        self.client.username_pw_set(user, broker.users[user] if password is None else password)
        self.client.reconnect_delay_set(0.1, 1)
        self.client.max_inflight_messages_set(1000)
        self.refused = []
        self.client.on_connect = self._on_connect
        self.acked = set()  # mids the broker acknowledged (PUBACK)
        self.client.on_publish = lambda c, u, mid, rc, props: self.acked.add(mid)
        self.connected = __import__("threading").Event()
        if ca_file is not None:
            self.client.tls_set(ca_certs=ca_file)
        self.client.connect("127.0.0.1", broker.tls_port if ca_file else broker.port,
                            keepalive=10)
        self.client.loop_start()

    def _on_connect(self, client, userdata, flags, rc, props):
        if rc.is_failure:
            self.refused.append(str(rc))
        else:
            self.connected.set()

    def publish(self, payload: bytes):
        return self.client.publish(self.topic, payload, qos=1)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()
