"""`zeal flash` / `zeal devices` (zeal.board.flash): the plan, one-line errors, the compiled tree,
board discovery, and a real flash through mpremote into a raw-REPL emulator on a pty.

The emulator is tests/test_conformance.py's FAKE_BOARD (the device side of MicroPython's raw
REPL, running the code it is sent with CPython in a scratch folder that plays the board's
filesystem). After the flash, the files the fake board received are checked byte for byte and
then booted on the MicroPython unix port: main.py, lib/zealfw/*.mpy, the profile and the config
stream valid frames.
"""
import ast
import io
import json
import os
import pty
import subprocess
import sys
import threading
import tty
from types import SimpleNamespace

import pytest

from zeal.board import conformance as C
from zeal.board import firmware as F
from zeal.board import flash as D
from zeal.board import probe as PR
from zeal.board import stop as S
from zeal.board import devices
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
from zeal import wire
from zeal.errors import ProfileError, ZealError

from conftest import HOST, HUMIDITY, ROOT

FIRMWARE = os.path.join(ROOT, "firmware")
MODULES = sorted(f for f in os.listdir(os.path.join(FIRMWARE, "zealfw")) if f.endswith(".py"))


@pytest.fixture
def prof_file(tmp_path):
    prof = P.from_bits(*HUMIDITY, 1.0, 8)
    path = tmp_path / "hum.json"
    path.write_text(prof.to_json())
    return path


@pytest.fixture
def cal_prof_file(tmp_path):
    from fractions import Fraction

    prof = P.from_bits(0.0, 3.3, 1.0, 8, calibration=P.Calibration(Fraction(33, 655350),
                                                                   Fraction(0)))
    path = tmp_path / "adc.json"
    path.write_text(prof.to_json())
    return path


def zeal_main(argv):
    """The real command line, in process."""
    from zeal.cli import main

    return main(argv)


def one_line_error(capsys, argv):
    code = zeal_main(argv)
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert err.startswith("zeal: ") and err.count("\n") == 1, err
    assert "Traceback" not in out + err
    return err


# ---- the plan --------------------------------------------------------------------------------
def _step(steps, kind):
    found = [s for s in steps if s.kind == kind]
    assert len(found) == 1, kind
    return found[0]


def test_dry_run_plan_compiled(prof_file):
    steps = D.plan_flash("/dev/ttyACM0", str(prof_file), sensor="replay")
    step_kinds = [s.kind for s in steps]
    assert step_kinds == ["note", "compile", "write", "write", "port", "probe", "native",
                          "mpremote"]
    assert "--replay-file" in steps[0].label  # replay from the line: say how a board gets one
    probe = _step(steps, "probe")
    assert probe.argv == [sys.executable, "-m", "mpremote", "connect", "/dev/ttyACM0", "+",
                          "exec", PR.PROBE_CODE]
    comp = _step(steps, "compile")
    # native code is compiled after the probe, for the board's architecture
    native = _step(steps, "native")
    assert [rel for rel, _ in comp.sources] == ["lib/zealfw/" + m for m in MODULES
                                                if "zealfw/" + m not in F.NATIVE_MODULES]
    assert [rel for rel, _ in native.sources] == ["lib/" + m for m in F.NATIVE_MODULES]
    assert comp.tool == F.locate_mpy_cross() == native.tool
    for cmd in native.commands:
        assert cmd[len(native.tool)] == "-march=ARCH"
    for cmd, (rel, src) in zip(comp.commands + [c[:len(native.tool)] + c[len(native.tool) + 1:]
                                                for c in native.commands],
                               comp.sources + native.sources):
        mod = os.path.basename(src)[:-3]
        # -s: the .mpy names its module, not the host's path (interned on the board for good)
        assert cmd == comp.tool + ["-s", "zealfw" if mod == "__init__" else "zealfw." + mod,
                                   "-o", os.path.join(D.STAGE, "lib", "zealfw", mod + ".mpy"),
                                   src]
        assert src == os.path.join(FIRMWARE, "zealfw", os.path.basename(rel))

    prof_step, cfg_step = [s for s in steps if s.kind == "write"]
    assert prof_step.path == os.path.join(D.STAGE, "zeal_profile.json")
    assert prof_step.data == kinds.load(str(prof_file)).to_json()
    assert json.loads(cfg_step.data) == {"sensor": {"kind": "replay"}}

    mp = _step(steps, "mpremote")
    pkg = [os.path.join(D.STAGE, "lib", "zealfw", m[:-3] + ".mpy") for m in MODULES]
    assert mp.files == ([(p, "lib/zealfw/" + os.path.basename(p)) for p in pkg] +
                        [(os.path.join(D.STAGE, "zeal_profile.json"), "zeal_profile.json"),
                         (os.path.join(D.STAGE, "zeal_config.json"), "zeal_config.json"),
                         (os.path.join(FIRMWARE, "board", "main.py"), "main.py")])
    argv = mp.argv
    assert argv[:5] == [sys.executable, "-m", "mpremote", "connect", "/dev/ttyACM0"]
    # one invocation, commands chained with "+"
    chain, cur = [], []
    for a in argv[5:]:
        if a == "+":
            chain.append(cur)
            cur = []
        else:
            cur.append(a)
    chain.append(cur)
    assert chain[0] == []
    assert chain[1][0] == "exec" and len(chain[1]) == 2
    assert chain[2] == ["fs", "cp"] + pkg + [":lib/zealfw/"]
    assert chain[3] == ["fs", "cp", os.path.join(D.STAGE, "zeal_profile.json"),
                        ":zeal_profile.json"]
    assert chain[4] == ["fs", "cp", os.path.join(D.STAGE, "zeal_config.json"),
                        ":zeal_config.json"]
    assert chain[5] == ["fs", "cp", os.path.join(FIRMWARE, "board", "main.py"), ":main.py"]
    assert chain[6] == ["reset"]
    # the board-side preparation is valid Python naming exactly the new modules
    tree = ast.parse(chain[1][1])
    names = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    for m in MODULES:
        assert m[:-3] + ".mpy" in names and m not in names


