# The MQTT output's set-up, off the sampling path: zealfw.start imports it only for an output
# of kind "mqtt" and frees it at once. It checks the output object, joins Wi-Fi (without
# blocking) and makes the zealfw.mqtt_out.MqttOut the loop writes frames to.
#
#   output  {"kind": "mqtt",
#            "url": "mqtt://HOST[:PORT]" | "mqtts://HOST[:PORT]"  (mqtts: TLS, port 8883;
#                   user and password may be in the URL: mqtt://USER:PASS@HOST:PORT)
#            "user": null, "password": null       broker credentials (over the URL's)
#            "wifi_ssid": null, "wifi_password": null   join this network (boards with the
#                   `network` module; ignored on the unix port, which has the host's network)
#            "tls": false                         TLS (as mqtts://; needs the port's `ssl`
#                                                 with SSLContext)
#            "ca": null                           a CA certificate file on the board, DER
#                                                 (PEM only where the port's mbedTLS parses
#                                                 PEM; the unix port's does not): the broker's
#                                                 certificate and host name are verified
#                                                 against it (without: not verified)
#            "id": null                           the topic's device id (default: the broker
#                                                 user name, as the ACL `pattern write
#                                                 zeal/%u/frames` wants; without a user, the
#                                                 16 hex digits of the board's 8-byte id)
#            "ring_bytes": 4096                   RAM ring of frames not yet published
#            "linger_ms": 5000}                   at the end: time to deliver the ring
#
# Errors are ValueError with one line naming the key, never a value: zealfw.start turns them
# into STATUS CONFIG, and a credential must never appear in a frame.
_KEYS = ("kind", "url", "user", "password", "wifi_ssid", "wifi_password", "tls", "ca", "id",
         "ring_bytes", "linger_ms")


def _str(spec, key):
    v = spec.get(key)
    if v is not None and not isinstance(v, str):
        raise ValueError("output %s must be a string" % key)
    return v


def _int(spec, key, default, lo, hi):
    v = spec.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError("output %s must be an integer in [%d, %d]" % (key, lo, hi))
    return v


def parse_url(url):
    """(host, port, tls, user, password) of mqtt://[USER[:PASS]@]HOST[:PORT] (mqtts: TLS)."""
    if url.startswith("mqtt://"):
        rest, tls, port = url[7:], False, 1883
    elif url.startswith("mqtts://"):
        rest, tls, port = url[8:], True, 8883
    else:
        raise ValueError("output url must start with mqtt:// or mqtts://")
    rest = rest.split("/")[0]
    user = password = None
    at = rest.rfind("@")
    if at >= 0:
        cred, rest = rest[:at], rest[at + 1:]
        colon = cred.find(":")
        if colon >= 0:
            user, password = cred[:colon], cred[colon + 1:]
        else:
            user = cred
    host = rest
    colon = rest.rfind(":")
    if colon >= 0 and "]" not in rest[colon:]:
        host, digits = rest[:colon], rest[colon + 1:]
        if not digits.isdigit() or not 0 < int(digits) < 65536:
            raise ValueError("output url: the port must be 1..65535")
        port = int(digits)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise ValueError("output url has no host")
    return host, port, tls, user, password


def _hex(b):
    return "".join("%02x" % c for c in b)


def topic_id(dev):
    """The 8-byte device id of HELLO (zero-padded, or SHA-256-truncated when longer) as 16
    hex digits."""
    dev = bytes(dev)
    if len(dev) <= 8:
        return _hex(dev + bytes(8 - len(dev)))
    import hashlib

    return _hex(hashlib.sha256(dev).digest()[:8])


def make(spec, dev):
    """The MqttOut of an output object `spec` for device id `dev`; ValueError otherwise."""
    for key in spec:
        if key not in _KEYS:
            raise ValueError("unknown output key %s" % key)
    url = _str(spec, "url")
    if not url:
        raise ValueError("mqtt output needs a url (mqtt://HOST:PORT)")
    host, port, tls, user, password = parse_url(url)
    if _str(spec, "user") is not None:
        user = spec["user"]
    if _str(spec, "password") is not None:
        password = spec["password"]
    if password is not None and user is None:
        raise ValueError("output password needs a user")
    if user is not None and password is None:
        password = ""  # umqtt.simple sends a password field whenever a user is given
    t = spec.get("tls", tls)
    if not isinstance(t, bool):
        raise ValueError("output tls must be true or false")
    ca = _str(spec, "ca")
    if t or ca is not None:
        t = True
        try:
            import ssl
        except ImportError:
            ssl = None
        if not hasattr(ssl, "SSLContext"):
            raise ValueError("output tls: this port has no ssl.SSLContext")
        if ca is not None:  # read once here: a CA the port cannot use is a config error,
            try:            # not a connection that fails quietly forever
                with open(ca, "rb") as fh:
                    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(
                        cadata=fh.read())
            except OSError:
                raise ValueError("output ca: cannot read that file on the board")
            except Exception:
                raise ValueError("output ca: not a certificate this port reads (give DER)")
    tid = _str(spec, "id") or user or topic_id(dev)
    for c in tid:
        if c in "/+#" or ord(c) < 33 or ord(c) > 126:
            raise ValueError("output id (or user) must be printable ASCII without / + #")
    ring = _int(spec, "ring_bytes", 4096, 64, 1 << 20)
    linger = _int(spec, "linger_ms", 5000, 0, 600000)
    ssid = _str(spec, "wifi_ssid")
    wpw = _str(spec, "wifi_password")
    wlan = None
    if ssid:
        try:
            import network
        except ImportError:  # the unix port: the host's network
            network = None
        if network is not None:
            wlan = network.WLAN(network.STA_IF)
            wlan.active(True)
            if not wlan.isconnected():
                if wpw:
                    wlan.connect(ssid, wpw)
                else:
                    wlan.connect(ssid)
    from .mqtt_out import MqttOut

    out = MqttOut(host, port, user, password, tid.encode(), ring, linger, t, ca, wlan)
    import sys

    if sys.implementation.name == "micropython":  # set-up only: free this module
        sys.modules.pop("zealfw.mqtt_cfg", None)
        import zealfw

        if "mqtt_cfg" in zealfw.__dict__:
            delattr(zealfw, "mqtt_cfg")
    return out
