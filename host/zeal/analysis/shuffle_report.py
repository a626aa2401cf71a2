"""Shuffle mode in `zeal analyze` (seed 004; shared_spec/shuffle.md): the analyzer's figures
for every shuffle profile ("zeal-shuffle/2") a store holds.

Per profile (one shuffled batch stream): the messages stored (each frame's m-bit reports; the
shuffler stored them under its one device "shuffler"), each decoded to its (coordinate,
level) pair (a message no randomiser sends is counted, not used); the readings they stand
for (messages / t: a reading sends t); the debiased estimate of the mean
vector (shuffle.Analyzer: exact rationals, shown as float64), in [0, 1] and in reading units
(lo_c + (hi_c - lo_c) m_c); the normalised MSE bound of the paper's proof at the k used
("mse_bound": `mse_bound_at_k`, with the coordinate-sampling term) and the paper's closed form
("mse_bound_paper": valid at its own optimised k only), both at the batch size stored; and
the privacy the stored batch actually delivered (`shuffle.delivered` at B = the messages
stored): the configured (epsilon, delta) only when B >= n t, a weaker pair or none below it
-- the document never claims the configured guarantee for a batch smaller than n t
("guarantee": "configured" / "weaker" / "none").

API: `shuffle_profiles(store)` {fingerprint: ShuffleProfile}, `messages(store, profile)`,
`report(profile, messages)` (one profile's document), `analyze_store(store)` (the "shuffle"
section of `zeal analyze --json`), `format_text(section)`.
"""
from fractions import Fraction

import numpy as np

from ..errors import ZealError
from ..mechanism.shuffle import mechanism as S
from ..mechanism.shuffle import profile as SP
from ..wire import codec


def shuffle_profiles(store) -> dict:
    """{fingerprint: ShuffleProfile} of the shuffle profiles stored (each re-checked, the
    host's privacy check included: ProfileError for one that fails)."""
    out = {}
    for fp, doc in store.profile_docs():
        if isinstance(doc, str) and SP.is_shuffle_file(doc.encode("ascii", "replace")):
            prof = SP.loads(doc)
            if prof.fingerprint != fp:
                raise ZealError("database %s: the shuffle profile stored as %s has fingerprint "
                                "%s" % (store.path, str(fp)[:16], prof.fingerprint[:16]))
            out[fp] = prof
    return out


def messages(store, profile, include_vector: bool = False) -> list:
    """Every stored message (int) under `profile`, in arrival order."""
    out = []
    for row in store.frames(fingerprint=profile.fingerprint, vector=include_vector):
        count, payload = row[4], bytes(row[5])
        try:
            out.extend(int(v) for v in codec.unpack_reports(payload, count, profile.bits))
        except codec.FrameError as exc:
            raise ZealError("database %s: a frame under %s does not hold %d reports of %d bits "
                            "(%s)" % (store.path, profile.fingerprint[:16], count,
                                      profile.bits, exc)) from None
    return out


def _f(x):
    return None if x is None else float(x)


def report(profile, msgs) -> dict:
    """One shuffle profile's figures from its messages (module docstring)."""
    p = profile.params
    ana = S.Analyzer(p)
    hist = np.zeros((p.d, p.levels), dtype=np.int64)
    invalid = 0
    for m in msgs:
        try:
            c, y = S.decode_message(p, m)
        except S.ShuffleError:
            invalid += 1
            continue
        hist[c, y] += 1
    batch = len(msgs) - invalid
    readings = batch // p.t
    means = ana.estimate(hist)
    units = [None if m is None else Fraction(lo) + (Fraction(hi) - Fraction(lo)) * m
             for m, (lo, hi) in zip(means, profile.ranges)]
    got = S.delivered(p, batch) if batch >= 1 else None
    if readings >= p.n:
        guarantee = "configured"
    elif got is not None:
        guarantee = "weaker"
    else:
        guarantee = "none"
    at = None
    if readings >= 2:
        at = S.Params(epsilon=p.epsilon, delta=p.delta, n=readings, d=p.d, k=p.k, t=p.t,
                      gamma=p.gamma, regime=p.regime, epsilon_message=p.epsilon_message)
    return {
        "kind": "shuffle", "fingerprint": profile.fingerprint,
        "d": p.d, "levels": p.k, "t": p.t, "bits": profile.bits,
        "n_configured": p.n, "messages": batch, "readings": readings,
        "messages_configured": p.n * p.t, "invalid_messages": invalid,
        "gamma": float(p.gamma), "gamma_exact": "%d/%d" % (p.gamma.numerator,
                                                           p.gamma.denominator),
        "epsilon_configured": float(p.epsilon), "delta_configured": float(p.delta),
        "epsilon": None if got is None else float(got[0]),
        "delta": None if got is None else float(got[1]),
        "guarantee": guarantee,
        "pairs_per_coordinate": [int(v) for v in hist.sum(axis=1)],
        "mean01": [_f(m) for m in means],
        "mean": [_f(u) for u in units],
        "ranges": [list(r) for r in profile.ranges],
        "mse_bound": None if at is None else S.mse_bound_at_k(at)["total"],
        "mse_bound_paper": None if at is None else S.paper_mse_bound(at),
    }