def test_dry_run_plan_without_compiling(prof_file):
    for kwargs in ({"compile": False}, {"mpy_cross": False}):
        steps = D.plan_flash("/dev/ttyUSB0", str(prof_file), **kwargs)
        assert "compile" not in [s.kind for s in steps]
        mp = _step(steps, "mpremote")
        pkg = [os.path.join(FIRMWARE, "zealfw", m) for m in MODULES]
        assert mp.files[:len(pkg)] == [(p, "lib/zealfw/" + os.path.basename(p)) for p in pkg]
        assert mp.argv[mp.argv.index("cp"):][1:len(pkg) + 2] == pkg + [":lib/zealfw/"]
        notes = [s.label for s in steps if s.kind == "note"]
        assert any("mpy-cross not found" in n for n in notes) == ("mpy_cross" in kwargs)
        assert json.loads([s for s in steps if s.kind == "write"][1].data) == {}


@pytest.mark.parametrize("spec, sensor", [
    ("replay", {"kind": "replay"}),
    ("adc:26", {"kind": "adc", "pin": 26}),
    ("adc:34:11db", {"kind": "adc", "pin": 34, "atten": 3}),
    ("adc:34:2", {"kind": "adc", "pin": 34, "atten": 2}),
    ("adc:GP26", {"kind": "adc", "pin": "GP26"}),
    ("callable:bme280_zeal.read", {"kind": "callable", "module": "bme280_zeal",
                                   "function": "read"}),
    ("callable:drivers.sht3x.humidity", {"kind": "callable", "module": "drivers.sht3x",
                                         "function": "humidity"}),
])
def test_config_from_each_sensor_spec(cal_prof_file, spec, sensor):
    assert D.parse_sensor(spec) == sensor
    steps = D.plan_flash("/dev/ttyACM0", str(cal_prof_file), sensor=spec)
    cfg = [s for s in steps if s.kind == "write"][1]
    assert cfg.path.endswith("zeal_config.json") and json.loads(cfg.data) == {"sensor": sensor}


def test_config_file_merged_under_the_sensor(tmp_path, cal_prof_file):
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"period_ms": 250, "batch": 32, "sensor": {"kind": "replay"},
                                "output": {"kind": "uart", "id": 1, "tx": 4, "rx": 5}}))
    cfg = D.build_config("adc:26", str(conf))
    assert cfg == {"period_ms": 250, "batch": 32, "sensor": {"kind": "adc", "pin": 26},
                   "output": {"kind": "uart", "id": 1, "tx": 4, "rx": 5}}
    assert D.build_config(None, str(conf))["sensor"] == {"kind": "replay"}
    steps = D.plan_flash("/dev/ttyACM0", str(cal_prof_file), sensor="adc:26", config=str(conf))
    assert json.loads([s for s in steps if s.kind == "write"][1].data) == cfg


