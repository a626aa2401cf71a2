"""The group size k, from n and eps alone (never from the points: that would leak).

Both rules simulate the mechanism on public synthetic data -- n equally spaced values of the
unit interval, the seed's "equally-spaced" set -- with Laplace noise (float noise is fine
here: no private value is involved), averaging the normalised error over `runs` seeded runs:
- "model" (the seed's section 5): Err(k) ~ Gen(k) + Err_1(n/k points, eps k), the
  generalisation error taken as k / (4 n) and the noise term the error of the ungrouped
  mechanism on n/k points at k times the budget;
- "direct": the whole mechanism at each k, its error measured.
`auto` takes the direct search's k. The candidates are 1..n on a log-spaced grid of 48.
"""
import math
from functools import lru_cache

RUNS = 8


def _candidates(n):
    import numpy as np
    top = max(1, min(n, 4000))
    return sorted({int(round(x)) for x in np.geomspace(1, top, 48)})


def _iso(y, w):
    from scipy.optimize import isotonic_regression
    return isotonic_regression(y, weights=w, increasing=True).x


def _direct_error(n, eps, k, runs, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n)
    sizes = np.array([k] * (n // k) + ([n % k] if n % k else []), dtype=float)
    edges = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    sums = np.add.reduceat(x, edges[:-1])
    err = 0.0
    for _ in range(runs):
        noisy = (sums + rng.laplace(0.0, 1.0 / eps, sizes.size)) / sizes
        fit = np.clip(_iso(noisy, sizes), 0.0, 1.0)
        err += float(np.mean(np.abs(np.repeat(fit, sizes.astype(int)) - x)))
    return err / runs


def _model_error(n, eps, k, runs, seed):
    m = max(1, math.ceil(n / k))
    return k / (4 * n) + _direct_error(m, eps * k, 1, runs, seed)


@lru_cache(maxsize=64)
def table(n: int, eps: float, runs: int = RUNS, seed: int = 3) -> list:
    """[(k, model error, direct error)] over the candidates."""
    return [(k, _model_error(n, eps, k, runs, seed), _direct_error(n, eps, k, runs, seed))
            for k in _candidates(n)]


def choose(n: int, eps: float, rule: str = "direct", runs: int = RUNS) -> int:
    """The k of the smallest simulated error under `rule` ("direct" or "model")."""
    rows = table(int(n), float(eps), runs)
    col = 2 if rule == "direct" else 1
    return min(rows, key=lambda r: (r[col], r[0]))[0]
