"""The main job without a board: profile -> perturb -> aggregate on real humidity data."""
import sys
from fractions import Fraction

import numpy as np

from . import datasets, profile
from .cli import profile_report
from .errors import ZealError
from .estimate import Estimator
from .mechanism import ExactZeal
from .words import CounterWords, key_from_hex, system_words


def run_demo(*, epsilon=1.0, bits="auto", count=5000, seed=None, progress=True) -> dict:
    if count < 1:
        raise ZealError("--count must be at least 1")
    try:
        readings = datasets.aarhus("humidity", count)
        words = CounterWords(key_from_hex(seed)) if seed is not None else system_words()
    except ValueError as exc:
        raise ZealError(str(exc)) from None
    lo, hi = datasets.HUMIDITY_RANGE
    prof = profile.build(lo, hi, epsilon, bits=bits)
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    say("profile: range [%g, %g], epsilon %g, %d bits per report (E = %d, %d cells)"
        % (lo, hi, epsilon, prof.bits, prof.exponent, prof.n_cells))
    mech = ExactZeal(profile=prof, words=words)
    offsets = np.empty(count, dtype=np.int64)
    step = max(1, count // 10)
    for i, text in enumerate(readings):
        offsets[i] = mech.sample_offset(Fraction(text))
        if progress and (i + 1) % step == 0:
            say("  privatised %d/%d readings" % (i + 1, count))
    summary = Estimator(prof).summarize(offsets)
    true_mean = float(sum(Fraction(t) for t in readings) / count)
    doc = summary.as_dict()
    facts = profile_report(prof)
    doc.update(true_mean=true_mean, bits=prof.bits, epsilon=epsilon,
               transmission_ratio=facts["transmission_ratio"], wire_ratio=facts["wire_ratio"],
               clamped=mech.clamped, fingerprint=prof.fingerprint)
    if progress:
        print("readings            %d Aarhus humidity values" % count)
        print("true mean           %.6f" % true_mean)
        print("private mean        %.6f  (calibrated, unbiased)" % summary.mean_calibrated)
        print("99%% interval        [%.4f, %.4f]  (Bernstein, any n)" % summary.ci99)
        print("                    [%.4f, %.4f]  (normal approximation)" % summary.ci99_clt)
        print("AVG* (paper)        %.6f  (exact integer sums)" % summary.avg_star)
        print("bits per report     %d of 64  (paper TR at this exponent: %.4f)"
              % (prof.bits, facts["transmission_ratio"]))
        print("privacy ratio       %.9f <= e^eps = %.9f" % (facts["privacy_ratio"],
                                                          np.exp(epsilon)))
    return doc
