"""BERNOULLI of a fraction fixed at start, on the device (shared_spec/mechanism.md,
BERNOULLI): the shuffle profile's gamma (zealfw.srand) and the OUE bits' probabilities
(zealfw.msample). Off the grid's sampling path, so the grid's boards never load it.
"""
from .mechanism import bernoulli_frac


class Bern:
    """BERNOULLI(num/den) for a fraction fixed at start (0 <= num < den: a shuffle profile's
    gamma, an OUE bit's probabilities): the same words and the same bit as
    `bernoulli_frac(num, 0, 0, den, words)`, whose base-256 digits (long division of
    num/den) are made here once, 16 of them (two words'), so a draw compares bytes only,
    however large den is (an OUE bit's den is above 2^32: a heap int on a 32-bit board).
    After two equal words (probability 2^-128) bernoulli_frac goes on from the remainder;
    an expansion that ended within them (remainder 0 at a word's end) means U >= F: 0, as
    there."""

    def __init__(self, num, den):
        dig = bytearray(16)
        r = num
        ends = []
        for i in range(16):
            r <<= 8
            dig[i] = r // den
            r -= dig[i] * den
            if i % 8 == 7:
                ends.append(r == 0)
        self.c = (bytes(dig), ends[0], ends[1], r, den)

    def draw(self, words):
        dig, end0, end1, r, q = self.c
        j = 0
        while j < 16:
            o = words.advance()
            b = words.block
            i = o + 7
            while i >= o:
                x = b[i]
                y = dig[j]
                if x != y:
                    return 1 if x < y else 0
                i -= 1
                j += 1
            if end0 if j == 8 else end1:
                return 0
        return bernoulli_frac(r, 0, 0, q, words)
