"""The mechanism: profiles, their exact grids, sampling and estimating (exact arithmetic).

Modules, in import order (each imports only those above it):
- `floatbits`: exact conversions between IEEE-754 bit patterns, floats and Fractions;
- `profile`: `Profile` (range, epsilon, E, m, grid N/Nc/T, calibration, canonical JSON,
  fingerprint), `from_exponent`, `from_bits`, `load`, `loads`, `Calibration`;
- `grid`: `ExactGrid` (exact output distribution, privacy ratio, mean map, variance with
  Fractions), `pm_variance`, `worst_variance_ratio`;
- `table`: `Table` (exact table mechanisms: privacy ratio, unbiased output values, exact and
  worst variance), `duchi`, `pm`, `hm` as tables (device sampler and profile format: later);
- `design`: the linear-programming designer of table mechanisms (`design`);
- `references`: float numpy reference mechanisms of the literature (Laplace, SCDF,
  Staircase, Duchi, PM, HM, PM-SUB), for comparison only — never used to privatise a reading;
- `choose`: `build` (by exponent, by bits, or "auto") and `auto`;
- `words`: the random words: `CounterWords` (shared_spec/generator.md), `system_words`,
  `ListWords`, `Recorder`;
- `scalar`: `ExactZeal`, the exact scalar mechanism (the reference), `uniform_below`,
  `bernoulli`, `reading_from_float64_bits` and friends;
- `bulk`: the numpy sampler, bit-exact with the scalar one: `sample_offsets` (given words),
  `sample_offsets_fast` (a numpy Generator);
- `reports`: a report k and its spellings (64-bit pattern, low m bits, double);
- `estimate`: `Estimator` (calibrated mean, exact and naive AVG*, Bernstein and CLT
  intervals), `exact_sum`.

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
