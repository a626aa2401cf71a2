"""The location release (seed 003, steps A1-A3), with exact noise (shared_spec/locate.md).

The publisher holds n points (their Hilbert indices h_i in [0, 4^L), zeal.mechanism.locate
.hilbert); n is public. It sorts the indices, cuts the sorted sequence into groups of k
consecutive indices (the last group holds the n mod k left, if any: the partition depends on
n and k only), and publishes each group's sum plus discrete Laplace noise of scale
m (4^L - 1) / eps (in index units; m points per device, 1 by default), with n, k and the
noise's scale. Replacing one point moves the sorted sequence, and so the vector of group sums,
by at most 4^L - 1 in L1 (the seed's Theorem 1 and Corollary 1, restated in integers), so the
release is eps-DP for one point (m eps for a device's m points, hence the scale's m). The
noise is zeal.mechanism.core.dlaplace's: integers from the product's words, no floating point.

`publish_private_n` is the seed's Remark 2, for a publisher who must keep n private (the
neighbours then add or remove a device): eps_n of the budget publishes n~ = n + Lap_Z(m /
eps_n), the points are padded with index 0 or cut of their smallest to n~ (either way two
neighbouring sets become two sets that replace one point), and the release above follows with
the rest: eps_n + eps in all.

k must not be chosen from the points (it would leak): `zeal.analysis.locate.choose` picks it
from n and eps alone.
"""
from dataclasses import asdict, dataclass, field
from fractions import Fraction

from ...errors import ZealError
from ..core.dlaplace import Draws, discrete_laplace, scale_parts
from .hilbert import Box

FORMAT = "zeal-locate/1"


def group_sizes(n: int, k: int) -> list:
    """The partition of the sorted sequence: n // k groups of k, then n mod k if any."""
    return [k] * (n // k) + ([n % k] if n % k else [])


def exact_epsilon(epsilon) -> Fraction:
    """The budget as an exact positive rational (a decimal string is taken as written)."""
    try:
        eps = Fraction(str(epsilon))
    except (ValueError, ZeroDivisionError):
        raise ZealError("epsilon must be a positive decimal, got %r" % (epsilon,)) from None
    if not 0 < eps <= 100:
        raise ZealError("epsilon must be in (0, 100], got %s" % epsilon)
    return eps


@dataclass
class Release:
    """What the publisher releases (everything here is public)."""
    n: int
    k: int
    sums: list                  # noisy group sums, integers (index units)
    epsilon: str                # the budget of this release, exact
    box: Box
    points_per_device: int = 1
    scale: str = ""             # the noise's scale m (4^L - 1) / eps, exact
    epsilon_n: str = None       # the budget spent on a noisy n (publish_private_n), or None
    n_true_private: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def sizes(self) -> list:
        return group_sizes(self.n, self.k)

    def to_doc(self) -> dict:
        doc = asdict(self)
        doc["box"] = asdict(self.box)
        doc = {"format": FORMAT, **doc}
        doc["noise"] = "discrete Laplace, P(z) proportional to exp(-|z| / scale), exact"
        doc["privacy_unit"] = ("one device's %d points" % self.points_per_device
                               if self.points_per_device > 1 else "one point")
        doc["neighbours"] = ("add or remove a device (n is private)" if self.n_true_private
                             else "replace one point (n is public)")
        doc["trust"] = ("central: the publisher sees every raw point; the release and "
                        "anything computed from it are eps-DP")
        return doc

    @classmethod
    def from_doc(cls, doc: dict) -> "Release":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ZealError("not a location release (format %s)" % FORMAT)
        try:
            return cls(n=int(doc["n"]), k=int(doc["k"]), sums=[int(s) for s in doc["sums"]],
                       epsilon=str(doc["epsilon"]), box=Box(**doc["box"]),
                       points_per_device=int(doc.get("points_per_device", 1)),
                       scale=str(doc.get("scale", "")), epsilon_n=doc.get("epsilon_n"),
                       n_true_private=bool(doc.get("n_true_private", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ZealError("a location release needs n, k, sums, epsilon and box: %s"
                            % exc) from None


def _check(n, k, m):
    if n < 1:
        raise ZealError("there are no points to publish")
    if not (isinstance(k, int) and 1 <= k <= n):
        raise ZealError("the group size k must be an integer in [1, n = %d], got %r" % (n, k))
    if not (isinstance(m, int) and m >= 1):
        raise ZealError("points per device must be a positive integer, got %r" % (m,))


def publish(indices, epsilon, k: int, box: Box, words, points_per_device: int = 1) -> Release:
    """The release of the points of Hilbert indices `indices` (any iterable of ints in
    [0, 4^L)) at budget epsilon with groups of k; `words` is the noise's word source."""
    hs = sorted(int(h) for h in indices)
    n, m = len(hs), points_per_device
    _check(n, k, m)
    if hs and (hs[0] < 0 or hs[-1] >= box.cells):
        raise ZealError("a Hilbert index lies outside [0, 4^%d)" % box.order)
    eps = exact_epsilon(epsilon)
    scale = Fraction(m * (box.cells - 1)) / eps
    t, s = scale_parts(scale)
    d = Draws(words)
    sums, i = [], 0
    for size in group_sizes(n, k):
        sums.append(sum(hs[i:i + size]) + discrete_laplace(t, s, d))
        i += size
    return Release(n=n, k=k, sums=sums, epsilon=str(eps), box=box, points_per_device=m,
                   scale=str(scale))


def publish_private_n(indices, epsilon_n, epsilon, k_of_n, box: Box, words,
                      points_per_device: int = 1) -> Release:
    """Remark 2: n~ = n + Lap_Z(m / eps_n) (at least 1), the points padded with index 0 or cut
    of their smallest to n~, then `publish` at epsilon with k = k_of_n(n~)."""
    hs = sorted(int(h) for h in indices)
    m = points_per_device
    _check(max(len(hs), 1), 1, m)
    eps_n = exact_epsilon(epsilon_n)
    t, s = scale_parts(Fraction(m) / eps_n)
    d = Draws(words)
    n_noisy = max(1, len(hs) + discrete_laplace(t, s, d))
    if n_noisy > len(hs):
        hs = [0] * (n_noisy - len(hs)) + hs
    else:
        hs = hs[len(hs) - n_noisy:]
    rel = publish(hs, epsilon, k_of_n(n_noisy), box, words, points_per_device=m)
    rel.epsilon_n = str(eps_n)
    rel.n_true_private = True
    return rel
