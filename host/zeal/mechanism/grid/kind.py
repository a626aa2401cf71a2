"""The window grid as a profile kind (zeal.mechanism.kinds documents the interface)."""
import math
from fractions import Fraction

import numpy as np

from ..core.kind import (Kind, ScalarPerturber, by_value, calibration, clamped_mean,
                         export_rows, frame_report, lines_of, ratio, scalar_aggregate,
                         variance_entry)
from ..core.pfile import exp_lower_bound
from . import profile as GP
from .exact import ExactGrid


class GridKind(Kind):
    name = "grid"
    profile_class = GP.Profile
    distribution_plots = True
    double_reports = True

    def matches(self, data):
        return True  # the sniff rule's last resort

    def loads(self, data, fetch=None):
        return GP.loads(data)

    @staticmethod
    def report_pattern(profile):
        return ((profile.exponent + 1023) << 52) | profile.k_lo, profile.high_bits

    @staticmethod
    def estimate_map(profile) -> tuple:
        """(a, b, d) integers with estimate(j) = (a + b j) / d exactly (d > 0), j = k - k_lo:
        lo + g (j - c0) (zeal.analysis.export's docstring), from ExactGrid's slope and
        intercept."""
        g = ExactGrid(profile)
        gain = g.gain
        base = g.lo - gain * g.intercept
        d = math.lcm(base.denominator, gain.denominator)
        return (base.numerator * (d // base.denominator), gain.numerator * (d // gain.denominator),
                d)

    def estimates(self, profile, j) -> np.ndarray:
        a, b, d = self.estimate_map(profile)
        return by_value(j, lambda v: (a + b * v) / d)

    formats = ("bits", "low", "float")

    def privacy_ratio(self, profile):
        return ExactGrid(profile).privacy_ratio

    def privacy(self, profile) -> dict:
        return {"covers": "one report", "epsilon": Fraction(profile.epsilon), "delta": None,
                "ratio": ExactGrid(profile).privacy_ratio,
                "bound": exp_lower_bound(Fraction(profile.epsilon))}

    def variance(self, profile, readings=None) -> list:
        grid = ExactGrid(profile)
        worst, at = grid.worst_variance()
        data = None if readings is None else clamped_mean(grid.variance, readings,
                                                           profile.lo, profile.hi)
        return [variance_entry("reading", "one report's estimate", worst, at, data=data)]

    def summary(self, profile, unit=""):
        return ("range [%g, %g] %s, epsilon %g, %d bits per report (E = %d, %d cells), "
                "fingerprint %s" % (profile.lo, profile.hi, unit, profile.epsilon, profile.bits,
                                    profile.exponent, profile.n_cells,
                                    profile.fingerprint[:16]))

    def estimator(self, profile, confidence=0.99):
        from .estimate import Estimator

        return Estimator(profile, confidence)

    def perturber(self, profile, words, fmt):
        from . import reports
        from .scalar import ExactZeal

        spell = {"bits": lambda k: "%016x" % reports.to_bits(profile, k),
                 "low": lambda k: str(reports.to_low(profile, k)),
                 "float": lambda k: repr(reports.value_of_bits(reports.to_bits(profile, k)))
                 }[fmt]
        return ScalarPerturber(profile, ExactZeal(profile=profile, words=words), spell)

    def aggregate(self, profile, lines):
        from . import reports

        offsets = lines_of(lines, lambda t: reports.parse_line(profile, t) - profile.k_lo)
        return scalar_aggregate(self, profile, offsets, False)

    def export(self, profile, rows, counts, io):
        j = io.offsets(profile, rows)
        frame, report = frame_report(counts)
        return export_rows(frame, report, 0, "reading", "mean", j + (profile.k_lo - profile.wire_base),
                     self.estimates(profile, j))

    def export_doc(self, profile, unit, reports):
        a, b, d = self.estimate_map(profile)
        first = profile.k_lo - profile.wire_base  # the low of offset 0: j = low - first
        intercept, gain = Fraction(a - b * first, d), Fraction(b, d)  # estimate = i + g low
        return calibration(profile, {
            "fingerprint": profile.fingerprint, "kind": self.name, "lo": profile.lo,
            "hi": profile.hi, "unit": unit, "epsilon": profile.epsilon, "bits": profile.bits,
            "exponent": profile.exponent, "n_cells": profile.n_cells,
            "n_window": profile.n_window, "threshold": profile.threshold, "reports": reports,
            "estimate_from_low": {"intercept": float(intercept), "gain": float(gain),
                                  "intercept_exact": ratio(intercept),
                                  "gain_exact": ratio(gain),
                                  "formula": "estimate = intercept + gain * low"},
            "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)})
