"""The mechanism: profiles, their exact grids, sampling and estimating (exact arithmetic).

Modules, in import order (each imports only those above it):
- `floatbits`: exact conversions between IEEE-754 bit patterns, floats and Fractions;
- `pfile`: the profile file both kinds share: grammar, shared checks, canonical form,
  `exp_lower_bound`, `Calibration`;
- `table`: `Table` (exact table mechanisms: privacy ratio, unbiased output values, exact and
  worst variance), `duchi`, `pm`, `hm` as tables (profile format: `table_profile`);
- `design`: the linear-programming designer of table mechanisms (`design`);
- `table_profile`: `TableProfile` ("zeal-table/1"), `from_table`, `build` (every table
  kind), `loads`, `load`, `MAX_TABLE_FILE`;
- `profile`: `Profile` (range, epsilon, E, m, grid N/Nc/T, calibration, canonical JSON,
  fingerprint), `from_exponent`, `from_bits`, `load`, `loads`, `Calibration`;
- `grid`: `ExactGrid` (exact output distribution, privacy ratio, mean map, variance with
  Fractions), `pm_variance`, `worst_variance_ratio`;
- `choose`: `build` (by exponent, by bits, or "auto") and `auto`;
- `references`: float numpy reference mechanisms of the literature (Laplace, SCDF,
  Staircase, Duchi, PM, HM, PM-SUB), for comparison only — never used to privatise a reading;
- `words`: the random words: `CounterWords` (shared_spec/generator.md), `system_words`,
  `ListWords`, `Recorder`;
- `scalar`: `ExactZeal`, the exact scalar mechanism (the reference), `uniform_below`,
  `bernoulli`, `reading_from_float64_bits` and friends;
- `table_sampler`: `TableSampler`, the exact table sampler (the host reference);
- `bulk`: the numpy sampler, bit-exact with the scalar one: `sample_offsets` (given words),
  `sample_offsets_fast` (a numpy Generator);
- `reports`: a report k and its spellings (64-bit pattern, low m bits, double);
- `estimate`: `Estimator` (calibrated mean, exact and naive AVG*, Bernstein and CLT
  intervals), `exact_sum`;
- `multi`: multi-attribute profiles (seed 001's Algorithm 4 + OUE): exact report privacy
  ratio, per-attribute variance, estimators, samplers (host only so far);
- `shuffle`: shuffle mode (seed 004): `gamma_for`, `randomise` (word contract),
  `randomise_bulk`, `Analyzer`, `mse_bound_at_k`, `paper_mse_bound`, `delivered` (host only).

Re-exported here: `Profile`, `Calibration`, `build`, `load`, `loads`, `from_bits`,
`from_exponent`, `ExactGrid`, `ExactZeal`, `CounterWords`, `system_words`, `Estimator`, so
`from zeal.mechanism import build, ExactZeal` works.
"""
from .choose import build  # noqa: F401
from .estimate import Estimator  # noqa: F401
from .grid import ExactGrid  # noqa: F401
from .profile import Calibration, Profile, from_bits, from_exponent, load, loads  # noqa: F401
from .scalar import ExactZeal  # noqa: F401
from .words import CounterWords, system_words  # noqa: F401
