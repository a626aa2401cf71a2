"""Analysis: what the stored reports say, and the data to try it on.

Modules, in import order (each imports only those above it, and the layers below this
package):
- `datasets`: data shipped in the package and seeded synthetic sets (`aarhus`,
  `chicago_fares`, `uniform`, `skewed`, `constant`, `load_csv_column` for a user's CSV;
  files in zeal/data/);
- `decode`: stored payloads -> offsets and doubles, many frames at once (`decode_frames`,
  `decode_values`, `DecodeError`); `Loaded`, a store read once;
- `export`: `zeal export`: every report to CSV or Parquet, one schema, with each report's
  calibrated estimate and the profile as metadata (`export`);
- `plots`: PNG plots of a store's reports (`plot_store`, `histogram`, `running_mean`; the
  exact expected histogram `mixture_probabilities`);
- `compare`: `zeal compare`: every mechanism side by side (float references, the window
  grid, every table kind as a device-ready profile), and the table helpers `zeal profile` /
  `zeal demo --mechanism` share (`table_bits`, `build_table_profile`);
- `multi_report`: multi-attribute stores (seed 001): per-attribute means and frequencies with
  99% intervals, wire bits per report (`holds_multi`, `analyze_doc`);
- `shuffle_report`: shuffle-mode stores (seed 004): the debiased mean vector, the MSE bounds
  and the (eps, delta) the stored batch delivered (`holds_shuffle`, `analyze_doc`);
- `shuffle_cli`: `zeal profile --shuffle`;
- `analyze`: `zeal analyze` and `zeal events`: per device, per profile and overall estimates,
  losses and wire cost, from a database or an archive (`analyze`, `format_table`, `events`);
- `compress/`: codecs for stored reports (`codecs()`, `get(name)`: greedygd, zstd, lz4, bz2,
  lzma, pcodec, packed, rans), the exact entropy bound (`entropy_bits_per_report`), GreedyGD
  with direct analytics, the versioned archive and `zeal compress`;
- `reproduce/`: `zeal reproduce`, the paper's figures and report, float sampler beside the
  exact mechanism (data, experiments, reachability, figures, report, run);
- `multi_cli`: `zeal profile --attributes` (a multi-attribute profile and its figures);
- `profile_report`: `zeal profile`'s figures of a window-grid or table profile.
The demos are zeal.demo's.

Nothing is re-exported: `analyze`, `export` and `plots` are both modules and functions here,
so `from zeal.analysis import analyze` is the module and `analyze.analyze(store)` the call.
"""
