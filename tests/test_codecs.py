"""The codec registry, every codec's round trip, the bit packer and the exact entropy bound
(zeal.analysis.compress; issue 9 items 3 and 6)."""
import importlib.util
import math
import sys
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from zeal.analysis import compress
from zeal.analysis.compress import entropy
from zeal.analysis.datasets import HUMIDITY_RANGE, aarhus
from zeal.errors import ZealError
from zeal.wire import bits as wire_bits
from zeal.mechanism.grid import bulk, reports
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.exact import ExactGrid

MS = (2, 4, 16, 52)
RIVALS = ("zstd", "lz4", "bz2", "lzma", "pcodec", "packed", "rans", "adaptive")
READINGS = [float(v) for v in aarhus(count=2000)]
_CACHE = {}


def sample(m, n=20000, seed=9):
    """(profile, uint64 report bits) from the Aarhus humidity readings, repeated to n."""
    key = (m, n, seed)
    if key not in _CACHE:
        prof = P.from_bits(*HUMIDITY_RANGE, 1.0, m)
        x = np.resize(np.array(READINGS), n)
        j = bulk.sample_offsets_fast(prof, x, np.random.default_rng(seed))
        _CACHE[key] = (prof, reports.floats_from_offsets(prof, j).view(np.uint64))
    return _CACHE[key]


def roundtrip(codec, bits, prof):
    blob = codec.encode(bits, prof)
    assert isinstance(blob, bytes)
    back = codec.decode(blob, prof)
    assert back.dtype == np.uint64 and np.array_equal(back, bits), codec.name
    return blob


# ---- registry --------------------------------------------------------------------------------
def test_registry_has_every_rival_under_its_library_name():
    got = compress.codecs()
    for name in RIVALS:                    # the test extra installs every library
        assert name in got and got[name].name == name
        assert isinstance(got[name].needs_profile, bool)
        assert compress.get(name).name == name
    assert got["packed"].needs_profile and got["rans"].needs_profile
    assert not got["zstd"].needs_profile


def test_greedygd_is_registered_first():
    assert list(compress.codecs())[0] == "greedygd"


def test_a_broken_greedygd_is_raised_not_hidden(monkeypatch):
    monkeypatch.setitem(sys.modules, "zeal.analysis.compress.greedygd", None)  # import fails
    # the package as imported now (an earlier test may have re-imported zeal): without the
    # already-imported submodule bound on it, `from . import greedygd` must fail loudly
    pkg = importlib.import_module("zeal.analysis.compress")
    for module in {id(m): m for m in (pkg, compress)}.values():
        monkeypatch.delattr(module, "greedygd", raising=False)
    with pytest.raises(ImportError):
        pkg.codecs()
    with pytest.raises(ImportError):
        compress.codecs()


def test_a_missing_library_leaves_the_codec_out_and_get_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)   # `import zstandard` -> ImportError
    assert "zstd" not in compress.codecs() and "bz2" in compress.codecs()
    with pytest.raises(ZealError, match="pip install zstandard"):
        compress.get("zstd")
    with pytest.raises(ZealError, match="unknown codec 'gzip'.*zstd"):
        compress.get("gzip")


def test_the_codecs_function_survives_every_submodule_import():
    import zeal.analysis.compress.entropy  # noqa: F401
    import zeal.analysis.compress.rivals  # noqa: F401
    assert callable(compress.codecs) and isinstance(compress.codecs(), dict)


# ---- round trips ------------------------------------------------------------------------------
@pytest.mark.parametrize("m", MS)
def test_every_codec_round_trips(m):
    prof, bits = sample(m)
    for codec in compress.codecs().values():
        roundtrip(codec, bits, prof)


@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("case", ["one", "all_equal", "empty", "both_ends", "lowest_cells"])
def test_every_codec_round_trips_edge_cases(m, case):
    prof, bits = sample(m)
    k0 = np.uint64(reports.to_bits(prof, prof.k_lo))
    edge = {"one": bits[:1], "all_equal": np.full(5000, bits[7], dtype=np.uint64),
            "empty": bits[:0],
            "both_ends": np.array([k0, k0 + np.uint64(prof.n_cells - 1)] * 333, np.uint64),
            "lowest_cells": k0 + np.arange(min(prof.n_cells, 3000), dtype=np.uint64)}[case]
    for codec in compress.codecs().values():
        roundtrip(codec, edge, prof)


