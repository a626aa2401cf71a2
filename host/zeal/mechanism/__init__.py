"""The mechanism: profiles, their exact grids, sampling and estimating (exact arithmetic).

Sub-packages, in import order (each imports only those above it):
- `core`: what every kind shares: float bits, the profile-file grammar, the random words,
  exact draws, the estimators' summary, the kind interface's defaults and helpers;
- `table`: exact table mechanisms ("zeal-table/1"): the mechanism, the LP designer, the
  profile file, the sampler, the estimator, the kind;
- `grid`: the window grid (Zeal itself): the profile, `ExactGrid`, `build`, the scalar and
  bulk samplers, report spellings, `Estimator`, the kind;
- `multi`: multi-attribute profiles ("zeal-multi/1", built from grid and table attributes);
- `shuffle`: shuffle mode ("zeal-shuffle/2");
and the modules
- `kinds`: the registry: `sniff`, `load`, `loads`, `of`, `is_profile` (one kind object per
  kind, behind one interface; nothing outside it and the kinds' own sub-packages asks which
  kind a profile is);
- `references`: float numpy reference mechanisms of the literature (Laplace, SCDF,
  Staircase, Duchi, PM, HM, PM-SUB), for comparison only — never used to privatise a reading.

Re-exported here: `Profile`, `Calibration`, `build`, `load`, `loads`, `from_bits`,
`from_exponent`, `ExactGrid`, `ExactZeal`, `CounterWords`, `system_words`, `Estimator`, so
`from zeal.mechanism import build, ExactZeal` works.
"""
from .grid.choose import build  # noqa: F401
from .grid.estimate import Estimator  # noqa: F401
from .grid.exact import ExactGrid  # noqa: F401
from .grid.profile import Calibration, Profile, from_bits, from_exponent, load, loads  # noqa: F401
from .grid.scalar import ExactZeal  # noqa: F401
from .core.words import CounterWords, system_words  # noqa: F401
