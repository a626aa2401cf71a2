"""Multi-attribute profiles on the device (issue 11 item 1): zealfw.mprofile (the header,
its attribute files and their checks), zealfw.msample (the sampler and the Sender of
variable-length reports), zealfw.src_tuple (tuple sources) and the dispatch in
zealfw.profile/main.

(a) shared_spec/vectors/multi.json through the device under CPython and on the MicroPython
    unix port: the same accept/reject reasons, reports, words consumed, replaced and
    clamped counts, and packed payloads as the host;
(b) agreement of the loaders on a corpus of mutated headers and attribute files: host
    (kinds.loads), device loader under CPython and under MicroPython;
(c) the device sampler word for word against the host reference (MultiSampler);
(d) the whole firmware loop (zealfw.main.run) under MicroPython with a multi profile and a
    replay of several columns: HELLO announces bits = 0, the DATA payloads unpack (the
    host's unpack_multi, and zeal.wire.Decoder) into the host reference's reports;
(e) a seeded statistical test of the device sampler under MicroPython: the attribute
    subsets' frequencies, one numeric attribute's mean and the OUE true bit's rate;
(f) the heap: the whole loop from .mpy with a d = 4 profile at a fixed heap.
"""
import hashlib
import io
import json
import math
import os
import random
import struct
import sys
import zlib
from fractions import Fraction

import pytest
from cobs import cobs

from zeal.board import conformance as C
from zeal.errors import ProfileError
from zeal.mechanism.multi import profile as MP
from zeal.mechanism import kinds
from zeal.mechanism.multi.mechanism import Categorical, Numeric
from zeal.mechanism.core.words import CounterWords

from conftest import ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)
from zealfw import mprofile as FM  # noqa: E402
from zealfw import pfile as FPF  # noqa: E402

from mp_unix import f64 as _f64  # noqa: E402
from mp_unix import rehash as _rehash  # noqa: E402
from mp_unix import marked as _marked  # noqa: E402
from mp_unix import micropython as _micropython  # noqa: E402,F401
from mp_unix import run_mp as _run_mp  # noqa: E402
from mp_unix import DEVICE_TARGETS, use_target  # noqa: E402

VECTORS = {c["id"]: c for c in C.load_vectors("multi")["cases"]}
KEY = bytes(range(32))


def _profile(cid):
    case = VECTORS[cid]
    files = {int(i): t.encode() for i, t in case.get("attributes", {}).items()}
    return MP.loads(case["header"].encode(), lambda i, fp: files.get(i))


def test_max_multi_file_is_the_hosts():
    assert FM._MAX_MULTI_FILE == MP.MAX_MULTI_FILE
    from zealfw import tprofile

    assert FM._MAX_ATTR_FILE == tprofile._MAX_TABLE_FILE


def test_attribute_paths_are_the_hosts():
    for path in ("zeal_profile.json", "a/b/x.json", "x", "dir.d/x", "a/.hidden", "x.y.json",
                 "/flash/p.json"):
        for i in (0, 3, 15):
            assert FM.attr_path(path, i) == MP.attribute_path(path, i), (path, i)


# ---- (a) the vectors ---------------------------------------------------------------------------
@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_multi_vectors_on_the_device(target, monkeypatch):
    rows = C.run(use_target(target, monkeypatch), ["multi"])
    device = [c for c in VECTORS.values() if c["kind"] != "payload" or c["result"] == "valid"]
    ran = [r for r in rows if r[1] != "*host-only*"]
    assert len(ran) == len(device) >= 60
    bad = [r for r in ran if r[2] is not True]
    assert not bad, bad[:5]
    kinds = {VECTORS[r[1]]["kind"] for r in ran}
    assert kinds == {"profile", "sample", "payload"}


