"""The exact table sampler, host reference (shared_spec/mechanism.md, "Table profiles").

Word for word the contract the firmware (zealfw/tsample.py) follows:

    x   <- clamp(x) to [lo, hi]                    (counted, as the grid)
    pos <- (x - lo) * R / (hi - lo)                exact rational in [0, R]
    r   <- floor(pos) + BERNOULLI(frac(pos))       the grid's stochastic rounding, steps = R
    u   <- UNIFORM(S_r)                            S_r = sum_j W[r][j]
    j   <- smallest j with W[r][0] + ... + W[r][j] > u

The report is j (on the wire the m-bit value j itself, wire_base 0). The position and the
Bernoulli are scalar.py's (`Clamp.position`, `stochastic_round`), shared with ExactZeal.
"""
from fractions import Fraction

from ..core.draws import Clamp, reading, stochastic_round, uniform_below
from .profile import TableProfile
from ..core.words import system_words


class TableSampler(Clamp):
    """`TableSampler(profile, words)`: `.sample(value) -> j`, `.sample_exact(x) -> j`."""

    def __init__(self, profile: TableProfile, words=None):
        if not isinstance(profile, TableProfile):
            raise TypeError("profile must be a zeal.mechanism.table.profile.TableProfile")
        super().__init__(Fraction(profile.lo), Fraction(profile.hi))
        self.profile = profile
        self.words = words if words is not None else system_words()
        self._totals = profile.row_totals()

    def sample_exact(self, x: Fraction, words=None) -> int:
        """One report (the cell j) for the exact reading x."""
        words = words if words is not None else self.words
        row = stochastic_round(self.position(x, self.profile.anchors), words)
        u = uniform_below(self._totals[row], words)
        acc = 0
        for j, w in enumerate(self.profile.weights[row]):
            acc += w
            if acc > u:
                return j
        raise AssertionError("u below the row total always falls in a cell")  # unreachable

    def sample(self, value, words=None) -> int:
        """One report for a reading as `scalar.reading` accepts it (float, int, Fraction)."""
        return self.sample_exact(reading(value), words)
