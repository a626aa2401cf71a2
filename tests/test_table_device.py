"""Table profiles on the device (issue 10 item 2): zealfw.tprofile (loader and checks),
zealfw.tsample (sampler), the dispatch in zealfw.profile / zealfw.main.

(a) shared_spec/vectors/tables.json through the device on the MicroPython unix port from
    .mpy in an 80 KiB heap, as a board runs them (the conformance runner keeps every module
    and a whole request line in memory: a 4-bit table's request is a 2.8 KB JSON line, which
    64 KiB does not hold) (the "tables" conformance suite; the same
    suite runs on cpython, firmware-cpython and micropython in tests/test_conformance.py);
(b) agreement of the loaders on a corpus of mutated table files: the host
    (zeal.mechanism.grid.profile.loads, dispatching to table_profile), the device loader under
    CPython and under MicroPython accept and reject the same files with the same reason;
(c) a seeded statistical test of the device sampler under MicroPython: 20000 reports at a
    fixed reading on the designer's 4-bit table against the exact law (Table.distribution,
    Table.variance);
(d) the whole firmware loop (zealfw.main.run) under MicroPython with a table profile: the
    frames, read by tests/test_firmware_loop's independent parser and by the host's
    zeal.wire.Decoder, carry the host sampler's cells;
(e) the heap: the whole loop from .mpy with the 4-bit designer table at a fixed heap, and
    the bytes allocated per report.
"""
import hashlib
import json
import math
import os
import struct
import sys
from fractions import Fraction

import pytest

from zeal.board import conformance as C
from zeal.errors import ProfileError
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal.mechanism.table import profile as TP
from zeal.mechanism.core.draws import reading_from_float64_bits
from zeal.mechanism.table.sampler import TableSampler
from zeal.mechanism.core.words import CounterWords

from conftest import ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
if FIRMWARE not in sys.path:
    sys.path.insert(0, FIRMWARE)
from zealfw import profile as FP  # noqa: E402
from zealfw import tprofile as FT  # noqa: E402

from mp_unix import f64 as _f64  # noqa: E402
from mp_unix import rehash as _rehash  # noqa: E402
from mp_unix import dump as _dump  # noqa: E402
from mp_unix import marked as _marked  # noqa: E402
from mp_unix import micropython as _micropython  # noqa: E402,F401
from mp_unix import run_mp as _run_mp  # noqa: E402

VECTORS = {c["id"]: c for c in C.load_vectors("tables")["cases"]}
KEY = bytes(range(32))


def test_max_table_file_is_the_hosts():
    # the device's bound is a constant; the host recomputes it from the limits
    assert FT._MAX_TABLE_FILE == TP.MAX_TABLE_FILE == TP._max_table_file()
    # the grid loader refuses a longer text before copying it (either kind would: size)
    assert FP._MAX_ANY == FT._MAX_TABLE_FILE


# ---- (a) the vectors, from .mpy in a small heap ------------------------------------------------
def test_table_vectors_on_micropython_from_mpy_in_80k(mp_port):
    rows = C.run("micropython", ["tables"], heapsize="80k")
    assert len(rows) == len(VECTORS)
    bad = [r for r in rows if r[2] is not True]
    assert not bad, bad[:5]


def test_conformance_plans_every_table_vector_on_every_target():
    for target in ("cpython", "micropython", "firmware-cpython"):
        rows, work = C.plan(target, ["tables"])
        assert rows == [] and [c["id"] for _, c, _ in work] == list(VECTORS), target


