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
`handle` below is the host side (zeal.mechanism.multi.profile) for target "cpython".
"""
import os

from ..mechanism import kinds
from .conformance_cases import (fields_differ, outputs_differ, profile_case, reason_of, settled,
                                word_inputs, word_source)
from ..contract import VECTORS as VECTORS_DIR

VECTORS = os.path.join(VECTORS_DIR, "multi.json")
_PROFILE_KEYS = ("fingerprint", "d", "k", "index_bits", "value_bits", "max_report_bits",
                 "max_batch")


def _same_pairs(got, want):
    """A report as [index, value] pairs, whatever sequence type spells each pair."""
    return [list(p) for p in (() if got is None else got)] == [list(p) for p in want]


def device_cases(doc):
    """The cases a device answers: all but the payloads only a decoder refuses."""
    return [c for c in doc["cases"] if c["kind"] != "payload" or c["result"] == "valid"]


def request(case):
    """The inputs of a case (never its expected answers)."""
    if case["kind"] == "profile":
        return {"kind": "profile", "header": case["header"],
                "attributes": case.get("attributes", {})}
    named = profile_case(VECTORS, case["profile"])
    header, attrs = named["header"], named.get("attributes", {})
    req = {"kind": case["kind"], "header": header, "attributes": attrs}
    if case["kind"] == "sample":
        req["lines"] = case["lines"]
        req.update(word_inputs(case))
    elif case["result"] == "valid":
        req["reports"] = case["reports"]
    else:
        req["payload"] = case["payload"]
        req["count"] = case["count"]
    return req


def check(case, resp):
    """(passed, detail) for one reply (resp: the runner's reply dict)."""
    verdict = settled(case, resp)
    if verdict is not None:
        return verdict
    got = resp["result"]
    if case["kind"] == "profile":
        differ = fields_differ(got, case, _PROFILE_KEYS)
        return (False, differ) if differ else (True, ", ".join(_PROFILE_KEYS))
    if case["kind"] == "payload":
        if got.get("payload") != case["payload"]:
            return False, "payload %r, want %r" % (got.get("payload"), case["payload"])
        return True, "%d reports packed bit-exact" % case["count"]
    differ = outputs_differ(got, case, ("report", "words_used"), totals=("replaced", "clamped"),
                            item="line", same={"report": _same_pairs})
    return (False, differ) if differ else (True, "%d reports bit-exact" % len(got["outputs"]))


def handle(req):
    """The host reference: (ok, result_or_reason)."""
    from ..errors import ProfileError, ReportError
    from ..mechanism.multi import profile as MP
    from ..mechanism.core.words import Recorder

    case = req.get("case", req)
    attrs = {int(i): t.encode("ascii", "surrogateescape")
             for i, t in case.get("attributes", {}).items()}
    try:
        prof = kinds.loads(case["header"].encode("ascii", "surrogateescape"),
                                  lambda i, fp: attrs.get(i))
    except ProfileError as exc:
        return False, reason_of(exc)
    if kinds.of(prof) is not kinds.MULTI:  # (this suite's own kind)
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
            return False, reason_of(exc)
        return True, {}
    source = word_source(case)
    sampler = MP.MultiSampler(prof, source)
    outs = []
    for line in case["lines"]:
        rec = Recorder(source)
        report = sampler.sample(line, rec)
        outs.append({"report": [list(p) for p in report], "words_used": len(rec.used)})
    return True, {"outputs": outs, "replaced": sampler.replaced, "clamped": sampler.clamped}
