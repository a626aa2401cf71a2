"""The "shuffle" conformance suite (shared_spec/vectors/shuffle.json): shuffle profiles
("zeal-shuffle/1") and the shuffle-mode randomiser through every implementation.

Cases of kind "profile" send the exact file text; a device reads it by the sniff rule
(zealfw.sprofile for "zeal-shuffle/1" within the first 503 bytes, else its grid/table
loader) and answers the fingerprint and the message bits, or the reason code of the shuffle
check list. Cases marked host_only (the "privacy" check: gamma against the formula, which
needs logarithms) are not sent to a device. Cases of kind "randomise" send the named
profile's file text, the reading tuples (float64 patterns, 16 hex digits; a tuple of the
wrong length makes every coordinate invalid) and a generator key or an explicit word list;
the answer per tuple is the message (the integer wire report) and the words consumed. The
expected values stay here. The firmware side is firmware/conformance/conformance_shuffle.py;
`handle` below is the host side (zeal.mechanism.shuffle_profile) for target "cpython".
"""
import json
import os

from .firmware import ROOT

VECTORS = os.path.join(ROOT, "shared_spec", "vectors", "shuffle.json")
_FILES = {}


def _profile_file(name):
    if not _FILES:
        with open(VECTORS) as fh:
            for case in json.load(fh)["cases"]:
                if case["kind"] == "profile":
                    _FILES[case["id"]] = case["file"]
    return _FILES[name]


def device_cases(doc):
    """The cases a device answers: all but the host-only rejections."""
    return [c for c in doc["cases"] if not c.get("host_only")]


def request(case):
    """The inputs of a case (never its expected answers)."""
    if case["kind"] == "profile":
        return {"kind": "profile", "file": case["file"]}
    req = {"kind": "randomise", "file": _profile_file(case["profile"]),
           "inputs": case["inputs"]}
    for key in ("key", "words"):
        if key in case:
            req[key] = case[key]
    return req


def check(case, resp):
    """(passed, detail) for one reply (resp: the runner's reply dict)."""
    if case["result"] != "valid":
        if resp.get("ok"):
            return False, "accepted a must-reject case (reason %s)" % case["reason"]
        got = resp.get("error")
        if got == case["reason"]:
            return True, "rejected: %s" % got
        return False, "rejected with %r, vector says %r" % (got, case["reason"])
    if not resp.get("ok"):
        return False, "error %r" % resp.get("error")
    got = resp["result"]
    if case["kind"] == "profile":
        want = {k: case[k] for k in ("fingerprint", "bits") if k in case}
        have = {k: got.get(k) for k in want}
        if have != want:
            return False, "got %r, want %r" % (have, want)
        return True, "accepted: %s" % (", ".join(sorted(want)) or "valid")
    outs = got.get("outputs", [])
    if len(outs) != len(case["expected"]):
        return False, "%d outputs for %d inputs" % (len(outs), len(case["expected"]))
    for i, (g, w) in enumerate(zip(outs, case["expected"])):
        for field in ("message", "words_used"):
            if g.get(field) != w[field]:
                return False, "input %d: %s %r, want %r" % (i, field, g.get(field), w[field])
    return True, "%d messages bit-exact" % len(outs)


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import ProfileError
    from ..mechanism import profile as P
    from ..mechanism import shuffle_profile as SP
    from ..mechanism.floatbits import bits_to_float64
    from ..mechanism.words import CounterWords, ListWords, Recorder

    case = req.get("case", req)
    data = case["file"].encode("ascii", "surrogateescape")
    try:
        prof = SP.loads(data) if SP.is_shuffle_file(data) else P.loads(data)
    except ProfileError as exc:
        return False, getattr(exc, "reason", None) or "unclassified:%s" % exc
    if not isinstance(prof, SP.ShuffleProfile):
        return False, "not a shuffle profile"
    if case["kind"] == "profile":
        return True, {"fingerprint": prof.fingerprint, "bits": prof.bits}
    source = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
              else ListWords(int(w, 16) for w in case.get("words", ())))
    outs = []
    for item in case["inputs"]:
        rec = Recorder(source)
        values = [bits_to_float64(int(v, 16)) for v in item]
        outs.append({"message": SP.ShuffleSampler(prof, rec).sample(values),
                     "words_used": len(rec.used)})
    return True, {"outputs": outs}
