"""umqtt.simple for MQTT boards that run on this host: the virtual fleet (the firmware under
the MicroPython unix port, zeal.collect.virtual) and the tests.

A real board gets umqtt.simple the ordinary way, with mip (`firmware/package.json` lists it
in "deps"; `zeal flash --mqtt` runs `mpremote mip install umqtt.simple`). The unix port has
no package index of its own here, so `umqtt_path()` fetches micropython-lib's module from
PyPI's `micropython-umqtt.simple` sdist (MIT licence), checks its SHA-256 and unpacks
umqtt/simple.py into a cache folder (ZEAL_CACHE, else ~/.cache/zeal), once. Nothing is
vendored in the repository.
"""
import hashlib
import io
import os
import tarfile
import urllib.request

from ..errors import ZealError

VERSION = "1.3.4"
SDIST = ("https://files.pythonhosted.org/packages/bd/cf/"
         "697e3418b2f44222b3e848078b1e33ee76aedca9b6c2430ca1b1aec1ce1d/"
         "micropython-umqtt.simple-%s.tar.gz" % VERSION)
SHA256 = "b6a2520239e3992c63a7de9370ee9b3d9d27819a90359c521f1c0f7ccab8d12f"
MEMBER = "micropython-umqtt.simple-%s/umqtt/simple.py" % VERSION


def cache_dir() -> str:
    base = os.environ.get("ZEAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                        "zeal")
    return os.path.join(base, "umqtt.simple-" + VERSION)


def umqtt_path(timeout: float = 30.0) -> str:
    """A folder holding umqtt/simple.py (for MICROPYPATH); fetched from PyPI on first use.
    ZealError (one line) when it cannot be fetched."""
    folder = cache_dir()
    target = os.path.join(folder, "umqtt", "simple.py")
    if os.path.isfile(target):
        return folder
    try:
        with urllib.request.urlopen(SDIST, timeout=timeout) as resp:
            data = resp.read()
    except OSError as exc:
        raise ZealError("cannot fetch umqtt.simple %s from PyPI (%s): %s; the MQTT virtual "
                        "boards need it (or put umqtt/simple.py under %s)"
                        % (VERSION, SDIST.split("/")[2], getattr(exc, "reason", exc),
                           folder)) from None
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise ZealError("the umqtt.simple %s sdist from PyPI has an unexpected SHA-256"
                        % VERSION)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        src = tar.extractfile(MEMBER).read()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = target + ".%d.tmp" % os.getpid()
    with open(tmp, "wb") as fh:
        fh.write(src)
    with open(os.path.join(folder, "umqtt", "__init__.py"), "wb"):
        pass
    os.replace(tmp, target)
    return folder
