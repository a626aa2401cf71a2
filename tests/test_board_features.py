"""A board that cannot do what it was flashed for stays reachable (issue 19, item 7).

Host side: `zeal flash` probes every feature the config needs of the board's MicroPython
(zeal.board.flash.board_needs: machine.WDT for watchdog_ms, machine.ADC for an adc sensor,
machine.UART for a uart output, socket for MQTT, ...) with the filesystem and os.urandom,
before anything is copied, and refuses in one line naming what is missing, what needs it and
what to do instead. The probe's code runs on the MicroPython unix port (which has no
machine.WDT), its parsing on fixed outputs, and a whole flash into the raw-REPL emulator of
tests/test_deploy.py (no machine.WDT either): refused, nothing copied.

Firmware side, defence in depth, on the unix port: a config written by hand with watchdog_ms
on a board without machine.WDT stops with STATUS CONFIG and returns to the REPL (it crashed at
every boot); an unexpected error (STATUS CRASH) on a board that resets counts itself in the
hold file, the wait before the reset takes "!stop", and after 3 crashes in a row before a
first report the next boot stays in the REPL; a first report clears the count.

On the board (the emulated Cortex-M3, which has no machine.WDT, unless --port names one):
`zeal flash --watchdog-ms 2000` is refused in one line and the board stays usable (its files
unchanged, a plain flash after it streams); a hand-written watchdog config gives STATUS
CONFIG and `zeal stop` finds the REPL; a crash loop is broken by `zeal stop` and ends by
itself after 3 crashes.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from zeal import wire
from zeal.board import flash as D
from zeal.board import probe as PR
from zeal.board import firmware as F
from zeal.board.firmware import locate_micropython
from zeal.errors import ZealError
from zeal.mechanism.grid import profile as P

from board_plugin import wait_streaming
from conftest import HUMIDITY, ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
ENV = dict(os.environ, PYTHONUNBUFFERED="1")
WDT_LINE = ("the board on %s cannot run this config: its MicroPython has no machine.WDT, "
            "which watchdog_ms 2000 needs (flash without --watchdog-ms)")
CONFIG_WDT = "watchdog_ms needs machine.WDT: this board has none"
CRASH_LINE = "zeal: 3 crashes in a row before a first report (STATUS CRASH); in the REPL."


# ---- what a config needs of the board ---------------------------------------------------------
@pytest.mark.parametrize("cfg, flag, want", [
    ({}, False, {}),
    ({"sensor": {"kind": "replay"}, "output": {"kind": "repl"}, "watchdog_ms": 0}, False, {}),
    ({"watchdog_ms": 2000}, True,
     {"machine.WDT": ("watchdog_ms 2000", "flash without --watchdog-ms")}),
    ({"watchdog_ms": 500}, False,
     {"machine.WDT": ("watchdog_ms 500", "set watchdog_ms to 0 in the config, or flash with "
                                         "--watchdog-ms 0")}),
    ({"sensor": {"kind": "adc", "pin": 26}}, False,
     {"machine.ADC": ("the adc sensor", "flash with another --sensor"),
      "machine.Pin": ("the adc sensor", "flash with another --sensor")}),
    ({"sensor": {"kind": "adc", "pin": "A0"}}, False,
     {"machine.ADC": ("the adc sensor", "flash with another --sensor")}),
    ({"sensor": {"kind": "rp2040_temp"}}, False,
     {"machine.ADC": ("the rp2040 temperature sensor", "flash with another --sensor")}),
    ({"sensor": {"kind": "callable", "module": "drv", "function": "read"}}, False, {}),
    ({"output": {"kind": "uart", "id": 1}}, False,
     {"machine.UART": ("output uart", "use output repl")}),
    ({"output": {"kind": "uart", "id": 1, "tx": 4}}, False,
     {"machine.UART": ("output uart", "use output repl"),
      "machine.Pin": ("output uart", "use output repl")}),
    ({"output": {"kind": "mqtt", "url": "mqtt://h"}}, False,
     {"socket": ("the mqtt output", "flash without --mqtt on a board without networking")}),
    ({"output": {"kind": "mqtt", "url": "mqtts://h", "tls": False}}, False,
     {"socket": ("the mqtt output", "flash without --mqtt on a board without networking")}),
    ({"output": {"kind": "mqtt", "url": "mqtts://h", "wifi_ssid": "lab"}}, False,
     {"socket": ("the mqtt output", "flash without --mqtt on a board without networking"),
      "ssl.SSLContext": ("mqtts (TLS)", "use an mqtt:// URL"),
      "network.WLAN": ("--wifi", "drop --wifi on a board already on a network")}),
])
def test_board_needs(cfg, flag, want):
    assert D.board_needs(cfg, watchdog_flag=flag) == want


def test_the_plan_probes_what_the_config_needs(tmp_path):
    prof = tmp_path / "p.json"
    prof.write_text(P.from_bits(*HUMIDITY, 1.0, 4).to_json())
    steps = D.plan_flash("/dev/ttyACM0", str(prof), watchdog_ms=2000, compile=False)
    (probe,) = [s for s in steps if s.kind == "probe"]
    assert probe.needs == {"machine.WDT": ("watchdog_ms 2000", "flash without --watchdog-ms")}
    assert probe.argv[-1] == PR.probe_code(["machine.WDT"]) != PR.PROBE_CODE
    assert probe.label.endswith("can write a file and has os.urandom and machine.WDT")
    doc = D.plan_doc("/dev/ttyACM0", steps)
    (item,) = [s for s in doc["steps"] if s["kind"] == "probe"]
    assert item["needs"] == ["machine.WDT"]
    # no feature asked for: the probe is the plain one
    steps = D.plan_flash("/dev/ttyACM0", str(prof), compile=False)
    (probe,) = [s for s in steps if s.kind == "probe"]
    assert probe.needs == {} and probe.argv[-1] == PR.PROBE_CODE


def test_probe_code_refuses_a_name_that_is_no_feature():
    for bad in ("machine.WDT()", "a.b.c", "x; import os", ""):
        with pytest.raises(ValueError):
            PR.probe_code([bad])


# ---- the probe's output --------------------------------------------------------------------
NEEDS = {"machine.WDT": ("watchdog_ms 2000", "flash without --watchdog-ms"),
         "machine.ADC": ("the adc sensor", "flash with another --sensor"),
         "machine.Pin": ("the adc sensor", "flash with another --sensor")}


@pytest.mark.parametrize("output, needs, problems", [
    ("ZEAL-PROBE ok\r\n", NEEDS, []),
    ("ZEAL-PROBE missing=machine.WDT\r\n", NEEDS,
     ["its MicroPython has no machine.WDT, which watchdog_ms 2000 needs (flash without "
      "--watchdog-ms)"]),
    ("ZEAL-PROBE missing=machine.WDT\r\n", None, ["its MicroPython has no machine.WDT"]),
    # features that one part of the config needs make one phrase
    ("ZEAL-PROBE missing=machine.ADC missing=machine.Pin missing=machine.WDT\r\n", NEEDS,
     ["its MicroPython has no machine.ADC and no machine.Pin, which the adc sensor needs "
      "(flash with another --sensor)",
      "its MicroPython has no machine.WDT, which watchdog_ms 2000 needs (flash without "
      "--watchdog-ms)"]),
    ("ZEAL-PROBE fs=19 missing=machine.WDT\r\n", NEEDS,
     ["no filesystem is mounted (OSError 19, ENODEV)",
      "its MicroPython has no machine.WDT, which watchdog_ms 2000 needs (flash without "
      "--watchdog-ms)"]),
])
def test_probe_problems_name_the_missing_features(output, needs, problems):
    assert PR.probe_problems(output, needs) == problems


def _fake_mpremote(tmp_path, stdout, code=0):
    script = tmp_path / "fake_mpremote.py"
    script.write_text("import sys\nsys.stdout.write(%r)\nsys.exit(%d)\n" % (stdout, code))
    return [sys.executable, str(script)]


def test_run_probe_refuses_in_one_line(tmp_path):
    needs = D.board_needs(D.build_config(watchdog_ms=2000), watchdog_flag=True)
    with pytest.raises(ZealError) as info:
        PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE missing=machine.WDT\r\n"),
                     "/dev/ttyACM0", needs=needs)
    assert str(info.value) == WDT_LINE % "/dev/ttyACM0"
    # the filesystem and os.urandom keep their wording; a feature joins them
    with pytest.raises(ZealError) as info:
        PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE urandom=AttributeError "
                                              "missing=machine.WDT\r\n"),
                     "/dev/ttyACM0", needs=needs)
    assert str(info.value) == (
        "the board on /dev/ttyACM0 cannot run Zeal: its MicroPython has no os.urandom; its "
        "MicroPython has no machine.WDT, which watchdog_ms 2000 needs (flash without "
        "--watchdog-ms) (Zeal needs os.urandom for its generator key; use a MicroPython build "
        "that has it)")
    assert PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE ok\r\n"), "/dev/ttyACM0",
                        needs=needs) is None  # no architecture said: no native code
    assert PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE ok arch=4\r\n"), "/dev/ttyACM0",
                        needs=needs) == "armv6m"  # an RP2040
    assert PR.run_probe(_fake_mpremote(tmp_path, "ZEAL-PROBE ok arch=0\r\n"), "/dev/ttyACM0",
                        needs=needs) is None


def test_probe_code_runs_on_the_unix_port(mp_port, tmp_path):
    """The probe with features is valid MicroPython; the unix port has socket but neither
    machine.WDT nor a module "nosuchmodule"; nothing is left behind."""
    mp = locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    needs = ["machine.WDT", "socket", "nosuchmodule", "machine.mem32", "machine.NoSuch"]
    done = subprocess.run([mp, "-c", PR.probe_code(needs)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done
    # and the port's native architecture, for the native modules (zeal.board.firmware)
    assert done.stdout.strip() == ("ZEAL-PROBE missing=machine.WDT missing=nosuchmodule "
                                   "missing=machine.NoSuch arch=%d"
                                   % F._ARCHES.index(F.micropython_arch(mp)))
    assert PR.probe_arch(done.stdout) == F.micropython_arch(mp)
    assert PR.probe_problems(done.stdout) == ["its MicroPython has no machine.WDT",
                                              "its MicroPython has no nosuchmodule",
                                              "its MicroPython has no machine.NoSuch"]
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_flash_with_a_watchdog_into_a_board_without_wdt_copies_nothing(tmp_path, capsys):
    """The whole `zeal flash` into the raw-REPL emulator (tests/test_deploy.py), whose machine
    module has reset() only: refused at the probe in one line, exit 1, nothing copied."""
    pytest.importorskip("mpremote")
    from test_deploy import FakeBoard

    from zeal.cli import main as zeal_main

    prof = tmp_path / "p.json"
    prof.write_text(P.from_bits(*HUMIDITY, 1.0, 4).to_json())
    fake = FakeBoard(tmp_path)
    try:
        code = zeal_main(["flash", "--port", fake.port, "--profile", str(prof),
                          "--watchdog-ms", "2000", "--no-compile", "--stop-wait", "0.05"])
        out, err = capsys.readouterr()
        assert code == 1, (out, err)
        errors = [line for line in err.splitlines() if line.startswith("zeal:")]
        assert errors == ["zeal: " + WDT_LINE % fake.port], err
        assert "Traceback" not in out + err
        assert "has os.urandom and machine.WDT" in err  # the probe step's label
        assert fake.files() == []
        # the same board takes a plain flash
        assert zeal_main(["flash", "--port", fake.port, "--profile", str(prof),
                          "--no-compile", "--stop-wait", "0.05"]) == 0
        assert "zeal_config.json" in fake.files()
    finally:
        fake.close()


# ---- the firmware: no unbreakable crash loop (the unix port) ----------------------------------
FAKE_MACHINE = """
# machine.reset() that logs and ends the program; no WDT (as on the emulated board)
import sys
def reset():
    with open("reset.log", "a") as fh:
        fh.write("reset\\n")
    sys.exit(0)
