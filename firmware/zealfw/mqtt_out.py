# MQTT output (config output {"kind": "mqtt", ...}; its keys: zealfw/mqtt_cfg.py): the frames
# the Sender writes, exactly as on the serial line (COBS, each ending in its 0x00), published
# at QoS 1 on zeal/<id>/frames with umqtt.simple (micropython-lib; `mip install umqtt.simple`,
# firmware/package.json lists it), and the control lines "!stop" / "!hello" read from
# zeal/<id>/control. Imported only when the config names this output: a serial board never
# loads it (nor umqtt.simple).
#
# The Sender's stream: write(frame) copies the whole frame into a RAM ring made once
# (ring_bytes) and returns its length; when it does not fit, write() returns 0 and the Sender
# drops the frame after write_timeout_ms and counts it (STATUS frames_dropped), as it does for a
# stalled serial line. Nothing is sent from write(): the main loop calls poll() at the start
# of every tick, which (re)connects when due, publishes everything in the ring as one payload
# (whole frames, so the host deframes it as a chunk of the device's stream), and checks the
# control topic without blocking (check_msg). A payload is removed from the ring only after
# its PUBACK; after an error it is sent again on the next connection (QoS 1 is at least once;
# the host's ingest is idempotent).
#
# Reconnect with backoff: a failed Wi-Fi check, connect or publish closes the connection and
# waits _BACKOFF_MIN ms, doubling up to _BACKOFF_MAX, before the next attempt; a connection
# resets it. Wi-Fi (network.WLAN) is joined without blocking at start; the unix port has no
# `network` module and uses the host's network. close() (the end of the run) keeps trying
# to deliver what is in the ring for linger_ms, then disconnects.
#
# Credentials (broker user and password, Wi-Fi password) are kept in this object only: no
# method prints them or puts them into a frame, an exception text or a status message.
try:
    from micropython import const
except ImportError:  # CPython, for the host-side tests

    def const(x):
        return x


try:
    from time import sleep_ms, ticks_add, ticks_diff, ticks_ms
except ImportError:  # CPython
    import time as _time

    def ticks_ms():
        return int(_time.monotonic() * 1000)

    def ticks_add(a, b):
        return a + b

    def ticks_diff(a, b):
        return a - b

    def sleep_ms(ms):
        _time.sleep(ms / 1000)

_CTL_STOP = const(1)        # = control.CTL_STOP / CTL_HELLO
_CTL_HELLO = const(2)
_BACKOFF_MIN = const(500)   # ms before the first retry
_BACKOFF_MAX = const(8000)  # ms, the longest wait between attempts


