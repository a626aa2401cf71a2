"""Shuffle mode on the device (issue 11 item 3): zealfw.sprofile (loader and checks),
zealfw.srand (the randomiser), the tuple source and the dispatch in zealfw.profile/main.

(a) shared_spec/vectors/shuffle.json through the device under CPython and on the MicroPython
    unix port: the same accept/reject reasons, messages and words consumed as the host;
(b) agreement of the loaders on a corpus of mutated shuffle files: host
    (shuffle_profile.device_checks, the checks a device makes), device loader under CPython
    and under MicroPython give the same verdicts and reasons;
(c) the device randomiser word for word against the host reference on many tuples;
(d) the whole firmware loop (zealfw.main.run) under MicroPython with a shuffle profile and a
    replay of several columns: HELLO announces the message bits, the DATA frames carry the
    host reference's messages (fixed-width reports, read by an independent parser and by
    decode_message);
(e) the heap: the whole loop from .mpy at a fixed heap.
"""
import json
import os
import random
import struct
import sys

import pytest

from zeal.board import conformance as C
from zeal.errors import ProfileError
from zeal.mechanism import shuffle as S
from zeal.mechanism import shuffle_profile as SP
from zeal.mechanism.words import CounterWords

from conftest import ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)
from zealfw import pfile as FPF  # noqa: E402
from zealfw import sprofile as FS  # noqa: E402

from mp_unix import f64 as _f64  # noqa: E402
from mp_unix import rehash as _rehash  # noqa: E402
from mp_unix import dump as _dump  # noqa: E402
from mp_unix import marked as _marked  # noqa: E402
from mp_unix import micropython as _micropython  # noqa: E402,F401
from mp_unix import run_mp as _run_mp  # noqa: E402

VECTORS = {c["id"]: c for c in C.load_vectors("shuffle")["cases"]}
KEY = bytes(range(32))


def test_max_shuffle_file_is_the_hosts():
    assert FS._MAX_SHUFFLE_FILE == SP.MAX_SHUFFLE_FILE


# ---- (a) the vectors ---------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["firmware-cpython", "micropython"])
def test_shuffle_vectors_on_the_device(target):
    rows = C.run(target, ["shuffle"])
    device = [c for c in VECTORS.values() if not c.get("host_only")]
    ran = [r for r in rows if r[1] != "*host-only*"]
    assert len(ran) == len(device) >= 60
    bad = [r for r in ran if r[2] is not True]
    assert not bad, bad[:5]
    # the host-only rejections (privacy: logarithms) are the only ones skipped
    assert {c["reason"] for c in VECTORS.values() if c.get("host_only")} == {"privacy"}


def test_shuffle_checker_catches_wrong_answers():
    from zeal.board import conformance_shuffle as CS

    case = VECTORS["s-hand-keyed"]
    ok, good = CS.handle({"case": CS.request(case)})
    assert ok and CS.check(case, {"ok": True, "result": good})[0]
    wrong = json.loads(json.dumps(good))
    wrong["outputs"][0]["message"] ^= 1
    assert not CS.check(case, {"ok": True, "result": wrong})[0]
    wrong = json.loads(json.dumps(good))
    wrong["outputs"][-1]["words_used"] += 1
    assert not CS.check(case, {"ok": True, "result": wrong})[0]
    bad = VECTORS["s-ranges-swapped"]
    assert CS.check(bad, {"ok": False, "error": "value"})[0]
    assert not CS.check(bad, {"ok": False, "error": "type"})[0]
    assert not CS.check(bad, {"ok": True, "result": {}})[0]