def test_multi_checker_catches_wrong_answers():
    from zeal.board import conformance_multi as CM

    case = VECTORS["m-mixed-k2-lines"]
    ok, good = CM.handle({"case": CM.request(case)})
    assert ok and CM.check(case, {"ok": True, "result": good})[0]
    for path in (("outputs", 0, "report", 0, 1), ("outputs", -1, "words_used")):
        wrong = json.loads(json.dumps(good))
        node = wrong
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] += 1
        assert not CM.check(case, {"ok": True, "result": wrong})[0], path
    wrong = dict(good, clamped=good["clamped"] + 1)
    assert not CM.check(case, {"ok": True, "result": wrong})[0]
    pay = next(c for c in VECTORS.values() if c["kind"] == "payload" and c["result"] == "valid"
               and c["count"] > 1)
    ok, res = CM.handle({"case": CM.request(pay)})
    assert ok and CM.check(pay, {"ok": True, "result": res})[0]
    flipped = "%02x" % (int(res["payload"][:2], 16) ^ 1) + res["payload"][2:]
    assert not CM.check(pay, {"ok": True, "result": {"payload": flipped}})[0]
    bad = VECTORS["m-attr-missing"]
    assert CM.check(bad, {"ok": False, "error": "attr1:missing"})[0]
    assert not CM.check(bad, {"ok": False, "error": "attr0:missing"})[0]


# ---- (b) loader agreement ----------------------------------------------------------------------
def _header(doc):
    keys = ["format"] + sorted(k for k in doc if k != "format") if "format" in doc else \
        sorted(doc)
    return ("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(doc[k])) for k in keys)
            + "\n}\n").encode()


def multi_corpus():
    """{id: (header bytes, {i: attribute file bytes})}."""
    bases = ["m-hand", "m-aarhus", "m-mixed-k2", "m-d16-k16"]
    cases = {}

    def add(cid, header, files):
        assert cid not in cases, cid
        cases[cid] = (header if isinstance(header, bytes) else _header(header), files)

    for cid, case in VECTORS.items():
        if case["kind"] == "profile":
            add("vector:" + cid, case["header"].encode("utf-8", "surrogateescape"),
                {int(i): t.encode() for i, t in case.get("attributes", {}).items()})
    for name in bases:
        case = VECTORS[name]
        base = json.loads(case["header"])
        files = {int(i): t.encode() for i, t in case.get("attributes", {}).items()}
        add(name + ":compact", json.dumps(base, separators=(",", ":")).encode(), files)
        for key in base:
            rest = {k: v for k, v in base.items() if k != key}
            if key != "format":
                add("%s:drop-%s" % (name, key), _rehash(rest), files)
            value = base[key]
            wrong = [None, True, [], 1.5]
            wrong += ([str(value), -value, 0, value + 1, 17] if isinstance(value, int)
                      else [0, value.upper(), value + " ", value[:-1], value + "0",
                            value + ".", "." + value, value.replace(".", "..", 1)])
            for i, w in enumerate(wrong):
                if key == "format" and isinstance(w, (str, type(None))):
                    continue  # not a multi header by the sniff
                add("%s:type-%s-%d" % (name, key, i), _rehash(dict(base, **{key: w})), files)
        add(name + ":extra", _rehash(dict(base, extra="x")), files)
        d, k = base["d"], base["k"]
        for v in range(0, d + 2):
            add("%s:k-%d" % (name, v), _rehash(dict(base, k=v)), files)
        for label, v in (("nan", "0x7ff8000000000000"), ("inf", "0x7ff0000000000000"),
                         ("zero", "0x" + "0" * 16), ("neg", "0xbff0000000000000"),
                         ("twenty", "0x4034000000000000"), ("big", "0x4034000000000001"),
                         ("half", "0x3fe0000000000000"), ("tiny", "0x3e80000000000000")):
            add("%s:eps-%s" % (name, label), _rehash(dict(base, epsilon=v)), files)
        names = base["names"].split(".")
        for i, v in enumerate((names[:1] * d, ["a+b"] + names[1:], ["x" * 17] + names[1:],
                               ["x" * 16] + names[1:], [""] + names[1:], ["a/b"] + names[1:])):
            add("%s:names-%d" % (name, i), _rehash(dict(base, names=".".join(v))), files)
        items = base["attrs"].split(".")
        for i, item in enumerate(items):
            muts = [item[:-1], item + "0", "q" + item[1:], item[:5] + "G" + item[6:]]
            if item[0] == "o":
                c, rn = int(item[1:3], 16), int(item[3:], 16)
                muts += ["o%02x%016x" % (v, rn) for v in (1, 2, 63, 64, c + 1)]
                muts += ["o%02x%016x" % (c, v) for v in (1 << 32, (1 << 32) + 1, rn + 1,
                                                          rn - 1, (1 << 64) - 1)]
            else:
                other = [t for t in items if t[0] == "p" and t != item]
                muts += other[:1]
            for m, mut in enumerate(muts):
                its = list(items)
                its[i] = mut
                add("%s:attr%d-%d" % (name, i, m), _rehash(dict(base, attrs=".".join(its))),
                    files)
        # attribute files: missing, edited, truncated, swapped, padded, a multi header
        for i, text in sorted(files.items())[:3]:
            add("%s:file%d-missing" % (name, i), _header(base),
                {j: t for j, t in files.items() if j != i})
            add("%s:file%d-cut" % (name, i), _header(base), {**files, i: text[:-20]})
            add("%s:file%d-edit" % (name, i), _header(base),
                {**files, i: text.replace(b'"bits"', b'"bitz"', 1)})
            add("%s:file%d-pad" % (name, i), _header(base),
                {**files, i: text + b" " * (4318 - len(text))})
            add("%s:file%d-header" % (name, i), _header(base),
                {**files, i: _header(base)})
            others = [t for j, t in files.items() if j != i]
            if others:
                add("%s:file%d-other" % (name, i), _header(base), {**files, i: others[0]})
        text = _header(base)
        add(name + ":pad-max", text + b" " * (MP.MAX_MULTI_FILE - len(text)), files)
        add(name + ":pad-over", text + b" " * (MP.MAX_MULTI_FILE + 1 - len(text)), files)
        add(name + ":escape", text.replace(b'"names"', b'"\\u006eames"'), files)
        add(name + ":dup", text.replace(b'"k"', b'"k": 1,\n "k"', 1), files)
    return cases


