"""MQTT collector: a broker's `zeal/<device>/frames` topics -> per-device wire.Decoder -> store.

The boards publish on `zeal/<device-id>/frames` (QoS 1) payloads of one or more whole wire
frames, exactly the bytes of the serial line; so each device topic is read as a stream
(zeal.collect.stream, named "mqtt:<topic>", its own Decoder: `TopicStream`), committed by the
serial collector's writer (zeal.collect.writer), and everything the serial collector does
(sessions, unresolved DATA kept until its HELLO, rejects, STATUS, events keyed for
idempotence) holds here too. paho-mqtt v2, MQTT v5.

Several collectors share the load with a shared subscription (`--group NAME`: the broker
gives each message to one member of `$share/NAME/<topic>`), so one device's frames are split
between collectors. What that changes, and how it is met:

- Sessions. A DATA frame opens only under the HELLO of its boot, which went to one collector.
  Every collector republishes each HELLO it reads, retained, on `zeal/<device>/hello`, and
  every collector subscribes to `zeal/+/hello` (not shared): all collectors learn every
  session, a collector started later gets each device's latest at once, and DATA that came
  first is kept Unresolved until it arrives (as on a serial line).
- Nothing lost, nothing twice. Messages are acknowledged (PUBACK, manual) only after the
  transaction holding their frames has committed; the session is persistent (clean_start
  False, a session expiry, a fixed client id): a collector killed at any moment and started
  again with the same --client-id gets every unacknowledged message again. Frames are stored
  under their key (device, boot, nonce, seq) with conflict detection: redelivered or
  overlapping frames store nothing twice. A redelivered frame is not a reject, and a stale
  (retained or redelivered) HELLO is not a restart: neither is recorded.
- Losses. One collector sees a part of each device's sequence, so its decoder's loss count
  means nothing alone; losses are a function of the store, which every collector writes
  (zeal.collect.accounting): with each commit a collector gives the span it knows of each
  session with news (where it began listening, the highest number known sent), and the
  store sets the session's loss rows from the frames stored: a hole that another member
  fills later (its messages held by the broker while it was away) is withdrawn at that
  commit, and two collectors compute the same rows.
- Identity bound to the topic. A board publishes on zeal/<topic id>/frames, and the broker's
  ACL lets only the topic's user publish there; so a HELLO must name the device its topic
  stands for: by default the topic id is the device id in hex (the firmware's default, and
  `zeal flash --mqtt-user <hex id>`) or, for a printable id, its text (device_name); a fleet
  whose topic ids are other names gives the map (`--topic-map FILE`: lines "TOPIC-ID
  DEVICE-ID", the device id in hex or as text; several lines for one topic allow several
  ids). A HELLO naming another device is refused with everything under it (its DATA and
  STATUS): each frame a reject `id_mismatch` (no device, the topic's port), one warning line
  per topic and device, nothing stored under the named device, nothing republished.

All devices' records of one commit go into ONE store transaction (a serial collector commits
one per port; a fleet has thousands of devices).

Known limit: Mosquitto 2.0.11 (Debian 12), after a restart, drops what is published to a
shared subscription restored from its persistence file until a member of the group connects
again (a plain subscription, no --group, queues it for the persistent session). Measured:
with boards publishing through the restart, the frames of that window (under a second here)
were lost; each is counted as a gap in the store, none silently, and delivery goes on once
the collector is back (it retries after RETRY_FIRST s). Subscribing anew changes nothing.

The broker may be down at the start (tried again with a growing delay, one line saying so)
or go away during the run (reconnected with the same growing delay; unacknowledged
messages come again). Wrong credentials, a refused subscription, a broker certificate
that --ca-file does not verify (mqtts://) or a --ca-file that cannot be read end the run
with one line and exit status 1.
"""
import contextlib
import select
import socket
import ssl
import sys
import threading
import time
from typing import Optional
from urllib.parse import unquote, urlsplit

