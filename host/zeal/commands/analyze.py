"""`zeal analyze`: estimates, losses and wire cost from a store or an archive."""


def add(sub):
    p = sub.add_parser("analyze", help="estimates, losses and wire cost from a "
                              "collector database",
                              description="Decode the stored reports and print, per device "
                              "and overall, the calibrated mean with its 99% interval, the "
                              "wire cost and the losses the collector recorded.")
    p.add_argument("--db", metavar="FILE|URL", help="the collector's database: an SQLite "
                   "file or a postgresql:// URL (opened read-only)")
    p.add_argument("--archive", metavar="ARCHIVE", help="an archive made by `zeal compress`, "
                   "instead of --db: the same figures as on its database; of a store written "
                   "as volumes, any volume (every volume of the set is read from beside it, "
                   "one at a time)")
    p.add_argument("--paper", action="store_true",
                   help="also print the Zeal paper's AVG* (the mean of the perturbed doubles "
                        "minus the public bias) and transmission ratio (default: off; the "
                        "JSON always has them)")
    p.add_argument("--plots", metavar="DIR", help="also write PNG plots here "
                   "(needs matplotlib: pip install 'zeal-mcu[plots]')")
    p.add_argument("--unit", metavar="TEXT", help="the readings' unit, for the plots' axes "
                   "(e.g. %%RH; default: none, the axes say it is not recorded)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--include-vector", action="store_true",
                   help="count test-mode (vector) frames too (never real data)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.analyze import cmd_analyze

    return cmd_analyze(args)
