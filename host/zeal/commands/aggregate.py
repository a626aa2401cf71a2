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
    else:
        print("\n".join(text))
    return 0
