"""What the conformance checkers share about a vector case, written once.

zeal.board.conformance (suites generator, profiles, mechanism) and its suite checkers
conformance_tables, conformance_shuffle and conformance_multi all read cases of the same shape
(shared_spec/vectors/*.json): inputs, a generator key or an explicit word list, expected
outputs per input, must-reject cases with a reason. Here, for them:

- `word_inputs(case)`: the case's word fields ("key" or "words") for a request;
- `word_source(case)`: the host's source of those words (CounterWords from the key, else
  ListWords from the list);
- `readings(prof, items)`: the host readings of inputs {"float64": hex} / {"float32": hex} /
  {"raw": int}, every one decoded before any word is drawn (raises InputError);
- `reason_of(exc)`: the reason code a host error carries, else "unclassified:<message>";
- `profile_case(path, id)`: the "profile" case a sampling case of a vectors file names;
  `file_request(case, path, kind)`: the request of a suite whose profiles are one file each
  (tables, shuffle);
- `settled(case, resp)`: the verdict decided before a result is read (a must-reject case, or
  an error on a valid one); `rejected(case, resp)` the must-reject verdict alone;
- `fields_differ(got, case, keys)` and `outputs_differ(got, case, fields, ...)`: the first
  difference between a result and the vector's answer, as a detail line, or None.

The lowest module of the conformance checkers: it imports no other of them.
"""
import functools
import json


def word_inputs(case):
    """{"key": hex} or {"words": [hex, ...]}: the words of a case, as a request carries them."""
    return {k: case[k] for k in ("key", "words") if k in case}


def word_source(case):
    """The host's words for a case: CounterWords from its key, else ListWords from its list."""
    from ..mechanism.core.words import CounterWords, ListWords

    return (CounterWords(bytes.fromhex(case["key"])) if "key" in case
            else ListWords(int(w, 16) for w in case.get("words", ())))


def readings(prof, items):
    """The host readings of a case's inputs, all decoded before any word is drawn.
    Raises zeal.errors.InputError for an input no device may use (NaN, inf, a bad raw)."""
    from ..mechanism.core.draws import reading_from_float32_bits, reading_from_float64_bits
    from ..mechanism.grid.scalar import reading_from_raw

    xs = []
    for item in items:
        if "float64" in item:
            xs.append(reading_from_float64_bits(int(item["float64"], 16)))
        elif "float32" in item:
            xs.append(reading_from_float32_bits(int(item["float32"], 16)))
        else:
            xs.append(reading_from_raw(prof, item["raw"]))
    return xs


def reason_of(exc):
    """The reason code of a host error (ProfileError, InputError, ReportError), or
    "unclassified:<message>" for one without."""
    return getattr(exc, "reason", None) or "unclassified:%s" % exc


@functools.lru_cache(maxsize=None)
def _profile_cases(path):
    with open(path) as fh:
        return {c["id"]: c for c in json.load(fh)["cases"] if c["kind"] == "profile"}


def profile_case(path, name):
    """The case of kind "profile" with id `name` in the vectors file at `path` (read once)."""
    return _profile_cases(path)[name]


def file_request(case, path, kind):
    """The inputs of a case (never its expected answers) of a suite whose profiles are one
    file each: kind "profile" sends the file text; any other sends `kind` with the named
    profile's file text, the inputs and the words."""
    if case["kind"] == "profile":
        return {"kind": "profile", "file": case["file"]}
    req = {"kind": kind, "file": profile_case(path, case["profile"])["file"],
           "inputs": case["inputs"]}
    req.update(word_inputs(case))
    return req


def rejected(case, resp):
    """(passed, detail) for a must-reject case: rejected with the vector's reason."""
    if resp.get("ok"):
        return False, "accepted a must-reject case (reason %s)" % case["reason"]
    got = resp.get("error")
    if got == case["reason"]:
        return True, "rejected: %s" % got
    return False, "rejected with %r, vector says %r" % (got, case["reason"])


def settled(case, resp):
    """(passed, detail) when the verdict needs no result: a must-reject case (`rejected`), or
    an error on a valid case; None when the result is there to compare."""
    if case["result"] != "valid":
        return rejected(case, resp)
    if not resp.get("ok"):
        return False, "error %r" % resp.get("error")
    return None


def fields_differ(got, case, keys):
    """None when the result has the case's values under `keys`, else "got ..., want ..."."""
    want = {k: case[k] for k in keys}
    have = {k: got.get(k) for k in want}
    return None if have == want else "got %r, want %r" % (have, want)


def outputs_differ(got, case, fields, totals=(), item="input", same=None):
    """None when got["outputs"] matches case["expected"] item by item in `fields` and got
    matches the case in `totals` (counts such as "clamped"); else the first difference.
    `same` optionally maps a field to its comparison (for values of several spellings)."""
    outs = got.get("outputs", [])
    if len(outs) != len(case["expected"]):
        return "%d outputs for %d %ss" % (len(outs), len(case["expected"]), item)
    same = same or {}
    for i, (g, w) in enumerate(zip(outs, case["expected"])):
        for field in fields:
            equal = same.get(field, lambda a, b: a == b)
            if not equal(g.get(field), w[field]):
                return "%s %d: %s %r, want %r" % (item, i, field, g.get(field), w[field])
    for field in totals:
        if got.get(field) != case[field]:
            return "%s %r, want %r" % (field, got.get(field), case[field])
    return None
