"""End to end without a board: the real firmware main loop under the MicroPython unix port
(zeal.collect.virtual.VirtualDevice), its frames through real pseudo-terminals read by pyserial,
the Collector, SQLite; then every stored report is checked bit-exactly against the CPython
reference mechanism run on the same float64 readings with the same key.
"""
import gc
import os
import threading
import time
from fractions import Fraction

import pytest

from zeal import wire
from zeal.analysis import datasets
from zeal.mechanism.grid import profile as P
from zeal.mechanism.grid import reports
from zeal.collect.collector import Collector
from zeal.board.firmware import locate_micropython
from zeal.mechanism.grid.scalar import ExactZeal
from zeal.collect.store import Store
from zeal.collect.virtual import VirtualDevice
from zeal.mechanism.core.words import CounterWords

from conftest import HUMIDITY

pytestmark = pytest.mark.skipif(locate_micropython() is None,
                                reason="the MicroPython unix port is not installed")

READINGS = [float(x) for x in datasets.aarhus("humidity", 5000)]


def collect(store, devices, **kw):
    """Run a Collector on the devices' ports; boot the devices once the ports are open
    (pyserial flushes the input on open, as with a board)."""
    col = Collector([d.port for d in devices], store, **kw)

    def boot():
        deadline = time.monotonic() + 10
        while col.progress.connected < len(devices) and time.monotonic() < deadline:
            time.sleep(0.01)
        for d in devices:
            d.start()

    starter = threading.Thread(target=boot)
    starter.start()
    progress = col.run(until_stopped=True, duration=60)
    starter.join()
    for d in devices:
        assert d.wait(10) == 0, d.stderr()
    assert progress.reason == "every device sent STOPPED or an error status"
    return progress


def stored_offsets(store, profiles, *, vector):
    """device id -> offsets in sequence order, decoded from the stored payloads."""
    rows = store.frames(vector=vector)
    out = {}
    for device_id, boot, seq, fp, count, payload, *_ in sorted(rows, key=lambda r: (r[0], r[2])):
        prof = profiles[fp]
        lows = wire.unpack_reports(payload, count, prof.bits)
        out.setdefault(device_id, []).extend(int(j) for j in reports.offsets_from_low(prof, lows))
    return out


def test_two_vector_devices_bit_exact(tmp_path):
    keys = [bytes(range(32)), bytes(range(100, 132))]
    profs = [P.from_bits(*HUMIDITY, 1.0, 8), P.from_bits(*HUMIDITY, 2.0, 4)]
    slices = [READINGS[:3000], READINGS[3000:]]
    ids = [b"vdev-A", b"vdev-B"]
    with Store(tmp_path / "z.db") as store, \
            VirtualDevice(slices[0], profile=profs[0], vector_key=keys[0], batch=64,
                          device_id=ids[0]) as a, \
            VirtualDevice(slices[1], profile=profs[1], vector_key=keys[1], batch=37,
                          device_id=ids[1]) as b:
        progress = collect(store, [a, b], profiles=profs, keep_vector=True)
        assert progress.reports == 5000 and progress.errors == 0 and progress.gaps == 0
        assert store.frames(vector=False) == []  # test-key frames are never real data
        got = stored_offsets(store, {p.fingerprint: p for p in profs}, vector=True)
        for dev, key, prof, xs in zip((a, b), keys, profs, slices):
            mech = ExactZeal(profile=prof, words=CounterWords(key))
            want = [mech.sample_offset(Fraction(x)) for x in xs]
            assert got[dev.device_id] == want
        events = store.event_counts()
        for dev, n in zip((a, b), (3000, 2000)):
            detail = "STOPPED ticks=%d frames_dropped=0 stopped" % n
            assert events[(dev.device_id, "status", detail)] == 1
        assert not any(kind == "reject" for _, kind, _ in events)
        assert store.link_bytes() == progress.bytes > 0


def test_production_mode_stores_real_frames(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    xs = READINGS[:2000]
    with Store(tmp_path / "z.db") as store, \
            VirtualDevice(xs, profile=prof, batch=50) as dev:
        progress = collect(store, [dev], profiles=[prof])
        rows = store.frames()
        assert sum(r[4] for r in rows) == len(xs) == progress.reports
        assert {r[1] for r in rows} == {1}             # first boot of a fresh seed file
        assert sorted(r[2] for r in rows) == list(range(len(xs) // 50))
        assert store.frames(vector=True) == []
        # A second boot (same folder, the seed file advanced): a new session, a reboot event.
        progress = collect(store, [dev], profiles=[prof])
        assert progress.reboots == 0  # a fresh Collector has not seen boot 1 on this line
        assert {r[1] for r in store.frames()} == {1, 2}
        assert sum(r[4] for r in store.frames()) == 2 * len(xs)


def test_reboot_on_the_same_line_is_an_event(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 4)
    with Store(tmp_path / "z.db") as store, \
            VirtualDevice(READINGS[:300], profile=prof, batch=16) as dev:
        col = Collector([dev.port], store, profiles=[prof])

        def drive():
            while col.progress.connected < 1:
                time.sleep(0.01)
            for _ in range(2):  # two boots: the firmware exits after its replay, then reboots
                dev.start()
                dev.wait(30)
            while col.progress.reports < 600:
                time.sleep(0.01)
            col.stop()

        runner = threading.Thread(target=drive)
        runner.start()
        progress = col.run(duration=60)
        runner.join()
        assert progress.reports == 600 and progress.reboots == 1 and progress.gaps == 0
        events = store.event_counts()
        detail = "boot 2 fingerprint %s" % prof.fingerprint[:16]
        assert events[(dev.device_id, "reboot", detail)] == 1


def test_stop_line_from_the_host_and_clean_teardown():
    """`zeal stop` writes "!stop" to the port: the virtual board stops as a board does
    (flush, STATUS STOPPED, exit). Closing leaves no process, thread or fd behind."""
    from zeal.wire import transport

    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    gc.collect()  # earlier tests' garbage (a collector's sockets) is not closed mid-test
    fds = set(os.listdir("/proc/self/fd"))
    threads = threading.active_count()
    with VirtualDevice(READINGS * 100, profile=prof, batch=16) as dev:
        port = transport.open_port(dev.port)
        dev.start()
        dec, stopped, asked = wire.Decoder([prof]), None, False
        while stopped is None:
            for ev in dec.feed(transport.read_chunk(port)):
                if isinstance(ev, wire.Status) and ev.code_name == "STOPPED":
                    stopped = ev
            if dec.reports > 1000 and not asked:
                port.write(b"\n!stop\n")  # what `zeal stop` sends
                asked = True
        assert dev.wait(10) == 0 and dev.host_bytes == 7
        assert 1000 < stopped.ticks == dec.reports < len(READINGS) * 100
        port.close()
    assert dev.returncode == 0 and not dev.running  # reaped
    time.sleep(0.05)
    assert set(os.listdir("/proc/self/fd")) == fds
    assert threading.active_count() == threads
    assert not os.path.exists(dev.folder)  # its temporary folder is gone
