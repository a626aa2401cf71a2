"""Multi-attribute profiles (seed 001's Algorithm 4 + OUE), kind "multi" (`zeal-multi/1`),
made of grid and table attribute profiles:

- `mechanism`: `Multi`, `Numeric`, `Categorical` (exact report privacy ratio, per-attribute
  variance), `MultiEstimator`, `eq12_k`, `oue_ratio`;
- `profile`: `MultiProfile` (the header and its attribute files), `loads`, `file_fetcher`,
  `MultiSampler` (the host reference), the payload codec `pack_multi` / `unpack_multi`;
- `kind`: `MultiKind`, multi-attribute profiles behind the kind interface.
"""
