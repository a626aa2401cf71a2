"""Where the contract is: shared_spec/ (the spec and the conformance vectors every
implementation is checked against). In a source checkout or an editable install it is the
repository's; an installed wheel ships it as the data package zeal/spec (pyproject.toml's
package-dir), so `zeal conformance` runs from a wheel too."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _spec_dir() -> str:
    repo = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "shared_spec")
    if os.path.isdir(os.path.join(repo, "vectors")):
        return repo
    return os.path.join(_HERE, "spec")


SPEC = _spec_dir()
VECTORS = os.path.join(SPEC, "vectors")
