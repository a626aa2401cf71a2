"""The "multi" conformance suite (shared_spec/vectors/multi.json): multi-attribute profiles
("zeal-multi/1" headers with their attribute files), the multi sampler and the DATA payload
packer through every implementation.

- kind "profile": the header's exact text and the attribute files by index; a device reads
  the header by the sniff rule (zealfw.mprofile) with the attribute files as if beside it
  and answers fingerprint, d, k, index_bits, value_bits, max_report_bits and max_batch, or
  the reason of the check list (attr<i>:<reason> for an attribute file's own).
- kind "sample": the named profile's files, replay lines (d comma-separated fields, read by
  the device's tuple source) and a generator key or a word list; per line the report's
  pairs and the words consumed, then the replaced and clamped counts.
- kind "payload": the reports a device packs (zealfw.msample.Sender) into the DATA payload,
  compared byte for byte; payloads a decoder must refuse (length, padding, grid) are the
  host decoder's (unpack_multi, tested by the host's tests) and not sent to a device.
The expected values stay here. The firmware side is firmware/conformance/conformance_multi.py;
`handle` below is the host side (zeal.mechanism.multi_profile) for target "cpython".
"""
import json
import os

from .firmware import ROOT

VECTORS = os.path.join(ROOT, "shared_spec", "vectors", "multi.json")
_FILES = {}
_PROFILE_KEYS = ("fingerprint", "d", "k", "index_bits", "value_bits", "max_report_bits",
                 "max_batch")


def _profile_files(name):
    if not _FILES:
        with open(VECTORS) as fh:
            for case in json.load(fh)["cases"]:
                if case["kind"] == "profile":
                    _FILES[case["id"]] = (case["header"], case.get("attributes", {}))
    return _FILES[name]


def device_cases(doc):
    """The cases a device answers: all but the payloads only a decoder refuses."""
    return [c for c in doc["cases"] if c["kind"] != "payload" or c["result"] == "valid"]


def request(case):
    """The inputs of a case (never its expected answers)."""
    if case["kind"] == "profile":
        return {"kind": "profile", "header": case["header"],
                "attributes": case.get("attributes", {})}
    header, attrs = _profile_files(case["profile"])
    req = {"kind": case["kind"], "header": header, "attributes": attrs}
    if case["kind"] == "sample":
        req["lines"] = case["lines"]
        for key in ("key", "words"):
            if key in case:
                req[key] = case[key]
    elif case["result"] == "valid":
        req["reports"] = case["reports"]
    else:
        req["payload"] = case["payload"]
        req["count"] = case["count"]
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
        want = {k: case[k] for k in _PROFILE_KEYS}
        have = {k: got.get(k) for k in want}
        if have != want:
            return False, "got %r, want %r" % (have, want)
        return True, ", ".join(_PROFILE_KEYS)
    if case["kind"] == "payload":
        if got.get("payload") != case["payload"]:
            return False, "payload %r, want %r" % (got.get("payload"), case["payload"])
        return True, "%d reports packed bit-exact" % case["count"]
    outs = got.get("outputs", [])
    if len(outs) != len(case["expected"]):
        return False, "%d outputs for %d lines" % (len(outs), len(case["expected"]))
    for i, (g, w) in enumerate(zip(outs, case["expected"])):
        if [list(p) for p in g.get("report", ())] != [list(p) for p in w["report"]]:
            return False, "line %d: report %r, want %r" % (i, g.get("report"), w["report"])
        if g.get("words_used") != w["words_used"]:
            return False, "line %d: words_used %r, want %r" % (i, g.get("words_used"),
                                                               w["words_used"])
    for field in ("replaced", "clamped"):
        if got.get(field) != case[field]:
            return False, "%s %r, want %r" % (field, got.get(field), case[field])
    return True, "%d reports bit-exact" % len(outs)


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import ProfileError, ReportError
    from ..mechanism import multi_profile as MP
    from ..mechanism import profiles
    from ..mechanism.words import CounterWords, ListWords, Recorder

    case = req.get("case", req)
    attrs = {int(i): t.encode("ascii", "surrogateescape")
             for i, t in case.get("attributes", {}).items()}
    try:
        prof = profiles.loads_any(case["header"].encode("ascii", "surrogateescape"),
                                  lambda i, fp: attrs.get(i))
    except ProfileError as exc:
        return False, getattr(exc, "reason", None) or "unclassified:%s" % exc
    if not isinstance(prof, MP.MultiProfile):
        return False, "not a multi profile"
    if case["kind"] == "profile":
        return True, {"fingerprint": prof.fingerprint, "d": prof.d, "k": prof.k,
                      "index_bits": prof.index_bits,
                      "value_bits": [prof.value_bits(j) for j in range(prof.d)],
                      "max_report_bits": prof.max_report_bits(),
                      "max_batch": prof.max_batch()}
    if case["kind"] == "payload":
        try:
            if "reports" in case:
                return True, {"payload": MP.pack_multi(prof, case["reports"]).hex()}
            MP.unpack_multi(prof, bytes.fromhex(case["payload"]), case["count"])
        except ReportError as exc:
            return False, getattr(exc, "reason", None) or "unclassified:%s" % exc
        return True, {}
    source = (CounterWords(bytes.fromhex(case["key"])) if "key" in case
              else ListWords(int(w, 16) for w in case.get("words", ())))
    sampler = MP.MultiSampler(prof, source)
    outs = []
    for line in case["lines"]:
        rec = Recorder(source)
        report = sampler.sample(line, rec)
        outs.append({"report": [list(p) for p in report], "words_used": len(rec.used)})
    return True, {"outputs": outs, "replaced": sampler.replaced, "clamped": sampler.clamped}
