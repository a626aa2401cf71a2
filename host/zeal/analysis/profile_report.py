"""Every figure a user may want about a window-grid or table profile: `zeal profile`'s
report (its --json keys are a contract). The kind answers the privacy and variance figures
(zeal.mechanism.kinds); the paper's float64 figures come from zeal.paper.formulas."""
import math
from fractions import Fraction

GRID = "grid"
VARIANCE_UNIT = "(reading unit)^2"


def _finite(value):
    """A float figure, or None where float64 cannot hold it (JSON has no inf/NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _ratio_text(value) -> str:
    value = Fraction(value)
    return "%d/%d" % (value.numerator, value.denominator)


def _float_or_none(value):
    """float(value), or None where float64 cannot hold it (JSON has no inf)."""
    try:
        return _finite(float(value))
    except OverflowError:
        return None


def profile_report(prof, *, mechanism=None, data=None, objective=None) -> dict:
    """Every figure a user may want about a profile (the --json contract), for either kind.
    data: readings (Fractions) whose average variance is reported as data_mean_variance."""
    from ..mechanism import kinds

    if not kinds.of(prof).double_reports:  # the paper's figures are about its doubles
        return table_report(prof, mechanism=mechanism, data=data, objective=objective)
    from ..mechanism.grid.exact import worst_variance_ratio
    from ..paper import formulas as paper

    lo, hi, eps, e = prof.lo, prof.hi, prof.epsilon, prof.exponent
    kind = kinds.of(prof)
    ratio = kind.privacy(prof)["ratio"]
    var = kind.variance(prof, data)[0]   # one quantity: the reading
    worst, at = var["worst"], var["worst_input"]
    gamma = paper.gamma_min(lo, hi, eps, e)
    doc = {
        "lo": lo, "hi": hi, "epsilon": eps,
        # the float64 the profile holds, exactly: never above the epsilon that was typed
        "epsilon_stored": repr(eps), "exponent": e, "bits": prof.bits,
        # the paper's float64 figures: null where float64 overflows (ranges near 1.8e308)
        "abar": _finite(paper.abar(lo, hi, eps, e)),
        "abar_exact": str(paper.abar_exact(lo, hi, eps, e)),
        "gamma_min": gamma, "transmission_ratio": paper.transmission_ratio(gamma),
        "wire_ratio": prof.bits / 64,
        "e_enc": paper.e_enc(lo, hi, eps), "e_vul": paper.e_vul(lo, hi, eps),
        "n_cells": prof.n_cells, "n_window": prof.n_window, "threshold": prof.threshold,
        "privacy_ratio": float(ratio), "privacy_ratio_exact": _ratio_text(ratio),
        "fingerprint": prof.fingerprint,
    }
    if prof.n_cells <= 1 << 22:
        low, high = worst_variance_ratio(prof)
        doc["variance_ratio_vs_pm"] = [_finite(low), _finite(high)]
    doc.update({"kind": kind.name, "mechanism": kind.name,
                "worst_variance": _float_or_none(worst),
                "worst_variance_exact": _ratio_text(worst),
                "worst_input": _float_or_none(at),
                "variance_unit": VARIANCE_UNIT})
    return _with_data_variance(doc, var, data)


def _with_data_variance(doc, var, data) -> dict:
    """doc with the data-averaged variance of `var` (a kind's variance entry) when data."""
    if data is not None:
        mean = var["data_mean"]
        doc.update(data_mean_variance=_float_or_none(mean),
                   data_mean_variance_exact=_ratio_text(mean), data_readings=len(data))
    return doc


def table_report(prof, *, mechanism=None, data=None, objective=None) -> dict:
    """profile_report for a table profile (zeal-table/1)."""
    from ..mechanism import kinds

    kind = kinds.of(prof)
    privacy = kind.privacy(prof)
    ratio, bound = privacy["ratio"], privacy["bound"]
    var = kind.variance(prof, data)[0]   # one quantity: the reading
    worst = var["worst"]
    doc = {
        "format": prof.format, "kind": kind.name,
        "mechanism": mechanism if mechanism is not None else getattr(prof, "mechanism", None),
        "lo": prof.lo, "hi": prof.hi, "epsilon": prof.epsilon,
        "epsilon_stored": repr(prof.epsilon), "bits": prof.bits,
        "wire_ratio": prof.bits / 64,
        "cells": prof.n_cells, "n_cells": prof.n_cells,
        # the file's "anchors": R intervals, R + 1 anchor rows at lo + r (hi - lo)/R
        "anchors": prof.anchors, "anchor_rows": prof.anchors + 1,
        "value_den": prof.value_den,
        "privacy_ratio": float(ratio), "privacy_ratio_exact": _ratio_text(ratio),
        # the certified rational lower bound L of e^eps: every column ratio <= L <= e^eps
        "exp_epsilon_bound": float(bound), "exp_epsilon_bound_exact": _ratio_text(bound),
        "worst_variance": _float_or_none(worst),
        "worst_variance_exact": _ratio_text(worst),
        "worst_input": _float_or_none(var["worst_input"]),
        "variance_unit": VARIANCE_UNIT,
        "fingerprint": prof.fingerprint,
    }
    if objective is not None:
        doc["objective"] = objective
    return _with_data_variance(doc, var, data)
