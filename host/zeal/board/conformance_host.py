"""Target "cpython" of the conformance runner: the host reference (zeal.mechanism: scalar,
profile, words) answering the runner's requests in process."""
from .conformance_cases import readings, word_source
from .conformance_suites import checker


def _host_reason(exc):
    """A reason code for a host exception (the host's errors carry messages, not codes)."""
    reason = getattr(exc, "reason", None)
    if reason:
        return reason
    msg = str(exc)
    for needle, code in (("NaN", "nan"), ("infinite", "inf"),
                         ("need a profile with a calibration", "calibration"),
                         ("fingerprint", "fingerprint"), ("unsupported profile format", "format"),
                         ("is missing", "missing"), ("unknown keys", "unknown"),
                         ("must be an integer", "type"), ("64-bit pattern", "type"),
                         ("parameters give", "derived")):
        if needle in msg:
            return code
    return "unclassified:" + msg


class HostImpl:
    """The CPython reference, answering runner requests in process."""

    name = "cpython"
    strict_reasons = False  # host errors have no codes; for profiles, rejecting is enough

    def handle(self, req):
        from ..errors import InputError, ProfileError
        from ..mechanism.grid import profile as P
        from ..mechanism.grid import reports
        from ..mechanism.grid.scalar import ExactZeal
        from ..mechanism.core.words import CounterWords, Recorder

        suite, case = req["suite"], req.get("case", {})
        if suite == "generator":
            gen = CounterWords(bytes.fromhex(case["key"]))
            return True, ["%016x" % w for w in gen.take(case["n"])]
        if suite == "profiles":
            try:
                prof = P.from_dict(req["profile"])
            except ProfileError as exc:
                return False, _host_reason(exc)
            return True, {"canonical": prof.canonical_bytes().decode(),
                          "fingerprint": prof.fingerprint}
        if suite == "mechanism":
            try:
                prof = P.from_dict(req["profile"])
            except ProfileError as exc:
                return False, "profile:" + _host_reason(exc)
            try:
                xs = readings(prof, case["inputs"])
            except InputError as exc:
                return False, _host_reason(exc)
            source = word_source(case)
            mech = ExactZeal(profile=prof, words=source)
            outs = []
            for x in xs:
                rec = Recorder(source)
                k = mech.perturb(x, rec)
                outs.append({"k": k, "bits": "%016x" % reports.to_bits(prof, k),
                             "low": reports.to_low(prof, k), "words_used": len(rec.used)})
            return True, {"outputs": outs, "clamped": mech.clamped}
        mod = checker(suite)
        if mod is None or not hasattr(mod, "handle"):
            return False, "unknown_suite"
        return mod.handle(req)

    def request(self, req, timeout=None):
        try:
            ok, res = self.handle(req)
        except Exception as exc:  # a crash is a failed case, not a failed run
            ok, res = False, "internal:%s:%s" % (type(exc).__name__, exc)
        if ok:
            return {"id": req["id"], "ok": True, "result": res}
        return {"id": req["id"], "ok": False, "error": res}

    def close(self):
        pass
