"""The shuffle-mode randomiser on the device (shared_spec/shuffle.md, "Word contract"):
integers only, word for word the host reference (host/zeal/mechanism/shuffle/mechanism.py `randomise`
with the reading mapping of mechanism/shuffle/profile.py).

A reading sends t messages, each one (coordinate, level) pair of P = ceil(log2 d) +
ceil(log2(k + 1)) bits, drawn independently, message by message, for the reading tuple a
tuple source hands over (zealfw.src_tuple):

    for l in 0..t-1:
        c_l = UNIFORM(d)                                  (with replacement)
        if BERNOULLI(gamma_num, gamma_den): y_l = UNIFORM(k + 1)        (the blanket)
        else: y_l = b + BERNOULLI(r, q), with x k = b + r/q, x = (v - lo_c)/(hi_c - lo_c)
              clamped to [0, 1] (an invalid reading: x = 1/2)
    message l = c_l | y_l << ceil(log2 d)

The messages are kept in the list .msgs (low() makes them one int, message l at bit l P,
for the conformance runner); zealfw.main's loop sends them as `reports` (= t) wire
reports of P bits (the Sender's bits, HELLO announces P), message 0 first, and
zealfw.mstart makes the Sender's batch a multiple of t, so a tick's t reports are in one
DATA frame and frames leave only at tick starts.

The randomised rounding is zealfw.mechanism.Zeal's position with steps = k (the exact long
division of the grid, its clamping and its BERNOULLI of the fraction): this class is a
mechanism.Zeal whose `finish` returns base + BERNOULLI(fraction), with the per-coordinate
constants (_lo, _div) swapped in before each reading (made once at start by
zealfw.mech_setup.init_zeal, one pair of tuples a coordinate). A float64 pattern (replay) or a
float32 pattern (a callable's float) is a valid reading; NaN, an infinity, a raw count (a
shuffle profile has no calibration) or a bad field is invalid.
"""
from . import mechanism
from .bern import Bern
from .wire import Sender  # noqa: F401  a shuffle board's Sender (zealfw.mstart asks here)


class _F:
    pass


class Zeal(mechanism.Zeal):
    """A shuffle profile's randomiser. `profile.fields`: zealfw.sprofile.loads' fields.
    zealfw.main's loop calls perturb_raw(source) with the tuple source (or perturb(None,
    None) when the source failed: every coordinate invalid) and sends low(result) as
    `reports` reports of the Sender's bits, the low ones first."""

    def __init__(self, profile, words):
        d, k, t, gn, gd, ranges, bits, fp = profile.fields
        f = _F()
        f.n_cells = k + 1   # steps = n_cells - n_window = k
        f.n_window = 1
        f.threshold = 1
        f.k_lo = 0
        f.exponent = 0
        f.bits = 1
        f.cal = None
        consts = []
        for lo, hi in ranges:
            f.lo = lo
            f.hi = hi
            mechanism.Zeal.__init__(self, f, words)  # the grid's set-up (zealfw.mech_setup)
            consts.append((self._lo, self._div))
        self._c = consts
        cb = 0
        while (d - 1) >> cb:
            cb += 1
        # the message's constants: (t, BERNOULLI(gamma), UNIFORM(d), UNIFORM(k + 1), k,
        # coordinate bits, message bits P)
        self._m = (t, Bern(gn, gd), mechanism.Uniform(d),
                   mechanism.Uniform(k + 1), k, cb, bits)
        self.msgs = [0] * t  # the tick's messages, message l at index l

    @property
    def reports(self):
        """Wire reports a tick: the t messages (mechanism.Zeal's is 1)."""
        return self._m[0]

    def finish(self, base, r, low, f, q):
        # randomised rounding: the position's floor plus BERNOULLI of its fraction
        return base + mechanism.bernoulli_frac(r, low, f, q, self.words)

    def low(self, k):
        """The t messages as one int, message l at bit l P (for the conformance runner and
        the tests; the loop sends self.msgs one by one, with no such int made)."""
        pb = self._m[6]
        out = 0
        sh = 0
        for m in self.msgs:
            out |= m << sh
            sh += pb
        return out

    def perturb(self, n, d):
        return self.perturb_raw(None)

    def perturb_raw(self, src):
        """The t messages for the tuple source src (None: every reading invalid), in
        self.msgs; returns the sampler (low() makes the one int)."""
        words = self.words
        t, gamma, coord, lev, k, cb, pb = self._m
        msgs = self.msgs
        for i in range(t):
            c = coord.draw(words)
            if gamma.draw(words):
                y = lev.draw(words)
            else:
                y = -1
                if src is not None:
                    kind = src.kinds[c]
                    self._lo, self._div = self._c[c]
                    try:
                        if kind == 2:
                            y = self.perturb_f64(src.vals[c], src.los[c])
                        elif kind == 1:
                            y = self.perturb_f32(src.vals[c], src.los[c])
                    except mechanism.ReadingError:
                        y = -1
                if y < 0:  # invalid: x = 1/2, x k = k/2
                    y = self.finish(k >> 1, k & 1, 0, 0, 2)
            msgs[i] = c | (y << cb)
        return self
