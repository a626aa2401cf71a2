"""What anyone can compute from a location release (zeal.mechanism.locate.publish):

- `reconstruct`: the seed's step B1 -- least-squares isotonic regression of the noisy group
  means (weighted by the group sizes), each fitted value repeated for its group, back through
  the Hilbert curve to points;
- `choose`: the group size k from n and eps alone (the seed's error model, and a direct
  search on public synthetic data);
- `density`: densities on a 1024 x 1024 grid and their l1/l2 distances, and the noisy 41 x 41
  equal-width histogram the seed compares with;
- `queries`: range-count queries from those densities and a Haar-wavelet (Privelet) baseline;
- `median`: the release's median against the smooth-sensitivity median.
"""