def test_config_keys_match_the_firmware():
    # _DEFAULTS lives in whichever firmware module loads the config (start-up code moves)
    found = []
    for name in MODULES:
        with open(os.path.join(FIRMWARE, "zealfw", name)) as fh:
            tree = ast.parse(fh.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_DEFAULTS":
                found.append((name, [k.value for k in node.value.keys]))
    assert len(found) == 1, "expected one _DEFAULTS in firmware/zealfw, found %r" % found
    assert sorted(found[0][1]) == sorted(D.CONFIG_KEYS)


@pytest.mark.parametrize("spec", ["", "adc", "adc:", "adc:26:9", "adc:26:11db:x", "adc:2-6",
                                  "callable:read", "callable:mod.", "callable:1mod.read",
                                  "replay:x", "i2c:0x76", "ADC:26"])
def test_bad_sensor_spec(prof_file, capsys, spec):
    with pytest.raises(ZealError) as info:
        D.parse_sensor(spec)
    assert D.SENSOR_FORMS in str(info.value)
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--sensor", spec, "--dry-run"])
    assert "adc:PIN[:ATTEN], rp2040-temp, replay, callable:MODULE.FUNCTION" in err


@pytest.mark.parametrize("doc, needle", [
    ({"bogus": 1}, "unknown key(s) bogus"),
    ({"batch": 0}, "batch must be 1..255"),
    ({"period_ms": -1}, "period_ms must be a non-negative integer"),
    ({"period_ms": True}, "period_ms must be a non-negative integer"),
    ({"profile": "other.json"}, "drop the profile key"),
    ({"sensor": {"kind": "i2c"}}, "sensor kind must be adc, rp2040_temp, replay or callable"),
    ({"sensor": {"kind": "adc"}}, "adc sensor needs pin"),
    ({"output": {"kind": "usb"}}, "output must be"),
    ({"vector_key": "abc"}, "vector_key must be 64 hex digits"),
    ([1, 2], "must be a JSON object"),
])
def test_bad_config_file(tmp_path, prof_file, capsys, doc, needle):
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps(doc))
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--config", str(conf), "--dry-run"])
    assert needle in err


def test_adc_needs_a_calibrated_profile(prof_file, capsys):
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyACM0", "--profile",
                                  str(prof_file), "--sensor", "adc:26", "--dry-run"])
    assert "needs a calibration" in err