# ---- (b) loader agreement ----------------------------------------------------------------------
def shuffle_corpus():
    bases = {name: json.loads(VECTORS[name]["file"])
             for name in ("s-aarhus", "s-d1-k1", "s-d10-t2", "s-hand")}
    cases = {}

    def add(cid, data):
        assert cid not in cases, cid
        cases[cid] = data if isinstance(data, bytes) else _dump(data)

    for cid, case in VECTORS.items():
        if case["kind"] == "profile":
            add("vector:" + cid, case["file"].encode("utf-8", "surrogateescape"))
    for name, base in bases.items():
        add(name + ":compact", _dump(base, indent=None, separators=(",", ":")))
        add(name + ":crlf", _dump(base).replace(b"\n", b"\r\n"))
        for key in base:
            rest = {k: v for k, v in base.items() if k != key}
            if key != "format":
                add("%s:drop-%s" % (name, key), _rehash(rest))
            value = base[key]
            wrong = [None, True, [], 1.5]
            wrong += ([str(value), -value, 0, value + 1, 1 << 63, (1 << 63) - 1]
                      if isinstance(value, int)
                      else [0, value.upper(), value + " ", value[:-1], value + "0"])
            for i, w in enumerate(wrong):
                if key == "format" and isinstance(w, (str, type(None))):
                    continue  # not a shuffle file by the sniff: another loader's business
                add("%s:type-%s-%d" % (name, key, i), _rehash(dict(base, **{key: w})))
        add(name + ":extra", _rehash(dict(base, extra="x")))
        d = base["d"]
        parts = base["ranges"].split(".")
        pats = {"nan": "0x7ff8000000000000", "inf": "0x7ff0000000000000",
                "ninf": "0xfff0000000000000", "zero": "0x" + "0" * 16,
                "neg": "0xbff0000000000000", "big": "0x7fefffffffffffff"}
        for i in range(min(2 * d, 4)):
            for label, v in pats.items():
                p = list(parts)
                p[i] = v
                add("%s:range%d-%s" % (name, i, label), _rehash(dict(base, ranges=".".join(p))))
        for i, v in enumerate((parts[:-1], parts + parts[:1], [parts[0][:-1]] + parts[1:],
                               [parts[0][2:] + "00"] + parts[1:], [""] + parts[1:],
                               [parts[1], parts[0]] + parts[2:])):
            add("%s:ranges-%d" % (name, i), _rehash(dict(base, ranges=".".join(v))))
        add(name + ":ranges-dots", _rehash(dict(base, ranges=base["ranges"] + ".")))
        for key, vals in (("d", (0, 1, 2, d + 1, 64, 65)), ("levels", (0, 1, 2, 15, 16)),
                          ("t", (0, 1, 2, d, d + 1)), ("n", (1, 2, 3, 1 << 62)),
                          ("gamma_num", (0, 1, base["gamma_den"] - 1, base["gamma_den"])),
                          ("gamma_den", (1, base["gamma_num"], base["gamma_num"] + 1,
                                         (1 << 63) - 1, 1 << 63))):
            for i, v in enumerate(vals):
                add("%s:%s-%d" % (name, key, i), _rehash(dict(base, **{key: v})))
        for key in ("epsilon", "delta"):
            for label, v in dict(pats, one="0x3ff0000000000000", six="0x4018000000000000",
                                 half="0x3fe0000000000000").items():
                add("%s:%s-%s" % (name, key, label), _rehash(dict(base, **{key: v})))
        text = _dump(base)
        add(name + ":pad-max", text + b" " * (SP.MAX_SHUFFLE_FILE - len(text)))
        add(name + ":pad-over", text + b" " * (SP.MAX_SHUFFLE_FILE + 1 - len(text)))
        add(name + ":escape", text.replace(b'"levels"', b'"\\u006cevels"'))
        add(name + ":dup", text.replace(b'"t"', b'"t": 1,\n "t"', 1))
        add(name + ":non-ascii", text.replace(b'"ranges"', b'"r\xc3\xa4nges"'))
    return cases


def _host_verdict(data):
    """The verdict of the host's device checks (shuffle_profile.device_checks: every check
    but the host-only privacy one), after the host's size check and grammar."""
    from zeal.mechanism import pfile as HP

    try:
        if len(data) > SP.MAX_SHUFFLE_FILE:
            raise HP._fail("size", "too long")
        doc = HP.parse(data)
        SP.device_checks(doc)
    except ProfileError as exc:
        return ["error", getattr(exc, "reason", "none")]
    return ["ok", doc["fingerprint"]]


def _device_verdict(data):
    try:
        fields = FS.loads(data)
    except FPF.ProfileError as exc:
        return ["error", exc.reason]
    return ["ok", fields[7]]


AGREE = """
import json
from binascii import unhexlify
from zealfw import sprofile
from zealfw.pfile import ProfileError
with open("corpus.json") as f:
    corpus = json.load(f)
out = {}
for cid in corpus:
    try:
        out[cid] = ["ok", sprofile.loads(unhexlify(corpus[cid]))[7]]
    except ProfileError as e:
        out[cid] = ["error", e.reason]
print("@@" + json.dumps(out))
"""


