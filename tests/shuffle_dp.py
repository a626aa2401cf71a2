"""Exact privacy arithmetic for the shuffle mode's claim (tests/test_shuffle_privacy.py,
issue 17; shared_spec/shuffle.md, "The guarantee").

Everything that decides a pass or a fail is an int or a Fraction. Where a transcendental
number enters (e^eps, a logarithm, (1 - q)^N for N = 10^7) it is replaced by a rational
bound on the side that keeps the conclusion safe, and the docstring of each function says
which side. Nothing here is random.

Written for the tests, independently of the product's own arithmetic (mechanism/shuffle/rule.py's
EXP_GE, shuffle.py's ln_bounds): a bug in those should not be able to hide itself here.

Contents
- rational bounds: `round_down` / `round_up`, `exp_bounds`, `ln_bounds`, `pow_bounds`,
  `binomial_tail_upper`;
- the blanket view of one message pool (part A): `blanket_delta` (exact, O(n^2) integer
  operations), `blanket_view_brute` (the same view enumerated from the mechanism's
  definition, for tiny n and D), `round_brute` (the real pool's released histogram, tiny);
- composition: `composes`;
- the linked-message construction of issue 17 (part B): `count_delta_bounds`.
"""
from fractions import Fraction
from math import comb

BITS = 256        # significant bits kept by the directed roundings
EXP_TERMS = 40    # Taylor terms of e^y, y <= 1/2: remainder < 2 (1/2)^41 / 41! < 1e-61
LN_TERMS = 60     # atanh series terms, u <= 1/3: remainder < 3^-121


