"""Shuffle mode (seed 004): gamma, the word-contract randomiser, the analyzer, the MSE bound,
the guarantee a batch delivers, and the shuffler (zeal.mechanism.shuffle.mechanism,
zeal.collect.shuffler; shared_spec/shuffle.md).

Exact tests first; the statistical ones each state their seed and false-failure rate.
"""
import argparse
import math
import os
import random
import threading
import tty
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from zeal.collect import shuffler as shuf
from zeal.mechanism.shuffle import mechanism as S
from zeal.mechanism.core.words import CounterWords, ListWords, Recorder
from zeal.wire import codec

TWO32 = 1 << 32
Q3 = (1 << 64) // 3


def _ceil_dyadic(value: Fraction) -> Fraction:
    return Fraction(-((-value.numerator * TWO32) // value.denominator), TWO32)


# ---- gamma: hand-derived cases ----------------------------------------------------------------
def test_gamma_linear_branch_hand_derived():
    # t = 1: one message per reading, eps_m = epsilon = the largest float64 <= 9/10
    # (0.899999999999999911...), delta_m = delta. Balle's blanket with D = d (k + 1):
    # d = 1, k = 1 -> D = 2, n = 1001, delta = 1/2 (ln 4 = 1.3863):
    #   square term: 14 * 2 * 1.3863 / (1000 * 0.81) = 38.816 / 810 = 0.047921
    #   linear term: 27 * 2 / (1000 * 0.9)          = 54 / 900    = 0.0600000000000000007 <- max
    # gamma = that rounded UP to a multiple of 2^-32: ceil(0.06 * 2^32) = ceil(257698037.76).
    p = S.gamma_for(epsilon=Fraction(9, 10), delta=Fraction(1, 2), n=1001, d=1, k=1, t=1)
    assert p.regime == "balle-t1" and p.epsilon_message == Fraction(math.nextafter(0.9, 0))
    assert p.gamma == Fraction(257698038, TWO32)
    assert p.gamma >= Fraction(54, 1000) / p.epsilon_message
    assert p.gamma - Fraction(54, 1000) / p.epsilon_message < Fraction(1, TWO32)
    assert p.refusal() is None


TWO_STEPS = Fraction(2, TWO32)  # the rule's e^A lower bound may ask one 2^-32 step more


def test_gamma_square_branch_hand_derived():
    # eps = 1/2: square term 14 * 2 * ln 4 / (1000 * 1/4) = 112 ln 4 / 1000 = 0.155265...
    # (linear: 54 / 500 = 0.108). ln 4 is irrational: gamma is the rounded-up value; the
    # integer rule bounds e^A below (slack < 1e-9 relative), so it may ask one step more.
    p = S.gamma_for(epsilon=Fraction(1, 2), delta=Fraction(1, 2), n=1001, d=1, k=1, t=1)
    real = 112 * math.log(4) / 1000
    assert real <= p.gamma <= real + TWO_STEPS
    assert p.gamma.denominator <= TWO32
    # one step of 2^-32 below is refused by the rule (minimality of the stored gamma)
    lower = S.Params(**dict(p.__dict__, gamma=p.gamma - Fraction(1, TWO32)))
    assert lower.refusal() is not None and p.refusal() is None


def test_gamma_two_messages_basic_composition_hand_derived():
    # t = 2, eps = 1/2, delta = 1/2, d = 2, k = 1 (D = 4), n = 20001. Basic composition:
    # eps_m = eps / 2 = 1/4 (advanced would need 1/4 sqrt(4 ln 4) + 2/4 (e^(1/4) - 1) = 0.731
    # > 1/2: basic is better), delta_m = delta / (2t) = 1/8. Blanket:
    #   linear: 27 * 4 / (20000 * 1/4) = 0.0216
    #   square: 14 * 4 * ln(2 / (1/8)) / (20000 / 16) = 56 ln 16 / 1250 = 0.124213...  <- max
    p = S.gamma_for(epsilon=Fraction(1, 2), delta=Fraction(1, 2), n=20001, d=2, k=1, t=2)
    assert p.regime == "basic" and p.epsilon_message == Fraction(1, 4)
    real = 56 * math.log(16) / 1250
    assert real <= p.gamma <= real + TWO_STEPS
    # the old linked rule's 56 d K ln(1/delta) ln(2t/delta) / ((n-1) eps^2) = 0.06458 is half
    # of it: each message now gets only eps / 2 of the budget
    assert p.gamma > 56 * 4 * math.log(2) * math.log(8) / 5000


def test_gamma_advanced_composition_when_it_beats_basic():
    # t = 64 messages, eps = 1, delta = 1/2: basic gives eps_m = 1/64 = 0.0156; advanced
    # solves eps_m sqrt(128 ln 4) + 64 eps_m (e^eps_m - 1) = 1: eps_m = 0.0583
    # (13.32 * 0.0583 = 0.776, 64 * 0.0583 * 0.0600 = 0.224)
    p = S.gamma_for(epsilon=1, delta=Fraction(1, 2), n=10 ** 9, d=64, k=1, t=64)
    assert p.regime == "advanced"
    e = float(p.epsilon_message)

    def lhs(x):
        return x * math.sqrt(128 * math.log(4)) + 64 * x * math.expm1(x)
    assert lhs(e) <= 1 < lhs(e * (1 + 1e-6))
    assert 0.058 < e < 0.059
    assert p.refusal() is None


def test_gamma_epsilon_above_one_uses_message_epsilon_one():
    # t = 1, eps = 2: the blanket theorem needs eps_m <= 1, so eps_m = 1 (its guarantee
    # implies eps = 2's): gamma = max(27 D, 14 D ln(2/delta)) / (n - 1), D = 4, delta = 1/2
    p = S.gamma_for(epsilon=2, delta=Fraction(1, 2), n=10 ** 7, d=2, k=1, t=1)
    assert p.epsilon_message == 1
    real = max(27 * 4, 14 * 4 * math.log(4)) / (10 ** 7 - 1)
    assert real <= p.gamma <= real + TWO_STEPS


def test_ln_bounds_bracket_the_log():
    for x in (Fraction(1), Fraction(3, 2), Fraction(2), Fraction(10 ** 6), Fraction(7, 3) ** 40):
        lo, hi = S.ln_bounds(x)
        assert lo <= hi and hi - lo < Fraction(1, 10 ** 30)
        assert abs(float(lo) - math.log(float(x))) <= 1e-12 * max(1, math.log(float(x)))


@pytest.mark.parametrize("kwargs, word", [
    (dict(epsilon=6), "epsilon"), (dict(epsilon=0), "epsilon"), (dict(delta=1), "delta"),
    (dict(delta=0), "delta"), (dict(t=4), "exceed"), (dict(n=1), "n must"),
    (dict(n=50), "no blanket"), (dict(k=0), "k must"), (dict(epsilon=float("nan")), "finite"),
])
def test_outside_the_paper_is_one_line_error(kwargs, word):
    base = dict(epsilon=Fraction(9, 10), delta=Fraction(1, 100), n=10 ** 5, d=3, k=3, t=1)
    base.update(kwargs)
    with pytest.raises(S.ShuffleError) as err:
        S.gamma_for(**base)
    assert word in str(err.value) and "\n" not in str(err.value)


# ---- delivered guarantee ------------------------------------------------------------------------
def test_delivered_for_a_smaller_batch():
    p = S.gamma_for(epsilon=Fraction(1, 2), delta=Fraction(1, 100), n=20000, d=3, k=3, t=1)
    assert S.delivered(p, 20000) == (p.epsilon, p.delta)
    assert S.delivered(p, 50000) == (p.epsilon, p.delta)
    eps, delta = S.delivered(p, 15000)
    assert delta == p.delta and p.epsilon < eps < 1
    # the claimed epsilon' is proven by the rule at the pool of 15000 with the stored gamma ...
    from zeal.mechanism.shuffle import rule as R

    def rule(e, pool):
        pair = (e.numerator, e.denominator)
        return R.refusal(pair, (delta.numerator, delta.denominator), pair, pool, 3, 3, 1,
                         (p.gamma.numerator, p.gamma.denominator))
    assert rule(eps, 15000) is None
    # ... and nothing much smaller is
    assert rule(eps - Fraction(1, 1 << 20), 15000) is not None
    last = p.epsilon
    for batch in (15000, 10000, 8000, 6000):
        eps_b, _ = S.delivered(p, batch)
        assert last <= eps_b <= 1
        last = eps_b
    assert S.delivered(p, 4000) is None and S.delivered(p, 1) is None


def test_delivered_counts_readings_as_messages_over_t():
    # t = 2: a batch of 2n messages is n readings' worth: configured; one message fewer is a
    # pool of n - 1: weaker (not the configured pair)
    q = S.gamma_for(epsilon=Fraction(1, 2), delta=Fraction(1, 2), n=20001, d=2, k=1, t=2)
    assert S.delivered(q, 2 * 20001) == (q.epsilon, q.delta)
    eps, _ = S.delivered(q, 2 * 20001 - 1)
    assert eps > q.epsilon
    assert S.delivered(q, 3) is None


# ---- the word contract --------------------------------------------------------------------------
def test_coordinates_are_drawn_with_replacement():
    # d = 3, t = 2: each message's coordinate is its own UNIFORM(3) (word u * q3 -> u); with
    # the blanket word 0 (blanket) and a level word, all 9 ordered pairs occur, repeats too.
    p = S.gamma_for(epsilon=Fraction(99, 100), delta=Fraction(1, 10), n=10 ** 6, d=3, k=1, t=2)
    seen = set()
    for u0 in range(3):
        for u1 in range(3):
            words = ListWords([u0 * Q3, 0, 0, u1 * Q3, 0, 0])
            seen.add(tuple(c for c, _ in S.randomise(p, [Fraction(0)] * 3, words)))
    assert seen == {(a, b) for a in range(3) for b in range(3)}


def test_randomise_word_consumption():
    # the contract, per message: one uniform_below (coordinate), one bernoulli (blanket),
    # then one uniform_below (blanket) or one bernoulli (rounding): 3 words a message barring
    # ties/rejections (probability < 2^-60 each over this run, counted as failures: < 1e-12).
    p = S.gamma_for(epsilon=Fraction(99, 100), delta=Fraction(1, 10), n=50000, d=5, k=3, t=2)
    rec = Recorder(CounterWords(bytes(32)))
    for i in range(200):
        before = len(rec.used)
        pairs = S.randomise(p, [Fraction(j, 7) for j in range(5)], rec)
        assert len(rec.used) - before == 3 * p.t
        assert len(pairs) == 2 and all(0 <= c < 5 and 0 <= y <= 3 for c, y in pairs)


def test_randomise_blanket_and_rounding_words():
    p = S.gamma_for(epsilon=Fraction(9, 10), delta=Fraction(1, 2), n=1001, d=1, k=1, t=1)
    # coordinate word (d = 1: any), blanket word 0 (< gamma: blanket), uniform word 2^63 -> 1
    assert S.randomise(p, [Fraction(0)], ListWords([5, 0, 1 << 63])) == [(0, 1)]
    # blanket word 2^64 - 1 (no blanket), rounding of x = 1/4 with k = 1: Bernoulli(1/4):
    # word 0 -> 1 (U < 1/4), word 2^63 -> 0
    top = (1 << 64) - 1
    assert S.randomise(p, [Fraction(1, 4)], ListWords([5, top, 0])) == [(0, 1)]
    assert S.randomise(p, [Fraction(1, 4)], ListWords([5, top, 1 << 63])) == [(0, 0)]
    with pytest.raises(S.ShuffleError):
        S.randomise(p, [Fraction(5, 4)], ListWords([5, top, 0]))


def test_message_encoding_round_trip_and_width():
    p = S.gamma_for(epsilon=Fraction(99, 100), delta=Fraction(1, 100), n=10 ** 5, d=10, k=3,
                    t=2)
    assert (p.coord_bits, p.level_bits, p.message_bits) == (4, 2, 6)
    for pair in ((0, 0), (9, 3), (5, 1)):
        m = S.encode_message(p, pair)
        assert 0 <= m < 1 << 6 and S.decode_message(p, m) == pair
    assert S.encode_message(p, (5, 2)) == 5 | 2 << 4
    with pytest.raises(S.ShuffleError):
        S.decode_message(p, 15)  # coordinate 15 >= d
    with pytest.raises(S.ShuffleError):
        S.decode_message(p, 1 << 6)  # wider than a message


# ---- analyzer: exact ----------------------------------------------------------------------------
def _level_distribution(p, x):
    """P(level = y) for reading x, from the mechanism's definition (not the code)."""
    pos = x * p.k
    b = pos.numerator // pos.denominator
    f = pos - b
    probs = [Fraction(0)] * p.levels
    probs[b] += (1 - p.gamma) * (1 - f)
    if f:
        probs[b + 1] += (1 - p.gamma) * f
    for y in range(p.levels):
        probs[y] += p.gamma / p.levels
    return probs


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1), Fraction(1, 3), Fraction(2, 7),
                               Fraction(99, 100)])