def test_table_checker_catches_wrong_answers():
    # the harness must be able to fail: wrong cell, wrong word count, wrong reason
    from zeal.board import conformance_tables as CT

    case = VECTORS["t-hand-f64"]
    ok, good = CT.handle({"case": CT.request(case)})
    assert ok and CT.check(case, {"ok": True, "result": good})[0]
    wrong = json.loads(json.dumps(good))
    wrong["outputs"][0]["j"] ^= 1
    assert not CT.check(case, {"ok": True, "result": wrong})[0]
    wrong = json.loads(json.dumps(good))
    wrong["outputs"][-1]["words_used"] += 1
    assert not CT.check(case, {"ok": True, "result": wrong})[0]
    bad = VECTORS["t-privacy-ratio"]
    assert CT.check(bad, {"ok": False, "error": "privacy"})[0]
    assert not CT.check(bad, {"ok": False, "error": "value"})[0]
    assert not CT.check(bad, {"ok": True, "result": {}})[0]


# ---- (b) loader agreement on mutated files -----------------------------------------------------
def _weights(doc):
    t = doc["weights"]
    return [int(t[i:i + 8], 16) for i in range(0, len(t), 8)]


def _with_weights(doc, ws):
    return dict(doc, weights="".join("%08x" % w for w in ws))


def table_corpus():
    bases = {name: json.loads(VECTORS[name]["file"])
             for name in ("t-hand", "t-pm-2bit", "t-optimal-3bit-adc", "t-hm-3bit", "t2-hand",
                          "t-optimal-4bit")}
    cases = {}

    def add(cid, data):
        assert cid not in cases, cid
        cases[cid] = data if isinstance(data, bytes) else _dump(data)

    for cid, case in VECTORS.items():
        if case["kind"] == "profile":
            add("vector:" + cid, case["file"].encode("utf-8", "surrogateescape"))
    for name, base in bases.items():
        n, rr = base["cells"], base["anchors"]
        add(name + ":as-is", base)
        add(name + ":compact", _dump(base, indent=None, separators=(",", ":")))
        add(name + ":crlf", _dump(base).replace(b"\n", b"\r\n"))
        for key in base:
            rest = {k: v for k, v in base.items() if k != key}
            add("%s:drop-%s" % (name, key), rest)
            if key != "fingerprint":
                add("%s:drop-%s-rehashed" % (name, key), _rehash(rest))
            add("%s:upper-%s" % (name, key),
                _rehash({(k.upper() if k == key else k): v for k, v in base.items()}))
            value = base[key]
            wrong = [None, True, [], {"v": 1}, 1.5, [value]]
            wrong += ([str(value), value + 0.0, -value] if isinstance(value, int)
                      else [0, 7, value.upper(), value + " ", value[:-1], value + "0"])
            for i, w in enumerate(wrong):
                add("%s:type-%s-%d" % (name, key, i), _rehash(dict(base, **{key: w})))
        add(name + ":extra", _rehash(dict(base, extra="x")))
        add(name + ":one-cal", _rehash(dict(base, cal_gain="1/100")))
        add(name + ":cal", _rehash(dict(base, cal_gain="2/4", cal_offset="-40")))
        add(name + ":cal-bad", _rehash(dict(base, cal_gain="1/0", cal_offset="0")))
        add(name + ":cal-long", _rehash(dict(base, cal_gain="1" * 65, cal_offset="0")))
        for i, fmt in enumerate(("zeal-table/2", "zeal-profile/1", "Zeal-table/1", "",
                                 "zeal-table/1", "zeal-table/3")):
            add("%s:format-%d" % (name, i), _rehash(dict(base, format=fmt)))
        # ranges and derived
        for key, vals in (("anchors", (0, -1, rr + 1, rr - 1, 64, 65, 320, 10 ** 30)),
                          ("cells", (0, 1, n - 1, n + 1, 64, 65, 10 ** 30)),
                          ("bits", (0, base["bits"] - 1, base["bits"] + 1, 6, 10 ** 20)),
                          ("value_den", (0, -1, 1, base["value_den"] * 2, (1 << 63) - 1,
                                         1 << 63, 10 ** 40))):
            for i, v in enumerate(vals):
                add("%s:%s-%d" % (name, key, i), _rehash(dict(base, **{key: v})))
        # lo / hi / epsilon patterns
        pat = {"nan": "0x7ff8000000000000", "inf": "0x7ff0000000000000", "zero": "0x" + "0" * 16,
               "eps21": "0x4035000000000000", "eps20": "0x4034000000000000",
               "tiny": "0x3e80000000000000", "neg": "0xbff0000000000000"}
        for key in ("lo", "hi", "epsilon"):
            for label, v in pat.items():
                add("%s:%s-%s" % (name, key, label), _rehash(dict(base, **{key: v})))
        add(name + ":swap", _rehash(dict(base, lo=base["hi"], hi=base["lo"])))
        if "rows" in base:
            _compact_mutations(name, base, add)
        else:
            _dense_mutations(name, base, add)
        # values: signs, zeros, counts, size, bias
        vals = base["values"]
        parts = []
        for ch in vals:
            if ch in "+-":
                parts.append(ch)
            else:
                parts[-1] += ch
        for i, v in enumerate(("".join(p.lstrip("+") for p in parts), vals + "+0", vals + "-0",
                               "".join(parts[:-1]), "+0" + vals[2:] if vals[:2] == "+0" else
                               "+01" + vals, "-0" + vals, vals.replace("+", "++", 1),
                               vals + "+9223372036854775808", vals + "+9223372036854775807",
                               "".join(parts[:-1]) + "+9223372036854775808",
                               parts[0][0] + "0" + parts[0][1:] + "".join(parts[1:]),
                               "".join(parts[:-1]) + parts[-1][0] + str(int(parts[-1][1:]) + 1))):
            add("%s:values-%d" % (name, i), _rehash(dict(base, values=v)))
        # the sniff: a table whose format string lies beyond the grid's 503 bytes is a grid
        # file (too long); padding to the table bound and one past it
        text = _dump(base)
        add(name + ":late-sniff", b" " * 503 + text)
        add(name + ":pad-max", text + b" " * (TP.MAX_TABLE_FILE - len(text)))
        add(name + ":pad-over", text + b" " * (TP.MAX_TABLE_FILE + 1 - len(text)))
        add(name + ":escape", text.replace(b'"cells"', b'"\\u0063ells"'))
        add(name + ":dup", text.replace(b'"bits"', b'"bits": 1,\n "bits"', 1))
        add(name + ":non-ascii", text.replace(b"zeal-table/1", b"zeal-table/\xc2\xb9"))
    return cases


