"""Any profile file: the sniff rule (profile.md, multi.md) dispatching to its kind's loader.

A profile file whose first 503 bytes hold `zeal-multi/1` is a multi-attribute header
(zeal.mechanism.multi_profile; its attribute files are read beside it, or through `fetch`),
`zeal-shuffle/` a shuffle profile (version 2; 1 is refused), `zeal-table/1` a table profile, anything else a grid
profile (zeal.mechanism.profile, which itself dispatches tables). Each kind's loader makes its
own checks (ProfileError with .reason).

API: `loads_any(data, fetch=None)`, `load_any(path)`, `kind_of(data)`, `MAX_ANY_FILE`.
fetch(i, fingerprint) -> bytes or None gives a multi header's attribute file i (None: the
header alone cannot be checked: reason "attr<i>:missing").
"""
from ..errors import ProfileError
from . import multi_profile as MP
from . import profile as GP
from . import shuffle_profile as SP
from . import table_profile as TP

MAX_ANY_FILE = max(GP.MAX_FILE, TP.MAX_TABLE_FILE, MP.MAX_MULTI_FILE, SP.MAX_SHUFFLE_FILE)


def kind_of(data) -> str:
    """"multi", "shuffle", "table" or "grid" by the sniff rule (first 503 bytes)."""
    data = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if MP.is_multi_file(data):
        return "multi"
    if SP.is_shuffle_file(data):
        return "shuffle"
    if TP.is_table_file(data):
        return "table"
    return "grid"


def loads_any(data, fetch=None):
    """A checked profile of any kind from a file's bytes (or text)."""
    data = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    kind = kind_of(data)
    if kind == "multi":
        return MP.loads(data, fetch if fetch is not None else (lambda i, fp: None))
    if kind == "shuffle":
        return SP.loads(data)
    return GP.loads(data)   # grid, or a table (profile.loads dispatches it)


def load_any(path):
    """A checked profile of any kind from a file; a multi header's attribute files are read
    beside it (multi_profile.attribute_path)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ANY_FILE + 1)
    except OSError as exc:
        raise ProfileError("cannot read profile %s: %s" % (path, exc.strerror or exc)) from None
    return loads_any(data, MP.file_fetcher(path))
