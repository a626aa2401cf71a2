"""`zeal profile --shuffle`: write a shuffle profile ("zeal-shuffle/2", shared_spec/shuffle.md).

    zeal profile --shuffle --dims 3 --n 5000 --epsilon 0.99 --delta 1e-6 \\
                 --ranges -1 99.92 23.5 83.9 -41 37.45 [--levels 3] [--t 1] [-o FILE] [--json]

`--ranges` takes 2d numbers (LO HI per coordinate, in order) or one LO HI for every
coordinate (`--range LO HI` says the same); `--dims` may be left out when 2d numbers are given.
The figures: the profile's fingerprint, d, levels, t, the configured batch n, the stored
epsilon and delta (float64 rounded down from the typed values), the message epsilon, gamma
exact ("num/den") and as float64, how the t messages compose, bits per message, the MSE
bounds at n (at the k used and the paper's closed form, normalised: squared error of the
mean vector in [0, 1]^d), and the guarantee the profile is configured for: (epsilon, delta)
for a shuffled batch of at least n t messages (n readings, t messages each), never per
report. A parameter set with no gamma < 1 is one `zeal:` line naming the smallest n that has
one (shuffle.smallest_n).

`wants_shuffle(args)` / `cmd_profile_shuffle(args)` and `demo_wants_shuffle(args)` are what
`zeal profile` and `zeal demo` call (zeal.commands.profile and .demo hold their options).
"""
import json
import sys
from fractions import Fraction

from ..errors import ProfileError, ZealError
from ..mechanism.shuffle import mechanism as S
from ..mechanism.shuffle import profile as SP

DEFAULT_LEVELS = 3   # the paper's finding: k = 3 (levels 0..3) minimises the MSE
DEFAULT_T = 1        # ... and t = 1 message (coordinate) per reading
_SHUFFLE_ONLY = ("dims", "levels", "t", "n", "delta", "ranges")


def demo_wants_shuffle(args) -> bool:
    """True for `zeal demo --shuffle`; --delta or --t without it is a ZealError."""
    if getattr(args, "shuffle", False):
        return True
    for opt in ("delta", "t"):
        if getattr(args, opt, None) is not None:
            raise ZealError("--%s needs --shuffle" % opt)
    return False


def wants_shuffle(args) -> bool:
    """True for `zeal profile --shuffle`; a shuffle-only option without it is a ZealError."""
    if getattr(args, "shuffle", False):
        return True
    given = [o for o in _SHUFFLE_ONLY if getattr(args, o, None) is not None]
    if given:
        raise ZealError("%s need%s --shuffle" % (", ".join("--" + o for o in given),
                                                  "s" if len(given) == 1 else ""))
    return False


def _ranges(args, d):
    vals = args.ranges
    if vals is None and args.range is not None:
        vals = list(args.range)
    if vals is None:
        raise ZealError("--shuffle needs each coordinate's reading range: --ranges LO HI "
                        "[LO HI ...] (or one LO HI for all)")
    if len(vals) % 2:
        raise ZealError("--ranges takes pairs LO HI: %d numbers given" % len(vals))
    if args.ranges is not None and args.range is not None:
        raise ZealError("give --ranges or --range, not both")
    pairs = [(vals[i], vals[i + 1]) for i in range(0, len(vals), 2)]
    if d is None:
        d = len(pairs)
    if len(pairs) == 1:
        pairs = pairs * d
    if len(pairs) != d:
        raise ZealError("--ranges gives %d ranges for --dims %d: give one LO HI for all, or "
                        "one per coordinate" % (len(pairs), d))
    return d, pairs


def _not_for_shuffle(args):
    bad = []
    if getattr(args, "attributes", False):
        bad.append("--attributes")
    if getattr(args, "multi_specs", None) or getattr(args, "k", None) is not None:
        bad.append("--attribute/--categorical/--k")
    if getattr(args, "mechanism", "grid") != "grid":
        bad.append("--mechanism")
    if getattr(args, "bits", "auto") != "auto" or getattr(args, "exponent", None) is not None:
        bad.append("--bits/--exponent")
    for opt in ("cal_gain", "cal_offset", "objective", "data", "column"):
        if getattr(args, opt, None) is not None:
            bad.append("--" + opt.replace("_", "-"))
    if bad:
        raise ZealError("%s do%s not apply to a shuffle profile (--shuffle)"
                        % (", ".join(bad), "es" if len(bad) == 1 else ""))