def _host_verdict(header, files):
    try:
        prof = kinds.loads(header, lambda i, fp: files.get(i))
    except ProfileError as exc:
        return ["error", getattr(exc, "reason", "none")]
    if not isinstance(prof, MP.MultiProfile):
        return ["not-multi"]
    return ["ok", prof.fingerprint]


def _device_verdict(header, files):
    from zealfw import profile as FP

    try:
        if header.find(b"zeal-multi/1", 0, 503) < 0:
            FP.loads(header)  # by the sniff rule: the grid (or table) loader's verdict
            return ["not-multi"]
        fields = FM.loads(header, lambda i: files.get(i))
    except FPF.ProfileError as exc:
        return ["error", exc.reason]
    return ["ok", fields[-1]]


AGREE = """
import json
from binascii import unhexlify
from zealfw import mprofile, profile
from zealfw.pfile import ProfileError
with open("corpus.json") as f:
    corpus = json.load(f)
out = {}
for cid in corpus:
    header, files = corpus[cid]
    header = unhexlify(header)
    def fetch(i):
        t = files.get(str(i))
        return None if t is None else unhexlify(t)
    try:
        if header.find(b"zeal-multi/1", 0, 503) < 0:
            profile.loads(header)
            out[cid] = ["not-multi"]
            continue
        out[cid] = ["ok", mprofile.loads(header, fetch)[-1]]
    except ProfileError as e:
        out[cid] = ["error", e.reason]
print("@@" + json.dumps(out))
"""


