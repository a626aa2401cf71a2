"""The shared vectors through the CPython reference (the MicroPython run is in
test_conformance.py). Generator vectors are also recomputed independently with hashlib."""
import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest

from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal.mechanism.grid import reports
from zeal.errors import InputError, ProfileError
from zeal.mechanism.core.draws import reading_from_float32_bits, reading_from_float64_bits
from zeal.mechanism.grid.scalar import ExactZeal, reading_from_raw
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder

from conftest import ROOT

VEC = os.path.join(ROOT, "shared_spec", "vectors")


def load(name):
    with open(os.path.join(VEC, name)) as fh:
        doc = json.load(fh)
    assert doc["count"] == len(doc["cases"]) and doc["version"] == 1
    return doc


PROFILES = {c["id"]: c for c in load("profiles.json")["cases"]}
MECH = load("mechanism.json")["cases"]


def test_vectors_are_up_to_date():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_vectors.py"),
                           "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", load("generator.json")["cases"], ids=lambda c: c["id"])
def test_generator_vectors_independently(case):
    key = bytes.fromhex(case["key"])
    blocks = b"".join(hashlib.sha256(b"zeal-ctr" + key + struct.pack("<Q", i)).digest()
                      for i in range(3))
    words = ["%016x" % w for w in struct.unpack("<12Q", blocks)][:len(case["words"])]
    assert words == case["words"]
    assert ["%016x" % w for w in CounterWords(key).take(len(words))] == words


@pytest.mark.parametrize("case", list(PROFILES.values()), ids=lambda c: c["id"])
def test_profile_vectors(case):
    text = json.dumps(case["profile"])
    if case["result"] == "valid":
        prof = kinds.loads(text)
        assert prof.canonical_bytes().decode() == case["canonical"]
        assert hashlib.sha256(case["canonical"].encode()).hexdigest() == prof.fingerprint
    else:
        with pytest.raises(ProfileError):
            kinds.loads(text)


def _reading(prof, item):
    if "float64" in item:
        return reading_from_float64_bits(int(item["float64"], 16))
    if "float32" in item:
        return reading_from_float32_bits(int(item["float32"], 16))
    return reading_from_raw(prof, item["raw"])


@pytest.mark.parametrize("case", MECH, ids=lambda c: c["id"])
def test_mechanism_vectors_on_cpython(case):
    prof = P.from_dict(PROFILES[case["profile"]]["profile"])
    if case["result"] == "invalid":
        with pytest.raises(InputError):
            _reading(prof, case["inputs"][0])
        return
    source = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
              else ListWords(int(w, 16) for w in case["words"]))
    mech = ExactZeal(profile=prof, words=source)
    for item, want in zip(case["inputs"], case["expected"], strict=True):
        rec = Recorder(source)
        k = mech.perturb(_reading(prof, item), rec)
        assert (k, len(rec.used)) == (want["k"], want["words_used"])
        assert "%016x" % reports.to_bits(prof, k) == want["bits"]
        assert reports.to_low(prof, k) == want["low"]
        assert reports.from_low(prof, want["low"]) == k
    assert mech.clamped == case["clamped"]


def _device_profile():
    firmware = os.path.join(ROOT, "firmware")
    if firmware not in sys.path:
        sys.path.insert(0, firmware)
    from zealfw import profile as FP
    return FP


@pytest.mark.parametrize("case", list(PROFILES.values()), ids=lambda c: c["id"])
def test_profile_vectors_reason_codes_on_host_and_device(case):
    """The host and the device (zealfw on CPython) give the vector's reason code; a host_only
    case is one the device accepts, and then it is still private."""
    FP = _device_profile()
    text = json.dumps(case["profile"])
    if case["result"] == "valid":
        assert FP.loads(text).canonical.decode() == case["canonical"]
        return
    with pytest.raises(ProfileError) as host:
        kinds.loads(text)
    assert host.value.reason == case["reason"]
    if case["host_only"]:
        dev = FP.loads(text)
        assert P.is_private(dev.n_cells, dev.n_window, dev.threshold,
                            P.bits_to_float64(
                                int(case["profile"]["epsilon"][2:], 16)))
        return
    with pytest.raises(FP.ProfileError) as dev:
        FP.loads(text)
    assert dev.value.reason == case["reason"]
