"""`zeal flash --mqtt URL [--mqtt-user U --mqtt-password-file F] [--wifi SSID
--wifi-password-file F]` (zeal.board.flash): the config the board gets, what is shown (never a
credential), umqtt.simple installed by mip in the one mpremote command, one-line errors; and
the staged config accepted by the firmware's own checker on the unix port.
"""
import json
import os
import subprocess

import pytest

from zeal.board import conformance as C
from zeal.board import flash as D
from zeal.mechanism.grid import profile as P

from conftest import HUMIDITY

SECRET = "Pw-7f3c-secret"
WIFI_SECRET = "Wifi-91ab-secret"


@pytest.fixture
def files(tmp_path):
    prof = tmp_path / "hum.json"
    prof.write_text(P.from_bits(*HUMIDITY, 1.0, 8).to_json())
    pw = tmp_path / "mqtt.pw"
    pw.write_text(SECRET + "\n")
    wpw = tmp_path / "wifi.pw"
    wpw.write_text(WIFI_SECRET + "\n")
    return prof, pw, wpw


def zeal(capsys, *argv):
    from zeal.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_writes_the_mqtt_config_and_never_shows_a_credential(files, capsys):
    prof, pw, wpw = files
    argv = ["flash", "--port", "/dev/ttyACM0", "--profile", str(prof), "--dry-run",
            "--mqtt", "mqtt://broker.lan:1883", "--mqtt-user", "board-7",
            "--mqtt-password-file", str(pw), "--wifi", "lab-net",
            "--wifi-password-file", str(wpw)]
    code, out, err = zeal(capsys, *argv)
    assert code == 0, err
    assert SECRET not in out + err and WIFI_SECRET not in out + err
    assert "mip install umqtt.simple" in out and '"password": "***"' in out
    code, out, err = zeal(capsys, *(argv + ["--json"]))
    assert code == 0 and SECRET not in out + err and WIFI_SECRET not in out + err
    plan = json.loads(out)
    shown = next(s for s in plan["steps"] if s.get("board_file") == "zeal_config.json")
    assert json.loads(shown["text"])["output"] == {
        "kind": "mqtt", "url": "mqtt://broker.lan:1883", "user": "board-7", "password": "***",
        "wifi_ssid": "lab-net", "wifi_password": "***"}
    argv_m = next(s for s in plan["steps"] if s["kind"] == "mpremote")["argv"]
    i = argv_m.index("mip")
    assert argv_m[i:i + 3] == ["mip", "install", "umqtt.simple"]
    assert argv_m.index("exec") < i < argv_m.index("cp")  # before the copy, after lib/ exists
    # what is staged for the board holds the real credentials
    steps = D.plan_flash("/dev/ttyACM0", str(prof), mqtt={
        "url": "mqtt://broker.lan:1883", "user": "board-7", "password_file": str(pw),
        "wifi": "lab-net", "wifi_password_file": str(wpw)})
    staged = json.loads(next(s for s in steps if s.kind == "write"
                             and s.path.endswith("zeal_config.json")).data)
    assert staged["output"]["password"] == SECRET
    assert staged["output"]["wifi_password"] == WIFI_SECRET
    # a serial board: no mip step, the config as before
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--dry-run", "--json")
    plan = json.loads(out)
    assert "mip" not in next(s for s in plan["steps"] if s["kind"] == "mpremote")["argv"]


def test_a_password_in_the_url_is_hidden_too(files, capsys):
    prof, _, _ = files
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--dry-run", "--mqtt", "mqtt://u1:%s@10.0.0.2:1883" % SECRET)
    assert code == 0, err
    assert SECRET not in out + err and "mqtt://u1:***@10.0.0.2:1883" in out


@pytest.mark.parametrize("extra,needle", [
    (["--mqtt", "http://x:1"], "mqtt://"),
    (["--mqtt", "mqtt://x:70000"], "1..65535"),
    (["--wifi", "lab"], "need --mqtt"),
    (["--mqtt", "mqtt://x:1", "--mqtt-password-file", "PW"], "needs --mqtt-user"),
    (["--mqtt", "mqtt://x:1", "--wifi-password-file", "PW"], "needs --wifi"),
    (["--mqtt", "mqtt://x:1", "--mqtt-user", "u", "--mqtt-password-file", "/nonexistent/pw"],
     "cannot read the --mqtt-password file"),
])
def test_bad_mqtt_options_are_one_line(files, capsys, extra, needle):
    prof, pw, _ = files
    extra = [str(pw) if e == "PW" else e for e in extra]
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--dry-run", *extra)
    assert code == 1 and err.startswith("zeal: ") and err.count("\n") == 1, err
    assert needle in err and SECRET not in out + err


