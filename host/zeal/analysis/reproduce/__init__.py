"""`zeal reproduce`: the Zeal paper's results regenerated, float64 sampler beside the exact one.

For both of the paper's data sets (the first 5000 Aarhus humidity readings on [23.5, 83.9]
%RH and the first 1000 Chicago taxi fares on [1, 120] USD, zeal.analysis.datasets) and the
paper's synthetic sets, every figure of the paper's "Results" (and its Abar and
floating-point sections) is computed twice: with the paper's float64 inverse-CDF sampler
(zeal.paper.sampler, parameter Abar) and with the product's exact integer mechanism
(zeal.mechanism, parameter m = bits per report, or the binade exponent E: Abar follows
from E in both, Thm 3.5). Figures are PNG; DIR/report.md puts the paper's headline claims
beside what is measured here.

Estimators. Float sampler: the paper's AVG* = mean(x*) - Abar, with the mean taken in float64
as the paper's code does ("paper's float64 mean"), and, to separate the sampler from the
aggregation, the exact mean of the same float64 reports ("exact mean"). Exact mechanism: the
calibrated mean (zeal.mechanism.grid.estimate), unbiased at every m; its exact variance comes from
zeal.mechanism.grid. Relative errors are against the exact mean of the readings clamped to
the feasible range (the mechanism's target; 4 taxi fares are 0.0 and are clamped to 1).

Figures (file names as the paper's):
- AbarTooBigError.png: delta_E(x1), delta_AVG and F against Abar (Hbar = 1000, h = 100,
  n = 1000 uniform readings, eps = 1), float sampler vs exact mechanism;
- probBoundOnErrorAVG.png: Bernstein bounds (Thms 3.3, 3.4) against the empirical
  P(|Delta_AVG| >= lambda), P(|delta_AVG| >= lambda) over repeated privatisations;
- percErrorOnAvgVaryingEps.png: mean |delta_AVG| against eps for several Abar (float) and
  several m (exact), with the exact mechanism's predicted value;
- CRandTR.png: compression ratio (GreedyGD and every codec of zeal.analysis.compress) and
  transmission ratio against |delta_AVG| and against Abar, eps = 1;
- holesInvCdf.png: float64 outputs reachable from one input and not from another
  (Hbar = 10, h = 5, eps = 1), counted exactly (see `holes`).

Randomness: numpy Generators seeded from `seed` (simulation only, never for devices).

Modules, in import order (each imports only those above it):
- `data`: the data sets (`Data`, `paper_datasets`), one privatisation by either sampler
  (`float_run`, `exact_run`) and its exact relative errors; `SEED`, `EPS`;
- `experiments`: the numbers of AbarTooBigError, probBoundOnErrorAVG, percErrorOnAvgVaryingEps
  and CRandTR (`abar_too_big`, `prob_bound`, `error_vs_eps`, `cr_tr`);
- `reachability`: holesInvCdf's exact reachability counts (`reachable`, `holes`);
- `figures`: the PNG files (`plot_*`);
- `report`: DIR/report.md (`headline`, `write_report`);
- `run`: the driver (`reproduce`, `cmd_reproduce`).
"""
# The names callers and tests use as zeal.analysis.reproduce.X, from where they now live
# (_segments and _offset_totals too, listed in __all__: the tests check them directly).
from .data import (EPS, SEED, TWO53, Data, _offset_totals, exact_mean, exact_run, exponents,
                   float_run, paper_datasets, rel_errors_exact, rel_errors_float)
from .experiments import abar_too_big, cr_tr, error_vs_eps, prob_bound
from .reachability import _segments, float_window, holes, reachable
from .figures import (plot_abar_too_big, plot_cr_tr, plot_error_vs_eps, plot_holes,
                      plot_prob_bound)
from .report import PAPER, headline, write_report
from .run import Progress, cmd_reproduce, reproduce

__all__ = ["EPS", "SEED", "TWO53", "PAPER", "Data", "Progress", "abar_too_big", "cmd_reproduce",
           "cr_tr", "error_vs_eps", "exact_mean", "exact_run", "exponents", "float_run",
           "float_window", "headline", "holes", "paper_datasets", "plot_abar_too_big",
           "plot_cr_tr", "plot_error_vs_eps", "plot_holes", "plot_prob_bound", "prob_bound",
           "reachable", "rel_errors_exact", "rel_errors_float", "reproduce", "write_report",
           "_offset_totals", "_segments"]