def _dense_mutations(name, base, add):
    """A dense table's weights: length, rows, zeros, ratios, bias."""
    n, rr = base["cells"], base["anchors"]
    # weights: length, rows, zeros, ratios, bias
    ws = _weights(base)
    t = base["weights"]
    for i, v in enumerate((t[:-1], t + "0", t[:-8], t + "00000001", t.upper(),
                           "g" + t[1:], t[:8] + "-" + t[9:])):
        add("%s:wtext-%d" % (name, i), _rehash(dict(base, weights=v)))
    row0 = [0] * n + ws[n:]
    add(name + ":row-zero", _rehash(_with_weights(base, row0)))
    big = [0xFFFFFFFF] * n + ws[n:]
    add(name + ":row-big", _rehash(_with_weights(base, big)))
    for j in range(min(n, 4)):
        z = list(ws)
        z[j] = 0
        add("%s:cell-zero-%d" % (name, j), _rehash(_with_weights(base, z)))
        up = list(ws)
        up[j] = up[j] * 3 + 1
        add("%s:cell-up-%d" % (name, j), _rehash(_with_weights(base, up)))
        col = list(ws)
        for r in range(rr + 1):
            col[r * n + j] = 0
        add("%s:column-zero-%d" % (name, j), _rehash(_with_weights(base, col)))
    scaled = [2 * w for w in ws]
    add(name + ":scaled", _rehash(_with_weights(base, scaled)))