def build(args):
    """The ShuffleProfile of `zeal profile --shuffle`'s arguments (ZealError, one line)."""
    _not_for_shuffle(args)
    if args.n is None:
        raise ZealError("--shuffle needs --n N, the batch the guarantee is configured for")
    if args.delta is None:
        raise ZealError("--shuffle needs --delta DELTA (the guarantee's delta, in (0, 1))")
    d = args.dims
    if d is not None and not 1 <= d <= SP.D_MAX:
        raise ZealError("--dims must be 1 to %d, got %d" % (SP.D_MAX, d))
    d, ranges = _ranges(args, d)
    if not 1 <= d <= SP.D_MAX:
        raise ZealError("a shuffle profile holds 1 to %d coordinates, --ranges gives %d"
                        % (SP.D_MAX, d))
    k = DEFAULT_LEVELS if args.levels is None else args.levels
    t = DEFAULT_T if args.t is None else args.t
    if not 1 <= k <= SP.LEVELS_MAX:
        raise ZealError("--levels must be 1 to %d, got %d" % (SP.LEVELS_MAX, k))
    if not 1 <= t <= d:
        raise ZealError("--t must be 1 to d = %d, got %d" % (d, t))
    if args.n < 2:
        raise ZealError("--n must be at least 2, got %d" % args.n)
    eps = SP.float_at_most(args.epsilon, "epsilon")
    dlt = SP.float_at_most(args.delta, "delta")
    try:
        return SP.build_from(epsilon=eps, delta=dlt, n=args.n, d=d, k=k, t=t, ranges=ranges)
    except ProfileError as exc:
        msg = str(exc)
        if msg.startswith("no blanket probability"):
            low = S.smallest_n(Fraction(eps), Fraction(dlt), d, k, t)
            if low is not None:
                msg = msg.split(":")[0] + ": the smallest n with one is %d" % low
        raise ZealError(msg) from None


def figures(prof) -> dict:
    """What `zeal profile --shuffle` prints (module docstring)."""
    p = prof.params
    at = S.mse_bound_at_k(p)
    return {
        "format": SP.FORMAT, "fingerprint": prof.fingerprint, "d": prof.d,
        "levels": prof.levels, "t": prof.t, "n": prof.n,
        "epsilon": prof.epsilon, "delta": prof.delta,
        "gamma": float(prof.gamma), "gamma_exact": "%d/%d" % (prof.gamma_num, prof.gamma_den),
        "gamma_formula": p.regime, "epsilon_formula": float(p.epsilon_formula),
        "message_epsilon": prof.message_epsilon, "messages_per_reading": prof.t,
        "batch_messages": prof.n * prof.t,
        "bits_per_message": prof.bits,
        "ranges": [list(r) for r in prof.ranges],
        "mse_bound": at["total"], "mse_bound_paper": S.paper_mse_bound(p),
        "guarantee": {"epsilon": prof.epsilon, "delta": prof.delta, "batch_at_least": prof.n,
                      "batch_messages_at_least": prof.n * prof.t,
                      "unit": "one reading (all d coordinates of one vector)",
                      "holds_for": "a shuffled batch of at least n t messages (n readings, t "
                                   "one-pair messages each; the shuffle model), for every t; "
                                   "a smaller batch gets a weaker guarantee or none, and no "
                                   "single report is epsilon-LDP by itself"},
    }


_UNITS = {"d": "coordinates", "levels": "(levels 0..K)", "t": "messages per reading",
          "n": "readings (configured batch)", "bits_per_message": "bits per message",
          "messages_per_reading": "messages (one coordinate each)",
          "batch_messages": "messages (configured batch: n t)",
          "message_epsilon": "(each message's epsilon in its shuffled pool)",
          "epsilon_formula": "(the blanket theorem's epsilon: the message's)",
          "gamma_formula": "(how the t messages compose)",
          "mse_bound": "(normalised: squared error of the mean vector in [0, 1]^d, at n, at "
                       "the k used)",
          "mse_bound_paper": "(normalised; the paper's closed form, at its own optimised k)",
          "gamma": "(blanket probability)"}


def cmd_profile_shuffle(args) -> int:
    prof = build(args)
    doc = figures(prof)
    if args.output == "-" and args.json:
        raise ZealError("-o - writes the profile to stdout, where --json would print too: "
                        "give -o FILE, or drop --json")
    if args.output:
        text = prof.to_json()
        if args.output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            try:
                with open(args.output, "w", encoding="ascii") as out:
                    out.write(text)
            except OSError as exc:
                raise ZealError("cannot write %s: %s" % (args.output,
                                                         exc.strerror or exc)) from None
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    shown = sys.stderr if args.output == "-" else sys.stdout
    for key, value in doc.items():
        if key in ("guarantee", "ranges"):
            continue
        unit = _UNITS.get(key, "")
        print("%-18s %s%s" % (key, "%.6g" % value if isinstance(value, float) else value,
                              " " + unit if unit else ""), file=shown)
    for c, (lo, hi) in enumerate(prof.ranges):
        print("range %-12d [%g, %g] (reading unit of coordinate %d)" % (c, lo, hi, c),
              file=shown)
    g = doc["guarantee"]
    print("guarantee          (epsilon, delta) = (%g, %g) per reading, for a shuffled batch "
          "of at least n t = %d messages (n = %d readings, t = %d messages each); a smaller "
          "batch gets a weaker guarantee or none"
          % (g["epsilon"], g["delta"], g["batch_messages_at_least"], prof.n, prof.t),
          file=shown)
    if args.output and args.output != "-":
        print("written to %s" % args.output)
    return 0
