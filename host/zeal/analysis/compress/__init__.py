"""Compression of stored reports: GreedyGD and its rivals on the same float64 byte stream.

A codec has `name` (as its library calls it), `needs_profile` (bool), `package` (the pip
package it needs, or None), `encode(bits, profile) -> bytes` where `bits` is a uint64 array of
the reports' float64 bit patterns in order, and `decode(blob, profile, limit=None) -> uint64
array`, the exact inverse. Blobs are self-describing (they carry n). With `limit`, a blob that
holds (or would decompress to) more than `limit` reports is refused with a ZealError before
more than `limit` reports' worth of memory is taken: a reader of untrusted blobs (the archive)
passes the count it expects.

- `codecs()`: {name: codec} for every available codec (GreedyGD from `greedygd`; the rivals
  from `rivals`). A codec whose library is missing is absent;
- `get(name)`: one codec; ZealError naming the package to install when its library is missing,
  or listing the known names when the name is unknown;
- `entropy.entropy_bits_per_report(profile, readings)`: the exact entropy bound (bits per
  report) the codecs are measured against.

Sub-modules import nothing from this package's __init__ (the registry imports them). No
sub-module is called `codecs`: importing it would rebind the function `codecs` here.
"""
from ...errors import ZealError


def _entries():
    """[(name, pip package or None, factory)] for every codec this package knows, GreedyGD
    first (it needs no package beyond numpy)."""
    from . import greedygd, rivals

    return [(greedygd.CODEC.name, None, lambda: greedygd.CODEC)] + list(rivals.CODECS)


def codecs():
    """{name: codec} for every codec whose library is installed, GreedyGD first."""
    out = {}
    for name, _package, factory in _entries():
        try:
            out[name] = factory()
        except ImportError:
            continue
    return out


def missing():
    """{codec name: pip package} of the codecs whose library is not installed."""
    out = {}
    for name, package, factory in _entries():
        try:
            factory()
        except ImportError:
            out[name] = package
    return out


def get(name):
    """The codec called `name`; ZealError naming the pip package when its library is missing."""
    entries = {n: (p, f) for n, p, f in _entries()}
    if name not in entries:
        raise ZealError(f"unknown codec {name!r}; known: {', '.join(entries)}")
    package, factory = entries[name]
    try:
        return factory()
    except ImportError:
        raise ZealError(f"codec {name!r} needs the Python package {package!r}: "
                        f"pip install {package}") from None