def test_debiasing_is_exact_on_the_expected_histogram(x):
    p = S.gamma_for(epsilon=Fraction(9, 10), delta=Fraction(1, 100), n=30000, d=2, k=3, t=1)
    probs = _level_distribution(p, x)
    scale = math.lcm(*(q.denominator for q in probs))
    row = [int(q * scale) for q in probs]
    hist = np.array([row, row], dtype=object)
    est = S.Analyzer(p).estimate(hist)
    assert est == [x, x]
    # the exact pair variance agrees with the distribution's, and stays under the max
    mean = sum(Fraction(y, p.k) * q for y, q in enumerate(probs))
    var = sum((Fraction(y, p.k) - mean) ** 2 * q for y, q in enumerate(probs))
    a = S.Analyzer(p)
    assert a.pair_variance(x) == var / (1 - p.gamma) ** 2
    assert a.pair_variance(x) <= a.pair_variance_max()


def test_unreported_coordinate_has_no_estimate():
    p = S.gamma_for(epsilon=Fraction(9, 10), delta=Fraction(1, 100), n=30000, d=2, k=3, t=1)
    h = np.array([[1, 2, 3, 4], [0, 0, 0, 0]])
    a = S.Analyzer(p)
    assert a.estimate(h)[1] is None and math.isnan(a.estimate_float(h)[1])
    assert a.sums(h, 10)[0] == 10 * a.estimate(h)[0]


