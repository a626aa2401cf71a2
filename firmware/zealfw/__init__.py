"""zealfw: the Zeal-MCU device package (MicroPython).

Import name `zealfw` so it never shadows the host package `zeal`. Modules are small and
imported lazily by the main loop: `mechanism` (exact, integer-only sampling), `words` (the
SHA-256 counter-mode generator and the boot key), `profile` (loading and checking
`zeal_profile.json`, freed after loading), `sources` (sensors and replay), `frames` (wire
protocol 2, bounded writes), `main` (the sampling loop, the config, boot()).
"""
VERSION = (0, 1, 0)
