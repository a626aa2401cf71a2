"""The "shuffle" conformance suite (shared_spec/vectors/shuffle.json): shuffle profiles
("zeal-shuffle/2") and the shuffle-mode randomiser through every implementation.

Cases of kind "profile" send the exact file text; a device reads it by the sniff rule
(zealfw.sprofile for "zeal-shuffle/" within the first 503 bytes, else its grid/table loader)
and answers the fingerprint and the message bits P, or the reason code of the shuffle check
list. Every check is the device's, the privacy rule included (zealfw.sgamma, the twin of
zeal.mechanism.shuffle.rule): every case goes to every target, and a device must refuse each
tampered file with the host's reason. Cases of kind "randomise" send the named profile's
file text, the reading tuples (float64 patterns, 16 hex digits; a tuple of the wrong length
makes every coordinate invalid) and a generator key or an explicit word list; the answer
per tuple is its t messages (the t integer wire reports, message 0 first) and the words
consumed. The expected values stay here. The firmware side is
firmware/conformance/conformance_shuffle.py; `handle` below is the host side
(zeal.mechanism.shuffle.profile) for target "cpython".
"""
import os

from ..mechanism import kinds
from .conformance_cases import (fields_differ, file_request, outputs_differ, reason_of, settled,
                                word_source)
from ..contract import VECTORS as VECTORS_DIR

VECTORS = os.path.join(VECTORS_DIR, "shuffle.json")


def request(case):
    """The inputs of a case (never its expected answers)."""
    return file_request(case, VECTORS, "randomise")


def check(case, resp):
    """(passed, detail) for one reply (resp: the runner's reply dict)."""
    verdict = settled(case, resp)
    if verdict is not None:
        return verdict
    got = resp["result"]
    if case["kind"] == "profile":
        keys = [k for k in ("fingerprint", "bits") if k in case]
        differ = fields_differ(got, case, keys)
        return (False, differ) if differ else (True, "accepted: %s"
                                               % (", ".join(sorted(keys)) or "valid"))
    differ = outputs_differ(got, case, ("messages", "words_used"))
    return (False, differ) if differ else (True, "%d readings' messages bit-exact"
                                           % len(got["outputs"]))


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import ProfileError
    from ..mechanism.shuffle import profile as SP
    from ..mechanism.core.floatbits import bits_to_float64
    from ..mechanism.core.words import Recorder

    case = req.get("case", req)
    data = case["file"].encode("ascii", "surrogateescape")
    try:
        prof = kinds.loads(data)
    except ProfileError as exc:
        return False, reason_of(exc)
    if kinds.of(prof) is not kinds.SHUFFLE:  # (this suite's own kind)
        return False, "not a shuffle profile"
    if case["kind"] == "profile":
        return True, {"fingerprint": prof.fingerprint, "bits": prof.bits}
    source = word_source(case)
    outs = []
    for item in case["inputs"]:
        rec = Recorder(source)
        values = [bits_to_float64(int(v, 16)) for v in item]
        outs.append({"messages": SP.ShuffleSampler(prof, rec).sample(values),
                     "words_used": len(rec.used)})
    return True, {"outputs": outs}
