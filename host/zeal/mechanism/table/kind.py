"""Tables (`zeal-table/1`) as a profile kind (zeal.mechanism.kinds documents the interface)."""
from fractions import Fraction

import numpy as np

from ...errors import ReportError
from ..core.kind import (Kind, ScalarPerturber, calibration, clamped_mean, export_rows,
                         frame_report, lines_of, ratio, scalar_aggregate, variance_entry)
from ..core.pfile import exp_lower_bound
from . import profile as TP


class TableKind(Kind):
    name = "table"
    profile_class = TP.TableProfile
    distribution_plots = True

    @staticmethod
    def report_pattern(profile):
        return 0, 0  # a report is its cell j, sent as the m-bit value j

    def matches(self, data):
        return TP.is_table_file(data)

    def loads(self, data, fetch=None):
        return TP.loads(data)

    @staticmethod
    def values(profile) -> list:
        """The per-cell estimates g_j = lo + (hi - lo) a_j / Q, exact Fractions."""
        lo, hi = Fraction(profile.lo), Fraction(profile.hi)
        return [lo + (hi - lo) * Fraction(int(a), int(profile.value_den))
                for a in profile.values]

    def estimates(self, profile, j) -> np.ndarray:
        table = np.array([float(g) for g in self.values(profile)], dtype=np.float64)
        return table[np.asarray(j, dtype=np.int64).reshape(-1)]

    formats = ("low",)  # a report is its cell j, sent as the m-bit value j

    def privacy_ratio(self, profile):
        return profile.table.privacy_ratio()

    def privacy(self, profile) -> dict:
        return {"covers": "one report", "epsilon": Fraction(profile.epsilon), "delta": None,
                "ratio": profile.table.privacy_ratio(),
                "bound": exp_lower_bound(Fraction(profile.epsilon))}

    def variance(self, profile, readings=None) -> list:
        table = profile.table
        data = None if readings is None else clamped_mean(table.variance, readings,
                                                           profile.lo, profile.hi)
        return [variance_entry("reading", "one report's estimate", table.worst_variance(),
                               table.worst_input(), data=data)]

    def summary(self, profile, unit=""):
        return ("table, range [%g, %g] %s, epsilon %g, %d bits per report (%d cells, %d "
                "anchor rows), fingerprint %s" % (profile.lo, profile.hi, unit, profile.epsilon,
                                                  profile.bits, profile.n_cells,
                                                  profile.anchors + 1,
                                                  profile.fingerprint[:16]))

    def title_note(self, profile):
        return ", table profile (%d anchors)" % (profile.anchors + 1)

    def facts(self, profile, unit=""):
        worst = profile.worst_variance()
        return {"cells": profile.n_cells, "anchor_rows": profile.anchors + 1,
                "worst_variance": float(worst),
                "worst_variance_exact": "%d/%d" % (worst.numerator, worst.denominator),
                "variance_unit": unit + "^2"}

    def estimator(self, profile, confidence=0.99):
        from .estimate import TableEstimator

        return TableEstimator(profile, confidence)

    def perturber(self, profile, words, fmt):
        from .sampler import TableSampler

        mech = TableSampler(profile, words)
        mech.perturb = mech.sample_exact
        return ScalarPerturber(profile, mech, str)

    def aggregate(self, profile, lines):
        def cell(text):
            t = text.strip()
            if not t.isdigit():
                raise ReportError("not a report of a table profile (a cell number 0..%d): "
                                  "%r" % (profile.n_cells - 1, t[:40]))
            if int(t) >= profile.n_cells:
                raise ReportError("cell %d is outside the table's %d cells"
                                  % (int(t), profile.n_cells))
            return int(t)
        return scalar_aggregate(self, profile, lines_of(lines, cell), True)

    def export(self, profile, rows, counts, io):
        j = io.offsets(profile, rows)  # a cell: low = j
        frame, report = frame_report(counts)
        return export_rows(frame, report, 0, "reading", "mean", j, self.estimates(profile, j))

    def export_doc(self, profile, unit, reports):
        values = self.values(profile)
        return calibration(profile, {
            "fingerprint": profile.fingerprint, "kind": self.name, "lo": profile.lo,
            "hi": profile.hi, "unit": unit, "epsilon": profile.epsilon, "bits": profile.bits,
            "n_cells": profile.n_cells, "anchors": profile.anchors, "reports": reports,
            "estimate_from_low": {"values": [float(g) for g in values],
                                  "values_exact": [ratio(g) for g in values],
                                  "formula": "estimate = values[low] = lo + (hi - lo) * "
                                             "a[low] / Q (the profile's values and value_den)"},
            "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)})
