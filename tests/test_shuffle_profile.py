"""Shuffle profiles ("zeal-shuffle/2"): format, checks and reason codes, the reading map, the
host reference sampler, the vectors (shared_spec/vectors/shuffle.json) and their freshness.

shared_spec/shuffle.md ("Profile", "Word contract") is the spec.
"""
import hashlib
import json
import math
import os
import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from zeal.errors import ProfileError
from zeal.mechanism.core import pfile
from zeal.mechanism.shuffle import mechanism as S
from zeal.mechanism.shuffle import profile as SP
from zeal.mechanism.core.floatbits import bits_to_float64, float64_to_bits
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder

from conftest import ROOT

VECTORS = os.path.join(ROOT, "shared_spec", "vectors", "shuffle.json")
REASONS = ("size", "json", "type", "format", "missing", "unknown", "fingerprint", "value",
           "derived", "privacy")
# "derived" (a message wider than 52 bits) cannot happen within the value limits (P <= 10):
# the vectors cover every other code
VECTOR_REASONS = set(REASONS) - {"derived"}


def rehash(doc):
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    return dict(doc, fingerprint=hashlib.sha256(canon).hexdigest())


def dump(doc):
    return (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()


def reason(text):
    with pytest.raises(ProfileError) as info:
        SP.loads(text)
    return info.value.reason


@pytest.fixture(scope="module")
def vectors():
    with open(VECTORS) as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def aarhus():
    return SP.build_from(epsilon="0.9", delta="1e-6", n=100000, d=3, k=3, t=1,
                         ranges=[(0.0, 1000.0), (0.0, 100.0), (-20.0, 40.0)])


# ---- format ---------------------------------------------------------------------------------
def test_round_trip_and_canonical_form(aarhus):
    text = aarhus.to_json()
    doc = json.loads(text)
    assert set(doc) == {"format", "d", "levels", "t", "n", "epsilon", "delta", "message_epsilon",
                        "gamma_num", "gamma_den", "ranges", "fingerprint"}
    assert doc["format"] == "zeal-shuffle/2"
    core = {k: v for k, v in doc.items() if k != "fingerprint"}
    canon = json.dumps(core, sort_keys=True, separators=(",", ":")).encode()
    assert doc["fingerprint"] == hashlib.sha256(canon).hexdigest()
    back = SP.loads(text)
    assert back == aarhus and back.fingerprint == aarhus.fingerprint
    assert back.ranges == [(0.0, 1000.0), (0.0, 100.0), (-20.0, 40.0)]
    assert bits_to_float64(int(doc["epsilon"][2:], 16)) <= 0.9
    assert Fraction(bits_to_float64(int(doc["delta"][2:], 16))) <= Fraction(1, 10 ** 6)
    # one message = one wire report: ceil(log2 3) + ceil(log2 4) = 4 bits
    assert back.bits == 4 and back.params.message_bits == 4


def test_stored_gamma_is_gamma_for_at_the_stored_pair(aarhus):
    """build re-runs gamma_for at the float64 epsilon and delta it stores: the stored gamma
    is exactly that gamma (at least the one for the typed pair, which is smaller or equal)."""
    p = aarhus.params
    again = S.gamma_for(epsilon=Fraction(aarhus.epsilon), delta=Fraction(aarhus.delta),
                        n=p.n, d=p.d, k=p.k, t=p.t)
    assert aarhus.gamma == again.gamma
    typed = S.gamma_for(epsilon=Fraction(9, 10), delta=Fraction(1, 10 ** 6), n=p.n, d=p.d,
                        k=p.k, t=p.t)
    assert aarhus.gamma >= typed.gamma


def test_max_file_by_hand():
    """The widest file: '{' LF, 12 members ' "key": value' joined by ',' LF, LF '}' LF.
    Keys (77 characters) quoted, with a space before and ': ' after: 12 * 5 + 77 = 137;
    separators 11 * 2, framing 2 + 3. Values: format 16, epsilon/delta/message_epsilon 20
    each, fingerprint 66, ranges 128 * 18 + 127 + 2, d/t/levels 2 each, n/gamma_num/gamma_den
    19 each."""
    keys = ["format", "d", "levels", "t", "n", "epsilon", "delta", "message_epsilon",
            "gamma_num", "gamma_den", "ranges", "fingerprint"]
    assert sum(map(len, keys)) == 77
    values = 16 + 3 * 20 + 66 + (128 * 18 + 127 + 2) + 2 + 2 + 2 + 3 * 19
    assert SP.MAX_SHUFFLE_FILE == 12 * 5 + 77 + 11 * 2 + 5 + values == 2802


def test_sniff_finds_the_format_in_the_widest_file():
    prof = SP.build_from(epsilon="0.75", delta="1e-6", n=10 ** 12, d=64, k=15, t=5)
    text = prof.to_json().encode()
    assert len(text) > 2400
    assert SP.is_shuffle_file(text)
    assert text.index(SP.SNIFF) + len(SP.SNIFF) <= SP.SNIFF_BYTES
    # and the widest possible file too (every int at 19 digits)
    doc = rehash(dict(json.loads(text), n=(1 << 63) - 1, gamma_num=(1 << 63) - 2,
                      gamma_den=(1 << 63) - 1))
    wide = dump(doc)
    assert wide.index(SP.SNIFF) + len(SP.SNIFF) <= SP.SNIFF_BYTES


def test_build_errors_are_one_line():
    cases = [
        dict(epsilon="0.5", delta="1e-6", n=1000, d=10, k=3, t=1),        # no gamma < 1
        dict(epsilon="0.5", delta="1e-6", n=10 ** 12, d=65, k=3, t=1),    # d > 64
        dict(epsilon="0.5", delta="1e-6", n=10 ** 12, d=8, k=3, t=9),     # t > d
        dict(epsilon="0.5", delta="1e-6", n=10 ** 12, d=8, k=16, t=1),    # levels > 15
        dict(epsilon="7", delta="1e-6", n=10 ** 12, d=8, k=3, t=1),       # epsilon >= 6
        dict(epsilon="0.5", delta="1.5", n=10 ** 12, d=8, k=3, t=1),      # delta >= 1
        dict(epsilon="zero", delta="1e-6", n=10 ** 12, d=8, k=3, t=1),
    ]
    for kw in cases:
        with pytest.raises(ProfileError) as info:
            SP.build_from(**kw)
        assert "\n" not in str(info.value), kw
    with pytest.raises(ProfileError):
        SP.build_from(epsilon="0.5", delta="1e-6", n=10 ** 6, d=3, k=3,
                      ranges=[(0.0, 1.0), (1.0, 1.0), (0.0, 2.0)])
    with pytest.raises(ProfileError):
        SP.build_from(epsilon="0.5", delta="1e-6", n=10 ** 6, d=3, k=3, ranges=[(0.0, 1.0)])


# ---- checks ---------------------------------------------------------------------------------
def test_check_order_and_reasons(aarhus):
    base = json.loads(aarhus.to_json())
    assert reason(dump(base)[:-2] + b",}") == "json"
    assert reason(dump(dict(base, format="zeal-shuffle/9"))) == "format"
    assert reason(dump({k: v for k, v in base.items() if k != "t"})) == "missing"
    assert reason(dump(dict(base, extra="x"))) == "unknown"
    assert reason(dump(rehash(dict(base, n="100000")))) == "type"
    assert reason(dump(dict(base, n=100001))) == "fingerprint"
    # value before privacy: a file failing both reports value ("derived", a message wider
    # than 52 bits, cannot happen within the value limits: 6 + 4 bits at most)
    assert reason(dump(rehash(dict(base, levels=16, t=3, gamma_num=1)))) == "value"
    assert reason(dump(rehash(dict(base, message_epsilon="0x3ff0000000000001")))) == "value"
    assert reason(dump(rehash(dict(base, gamma_num=base["gamma_num"] - 1)))) == "privacy"
    # the withdrawn linked format: recognised by the sniff, refused by the format check
    old = dump(rehash(dict(base, format="zeal-shuffle/1")))
    assert SP.is_shuffle_file(old) and reason(old) == "format"
    with pytest.raises(ProfileError) as info:
        SP.loads(old)
    assert "zeal-shuffle/1" in str(info.value) and "\n" not in str(info.value)
    # gamma just at the required value is accepted; more blanket too
    more = rehash(dict(base, gamma_num=base["gamma_num"] + 1))
    assert SP.loads(dump(more)).gamma > aarhus.gamma


@pytest.mark.parametrize("change", [
    "gamma one step", "gamma halved", "n halved", "epsilon smaller", "delta smaller",
    "message_epsilon above epsilon"])
def test_device_checks_refuse_every_privacy_tampering(aarhus, change):
    """The privacy rule is one of the device's checks (device_checks), not host only: every
    way of making gamma too small for what the file names is refused there, with the
    fingerprint recomputed so that only the rule can catch it."""
    base = json.loads(aarhus.to_json())
    eps = bits_to_float64(int(base["epsilon"][2:], 16))
    dlt = bits_to_float64(int(base["delta"][2:], 16))
    hexf = lambda x: "0x%016x" % float64_to_bits(x)  # noqa: E731
    edits = {
        "gamma one step": dict(gamma_num=base["gamma_num"] - 1),
        "gamma halved": dict(gamma_den=base["gamma_den"] * 2),
        "n halved": dict(n=base["n"] // 2),
        "epsilon smaller": dict(epsilon=hexf(eps * 0.9), message_epsilon=hexf(eps * 0.9)),
        "delta smaller": dict(delta=hexf(dlt / 1000)),
        "message_epsilon above epsilon": dict(message_epsilon=hexf(math.nextafter(eps, 2))),
    }
    doc = rehash(dict(base, **edits[change]))
    with pytest.raises(ProfileError) as info:
        SP.device_checks(doc)
    assert info.value.reason == "privacy"


def test_two_message_profile_refuses_a_message_epsilon_that_does_not_compose():
    prof = SP.build_from(epsilon="0.9", delta="1e-6", n=10 ** 7, d=3, k=3, t=2)
    base = json.loads(prof.to_json())
    assert prof.params.regime == "basic" and prof.message_epsilon == prof.epsilon / 2
    up = "0x%016x" % float64_to_bits(math.nextafter(prof.message_epsilon, 2))
    # gamma kept large enough for the larger eps_m: only the composition step can refuse it
    doc = rehash(dict(base, message_epsilon=up, gamma_num=base["gamma_num"] * 2))
    with pytest.raises(ProfileError) as info:
        SP.device_checks(doc)
    assert info.value.reason == "privacy" and "compose" in str(info.value)


def test_mutated_files_are_refused_with_a_reason_or_load(aarhus):
    """500 random byte edits of a valid file: each either loads (then its canonical form
    re-serialises to a file that loads to the same profile) or is refused with a ProfileError
    carrying one of the reason codes -- never another exception."""
    text = aarhus.to_json().encode()
    rng = random.Random(11)
    alphabet = b'0123456789abcdefx."{}:, \n-+eE'
    loaded = 0
    for _ in range(500):
        buf = bytearray(text)
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            i = rng.randrange(len(buf))
            if op < 0.5:
                buf[i] = rng.choice(alphabet)
            elif op < 0.75:
                del buf[i]
            else:
                buf.insert(i, rng.choice(alphabet))
        try:
            prof = SP.loads(bytes(buf))
        except ProfileError as exc:
            assert exc.reason in REASONS, (exc.reason, bytes(buf))
            continue
        loaded += 1
        assert SP.loads(prof.to_json()) == prof
    assert loaded < 500


# ---- the reading map and the sampler --------------------------------------------------------
def test_map_reading_exact_and_clamped(aarhus):
    assert SP.map_reading(aarhus, 2, 10.0) == Fraction(30, 60)
    assert SP.map_reading(aarhus, 2, 0.1) == (Fraction(0.1) + 20) / 60  # exact, not rounded
    assert SP.map_reading(aarhus, 0, -1.0) == 0
    assert SP.map_reading(aarhus, 0, 1e300) == 1
    for bad in (math.nan, math.inf, -math.inf, None, "1.0", True):
        assert SP.map_reading(aarhus, 1, bad) == Fraction(1, 2)
    assert SP.map_readings(aarhus, [1.0, 2.0]) == [Fraction(1, 2)] * 3
    assert SP.map_readings(aarhus, None) == [Fraction(1, 2)] * 3


def test_sampler_is_randomise_on_the_mapped_tuple(aarhus):
    """ShuffleSampler = shuffle.randomise on the mapped readings, word for word."""
    rng = random.Random(5)
    for i in range(200):
        tup = [rng.uniform(-100, 1100), rng.uniform(-5, 105), rng.choice([math.nan, 3.5])]
        key = bytes([i % 256]) * 32
        a = SP.ShuffleSampler(aarhus, CounterWords(key)).sample(tup)
        x = [min(max((Fraction(tup[0]) - 0) / 1000, 0), 1),
             min(max(Fraction(tup[1]) / 100, 0), 1),
             Fraction(1, 2) if math.isnan(tup[2]) else (Fraction(tup[2]) + 20) / 60]
        pairs = S.randomise(aarhus.params, x, CounterWords(key))
        assert a == [S.encode_message(aarhus.params, pair) for pair in pairs]


def test_sampler_law_chi_square():
    """Seeded chi-square of 40000 messages of a d = 3, k = 3 profile against the exact law
    P(c, y) = (1/3) [gamma/4 + (1 - gamma) P(round(x_c) = y)]: 11 degrees of freedom,
    threshold 42.31 = the chi-square quantile at 1 - 1e-5 (false-failure rate 1e-5)."""
    prof = SP.build_from(epsilon="0.9", delta="1e-6", n=10 ** 5, d=3, k=3, t=1,
                         ranges=[(0.0, 3.0)] * 3)
    g = float(prof.gamma)
    x = [0.5, 1.25, 3.0]  # on [0, 3]: xk = 0.5, 1.25, 3
    n = 40000
    words = CounterWords(hashlib.sha256(b"shuffle-chi2").digest())
    sampler = SP.ShuffleSampler(prof, words)
    counts = np.zeros((3, 4))
    for _ in range(n):
        ((c, y),) = sampler.pairs(x)
        counts[c, y] += 1
    exp = np.zeros((3, 4))
    for c, xc in enumerate(x):
        b, f = int(math.floor(xc)), xc - math.floor(xc)
        rr = np.zeros(4)
        rr[b] += 1 - f
        if f:
            rr[b + 1] += f
        exp[c] = (g / 4 + (1 - g) * rr) / 3
    exp *= n
    chi2 = float(((counts - exp) ** 2 / exp).sum())
    assert chi2 < 42.31, chi2


# ---- vectors --------------------------------------------------------------------------------
def test_vectors_are_fresh():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_shuffle_vectors.py"),
                          "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_vectors_profiles(vectors):
    cases = [c for c in vectors["cases"] if c["kind"] == "profile"]
    reasons = {c["reason"] for c in cases if c["result"] == "invalid"}
    assert reasons == VECTOR_REASONS  # one must-reject file for every reachable code
    assert vectors["max_file"] == SP.MAX_SHUFFLE_FILE
    for c in cases:
        text = c["file"].encode("latin-1")
        if c["result"] == "valid":
            prof = SP.loads(text)
            assert prof.canonical_bytes().decode() == c.get("canonical",
                                                             prof.canonical_bytes().decode())
            if "bits" in c:
                assert prof.bits == c["bits"] and prof.fingerprint == c["fingerprint"]
        else:
            assert reason(text) == c["reason"], c["id"]
            doc = None
            try:
                doc = pfile.parse(text) if len(text) <= SP.MAX_SHUFFLE_FILE else None
            except ProfileError:
                pass
            if c["host_only"]:
                SP.device_checks(doc)  # the device accepts it
            elif doc is not None and c["reason"] != "privacy":
                with pytest.raises(ProfileError):
                    SP.device_checks(doc)


def test_vectors_randomiser(vectors):
    profiles = {c["id"]: SP.loads(c["file"]) for c in vectors["cases"]
                if c["kind"] == "profile" and c["result"] == "valid"}
    rand = [c for c in vectors["cases"] if c["kind"] == "randomise"]
    assert len(rand) >= 10
    for c in rand:
        prof = profiles[c["profile"]]
        if "key" in c:
            src = CounterWords(bytes.fromhex(c["key"]))
        else:
            src = ListWords([int(w, 16) for w in c["words"]])
        rec = Recorder(src)
        sampler = SP.ShuffleSampler(prof, rec)
        for tup, exp in zip(c["inputs"], c["expected"]):
            before = len(rec.used)
            readings = [bits_to_float64(int(p, 16)) for p in tup]
            msgs = sampler.sample(readings)
            assert msgs == exp["messages"], c["id"]
            assert len(msgs) == prof.t
            assert [S.decode_message(prof.params, m) for m in msgs] == \
                [tuple(p) for p in exp["pairs"]]
            assert len(rec.used) - before == exp["words_used"]
            assert all(m < 1 << prof.bits for m in msgs)
        if "words" in c:
            assert len(rec.used) == len(c["words"])  # the hand cases use every word given


def test_hand_vectors_by_hand(vectors):
    """The hand cases' messages, recomputed here from the word contract without the
    sampler: c = floor(w0 / floor(2^64/3)); no blanket when w1 >= gamma * 2^64; level =
    b + (w2 < r/q * 2^64)."""
    by_id = {c["id"]: c for c in vectors["cases"]}
    c = by_id["s-hand-round"]
    w = [int(v, 16) for v in c["words"]]
    prof = SP.loads(by_id["s-hand"]["file"])
    assert w[0] // ((1 << 64) // 3) == 0
    assert Fraction(w[1], 1 << 64) >= prof.gamma          # no blanket
    assert w[2] < 1 << 63                                 # x = 1/2: xk = 1 + 1/2 -> 2
    assert c["expected"][0]["messages"] == [0 | 2 << 2]
