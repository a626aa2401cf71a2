"""`zeal demo --mqtt`: the fleet path.

Four virtual boards (the real firmware under the MicroPython unix port, its output on MQTT
with umqtt.simple) replay the readings -> a throw-away Mosquitto on a free loopback port ->
two collectors sharing one MQTT v5 shared subscription ($share/zeal-demo/zeal/+/frames,
zeal.collect.mqtt) -> one store (--db: a SQLite path or a postgresql:// URL; default a
temporary SQLite file) -> the analysis. run_mqtt_demo's document is run_demo's layout with a
"fleet" section (broker, collectors, messages each took). Needs the `mosquitto` binary (one
line says how to install it when it is missing).
"""
import os
import tempfile
import threading
import time

from ..analysis.analyze import analyze
from ..collect.virtual import VirtualDevice
from ..errors import ZealError
from .broker import ThrowAwayBroker
from .common import board_slices, printer
from .data import aarhus_humidity
from .serial import TIMEOUT, build_profile, explain, format_demo
GROUP = "zeal-demo"


def _collector(url, db, prof, vector, index, ready, box):
    from ..collect.mqtt import MqttCollector
    from ..collect.store import open_store

    try:
        store = open_store(db)
        try:
            c = MqttCollector(url, store, group=GROUP, client_id="zeal-demo-%d" % index,
                              profiles=[prof], keep_vector=vector, log=lambda *a: None)
            box["collector"] = c
            ready.set()
            box["progress"] = c.run(duration=TIMEOUT)
        finally:
            store.close()
    except Exception as exc:  # reported by the caller in one line
        box["error"] = exc
        ready.set()


def run_mqtt_demo(*, db=None, epsilon=1.0, bits="auto", count=5000, devices=4, progress=True,
                  seed=None, collectors=2) -> dict:
    """Run the fleet demo; return `zeal demo --json`'s document plus "fleet"."""
    from ..collect.store import open_store

    if count < devices or not 1 <= devices <= 16:
        raise ZealError("--devices must be 1 to 16 and --count at least that")
    say = printer(progress)
    data = aarhus_humidity(count)
    readings, lo, hi = data.readings, data.lo, data.hi
    prof = build_profile(lo, hi, epsilon, "grid", bits)
    slices, ids, keys = board_slices(readings, devices, b"mqtt-%03d", seed, b"zeal-demo-seed")
    vector = seed is not None
    with tempfile.TemporaryDirectory(prefix="zeal-fleet-") as tmp:
        path = db if db is not None else os.path.join(tmp, "demo.db")
        if not path.startswith("postgresql:") and os.path.exists(path):
            raise ZealError("%s exists: the demo writes a new database (choose another --db)"
                            % path)
        open_store(path).close()  # the schema, before two writers race to make it
        broker = ThrowAwayBroker(tmp).start()
        say("mosquitto on %s (throw-away)" % broker.url)
        boxes, threads, boards = [], [], []
        try:
            for i in range(collectors):
                box, ready = {}, threading.Event()
                t = threading.Thread(target=_collector, daemon=True,
                                     args=(broker.url, path, prof, vector, i, ready, box))
                t.start()
                ready.wait(30)
                if "error" in box:
                    raise ZealError("collector %d: %s" % (i, box["error"]))
                boxes.append(box)
                threads.append(t)
            deadline = time.monotonic() + 30
            while not all(b["collector"].connected.is_set() for b in boxes):
                if time.monotonic() > deadline:
                    raise ZealError("the collectors did not connect to the broker")
                time.sleep(0.05)
            say("%d collectors in shared subscription $share/%s/zeal/+/frames"
                % (collectors, GROUP))
            for i, part in enumerate(slices):
                boards.append(VirtualDevice(part, profile=prof, device_id=ids[i],
                                            vector_key=keys[i], mqtt=broker.url,
                                            folder=os.path.join(tmp, "board%d" % i)))
            for b in boards:
                b.start()
            say("%d virtual MQTT boards publishing" % len(boards))
            for b in boards:
                if b.wait(TIMEOUT) != 0:
                    raise ZealError("a virtual board failed: %s" % b.stderr().strip()[-200:])
            deadline = time.monotonic() + 60
            while True:
                try:
                    with open_store(path) as st:
                        n_stored = analyze(st, include_vector=vector)["overall"]["n"]
                except ZealError:  # "no reports stored" yet: the collectors are committing
                    n_stored = 0
                if n_stored >= count or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            for box in boxes:
                box["collector"].stop()
            for t in threads:
                t.join(30)
            with open_store(path) as st:
                doc = analyze(st, include_vector=vector)
        finally:
            for b in boards:
                b.close()
            broker.stop()
    if doc["overall"]["n"] != count:
        raise ZealError("stored %d of %d reports" % (doc["overall"]["n"], count))
    explain(doc, prof, readings, dict(zip(ids, slices)), data=data)
    doc["database"] = db
    doc["fleet"] = {"broker": "mosquitto (throw-away, loopback)", "collectors": collectors,
                    "group": GROUP, "boards": len(slices),
                    "messages": [b["collector"].messages for b in boxes],
                    "store": "postgresql" if path.startswith("postgresql:") else "sqlite"}
    if progress:
        print(format_demo(doc))
        print("fleet: %d boards -> mosquitto -> %d collectors (messages each: %s) -> %s"
              % (len(slices), collectors, ", ".join(map(str, doc["fleet"]["messages"])),
                 doc["fleet"]["store"]))
    return doc