"""
CRASHY = "raise RuntimeError('injected at import')\n"


def _boot(tmp_path, config, stdin=b"", machine=FAKE_MACHINE, timeout=60):
    """zealfw.main.boot() as the board's main.py runs it, in tmp_path (the board's root)."""
    (tmp_path / "zeal_profile.json").write_text(P.from_bits(*HUMIDITY, 1.0, 4).to_json())
    (tmp_path / "zeal_config.json").write_text(json.dumps(config))
    if machine is not None:
        (tmp_path / "machine.py").write_text(machine)
    return subprocess.run([locate_micropython(), "-c", "import zealfw.main as m\nm.boot()"],
                          cwd=tmp_path, input=stdin, capture_output=True, timeout=timeout,
                          env=dict(os.environ, MICROPYPATH=FIRMWARE + ":" + str(tmp_path)))


def _statuses(out):
    return [(e.code_name, e.message) for e in wire.Deframer().feed(out)
            if isinstance(e, wire.Status)]


def _resets(tmp_path):
    log = tmp_path / "reset.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_watchdog_config_without_wdt_is_status_config_not_a_crash_loop(mp_port, tmp_path):
    done = _boot(tmp_path, {"watchdog_ms": 2000, "start_delay_ms": 0})
    assert done.returncode == 0, done.stderr.decode()  # boot() returned: the REPL
    assert _statuses(done.stdout) == [("CONFIG", CONFIG_WDT)]
    assert _resets(tmp_path) == 0 and not (tmp_path / "zeal_hold").exists()


def test_crashes_in_a_row_end_in_the_repl(mp_port, tmp_path):
    """Each crash resets and counts itself in the hold file; the third one's reset boots
    into the REPL, the file removed, so the next reset tries again."""
    (tmp_path / "crashy.py").write_text(CRASHY)
    cfg = {"start_delay_ms": 0, "crash_reset_ms": 50,
           "sensor": {"kind": "callable", "module": "crashy", "function": "read"}}
    for n in (1, 2, 3):
        done = _boot(tmp_path, cfg)
        assert done.returncode == 0, done.stderr.decode()  # machine.reset() (sys.exit(0))
        assert _statuses(done.stdout) == [("CRASH", "RuntimeError")]
        assert _resets(tmp_path) == n
        assert (tmp_path / "zeal_hold").read_text() == str(n)  # the count
    done = _boot(tmp_path, cfg)
    assert done.returncode == 0 and _statuses(done.stdout) == []
    assert done.stdout.decode().startswith(CRASH_LINE)
    assert _resets(tmp_path) == 3 and not (tmp_path / "zeal_hold").exists()
    done = _boot(tmp_path, cfg)  # a reset: it tries again
    assert _statuses(done.stdout) == [("CRASH", "RuntimeError")]
    assert (tmp_path / "zeal_hold").read_text() == "1"


def test_a_first_report_clears_the_crash_count(mp_port, tmp_path):
    (tmp_path / "zeal_hold").write_text("2")
    done = _boot(tmp_path, {"start_delay_ms": 0, "period_ms": 0},
                 stdin=b"4049000000000000\n!stop\n")
    assert done.returncode == 0, done.stderr.decode()
    assert [c for c, _ in _statuses(done.stdout)] == ["STOPPED"]
    assert not (tmp_path / "zeal_hold").exists()
    # a start that ends before a report (here a replay with no line) keeps the count
    (tmp_path / "zeal_hold").write_text("2")
    done = _boot(tmp_path, {"start_delay_ms": 0, "period_ms": 0}, stdin=b"")
    assert done.returncode == 0 and (tmp_path / "zeal_hold").read_text() == "2"


@pytest.mark.parametrize("watchdog", [False, True])
def test_stop_during_the_crash_wait(mp_port, tmp_path, watchdog):
    """"!stop" while the board waits crash_reset_ms: STATUS STOPPED and the REPL, no reset
    and no count left; with watchdog_ms (a watchdog may run) STOPPED, HELD and a reset into
    the held REPL, as a stop while streaming does."""
    (tmp_path / "crashy.py").write_text(CRASHY)
    machine = FAKE_MACHINE
    cfg = {"start_delay_ms": 0, "crash_reset_ms": 30000,
           "sensor": {"kind": "callable", "module": "crashy", "function": "read"}}
    if watchdog:
        machine += ("class WDT:\n    def __init__(self, timeout):\n        pass\n"
                    "    def feed(self):\n        pass\n")
        cfg["watchdog_ms"] = 2000
    t0 = time.monotonic()
    done = _boot(tmp_path, cfg, stdin=b"!stop\n", machine=machine)
    assert time.monotonic() - t0 < 20  # not the 30 s wait
    assert done.returncode == 0, done.stderr.decode()
    if watchdog:
        assert [c for c, _ in _statuses(done.stdout)] == ["CRASH", "STOPPED", "HELD"]
        assert _resets(tmp_path) == 1
        assert (tmp_path / "zeal_hold").read_text() == "held\n"
        again = _boot(tmp_path, cfg, machine=machine)
        assert b"held after a stop" in again.stdout and _statuses(again.stdout) == []
        assert not (tmp_path / "zeal_hold").exists()
    else:
        assert _statuses(done.stdout) == [("CRASH", "RuntimeError"), ("STOPPED", "stopped")]
        assert _resets(tmp_path) == 0 and not (tmp_path / "zeal_hold").exists()


# ---- on the board --------------------------------------------------------------------------
def zeal(*args, cwd, timeout=300, check=True):
    done = subprocess.run([sys.executable, "-m", "zeal", *map(str, args)], cwd=str(cwd),
                          capture_output=True, text=True, timeout=timeout, env=ENV,
                          stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, "zeal %s: %s%s" % (" ".join(map(str, args)),
                                                        done.stdout[-2000:], done.stderr[-2000:])
    return done


def mpremote(port, *args, timeout=60):
    done = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, *args],
                          capture_output=True, text=True, timeout=timeout, env=ENV,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, "mpremote %s: %s%s" % (" ".join(args), done.stdout,
                                                        done.stderr)
    return done.stdout


def board_files(port):
    """{name: size} of the board's root."""
    out = mpremote(port, "exec", "import os\nfor n in os.listdir():\n"
                                 " print('F', n, os.stat(n)[6])")
    return {p[1]: int(p[2]) for p in (line.split() for line in out.splitlines())
            if len(p) == 3 and p[0] == "F"}