def test_loaders_agree_on_mutated_shuffle_files(tmp_path):
    corpus = shuffle_corpus()
    assert len(corpus) > 300
    host = {cid: _host_verdict(data) for cid, data in corpus.items()}
    dev = {cid: _device_verdict(data) for cid, data in corpus.items()}
    (tmp_path / "corpus.json").write_text(json.dumps({c: d.hex() for c, d in corpus.items()}))
    (mp,) = _marked(_run_mp(AGREE, str(tmp_path), heapsize="64m"))
    diffs = [(cid, host[cid], dev[cid], mp[cid]) for cid in corpus
             if not host[cid] == dev[cid] == mp[cid]]
    assert not diffs, diffs[:10]
    reasons = {v[1] for v in host.values() if v[0] == "error"}
    assert {"size", "json", "type", "format", "missing", "unknown", "value", "fingerprint",
            "derived"} <= reasons, reasons
    assert sum(v[0] == "ok" for v in host.values()) >= 20
    # and what the full host loader accepts, the device accepts with the same fingerprint
    for cid, data in corpus.items():
        try:
            prof = SP.loads(data)
        except ProfileError:
            continue
        assert dev[cid] == ["ok", prof.fingerprint], cid


# ---- (c) word for word -------------------------------------------------------------------------
class _Tuple:
    pass


def _device_tuple(values, d):
    src = _Tuple()
    src.kinds, src.vals, src.los = [-1] * d, [0] * d, [0] * d
    if len(values) == d:
        for c, v in enumerate(values):
            bits = struct.unpack("<Q", struct.pack("<d", v))[0]
            src.kinds[c], src.vals[c], src.los[c] = 2, bits >> 32, bits & 0xFFFFFFFF
    return src


@pytest.mark.parametrize("name", ["s-aarhus", "s-d10-t2", "s-d64-t5", "s-eps2"])
def test_device_randomiser_is_the_host_reference_word_for_word(name):
    from zealfw import srand
    from zealfw.words import CounterWords as DeviceWords

    prof = SP.loads(VECTORS[name]["file"].encode())
    fields = FS.loads(VECTORS[name]["file"].encode())
    f = type("F", (), {})()
    f.fields = fields
    dw = DeviceWords(KEY)
    z = srand.Zeal(f, dw)
    hw = CounterWords(KEY)
    host = SP.ShuffleSampler(prof, hw)
    rnd = random.Random(name)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 5e-324]
    for i in range(400):
        vals = []
        for lo, hi in prof.ranges:
            span = hi - lo
            vals.append(rnd.choice(specials) if i % 11 == 0 else
                        rnd.uniform(lo - span / 5, hi + span / 5))
        if i % 37 == 5:
            vals = vals[:-1]  # a short tuple: every coordinate invalid
        m_dev = z.perturb_raw(_device_tuple(vals, prof.d))
        assert m_dev == host.sample(vals), (name, i)
        S.decode_message(prof.params, m_dev)  # a valid message
    # the same words consumed, in total (both generators at the same position)
    assert dw.next() == hw()


# ---- (d) the whole loop ------------------------------------------------------------------------
def _rows(prof, n, seed):
    rnd = random.Random(seed)
    rows, lines = [], []
    for i in range(n):
        vals = [rnd.uniform(lo - (hi - lo) / 5, hi + (hi - lo) / 5) for lo, hi in prof.ranges]
        if i % 9 == 3:  # a field short: every coordinate invalid
            lines.append(",".join(_f64(v) for v in vals[:-1]))
            rows.append([])
        elif i % 9 == 5:  # a bad field: that coordinate invalid
            lines.append("zz," + ",".join(_f64(v) for v in vals[1:]))
            rows.append([float("nan")] + vals[1:])
        elif i % 9 == 7:  # NaN and spaces around the fields
            vals[-1] = float("nan")
            lines.append(" " + " , ".join(_f64(v) for v in vals) + " ")
            rows.append(vals)
        else:
            lines.append(",".join(_f64(v) for v in vals))
            rows.append(vals)
    return rows, lines


def _run_loop(tmp_path, text, lines, heap=None, batch=16):
    (tmp_path / "zeal_profile.json").write_bytes(text)
    cfg = {"start_delay_ms": 0, "period_ms": 0, "batch": batch, "vector_mode": True,
           "vector_key": KEY.hex()}
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    return _run_mp("import zealfw.main as m; m.run()", str(tmp_path), heapsize=heap,
                   stdin=("\n".join(lines) + "\n").encode())


