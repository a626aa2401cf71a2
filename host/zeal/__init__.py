"""Zeal-MCU host package: exact Zeal local differential privacy for sensor telemetry.

Sub-packages follow the data, from a reading to a report; each imports only those before it:

    errors      the error types the CLI prints as one line
    mechanism   profiles, exact grids, the scalar and bulk samplers, words, reports, estimators
    paper       the paper's float64 formulas and sampler (reference only)
    wire        framing (codec, deframer), the line decoder, transports
    board       the device side: firmware and tools, flash, stop, devices, conformance
    collect     the SQLite store, the collector, virtual boards
    analysis    decoding stored reports, estimates, export, plots, data sets

On top: `cli` (the `zeal` command; also `python -m zeal`) and `demo`.
"""

# the package version, read by pyproject.toml (setuptools dynamic) and `zeal --version`
__version__ = "0.1.0"