from .. import wire
from ..errors import ZealError
from ..text import shown
from .loop import FLUSH, Ending, Source, finish, stop_signals
from .progress import Devices, Progress
from .store import EventRecord, StoreError
from .topic import IdGuard, TopicStream, device_of, load_topic_map
from .writer import Writer

DEFAULT_TOPIC = "zeal/+/frames"
RETRY_FIRST = 0.5   # seconds before the first retry of a broker that is down
RETRY_MAX = 10.0    # the longest wait between two tries
RECEIVE_MAXIMUM = 20000  # unacknowledged messages the broker may have in flight to us
SESSION_EXPIRY = 24 * 3600  # seconds the broker keeps a collector's session while it is away
READ_BURST = 2000     # messages read before the network turn yields to the writer
INSTALL = "pip install 'zeal-mcu[fleet]' (paho-mqtt >= 2)"


class MqttError(ZealError):
    """The broker refused us (credentials, subscription) or the URL is not usable."""


def _paho():
    try:
        import paho.mqtt.client as client
    except ImportError:
        raise ZealError("--mqtt needs paho-mqtt, which is not installed: %s" % INSTALL) from None
    if not hasattr(client, "CallbackAPIVersion"):
        raise ZealError("--mqtt needs paho-mqtt >= 2 (this one is older): %s" % INSTALL)
    return client