def without_wdt(port):
    out = mpremote(port, "exec", "import machine\nprint('WDT', hasattr(machine, 'WDT'))")
    if "WDT True" in out:
        pytest.skip("the board on %s has machine.WDT (the emulated board has none)" % port)


def reset_and_watch(port, until, timeout):
    """Reset the board from its REPL with the line kept open (the emulated board drops what
    it sends while no program has its port open), then read it until `until(statuses,
    text)` holds or `timeout` s pass: (STATUS (code name, message) list, the bytes read)."""
    import serial

    ser = serial.serial_for_url(port, baudrate=115200, timeout=0.1)
    try:
        ser.write(b"\r\x03\x03\x02")  # out of a running program, or of the raw REPL
        time.sleep(0.5)
        ser.read(65536)
        ser.write(b"import machine; machine.reset()\r")
        deframer, statuses, seen = wire.Deframer(), [], b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not until(statuses, seen):
            chunk = ser.read(256)
            seen += chunk
            statuses += [(e.code_name, e.message) for e in deframer.feed(chunk)
                         if isinstance(e, wire.Status)]
        return statuses, seen
    finally:
        ser.close()


def test_flash_with_a_watchdog_is_refused_and_the_board_stays_usable(board, tmp_path):
    """`zeal flash --watchdog-ms 2000` on a board without machine.WDT: one line, non-zero
    exit, the board's files untouched; a plain flash after it works and the board streams."""
    zeal("profile", "--range", 23.5, 83.9, "--epsilon", 1, "-o", "p.json", cwd=tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"period_ms": 20,
                                                      "start_delay_ms": 500}))
    zeal("flash", "--port", board, "--profile", "p.json", "--config", "config.json",
         cwd=tmp_path)
    without_wdt(board)
    before = board_files(board)
    (tmp_path / "config.json").write_text(json.dumps({"period_ms": 2000}))
    t0 = time.monotonic()
    done = zeal("flash", "--port", board, "--profile", "p.json", "--config", "config.json",
                "--watchdog-ms", 2000, cwd=tmp_path, check=False)
    assert done.returncode != 0 and time.monotonic() - t0 < 60
    errors = [line for line in done.stderr.splitlines() if line.startswith("zeal:")]
    assert errors == ["zeal: " + WDT_LINE % board], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    after = board_files(board)
    assert after == before and "zeal_probe.tmp" not in after
    # the board is still usable: a plain flash, then it streams and stops
    (tmp_path / "config.json").write_text(json.dumps({"period_ms": 20,
                                                      "start_delay_ms": 500}))
    zeal("flash", "--port", board, "--profile", "p.json", "--config", "config.json",
         cwd=tmp_path)
    assert wait_streaming(board), "the board did not stream after the plain flash"
    stopped = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
    assert stopped["state"] == "stopped" and 4 in stopped["status_codes"], stopped