def test_unreadable_or_invalid_profile_is_checked_first(tmp_path, capsys):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{broken")
    tampered = tmp_path / "tampered.json"
    doc = json.loads(P.from_bits(*HUMIDITY, 1.0, 4).to_json())
    doc["threshold"] += 1
    tampered.write_text(json.dumps(doc))
    # the tampered file is refused for its fingerprint (checked first, as on the device) or
    # for its threshold
    for path, needle in ((tmp_path / "missing.json", "cannot read profile"),
                         (bad_json, "not valid JSON"), (tampered, "fingerprint|threshold")):
        with pytest.raises(ProfileError):
            # checked before the (also bad) sensor spec and the (missing) port
            D.plan_flash("/dev/nope", str(path), sensor="bogus")
        err = one_line_error(capsys, ["flash", "--port", "/dev/nope", "--profile", str(path),
                                      "--sensor", "bogus"])
        assert any(n in err for n in needle.split("|")), err


def test_missing_port_is_one_line(prof_file, capsys, tmp_path):
    err = one_line_error(capsys, ["flash", "--port", "/dev/ttyZEAL-missing", "--profile",
                                  str(prof_file), "--no-compile"])
    assert "no port /dev/ttyZEAL-missing (is the board plugged in?" in err
    not_a_tty = tmp_path / "plain-file"
    not_a_tty.write_text("")
    err = one_line_error(capsys, ["flash", "--port", str(not_a_tty), "--profile",
                                  str(prof_file), "--no-compile"])
    assert "cannot open %s" % not_a_tty in err
    err = one_line_error(capsys, ["flash", "--port", "nosuchscheme://x", "--profile",
                                  str(prof_file), "--no-compile"])
    assert "cannot open nosuchscheme://x" in err


def test_dry_run_prints_every_step_and_touches_nothing(prof_file, capsys):
    code = zeal_main(["flash", "--port", "/dev/ttyZEAL-missing", "--profile", str(prof_file),
                      "--sensor", "callable:drv.read", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "nothing is sent to /dev/ttyZEAL-missing" in out
    assert "note: /dev/ttyZEAL-missing does not exist now" in out
    assert "[7/7] mpremote" in out and "mpremote connect /dev/ttyZEAL-missing + exec" in out
    assert "[5/7] mpremote: check that /dev/ttyZEAL-missing can write a file" in out
    assert "[6/7] compile zealfw/sha256_viper.py for the board's architecture" in out
    assert "-march=ARCH" in out
    assert "ZEAL-PROBE" in out  # the probe's code, as sent
    assert '"module": "drv"' in out
    for m in MODULES:
        assert ":lib/zealfw/%s.mpy" % m[:-3] in out
    assert ":main.py" in out and ":zeal_profile.json" in out and ":zeal_config.json" in out


def test_check_port_sends_stop_and_waits_for_the_prompt():
    """A board at its REPL answers "!stop" with a SyntaxError and ">>> ": check_port returns
    as soon as the prompt arrives; a silent port is waited for `wait` s, then False."""
    import time

    master, slave = pty.openpty()
    tty.setraw(slave)
    got = bytearray()

    def repl():
        while b"!stop" not in got:
            got.extend(os.read(master, 64))
        os.write(master, b"!stop\r\nTraceback (most recent call last):\r\n"
                         b"SyntaxError: invalid syntax\r\n>>> ")

    t = threading.Thread(target=repl, daemon=True)
    t.start()
    try:
        start = time.monotonic()
        assert S.check_port(os.ttyname(slave), wait=20) is True
        assert time.monotonic() - start < 10
        assert bytes(got).startswith(S.STOP_LINE)
        t.join(5)
        start = time.monotonic()
        assert S.check_port(os.ttyname(slave), wait=0.3) is False
        assert time.monotonic() - start >= 0.3
    finally:
        os.close(master)
        os.close(slave)


def test_mpremote_error_lines():
    port = "/dev/ttyACM0"
    tb = ("Traceback (most recent call last):\n  File \"x\", line 1\n"
          "mpremote.transport.TransportError: could not enter raw repl\n")
    msg = PR.mpremote_error(tb, port)
    assert msg.startswith("mpremote failed on /dev/ttyACM0: could not enter raw repl (")
    assert "\n" not in msg
    assert PR.mpremote_error("cp x :y\nmpremote: failed to access /dev/ttyACM0 (it may be in "
                            "use by another program)\n", port).endswith(
        "failed to access /dev/ttyACM0 (it may be in use by another program)")
    board = "Traceback (most recent call last):\r\n  File \"<stdin>\", line 4\r\nOSError: 28\r\n"
    assert PR.mpremote_error(board, port).endswith(": OSError: 28 (the board's filesystem is "
                                                  "full, ENOSPC)")
    board = "Traceback (most recent call last):\r\nOSError: [Errno 19] ENODEV\r\n"
    assert PR.mpremote_error(board, port).endswith(": OSError: [Errno 19] ENODEV (the board has "
                                                  "no filesystem mounted, ENODEV)")
    board = "Traceback (most recent call last):\r\nOSError: [Errno 2] ENOENT\r\n"
    assert PR.mpremote_error(board, port).endswith(": OSError: [Errno 2] ENOENT")
    board = "Traceback (most recent call last):\r\nAttributeError: 'module' object has no attr\r\n"
    assert PR.mpremote_error(board, port).endswith(": AttributeError: 'module' object has no attr")
    assert PR.mpremote_error("", port).endswith(": no output")


# ---- the compiled tree -----------------------------------------------------------------------
def test_compiled_tree_loads_on_the_unix_port(mp_port, tmp_path, prof_file):
    steps = D.plan_flash("/dev/ttyACM0", str(prof_file), stage=str(tmp_path))
    comp = _step(steps, "compile")
    sizes = C.compile_tree(str(tmp_path), sources=comp.sources, mpy_cross=comp.tool)
    native = _step(steps, "native")  # for the unix port, as the probe would name it
    sizes.update(C.compile_tree(str(tmp_path), sources=native.sources, mpy_cross=native.tool,
                                arch=F.micropython_arch()))
    assert sorted(sizes) == sorted("lib/zealfw/%s.mpy" % m[:-3] for m in MODULES)
    pkg = [p for p, _ in _step(steps, "mpremote").files if p.endswith(".mpy")]
    for p in pkg:
        with open(p, "rb") as fh:
            head = fh.read(4)
        assert head[:2] == b"M\x06", (p, head)  # .mpy v6: MicroPython >= 1.19
    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    done = subprocess.run([mp, "-c", "import zealfw.main, zealfw.sources; print(zealfw.main."
                           "__file__)"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, MICROPYPATH=str(tmp_path / "lib")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("zealfw/main.mpy")


# ---- finding the firmware --------------------------------------------------------------------
def test_find_firmware_in_a_checkout():
    assert F.find_firmware() == FIRMWARE
    pkg, modules, main = F.firmware_files()
    assert pkg == os.path.join(FIRMWARE, "zealfw") and main == os.path.join(FIRMWARE, "board",
                                                                            "main.py")
    assert [os.path.basename(m) for m in modules] == MODULES


def test_find_firmware_in_an_installed_wheel(tmp_path, monkeypatch):
    """A wheel installs zealfw/ (firmware/zealfw) with zealfw/_board/main.py (firmware/board)."""
    import importlib
    import shutil

    site = tmp_path / "site"
    shutil.copytree(os.path.join(FIRMWARE, "zealfw"), site / "zealfw")
    shutil.copytree(os.path.join(FIRMWARE, "board"), site / "zealfw" / "_board")
    monkeypatch.setattr(F, "REPO_FIRMWARE", str(tmp_path / "no-checkout"))
    monkeypatch.syspath_prepend(str(site))
    for name in [n for n in sys.modules if n == "zealfw" or n.startswith("zealfw.")]:
        monkeypatch.delitem(sys.modules, name)  # another test may have run the firmware here
    importlib.invalidate_caches()
    assert F.find_firmware() == str(site / "zealfw")
    pkg, modules, main = F.firmware_files()
    assert pkg == str(site / "zealfw") and main == str(site / "zealfw" / "_board" / "main.py")
    assert [os.path.basename(m) for m in modules] == MODULES  # _board is not a device module
    assert "zealfw" not in sys.modules  # located, never imported


def test_find_firmware_missing_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(F, "REPO_FIRMWARE", str(tmp_path / "no-checkout"))
    monkeypatch.setattr(F.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ZealError, match="firmware not found"):
        F.find_firmware()


def test_pyproject_ships_the_firmware():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        st = tomllib.load(fh)["tool"]["setuptools"]
    assert {"zeal", "zealfw", "zealfw._board"} <= set(st["packages"])
    assert st["package-dir"]["zealfw"] == "firmware/zealfw"
    assert st["package-dir"]["zealfw._board"] == "firmware/board"
    # every sub-package of zeal (a folder with __init__.py) is listed
    for dirpath, _, files in os.walk(os.path.join(HOST, "zeal")):
        if "__init__.py" in files:
            rel = os.path.relpath(dirpath, HOST).replace(os.sep, ".")
            assert rel in st["packages"], rel


# ---- devices ---------------------------------------------------------------------------------
def _port(device, vid=None, pid=None, description="n/a", manufacturer=None, product=None,
          serial_number=None):
    return SimpleNamespace(device=device, vid=vid, pid=pid, description=description,
                           manufacturer=manufacturer, product=product,
                           serial_number=serial_number)


PORTS = [
    _port("/dev/ttyACM0", 0x2E8A, 0x0005, "Board in FS mode", "MicroPython", serial_number="e66"),
    _port("/dev/ttyACM1", 0x303A, 0x1001, "USB JTAG/serial debug unit"),
    _port("/dev/ttyACM2", 0xF055, 0x9800, "Pyboard Virtual Comm Port"),
    _port("/dev/ttyUSB0", 0x10C4, 0xEA60, "CP2102 USB to UART Bridge Controller"),
    _port("/dev/ttyUSB1", 0x1A86, 0x7523, "USB2.0-Serial"),
    _port("/dev/ttyUSB2", 0x0403, 0x6001, "FT232R USB UART"),
    _port("/dev/ttyACM3", 0x1234, 0x5678, "Some board", product="MicroPython Board"),
    _port("/dev/ttyACM4", 0x046D, 0xC52B, "Logitech receiver"),
    _port("/dev/ttyUSB3", 0x10C4, 0x1234, "CP2105 other PID"),
    _port("/dev/ttyS0", None, None, "ttyS0"),
]


def test_list_devices(monkeypatch, capsys):
    import serial.tools.list_ports

    monkeypatch.setattr(serial.tools.list_ports, "comports", lambda: list(PORTS))
    rows = devices.list_devices()
    assert [r["device"] for r in rows] == ["/dev/ttyACM0", "/dev/ttyACM1", "/dev/ttyACM2",
                                           "/dev/ttyACM3", "/dev/ttyUSB0", "/dev/ttyUSB1",
                                           "/dev/ttyUSB2"]
    by = {r["device"]: r for r in rows}
    assert by["/dev/ttyACM0"] == {"device": "/dev/ttyACM0", "description": "Board in FS mode",
                                  "vid_pid": "2e8a:0005", "serial_number": "e66",
                                  "why_matched": "Raspberry Pi USB VID (RP2040/RP2350 boards); "
                                                 "manufacturer says MicroPython"}
    assert "Espressif" in by["/dev/ttyACM1"]["why_matched"]
    assert "MicroPython's USB VID" in by["/dev/ttyACM2"]["why_matched"]
    assert by["/dev/ttyACM3"]["why_matched"] == "product says MicroPython"
    assert "CP210x" in by["/dev/ttyUSB0"]["why_matched"]
    assert "CH340" in by["/dev/ttyUSB1"]["why_matched"]
    assert "FTDI" in by["/dev/ttyUSB2"]["why_matched"]
    everything = devices.list_devices(all_ports=True)
    assert len(everything) == len(PORTS)
    other = {r["device"]: r for r in everything}
    assert other["/dev/ttyS0"] == {"device": "/dev/ttyS0", "description": "ttyS0",
                                   "vid_pid": "", "serial_number": "", "why_matched": ""}
    assert other["/dev/ttyUSB3"]["why_matched"] == ""  # CP210x VID, other PID

    assert zeal_main(["devices", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == rows
    assert zeal_main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "/dev/ttyACM0" in out and "/dev/ttyS0" not in out and "2e8a:0005" in out
    assert zeal_main(["devices", "--all"]) == 0
    assert "/dev/ttyS0" in capsys.readouterr().out


def test_no_devices(monkeypatch, capsys):
    import serial.tools.list_ports

    monkeypatch.setattr(serial.tools.list_ports, "comports",
                        lambda: [_port("/dev/ttyS0"), _port("/dev/ttyACM9", 0x046D, 0xC52B)])
    assert devices.list_devices() == []
    assert zeal_main(["devices"]) == 0
    assert capsys.readouterr().out.startswith("no MicroPython boards found")
    assert zeal_main(["devices", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == [] and "no MicroPython boards found" in cap.err


# ---- through the real `zeal` command ---------------------------------------------------------
def test_cli_subprocess(prof_file):
    env = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def zeal(*args):
        return subprocess.run([sys.executable, "-m", "zeal.cli", *args], capture_output=True,
                              text=True, env=env, timeout=120)

    done = zeal("flash", "--port", "/dev/ttyZEAL-missing", "--profile", str(prof_file))
    assert done.returncode == 1 and done.stderr.startswith("zeal: no port ")
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    done = zeal("flash", "--port", "/dev/ttyACM0", "--profile", str(prof_file), "--sensor",
                "spi:1")
    assert done.returncode == 1 and "callable:MODULE.FUNCTION" in done.stderr
    done = zeal("flash", "--port", "/dev/ttyACM0", "--profile", str(prof_file), "--dry-run")
    assert done.returncode == 0 and "mpremote connect /dev/ttyACM0" in done.stdout
    done = zeal("devices", "--json")
    assert done.returncode == 0 and isinstance(json.loads(done.stdout), list)


# ---- a real flash, into the raw-REPL emulator ------------------------------------------------
# The emulator runs machine.reset() and time.sleep_ms() with these stand-ins (mpremote's
# `reset` is exec "import time, machine; time.sleep_ms(100); machine.reset()").
BOARD_PRELUDE = r"""
import os as _os, sys as _sys, time as _time, types as _types
_time.sleep_ms = lambda ms: _time.sleep(ms / 1000)
_machine = _types.ModuleType("machine")
def _reset(log=_os.path.join(_os.path.abspath(_sys.argv[1]), "..", "resets.log")):
    with open(log, "a") as fh:
        fh.write("reset\n")
_machine.reset = _reset
_sys.modules["machine"] = _machine
if _os.environ.get("ZEAL_FAKE_MPY"):  # the unix port's, for the probe's native architecture
    _sys.implementation._mpy = int(_os.environ["ZEAL_FAKE_MPY"])
class _Stat(tuple):  # os.stat as MicroPython returns it: a tuple (mpremote <= 1.28 evals its repr)
    def __new__(cls, st):
        self = tuple.__new__(cls, tuple(st)[:10])
        self._st = st
        return self
    def __getattr__(self, name):
        return getattr(self._st, name)
_os_stat = _os.stat
_os.stat = lambda *a, **k: _Stat(_os_stat(*a, **k))
"""


class FakeBoard:
    def __init__(self, tmp_path):
        from test_conformance import FAKE_BOARD

        self.master, self.slave = pty.openpty()
        tty.setraw(self.slave)
        script = tmp_path / "fake_board.py"
        script.write_text(BOARD_PRELUDE + FAKE_BOARD)
        self.fs = tmp_path / "fs"
        self.fs.mkdir()
        self.resets = tmp_path / "resets.log"
        # it answers the probe as the unix port does, which boots what it received (below)
        mp = C.locate_micropython()
        mpy = subprocess.run([mp, "-c", "import sys; print(sys.implementation._mpy)"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        self.proc = subprocess.Popen([sys.executable, str(script), str(self.fs)],
                                     stdin=self.master, stdout=self.master,
                                     env=dict(os.environ, PYTHONPATH="", ZEAL_FAKE_MPY=mpy))
        os.close(self.master)  # the emulator holds it
        self.port = os.ttyname(self.slave)
        self.watchdog = threading.Timer(300, self.proc.kill)
        self.watchdog.start()

    def files(self):
        return sorted(p.relative_to(self.fs).as_posix() for p in self.fs.rglob("*")
                      if p.is_file())

    def wait_resets(self, n, timeout=10):
        import time

        deadline = time.monotonic() + timeout
        while True:
            count = len(self.resets.read_text().splitlines()) if self.resets.exists() else 0
            if count >= n or time.monotonic() > deadline:
                return count
            time.sleep(0.05)

    def close(self):
        self.watchdog.cancel()
        self.proc.kill()
        self.proc.wait()
        os.close(self.slave)


@pytest.fixture
def fake_board(tmp_path):
    pytest.importorskip("mpremote")
    board = FakeBoard(tmp_path)
    yield board
    board.close()


@pytest.mark.slow
def test_flash_into_a_fake_board(mp_port, fake_board, tmp_path, prof_file):
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"start_delay_ms": 0, "period_ms": 0, "batch": 4}))
    out = io.StringIO()

    # 1) .py sources (as with --no-compile), and a stray module from an older firmware
    (fake_board.fs / "lib" / "zealfw").mkdir(parents=True)
    (fake_board.fs / "lib" / "zealfw" / "retired.mpy").write_bytes(b"M\x06old")
    D.flash(fake_board.port, str(prof_file), sensor="replay", config=str(conf), compile=False,
            out=out, stop_wait=0.05, timeout=240)
    text = out.getvalue()
    assert "[1/5] write zeal_profile.json" in text and "[5/5] mpremote" in text
    assert "[4/5] mpremote: check" in text and "has os.urandom" in text
    assert "flashed %s: %d files" % (fake_board.port, len(MODULES) + 3) in text
    want_py = ["lib/zealfw/" + m for m in MODULES]
    assert fake_board.files() == sorted(want_py + ["main.py", "zeal_config.json",
                                                   "zeal_profile.json"])
    for m in MODULES:
        assert (fake_board.fs / "lib" / "zealfw" / m).read_bytes() == \
            open(os.path.join(FIRMWARE, "zealfw", m), "rb").read()

    # 2) compiled: the .py files go (they would shadow the .mpy), unchanged files are skipped
    out = io.StringIO()
    steps = D.flash(fake_board.port, str(prof_file), sensor="replay", config=str(conf),
                    out=out, stop_wait=0.05, timeout=240)
    text = out.getvalue()
    assert "[1/7] compile %d modules" % (len(MODULES) - len(F.NATIVE_MODULES)) in text
    # native code for the architecture the probe reported: the unix port's
    assert "[6/7] compile zealfw/sha256_viper.py for the board's architecture" in text
    assert "      for %s\n" % F.micropython_arch() in text
    assert "Up to date: main.py" in text and "Up to date: zeal_profile.json" in text
    want_mpy = ["lib/zealfw/%s.mpy" % m[:-3] for m in MODULES]
    assert fake_board.files() == sorted(want_mpy + ["main.py", "zeal_config.json",
                                                    "zeal_profile.json"])
    assert fake_board.wait_resets(2) == 2  # `reset` is sent without waiting for the board

    # byte for byte what was planned
    ref = tmp_path / "ref"
    C.compile_tree(str(ref), sources=_step(steps, "compile").sources,
                   mpy_cross=_step(steps, "compile").tool)
    C.compile_tree(str(ref), sources=_step(steps, "native").sources,
                   mpy_cross=_step(steps, "native").tool, arch=F.micropython_arch())
    for rel in want_mpy:
        assert (fake_board.fs / rel).read_bytes() == (ref / rel).read_bytes(), rel
    assert (fake_board.fs / "zeal_profile.json").read_text() == kinds.load(str(prof_file)).to_json()
    assert json.loads((fake_board.fs / "zeal_config.json").read_text()) == {
        "start_delay_ms": 0, "period_ms": 0, "batch": 4, "sensor": {"kind": "replay"}}
    assert (fake_board.fs / "main.py").read_bytes() == \
        open(os.path.join(FIRMWARE, "board", "main.py"), "rb").read()

    # 3) boot what the board received on the MicroPython unix port: main.py from the board's
    # root, the .mpy package from lib/, replay readings in, frames out
    mp = C.locate_micropython()
    if mp is None:
        pytest.fail("the MicroPython unix port is a test dependency")
    prof = kinds.load(str(prof_file))
    readings = ["%016x" % int.from_bytes(__import__("struct").pack(">d", x), "big")
                for x in (30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 25.0, 35.0)]
    done = subprocess.run([mp, "main.py"], cwd=fake_board.fs, capture_output=True, timeout=120,
                          input=("\n".join(readings + ["!stop"]) + "\n").encode(),
                          env=dict(os.environ, MICROPYPATH=str(fake_board.fs / "lib")))
    assert done.returncode == 0, done.stderr.decode()
    dec = wire.Decoder([prof])
    events = dec.feed(done.stdout)
    hellos = [e for e in events if isinstance(e, wire.Hello)]
    batches = [e for e in events if isinstance(e, wire.Batch)]
    statuses = [e for e in events if isinstance(e, wire.Status)]
    assert hellos and hellos[0].fingerprint == bytes.fromhex(prof.fingerprint)[:8]
    assert sum(len(b) for b in batches) == len(readings)
    assert statuses[-1].code_name == "STOPPED"


@pytest.mark.slow
def test_flash_reports_a_board_that_does_not_answer(tmp_path, prof_file):
    """A port that opens but never answers. Through a path outside /dev/pts mpremote polls
    the port and gives up entering the raw REPL after its own 10 s; through /dev/pts/N it
    blocks on a read (mpremote's pty mode), and flash's timeout ends it. One line each."""
    pytest.importorskip("mpremote")
    master, slave = pty.openpty()
    tty.setraw(slave)
    link = tmp_path / "ttyQUIET"
    link.symlink_to(os.ttyname(slave))
    try:
        with pytest.raises(ZealError) as info:
            D.flash(str(link), str(prof_file), compile=False, out=io.StringIO(), stop_wait=0,
                    timeout=120)
        msg = str(info.value)
        assert msg.startswith("mpremote failed on %s: could not enter raw repl" % link), msg
        assert "\n" not in msg
        with pytest.raises(ZealError) as info:
            D.flash(os.ttyname(slave), str(prof_file), compile=False, out=io.StringIO(),
                    stop_wait=0, timeout=3)
        assert str(info.value) == "mpremote did not finish on %s within 3 s" % os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)