def test_loaders_agree_on_mutated_multi_files(mp_port, tmp_path):
    corpus = multi_corpus()
    assert len(corpus) > 300
    host = {cid: _host_verdict(h, f) for cid, (h, f) in corpus.items()}
    dev = {cid: _device_verdict(h, f) for cid, (h, f) in corpus.items()}
    (tmp_path / "corpus.json").write_text(json.dumps(
        {c: [h.hex(), {str(i): t.hex() for i, t in f.items()}] for c, (h, f) in corpus.items()}))
    (mp,) = _marked(_run_mp(AGREE, str(tmp_path), heapsize="64m"))
    diffs = [(cid, host[cid], dev[cid], mp[cid]) for cid in corpus
             if not host[cid] == dev[cid] == mp[cid]]
    assert not diffs, diffs[:10]
    reasons = {v[1] for v in host.values() if v[0] == "error"}
    assert {"size", "json", "type", "format", "missing", "unknown", "value", "fingerprint",
            "attr", "privacy"} <= reasons, reasons
    assert any(r.startswith("attr0:") for r in reasons)
    assert sum(v[0] == "ok" for v in host.values()) >= 20


def test_multi_header_from_the_device_filesystem(mp_port, tmp_path):
    """mprofile.load: the header and its attribute files beside it (X.json -> X.<i>.json),
    a missing attribute file, a missing header."""
    prof = _profile("m-mixed-k2")
    prof.write(str(tmp_path / "p.json"))
    prof.write(str(tmp_path / "q.json"))
    missing = sorted(prof.attribute_files())[0]
    os.remove(MP.attribute_path(str(tmp_path / "q.json"), missing))
    script = """
import json
from zealfw import mprofile
from zealfw.pfile import ProfileError
out = {}
for name in ("p.json", "q.json", "absent.json"):
    try:
        out[name] = ["ok", mprofile.load(name)[-1]]
    except ProfileError as e:
        out[name] = ["error", e.reason]
print("@@" + json.dumps(out))
"""
    (res,) = _marked(_run_mp(script, str(tmp_path)))
    assert res["p.json"] == ["ok", prof.fingerprint]
    assert res["q.json"] == ["error", "attr%d:missing" % missing]
    assert res["absent.json"] == ["error", "missing_file"]
    assert MP.load(str(tmp_path / "p.json")).fingerprint == prof.fingerprint


# ---- (c) word for word -------------------------------------------------------------------------
class _Fields:
    pass


def _device_sampler(prof, words):
    from zealfw import msample

    f = _Fields()
    f.fields = FM.loads(prof.to_json().encode(),
                        lambda i: prof.attribute_files()[i].encode())
    return msample.Zeal(f, words), f.fields


def _source(prof, lines):
    from zealfw.src_tuple import Source

    cats = [a.c if a.kind == "oue" else 0 for a in prof.attributes]
    return Source(prof.d, None, io.BytesIO(("\n".join(lines) + "\n").encode()), None, cats)


