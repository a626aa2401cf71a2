"""zealfw: the Zeal-MCU device package (MicroPython).

Import name `zealfw` so it never shadows the host package `zeal`. The sampling path:
`main` (the loop, boot()), `mechanism` (the grid's exact, integer-only sampler; the other
kinds' samplers `tsample`, `msample`, `srand` build on it), `words` (the SHA-256
counter-mode generator), `wire` (the Sender: wire protocol 2 while sampling, bounded
writes), `sources` (what sources share) and the configured source's module (`src_replay`,
`src_adc`, `src_callable`, `src_tuple`), `control` (control lines, when needed). Imported
once at start, in stages, each freed before the next (zealfw.main.run): `start` (config,
streams, device id, the one sniff: which loader reads the profile; the hold and CRASH
ends), the kind's loader (`profile`, `tprofile`, `mprofile`, `sprofile`, over the file
grammar `pfile`; each numbers(path) returns the same record), the start's last stage it names
(`build` or `mstart`: the boot key from `seed`, the Sender with its set-up `wire_setup`, the
source), then the sampler it names with the mechanism's per-profile set-up
`mech_setup`. `reference` (decoders, reference forms, the wire protocol's named constants)
serves the conformance runner and tests only.
"""
VERSION = (0, 1, 0)


def forget(name):
    """Drop the module zealfw.<name>, needed only at start (start, build, profile, seed,
    mech_setup, wire_setup, ...), and collect: nothing may keep a reference to anything it defines. On
    MicroPython only (CPython tests import them again).

    The collection is made here, by the caller of the stage that used the module, on
    purpose: the collector scans the C stack conservatively, and a collection that happens
    later, deep in an import (whose path buffer leaves old stack words unwritten), would
    still find the stage's dead pointers there and keep the whole module alive."""
    import sys

    if sys.implementation.name != "micropython":
        return
    sys.modules.pop("zealfw." + name, None)
    import zealfw

    if name in zealfw.__dict__:
        delattr(zealfw, name)
    import gc

    gc.collect()

