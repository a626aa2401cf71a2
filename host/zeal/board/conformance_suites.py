"""The conformance suites: which exist (shared_spec/vectors/<suite>.json), each one's checker,
the request an implementation is sent for a case (inputs only) and the verdict on its reply."""
import hashlib
import importlib
import json
import os

from ..wire import conformance as wire_conformance
from . import conformance_multi, conformance_shuffle, conformance_tables
from .conformance_cases import outputs_differ, rejected, settled, word_inputs
from ..contract import VECTORS
from .firmware import ConformanceError

BUILTIN_SUITES = ("generator", "profiles", "mechanism")
# keys of a vector case that hold expected answers or prose: never sent to an implementation
EXPECTED_KEYS = frozenset(("comment", "result", "reason", "expected", "expect", "frame",
                           "values", "host_only"))


def available_suites(vectors_dir=VECTORS):
    """Built-in suites whose file exists, then every other vectors/<suite>.json."""
    names = sorted(f[:-5] for f in os.listdir(vectors_dir) if f.endswith(".json"))
    return [s for s in BUILTIN_SUITES if s in names] + [s for s in names
                                                       if s not in BUILTIN_SUITES]


def load_vectors(suite, vectors_dir=VECTORS):
    path = os.path.join(vectors_dir, suite + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        doc = json.load(fh)
    if doc.get("count") != len(doc.get("cases", ())):
        raise ConformanceError("%s: header count %r but %d cases"
                               % (suite, doc.get("count"), len(doc.get("cases", ()))))
    return doc


# suites whose checker lives elsewhere than zeal.<suite>.conformance
CHECKERS = {"tables": conformance_tables, "shuffle": conformance_shuffle,
            "multi": conformance_multi, "wire": wire_conformance}


def checker(suite):
    if suite in CHECKERS:
        return CHECKERS[suite]
    # a vectors file this zeal has no checker of its own for (vectors/<suite>.json, found at run
    # time) names its checker by convention, zeal.<suite>.conformance: chosen by the file's
    # name when it runs, so imported by name
    try:
        return importlib.import_module("zeal.%s.conformance" % suite)
    except ModuleNotFoundError as exc:
        if exc.name in ("zeal.%s" % suite, "zeal.%s.conformance" % suite):
            return None
        raise


def case_requests(suite, cases, profiles):
    """[(case, request)] with inputs only."""
    out = []
    for case in cases:
        req = {"suite": suite, "id": case["id"]}
        if suite == "generator":
            req["case"] = {"key": case["key"], "n": len(case["words"])}
        elif suite == "profiles":
            req["case"] = {}
            req["profile"] = case["profile"]
        elif suite == "mechanism":
            req["case"] = {"inputs": case["inputs"], **word_inputs(case)}
            req["profile"] = profiles[case["profile"]]["profile"]
        else:
            mod = checker(suite)
            build = getattr(mod, "request", None)
            req["case"] = build(case) if build else {k: v for k, v in case.items()
                                                      if k not in EXPECTED_KEYS}
        out.append((case, req))
    return out


def _expect_error(case, resp, strict_reason):
    """`rejected`, except that accepting a host-only rejection is not a failure and, with
    strict_reason false, any rejection passes."""
    if resp.get("ok") and case.get("host_only"):
        return None, "host-only rejection (%s): a device need not detect it" % case["reason"]
    if not strict_reason and not resp.get("ok"):
        return True, "rejected: %s" % resp.get("error")
    return rejected(case, resp)


def check(suite, case, resp, *, strict_reasons=True):
    """(passed, detail) for one response against its vector case."""
    if resp is None:
        return False, "no response"
    if suite == "generator":
        if not resp.get("ok"):
            return False, "error %r" % resp.get("error")
        if resp["result"] == case["words"]:
            return True, "%d words" % len(case["words"])
        return False, "words differ: got %r" % (resp["result"],)
    if suite == "profiles":
        if case["result"] != "valid":
            return _expect_error(case, resp, strict_reasons)
        if not resp.get("ok"):
            return False, "rejected a valid profile: %r" % resp.get("error")
        want = {"canonical": case["canonical"],
                "fingerprint": hashlib.sha256(case["canonical"].encode()).hexdigest()}
        if resp["result"] != want or want["fingerprint"] != case["profile"]["fingerprint"]:
            return False, "got %r, want %r" % (resp["result"], want)
        return True, "canonical bytes and fingerprint"
    if suite == "mechanism":
        if case["result"] != "valid":
            return _expect_error(case, resp, True)
        verdict = settled(case, resp)
        if verdict is not None:
            return verdict
        got = resp["result"]
        differ = outputs_differ(got, case, ("k", "bits", "low", "words_used"),
                                totals=("clamped",))
        return (False, differ) if differ else (True, "%d reports bit-exact"
                                               % len(got["outputs"]))
    mod = checker(suite)
    resp = dict(resp)
    if not resp.get("ok") and "reason" not in resp:
        resp["reason"] = resp.get("error")  # zeal.wire.conformance reads result or reason
    try:
        verdict = mod.check(case, resp)
    except AssertionError as exc:
        return False, "check failed: %s" % exc
    if isinstance(verdict, tuple):
        return bool(verdict[0]), str(verdict[1])
    return bool(verdict), ""
