"""Location publishing (seed 003, Fang & Chang): a trusted publisher's eps-DP release of a
point set (central DP, the unit one point, neighbours replace one point; shared_spec/locate.md).

- `hilbert`: points <-> integer cells of a 2^L x 2^L grid <-> their Hilbert index;
- `publish`: the release -- sort the indices, sum groups of k, add exact discrete Laplace
  noise (zeal.mechanism.core.dlaplace) -- and its JSON form.
Reconstruction and the error measures are zeal.analysis.locate's.
"""
