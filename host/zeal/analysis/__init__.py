"""Analysis: what the stored reports say, and the data to try it on.

Modules, in import order (each imports only those above it, and the layers below this
package):
- `datasets`: data shipped in the package (`aarhus`, HUMIDITY_RANGE; files in zeal/data/);
- `decode`: stored payloads -> offsets and doubles, many frames at once (`decode_frames`,
  `decode_values`, `DecodeError`); `Loaded`, a store read once;
- `export`: `zeal export`: every report to CSV or Parquet, one schema, with each report's
  calibrated estimate and the profile as metadata (`export`, `register`);
- `plots`: PNG plots of a store's reports (`plot_store`, `histogram`, `running_mean`; the
  exact expected histogram `mixture_probabilities`);
- `analyze`: `zeal analyze` and `zeal events`: per device, per profile and overall estimates,
  losses and wire cost (`analyze`, `format_table`, `events`, `register`).

Nothing is re-exported: `analyze`, `export` and `plots` are both modules and functions here,
so `from zeal.analysis import analyze` is the module and `analyze.analyze(store)` the call.
"""