# ---- statistical --------------------------------------------------------------------------------
Z_1E7 = 5.33  # two-sided normal quantile for 1e-7


def _chi2_upper(df: int, z: float = 4.75) -> float:
    """Wilson-Hilferty upper quantile of chi-square(df) at the normal quantile z (4.75: 1e-6)."""
    a = 2 / (9 * df)
    return df * (1 - a + z * math.sqrt(a)) ** 3


def test_exact_randomiser_unbiased():
    # seed: CounterWords(key 0x01..); n = 4000 users, d = 3, t = 1, k = 3. Each coordinate's
    # error is compared with Z_1E7 standard deviations of mse_bound_at_k's per-coordinate
    # bound (normal approximation, c ~ 1333 pairs): false failure <= 3 * 1e-7 per run.
    p = S.gamma_for(epsilon=Fraction(99, 100), delta=Fraction(1, 100), n=4000, d=3, k=3, t=1)
    rng = np.random.default_rng(11)
    data = [[Fraction(int(v), 1000) for v in row] for row in rng.integers(0, 1001, (4000, 3))]
    truth = [sum(col) / len(data) for col in zip(*data)]
    words = CounterWords(bytes(range(1, 33)))
    msgs = [S.encode_message(p, pair) for row in data for pair in S.randomise(p, row, words)]
    a = S.Analyzer(p)
    est = a.estimate(a.histogram(msgs))
    per_coord = S.mse_bound_at_k(p)["total"] / p.d
    for e, m in zip(est, truth):
        assert abs(float(e - m)) <= Z_1E7 * math.sqrt(per_coord)