def test_a_hand_written_watchdog_config_leaves_the_board_reachable(board, tmp_path):
    """A config with watchdog_ms copied by hand (not through `zeal flash`) onto a board
    without machine.WDT: the board sends STATUS CONFIG naming it and stays in its REPL, where
    `zeal stop` and `zeal flash` find it (it used to crash at every boot)."""
    zeal("profile", "--range", 23.5, 83.9, "--epsilon", 1, "-o", "p.json", cwd=tmp_path)
    zeal("flash", "--port", board, "--profile", "p.json", cwd=tmp_path)
    without_wdt(board)
    (tmp_path / "config.json").write_text(json.dumps({"watchdog_ms": 2000, "period_ms": 20,
                                                      "start_delay_ms": 500}))
    mpremote(board, "fs", "cp", str(tmp_path / "config.json"), ":zeal_config.json")
    statuses, seen = reset_and_watch(board, lambda st, seen: seen.endswith(b">>> "), 30)
    assert statuses == [("CONFIG", CONFIG_WDT)], (statuses, seen[-400:])
    stop = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
    assert stop["state"] == "repl", stop
    assert "zeal_hold" not in board_files(board)
    zeal("flash", "--port", board, "--profile", "p.json", cwd=tmp_path)


def test_a_crash_loop_is_broken_by_stop_and_ends_by_itself(board, tmp_path):
    """A sensor module that raises at import: every boot ends in STATUS CRASH. During the
    crash_reset_ms wait `zeal stop` gets STOPPED and the REPL; left alone, the board resets
    three times and then stays in its REPL, saying why."""
    zeal("profile", "--range", 23.5, 83.9, "--epsilon", 1, "-o", "p.json", cwd=tmp_path)
    zeal("flash", "--port", board, "--profile", "p.json", cwd=tmp_path)
    (tmp_path / "crashy.py").write_text(CRASHY)
    sensor = {"kind": "callable", "module": "crashy", "function": "read"}
    (tmp_path / "config.json").write_text(json.dumps({"sensor": sensor, "start_delay_ms": 500,
                                                      "crash_reset_ms": 30000}))
    mpremote(board, "fs", "cp", str(tmp_path / "crashy.py"), ":crashy.py", "+", "fs", "cp",
             str(tmp_path / "config.json"), ":zeal_config.json")
    try:
        statuses, seen = reset_and_watch(board, lambda st, seen: st, 30)
        assert statuses == [("CRASH", "RuntimeError")], seen[-400:]
        t0 = time.monotonic()
        stop = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
        assert stop["state"] == "stopped" and 4 in stop["status_codes"], stop
        assert time.monotonic() - t0 < 20  # not the 30 s wait
        assert "zeal_hold" not in board_files(board)
        # left alone (0.3 s between crashes: how long does not matter here): three crashes,
        # then the REPL
        (tmp_path / "config.json").write_text(json.dumps({"sensor": sensor,
                                                          "start_delay_ms": 500,
                                                          "crash_reset_ms": 300}))
        mpremote(board, "fs", "cp", str(tmp_path / "config.json"), ":zeal_config.json")
        statuses, seen = reset_and_watch(board, lambda st, seen: seen.endswith(b">>> "), 60)
        assert statuses == [("CRASH", "RuntimeError")] * 3, (statuses, seen[-400:])
        assert CRASH_LINE.encode() in seen and seen.endswith(b">>> "), seen[-400:]
        stop = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
        assert stop["state"] == "repl", stop
        assert "zeal_hold" not in board_files(board)
    finally:
        mpremote(board, "exec", "import os\nfor f in ('crashy.py', 'zeal_config.json', "
                                "'zeal_hold'):\n try:\n  os.remove(f)\n except OSError:\n"
                                "  pass\n")
