"""Zeal-MCU host package: exact Zeal local differential privacy for sensor telemetry."""

__version__ = "0.1.0"
