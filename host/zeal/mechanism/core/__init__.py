"""What every profile kind shares (no module here knows a kind):

- `floatbits`: exact conversions between IEEE-754 bit patterns, floats and Fractions;
- `pfile`: the profile-file grammar every kind's file follows: parsing, shared checks,
  canonical JSON, `exp_lower_bound`, `Calibration`;
- `words`: the random words (shared_spec/generator.md): `CounterWords`, `system_words`,
  `ListWords`, `Recorder`;
- `draws`: exact draws on those words (`uniform_below`, `bernoulli`, `stochastic_round`),
  `Clamp`, readings as exact rationals (`reading`, `reading_from_float64_bits`, ...);
- `summary`: `Summary`, what an estimator of the mean hands back;
- `kind`: the kind interface (`Kind`, its defaults; zeal.mechanism.kinds documents it) and
  the helpers the kinds' answers are built from (export rows, `zeal perturb` / `aggregate`
  of one reading a line).
"""
