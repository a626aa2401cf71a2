"""The window grid (seed 000's Zeal on the binade's integer grid), kind "grid":

- `profile`: `Profile` (range, epsilon, E, m, grid N/Nc/T, calibration, canonical JSON,
  fingerprint), `from_exponent`, `from_bits`, `load`, `loads`;
- `exact`: `ExactGrid` (exact output distribution, privacy ratio, mean map, variance with
  Fractions), `pm_variance`, `worst_variance_ratio`;
- `choose`: `build` (by exponent, by bits, or "auto") and `auto`;
- `scalar`: `ExactZeal`, the exact scalar mechanism (the reference sampler);
- `bulk`: the numpy sampler, bit-exact with the scalar one: `sample_offsets` (given words),
  `sample_offsets_fast` (a numpy Generator);
- `reports`: a report k and its spellings (64-bit pattern, low m bits, double);
- `estimate`: `Estimator` (calibrated mean, exact and naive AVG*, Bernstein and CLT
  intervals), `exact_sum`;
- `kind`: `GridKind`, the grid behind the kind interface (zeal.mechanism.kinds).
"""