def parse_url(url: str) -> dict:
    """mqtt://[USER[:PASS]@]HOST[:PORT] (1883) or mqtts://... (TLS, 8883) -> a dict with
    host, port, user, password, tls and `shown` (the URL without its password)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise MqttError("not an MQTT URL: %r (mqtt://[USER[:PASS]@]HOST:PORT, or mqtts:// "
                        "for TLS)" % _hide(url))
    try:
        port = parts.port
    except ValueError:
        raise MqttError("bad port in %s" % _hide(url)) from None
    tls = parts.scheme == "mqtts"
    port = port or (8883 if tls else 1883)
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    host = parts.hostname
    shown = "%s://%s%s:%d" % (parts.scheme, (user + "@") if user else "",
                              "[%s]" % host if ":" in host else host, port)
    return {"host": host, "port": port, "user": user, "password": password, "tls": tls,
            "shown": shown}


def _hide(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(":" + parts.password + "@", ":***@", 1)


class MqttCollector(Source):
    """Collect from an MQTT broker into `store`. `url`: mqtt://[USER[:PASS]@]HOST:PORT;
    `topic`: the frames topic filter; `group`: a shared-subscription group name (several
    collectors share the messages) or None; `client_id`: this collector's MQTT client id, the
    name of its persistent session on the broker: give each collector its own, and the same
    one again when it restarts (that is what brings back the messages it had not
    acknowledged). Other arguments as zeal.collect.collector.Collector's. Call `run` in the
    thread that opened the store.

    The network and the store are served by one thread (paho's external-loop API; a network
    thread beside it halved the messages/s, measured): each message is decoded by its
    topic's stream and taken by the writer at once."""

    def __init__(self, url: str, store, *, topic: str = DEFAULT_TOPIC,
                 group: Optional[str] = None, client_id: Optional[str] = None,
                 password: Optional[str] = None, profiles=(), keep_vector: bool = False,
                 on_progress=None, log=None, verbose: bool = False, ca_file=None,
                 topic_map: Optional[dict] = None, store_wait: Optional[float] = None):
        self.broker = parse_url(url)
        if password is not None:
            self.broker["password"] = password
        if group is not None and (not group or any(c in group for c in "/+#")):
            raise MqttError("bad --group %r: a name without '/', '+' or '#'" % group)
        if not topic or "#" in topic[:-1] or topic.startswith("$share/"):
            raise MqttError("bad --topic %r (a topic filter such as zeal/+/frames; the "
                            "shared subscription is made with --group)" % topic)
        if ca_file is not None and not self.broker["tls"]:
            raise MqttError("--ca-file is for a TLS broker: an mqtts:// URL")
        self.mqtt = _paho()
        super().__init__()
        self.store = store
        self.keep_vector = keep_vector
        self.on_progress = on_progress
        self.log = log if log is not None else _stderr
        for prof in profiles:
            store.add_profile(prof)
        self._profiles = store.profiles()
        self.progress = Progress()
        self.progress.devices = Devices(store)  # bounded by the store's cap on devices
        self.writer = Writer(store, self.progress, self, log=self.log, verbose=verbose,
                             store_wait=store_wait)
        self.ports = []               # a TopicStream per device topic heard
        self.topic = topic
        self.group = group
        self.client_id = client_id or "zeal-%s-%s" % (socket.gethostname(), group or "all")
        self.ca_file = ca_file
        self.guard = IdGuard(topic_map, self.log)
        self._by_topic = {}
        self._inbound = 0             # messages of any topic read on this run
        self._retry_at = 0.0          # when to try the broker again after losing it
        self._retry_delay = RETRY_FIRST
        self._store_retry_at = 0.0    # the store unavailable: when to try it again
        self._client = None
        self._gen = 0                 # connection number: acks of an older one are void
        self._acks = []               # (gen, mid, qos) taken since the last commit
        self._events = []             # the run's events (connect, disconnect): the broker's
        self._fatal = None            # a refusal that ends the run
        self.connected = threading.Event()  # set at the first CONNACK (others may wait on it)
        self._link = None
        self._payload_bytes = 0
        self._committed_payload = 0
        self._republish = None        # the frames topic of the message being read, if any
        self.repeating = False        # the last commit with news stored nothing new
        self.repeat_bytes = 0         # payload bytes that stored nothing new (a re-publish)
        self.messages = 0             # frame messages received (redeliveries included)

    # ---- what the writer asks of its source -----------------------------------------------------
    @property
    def streams(self) -> list:
        return self.ports

    @staticmethod
    def queued_frames() -> int:
        return 0  # nothing waits between a message and the writer

    @staticmethod
    def holding():
        return contextlib.nullcontext()  # one thread: nothing reads while it writes

    # ---- the network ----------------------------------------------------------------------------
    def _stream(self, topic: str) -> TopicStream:
        p = self._by_topic.get(topic)
        if p is None:
            p = TopicStream(topic, wire.Decoder(self._profiles, vectors=self.keep_vector),
                            self.guard, self._republish_hello)
            self._by_topic[topic] = p
            self.ports.append(p)
        return p

    def _republish_hello(self, piece: bytes) -> None:
        """A HELLO read on a frames topic, republished retained for every collector (one
        read on zeal/+/hello was shared by a collector already: not again)."""
        if self._republish is not None:
            dev = self._republish.split("/")[1]
            self._client.publish("zeal/%s/hello" % dev, piece, qos=1, retain=True)

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            self._fatal = "the broker %s refused the connection: %s" % (
                self.broker["shown"], reason_code)
            if reason_code.value in (0x86, 0x87, 0x8C):  # bad user/password, not authorized
                self._fatal += " (check the user name and password)"
            self._stop.set()
            return
        self._gen += 1
        filt = self.topic if self.group is None else "$share/%s/%s" % (self.group, self.topic)
        opts = self.mqtt.SubscribeOptions(qos=1)
        client.subscribe([(filt, opts), ("zeal/+/hello", self.mqtt.SubscribeOptions(qos=1))])
        self.progress.connected = 1
        self._events.append(EventRecord("connect", "session present" if flags.session_present
                                        else "", port=self.broker["shown"], time=time.time()))
        self.connected.set()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        bad = [rc for rc in reason_codes if rc.is_failure]
        if bad:
            self._fatal = ("the broker %s refused the subscription to %s: %s (is this user "
                           "allowed to read it? see the ACL)" % (
                               self.broker["shown"], self.topic, bad[0]))
            self._stop.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self.progress.connected = 0
        if not self._stop.is_set():
            self.progress.disconnects += 1
            self.log("zeal: lost the broker %s (%s); reconnecting" % (self.broker["shown"],
                                                                     reason_code))
            self._events.append(EventRecord("disconnect", str(reason_code),
                                            port=self.broker["shown"], time=time.time()))

    def _on_message(self, client, userdata, msg):
        gen = self._gen
        self._inbound += 1
        p = None
        try:
            dev = device_of(msg.topic)
            if dev is not None:
                kind = msg.topic.rsplit("/", 1)[1]
                frames_topic = "zeal/%s/frames" % dev
                p = self._stream(frames_topic)
                if kind == "frames":
                    self.messages += 1
                    self._payload_bytes += len(msg.payload)
                    p.nbytes += len(msg.payload)
                    self._republish = frames_topic
                else:
                    self._republish = None  # a HELLO shared by a collector: not again
                recs = p.decode(bytes(msg.payload))
                self.writer.take(("data", p, (recs, p.nbytes)))
        except Exception as exc:  # never let the network turn die: report, go on
            text = "%s: %s" % (type(exc).__name__, exc)
            if p is not None:
                self.writer.take(("failure", p, text))
            else:
                self.progress.reader_errors += 1
                self.log("zeal: a message could not be read (%s)" % text)
        finally:
            self._republish = None
            if msg.qos:
                self._acks.append((gen, msg.mid, msg.qos))

    # ---- committing -----------------------------------------------------------------------------
    def _commit_all(self, started: float, notify: bool = True, final: bool = False) -> None:
        """One transaction for every device: frames, events, unresolved DATA; then the
        acknowledgements of the messages they came in. The store unavailable (a server
        restarting, a lock, a full disk): nothing is acknowledged, everything read is kept
        and tried again after the writer's wait (the network served meanwhile: at most
        RECEIVE_MAXIMUM messages unacknowledged are in flight, so what is held is bounded);
        `final`: tried again until written (or given up)."""
        writer = self.writer
        if not final and writer.down and time.monotonic() < self._store_retry_at:
            if self.interrupted:  # Ctrl-C while the store is away: give up now
                writer.failed(writer.last_store_error)
            self.progress.store_down = writer.unavailable_for()
            if notify and self.on_progress is not None:
                self.on_progress(self.progress)
            return  # not yet: the next try is due at _store_retry_at
        while True:
            try:
                self._commit_once()
            except (StoreError, OSError) as exc:
                err = writer.transient(exc)
                if err is None:
                    raise
                wait = writer.failed(err)  # raises when it gives up
                if final:
                    self.release(wait)
                    continue
                self._store_retry_at = time.monotonic() + wait
            break
        self.progress.commits += 1
        self.progress.bytes = self._payload_bytes
        self.progress.elapsed = time.monotonic() - started
        if notify and self.on_progress is not None:
            self.on_progress(self.progress)

    def _commit_once(self) -> None:
        acks, self._acks = self._acks, []
        try:
            if (any(p.busy for p in self.ports) or self._events
                    or self._payload_bytes != self._committed_payload):
                # the payload bytes that stored something new (as the previous commit until
                # this one is known: Writer.repeats)
                delta = self._payload_bytes - self._committed_payload
                link = ((self._link, self._payload_bytes - self.repeat_bytes
                         - (delta if self.repeating else 0))
                        if self._link is not None else None)
                self.writer.commit_together(self.ports, self._events, link, delta, self)
                self._committed_payload = self._payload_bytes
                self._events = []
        except BaseException as exc:
            self._acks = acks + self._acks  # none of them committed: none acknowledged
            if isinstance(exc, StoreError):
                self.writer.last_store_error = exc
            raise
        self.writer.ok()
        self._send_acks(acks)

    def _send_acks(self, acks) -> None:
        client = self._client
        for gen, mid, qos in acks:
            if gen == self._gen and client is not None:
                client.ack(mid, qos)

    def _make_client(self):
        m = self.mqtt
        client = m.Client(m.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                          protocol=m.MQTTv5, manual_ack=True)
        b = self.broker
        if b["user"] is not None:
            client.username_pw_set(b["user"], b["password"])
        if b["tls"]:
            try:
                client.tls_set(ca_certs=self.ca_file)
            except (OSError, ValueError) as exc:  # no such file; no certificate in it
                raise MqttError("cannot use --ca-file %s: %s" % (
                    self.ca_file, getattr(exc, "strerror", None) or exc)) from None
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        client.reconnect_delay_set(min_delay=1, max_delay=int(RETRY_MAX))
        client.max_queued_messages_set(0)
        return client

    def _connect_props(self):
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = SESSION_EXPIRY
        props.ReceiveMaximum = RECEIVE_MAXIMUM
        return props

    def _attempt(self, client, first: bool, say: bool) -> bool:
        """One try at the broker (connect, or reconnect after a loss): True when the TCP and
        TLS connection is made. What no retry can mend (an unknown host, a broker
        certificate the CA does not verify, TLS refused) raises MqttError; an unreachable
        broker is said in one line when `say`, and gives False."""
        try:
            if first:
                client.connect(self.broker["host"], self.broker["port"], keepalive=15,
                               clean_start=False, properties=self._connect_props())
            else:
                client.reconnect()
            return True
        except (OSError, ConnectionError) as exc:
            if isinstance(exc, socket.gaierror):
                raise MqttError("cannot find the broker host %s (%s)"
                                % (self.broker["host"], exc.strerror or exc)) from None
            if isinstance(exc, ssl.SSLCertVerificationError):  # again would not help
                raise MqttError("the broker %s's TLS certificate was refused: certificate "
                                "verify failed: %s (%s)" % (
                                    self.broker["shown"], exc.verify_message,
                                    "is --ca-file %s the CA that signed it?" % self.ca_file
                                    if self.ca_file else "give its CA with --ca-file")
                                ) from None
            if isinstance(exc, ssl.SSLError) and not isinstance(exc, ssl.SSLEOFError):
                raise MqttError("TLS with the broker %s failed: %s (is port %d its TLS "
                                "listener?)" % (self.broker["shown"], exc.reason or exc,
                                                self.broker["port"])) from None
            if say:
                why = getattr(exc, "strerror", None) or exc
                if isinstance(exc, TimeoutError) and self.broker["tls"]:
                    why = "no TLS answer in %g s: is port %d its TLS listener?" % (
                        client.connect_timeout, self.broker["port"])
                self.log("zeal: broker %s not reachable (%s); retrying (every %g-%g s) "
                         "until it is" % (self.broker["shown"], why, RETRY_FIRST, RETRY_MAX))
            return False

    def _connect(self, client, deadline: Optional[float] = None) -> bool:
        """Connect, retrying while the broker is unreachable (one line, then every try
        quietly); False if stopped meanwhile or `deadline` (time.monotonic()) passed."""
        delay, said = RETRY_FIRST, False
        while not self._stop.is_set() and (deadline is None or time.monotonic() < deadline):
            if self._attempt(client, True, not said):
                return True
            said = True
            if deadline is not None:
                delay = max(0.0, min(delay, deadline - time.monotonic()))
            self._stop.wait(delay)
            delay = min(delay * 2, RETRY_MAX)
        return False

    def _pump(self, client, timeout: float) -> None:
        """One turn of the network in this thread: wait up to `timeout` s for the socket,
        read the messages that are there (their callbacks decode them), write what is
        queued (acknowledgements, HELLO republishes), keep the connection alive. A lost
        connection is made again here, with a growing delay (paho's loop_forever would do
        it in its own thread)."""
        sock = client.socket()
        if sock is None:
            self._reconnect(client, timeout)
            return
        try:
            readable, _, _ = select.select([sock], [sock] if client.want_write() else [], [],
                                           timeout)
        except (OSError, ValueError):  # closed under us: loop_misc notices and reports it
            readable = []
        if readable:
            # paho reads one packet a call; go on while messages come, then back to select
            for _ in range(READ_BURST):
                before = self._inbound
                if client.loop_read() != 0 or self._inbound == before:
                    break
        if client.socket() is not None and client.want_write():
            client.loop_write()
        client.loop_misc()

    def _reconnect(self, client, timeout: float) -> None:
        """The connection was lost (said then): try again when due, with a growing delay;
        a refusal no retry can mend ends the run (as at the start)."""
        now = time.monotonic()
        if now < self._retry_at:
            self._stop.wait(min(timeout, self._retry_at - now))
            return
        try:
            if self._attempt(client, False, False):
                self._retry_delay = RETRY_FIRST
                return
        except MqttError as exc:
            self._fatal = str(exc)
            self._stop.set()
            return
        self._retry_at = time.monotonic() + self._retry_delay
        self._retry_delay = min(self._retry_delay * 2, RETRY_MAX)

    def _quit(self, client) -> None:
        """Send DISCONNECT (written at once: no network thread) and close."""
        try:
            client.disconnect()
        except Exception:  # the connection is gone already
            pass

    def run(self, *, duration: Optional[float] = None, reports: Optional[int] = None,
            until_stopped: bool = False) -> Progress:
        """As Collector.run, from the broker. Raises MqttError if the broker refuses us."""
        self.store.write()
        ending = Ending(duration, reports, until_stopped)
        started = time.monotonic()
        client = self._client = self._make_client()
        with stop_signals(self._on_signal):
            try:
                if self._connect(client, None if duration is None else started + duration):
                    self._link = self.writer.call(lambda: self.store.open_link(
                        self.broker["shown"]))
                next_commit = time.monotonic() + FLUSH
                while not self._stop.is_set():
                    wait = next_commit - time.monotonic()
                    if wait > 0:
                        self._pump(client, min(wait, FLUSH))
                        continue
                    self._commit_all(started)
                    next_commit = time.monotonic() + FLUSH
                    if ending.over(self.progress, self.ports):
                        break
                reason = ending.final(self.interrupted)
            finally:
                self._stop.set()
        if self._fatal is not None:
            self._quit(client)
            raise MqttError(self._fatal)
        # Commit what was read, acknowledge it, then leave: what arrives after the last
        # commit stays unacknowledged and comes again to the next run.
        self._commit_all(started, notify=False, final=True)
        self._quit(client)
        self._acks = []
        self._commit_all(started, notify=False, final=True)  # no acks: the connection is gone
        if self._link is not None:
            self.writer.call(lambda: self.store.close_link(
                self._link, self._payload_bytes - self.repeat_bytes))
        if self._link is None and reason != "interrupted":
            self.progress.never_opened = [self.broker["shown"]]
        return finish(self.progress, reason, self.on_progress)


