"""Multi-attribute profiles (`zeal-multi/1`) as a profile kind (zeal.mechanism.kinds documents
the interface)."""
import math
from fractions import Fraction

import numpy as np

from ...errors import InputError, ReportError
from ..core.kind import (EXPORT_FIELDS, Kind, by_value, clamped_mean, export_rows,
                         frame_report, lines_of, num, ratio, reading_from_text,
                         variance_entry)
from . import profile as MP
from .mechanism import _CategoricalPart


class MultiKind(Kind):
    name = "multi"
    refers_to_others = True
    profile_class = MP.MultiProfile
    # ---- the archive: a report as its k pairs; its attribute subset's exact law
    stream_shape = "pairs"

    def uniform_part(self, profile):
        """MultiSampler draws the k attributes by a partial Fisher-Yates shuffle with
        uniform_below(d - i) at step i: every ordered k-tuple has probability (d - k)! / d!,
        each subset k! of them, so each of the C(d, k) subsets has 1 / C(d, k), whatever the
        readings."""
        return "attribute subset", math.comb(profile.d, profile.k)

    def matches(self, data):
        return MP.is_multi_file(data)

    def files(self, profile) -> list:
        return [(profile.fingerprint, profile.to_json())] + [
            (profile.attributes[i].fingerprint, text)
            for i, text in profile.attribute_files().items()]

    def write(self, profile, path) -> None:
        profile.write(path)   # the header, and its attribute files beside it

    def split_payload(self, profile, payload, count):
        return tuple(MP.unpack_multi(profile, payload, count))

    def join_payload(self, profile, reports) -> bytes:
        return MP.pack_multi(profile, reports)

    def value_attributes(self, profile) -> frozenset:
        return frozenset(j for j, a in enumerate(profile.attributes) if a.kind == "oue")

    fields = "attributes"

    def board_files(self, profile, name) -> list:
        return [(MP.attribute_path(name, i), "attribute %d (%s), fingerprint %s" % (
            i, profile.names[i], profile.attributes[i].fingerprint[:16]), text)
            for i, text in profile.attribute_files().items()]

    def loads(self, data, fetch=None):
        return MP.loads(data, fetch if fetch is not None else (lambda i, fp: None))

    formats = ("pairs",)  # a report as "j:y j:y ..." (its k attribute indices and values)

    def privacy_ratio(self, profile):
        return profile.multi().privacy_ratio()

    def privacy(self, profile) -> dict:
        m = profile.multi()
        return {"covers": "one report (its k attributes)", "epsilon": Fraction(profile.epsilon),
                "delta": None, "ratio": m.privacy_ratio(),
                "bound": m.privacy_certificate()["product_bound"]}

    def variance(self, profile, readings=None) -> list:
        """Per attribute: a numeric one's estimate of its reading; a categorical one's, of
        a value's indicator (worst over the value and the true value). `readings`: tuples of
        d readings (a categorical attribute's field is unused here: its data figure is
        None)."""
        m = profile.multi()
        out = []
        for j, part in enumerate(m.parts):
            low, high = m.worst_variance_bounds(j)
            data = None
            if readings is not None and not isinstance(part, _CategoricalPart):
                data = clamped_mean(lambda x, j=j: m.variance(j, x),
                                    [r[j] for r in readings], part.lo, part.hi)
            of = ("one report's estimate of a value's frequency"
                  if isinstance(part, _CategoricalPart) else "one report's estimate")
            out.append(variance_entry(profile.names[j], of, low, upper=high, data=data))
        return out

    def summary(self, profile, unit=""):
        return ("%d attributes (%s), k = %d a report, epsilon %g, fingerprint %s"
                % (profile.d, ", ".join(profile.names), profile.k, profile.epsilon,
                   profile.fingerprint[:16]))

    def perturber(self, profile, words, fmt):
        return MultiPerturber(profile, words)

    def aggregate(self, profile, lines):
        from .mechanism import MultiEstimator

        def report(text):
            pairs = []
            for field in text.split():
                j, _, y = field.partition(":")
                if not (j.isdigit() and y.isdigit()):
                    raise ReportError("not a multi report ('j:y j:y ...'): %r" % text[:60])
                pairs.append((int(j), int(y)))
            try:  # the payload's own checks: indices ascending below d, values of each
                MP.unpack_multi(profile, MP.pack_multi(profile, [pairs]), 1)
            except (MP.PayloadError, ValueError, KeyError, IndexError) as exc:
                raise ReportError("not a report of this profile: %s" % exc) from None
            if len(pairs) != profile.k:
                raise ReportError("a report holds k = %d pairs, got %d" % (profile.k,
                                                                            len(pairs)))
            return pairs
        reps = lines_of(lines, report)
        idx = np.array([[j for j, _ in r] for r in reps], dtype=np.int64)
        val = np.array([[y for _, y in r] for r in reps], dtype=np.int64)
        atts = [a.as_dict() for a in MultiEstimator(profile.multi()).summarize(idx, val)]
        text = ["n                 %d reports (k = %d of d = %d attributes each)"
                % (len(reps), profile.k, profile.d)]
        for a in atts:
            if a["kind"] == "numeric":
                lo, hi = a["ci99"]
                text.append("%-17s %s  99%% interval [%s, %s] (Bernstein), carried by %d"
                            % (a["name"], num(a["mean_calibrated"]), num(lo), num(hi),
                               a["carried"]))
            else:
                for v, f in a["frequencies"].items():
                    text.append("%-17s frequency of %s: %s  99%% interval [%s, %s]"
                                % (a["name"], v, num(f["estimate"]), num(f["ci99"][0]),
                                   num(f["ci99"][1])))
        return {"n": len(reps), "attributes": atts}, text

    def export(self, profile, rows, counts, io):
        m = profile.multi()
        pairs = []   # per frame row: the frame's reports' [(j, y)]
        for i, r in enumerate(rows):
            pairs.append(io.multi_reports(profile, r))
        frame, report = frame_report(counts)
        n = frame.size
        carried = np.full((n, profile.d), -1, dtype=np.int64)  # y, or -1
        at = 0
        for reps in pairs:
            for rep in reps:
                for j, y in rep:
                    carried[at, j] = y
                at += 1
        parts = []
        scale = m.scale
        for j, part in enumerate(m.parts):
            ys = carried[:, j]
            name = profile.names[j]
            if not isinstance(part, _CategoricalPart):
                def numeric(y, part=part):
                    return part.mid if y < 0 else part.mid + scale * (part.value(y) - part.mid)
                parts.append(export_rows(frame, report, j, name, "mean", ys,
                                   by_value(ys, numeric)))
                continue
            for v, label in enumerate(part.domain):
                def bit(y, v=v, p=part.p, q=part.q):
                    return 0 if y < 0 else scale * (((y >> v) & 1) - q) / (p - q)
                parts.append(export_rows(frame, report, j, name, "frequency of %s" % label, ys,
                                   by_value(ys, bit)))
        out = {k: np.concatenate([p[k] for p in parts]) for k in EXPORT_FIELDS}
        order = np.lexsort((out["attribute"], out["report"], out["frame"]))  # report order
        return {k: v[order] for k, v in out.items()}

    def export_doc(self, profile, unit, reports):
        m = profile.multi()
        atts = []
        for j, part in enumerate(m.parts):
            doc = {"attribute": j, "name": profile.names[j]}
            if isinstance(part, _CategoricalPart):
                doc.update(kind="categorical", domain=[str(v) for v in part.domain],
                           p=ratio(Fraction(part.p)), q=ratio(Fraction(part.q)))
            else:
                doc.update(kind="numeric", mid=float(part.mid), mid_exact=ratio(
                    Fraction(part.mid)))
            atts.append(doc)
        return {"fingerprint": profile.fingerprint, "kind": self.name, "unit": unit,
                "epsilon": profile.epsilon, "d": profile.d, "k": profile.k,
                "reports": reports, "attributes": atts,
                "estimate_from_low": {
                    "scale": ratio(Fraction(m.scale)),
                    "formula": "per report and attribute: numeric, mid + scale * (g(low) - mid) "
                               "when carried (low >= 0), else mid; categorical value v, scale "
                               "* (bit v of low - q) / (p - q) when carried, else 0; the mean "
                               "over the reports is zeal analyze's figure"},
                "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)}


class MultiPerturber:
    """`zeal perturb` under a multi profile: a line of d comma-separated readings (numeric:
    an exact decimal; categorical: its value's index 0..c-1) -> one report "j:y j:y ..."."""

    def __init__(self, profile, words):
        self.profile = profile
        self.sampler = MP.MultiSampler(profile, words)

    def lines(self, text):
        prof = self.profile
        fields = text.split(",")
        if len(fields) != prof.d:
            raise InputError("not %d comma-separated readings (%s)" % (prof.d,
                                                                        ", ".join(prof.names)))
        values = []
        for a, name, field in zip(prof.attributes, prof.names, fields):
            field = field.strip()
            if a.kind == "oue":  # a categorical attribute: its value's index 0..c-1
                if not (field.isdigit() and int(field) < a.c):
                    raise InputError("%s: %r is not a value index 0..%d" % (name, field[:20],
                                                                           a.c - 1))
                values.append(int(field))
            else:
                try:
                    values.append(reading_from_text(field))
                except InputError as exc:
                    raise InputError("%s: %s" % (name, exc)) from None
        return [" ".join("%d:%d" % jy for jy in self.sampler.sample(values))]

    def notes(self):
        return (["clamped %d reading(s) to their attribute's range" % self.sampler.clamped]
                if self.sampler.clamped else [])
