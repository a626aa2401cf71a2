"""The demos: the whole chain without hardware, one module per kind of run.

- `serial`: `zeal demo` (virtual boards on ptys -> collector -> SQLite -> analysis; a grid or a
  table profile): `run_demo`, `build_profile`, `explain`, `format_demo`;
- `attributes`: `zeal demo --attributes` (multi-attribute boards): `run_multi_demo`;
- `shuffle`: `zeal demo --shuffle` (boards -> shuffler -> collector): `run_shuffle_demo`;
- `mqtt`: `zeal demo --mqtt` (the fleet path): `run_mqtt_demo`;
- `broker`: the throw-away Mosquitto (`ThrowAwayBroker`, `find_mosquitto`, `MQTT_INSTALL`),
  also the base of the tests' broker;
- `common`: what they share (argument errors, progress, the Aarhus rows, the boards' slices).

Re-exported here: run_demo, build_profile, run_mqtt_demo, ThrowAwayBroker, find_mosquitto,
MQTT_INSTALL.
"""
from .broker import MQTT_INSTALL, ThrowAwayBroker, find_mosquitto  # noqa: F401
from .mqtt import run_mqtt_demo  # noqa: F401
from .serial import build_profile, run_demo  # noqa: F401
