"""The Zeal paper in plain float64: a reference for reproducing the paper, never for data.

- `formulas`: the paper's formulas (Abar, E_enc, E_vul, gamma_min, TR, error bounds, the
  fraction of shared bits), each quantity the real-valued formula evaluated in IEEE-754
  double precision;
- `sampler`: the paper's float64 inverse-CDF sampler (`sample`, `inverse_cdf`,
  `reachable_outputs`). It leaks privacy through the floats it can reach: devices use the
  exact integer mechanism (zeal.mechanism) instead.

Nothing is re-exported: `from zeal.paper import formulas` names what is being reproduced.
"""