def _compact_mutations(name, base, add):
    """A compact table's strings: lengths, characters, each row record's run, count and
    cells, the exceptions' weights, the levels (zeros, ratios, unequal totals, bias)."""
    lv, rows, n = base["levels"], base["rows"], base["cells"]
    for key, t in (("levels", lv), ("rows", rows)):
        for i, v in enumerate((t[:-1], t + "0", t[:-2], t + "00", t[:-10], t.upper(),
                               "g" + t[1:], t[:8] + "-" + t[9:])):
            add("%s:%s-text-%d" % (name, key, i), _rehash(dict(base, **{key: v})))
    recs, o = [], 0
    raw = bytes.fromhex(rows)
    while o < len(raw):
        k = raw[o + 2]
        recs.append(bytearray(raw[o:o + 3 + 5 * k]))
        o += 3 + 5 * k
    levels = bytearray.fromhex(lv)

    def with_recs(rs):
        return _rehash(dict(base, rows=b"".join(bytes(r) for r in rs).hex()))

    for r in sorted({0, 1, len(recs) // 2, len(recs) - 1}):
        rec = recs[r]
        for i, (pos, v) in enumerate(((0, rec[1] + 1), (1, n + 1), (1, 0), (0, 0), (1, n),
                                      (2, 5), (2, rec[2] + 1), (2, max(0, rec[2] - 1)))):
            bad = [bytearray(x) for x in recs]
            bad[r][pos] = v % 256
            add("%s:rec-%d-%d" % (name, r, i), with_recs(bad))
        if rec[2]:
            for i, f in enumerate((lambda w: w + 1, lambda w: w - 1, lambda w: 0,
                                   lambda w: 3 * w + 1, lambda w: 0xFFFFFFFF)):
                bad = [bytearray(x) for x in recs]
                w = int.from_bytes(bad[r][4:8], "big")
                bad[r][4:8] = (f(w) % (1 << 32)).to_bytes(4, "big")
                add("%s:exc-%d-%d" % (name, r, i), with_recs(bad))
            bad = [bytearray(x) for x in recs]
            bad[r][3] = n - 1 if bad[r][3] != n - 1 else 0
            add("%s:exc-cell-%d" % (name, r), with_recs(bad))
    add(name + ":rec-drop", with_recs(recs[:-1]))
    add(name + ":rec-dup", with_recs(recs + recs[-1:]))
    add(name + ":rec-swap", with_recs([recs[1], recs[0]] + recs[2:]))
    for j in sorted({0, 1, n // 2, n - 1}):
        for i, f in enumerate((lambda w: 0, lambda w: w + 1, lambda w: 3 * w + 1,
                               lambda w: 2 * w)):
            for half in (0, 4):
                bad = bytearray(levels)
                w = int.from_bytes(bad[8 * j + half:8 * j + half + 4], "big")
                bad[8 * j + half:8 * j + half + 4] = (f(w) % (1 << 32)).to_bytes(4, "big")
                add("%s:level-%d-%d-%d" % (name, j, half, i),
                    _rehash(dict(base, levels=bad.hex())))


def _host_verdict(data):
    try:
        prof = kinds.loads(data)
    except ProfileError as exc:
        return ["error", getattr(exc, "reason", "none")]
    return ["ok", prof.fingerprint]


def _device_verdict(data):
    try:
        prof = FP.loads(data)
    except FP.ProfileError as exc:
        return ["error", exc.reason]
    return ["ok", prof.fingerprint]


AGREE = """
import json
from binascii import unhexlify
from zealfw import profile
with open("corpus.json") as f:
    corpus = json.load(f)
out = {}
for cid in corpus:
    try:
        p = profile.loads(unhexlify(corpus[cid]))
        out[cid] = ["ok", p.fingerprint]
    except profile.ProfileError as e:
        out[cid] = ["error", e.reason]
print("@@" + json.dumps(out))
"""


def test_loaders_agree_on_mutated_table_files(mp_port, tmp_path):
    corpus = table_corpus()
    assert len(corpus) > 400
    host = {cid: _host_verdict(data) for cid, data in corpus.items()}
    dev = {cid: _device_verdict(data) for cid, data in corpus.items()}
    (tmp_path / "corpus.json").write_text(json.dumps({c: d.hex() for c, d in corpus.items()}))
    (mp,) = _marked(_run_mp(AGREE, str(tmp_path), heapsize="64m"))
    diffs = [(cid, host[cid], dev[cid], mp[cid]) for cid in corpus
             if not host[cid] == dev[cid] == mp[cid]]
    assert not diffs, diffs[:10]
    # the corpus reaches every reason of the table check list, and valid tables
    reasons = {v[1] for v in host.values() if v[0] == "error"}
    assert {"size", "json", "type", "format", "missing", "unknown", "value", "fingerprint",
            "derived", "privacy", "unbiased"} <= reasons, reasons
    assert sum(v[0] == "ok" for v in host.values()) >= 10


def test_table_file_from_the_device_filesystem(mp_port, tmp_path):
    # load() with its bounded read: a valid table, one past the bound, a missing file, and
    # a table whose sniff lies past the grid's bound (read as a grid file: "size")
    base = VECTORS["t-optimal-4bit"]["file"].encode()
    (tmp_path / "good.json").write_bytes(base)
    (tmp_path / "over.json").write_bytes(base + b" " * (TP.MAX_TABLE_FILE + 1 - len(base)))
    (tmp_path / "max.json").write_bytes(base + b" " * (TP.MAX_TABLE_FILE - len(base)))
    (tmp_path / "late.json").write_bytes(b" " * 503 + base)
    script = """
import json
from zealfw import profile
out = {}
for name in ("good.json", "over.json", "max.json", "late.json", "absent.json"):
    try:
        p = profile.load(name)
        out[name] = ["ok", p.fingerprint, p.anchors, p.n_cells, p.bits, p.sums]
    except profile.ProfileError as e:
        out[name] = ["error", e.reason]
print("@@" + json.dumps(out))
"""
    (res,) = _marked(_run_mp(script, str(tmp_path)))
    prof = TP.loads(base)
    # a compact table keeps its one row total
    ok = ["ok", prof.fingerprint, prof.anchors, prof.n_cells, prof.bits,
          prof.row_totals()[:1]]
    assert set(prof.row_totals()) == set(ok[-1])
    assert res["good.json"] == ok and res["max.json"] == ok
    assert res["over.json"] == ["error", "size"] and res["late.json"] == ["error", "size"]
    assert res["absent.json"] == ["error", "missing_file"]
    for name in ("over.json", "late.json"):
        with pytest.raises(ProfileError) as exc:
            kinds.load(str(tmp_path / name))
        assert exc.value.reason == "size"


# ---- (c) the device sampler's law, statistically -----------------------------------------------
N_STAT = 20000
STAT = """
import json
from binascii import unhexlify
from zealfw import tprofile, tsample
from zealfw.words import CounterWords
kind, err = tprofile.numbers("zeal_profile.json")
class F:
    pass
f = F()
for i in range(len(kind[1])):
    setattr(f, kind[1][i], kind[2][i])
words = CounterWords(unhexlify(%(key)r))
z = tsample.Zeal(f, words)
counts = [0] * f.table[1]
for i in range(%(n)d):
    counts[z.perturb_float64(%(bits)d)] += 1
print("@@" + json.dumps({"counts": counts, "words": words.used(), "clamped": z.clamped}))
"""


@pytest.fixture(scope="module")
def designer_4bit():
    """The designer's 4-bit table (65 anchors, 16 cells: compact, zeal-table/2) on [-1, 1] at
    eps = 1, as the vectors hold it (built by tools/gen_vectors.py with
    zeal.mechanism.table.design)."""
    prof = TP.loads(VECTORS["t-optimal-4bit"]["file"].encode())
    assert (prof.anchors, prof.n_cells, prof.bits, prof.format) == (64, 16, 4, "zeal-table/2")
    return prof


@pytest.mark.parametrize("x", [0.3, -1.0])
def test_device_sampler_matches_the_exact_law(mp_port, tmp_path, designer_4bit, x):
    """Under MicroPython, 20000 reports at reading x (key fixed: the test is deterministic;
    these bounds are what a fresh key would fail with): chi-square of the cell counts against
    Table.distribution(x) at the 1e-6 upper quantile, and the sample mean and variance of
    g(J) within 5 standard errors of x and Table.variance(x) (normal approximation, two-sided:
    5.7e-7 each). False-failure rate under a fresh key: below 3e-6 per reading."""
    from scipy.stats import chi2

    prof = designer_4bit
    table = prof.table
    (tmp_path / "zeal_profile.json").write_text(prof.to_json())
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    key = hashlib.sha256(b"table-stat-%r" % x).hexdigest()
    (res,) = _marked(_run_mp(STAT % {"key": key, "n": N_STAT, "bits": bits}, str(tmp_path)))
    counts = res["counts"]
    assert sum(counts) == N_STAT and res["clamped"] == 0
    p = table.distribution(Fraction(x))
    assert sum(p) == 1
    for j, c in enumerate(counts):
        assert c == 0 or p[j] > 0, "cell %d drawn with probability 0" % j
    used = [j for j in range(len(p)) if p[j] > 0]
    stat = sum((counts[j] - N_STAT * float(p[j])) ** 2 / (N_STAT * float(p[j])) for j in used)
    assert stat < chi2.isf(1e-6, len(used) - 1), (stat, counts)
    g = [float(prof.output_value(j)) for j in range(prof.n_cells)]
    mean = sum(c * g[j] for j, c in enumerate(counts)) / N_STAT
    var = sum(c * (g[j] - mean) ** 2 for j, c in enumerate(counts)) / (N_STAT - 1)
    sigma2 = float(table.variance(Fraction(x)))
    mu = float(sum(pj * prof.output_value(j) for j, pj in enumerate(p)))
    assert mu == pytest.approx(x, abs=1e-12)  # exactly unbiased (Fraction) at any reading
    mu4 = sum(float(pj) * (g[j] - mu) ** 4 for j, pj in enumerate(p))
    assert abs(mean - x) <= 5 * math.sqrt(sigma2 / N_STAT), (mean, x)
    assert abs(var - sigma2) <= 5 * math.sqrt((mu4 - sigma2 ** 2) / N_STAT), (var, sigma2)
    # words: one for the row's Bernoulli (more only after a tie) and one for UNIFORM (more
    # after a rejection, probability < 2^-32 a draw here): 2 per report
    assert 2 * N_STAT <= res["words"] <= 2 * N_STAT + 4


def test_device_sampler_is_the_host_reference_word_for_word(designer_4bit):
    """On CPython, device sampler and host reference on the same key over readings across
    and beyond [lo, hi]: same cells, same words consumed, same clamping."""
    from zealfw import tsample
    from zealfw.words import CounterWords as DeviceWords

    from zeal.mechanism.core.words import Recorder

    prof = designer_4bit
    dev = FT.loads(prof.to_json())
    f = type("F", (), {})()
    for name, v in zip(("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent",
                        "bits", "cal", "fingerprint", "table"),
                       (dev.lo, dev.hi, dev.anchors + 1, 1, 1, 0, 0, dev.bits, dev.cal,
                        dev.fingerprint, (dev.weights, dev.n_cells, dev.sums))):
        setattr(f, name, v)
    dw = DeviceWords(KEY)
    z = tsample.Zeal(f, dw)
    hw = CounterWords(KEY)
    host = TableSampler(prof, hw)
    xs = [-1.5, -1.0, -0.999, -0.5, 0.0, 1 / 3, 0.125, 0.5, 0.9999, 1.0, 2.0, 5e-324,
          -5e-324] + [i / 97 - 1.2 for i in range(240)]
    for x in xs:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        before = dw.used()
        j_dev = z.perturb_float64(bits)
        rec = Recorder(hw)
        j_host = host.sample_exact(reading_from_float64_bits(bits), rec)
        assert (j_dev, dw.used() - before) == (j_host, len(rec.used)), x
        assert 0 <= j_dev < prof.n_cells and z.low(j_dev) == j_dev
    assert z.clamped == host.clamped > 0


# ---- (d) the whole loop ------------------------------------------------------------------------
READINGS = [0.3, -1.0, 1.0, float("nan"), 2.5, -7.0, 0.0, float("inf"), 0.77, -0.42] * 7


def _run_loop(tmp_path, prof_text, lines, heap=None):
    (tmp_path / "zeal_profile.json").write_bytes(prof_text)
    cfg = {"start_delay_ms": 0, "period_ms": 0, "batch": 16, "vector_mode": True,
           "vector_key": KEY.hex()}
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    return _run_mp("import zealfw.main as m; m.run()", str(tmp_path), heapsize=heap,
                   stdin=("\n".join(lines) + "\n").encode())


def test_main_loop_streams_table_cells(mp_port, tmp_path, designer_4bit):
    """HELLO announces m = bits and the table's fingerprint; DATA carries the cells j as m
    bits, read by an independent frame parser (tests/test_firmware_loop.parse_output:
    COBS, CRCs under the session) and by zeal.wire.Decoder, and compared with the host
    sampler on the same key (invalid readings replaced by the midpoint)."""
    from test_firmware_loop import lows_of, parse_output, split

    prof = designer_4bit
    out = _run_loop(tmp_path, prof.to_json().encode(), [_f64(x) for x in READINGS] + ["!stop"])
    hellos, data, statuses = split(parse_output(out))
    assert hellos and all(h.bits == prof.bits for h in hellos)
    assert hellos[0].fingerprint == bytes.fromhex(prof.fingerprint)[:8]
    cells = lows_of(data)
    mid = (Fraction(prof.lo) + Fraction(prof.hi)) / 2
    host = TableSampler(prof, CounterWords(KEY))
    want = [host.sample_exact(Fraction(x) if math.isfinite(x) else mid) for x in READINGS]
    assert cells == want
    assert len(set(cells)) > 5
    assert statuses[-1].code == "STOPPED" and statuses[-1].ticks == len(READINGS)
    # and the host's own decoder (zeal.wire.Decoder) reads the same cells as offsets
    from zeal import wire

    events = wire.Decoder([prof], vectors=True).feed(out)
    batches = [e for e in events if isinstance(e, wire.Batch)]
    assert all(b.profile.fingerprint == prof.fingerprint for b in batches)
    assert [int(v) for b in batches for v in b.offsets] == want


def test_main_loop_refuses_a_broken_table(mp_port, tmp_path, designer_4bit):
    from test_firmware_loop import parse_output, split

    doc = json.loads(designer_4bit.to_json())
    n = doc["cells"]
    weights = designer_4bit.weights
    recs, o, raw = [], 0, bytes.fromhex(doc["rows"])
    while o < len(raw):
        recs.append(raw[o:o + 3 + 5 * raw[o + 2]])
        o += 3 + 5 * raw[o + 2]
    # the first row listing at most 2 exceptions: its first used cell j (not listed) set to 0
    # and its weight added to a later unlisted cell k (the total kept): cell j is zero in
    # that row, positive in the others (an infinite ratio), found before k's ratio
    r = next(i for i, rec in enumerate(recs) if rec[2] <= 2)
    listed = set(recs[r][3::5])
    j = next(c for c in range(n) if c not in listed and all(w[c] for w in weights))
    k = next(c for c in range(j + 1, n) if c not in listed and weights[r][c])
    ex = sorted([(c, int.from_bytes(recs[r][4 + 5 * i:8 + 5 * i], "big"))
                 for i, c in enumerate(recs[r][3::5])]
                + [(j, 0), (k, weights[r][k] + weights[r][j])])
    recs[r] = bytes(recs[r][:2]) + bytes([len(ex)]) + b"".join(
        bytes([c]) + w.to_bytes(4, "big") for c, w in ex)
    bad = _dump(_rehash(dict(doc, rows=b"".join(recs).hex())))
    with pytest.raises(ProfileError) as exc:
        kinds.loads(bad)
    assert exc.value.reason == "privacy"
    out = _run_loop(tmp_path, bad, [_f64(0.5), "!stop"])
    hellos, data, statuses = split(parse_output(out))
    assert [s.code for s in statuses] == ["BAD_PROFILE"] and not data
    assert "zero in one row" in statuses[0].message


# ---- (e) the heap ------------------------------------------------------------------------------
# The whole loop from .mpy (tools/bench_heap.py's harness) with the designer's 4-bit table:
# the smallest heap measured is 36 KiB on the PyPI unix port (the grid's loop: 31-32 KiB; see
# the module docstring of zealfw.tprofile and the closing note for where the table's bytes
# go), so this pins TABLE_HEAP_K; the allocation per report is the grid's bound.
# On the float32 build it is 39 KiB, and it is not the floats: a double-precision build of
# the same snapshot with the same options needs 39 KiB too. Both are built without frozen
# modules (the snapshot has no micropython-lib), so 19 names the PyPI port holds in its
# frozen asyncio/mip/requests (buf, n, s, v, run, raw, flags, message, timeout, ...) are
# interned at run time; that takes the name table past its fourth pool (~300 names) and the
# fifth pool is allocated whole: +3.7 KB (tools/bench_heap.py: names 311 (9,645 B) against
# 292 (6,061 B) for the grid). A board without frozen modules is in the same place.
# Issue 19 (the row sums near 2^32 drawn in 28-bit limbs, _WideUniform, so that a 32-bit
# board samples with small ints: 122-191 B a report there instead of 1,334-1,441) costs
# heap here: 38-39 KiB on the PyPI port (38 failed in one full run), 41-42 on the float32
# build (the loop's free heap on the emulated 32-bit board: 31-32 KiB).
# Per report, with the generator's SHA-256 as native code (zealfw/sha256_viper.py): 10 B
# measured from float32 readings, 118 from float64 ones (their parse); 170-250 with hashlib.
# Issue 20 (the firmware without import circles: zealfw.mech_setup takes the sampling helpers as
# arguments) moved the PyPI port's edge to 41 (41-53 all fit; the float32 build's stays 44),
# while the emulated board's free heap for this loop stays 31 KiB.
# Issue 23 (the designer's table is compact, zeal-table/2, 65 anchors: its rows are written out
# one at a time by zealfw.trows, its one total keeps one UNIFORM, the loader's lists are made
# at their size, the compact checks are a module of their own, zealfw.tcompact): 43 on the
# PyPI port and 46 on the float32 build, against 43 and 44 for the largest dense table
# (max-320 of tools/bench_heap.py); the 6-bit design needs 45 and 45.
TABLE_HEAP_K = {"pypi": 43, "f32": 46}
LOOP_PER_REPORT = 160


@pytest.mark.parametrize("kind", ["f32", "f64"])
def test_table_loop_from_mpy_fits_and_allocates_little(mp_port, tmp_path, designer_4bit, kind):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_heap as B

    mp = _micropython()
    compiled = str(tmp_path / "mpy")
    B.compile_firmware(compiled, FIRMWARE)
    work = str(tmp_path / "work")
    os.makedirs(work)
    B.lay_out(work, json.loads(designer_4bit.to_json()), kind, 64, 64 + 256)
    res, err = B.mp_run(mp, work, compiled, "alloc", 8192)
    assert res is not None, err
    r1, a1, r2, a2 = res[:4]
    assert (r1, r2) == (64, 64 + 256)
    assert (a2 - a1) / (r2 - r1) <= LOOP_PER_REPORT
    res, err = B.mp_run(mp, work, compiled, "fit", TABLE_HEAP_K[mp_port])
    assert res is not None and res[0] == 64 + 256, err
