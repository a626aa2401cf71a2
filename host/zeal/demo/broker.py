"""A throw-away Mosquitto on the loopback interface: the fleet demo's broker, and the base of the
tests' (tests/mqtt_broker.py adds users, an ACL, TLS and persistence by overriding
`config_lines` and `ports`).

    ThrowAwayBroker(folder).start()   anonymous, on a free port, no persistence, in `folder`
    .url                              mqtt://127.0.0.1:PORT
    .stop()                           SIGTERM (mosquitto saves what it persists), then waits

Needs the `mosquitto` binary: `find_mosquitto()` looks on PATH and in the sbin folders Debian
and Homebrew use; without it one ZealError line says how to install it (MQTT_INSTALL).
"""
import os
import shutil
import socket
import subprocess
import time

from ..errors import ZealError

MQTT_INSTALL = ("zeal demo --mqtt needs the Mosquitto broker: apt-get install mosquitto "
                "(Debian/Ubuntu) or brew install mosquitto (macOS)")


def find_mosquitto(name: str = "mosquitto"):
    """The path of a Mosquitto binary (`mosquitto`, `mosquitto_passwd`), or None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/sbin", "/usr/local/sbin", "/opt/homebrew/sbin"):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


def free_port() -> int:
    """A loopback TCP port nobody held a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThrowAwayBroker:
    """mosquitto on 127.0.0.1 in `folder`: anonymous, no persistence (config_lines), on
    `port`, or on a free port (then a port taken between the probe and mosquitto's bind
    means another try on the next one)."""

    def __init__(self, folder, port=None):
        self.binary = find_mosquitto()
        if self.binary is None:
            raise ZealError(MQTT_INSTALL)
        self.folder = str(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.conf = os.path.join(self.folder, "mosquitto.conf")
        self._chosen = port is None
        self.port = port
        self.proc = None

    def config_lines(self) -> list:
        lines = ["listener %d 127.0.0.1" % self.port, "allow_anonymous true",
                 "persistence false", "max_queued_messages 0"]
        if os.getuid() == 0:
            # started as root, mosquitto drops to this user: stay the owner of the files
            import pwd

            lines.append("user %s" % pwd.getpwuid(os.getuid()).pw_name)
        return lines

    def ports(self) -> list:
        """The ports that answer once it has started."""
        return [self.port]

    def start(self, timeout: float = 10.0):
        said = ""
        for _ in range(5 if self._chosen else 1):
            if self._chosen:
                self.port = free_port()
            with open(self.conf, "w") as fh:
                fh.write("\n".join(self.config_lines()) + "\n")
            self.proc = subprocess.Popen([self.binary, "-c", self.conf],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    for port in self.ports():
                        socket.create_connection(("127.0.0.1", port), 0.2).close()
                    return self
                except OSError:
                    time.sleep(0.02)
            if self.proc.poll() is not None:
                said = " ".join(self.proc.stderr.read().decode(errors="replace").split())
            self.stop()
        raise ZealError("mosquitto did not start on a loopback port%s"
                        % (": " + said[-300:] if said else ""))

    @property
    def url(self):
        return "mqtt://127.0.0.1:%d" % self.port

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
