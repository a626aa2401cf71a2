"""The driver: every figure's numbers, the PNG files and the report, with progress lines
(`zeal reproduce`)."""
import os
import sys
import time

from ...errors import ZealError
from .data import SEED, paper_datasets
from .experiments import abar_too_big, cr_tr, error_vs_eps, prob_bound
from .figures import (plot_abar_too_big, plot_cr_tr, plot_error_vs_eps, plot_holes,
                      plot_prob_bound)
from .reachability import holes
from .report import headline, write_report


class Progress:
    """Progress lines on stderr ('zeal reproduce: ...'), with the elapsed time."""

    def __init__(self, stream=None, quiet=False):
        self.stream, self.quiet, self.t0 = stream, quiet, time.monotonic()

    def __call__(self, msg):
        if not self.quiet:
            print("zeal reproduce: [%5.1fs] %s" % (time.monotonic() - self.t0, msg),
                  file=self.stream or sys.stderr, flush=True)


def reproduce(out_dir, quick=False, seed=SEED, stream=None, quiet=False) -> dict:
    """Compute every figure, write DIR/*.png and DIR/report.md; return the numbers."""
    from ..plots import require_matplotlib

    require_matplotlib("zeal reproduce and its figures")  # before minutes of work, not after
    log = Progress(stream, quiet)
    t0 = time.monotonic()
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise ZealError("cannot create %s: %s" % (out_dir, exc.strerror or exc)) from None
    data = paper_datasets()
    for d in data:
        log("data: %s, n = %d, %d below / %d above [%g, %g]" % (d.name, d.n, d.below, d.above,
                                                                d.lo, d.hi))
    res = {"data": data}
    res["abar"] = abar_too_big(quick, seed, log)
    res["prob"] = [prob_bound(d, quick, seed, log) for d in data]
    res["eps"] = [error_vs_eps(d, quick, seed, log) for d in data]
    res["holes"] = holes(quick, log)
    res["cr"] = [cr_tr(d, quick, seed, log) for d in data]   # last: needs the codec registry
    for c in res["cr"]:
        c["headline"] = headline(c)
    figs = [plot_abar_too_big(res["abar"], os.path.join(out_dir, "AbarTooBigError.png")),
            plot_prob_bound(res["prob"], os.path.join(out_dir, "probBoundOnErrorAVG.png")),
            plot_error_vs_eps(res["eps"], os.path.join(out_dir, "percErrorOnAvgVaryingEps.png")),
            plot_cr_tr(res["cr"], os.path.join(out_dir, "CRandTR.png")),
            plot_holes(res["holes"], os.path.join(out_dir, "holesInvCdf.png"))]
    log("figures: %s" % ", ".join(os.path.basename(f) for f in figs))
    report = write_report(os.path.join(out_dir, "report.md"), res, quick,
                          time.monotonic() - t0)
    log("report: %s" % report)
    res["files"] = figs + [report]
    return res


def cmd_reproduce(args) -> int:
    res = reproduce(args.out, quick=args.quick, seed=args.seed)
    for f in res["files"]:
        print(f)
    return 0
