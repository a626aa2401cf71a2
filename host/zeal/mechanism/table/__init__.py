"""Exact table mechanisms, kind "table" (`zeal-table/1`):

- `mechanism`: `Table` (exact table mechanisms: privacy ratio, unbiased output values, exact
  and worst variance), `duchi`, `pm`, `hm` as tables;
- `design`: the linear-programming designer of table mechanisms (`design`, `solve`);
- `profile`: `TableProfile`, `from_table`, `build` (every table kind), `loads`, `load`,
  `is_table_file`, `MAX_TABLE_FILE`;
- `sampler`: `TableSampler`, the exact table sampler (the host reference);
- `estimate`: `TableEstimator` (calibrated mean, Bernstein and CLT intervals);
- `kind`: `TableKind`, tables behind the kind interface (zeal.mechanism.kinds).
"""
