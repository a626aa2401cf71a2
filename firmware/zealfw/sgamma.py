"""The shuffle profile's privacy rule on the device (shared_spec/shuffle.md, "The privacy
rule"; check #11, reason "privacy"): the twin of host/zeal/mechanism/shuffle/rule.py, the
same steps in the same order, the same integers and the same reason texts, so that a device
refuses exactly the shuffle profiles the host refuses.

`refusal(eps, delta, eps_m, n, d, k, t, gamma)` returns None when the stored numbers prove
(epsilon, delta), else the host's one-line reason:

  1. 0 < eps_m <= 1 and eps_m <= epsilon
  2. gamma (n - 1) eps_m >= 27 D,  D = d (k + 1)
  3. t >= 2: t eps_m <= epsilon (basic composition), or advanced composition with
     R = epsilon - t eps_m U > 0 (U >= e^eps_m - 1) and e^(R^2 / (2 t eps_m^2)) >= 2/delta
  4. e^(gamma (n - 1) eps_m^2 / (14 D)) >= 2/delta_m,  delta_m = delta (t = 1), delta/(2t)

Rationals are (num, den) pairs, den > 0: eps, delta and eps_m the exact values of the
profile's float64 patterns (zealfw.pfile.f64), gamma = (gamma_num, gamma_den). No
logarithm, no float: e^a >= x is decided with a proven lower bound of e^a
(`exp_at_least`), e^e - 1 bounded above by a Taylor sum and its tail (`expm1_upper`).

Cost: run once, while the profile is loaded (zealfw.sprofile imports this module at the end
of its checks; zealfw.mstart frees it before the Sender is made). Step 2 runs before 3 and 4 and
bounds eps_m below (eps_m > 27 D / 2^63), so the powers in steps 3-4 stay within a few
thousand bits. Two places differ from the host's code, never in the answer: 2^m >= x is
decided without forming x_den 2^m once m reaches the bit length of x_num (m can reach 2^58);
and E_LO^m (33.5 m bits: 4.5 KB at m = 1081, for delta = 2^-1074) is first bounded between
two numbers of _PREC bits times 2^e, which settle the comparison unless it is a tie within
~2^-120, when the exact E_LO^m decides. On the unix port the rule takes 40 us to 1 ms, and
the smallest heap that loads a file grows by 0 to 6 KB with it (the advanced composition's
fractions; delta = 2^-1074 adds 2 KB), tests/test_shuffle_device.py. Integers only (the
AST float ban covers this module); no int.bit_length (missing on the unix port).
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner and the tests run here too
    def const(x):
        return x

_E_LO = const(11674931554)   # floor(e 2^32): e >= E_LO / 2^32
_FRAC_BITS = const(32)       # the exponent is floored to a multiple of 2^-32
_TERMS = const(16)           # Taylor terms: e^f >= sum_{i <= 16} f^i / i! for f >= 0
_PREC = 128                  # bits of the bounds of E_LO^m (a global: a test narrows it)


def _bits(v):
    # the bit length of v >= 0 (int.bit_length is missing on the unix port)
    b = 0
    while v >> (b + 64):
        b += 64
    while v >> b:
        b += 1
    return b


def _trim(lo, hi, e):
    # (lo, hi, e) with lo 2^e <= X <= hi 2^e, hi cut to _PREC bits: lo rounded down, hi up
    k = _bits(hi) - _PREC
    if k > 0:
        lo >>= k
        hi = ((hi - 1) >> k) + 1
        e += k
    return lo, hi, e


def _pow_bounds(m):
    """(lo, hi, e) with lo 2^e <= E_LO^m <= hi 2^e and hi of at most _PREC bits: E_LO^m by
    squaring and multiplying, every product's bounds rounded outwards, so both stay small
    (E_LO^m itself has 33.5 m bits: 4.5 KB at m = 1081)."""
    lo = hi = 1
    e = 0
    b_lo = b_hi = _E_LO
    b_e = 0
    while m:
        if m & 1:
            lo, hi, e = _trim(lo * b_lo, hi * b_hi, e + b_e)
        m >>= 1
        if m:
            b_lo, b_hi, b_e = _trim(b_lo * b_lo, b_hi * b_hi, 2 * b_e)
    return lo, hi, e


def _ge(a, b, sh):
    # a >= b 2^sh, any integer sh
    if sh >= 0:
        return a >= b << sh
    return a << -sh >= b


def exp_at_least(a_num, a_den, x_num, x_den):
    """True only if e^(a_num/a_den) >= x_num/x_den (a >= 0, x > 0): with
    floor(a 2^32) = m 2^32 + f, e^a >= (E_LO/2^32)^m sum_{i<=16} (f/2^32)^i / i!."""
    if x_num <= x_den:                    # x <= 1 <= e^a
        return True
    q = (a_num << _FRAC_BITS) // a_den
    m = q >> _FRAC_BITS
    f = q - (m << _FRAC_BITS)
    # 2^m >= x, and e > 2 (keeps E_LO^m small). The host's test is x_num <= x_den 2^m; from
    # m >= bit_length(x_num) on that holds (x_den >= 1), and it is decided without making
    # x_den 2^m: at n near 2^63 m reaches 2^58, a shift no heap could hold.
    if m >= _bits(x_num) or x_num <= (x_den << m):
        return True
    # sum_{i=0}^{N} f^i / (2^(32 i) i!) = s / (2^(32 N) N!), s = sum f^i 2^(32 (N-i)) N!/i!
    s = 0
    coef = 1                              # N!/i!, from i = N down
    i = _TERMS
    while i >= 0:
        s += (coef * f ** i) << (_FRAC_BITS * (_TERMS - i))
        coef *= i
        i -= 1
    fact = 1
    for j in range(2, _TERMS + 1):
        fact *= j                         # N!
    # The host's test, E_LO^m s x_den >= x_num N! 2^(32 (m + N)), decided first with
    # bounds lo 2^e <= E_LO^m <= hi 2^e of _PREC bits: when lo already passes or hi already
    # fails, the exact test gives the same answer; only a tie within ~2^-120 needs E_LO^m
    # in full (up to 4.5 KB, and its products: 64 KB did not hold them beside the loader).
    r = x_num * fact
    sh = _FRAC_BITS * (m + _TERMS)
    lo, hi, e = _pow_bounds(m)
    if _ge(lo * s * x_den, r, sh - e):
        return True
    if not _ge(hi * s * x_den, r, sh - e):
        return False
    return _E_LO ** m * s * x_den >= r << sh


def expm1_upper(e_num, e_den):
    """(num, den) >= e^e - 1 for 0 < e <= 1: sum_{i=1}^{N} e^i/i! + 3 e^(N+1)/(N+1)!."""
    n1 = _TERMS + 1
    fact = 1
    for j in range(2, n1 + 1):
        fact *= j                         # (N+1)!
    num = 3 * e_num ** n1
    coef = fact                           # (N+1)!/i!, from i = 1
    for i in range(1, n1):
        coef //= i
        num += coef * e_num ** i * e_den ** (n1 - i)
    return num, fact * e_den ** n1


def composes(eps, delta, eps_m, t):
    """Step 3: t messages of eps_m compose to (epsilon, delta), basic or advanced
    (t = 1: eps_m <= epsilon)."""
    e_n, e_d = eps
    l_n, l_d = delta
    m_n, m_d = eps_m
    if t * m_n * e_d <= e_n * m_d:
        return True
    if t == 1:
        return False
    u_n, u_d = expm1_upper(m_n, m_d)
    r_n = e_n * m_d * u_d - t * m_n * u_n * e_d
    r_d = e_d * m_d * u_d
    return r_n > 0 and exp_at_least(r_n * r_n * m_d * m_d, 2 * t * m_n * m_n * r_d * r_d,
                                    2 * l_d, l_n)


def blanket_linear(eps_m, n, d, k, gamma):
    """Step 2: gamma (n - 1) eps_m >= 27 d (k + 1)."""
    return gamma[0] * (n - 1) * eps_m[0] >= 27 * d * (k + 1) * gamma[1] * eps_m[1]


def blanket_square(delta, eps_m, n, d, k, t, gamma):
    """Step 4: gamma (n - 1) eps_m^2 >= 14 d (k + 1) ln(2/delta_m), as e^A >= 2/delta_m."""
    l_n, l_d = delta
    m_n, m_d = eps_m
    x_num = 2 * l_d * (1 if t == 1 else 2 * t)
    return exp_at_least(gamma[0] * (n - 1) * m_n * m_n, 14 * d * (k + 1) * gamma[1] * m_d * m_d,
                        x_num, l_n)


def refusal(eps, delta, eps_m, n, d, k, t, gamma):
    """None when (epsilon, delta) is proven for the profile's numbers, else the host's
    one-line reason (shuffle_rule.refusal, word for word). n, d, k, t already range-checked
    (zealfw.sprofile's value checks)."""
    if eps_m[0] <= 0 or eps_m[0] > eps_m[1]:
        return "message_epsilon must be in (0, 1] (the blanket theorem's range)"
    if eps_m[0] * eps[1] > eps[0] * eps_m[1]:
        return "message_epsilon is above epsilon"
    if not blanket_linear(eps_m, n, d, k, gamma):
        return "gamma (n - 1) message_epsilon is below 27 d (levels + 1)"
    if not composes(eps, delta, eps_m, t):
        return ("%d messages of message_epsilon do not compose to epsilon (basic or advanced "
                "composition)" % t)
    if not blanket_square(delta, eps_m, n, d, k, t, gamma):
        return "gamma is below what (epsilon, delta, n, d, levels, t) need"
    return None
