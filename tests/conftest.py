import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = os.path.join(ROOT, "host")
if HOST not in sys.path:  # lets the suite run from a checkout without `pip install -e`
    sys.path.insert(0, HOST)

pytest_plugins = ["board_plugin"]  # --port PORT: hardware-in-the-loop tests

HUMIDITY = (23.5, 83.9)
EPSILONS = (0.5, 1.0, 2.0, 4.0)
BITS = (2, 3, 4, 8, 16)
