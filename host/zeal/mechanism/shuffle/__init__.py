"""Shuffle mode (seed 004's vector summation), kind "shuffle" (`zeal-shuffle/2`):

- `rule`: the privacy rule (exact (epsilon, delta) of a shuffled batch, shared_spec/shuffle.md);
- `mechanism`: `gamma_for`, `randomise` (word contract), `randomise_bulk`, `Analyzer`,
  `decode_message`, `mse_bound_at_k`, `paper_mse_bound`, `delivered`;
- `profile`: `ShuffleProfile`, `loads`, `is_shuffle_file`, `ShuffleSampler`;
- `kind`: `ShuffleKind`, shuffle profiles behind the kind interface.
"""