class MqttOut:
    """The frames' stream and the control watch of an MQTT board (made by zealfw.mqtt_cfg).

    Read by tests: connects (connections made), published (payloads acknowledged), pending
    (bytes in the ring)."""

    def __init__(self, host, port, user, password, tid, ring_bytes, linger_ms, tls, ca,
                 wlan):
        self._host = host
        self._port = port
        self._user = user
        self._pw = password
        self._tls = tls
        self._ca = ca
        self._wlan = wlan
        self._cid = b"zeal-" + tid
        self._topic = b"zeal/" + tid + b"/frames"
        self._ctl = b"zeal/" + tid + b"/control"
        self._ring = bytearray(ring_bytes)
        self.pending = 0
        self._linger = linger_ms
        self._c = None
        self._next = ticks_ms()
        self._backoff = _BACKOFF_MIN
        self._cmd = 0
        self.connects = 0
        self.published = 0
        self.stream = None  # the source's own close()

    # ---- the Sender's stream --------------------------------------------------------------
    def write(self, buf):
        """Take a whole frame into the ring (its length), or 0 when it does not fit."""
        n = len(buf)
        at = self.pending
        if at + n > len(self._ring):
            return 0
        self._ring[at:at + n] = buf
        self.pending = at + n
        return n

    # ---- once per tick ----------------------------------------------------------------------
    def poll(self):
        """Connect when due, publish the ring, read the control topic. Returns 0, or
        _CTL_STOP / _CTL_HELLO when such a line arrived (a stop wins)."""
        self._service()
        c = self._cmd
        self._cmd = 0
        return c

    def _service(self):
        if self._c is None:
            if ticks_diff(ticks_ms(), self._next) < 0:
                return
            if self._wlan is not None and not self._wlan.isconnected():
                self._fail()
                return
            try:
                self._connect()
            except Exception:  # refused, unreachable, bad credentials (CONNACK), TLS
                self._fail()
                return
        try:
            if self.pending:
                self._c.publish(self._topic, memoryview(self._ring)[:self.pending], False, 1)
                self.pending = 0
                self.published += 1
            self._c.check_msg()
        except Exception:  # the connection broke: the ring is kept and sent again
            self._fail()

    def _connect(self):
        from umqtt.simple import MQTTClient

        ssl = None
        if self._tls:
            import ssl as _ssl

            ssl = _ssl.SSLContext(_ssl.PROTOCOL_TLS_CLIENT)
            if self._ca is None:
                ssl.verify_mode = _ssl.CERT_NONE
            else:
                with open(self._ca, "rb") as fh:
                    ssl.load_verify_locations(cadata=fh.read())
                ssl.verify_mode = _ssl.CERT_REQUIRED
        c = MQTTClient(self._cid, self._host, self._port, self._user, self._pw, 0, ssl)
        # umqtt.simple >= 1.4 (what mip installs) wraps the socket with the SSLContext given.
        # An older one (PyPI's last, 1.3.4; frozen in older firmware) takes no context: its
        # connect() runs `import ussl; ussl.wrap_socket(sock, **ssl_params)`, which fails
        # where there is no ussl (MicroPython >= 1.23) and elsewhere wraps WITHOUT checking
        # the CA. So it is handed our context under that name, for this connect only.
        old = ssl is not None and hasattr(c, "ssl_params")
        if old:
            import sys

            c.ssl_params = {"server_hostname": self._host}
            sys.modules["ussl"] = ssl
        c.set_callback(self._on_msg)
        self._c = c
        try:
            c.connect()
            try:  # umqtt writes a PUBLISH in 4 pieces: without NODELAY each QoS 1 publish
                c.sock.setsockopt(6, 1, 1)  # waits ~45 ms on the peer's delayed ACK (measured)
            except Exception:  # IPPROTO_TCP/TCP_NODELAY: a TLS socket or a port without it
                pass
            c.subscribe(self._ctl, 1)
        except Exception:
            self._c = None
            try:
                c.sock.close()
            except Exception:
                pass
            raise
        finally:
            if old:
                sys.modules.pop("ussl", None)
        self.connects += 1
        self._backoff = _BACKOFF_MIN

    def _fail(self):
        c = self._c
        self._c = None
        if c is not None:
            try:
                c.sock.close()
            except Exception:
                pass
        self._next = ticks_add(ticks_ms(), self._backoff)
        b = self._backoff * 2
        self._backoff = b if b < _BACKOFF_MAX else _BACKOFF_MAX

    def _on_msg(self, topic, msg):
        msg = bytes(msg).strip()
        if msg == b"!stop":
            self._cmd = _CTL_STOP
        elif msg == b"!hello" and not self._cmd:
            self._cmd = _CTL_HELLO

    # ---- the end of the run -----------------------------------------------------------------
    def close(self):
        """Deliver what is in the ring (retrying for up to linger_ms), then disconnect; then
        close the source (`stream`: zealfw.build puts this method in the source's `close`
        and the source's own in `stream`, so the main loop's closing of the source, after
        STATUS STOPPED, ends the MQTT output too). Returns the bytes left undelivered."""
        c = self.stream
        self.stream = None
        if c is not None:
            c()
        t0 = ticks_ms()
        while self.pending and ticks_diff(ticks_ms(), t0) < self._linger:
            self._service()
            if self.pending:
                sleep_ms(20)
        c = self._c
        self._c = None
        if c is not None:
            try:
                c.disconnect()
            except Exception:
                pass
        return self.pending
