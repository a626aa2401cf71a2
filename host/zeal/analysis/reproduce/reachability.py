"""Fig. holesInvCdf: which float64 outputs of the paper's sampler each input can reach,
decided exactly over all 2^53 uniforms, against the exact mechanism's grid (no holes)."""
import math
from fractions import Fraction

import numpy as np

from ...mechanism.grid import exact as mgrid
from ...mechanism.grid.profile import from_bits, from_exponent
from ...paper import formulas as pf
from .data import EPS, TWO53, exponents


def _segments(lo, hi, eps, abar, x):
    """The inverse CDF of zeal.paper.sampler split into its three monotone pieces, with the
    k-ranges (u = k 2^-53) on which inverse_cdf uses each. Same float64 operations, same
    order as `inverse_cdf`, so piece(k) == inverse_cdf(k 2^-53) bit for bit on its range."""
    hb, h = pf.hbar(lo, hi), pf.half_width(lo, hi)
    c, p = pf.c_const(lo, hi, eps), pf.p_level(lo, hi, eps)
    q = p / math.exp(eps)
    x_min, x_max = hb - c + abar, hb + c + abar
    left = (c + h) / 2 * ((x - hb) / h) - (c - h) / 2 + hb + abar
    right = left + c - h
    f_left = q * (left - x_min)
    f_right = f_left + p * (right - left)

    def first_k(f):  # smallest k with k 2^-53 >= f (u < f  <=>  k < f 2^53, exact product)
        return min(TWO53, max(0, math.ceil(Fraction(f) * TWO53)))

    k1, k2 = first_k(f_left), first_k(f_right)
    k2 = max(k1, k2)

    def clip(y):
        return np.clip(y, x_min, x_max)

    pieces = [
        (0, k1 - 1, lambda u: clip(x_min + u / q)),
        (k1, k2 - 1, lambda u: clip(left + (u - f_left) / p)),
        (k2, TWO53 - 1, lambda u: clip(right + (u - f_right) / q)),
    ]
    return [(a, b, f) for a, b, f in pieces if a <= b], (x_min, x_max)


def reachable(lo, hi, eps, abar, x, ys: np.ndarray) -> np.ndarray:
    """For each float64 in ys: can CDF^-1(u) for the input x equal it, for some u among the
    2^53 values numpy's random() produces (k 2^-53, k = 0..2^53-1)? Decided exactly: each
    piece is a composition of correctly rounded monotone operations, hence non-decreasing in
    k; bisection finds the smallest k of the piece with piece(k) >= y, and y is reachable iff
    that value equals y. No sampling, no tolerance."""
    ys = np.asarray(ys, dtype=np.float64)
    hit = np.zeros(ys.shape, dtype=bool)
    for a, b, f in _segments(lo, hi, eps, abar, x)[0]:
        lo_k = np.full(ys.shape, a, dtype=np.int64)
        hi_k = np.full(ys.shape, b + 1, dtype=np.int64)   # answer in [a, b + 1]
        while True:
            open_ = lo_k < hi_k
            if not open_.any():
                break
            mid = (lo_k + hi_k) // 2
            val = f(mid.astype(np.float64) * 2.0 ** -53)
            go_right = open_ & (val < ys)
            lo_k = np.where(go_right, mid + 1, lo_k)
            hi_k = np.where(open_ & ~go_right, mid, hi_k)
        inside = lo_k <= b
        k = np.minimum(lo_k, b)
        hit |= inside & (f(k.astype(np.float64) * 2.0 ** -53) == ys)
    return hit


