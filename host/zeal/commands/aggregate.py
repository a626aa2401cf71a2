"""`zeal aggregate`: the mean from `zeal perturb`'s reports."""
import json

from .common import ZealError, lines
from ..errors import ReportError


def add(sub):
    p = sub.add_parser("aggregate", help="estimate the mean from perturbed reports",
                       description="Estimate the mean from `zeal perturb` output (any "
                                   "--format).")
    p.add_argument("--profile", required=True, metavar="FILE",
                   help="the profile the reports were made under")
    p.add_argument("--input", metavar="FILE",
                   help="reports file, one a line ('-' or default: stdin)")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.add_argument("--paper", action="store_true",
                   help="also print the Zeal paper's estimator (AVG*), exact and summed in "
                        "float64 as the paper does (default: off; the JSON always has it)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..mechanism import kinds

    prof = kinds.load(args.profile)
    try:
        doc, text = kinds.of(prof).aggregate(prof, lines(args.input))
    except ReportError as exc:
        if str(exc) == "no reports to aggregate" or str(exc).startswith("cannot aggregate"):
            raise ZealError(str(exc)) from None
        raise
    if args.json:  # an interval past float64 is null (JSON has no inf)
        print(json.dumps(doc, indent=1, allow_nan=False))
    else:  # the paper's quantities ("paper: ..." lines) only when asked
        print("\n".join(t for t in text if args.paper or not t.startswith("paper: ")))
    return 0
