"""The shuffle profile's privacy rule, in integers only: the check a device can make exactly
(shared_spec/shuffle.md, "The privacy rule"; the device's twin is firmware/zealfw/sgamma.py,
the same steps line for line, and the vectors hold a file for every way it can fail).

A shuffle profile names (epsilon, delta) for n readings of d coordinates, k + 1 levels, t
messages a reading, a blanket probability gamma, and the certificate `message_epsilon`
(eps_m): the epsilon each message's shuffled pool gets. `refusal` returns None when the
stored numbers prove the claim, else a one-line reason:

  1. 0 < eps_m <= 1 and eps_m <= epsilon                       (Balle et al.'s range)
  2. gamma (n - 1) eps_m >= 27 D,  D = d (k + 1)                (the blanket, linear term)
  3. t >= 2: t eps_m <= epsilon (basic composition), or
             eps_m sqrt(2 t ln(2/delta)) + t eps_m (e^eps_m - 1) <= epsilon (advanced)
  4. gamma (n - 1) eps_m^2 >= 14 D ln(2/delta_m),  delta_m = delta (t = 1), delta/(2t) else

Logarithms never appear: "ln x <= a" is checked as "e^a >= x" with a proven LOWER bound of
e^a (`exp_at_least`), and e^eps_m - 1 is bounded ABOVE by its Taylor sum plus a tail bound
(`expm1_upper`). Every rounding makes the check stricter, never looser, so a profile that
passes satisfies the real inequalities. Rationals are (numerator, denominator) int pairs so
that the device (no fractions module) runs the same steps.
"""

E_LO = 11674931554    # floor(e * 2^32): e >= E_LO / 2^32
FRAC_BITS = 32        # the exponent is floored to a multiple of 2^-32
TERMS = 16            # Taylor terms: e^f >= sum_{i <= 16} f^i / i! for f >= 0


def exp_at_least(a_num, a_den, x_num, x_den):
    """True only if e^(a_num/a_den) >= x_num/x_den (a >= 0, x > 0), proven: with
    floor(a 2^32) = m 2^32 + f, e^a >= (E_LO/2^32)^m * sum_{i<=16} (f/2^32)^i / i!.
    False when that lower bound falls short (the true e^a may still be >= x, by < 1e-7
    relative: the rule is then stricter than the real inequality, the safe side)."""
    if x_num <= x_den:                    # x <= 1 <= e^a
        return True
    q = (a_num << FRAC_BITS) // a_den
    m = q >> FRAC_BITS
    f = q - (m << FRAC_BITS)
    # 2^m >= x, and e > 2 (keeps E_LO^m small; the first test keeps 2^m from being built
    # when m is huge: a gamma far above the minimum at a large n)
    if m >= x_num.bit_length() or x_num <= (x_den << m):
        return True
    # sum_{i=0}^{N} f^i / (2^(32 i) i!) = s / (2^(32 N) N!), s = sum f^i 2^(32 (N-i)) N!/i!
    s = 0
    coef = 1                              # N!/i!, from i = N down
    i = TERMS
    while i >= 0:
        s += (coef * f ** i) << (FRAC_BITS * (TERMS - i))
        coef *= i
        i -= 1
    fact = 1
    for j in range(2, TERMS + 1):
        fact *= j                         # N!
    return E_LO ** m * s * x_den >= (x_num * fact) << (FRAC_BITS * (m + TERMS))


def expm1_upper(e_num, e_den):
    """(num, den) >= e^e - 1 for 0 < e <= 1: sum_{i=1}^{N} e^i/i! + 3 e^(N+1)/(N+1)!
    (the Lagrange tail is e^xi e^(N+1)/(N+1)! with e^xi <= e < 3)."""
    n1 = TERMS + 1
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
    """Step 3: t messages, each (eps_m, delta_m)-DP in its pool, compose to (epsilon, delta)
    (t = 1: eps_m <= epsilon). Basic: t eps_m <= epsilon (t delta_m = delta/2 <= delta).
    Advanced (Dwork, Rothblum and Vadhan; delta' = delta/2, t delta_m + delta' = delta):
    epsilon - t eps_m (e^eps_m - 1) = R > 0 and ln(2/delta) <= R^2 / (2 t eps_m^2)."""
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
    """None when (epsilon, delta) is proven for the profile's numbers, else a one-line reason.
    eps, delta, eps_m, gamma: (num, den) pairs with den > 0 (exact values of the stored
    float64 patterns and of gamma_num/gamma_den); n, d, k, t ints (already range-checked).
    The steps run in this order: step 2 before 3 and 4 bounds eps_m below (so its powers
    stay small on a device)."""
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
