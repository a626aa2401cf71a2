"""`zeal reproduce`: the Zeal paper's figures and a report."""

# zeal.analysis.reproduce.SEED, kept here so that building the parser imports no analysis
# (tests/test_cli_fast.py checks the two agree)
SEED = 20240611


def add(sub):
    p = sub.add_parser(
        "reproduce", help="regenerate the Zeal paper's figures and a report (float64 sampler "
                          "beside the exact mechanism)",
        description="Writes AbarTooBigError.png, probBoundOnErrorAVG.png, "
                    "percErrorOnAvgVaryingEps.png, CRandTR.png, holesInvCdf.png and report.md "
                    "(the paper's headline claims beside the measured figures) into DIR, for "
                    "the Aarhus humidity and Chicago taxi data sets. Progress on stderr; the "
                    "files written on stdout. Needs matplotlib.")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--quick", action="store_true",
                   help="fewer runs and sweep points (under a minute); default: the full run")
    p.add_argument("--seed", type=int, default=SEED, help="seed of the simulation's numpy "
                   "generators (default: %(default)s)")
    p.add_argument("--location", action="store_true",
                   help="instead: seed 003's location publishing (Table 1, Table 2, the error "
                        "against k, the densities, range-count error by square size against "
                        "the histogram and a Haar-wavelet baseline, the median against smooth "
                        "sensitivity) into DIR/report_location.md and PNGs; needs the locate "
                        "extra")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.location:
        import sys
        import time

        from ..analysis.locate.reproduce import run as run_location
        from ..mechanism.locate.hilbert import need

        need()
        t0 = time.monotonic()

        def log(msg):
            print("zeal reproduce: [%5.1fs] %s" % (time.monotonic() - t0, msg),
                  file=sys.stderr, flush=True)
        for f in run_location(args.out, quick=args.quick, seed=args.seed, log=log):
            print(f)
        return 0
    from ..analysis.reproduce import cmd_reproduce

    return cmd_reproduce(args)
