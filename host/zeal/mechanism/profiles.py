"""Any profile file, by the sniff rule: the names the rest of the product has long used for
the kind registry (zeal.mechanism.kinds, which holds the rule and each kind's loader).

API: `loads_any(data, fetch=None)`, `load_any(path)`, `kind_of(data)`, `MAX_ANY_FILE`.
fetch(i, fingerprint) -> bytes or None gives a multi header's attribute file i (None: the
header alone cannot be checked: reason "attr<i>:missing").
"""
from . import kinds

MAX_ANY_FILE = kinds.MAX_ANY_FILE
loads_any = kinds.loads
load_any = kinds.load


def kind_of(data) -> str:
    """"multi", "shuffle", "table" or "grid" by the sniff rule (first 503 bytes)."""
    return kinds.sniff(data).name