def analyze_store(store, include_vector: bool = False) -> list:
    """The "shuffle" section: one `report` per stored shuffle profile with messages."""
    out = []
    for fp, prof in sorted(shuffle_profiles(store).items()):
        msgs = messages(store, prof, include_vector)
        if msgs:
            out.append(report(prof, msgs))
    return out


def _num(x, spec="%.6g"):
    return "n/a" if x is None else spec % x


def format_text(section: list) -> str:
    lines = []
    for r in section:
        lines.append("shuffle profile %s: d=%d coordinates, levels 0..%d, t=%d messages per "
                     "reading, %d bits per message" % (r["fingerprint"][:16], r["d"],
                                                       r["levels"], r["t"], r["bits"]))
        lines.append("  messages stored        %d = %d readings (configured batch n = %d "
                     "readings, %d messages; %d invalid messages ignored)"
                     % (r["messages"], r["readings"], r["n_configured"],
                        r["messages_configured"], r["invalid_messages"]))
        if r["guarantee"] == "configured":
            lines.append("  privacy (shuffled)     (epsilon, delta) = (%s, %s) per reading: the "
                         "configured guarantee (batch >= n t messages)"
                         % (_num(r["epsilon"]), _num(r["delta"])))
        elif r["guarantee"] == "weaker":
            lines.append("  privacy (shuffled)     (epsilon, delta) = (%s, %s) per reading ONLY: "
                         "the batch is smaller than n t = %d messages, the configured (%s, %s) "
                         "is NOT delivered"
                         % (_num(r["epsilon"]), _num(r["delta"]), r["messages_configured"],
                            _num(r["epsilon_configured"]), _num(r["delta_configured"])))
        else:
            lines.append("  privacy (shuffled)     NONE the privacy rule can certify: the batch "
                         "is far smaller than n t = %d messages" % r["messages_configured"])
        for c in range(r["d"]):
            lo, hi = r["ranges"][c]
            lines.append("  coordinate %-3d mean    %s (reading units; range [%g, %g]), %s in "
                         "[0, 1], %d pairs" % (c, _num(r["mean"][c], "%.6f"), lo, hi,
                                               _num(r["mean01"][c], "%.6f"),
                                               r["pairs_per_coordinate"][c]))
        lines.append("  MSE bound (at k=%d)     %s (normalised: squared error of the mean vector "
                     "in [0, 1]^d, at the batch stored; the paper's proof at the k used, plus "
                     "coordinate sampling)" % (r["levels"], _num(r["mse_bound"])))
        lines.append("  MSE bound (paper)      %s (the paper's closed form: holds at its own "
                     "optimised k, not at every k)" % _num(r["mse_bound_paper"]))
    return "\n".join(lines)


def holds_shuffle(store) -> bool:
    """True when the store holds a shuffle profile (then `zeal analyze` reports shuffle mode:
    a grid/table analysis cannot read a shuffle profile's messages)."""
    return any(isinstance(doc, str) and SP.is_shuffle_file(doc.encode("ascii", "replace"))
               for _fp, doc in store.profile_docs())


def analyze_doc(store, include_vector: bool = False) -> dict:
    """`zeal analyze`'s document for a store with shuffle profiles: {"shuffle": [...],
    "other_frames": frames under any other profile (not analysed here)}. ZealError when no
    shuffle message is stored."""
    section = analyze_store(store, include_vector)
    if not section:
        raise ZealError("no shuffle messages stored in %s" % store.path
                        + ("" if include_vector else " (test-mode frames not counted)"))
    mine = set(shuffle_profiles(store))
    other = sum(1 for row in store.frames(vector=include_vector) if row[3] not in mine)
    return {"shuffle": section, "other_frames": other}