def _stderr(text: str) -> None:
    print(shown(text), file=sys.stderr, flush=True)  # device text: escaped (zeal.text)


# ---- command line --------------------------------------------------------------------------------
def cmd_collect_mqtt(args) -> int:
    from ..mechanism.kinds import load as load_any
    from . import collector as col

    if args.port:
        raise ZealError("give --port or --mqtt, not both")
    if args.baud != col.transport.DEFAULT_BAUD:
        raise ZealError("--baud is for serial ports, not --mqtt")
    parse_url(args.mqtt)  # a bad URL before anything else
    password = None
    if args.password_file:
        try:
            with open(args.password_file) as f:
                password = f.readline().rstrip("\r\n")
        except OSError as exc:
            raise ZealError("cannot read --password-file %s: %s"
                            % (args.password_file, exc.strerror or exc)) from None
    profiles = [load_any(path) for path in args.profile]
    topic_map = load_topic_map(args.topic_map) if args.topic_map else None
    return col.run_command(args, lambda store, show: MqttCollector(
        args.mqtt, store, topic=args.topic, group=args.group, client_id=args.client_id,
        password=password, profiles=profiles, keep_vector=args.keep_vector, on_progress=show,
        log=show.say, verbose=args.verbose, ca_file=args.ca_file, topic_map=topic_map),
        extra=lambda c: {"messages": c.messages})