# ---- directed rounding and elementary bounds ----------------------------------------------------
def round_down(x, bits=BITS) -> Fraction:
    """The largest dyadic with `bits` significant bits that is <= x (x >= 0)."""
    x = Fraction(x)
    if x < 0:
        raise ValueError("round_down takes x >= 0")
    if x == 0:
        return x
    num, den = x.numerator, x.denominator
    shift = bits - (num.bit_length() - den.bit_length())
    if shift >= 0:
        return Fraction((num << shift) // den, 1 << shift)
    return Fraction((num // (den << -shift)) << -shift)


def round_up(x, bits=BITS) -> Fraction:
    """The smallest dyadic with about `bits` significant bits that is >= x (x >= 0)."""
    x = Fraction(x)
    if x < 0:
        raise ValueError("round_up takes x >= 0")
    if x == 0:
        return x
    num, den = x.numerator, x.denominator
    shift = bits - (num.bit_length() - den.bit_length())
    if shift >= 0:
        return Fraction(-((-(num << shift)) // den), 1 << shift)
    return Fraction((-((-num) // (den << -shift))) << -shift)


def exp_bounds(x, bits=BITS):
    """(lo, hi), rationals with lo <= e^x <= hi, for any rational x.

    x >= 0: y = x / 2^r <= 1/2; the Taylor sum T = sum_{i <= 40} y^i / i! is <= e^y (every
    term >= 0) and e^y <= T + 2 y^41 / 41! (Lagrange: e^xi <= e^(1/2) < 2); then r squarings,
    each rounded down (lo) or up (hi), which keeps the sides since all are >= 0.
    x < 0: e^x = 1 / e^(-x), the sides swapped. x = 0 gives (1, 1) exactly."""
    x = Fraction(x)
    if x < 0:
        lo, hi = exp_bounds(-x, bits)
        return round_down(1 / hi, bits), round_up(1 / lo, bits)
    r = 0
    while x > Fraction(1 << r, 2):
        r += 1
    y = x / (1 << r)
    total, term = Fraction(0), Fraction(1)
    for i in range(EXP_TERMS + 1):
        total += term
        term = term * y / (i + 1)            # ends as y^41 / 41!
    lo, hi = round_down(total, bits), round_up(total + 2 * term, bits)
    for _ in range(r):
        lo, hi = round_down(lo * lo, bits), round_up(hi * hi, bits)
    return lo, hi


def _atanh_bounds(u: Fraction):
    """(lo, hi) around atanh(u) for 0 <= u <= 1/3: the series sum_i u^(2i+1)/(2i+1) has
    positive terms (its partial sum is below) and a tail after 60 terms of at most
    u^121 / (121 (1 - u^2)) (above)."""
    lo, p, u2 = Fraction(0), u, u * u
    for i in range(LN_TERMS):
        lo += p / (2 * i + 1)
        p *= u2
    hi = lo + p / ((2 * LN_TERMS + 1) * (1 - u2))
    return round_down(lo), round_up(hi)


def ln_bounds(z):
    """(lo, hi), rationals with lo <= ln z <= hi, for a rational z >= 1: z = 2^m w with
    1 <= w < 2, ln z = m ln 2 + ln w, ln v = 2 atanh((v - 1)/(v + 1)) (ln 2 at u = 1/3,
    ln w at u = (w - 1)/(w + 1) < 1/3)."""
    z = Fraction(z)
    if z < 1:
        raise ValueError("ln_bounds takes z >= 1")
    m = z.numerator.bit_length() - z.denominator.bit_length()
    if Fraction(2) ** m > z:
        m -= 1                               # now 2^m <= z < 2^(m+1), m >= 0
    w = z / Fraction(2) ** m
    l2_lo, l2_hi = _atanh_bounds(Fraction(1, 3))
    lw_lo, lw_hi = _atanh_bounds(round_down((w - 1) / (w + 1))), \
        _atanh_bounds(round_up((w - 1) / (w + 1)))
    return round_down(2 * (m * l2_lo + lw_lo[0])), round_up(2 * (m * l2_hi + lw_hi[1]))


def ln_lower(z) -> Fraction:
    """A rational <= ln z (z >= 1)."""
    return ln_bounds(z)[0]


def pow_bounds(base, e: int, bits=BITS):
    """(lo, hi) around base^e for a rational 0 <= base and an int e >= 0: binary powering with
    every product rounded down (lo) or up (hi). N = 10^7 costs 24 squarings."""
    base = Fraction(base)
    lo = hi = Fraction(1)
    blo, bhi = round_down(base, bits), round_up(base, bits)
    while e:
        if e & 1:
            lo, hi = round_down(lo * blo, bits), round_up(hi * bhi, bits)
        e >>= 1
        if e:
            blo, bhi = round_down(blo * blo, bits), round_up(bhi * bhi, bits)
    return lo, hi


def binomial_pmf(m: int, q) -> list:
    """Exact pmf of Binomial(m, q) (small m)."""
    q = Fraction(q)
    return [comb(m, i) * q ** i * (1 - q) ** (m - i) for i in range(m + 1)]


def binomial_tail_upper(n: int, q, m: int) -> Fraction:
    """An upper bound of P(Binomial(n, q) >= m) (Chernoff): for z >= 1,
    P(A >= m) <= E[z^A] / z^m = (1 - q + q z)^n z^-m <= exp(n q (z - 1) - m ln z); at
    z = m / (n q) with ln z bounded BELOW and e^x bounded ABOVE. 1 when m <= n q."""
    q = Fraction(q)
    lam = n * q
    if m <= 0 or m <= lam:
        return Fraction(1)
    if q == 0:
        return Fraction(0)
    z = Fraction(m) / lam
    return min(Fraction(1), exp_bounds(lam * (z - 1) - m * ln_lower(z))[1])


# ---- part A: the blanket view of one message pool ------------------------------------------------
def blanket_delta(n: int, D: int, gamma, E) -> Fraction:
    """delta of the blanket view at the ratio E, exactly:

        sum over views H of max(0, P(H | a) - E P(H | b)),

    for D-ary randomised response with blanket probability gamma (with probability gamma the
    message is uniform on the D values, else it is the input), n users, the target user's
    input a or b (a != b), the adversary knowing the other n - 1 inputs and which of the
    others were blanket. With E = e^eps it is the view's delta(eps); with E a rational LOWER
    bound of e^eps it is an UPPER bound of delta(eps) (the sum decreases in E).

    Why it bounds the real pool. The others' non-blanket messages are known values: the
    adversary removes them, and what is left is H, the histogram of the blanket messages of
    the others plus the target's message. The released histogram is H plus those known
    values (a function of the view), so its delta is at most the view's. The set of blanket
    others is independent of the data and enters P(H | .) only through its size, which H
    itself reveals (s - 1 = |H| - 1), so the view's delta is that of H.

    Derivation of P(H | a). Let B ~ Binomial(n - 1, gamma) be the number of blanket others
    and s = |H| = B + 1. Given B = s - 1, the blanket messages are s - 1 independent uniform
    values, so their histogram G has probability multinomial(s - 1; G) D^-(s-1). The
    target's message is v with probability (1 - gamma)[v = a] + gamma / D, and H = G + e_v.
    Summing over v, with multinomial(s - 1; H - e_v) = multinomial(s; H) h_v / s:

        P(H | a) = P(B = s-1) D^-(s-1) multinomial(s; H) / s
                   * sum_v h_v ((1 - gamma)[v = a] + gamma / D)
                 = C(H) ((1 - gamma) h_a + gamma s / D),
        C(H)     = P(B = s-1) D^-(s-1) multinomial(s; H) / s,  the same for a and b.

    So delta = sum_H C(H) max(0, (1-gamma)(h_a - E h_b) - gamma s (E - 1) / D), which depends
    on H only through (s, h_a, h_b); grouping the other D - 2 values,
    sum over H with given (s, h_a, h_b) of multinomial(s; H) = C(s, h_b) C(s - h_b, h_a)
    (D - 2)^(s - h_a - h_b).

    Cost. With gamma = G/Q, E = Ep/Eq, multiply the bracket by D Q Eq:
    X = alpha h_a - beta, alpha = D (Q-G) Eq, beta = D (Q-G) Ep h_b + G s (Ep - Eq), positive
    exactly for h_a >= h0 = floor(beta / alpha) + 1. The sum over h_a is analytic: with
    W_m(h) = sum_{h' >= h} C(m, h') (D - 2)^(m - h') (m = s - h_b),
    sum_{h >= h0} C(m, h) (D-2)^(m-h) (alpha h - beta) = alpha m W_{m-1}(h0 - 1) - beta W_m(h0)
    (h C(m, h) = m C(m-1, h-1)), and the rows obey W_m(h) = W_{m-1}(h-1) + (D-2) W_{m-1}(h).
    So O(n^2) integer operations in all, one division at the end. beta grows with h_b, so the
    loop over h_b stops at the first h0 > m. When D (Q-G) Eq <= G (Ep - Eq), X <= 0 for every
    H (h_a <= s) and delta is 0 at once."""
    gamma, E = Fraction(gamma), Fraction(E)
    if not (0 <= gamma <= 1 and E >= 1 and n >= 1 and D >= 2):
        raise ValueError("blanket_delta needs 0 <= gamma <= 1, E >= 1, n >= 1, D >= 2")
    G, Q = gamma.numerator, gamma.denominator
    Ep, Eq = E.numerator, E.denominator
    alpha = D * (Q - G) * Eq
    if alpha <= G * (Ep - Eq):
        return Fraction(0)
    inner = [0] * (n + 1)                   # inner[s] = sum_{h_a, h_b} weight * X_+
    prev = None                             # W_{m-1}
    for m in range(n + 1):
        if m == 0:
            row = [1, 0]
        else:
            row = [0] * (m + 2)
            row[0] = prev[0] * (D - 1)      # W_m(0) = (D - 1)^m
            for h in range(1, m + 1):
                row[h] = prev[h - 1] + (D - 2) * prev[h]
        c_sj = 1                            # C(s, h_b) = C(m + j, j)
        for j in range(n - m + 1):          # j = h_b, s = m + j
            s = m + j
            if j:
                c_sj = c_sj * s // j
            if s == 0:
                continue
            beta = D * (Q - G) * Ep * j + G * s * (Ep - Eq)
            h0 = beta // alpha + 1          # beta > 0 here, so h0 >= 1
            if h0 > m:
                break
            inner[s] += c_sj * (alpha * m * prev[h0 - 1] - beta * row[h0])
        prev = row
    # delta = sum_s P(B = s-1) D^-(s-1) inner[s] / (s D Q Eq), and C(n-1, s-1)/s = C(n, s)/n
    total = 0
    for s in range(1, n + 1):
        if inner[s]:
            total += comb(n, s) * G ** (s - 1) * (Q - G) ** (n - s) * D ** (n - s) * inner[s]
    return Fraction(total, n * D * Q * Eq * Q ** (n - 1) * D ** (n - 1))


def _convolve(dist: dict, outcomes: list) -> dict:
    """dist: {histogram tuple: probability}; outcomes: [(probability, index or None)]."""
    out = {}
    for hist, p in dist.items():
        for q, v in outcomes:
            if v is None:
                key = hist
            else:
                key = hist[:v] + (hist[v] + 1,) + hist[v + 1:]
            out[key] = out.get(key, 0) + p * q
    return out


def blanket_view_brute(n: int, D: int, gamma, target: int) -> dict:
    """The blanket view's distribution straight from the mechanism (no formula): each of the
    n - 1 others adds nothing to the view (not blanket: the adversary removes its known
    message) with probability 1 - gamma, or a uniform value v with probability gamma / D;
    the target's message is its input with probability 1 - gamma, else uniform.
    {histogram over the D values: probability}. Tiny n and D only ((D+1)^n-ish work)."""
    g = Fraction(gamma)
    dist = {(0,) * D: Fraction(1)}
    other = [(1 - g, None)] + [(g / D, v) for v in range(D)]
    for _ in range(n - 1):
        dist = _convolve(dist, other)
    mine = [((1 - g) * (v == target) + g / D, v) for v in range(D)]
    return _convolve(dist, mine)


def round_brute(n: int, D: int, gamma, target: int, others: list) -> dict:
    """One pool's RELEASED histogram (what the shuffled round shows), exactly: the n - 1
    others with known inputs `others`, each sending its input with probability 1 - gamma,
    else a uniform value; the target likewise with input `target`."""
    g = Fraction(gamma)
    dist = {(0,) * D: Fraction(1)}
    for z in others + [target]:
        dist = _convolve(dist, [((1 - g) * (v == z) + g / D, v) for v in range(D)])
    return dist


def hockey_stick(pa: dict, pb: dict, E) -> Fraction:
    """sum_x max(0, pa(x) - E pb(x)) over the union of the supports."""
    E = Fraction(E)
    keys = set(pa) | set(pb)
    return sum((max(Fraction(0), pa.get(x, 0) - E * pb.get(x, 0)) for x in keys), Fraction(0))


def total_variation(pa: dict, pb: dict) -> Fraction:
    keys = set(pa) | set(pb)
    return sum((abs(pa.get(x, 0) - pb.get(x, 0)) for x in keys), Fraction(0)) / 2


# ---- composition -------------------------------------------------------------------------
def composes(eps, delta, eps_m, delta_m, t: int):
    """'basic' or 'advanced' when t mechanisms, each (eps_m, delta_m)-DP and run on
    independent coins, compose to (eps, delta), proven with exact rationals; else None.

    basic:    t eps_m <= eps and t delta_m <= delta.
    advanced (Dwork, Rothblum and Vadhan; Dwork and Roth Thm 3.20): with
              delta'' = delta - t delta_m > 0, eps_m sqrt(2 t ln(1/delta'')) +
              t eps_m (e^eps_m - 1) <= eps, checked as R = eps - t eps_m (e^eps_m - 1)_UP > 0
              and e^(R^2 / (2 t eps_m^2)) bounded BELOW >= 1 / delta''."""
    eps, delta, eps_m, delta_m = (Fraction(x) for x in (eps, delta, eps_m, delta_m))
    if t * eps_m <= eps and t * delta_m <= delta:
        return "basic"
    rest = delta - t * delta_m
    if t < 2 or rest <= 0:
        return None
    r = eps - t * eps_m * (exp_bounds(eps_m)[1] - 1)
    if r > 0 and exp_bounds(r * r / (2 * t * eps_m * eps_m))[0] >= 1 / rest:
        return "advanced"
    return None


# ---- part B: the count statistic of issue 17 ------------------------------------------------
def count_delta_bounds(n: int, M: int, q0, q1, eps, cap: int = 20000):
    """(lo, hi, info): lo <= sum_j max(0, P1(j) - e^eps P0(j)) <= hi, where

        P0 = law of X0 = A + Binomial(M, q0),  P1 = law of X1 = A + Binomial(M, q1),
        A ~ Binomial(N', q0), N' = M (n - 1),

    the count of released messages "whose levels are all k" when n - 1 readings are all-0
    and the last is all-0 (P0) or all-1 (P1), each reading sending M messages of g linked
    pairs: q0 = (gamma/K)^g (every pair blanket at level k), q1 = (1 - gamma + gamma/K)^g.
    That sum is the delta(eps) of the count, a post-processing of the release, so `lo` is a
    rigorous LOWER bound of the release's delta(eps) (and `hi` of the count's own).

    Method, exact but for the stated roundings. P_b(j) = a(j) R_b(j) with a the pmf of A and
    R_b(j) = sum_i f_b(i) a(j - i)/a(j), f_b the pmf of Binomial(M, q_b), and
    a(j - i)/a(j) = prod_{l < i} (j - l)/(N' - j + l + 1) ((1 - q0)/q0)^i: an exact rational.
    R1/R0 is nondecreasing in j (f1/f0 increases in i as q1 >= q0, and the weights
    f0(i) a(j-i)/a(j) shift towards larger i as j grows: each factor of the product grows
    with j), so {j : R1(j) > E R0(j)} = {j >= j*(E)}, found by bisection (and the window is
    checked to be monotone). Then with E_lo <= e^eps <= E_hi (exp_bounds):
      lo = sum_{j*(E_hi) <= j <= J} a_lo(j) (R1(j) - E_hi R0(j))       (terms dropped are >= 0)
      hi = sum_{j*(E_lo) <= j <= J} a_hi(j) (R1(j) - E_lo R0(j)) + P(A >= J + 1 - M)
    (beyond J, P1(j) - e^eps P0(j) <= P1(j) and X1 <= A + M), a_lo/a_hi from
    (1 - q0)^N' by `pow_bounds` and the ratio a(j+1)/a(j) = (N'-j)/(j+1) q0/(1-q0), each
    step rounded outwards, the tail by `binomial_tail_upper`. When j*(E_lo) is beyond `cap`
    (summing the pmf from 0 up to there would cost too much), no window is summed: lo = 0,
    still a lower bound, and hi = P(A >= j*(E_lo) - M) >= P1(X1 >= j*(E_lo)), still an upper
    bound (every j < j*(E_lo) has P1(j) <= e^eps P0(j))."""
    q0, q1, eps = Fraction(q0), Fraction(q1), Fraction(eps)
    if not (0 < q0 < 1 and q0 <= q1 <= 1 and M >= 1 and n >= 2):
        raise ValueError("count_delta_bounds needs 0 < q0 < 1, q0 <= q1 <= 1")
    Np = M * (n - 1)
    e_lo, e_hi = exp_bounds(eps)
    f0, f1 = binomial_pmf(M, q0), binomial_pmf(M, q1)
    c = (1 - q0) / q0

    def ratios(j):
        rho, r0, r1 = Fraction(1), f0[0], f1[0]
        for i in range(1, M + 1):
            rho = rho * max(j - i + 1, 0) / (Np - j + i) * c
            r0 += f0[i] * rho
            r1 += f1[i] * rho
        return r0, r1

    def first_positive(E):
        """min j in [0, Np] with R1(j) > E R0(j) (monotone), or Np + 1."""
        def pos(j):
            r0, r1 = ratios(j)
            return r1 > E * r0
        if pos(0):
            return 0
        lo, hi = 0, 1                       # not pos(lo); grow hi until pos(hi) or past Np
        while not pos(hi):
            if hi >= Np:
                return Np + 1
            lo, hi = hi, min(2 * hi, Np)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pos(mid):
                hi = mid
            else:
                lo = mid
        return hi

    j_lo, j_hi = first_positive(e_lo), first_positive(e_hi)   # j_lo <= j_hi
    lam = Np * q0
    info = {"j_star": j_lo, "mean_A": lam}
    if j_lo > cap:
        return Fraction(0), binomial_tail_upper(Np, q0, j_lo - M), dict(info, window=None)
    # window end: well past the mean and past j*
    sd = int(float(lam) ** 0.5) + 1
    J = min(Np, max(j_hi, int(lam) + 40 * sd + 60) + 60)
    a_lo, a_hi = pow_bounds(1 - q0, Np)
    step = q0 / (1 - q0)
    lo = hi = Fraction(0)
    last = None
    for j in range(J + 1):
        if j >= j_lo:
            r0, r1 = ratios(j)
            if r0 > 0:
                ratio = r1 / r0
                if last is not None and ratio < last:
                    raise AssertionError("R1/R0 not monotone at j=%d" % j)
                last = ratio
            hi += a_hi * round_up(r1 - e_lo * r0)
            if j >= j_hi:
                lo += a_lo * round_down(r1 - e_hi * r0)
            lo, hi = round_down(lo), round_up(hi)
        a_lo = round_down(a_lo * (Np - j) / (j + 1) * step)
        a_hi = round_up(a_hi * (Np - j) / (j + 1) * step)
    tail = binomial_tail_upper(Np, q0, J + 1 - M)
    return lo, hi + tail, dict(info, window=(j_lo, J), tail=tail)