def test_bulk_debiasing_unbiased_over_repeats():
    # seed 2024; R = 200 repeats of n = 40000 users (d = 4, t = 2, k = 3). The mean over
    # repeats of each coordinate's estimate is within Z_1E7 standard errors (bound / R) of the
    # true mean: false failure <= 4e-7 (normal approximation of a mean of 200 estimates).
    p = S.gamma_for(epsilon=Fraction(99, 100), delta=Fraction(1, 10), n=40000, d=4, k=3, t=2)
    rng = np.random.default_rng(2024)
    data = rng.beta(2, 5, size=(40000, 4))
    truth = data.mean(axis=0)
    a = S.Analyzer(p)
    reps = 200
    ests = np.array([a.estimate_float(a.histogram_bulk(S.randomise_bulk(p, data, rng)))
                     for _ in range(reps)])
    per_coord = S.mse_bound_at_k(p)["total"] / p.d
    assert np.all(np.abs(ests.mean(axis=0) - truth) <= Z_1E7 * math.sqrt(per_coord / reps))


@pytest.mark.parametrize("n, d, t", [(10 ** 4, 3, 1), (10 ** 4, 10, 1), (10 ** 5, 10, 1),
                                     (4 * 10 ** 4, 5, 2)])
def test_measured_mse_within_bound(n, d, t):
    # seed 7; R = 30 repeats. Each repeat's squared error sum_j (m_hat_j - m_j)^2 has mean at
    # most the bound B (mse_bound_at_k, spread 1/4); the worst tail for a given mean puts all
    # of it on one coordinate, B chi2(1) per repeat, so the average of R repeats exceeds
    # B chi2_{R, 1-1e-6} / R with probability <= 1e-6 (normal approximation per coordinate).
    p = S.gamma_for(epsilon=Fraction(95, 100), delta=Fraction(1, 10), n=n, d=d, k=3, t=t)
    rng = np.random.default_rng(7)
    data = rng.uniform(size=(n, d))
    truth = data.mean(axis=0)
    a = S.Analyzer(p)
    reps = 30
    errs = [((a.estimate_float(a.histogram_bulk(S.randomise_bulk(p, data, rng))) - truth) ** 2
             ).sum() for _ in range(reps)]
    bound = S.mse_bound_at_k(p)["total"]
    assert np.mean(errs) <= bound * _chi2_upper(reps) / reps


