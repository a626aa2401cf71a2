"""The floor: a proven lower bound on the worst-case variance of ANY unbiased eps-LDP mechanism
for a mean on [-1, 1] (the proof sketch: shared_spec/floor.md).

On J inputs x_1 < ... < x_J of [-1, 1] a mechanism is, for the argument, only its output laws
at those inputs. Split every output by its likelihood vector (P(y | x_1), ..., P(y | x_J)):
eps-LDP puts that vector in the cone {v >= 0 : v_i <= E v_k}, whose extreme rays are the
patterns s in {1, E}^J (E = e^eps), so every output is a sum of pieces with pattern
likelihoods; giving all pieces of one pattern their conditional mean as one output keeps the
mechanism unbiased and private and does not raise any variance (Jensen). So the minimax
variance over the J inputs is that of a mechanism whose outputs are the patterns: output s
with weight w_s >= 0 (P(s | x_i) = s_i w_s) and value y_s, which with z_s = w_s y_s is the
convex program

    minimise V  subject to  sum_s s_i w_s = 1,  sum_s s_i z_s = x_i,
                            sum_s s_i z_s^2 / w_s - x_i^2 <= V      (every i),

a second-order cone program (z_s^2 / w_s <= u_s is a rotated cone). A mechanism on [-1, 1]
restricted to the J inputs is feasible for it, and its worst case on [-1, 1] is at least its
worst case on the J inputs: the program's optimum is a floor for every mechanism. The solver
(Clarabel, an interior-point conic solver) returns the optimum with a dual certificate; the
floor reported is the DUAL objective, which any feasible dual point bounds from below (up to
the solver's tolerance, 1e-8 relative here).

The patterns come in mirror pairs (s reversed on inputs placed symmetrically) and the
program is symmetric, so nothing is lost by solving it as it stands; its size is 2^J - 1
patterns: J = 13 (8,191 patterns) solves in about a second, J = 15 in several.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import ZealError

DEFAULT_INPUTS = 13   # J: equally spaced inputs on [-1, 1], both ends included


@dataclass
class Floor:
    epsilon: float
    inputs: int          # J
    value: float         # the dual objective: the floor on [-1, 1]
    primal: float        # the primal objective (the floor plus the solver's gap)
    seconds: float

    def on_range(self, lo: float, hi: float) -> float:
        """The floor for readings on [lo, hi] (the variance scales by ((hi - lo)/2)^2)."""
        return self.value * ((hi - lo) / 2) ** 2


def _clarabel():
    try:
        import clarabel
        from scipy import sparse
    except ImportError:
        raise ZealError("the floor needs clarabel and scipy: pip install 'zeal-mcu[design]'") \
            from None
    return clarabel, sparse


def patterns(j: int, big: float) -> np.ndarray:
    """The likelihood patterns {1, E}^J but all-E (the same ray as all-ones): rows."""
    rows = np.array(list(itertools.product((1.0, big), repeat=j)))
    return rows[:-1]


def floor(epsilon, inputs: int = DEFAULT_INPUTS) -> Floor:
    """The floor at `epsilon` from `inputs` equally spaced inputs (module doc); solved once
    per process for each (epsilon, J)."""
    eps = float(epsilon)
    if not (math.isfinite(eps) and 0 < eps <= 20):
        raise ZealError("epsilon must be in (0, 20], got %r" % epsilon)
    if isinstance(inputs, bool) or not isinstance(inputs, int) or not 2 <= inputs <= 17:
        raise ZealError("the floor's inputs J must be 2 to 17, got %r" % (inputs,))
    return _solve(eps, inputs)


@functools.lru_cache(maxsize=32)
def _solve(eps: float, inputs: int) -> Floor:
    import time

    clarabel, sparse = _clarabel()
    started = time.perf_counter()
    big = math.exp(eps)
    xs = np.linspace(-1.0, 1.0, inputs)
    s = patterns(inputs, big)              # K x J
    k, j = s.shape
    st = sparse.csc_matrix(s.T)            # J x K
    zero_jk = sparse.csc_matrix((j, k))
    # variables: [V, w (K), z (K), u (K)]
    ncol = 1 + 3 * k
    col_v = sparse.csc_matrix((j, 1))
    eq = sparse.vstack([
        sparse.hstack([col_v, st, zero_jk, zero_jk]),          # sum s_i w_s = 1
        sparse.hstack([col_v, zero_jk, st, zero_jk]),          # sum s_i z_s = x_i
    ])
    b_eq = np.concatenate([np.ones(j), xs])
    # sum_s s_i u_s - V <= x_i^2
    var = sparse.hstack([sparse.csc_matrix(-np.ones((j, 1))), zero_jk, zero_jk, st])
    b_var = xs * xs
    # w >= 0
    eye = sparse.identity(k, format="csc")
    zk = sparse.csc_matrix((k, k))
    nonneg_w = sparse.hstack([sparse.csc_matrix((k, 1)), -eye, zk, zk])
    # rotated cones, as second-order cones (u + w, 2 z, u - w), one of dimension 3 per pattern
    rows, cols, vals = [], [], []
    for idx in range(k):
        w_col, z_col, u_col = 1 + idx, 1 + k + idx, 1 + 2 * k + idx
        r = 3 * idx
        rows += [r, r, r + 1, r + 2, r + 2]
        cols += [u_col, w_col, z_col, u_col, w_col]
        vals += [-1.0, -1.0, -2.0, -1.0, 1.0]
    soc = sparse.csc_matrix((vals, (rows, cols)), shape=(3 * k, ncol))
    a = sparse.vstack([eq, var, nonneg_w, soc]).tocsc()
    b = np.concatenate([b_eq, b_var, np.zeros(k), np.zeros(3 * k)])
    q = np.zeros(ncol)
    q[0] = 1.0
    p = sparse.csc_matrix((ncol, ncol))
    cones = [clarabel.ZeroConeT(2 * j), clarabel.NonnegativeConeT(j + k)] + \
        [clarabel.SecondOrderConeT(3)] * k
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = 1e-10
    settings.tol_gap_rel = 1e-9
    settings.tol_feas = 1e-10
    sol = clarabel.DefaultSolver(p, q, a, b, cones, settings).solve()
    status = str(sol.status)
    if "Solved" not in status:
        raise ZealError("the floor's conic program at epsilon %g, J = %d: %s"
                        % (eps, inputs, status))
    return Floor(eps, inputs, float(sol.obj_val_dual), float(sol.obj_val),
                 time.perf_counter() - started)