def test_config_file_with_an_mqtt_output_is_checked(tmp_path, files, capsys):
    prof, _, _ = files
    conf = tmp_path / "c.json"
    conf.write_text(json.dumps({"output": {"kind": "mqtt", "url": "mqtt://h:1883",
                                           "bogus": 1}}))
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--config", str(conf), "--dry-run")
    assert code == 1 and "unknown mqtt output key(s) bogus" in err


def test_the_staged_config_passes_the_firmwares_checker(mp_port, tmp_path, files):
    """The firmware's own start (zealfw.start + zealfw.mqtt_cfg) accepts what flash stages:
    on the unix port with a broker that is not there it starts, and !stop ends it cleanly."""
    prof, pw, wpw = files
    steps = D.plan_flash("/dev/ttyACM0", str(prof), mqtt={
        "url": "mqtt://127.0.0.1:9", "user": "board-7", "password_file": str(pw),
        "wifi": "lab-net", "wifi_password_file": str(wpw)})
    cfg = json.loads(next(s for s in steps if s.kind == "write"
                          and s.path.endswith("zeal_config.json")).data)
    cfg["output"]["linger_ms"] = 0
    cfg.update(start_delay_ms=0, period_ms=0)
    (tmp_path / "zeal_config.json").write_text(json.dumps(cfg))
    (tmp_path / "zeal_profile.json").write_text(prof.read_text())
    from zeal.board.umqtt import umqtt_path

    done = subprocess.run(
        [C.locate_micropython(), "-c", "import zealfw.main as m;print('@@%d' % m.run())"],
        cwd=tmp_path, input=b"!stop\n", capture_output=True, timeout=60,
        env=dict(os.environ, MICROPYPATH=os.pathsep.join([C.FIRMWARE, umqtt_path()])))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.strip().endswith(b"@@0")   # no STATUS CONFIG: nothing on stdout
    assert SECRET.encode() not in done.stdout + done.stderr


def test_mqtt_ca_is_staged_as_der_and_named_in_the_output(tmp_path, files, capsys):
    """--mqtt-ca FILE (PEM or DER) is copied to the board as DER (what every port's mbedTLS
    reads) and named by the output's `ca` key; the same bytes whichever form was given."""
    import ssl

    from mqtt_broker import throwaway_ca

    prof, pw, _ = files
    pem = throwaway_ca(tmp_path / "ca")[0]
    der = tmp_path / "ca.der"
    der.write_bytes(ssl.PEM_cert_to_DER_cert(open(pem).read()))
    staged = []
    for ca in (pem, der):
        steps = D.plan_flash("/dev/ttyACM0", str(prof), mqtt={
            "url": "mqtts://broker.lan:8883", "user": "board-7", "password_file": str(pw),
            "ca_file": str(ca)})
        conf = json.loads(next(s for s in steps if s.kind == "write"
                               and s.path.endswith("zeal_config.json")).data)
        assert conf["output"]["ca"] == D.BOARD_CA
        staged.append(next(s for s in steps if s.kind == "write"
                           and s.path.endswith(D.BOARD_CA)).data)
    assert staged[0] == staged[1] == der.read_bytes()
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--dry-run", "--json", "--mqtt", "mqtts://broker.lan:8883",
                          "--mqtt-ca", str(pem))
    assert code == 0, err
    files_out = {f["board"] for f in json.loads(out)["files"]}
    assert D.BOARD_CA in files_out


@pytest.mark.parametrize("url,ca,needle", [
    ("mqtt://broker.lan:1883", "PEM", "is for a TLS broker"),
    ("mqtts://broker.lan:8883", "/nonexistent/ca.pem", "cannot read the --mqtt-ca file"),
    ("mqtts://broker.lan:8883", "PW", "is not a CA certificate"),
])
def test_bad_mqtt_ca_is_one_line(tmp_path, files, capsys, url, ca, needle):
    from mqtt_broker import throwaway_ca

    prof, pw, _ = files
    ca = {"PEM": str(throwaway_ca(tmp_path / "ca")[0]) if ca == "PEM" else ca,
          "PW": str(pw)}.get(ca, ca)
    code, out, err = zeal(capsys, "flash", "--port", "/dev/ttyACM0", "--profile", str(prof),
                          "--dry-run", "--mqtt", url, "--mqtt-ca", ca)
    assert code == 1 and err.startswith("zeal: ") and err.count("\n") == 1, err
    assert needle in err and SECRET not in out + err
