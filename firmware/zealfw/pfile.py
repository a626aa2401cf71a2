"""The profile file, device side: what both loaders share (zealfw.profile for the grid,
"zeal-profile/1"; zealfw.tprofile for tables, "zeal-table/1"): the file grammar of
shared_spec/profile.md, the string and hex checks, exact calibration rationals, the float64
pattern decode, the certified lower bound of e^eps, and the bounded read of the file.

A module of its own so that a table profile is loaded without the grid's checks in memory
(zealfw.main loads zealfw.profile, and for a table frees it before zealfw.tprofile); the
grid loader re-exports these names, so `zealfw.profile.parse_rational` etc. still work.
Integers only (the AST float ban covers this module).
"""
try:
    from micropython import const
except ImportError:  # CPython: the conformance runner also runs there
    def const(x):
        return x

_MAX_RATIONAL = const(64)     # characters in cal_gain / cal_offset
_MAX_EXP10 = const(64)        # |e| in a decimal like "1e-3"
_TAYLOR_BITS = const(128)     # stop once the next term is below 2^-128 of the sum
_ENOENT = const(2)


class ProfileError(ValueError):
    """A profile that must not be used. `reason` is one of the codes in the module doc."""

    def __init__(self, reason, msg=None):
        super().__init__(msg or reason)
        self.reason = reason


# ---- exact helpers ---------------------------------------------------------------------------
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def bit_length(n):
    # int.bit_length is missing on the unix port
    m = 0
    while n >> m:
        m += 1
    return m


def f64(text):
    """The exact value of a canonical "0x" + 16 hex digit float64 pattern as a reduced
    (num, den), den a power of two; ProfileError("value") for NaN and infinities. (The
    decode of zealfw.mechanism, repeated here so that loading a profile does not import the
    sampling path.)"""
    bits = int(text[2:], 16)
    e = (bits >> 52) & 0x7FF
    f = bits & ((1 << 52) - 1)
    if e == 0x7FF:
        raise ProfileError("value", "lo, hi and epsilon must be finite")
    if e:
        f |= 1 << 52
    else:
        e = 1  # subnormal (or zero): the scale of the smallest normal
    if bits >> 63:
        f = -f
    e -= 1075
    if e >= 0:
        return f << e, 1
    d = 1 << -e
    while d > 1 and not f & 1:  # reduced: drop common factors of two
        f >>= 1
        d >>= 1
    return f, d


def _digits(s):
    if not s or not s.isdigit():
        raise ProfileError("value", "not an exact decimal or p/q")
    return int(s)


def parse_rational(text):
    """An exact rational from "p/q", "-40", "0.01", "1.5e-3" as reduced (num, den), den > 0.

    Accepts what the host's fractions.Fraction accepts, minus whitespace and underscores
    (those never occur in a canonical profile and are refused by the character check).
    """
    if len(text) > _MAX_RATIONAL:
        raise ProfileError("value", "calibration string too long")
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    slash = s.find("/")
    if slash >= 0:
        num = _digits(s[:slash])
        den = _digits(s[slash + 1:])
        if den == 0:
            raise ProfileError("value", "zero denominator")
    else:
        exp = 0
        cut = s.find("e")
        if cut < 0:
            cut = s.find("E")
        if cut >= 0:
            tail = s[cut + 1:]
            sign = 1
            if tail and tail[0] in "+-":
                sign = -1 if tail[0] == "-" else 1
                tail = tail[1:]
            exp = sign * _digits(tail)
            if exp > _MAX_EXP10 or exp < -_MAX_EXP10:
                raise ProfileError("value", "decimal exponent out of range")
            s = s[:cut]
        dot = s.find(".")
        if dot >= 0:
            whole = s[:dot]
            frac = s[dot + 1:]
        else:
            whole = s
            frac = ""
        if not whole and not frac:
            raise ProfileError("value", "not an exact decimal or p/q")
        num = _digits(whole + frac)
        den = 10 ** len(frac)
        if exp >= 0:
            num *= 10 ** exp
        else:
            den *= 10 ** -exp
    g = _gcd(num, den)
    num //= g
    den //= g
    return (-num if neg else num), den


def rational_text(n, d):
    """str(fractions.Fraction(n, d)) for a reduced pair: "p/q", or "p" when q == 1."""
    if d == 1:
        return "%d" % n
    return "%d/%d" % (n, d)


# (parameter names are kept in .mpy and interned for good: the loader's are short and shared)
def exp_lower_bound(a, b):
    """(S, D) with S/D <= e^(a/b) (epsilon = a/b): the Taylor partial sum of
    shared_spec/mechanism.md §2, stopping once the next term is below 2^-128 of the sum
    (identical to the host's)."""
    s = 1      # the sum so far is S/D, D = b^k * k!
    d = 1
    pw = 1     # a^k: the next term is pw / (D * b * k)
    k = 0
    while True:
        k += 1
        pw *= a
        f = b * k
        if (pw << _TAYLOR_BITS) < s * f:
            return s, d
        s = s * f + pw
        d *= f