# ---- the shuffler -------------------------------------------------------------------------------
def test_shuffler_emits_only_full_batches_and_a_permutation():
    s = shuf.Shuffler(5)
    assert isinstance(s._rng, random.SystemRandom)
    out = []
    for i in range(12):
        out += s.add([i.to_bytes(2, "little")])
    assert [len(b) for b in out] == [5, 5] and s.pending == 2
    assert sorted(out[0] + out[1]) == sorted(i.to_bytes(2, "little") for i in range(10))
    big = s.add([bytes([i]) for i in range(7)])  # 9 held >= 5: all 9 go, permuted
    assert len(big) == 1 and len(big[0]) == 9 and s.pending == 0
    assert s.add([b"x"]) == [] and s.discard() == 1


def test_shuffler_order_is_uniform():
    # seed 99 (random.Random injected); 3 messages, 60000 batches: each of the 6 orders has
    # count ~ Binomial(60000, 1/6); Z_1E7 standard deviations each: false failure <= 6e-7.
    s = shuf.Shuffler(3, rng=random.Random(99))
    counts = Counter(tuple(s.add([0, 1, 2])[0]) for _ in range(60000))
    assert len(counts) == 6
    sd = math.sqrt(60000 * (1 / 6) * (5 / 6))
    assert all(abs(c - 10000) <= Z_1E7 * sd for c in counts.values())


def _device_stream(device_id, boot, nonce, bits, reports_per_frame, frames, start=0,
                   fingerprint=b"\x11" * 8):
    session = codec.session_bytes(device_id, fingerprint, boot, nonce)
    out = [codec.encode_hello(device_id=device_id, fingerprint=fingerprint, boot=boot,
                              bits=bits, batch=reports_per_frame, nonce=nonce)]
    sent = []
    for f in range(frames):
        reports = [(start + f * reports_per_frame + i) % (1 << bits)
                   for i in range(reports_per_frame)]
        sent += reports
        out.append(codec.encode_data(seq=f, bits=bits, reports=reports, session=session))
    return b"".join(out), sent


def test_line_reader_strips_identities_and_drops_debug():
    stream, sent = _device_stream(b"dev-0001", 3, b"N" * 8, 6, 10, 4)
    r = shuf.LineReader()
    got = r.feed(stream)
    assert [k for k, _ in got] == [(b"\x11" * 8, 6)] * 4
    assert sum((v for _, v in got), []) == sent
    dbg = codec.encode_hello(device_id=b"dev-0002", fingerprint=b"\x11" * 8, boot=1, bits=6,
                             batch=10, flags=codec.FLAG_DEBUG)
    sess = codec.session_bytes(b"dev-0002", b"\x11" * 8, 1, bytes(8))
    r2 = shuf.LineReader()
    assert r2.feed(dbg + codec.encode_data(seq=0, bits=6, reports=[1, 2], session=sess)) == []
    assert r2.rejected["debug"] == 2


