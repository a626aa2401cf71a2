"""`zeal demo --mqtt` (zeal.demo.run_mqtt_demo): 4 virtual MQTT boards (real firmware, unix port,
umqtt.simple) -> throw-away Mosquitto -> 2 collectors in one shared subscription -> store ->
analysis; the document has `zeal demo --json`'s layout, every report is stored once, and both
collectors took a share of the messages. Once into SQLite, once into PostgreSQL."""
import pytest

from mqtt_broker import need_mosquitto
from zeal.demo import run_demo, run_mqtt_demo

COUNT = 1200


@pytest.fixture(scope="module")
def serial_doc():
    return run_demo(count=COUNT, progress=False, seed=5)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_mqtt_demo_end_to_end(request, tmp_path, serial_doc, backend):
    need_mosquitto()
    db = str(tmp_path / "fleet.db")
    if backend == "postgresql":
        db = request.getfixturevalue("postgres_url")
    doc = run_mqtt_demo(db=db, count=COUNT, progress=False, seed=5)
    assert doc["overall"]["n"] == COUNT
    assert sorted(d["readings"] for d in doc["devices"]) == [COUNT // 4] * 4
    assert all(m > 0 for m in doc["fleet"]["messages"]), doc["fleet"]
    assert doc["fleet"]["store"] == backend
    # zeal demo --json's layout
    assert set(doc) - {"fleet"} == set(serial_doc)
    assert set(doc["overall"]) == set(serial_doc["overall"])
    assert set(doc["demo"]) == set(serial_doc["demo"])
    # the same seeded boards over serial and over MQTT: the same reports, so the same estimate
    assert doc["overall"]["mean_calibrated"] == pytest.approx(
        serial_doc["overall"]["mean_calibrated"], abs=0)


def test_zeal_demo_mqtt_command_line(tmp_path):
    """The command a user types: `zeal demo --mqtt --json` prints the fleet document."""
    import json
    import os
    import subprocess
    import sys

    need_mosquitto()
    env = dict(os.environ, PATH=os.pathsep.join((os.path.dirname(sys.executable),
                                                 os.environ.get("PATH", ""))))
    out = subprocess.run([sys.executable, "-m", "zeal.cli", "demo", "--mqtt", "--json",
                          "--count", "400", "--db", str(tmp_path / "f.db")],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["overall"]["n"] == 400
    assert doc["fleet"]["collectors"] == 2 and sum(doc["fleet"]["messages"]) > 0