def read(path, size):
    """(buf, n): the file's first n <= size bytes (a loader asks for one more than its
    longest file, to tell "too long"), in one buffer no longer than the file, plus one byte,
    or `size`. ProfileError "missing_file" when it does not exist, "io" when it cannot be
    read."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        if exc.args and exc.args[0] == _ENOENT:
            raise ProfileError("missing_file", "no profile file %s" % path)
        raise ProfileError("io", "cannot open %s" % path)
    n = 0
    try:
        # the buffer fits the file (a large contiguous block is the scarce thing in a small
        # heap); the read below still stops at `size` and at the end, whatever seek said
        end = fh.seek(0, 2)
        fh.seek(0)
        if end is not None and end < size:
            size = end + 1
        buf = bytearray(size)
        while n < size:
            got = fh.readinto(memoryview(buf)[n:])
            if not got:
                break
            n += got
    except OSError:
        raise ProfileError("io", "cannot read %s" % path)
    finally:
        fh.close()
    return buf, n


# ---- the profile file grammar (profile.md): one flat JSON object of ints and strings --------
# ws = *(space | tab | LF | CR); file = ws "{" ws [member *(ws "," ws member)] ws "}" ws
# member = string ws ":" ws value; string = '"' *(printable ASCII but '"' and backslash) '"';
# value = string | int, int = ["-"] ("0" | [1-9] *digit). Keys are distinct. A value that is
# neither (a float, "04", true, null, an array, an object) is "type"; anything else "json".
def _json_error(msg):
    return ProfileError("json", "profile is not valid JSON for a profile (%s)" % msg)


def _ws(buf, i, n):
    while i < n and buf[i] in b" \t\n\r":
        i += 1
    return i


def _string(buf, i, n):
    if i >= n or buf[i] != 0x22:
        raise _json_error("a string was expected")
    j = i + 1
    while j < n and buf[j] != 0x22:
        if buf[j] == 0x5C:
            raise _json_error("a backslash escape")
        j += 1
    if j >= n:
        raise _json_error("an unterminated string")
    return str(buf[i + 1:j], "ascii"), j + 1


def _value(buf, i, n):
    if i < n and buf[i] == 0x22:
        return _string(buf, i, n)
    j = i
    while j < n and buf[j] in b"0123456789+-.eE":
        j += 1
    tok = str(buf[i:j], "ascii")
    digits = tok[1:] if tok[:1] == "-" else tok
    if not digits.isdigit() or (digits[0] == "0" and len(digits) > 1):
        raise ProfileError("type", "a value that is not a string or an integer")
    return int(tok), j


def parse(buf, n):
    """The object of a profile file's first n bytes, by the grammar above (ProfileError)."""
    for i in range(n):
        c = buf[i]
        if c > 0x7E or (c < 0x20 and c not in b"\t\n\r"):
            raise _json_error("a byte outside printable ASCII")
    i = _ws(buf, 0, n)
    if i >= n or buf[i] != 0x7B:
        raise _json_error("an object was expected")
    doc = {}
    i = _ws(buf, i + 1, n)
    if i < n and buf[i] == 0x7D:
        i += 1
    else:
        while True:
            key, i = _string(buf, i, n)
            i = _ws(buf, i, n)
            if i >= n or buf[i] != 0x3A:
                raise _json_error("':' was expected")
            value, i = _value(buf, _ws(buf, i + 1, n), n)
            if key in doc:
                raise _json_error("a duplicated key")
            doc[key] = value
            i = _ws(buf, i, n)
            if i < n and buf[i] == 0x2C:
                i = _ws(buf, i + 1, n)
            elif i < n and buf[i] == 0x7D:
                i += 1
                break
            else:
                raise _json_error("',' or '}' was expected")
    if _ws(buf, i, n) != n:
        raise _json_error("data after the object")
    return doc


def check_string(key, value):
    if type(value) is not str:
        raise ProfileError("type", "%s must be a string" % key)
    safe = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-./"
    for ch in value.encode():  # bytes: iterating a str interns each character
        if ch not in safe:
            raise ProfileError("type", "%s has a character outside [A-Za-z0-9+-./]" % key)


def check_hex(key, value, n):
    # n = 16: a float64 pattern "0x" + 16 digits; n = 64: the fingerprint, no prefix
    prefix = "0x" if n == 16 else ""
    check_string(key, value)
    body = value[len(prefix):] if value.startswith(prefix) else None
    if body is None or len(body) != n:
        raise ProfileError("type", "%s must be %s and %d lowercase hex digits"
                           % (key, prefix or "''", n))
    for ch in body.encode():
        if ch not in b"0123456789abcdef":
            raise ProfileError("type", "%s must be lowercase hex" % key)
