"""The MQTT output of a device config (firmware/zealfw/mqtt_cfg.py): built from `zeal flash
--mqtt URL ...` (passwords read from files), checked as the board checks it, and shown with its
credentials hidden (redacted)."""
import re

from ..errors import ZealError

BOARD_CA = "zeal_ca.der"  # the MQTT broker's CA (--mqtt-ca), DER: some ports read no PEM
MQTT_DEPS = ("umqtt.simple",)  # firmware/package.json "deps", installed by mip
MQTT_KEYS = ("kind", "url", "user", "password", "wifi_ssid", "wifi_password", "tls", "ca", "id",
             "ring_bytes", "linger_ms")
SECRET_KEYS = ("password", "wifi_password")
MQTT_URL = re.compile(r"mqtts?://(?:[^@/\s]+@)?[^:/@\s]+(?::\d{1,5})?/?\Z")


def check_mqtt_output(out, where):
    """An output {"kind": "mqtt", ...} as the board checks it (the messages never name a
    credential's value)."""
    unknown = sorted(set(out) - set(MQTT_KEYS))
    if unknown:
        raise ZealError("%s: unknown mqtt output key(s) %s (known: %s)"
                        % (where, ", ".join(unknown), ", ".join(MQTT_KEYS)))
    url = out.get("url")
    if not isinstance(url, str) or not MQTT_URL.match(url):
        raise ZealError("%s: the mqtt url must be mqtt://[USER[:PASS]@]HOST[:PORT] (or mqtts://)"
                        % where)
    port = re.search(r":(\d+)/?\Z", url.split("@")[-1])
    if port and not 0 < int(port.group(1)) < 65536:
        raise ZealError("%s: the mqtt url's port must be 1..65535" % where)
    for key in ("user", "password", "wifi_ssid", "wifi_password", "ca", "id"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise ZealError("%s: output %s must be a string" % (where, key))
    if "tls" in out and not isinstance(out["tls"], bool):
        raise ZealError("%s: output tls must be true or false" % where)


def _read_secret(path, what):
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZealError("cannot read the %s file %s: %s"
                        % (what, path, getattr(exc, "strerror", None) or exc)) from None
    if not text:
        raise ZealError("the %s file %s is empty" % (what, path))
    return text


def read_ca(path):
    """The CA certificate of --mqtt-ca FILE (PEM or DER) as DER bytes, what every port's
    mbedTLS reads (the unix port's parses no PEM); ZealError when it is not one."""
    import ssl

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ZealError("cannot read the --mqtt-ca file %s: %s"
                        % (path, exc.strerror or exc)) from None
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            data = ssl.PEM_cert_to_DER_cert(data.decode("ascii", "replace"))
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data)
    except (ValueError, ssl.SSLError):
        raise ZealError("--mqtt-ca %s is not a CA certificate (PEM or DER)" % path) from None
    return data


def mqtt_output(url, user=None, password_file=None, wifi=None, wifi_password_file=None,
                ca_file=None):
    """The config's output object for `zeal flash --mqtt URL [--mqtt-user U
    --mqtt-password-file F] [--wifi SSID --wifi-password-file F]`: passwords are read from
    files (never from the command line, where `ps` and shell history would keep them)."""
    out = {"kind": "mqtt", "url": url}
    if user is not None:
        out["user"] = user
    if password_file is not None:
        if user is None and "@" not in url:
            raise ZealError("--mqtt-password-file needs --mqtt-user")
        out["password"] = _read_secret(password_file, "--mqtt-password")
    if wifi is not None:
        out["wifi_ssid"] = wifi
        if wifi_password_file is not None:
            out["wifi_password"] = _read_secret(wifi_password_file, "--wifi-password")
    elif wifi_password_file is not None:
        raise ZealError("--wifi-password-file needs --wifi SSID")
    if ca_file is not None:
        if not url.startswith("mqtts://"):
            raise ZealError("--mqtt-ca is for a TLS broker: an mqtts:// URL")
        out["ca"] = BOARD_CA
    check_mqtt_output(out, "--mqtt")
    return out


def redacted(cfg):
    """The config as it may be shown: credentials (passwords, a password in the URL) as ***."""
    out = cfg.get("output")
    if not isinstance(out, dict) or out.get("kind") != "mqtt":
        return cfg
    shown = dict(out)
    for key in SECRET_KEYS:
        if shown.get(key) is not None:
            shown[key] = "***"
    url = shown.get("url")
    if isinstance(url, str) and "@" in url:
        scheme, _, rest = url.partition("://")
        cred, _, host = rest.rpartition("@")
        shown["url"] = "%s://%s@%s" % (scheme, cred.split(":")[0] + (":***" if ":" in cred
                                                                     else ""), host)
    return dict(cfg, output=shown)