def test_packed_is_the_m_bits_the_device_sends():
    for m in MS:
        prof, bits = sample(m)
        blob = compress.get("packed").encode(bits, prof)
        n = bits.shape[0]
        assert len(blob) == 4 + 9 + -(-n * m // 8)
        low = np.array([reports.to_low(prof, int(b) & ((1 << 52) - 1)) for b in bits[:50]])
        assert np.array_equal(wire_bits.unpack_bits(blob[13:], 50, m), low.astype(np.uint64))


@pytest.mark.parametrize("width", [1, 2, 3, 7, 8, 13, 31, 32, 33, 52, 63, 64])
def test_pack_bits_round_trips_every_width(width):
    rng = np.random.default_rng(width)
    for n in (1, 2, 63, 64, 65, 1000):
        v = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        v &= np.uint64((1 << width) - 1) if width < 64 else np.uint64(2 ** 64 - 1)
        buf = wire_bits.pack_bits(v, width)
        assert len(buf) == -(-n * width // 8)
        assert np.array_equal(wire_bits.unpack_bits(buf, n, width), v)
    # the bit order is fixed: value i's bit b is bit i*width + b of the stream, LSB first
    v = np.array([1, 0, 1], dtype=np.uint64)
    assert int.from_bytes(wire_bits.pack_bits(v, width), "little") == 1 | (1 << 2 * width)


def _reference_pack(values, widths) -> bytes:
    """LSB first, written here with Python integers: value i at bit sum(widths[:i])."""
    acc = pos = 0
    for v, w in zip(values, widths):
        acc |= (int(v) & ((1 << w) - 1)) << pos
        pos += w
    return acc.to_bytes(-(-pos // 8), "little")


def test_one_packer_for_every_width_against_python_integers():
    """The wire's payload layout, the archive's sections and GreedyGD's: one packer
    (zeal.wire.bits), fixed and per-value widths, equal to the integer reference."""
    rng = np.random.default_rng(7)
    for n in (0, 1, 5, 64, 129):
        widths = rng.integers(1, 65, n)
        v = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        buf = wire_bits.pack_varwidth(v, widths)
        assert buf == _reference_pack(v, widths.tolist())
        mask = np.array([(1 << int(w)) - 1 for w in widths], dtype=np.uint64)
        assert np.array_equal(wire_bits.unpack_varwidth(buf, widths), v & mask)
        for w in (0, 1, 3, 13, 52, 63, 64):
            buf = wire_bits.pack_bits(v, w)
            assert buf == _reference_pack(v, [w] * n)
            kept = v & np.uint64((1 << w) - 1) if w < 64 else v
            assert np.array_equal(wire_bits.unpack_bits(buf, n, w), kept)


def test_codecs_refuse_reports_and_blobs_of_another_profile():
    prof, bits = sample(4)
    other, _ = sample(16)
    for name in ("packed", "rans", "adaptive"):
        codec = compress.get(name)
        with pytest.raises(ZealError, match="not on the profile's grid"):
            codec.encode(bits, other)
        with pytest.raises(ZealError, match="another profile|m = 4 bits"):
            codec.decode(codec.encode(bits, prof), other)
        with pytest.raises(ZealError, match="needs the reports' profile"):
            codec.encode(bits, None)
    for name in ("zstd", "lz4", "bz2", "lzma", "pcodec"):
        with pytest.raises(ZealError):
            compress.get(name).decode(b"not a blob at all", None)


# ---- the entropy bound ------------------------------------------------------------------------
def _direct_entropy(prof, readings):
    """H of (1/n) sum_i ExactGrid.distribution(x_i), summed over every cell (small N only)."""
    g = ExactGrid(prof)
    mix = [Fraction(0)] * g.n
    for x, c in Counter(readings).items():
        for j, p in g.distribution(x).items():
            mix[j] += c * p
    assert sum(mix) == len(readings)
    return math.fsum(-float(p / len(readings)) * math.log2(float(p / len(readings)))
                     for p in mix if p)


@pytest.mark.parametrize("m", [2, 4, 6, 9])
def test_entropy_equals_the_cell_by_cell_mixture(m):
    prof = P.from_bits(*HUMIDITY_RANGE, 1.0, m)
    xs = READINGS[:400]
    segs = entropy.mixture_segments(prof, xs)
    assert sum((b - a) * p for a, b, p in segs) == 1          # exact Fractions
    assert [a for a, _, _ in segs][0] == 0 and segs[-1][1] == prof.n_cells
    h = entropy.entropy_bits_per_report(prof, xs)
    assert h == pytest.approx(_direct_entropy(prof, xs), rel=1e-13)


@pytest.mark.parametrize("m", MS)
def test_entropy_lies_between_the_mean_conditional_entropy_and_log2_n(m):
    prof = P.from_bits(*HUMIDITY_RANGE, 1.0, m)
    h = entropy.entropy_bits_per_report(prof, READINGS)
    cond = np.mean([entropy.entropy_bits_per_report(prof, [x]) for x in READINGS[:50:7]])
    assert cond - 1e-12 <= h <= math.log2(prof.n_cells) + 1e-12
    # text readings are taken exactly, like numbers
    assert entropy.entropy_bits_per_report(prof, ["45.5"]) == \
        entropy.entropy_bits_per_report(prof, [Fraction("45.5")])


@pytest.mark.statistical
def test_plug_in_entropy_of_a_sample_approaches_the_bound():
    """Seeded; the plug-in figure of 2*10^5 reports at m = 4 (15 cells) is within 0.01 bit of
    the exact bound (its bias is 14/(2 n ln 2) = 5e-5 bit, its standard deviation about
    0.002 bit: a false failure is a > 4 sigma event, rate below 1e-4)."""
    prof, bits = sample(4, n=200000, seed=3)
    h = entropy.entropy_bits_per_report(prof, np.resize(np.array(READINGS), 200000))
    assert abs(entropy.plugin_entropy_of_bits(bits) - h) < 0.01


@pytest.mark.statistical
@pytest.mark.parametrize("m", MS)
def test_rans_is_within_two_percent_of_the_entropy_bound(m):
    """Issue 9's goal, on 10^5 seeded reports: the coded size, model included, over the exact
    bound. The sample's plug-in entropy sits within ~0.005 bit of the bound (1 sigma), far
    inside the 2% margin (0.02 bit at m = 2): false-failure rate below 1e-6."""
    n = 100000
    prof, bits = sample(m, n=n, seed=5)
    h = entropy.entropy_bits_per_report(prof, np.resize(np.array(READINGS), n))
    size = len(roundtrip(compress.get("rans"), bits, prof)) * 8 / n
    assert size <= 1.02 * h, (m, size, h)
    assert size >= entropy.plugin_entropy_of_bits(bits) - 1e-9  # no code beats the sample


@pytest.mark.statistical
@pytest.mark.parametrize("m", MS)
def test_adaptive_is_within_two_percent_of_the_entropy_bound(m):
    """The adaptive coder stores no model: on 10^5 seeded reports it is within 2 % of the
    exact bound like rans (false-failure rate below 1e-6, as there), and never above rans by
    more than its few header bytes."""
    n = 100000
    prof, bits = sample(m, n=n, seed=5)
    h = entropy.entropy_bits_per_report(prof, np.resize(np.array(READINGS), n))
    size = len(roundtrip(compress.get("adaptive"), bits, prof)) * 8 / n
    assert size <= 1.02 * h, (m, size, h)
    assert size >= entropy.plugin_entropy_of_bits(bits) - 1e-9


@pytest.mark.statistical
def test_adaptive_on_a_small_stream_beats_a_stored_model():
    """1,250 reports (one demo board's): no model to store, so below rans, and within 5 % of
    the exact entropy bound of their readings at m = 4 (seeded: 3.93 bits a report against a
    bound of 3.76; the coder's cost over the sample's entropy is its learning, about 0.15
    bit a report at this n, and the sample's entropy scatters by about 0.02 bit)."""
    n = 1250
    prof, bits = sample(4, n=n, seed=11)
    h = entropy.entropy_bits_per_report(prof, np.resize(np.array(READINGS), n))
    ad = len(roundtrip(compress.get("adaptive"), bits, prof)) * 8 / n
    ra = len(roundtrip(compress.get("rans"), bits, prof)) * 8 / n
    assert ad < ra and ad <= 1.05 * h, (ad, ra, h)


def test_adaptive_blocks_and_kt_cost_by_hand():
    """Blocks of 32, 64, 128, ... (capped); the KT code length of counts (1, 1) over B = 2
    buckets is -log2(1/2 * 1/4) = 3 bits (P(a) = 1/2, then P(b | a) = (0 + 1/2)/(1 + 1) =
    1/4); a damaged or foreign blob is one line."""
    from zeal.analysis.compress import adaptive as A

    assert A.blocks(100) == [(0, 32), (32, 96), (96, 100)]
    assert A.blocks(1 << 20)[-1][1] - A.blocks(1 << 20)[-1][0] <= A.BLOCK_MAX
    assert A.blocks(0) == []
    assert A.kt_bits(np.array([1, 1])) == pytest.approx(3.0)
    codec = compress.get("adaptive")
    prof, bits = sample(4)
    blob = codec.encode(bits, prof)
    for bad in (b"", b"ZAD1", blob[:len(blob) // 2], b"XXXX" + blob[4:]):
        with pytest.raises(ZealError) as info:
            codec.decode(bad, prof)
        assert "\n" not in str(info.value)
    with pytest.raises(ZealError, match="more than"):
        codec.decode(blob, prof, limit=bits.shape[0] - 1)
