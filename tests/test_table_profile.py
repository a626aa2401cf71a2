"""Table profiles ("zeal-table/1"): format, checks with reason codes, dispatch, exact figures."""
import hashlib
import json
import math
from fractions import Fraction

import pytest

from zeal.errors import ProfileError
from zeal.mechanism import profile as P
from zeal.mechanism import table as T
from zeal.mechanism import table_profile as TP
from zeal.mechanism.floatbits import float64_to_bits


def rehash(doc):
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    return dict(doc, fingerprint=hashlib.sha256(canon).hexdigest())


def signed(values):
    out, i = [], 0
    while i < len(values):
        j = i + 1
        while j < len(values) and values[j].isdigit():
            j += 1
        out.append(int(values[i:j]))
        i = j
    return out


def shift_first(values):
    a = signed(values)
    a[0] += 1
    return "".join("%+d" % v for v in a)


def dump(doc):
    return (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()


@pytest.fixture(scope="module")
def pm_profile():
    return TP.build(-1.0, 1.0, 1.0, "pm", 3)


def test_round_trip_and_dispatch(pm_profile):
    text = pm_profile.to_json()
    back = TP.loads(text.encode())
    assert back == pm_profile and back.fingerprint == pm_profile.fingerprint
    via = P.loads(text)                       # the grid module dispatches by the sniff rule
    assert via.kind == "table" and via.fingerprint == pm_profile.fingerprint
    grid = P.from_bits(-1.0, 1.0, 1.0, 4)
    assert grid.kind == "grid" and P.loads(grid.to_json()) == grid
    assert back.k_lo == 0 and back.k_hi == back.n_cells - 1 and back.wire_base == 0


def test_load_reads_a_table_file(tmp_path, pm_profile):
    path = tmp_path / "t.json"
    path.write_text(pm_profile.to_json())
    assert P.load(str(path)).fingerprint == pm_profile.fingerprint
    assert TP.load(str(path)).fingerprint == pm_profile.fingerprint


def test_values_are_the_tables_output_values(pm_profile):
    t = pm_profile.table
    for j in range(pm_profile.n_cells):
        assert pm_profile.output_value(j) == t.output_values()[j]
    assert pm_profile.worst_variance() == t.worst_variance()


@pytest.mark.parametrize("reason, edit", [
    ("value", lambda d: dict(d, anchors=0)),
    ("derived", lambda d: dict(d, bits=d["bits"] + 1)),
    ("unbiased", lambda d: dict(d, values=shift_first(d["values"]))),
])
def test_tampered_refused(pm_profile, reason, edit):
    doc = json.loads(pm_profile.to_json())
    bad = rehash(edit(doc))
    with pytest.raises(ProfileError) as exc:
        P.loads(dump(bad))
    assert exc.value.reason == reason