def _raw_pty():
    master, slave = os.openpty()
    tty.setraw(slave)
    return master, slave, os.ttyname(slave)


def test_zeal_shuffle_to_file_writes_no_identity(tmp_path, capsys):
    ids = [b"alice-01", b"bob-0002"]
    ptys = [_raw_pty() for _ in ids]
    streams, sent = [], []
    for i, dev in enumerate(ids):
        s, r = _device_stream(dev, 7, bytes([i + 1]) * 8, 8, 25, 4, start=100 * i)
        streams.append(s)
        sent += r
    out = tmp_path / "shuffled.txt"
    parser = argparse.ArgumentParser()
    from zeal.commands import shuffle as shuffle_command

    shuffle_command.add(parser.add_subparsers())
    args = parser.parse_args(["shuffle", "--in"] + [p[2] for p in ptys]
                             + ["--out", str(out), "--batch", "40", "--duration", "1.5",
                                "--json"])
    def send():  # after the command has opened the ports (pyserial flushes input on open)
        for (master, _, _), s in zip(ptys, streams):
            os.write(master, s)

    timer = threading.Timer(0.5, send)
    timer.start()
    try:
        assert args.func(args) == 0
    finally:
        timer.join()
        for master, slave, _ in ptys:
            os.close(master)
            os.close(slave)
    text = out.read_text()
    lines = text.splitlines()
    heads = [ln for ln in lines if ln.startswith("#")]
    msgs = [int(ln, 16) for ln in lines if not ln.startswith("#")]
    # 200 reports arrive; the pool releases whenever >= 40 are held (one frame is 25):
    # every batch holds at least 40, and fewer than 40 stay behind, never written
    sizes = [int(h.rsplit("=", 1)[1]) for h in heads]
    assert all(size >= 40 for size in sizes) and sum(sizes) == len(msgs)
    assert 200 - 40 < len(msgs) <= 200
    assert not Counter(msgs) - Counter(sent)
    for dev in ids:  # no device id, in any spelling, and no nonce or boot in the output
        assert dev.hex() not in text and dev.decode() not in text
    assert "0707070707" not in text
    err = capsys.readouterr()
    assert '"reports_written": %d' % len(msgs) in err.out


def test_rule_accepts_a_generous_gamma_at_a_huge_n_quickly():
    # gamma = 1/2 at n = 2^62, d = k = t = 1, eps_m = 1: e^A with A ~ 2^62 / 112. The rule
    # must answer from the bit length of x (2/delta = 4) without building 2^A (which took
    # gigabytes and ended in MemoryError before the shortcut).
    from zeal.mechanism.shuffle import rule as R
    assert R.refusal((1, 1), (1, 2), (1, 1), 1 << 62, 1, 1, 1, (1, 2)) is None
    assert R.exp_at_least(1 << 70, 1, 3, 1) and not R.exp_at_least(1, 1, 3, 1)


def test_mse_bound_at_a_billion_readings_sums_a_window_only():
    # n = 10^9 readings, t = 8, d = 8: c ~ Binomial(8 10^9, 1/8), mean mu = 10^9. The old sum
    # over every c (arrays of n entries) needed tens of GB; the window of +- 12 sd holds all
    # but < 1e-30 of the mass. E[1/c] = (1/mu)(1 + (1 - p)/mu + O(mu^-2)) (delta method).
    p = S.gamma_for(epsilon=3, delta=Fraction(1, 10 ** 6), n=10 ** 9, d=8, k=3, t=8)
    inv, p0 = S._inverse_count_moments(8 * 10 ** 9, 1 / 8)
    mu = 10 ** 9
    assert p0 == 0.0
    assert inv == pytest.approx((1 + (7 / 8) / mu) / mu, rel=1e-9)
    b = S.mse_bound_at_k(p)
    v = float(S.Analyzer(p).pair_variance_max())
    assert b["noise"] == pytest.approx(8 * v / mu, rel=1e-6)
    # small n: the window covers [1, n] and the sum is the plain one
    inv, p0 = S._inverse_count_moments(20, 0.3)
    pmf = [math.comb(20, c) * 0.3 ** c * 0.7 ** (20 - c) for c in range(21)]
    assert p0 == pytest.approx(pmf[0], rel=1e-12)
    assert inv == pytest.approx(sum(q / c for c, q in enumerate(pmf) if c) / (1 - pmf[0]),
                                rel=1e-12)