@pytest.mark.parametrize("name", ["s-aarhus", "s-d10-t2"])
def test_main_loop_streams_shuffle_messages(tmp_path, name):
    from test_firmware_loop import lows_of, parse_output, split

    prof = SP.loads(VECTORS[name]["file"].encode())
    rows, lines = _rows(prof, 70, name)
    out = _run_loop(tmp_path, prof.to_json().encode(), lines + ["!hello", "!stop"])
    hellos, data, statuses = split(parse_output(out))
    assert len(hellos) >= 2 and all(h.bits == prof.bits for h in hellos)
    assert hellos[0].fingerprint == bytes.fromhex(prof.fingerprint)[:8]
    messages = lows_of(data)
    host = SP.ShuffleSampler(prof, CounterWords(KEY))
    assert messages == [host.sample(r) for r in rows]
    pairs = [S.decode_message(prof.params, m) for m in messages]
    assert len({c for p in pairs for c, _ in p}) == prof.d
    assert statuses[-1].code == "STOPPED" and statuses[-1].ticks == len(rows)
    # the host's wire codec (what `zeal shuffle` reads a line with) opens the same frames
    # under the HELLO's session and splits them into the same fixed-width reports
    from zeal.wire import codec
    from zeal.wire.deframer import Deframer

    hello, got = None, []
    for frame in Deframer().feed(out):
        if isinstance(frame, codec.Hello):
            hello = frame
        elif not isinstance(frame, codec.Status):
            data = frame.open(hello.session)
            got += [int(v) for v in codec.unpack_reports(data.payload, data.count, hello.bits)]
    assert hello.bits == prof.bits and got == messages


def test_main_loop_refuses_a_broken_shuffle_profile(tmp_path):
    from test_firmware_loop import parse_output, split

    doc = json.loads(VECTORS["s-aarhus"]["file"])
    bad = _dump(_rehash(dict(doc, gamma_num=doc["gamma_den"])))
    out = _run_loop(tmp_path, bad, [",".join(["0" * 16] * 3), "!stop"])
    hellos, data, statuses = split(parse_output(out))
    assert [s.code for s in statuses] == ["BAD_PROFILE"] and not data
    assert hellos[0].bits == 0 and "gamma" in statuses[0].message


def test_shuffle_board_needs_a_tuple_source(tmp_path):
    from test_firmware_loop import parse_output, split

    (tmp_path / "zeal_profile.json").write_text(VECTORS["s-aarhus"]["file"])
    cfg = {"start_delay_ms": 0, "period_ms": 0, "vector_mode": True, "vector_key": KEY.hex(),
           "sensor": {"kind": "adc", "pin": 26}}
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    out = _run_mp("import zealfw.main as m; m.run()", str(tmp_path), stdin=b"")
    _, data, statuses = split(parse_output(out))
    assert [s.code for s in statuses] == ["CONFIG"] and not data
    assert "callable or replay" in statuses[0].message


# ---- (e) the heap ------------------------------------------------------------------------------
# The whole loop from .mpy (tools/bench_heap.py's harness) with a shuffle profile of three
# coordinates on the unix port: 320 reports complete in 42 KiB, not in 43, and from 44 on
# (fitting is not monotone in the heap size: fragmentation).
SHUFFLE_HEAP_K = 45
LOOP_PER_REPORT = 256


def test_shuffle_loop_from_mpy_fits_and_allocates_little(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_heap as B

    mp = _micropython()
    compiled = str(tmp_path / "mpy")
    B.compile_firmware(compiled, FIRMWARE)
    work = str(tmp_path / "work")
    os.makedirs(work)
    B.lay_out_tuple(work, B.tuple_profile("s-aarhus"), 64, 64 + 256)
    res, err = B.mp_run(mp, work, compiled, "alloc", 8192)
    assert res is not None, err
    r1, a1, r2, a2 = res[:4]
    assert (r1, r2) == (64, 64 + 256)
    assert (a2 - a1) / (r2 - r1) <= LOOP_PER_REPORT
    res, err = B.mp_run(mp, work, compiled, "fit", SHUFFLE_HEAP_K)
    assert res is not None and res[0] == 64 + 256, err