def _lines(prof, n, seed):
    """Replay lines across and beyond every range, with bad fields, NaN, infinities, short
    lines, categorical values out of range or with a sign, tabs around the line."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        fields = []
        for a in prof.attributes:
            if a.kind == "oue":
                fields.append(rnd.choice(["%d" % rnd.randrange(a.c)] * 6 + [
                    "%d" % a.c, "-1", "+1", "x", "", " 1", "01"]))
            else:
                lo, hi = float(a.lo), float(a.hi)
                span = hi - lo
                x = rnd.uniform(lo - span / 5, hi + span / 5)
                fields.append(rnd.choice([_f64(x)] * 8 + [
                    _f64(float("nan")), _f64(float("inf")), "zz", "",
                    "%08x" % struct.unpack("<I", struct.pack("<f", x))[0], "%d" % (i % 50)]))
        if i % 23 == 7:
            fields = fields[:-1]
        line = ",".join(fields)
        if i % 17 == 4:  # tabs and spaces around the line are ignored, as on the host
            line = "\t " + line + " \t"
        out.append(line)
    return out


@pytest.mark.parametrize("cid", ["m-aarhus", "m-mixed-k2", "m-d16-k16", "m-hand"])
def test_device_sampler_is_the_host_reference_word_for_word(cid):
    from zealfw.words import CounterWords as DeviceWords

    prof = _profile(cid)
    dw = DeviceWords(KEY)
    z, fields = _device_sampler(prof, dw)
    hw = CounterWords(KEY)
    host = MP.MultiSampler(prof, hw)
    lines = _lines(prof, 300, cid)
    src = _source(prof, lines)
    for line in lines:
        assert src.read() is src
        z.perturb_raw(src)
        got = [(z.sel[i], z.val[i]) for i in range(prof.k)]
        assert got == host.sample(line), (cid, line)
    assert z.clamped == host.clamped
    assert dw.next() == hw()  # both generators at the same word
    assert src.read() is None


# ---- frames, read independently of the host decoder -------------------------------------------
def _frames(out):
    """(hellos [(bits, batch, fingerprint8)], datas [(count, payload)], statuses [code]) of
    the device's output, CRCs checked (DATA under the latest HELLO's session)."""
    hellos, datas, statuses, session = [], [], [], None
    for run in out.split(b"\x00"):
        if not run:
            continue
        dec = cobs.decode(run)
        body, crc = dec[:-4], struct.unpack("<I", dec[-4:])[0]
        t = body[0] & 0x0F
        if t == 2:
            assert zlib.crc32(body, zlib.crc32(session)) == crc
            datas.append((body[3], bytes(body[4:])))
            continue
        assert zlib.crc32(body) == crc
        if t == 1:
            session = bytes(body[5:33])
            bits, batch = struct.unpack_from("<BH", body, 37)
            hellos.append((bits, batch, bytes(body[13:21])))
        else:
            statuses.append(body[1])
    return hellos, datas, statuses


def _run_loop(tmp_path, prof, lines, heap=None, batch=16):
    prof.write(str(tmp_path / "zeal_profile.json"))
    cfg = {"start_delay_ms": 0, "period_ms": 0, "batch": batch, "vector_mode": True,
           "vector_key": KEY.hex()}
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    return _run_mp("import zealfw.main as m; m.run()", str(tmp_path), heapsize=heap,
                   stdin=("\n".join(lines) + "\n").encode())


@pytest.mark.parametrize("cid", ["m-aarhus", "m-mixed-k2"])
def test_main_loop_streams_multi_reports(mp_port, tmp_path, cid):
    prof = _profile(cid)
    lines = _lines(prof, 90, cid + "-loop")
    out = _run_loop(tmp_path, prof, lines + ["!hello", "!stop"])
    hellos, datas, statuses = _frames(out)
    assert len(hellos) >= 2
    assert all(h == (0, min(16, prof.max_batch()), bytes.fromhex(prof.fingerprint)[:8])
               for h in hellos)
    reports = [r for count, payload in datas for r in MP.unpack_multi(prof, payload, count)]
    host = MP.MultiSampler(prof, CounterWords(KEY))
    assert reports == [host.sample(line) for line in lines]
    assert len({j for r in reports for j, _ in r}) == prof.d
    assert statuses[-1] == 4  # STOPPED
    # the host's decoder reads the same reports
    from zeal import wire

    events = wire.Decoder([prof], vectors=True).feed(out)
    batches = [e for e in events if isinstance(e, wire.Batch)]
    assert [list(r) for b in batches for r in b.reports] == reports


def test_main_loop_with_a_callable_tuple_source(mp_port, tmp_path):
    """A callable returning a tuple: floats are float32 patterns, ints raw counts (valid for
    a categorical attribute), a bad type or a wrong length invalid; one report per tick."""
    prof = _profile("m-mixed-k2")
    prof.write(str(tmp_path / "zeal_profile.json"))
    kinds = [a.kind for a in prof.attributes]
    rnd = random.Random(5)
    rows = []
    for i in range(40):
        row = [rnd.randrange(a.c) if a.kind == "oue" else
               rnd.uniform(float(a.lo), float(a.hi)) for a in prof.attributes]
        if i % 7 == 3:
            row = row[:-1]
        if i % 7 == 5:
            row[0] = "x"
        rows.append(row)
    (tmp_path / "sensor.py").write_text("ROWS = %r\nI = [0]\ndef read():\n    r = ROWS[I[0]]\n"
                                        "    I[0] += 1\n    return tuple(r)\n" % (rows,))
    cfg = {"start_delay_ms": 0, "period_ms": 0, "batch": 8, "vector_mode": True,
           "vector_key": KEY.hex(), "max_reports": len(rows),
           "sensor": {"kind": "callable", "module": "sensor", "function": "read"}}
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    out = _run_mp("import zealfw.main as m; m.run()", str(tmp_path))
    _, datas, statuses = _frames(out)
    reports = [r for count, payload in datas for r in MP.unpack_multi(prof, payload, count)]
    host = MP.MultiSampler(prof, CounterWords(KEY))

    def f32(x):
        return struct.unpack("<f", struct.pack("<f", x))[0]
    want = []
    for row in rows:
        if len(row) != prof.d:
            want.append(host.sample([None] * prof.d))
            continue
        vals = [v if k == "oue" else (f32(v) if isinstance(v, float) else None)
                for v, k in zip(row, kinds)]
        want.append(host.sample(vals))
    assert reports == want and statuses[-1] == 4


def test_main_loop_refuses_a_broken_multi_profile(mp_port, tmp_path):
    prof = _profile("m-mixed-k2")
    prof.write(str(tmp_path / "zeal_profile.json"))
    i = sorted(prof.attribute_files())[0]
    os.remove(MP.attribute_path(str(tmp_path / "zeal_profile.json"), i))
    (tmp_path / "zeal_config.json").write_text(json.dumps(
        {"start_delay_ms": 0, "period_ms": 0, "vector_mode": True, "vector_key": KEY.hex()}))
    out = _run_mp("import zealfw.main as m; m.run()", str(tmp_path), stdin=b"!stop\n")
    hellos, datas, statuses = _frames(out)
    assert statuses == [2] and not datas and hellos[0][0] == 0  # BAD_PROFILE


# ---- (e) the sampler's law, statistically ------------------------------------------------------
N_STAT = 24000
STAT = """
import json
from binascii import unhexlify
from zealfw import mprofile, msample
from zealfw.words import CounterWords
fields = mprofile.load("zeal_profile.json")
class F:
    pass
