"""Error types. Each names what the user got wrong; the CLI prints them as one line."""


class ZealError(Exception):
    """Base class for every error the CLI reports as `zeal: <message>`."""


class ProfileError(ZealError):
    """A profile cannot be built, read or trusted."""


class InputError(ZealError):
    """A reading cannot be privatised (NaN, infinity, malformed text)."""


class ReportError(ZealError):
    """A perturbed report does not belong to the profile's grid."""