def float_window(center: float, count: int) -> np.ndarray:
    """`count` consecutive float64 values starting near `center`, ascending, one sign."""
    c = np.float64(center)
    bits = np.abs(c).view(np.int64)
    if c >= 0:
        start = max(bits - count // 2, 0)
        return (start + np.arange(count, dtype=np.int64)).view(np.float64)
    start = bits + count // 2
    return -((start - np.arange(count, dtype=np.int64)).view(np.float64))


def holes(quick=False, log=lambda m: None) -> dict:
    """Exact counts of float64 outputs reachable from one input and not from the other.

    What is counted: for inputs xa = lo and xb = hi (the two that differ most), for each Abar,
    every float64 in a set of windows of W consecutive float64 values is tested by
    `reachable` (exact, over all 2^53 uniforms). The windows: around 9 evenly spaced points
    of [x*_min, x*_max] and around each input's breakpoints L(x), R(x). Counts are exact
    within the windows; they are not extrapolated to the whole range (that holds ~2^62 floats
    when Abar = 0). Exact mechanism: every offset j of the grid has P(j | x) >= P_lo > 0 for
    every x (zeal.mechanism.grid.exact), so the count is 0 on the whole grid; it is also counted
    cell by cell from the exact distributions on a small grid (m = 8).
    """
    lo, hi, eps = 5.0, 15.0, EPS
    w = 1024 if quick else 8192
    e_enc, e_vul, e_max = exponents(lo, hi, eps)
    xa, xb = lo, hi
    cases = [("Abar = 0", 0.0, None), ("E = E_vul = %d" % e_vul, pf.abar(lo, hi, eps, e_vul),
                                       e_vul),
             ("E = E_vul + 4 = %d" % (e_vul + 4), pf.abar(lo, hi, eps, e_vul + 4), e_vul + 4)]
    out = []
    for label, ab, e in cases:
        (pa, (x_min, x_max)) = _segments(lo, hi, eps, ab, xa)
        centers = list(np.linspace(x_min, x_max, 11)[1:-1])
        for x in (xa, xb):
            segs = _segments(lo, hi, eps, ab, x)[0]
            for a, _, f in segs[1:]:
                centers.append(float(f(np.float64(a) * 2.0 ** -53)))
        totals = {"floats": 0, "a": 0, "b": 0, "a_not_b": 0, "b_not_a": 0}
        zoom = None
        for i, cen in enumerate(centers):
            ys = float_window(cen, w)
            ys = ys[(ys >= x_min) & (ys <= x_max)]
            ra = reachable(lo, hi, eps, ab, xa, ys)
            rb = reachable(lo, hi, eps, ab, xb, ys)
            totals["floats"] += ys.size
            totals["a"] += int(ra.sum())
            totals["b"] += int(rb.sum())
            totals["a_not_b"] += int((ra & ~rb).sum())
            totals["b_not_a"] += int((rb & ~ra).sum())
            if zoom is None or (int((ra ^ rb).sum()) > zoom[3] and i >= 9):
                zoom = (ys[:64], ra[:64], rb[:64], int((ra ^ rb).sum()))
        out.append({"label": label, "abar": ab, "E": e, "windows": len(centers), "W": w,
                    "counts": totals, "zoom": zoom, "x_min": x_min, "x_max": x_max})
        log("holesInvCdf: %s: %d of %d floats differ" % (label, totals["a_not_b"]
                                                         + totals["b_not_a"], totals["floats"]))
    # exact mechanism: cell by cell on m = 8, and P_lo > 0 on the profile at E_vul
    prof = from_bits(lo, hi, eps, 8)
    g = mgrid.ExactGrid(prof)
    da, db = g.distribution(Fraction(xa)), g.distribution(Fraction(xb))
    a_not_b = sum(1 for j in range(g.n) if da[j] > 0 and db[j] == 0)
    b_not_a = sum(1 for j in range(g.n) if db[j] > 0 and da[j] == 0)
    big = mgrid.ExactGrid(from_exponent(lo, hi, eps, e_vul))
    exact = {"m": prof.bits, "cells": g.n, "a_not_b": a_not_b, "b_not_a": b_not_a,
             "p_lo_positive": bool(g.p_lo > 0 and big.p_lo > 0),
             "cells_at_E_vul": big.n, "ratio": float(g.privacy_ratio)}
    # Thm 4.1's condition ULP(u) * (e^eps / p) <= ULP(x*) at each E, with its margin
    slope = math.exp(eps) / pf.p_level(lo, hi, eps)
    return {"lo": lo, "hi": hi, "eps": eps, "xa": xa, "xb": xb, "cases": out, "exact": exact,
            "e_enc": e_enc, "e_vul": e_vul, "thm41_margin": {
                e: (2.0 ** (e - 52)) / (2.0 ** -53 * slope) for e in (e_vul, e_vul + 4)}}
