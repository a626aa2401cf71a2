"""Shuffle profiles (`zeal-shuffle/2`) as a profile kind (zeal.mechanism.kinds documents the
interface)."""
from fractions import Fraction

import numpy as np

from ...errors import InputError, ReportError
from ..core.kind import (Kind, by_value, export_rows, frame_report, lines_of, num, ratio,
                         reading_from_text, variance_entry)
from . import mechanism as S
from . import profile as SP


class ShuffleKind(Kind):
    name = "shuffle"
    rows_per_attribute = "messages of this coordinate"
    fields = "coordinates"
    profile_class = SP.ShuffleProfile
    # ---- the archive: a message as its integer; its coordinate's exact law
    stream_shape = "messages"

    def uniform_part(self, profile):
        """randomise draws a message's coordinate by UNIFORM(d): 1 / d each, whatever the
        reading (the level's law depends on it)."""
        return "coordinate", profile.params.d

    def matches(self, data):
        return SP.is_shuffle_file(data)

    def loads(self, data, fetch=None):
        return SP.loads(data)

    formats = ("messages",)  # t message integers a reading, one a line

    def privacy_ratio(self, profile):
        raise ReportError("a shuffle profile's guarantee is (epsilon, delta) for a shuffled "
                          "batch, not a per-report ratio")

    def privacy(self, profile) -> dict:
        p = profile.params
        return {"covers": "the n = %d readings' %d messages, once a shuffler mixed them"
                          % (p.n, p.n * p.t),
                "epsilon": Fraction(p.epsilon), "delta": Fraction(p.delta), "ratio": None,
                "bound": None}

    def variance(self, profile, readings=None) -> list:
        """Per coordinate c, one message's estimate of its reading: (hi_c - lo_c)^2 times
        the normalised figure (S.message_variance); `readings`: tuples of d readings."""
        p = profile.params
        worst, at = S.worst_message_variance(p)
        out = []
        for c, (lo, hi) in enumerate(profile.ranges):
            lo, hi = Fraction(lo), Fraction(hi)
            w2 = (hi - lo) ** 2
            data = None
            if readings is not None:
                xs = [min(max(Fraction(r[c]), lo), hi) for r in readings]
                data = (sum(w2 * S.message_variance(p, (x - lo) / (hi - lo)) for x in xs),
                        len(xs))
            out.append(variance_entry("coordinate %d" % c, "one message's estimate",
                                      w2 * worst, lo + (hi - lo) * at, data=data))
        return out

    def summary(self, profile, unit=""):
        p = profile.params
        return ("shuffle, %d coordinates, %d levels, t = %d, n = %d, (epsilon, delta) = (%g, "
                "%g), fingerprint %s" % (p.d, p.k, p.t, p.n, float(p.epsilon), float(p.delta),
                                         profile.fingerprint[:16]))

    def perturber(self, profile, words, fmt):
        return ShufflePerturber(profile, words)

    def aggregate(self, profile, lines):
        p = profile.params

        def message(text):
            t = text.strip()
            if not t.isdigit():
                raise ReportError("not a shuffle message (a decimal integer): %r" % t[:40])
            try:
                return S.decode_message(p, int(t))
            except S.ShuffleError as exc:
                raise ReportError(str(exc)) from None
        pairs = lines_of(lines, message)
        hist = np.zeros((p.d, p.levels), dtype=np.int64)
        for c, y in pairs:
            hist[c, y] += 1
        means = S.Analyzer(p).estimate(hist)
        coords = []
        for c, (m, (lo, hi)) in enumerate(zip(means, profile.ranges)):
            value = None if m is None else Fraction(lo) + (Fraction(hi) - Fraction(lo)) * m
            coords.append({"coordinate": c, "messages": int(hist[c].sum()),
                           "mean": None if value is None else float(value)})
        text = ["messages          %d (t = %d a reading)" % (len(pairs), p.t)]
        text += ["coordinate %-6d %s  from %d messages" % (d["coordinate"], num(d["mean"]),
                                                            d["messages"]) for d in coords]
        text.append("privacy           the shuffle's (epsilon, delta) holds only for messages "
                    "mixed by a shuffler with the profile's n readings (zeal analyze says)")
        return {"messages": len(pairs), "coordinates": coords}, text

    def export(self, profile, rows, counts, io):
        p = profile.params
        msgs = io.lows(profile, rows)
        frame, report = frame_report(counts)
        coord = np.empty(msgs.size, dtype=np.int64)
        level = np.empty(msgs.size, dtype=np.int64)
        for i, mval in enumerate(msgs.tolist()):
            try:
                coord[i], level[i] = S.decode_message(p, int(mval))
            except S.ShuffleError:  # no randomiser sends it (analyze counts these as invalid)
                coord[i], level[i] = -1, int(mval)
        g, k = Fraction(p.gamma), p.k
        est = np.full(msgs.size, np.nan, dtype=np.float64)
        for c in range(p.d):
            lo, hi = (Fraction(v) for v in profile.ranges[c])
            sel = coord == c
            est[sel] = by_value(level[sel], lambda y: lo + (hi - lo)
                                 * (Fraction(y, k) - g / 2) / (1 - g))
        names = ["invalid" if c < 0 else "coordinate %d" % c for c in coord.tolist()]
        return export_rows(frame, report, coord, names, "mean", level, est)

    def export_doc(self, profile, unit, reports):
        p = profile.params
        return {"fingerprint": profile.fingerprint, "kind": self.name, "unit": unit,
                "epsilon": float(p.epsilon), "delta": float(p.delta), "d": p.d,
                "levels": p.k, "t": p.t, "reports": reports,
                "ranges": [list(r) for r in profile.ranges],
                "estimate_from_low": {
                    "gamma": ratio(Fraction(p.gamma)),
                    "formula": "per message of coordinate c: lo_c + (hi_c - lo_c) * (low / "
                               "levels - gamma / 2) / (1 - gamma); the mean over a "
                               "coordinate's messages is zeal analyze's"},
                "profile": dict(profile.canonical(), fingerprint=profile.fingerprint)}


class ShufflePerturber:
    """`zeal perturb` under a shuffle profile: a line of d comma-separated readings -> its t
    messages, one a line (for a shuffler: alone they carry no guarantee)."""

    def __init__(self, profile, words):
        self.profile = profile
        self.sampler = SP.ShuffleSampler(profile, words)

    def lines(self, text):
        fields = text.split(",")
        if len(fields) != self.profile.d:
            raise InputError("not %d comma-separated readings" % self.profile.d)
        return [str(m) for m in self.sampler.sample([reading_from_text(f) for f in fields])]

    def notes(self):
        return ["these messages are private only once a shuffler mixes them with the other "
                "readings' (the profile's n = %d)" % self.profile.n]
