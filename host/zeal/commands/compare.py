"""`zeal compare`: every mechanism on one range and epsilon."""


def add(sub):
    p = sub.add_parser(
        "compare", help="compare every mechanism: worst and mean variance, bits per report",
        description="One table of every mechanism on the same range and epsilon: the float "
                    "references of the literature (Laplace, SCDF, Staircase, Duchi, PM, HM, "
                    "PM-SUB, PTT, PM-OPT, Three-Outputs, HM-TP, N-output, HM-NP, as "
                    "published), today's window grid (runs on the device), the exact tables "
                    "(Duchi, PM, PM-SUB, HM, the LP on Three-Outputs' and N-output's "
                    "structures, and the designer's optimal, as device-ready table "
                    "profiles), and the floor: no unbiased epsilon-LDP mechanism has a "
                    "smaller worst case (every row's x floor: its worst case over it). "
                    "Variances are of one report's estimate, in the reading's unit squared. "
                    "Progress goes to stderr.")
    p.add_argument("--range", nargs=2, required=True, metavar=("LO", "HI"),
                   help="reading range, in the reading's unit (exact decimals)")
    p.add_argument("--epsilon", required=True, metavar="EPS",
                   help="privacy budget per reading, in (0, 20], an exact decimal or p/q")
    p.add_argument("--bits", metavar="M",
                   help="bits per report: the window grid's m (1..52), the tables' cells "
                        "(at most 2^M, searched up to 32) and optimal's (at most 8); "
                        "default: the grid's 'auto' choice, 4 for tables and optimal")
    p.add_argument("--data", metavar="FILE",
                   help="readings, one decimal per line ('#' comments allowed), for the "
                        "mean variance and the entropy; default: none (those columns n/a)")
    p.add_argument("--column", metavar="NAME",
                   help="read --data as a CSV file with a header and take this column")
    p.add_argument("--floor-inputs", type=int, default=13, metavar="J",
                   help="the floor's conic program on J equally spaced inputs, 2 to 17: "
                        "the larger, the higher (truer) the floor and the longer it takes "
                        "(J = 13: about 10 s; each input more doubles it); 0: no floor "
                        "(default %(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print the rows as a JSON list instead of the table (each row's "
                        "keys: mechanism, kind, worst_variance, floor (the floor's worst "
                        "variance), above_floor, ...; the floor's row is named floor)")
    p.add_argument("--plot", metavar="FILE",
                   help="also write a PNG of the worst variance per mechanism (needs "
                        "matplotlib)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.compare import cmd_compare

    return cmd_compare(args)