f = F()
f.fields = fields
z = msample.Zeal(f, CounterWords(unhexlify(%(key)r)))
src = F()
src.kinds = %(kinds)r
src.vals = %(vals)r
src.los = %(los)r
subsets = {}
hist = {}
ones = [0, 0]
for n in range(%(n)d):
    z.perturb_raw(src)
    key = "%%d.%%d" %% (z.sel[0], z.sel[1])
    subsets[key] = subsets.get(key, 0) + 1
    for i in range(2):
        j = z.sel[i]
        y = z.val[i]
        if j == %(num)d:
            hist[y] = hist.get(y, 0) + 1
        if j == %(cat)d:
            ones[0] += 1
            ones[1] += (y >> %(x)d) & 1
print("@@" + json.dumps({"subsets": subsets, "hist": hist, "ones": ones}))
"""


def test_device_sampler_law_under_micropython(mp_port, tmp_path):
    """Under MicroPython, 24000 reports of one fixed tuple with a d = 4, k = 2 profile (key
    fixed: deterministic; these bounds are what a fresh key would fail with):
    - the 6 attribute pairs, each of probability 1/C(4, 2): chi-square at the 1e-6 upper
      quantile (5 degrees of freedom);
    - attribute 0 (a grid): the mean of its unbiased estimate g(y) over the reports that
      carry it within 5 standard errors of the reading (exact variance from the grid);
      normal approximation, two-sided 5.7e-7;
    - the categorical attribute's true-value bit: rate within 5 standard errors of 1/2
      (5.7e-7).
    False-failure rate under a fresh key: below 3e-6."""
    from scipy.stats import chi2

    from zeal.mechanism.grid.exact import ExactGrid

    specs = [Numeric("temp", -10.0, 40.0), Numeric("hum", 0.0, 100.0, mechanism="pm"),
             Categorical("state", 5), Numeric("light", 0.0, 1000.0, bits=8)]
    prof = MP.build(specs, 2.0, k=2)
    prof.write(str(tmp_path / "zeal_profile.json"))
    x0, cat_x = 23.7, 3
    vals, los, kinds = [], [], []
    for v in (x0, 61.25, cat_x, 812.5):
        if isinstance(v, int):
            vals.append(v)
            los.append(0)
            kinds.append(0)
        else:
            b = struct.unpack("<Q", struct.pack("<d", v))[0]
            vals.append(b >> 32)
            los.append(b & 0xFFFFFFFF)
            kinds.append(2)
    key = hashlib.sha256(b"multi-stat").hexdigest()
    (res,) = _marked(_run_mp(STAT % {"key": key, "n": N_STAT, "kinds": kinds, "vals": vals,
                                     "los": los, "num": 0, "cat": 2, "x": cat_x},
                             str(tmp_path)))
    subsets = res["subsets"]
    assert sum(subsets.values()) == N_STAT
    assert set(subsets) <= {"%d.%d" % (a, b) for a in range(4) for b in range(a + 1, 4)}
    e = N_STAT / 6
    stat = sum((subsets.get("%d.%d" % (a, b), 0) - e) ** 2 / e
               for a in range(4) for b in range(a + 1, 4))
    assert stat < chi2.isf(1e-6, 5), subsets
    grid = ExactGrid(prof.attributes[0])
    hist = {int(y): c for y, c in res["hist"].items()}
    n0 = sum(hist.values())
    assert abs(n0 - N_STAT / 2) < 5 * math.sqrt(N_STAT / 4)
    mean = sum(c * float(grid.estimate(y)) for y, c in hist.items()) / n0
    sigma2 = float(grid.variance(Fraction(x0)))
    assert abs(mean - x0) <= 5 * math.sqrt(sigma2 / n0), (mean, x0, sigma2)
    carried, ones = res["ones"]
    assert abs(ones / carried - 0.5) <= 5 * math.sqrt(0.25 / carried)


# ---- (f) the heap ------------------------------------------------------------------------------
# The whole loop from .mpy (tools/bench_heap.py's harness) with its d = 4 multi profile
# (three grids, one categorical attribute, k = 2) on the unix port: 320 reports complete in
# 47 and 48 KiB, not in 49 (fitting is not monotone in the heap size: fragmentation), 45
# with bench_heap's 400; the peak is the start, with the header's loader, the grid loader
# and the file grammar in memory at once (the grid's loop: 32 KiB; tables: 36).
# Per report the loop allocates 135 B measured over these 256 reports (the float64 replay's
# parse): the generator's SHA-256 is native code that allocates nothing
# (zealfw/sha256_viper.py); with hashlib's hash object and digest (224 B per four words,
# about nine words a report) it was 643 B. On the emulated 32-bit board a float32 replay
# costs 100 B (532 with hashlib): tests/test_board_heap.py.
# Issue 20 (the firmware without import circles) moved the PyPI port's edge to 49 (49-53 all
# fit; the float32 build from 47), while the emulated board's free heap stays 32 KiB.
MULTI_HEAP_K = 49
LOOP_PER_REPORT = 192


def test_multi_loop_from_mpy_fits_and_allocates_little(mp_port, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_heap as B

    mp = _micropython()
    compiled = str(tmp_path / "mpy")
    B.compile_firmware(compiled, FIRMWARE)
    work = str(tmp_path / "work")
    os.makedirs(work)
    B.lay_out_tuple(work, B.tuple_profile("multi-d4"), 64, 64 + 256)
    res, err = B.mp_run(mp, work, compiled, "alloc", 8192)
    assert res is not None, err
    r1, a1, r2, a2 = res[:4]
    assert (r1, r2) == (64, 64 + 256)
    assert (a2 - a1) / (r2 - r1) <= LOOP_PER_REPORT
    res, err = B.mp_run(mp, work, compiled, "fit", MULTI_HEAP_K)
    assert res is not None and res[0] == 64 + 256, err
