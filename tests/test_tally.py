"""zeal.mechanism.core.tally and the paged analysis: a running tally of offsets is exact
(n, sums of j and j^2, counts) and cut-invariant (the naive float sum is the strictly
sequential one), and `analyze` on a store read in pages of a few frames gives the document
it gives in one page."""
import numpy as np
import pytest

from zeal.analysis import analyze as A
from zeal.collect.store import FrameRecord, Store
from zeal.mechanism.core.tally import COUNTS_MAX, Tally
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid.estimate import Estimator, abar_float
from zeal.mechanism.grid.reports import floats_from_offsets

from conftest import HUMIDITY
from test_analyze import offsets, rows_for


def _cut(a, rng):
    edges = np.sort(rng.choice(np.arange(1, a.size), size=min(7, a.size - 1), replace=False))
    return np.split(a, edges)


@pytest.mark.parametrize("top", [5, COUNTS_MAX - 1, COUNTS_MAX + 3, (1 << 40) + 7, (1 << 52) - 1,
                                 (1 << 62) + 5])
def test_tally_is_exact_whatever_the_cuts(top):
    rng = np.random.default_rng(top % 1000)
    j = rng.integers(0, top + 1, 5000)
    j[rng.integers(0, j.size)] = top
    t = Tally()
    for part in _cut(j, rng):
        t.add(part)
    py = [int(v) for v in j]
    assert (t.n, t.s1, t.s2) == (len(py), sum(py), sum(v * v for v in py))
    if top < COUNTS_MAX:
        assert t.counts.tolist() == np.bincount(j).tolist()
    else:
        assert t.counts is None
    mean = sum(py) / len(py)
    want = sum((v - mean) ** 2 for v in py) / (len(py) - 1)
    assert float(t.variance()) == pytest.approx(want, rel=1e-12)


def test_naive_sum_adds_the_frames_sums_in_order_however_cut():
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    est = Estimator(prof)
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 65, 120)
    j = rng.integers(0, prof.n_cells, int(counts.sum()))
    starts = np.cumsum(counts) - counts
    acc = 0.0
    for a, c in zip(starts.tolist(), counts.tolist()):   # frame by frame, each on its own
        acc += float(np.add.reduceat(floats_from_offsets(prof, j[a:a + c]), [0])[0])
    for seed in (1, 2, 3):   # pages cut at random frame boundaries
        cuts = np.sort(np.random.default_rng(seed).choice(np.arange(1, counts.size), 6,
                                                           replace=False))
        t = Tally(counts=False)
        for fr in np.split(np.arange(counts.size), cuts):
            a, b = int(starts[fr[0]]), int(starts[fr[-1]] + counts[fr[-1]])
            est.add_to(t, j[a:b], counts[fr])
        assert t.naive == acc and t.n == j.size
    whole = est.add_to(Tally(), j, counts)
    assert whole.naive == acc
    assert est.avg_star_naive_tally(whole) == acc / j.size - abar_float(prof)


def test_paged_analyze_equals_one_page(tmp_path):
    prof8 = P.from_bits(*HUMIDITY, 1.0, 8)
    prof4 = P.from_bits(*HUMIDITY, 2.0, 4)
    docs = []
    for chunk in (None, 3):
        st = Store(str(tmp_path / ("s%s.db" % chunk)))
        for prof, seed in ((prof8, 1), (prof4, 2)):
            st.add_profile(prof)
            for d, dev in enumerate((b"dev-a\0\0\0", b"dev-b\0\0\0", b"dev-c\0\0\0")):
                frames = offsets(prof, seed * 10 + d, 9 + d, 13 + 5 * d)
                recs = [FrameRecord(device_id=r[0], boot=r[1], nonce=bytes(8), seq=r[2],
                                    crc=r[2], fingerprint=r[3], count=r[4], payload=r[5],
                                    arrival=r[6])
                        for r in rows_for(prof, frames, device=dev,
                                          first_seq=100 * seed)]
                assert st.write(frames=recs) == len(recs)
        if chunk is not None:
            st.frame_chunk = chunk
            pages = list(st.iter_frames())
            assert len(pages) > 10 and max(len(p) for p in pages) == chunk
        docs.append(A.analyze(st))
        st.close()
    assert docs[0] == docs[1]
    assert docs[0]["overall"]["n"] == sum((9 + d) * (13 + 5 * d) for d in range(3)) * 2


@pytest.mark.parametrize("top,count", [(200, 7), ((1 << 22) + 9, 7), ((1 << 40) + 9, 7),
                                       (200, None), (9, "heavy")])
def test_tally_set_equals_one_tally_per_label(top, count):
    from zeal.mechanism.core.tally import ROUNDS_MAX, TallySet
    rng = np.random.default_rng(top % 97)
    nframes = 300
    if count == "heavy":   # one label with more frames in a page than ROUNDS_MAX
        counts = np.full(nframes, 5)
        labels = np.where(np.arange(nframes) % 3 == 0, 1, rng.integers(0, 6, nframes))
        assert np.sum(labels == 1) > ROUNDS_MAX
    else:
        counts = np.full(nframes, count) if count else rng.integers(1, 12, nframes)
        labels = rng.integers(0, 6, nframes)
    j = rng.integers(0, top + 1, int(counts.sum()))
    floats = rng.random(nframes) * 1e6          # the frames' float sums, one a frame
    rep = np.repeat(labels, counts)
    ts, total = TallySet(), Tally()
    half = nframes // 2, int(counts[:nframes // 2].sum())
    ts.add_frames(labels[:half[0]], counts[:half[0]], j[:half[1]], floats[:half[0]].copy(),
                  total)
    ts.add_frames(labels[half[0]:], counts[half[0]:], j[half[1]:], floats[half[0]:].copy(),
                  total)
    whole = Tally.of(j, floats)
    assert (total.n, total.s1, total.s2, total.naive) == (whole.n, whole.s1, whole.s2,
                                                          whole.naive)
    assert (total.counts is None) == (whole.counts is None)
    for k in range(6):
        want = Tally.of(j[rep == k], floats[labels == k])
        got = ts.tally(k)
        assert (got.n, got.s1, got.s2, got.naive) == (want.n, want.s1, want.s2, want.naive)
        assert (got.counts is None) == (want.counts is None)
        if want.counts is not None:
            assert np.trim_zeros(got.counts, "b").tolist() == \
                np.trim_zeros(want.counts, "b").tolist()
