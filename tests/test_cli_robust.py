"""The command line at its edges (issue 8, item 7): extreme numbers, broken files, `-o -`,
`--format`, `--port auto`, one missing-port message, `--json` on stdout only, help with defaults.

Every user mistake must end in one line `zeal: ...` on stderr and a non-zero exit (never a
traceback); every accepted input must give a correct result. The extreme cases run through
the real CLI in a subprocess (what a user types); the board-discovery cases in process, with
the serial port listing replaced.
"""
import argparse
import json
import os
import pty
import subprocess
import sys
import threading
import tty

import pytest

from zeal.board import flash as D
from zeal.cli import build_parser, main as zeal_main
from zeal.mechanism import profile as P
from zeal.wire.transport import missing_port

from conftest import HOST, HUMIDITY

ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))


def zeal(*args, stdin=None, timeout=120):
    """The real `zeal`, in a subprocess; stdin and outputs as bytes."""
    return subprocess.run([sys.executable, "-m", "zeal.cli", *map(str, args)], input=stdin,
                          capture_output=True, env=ENV, timeout=timeout)


def assert_one_line_error(done, fragment=""):
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode != 0, (done.stdout, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zeal: "), err
    assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def strict_json(text):
    """JSON as the standard defines it: Infinity and NaN are not numbers."""
    def refuse(name):
        raise ValueError("not JSON: %s" % name)
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def prof_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("p") / "hum.json"
    path.write_text(P.from_bits(*HUMIDITY, 1.0, 4).to_json())
    return path


# ---- extreme numbers ------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("--range", "0", "1", "--epsilon", "1e-19"),
    ("--range", "0", "1", "--epsilon", "1e-300"),
    ("--range", "0", "1", "--epsilon", "5e-324"),
    ("--range", "-1.7e308", "1.7e308", "--epsilon", "1"),
    ("--range", "1e308", "1.7e308", "--epsilon", "1"),
    ("--range", "-8.9e307", "8.9e307", "--epsilon", "20"),
    ("--range", "0", "5e-324", "--epsilon", "1"),
    ("--range", "-1e300", "1e300", "--epsilon", "6e-20", "--bits", "2"),
])
def test_profiles_no_grid_can_hold_are_one_line_errors(args):
    assert_one_line_error(zeal("profile", *args))


@pytest.mark.parametrize("args", [
    ("--range", "1.7e308", "1.79e308", "--epsilon", "20"),   # the top binade
    ("--range", "-2.2e307", "2.2e307", "--epsilon", "20"),   # 2C just under 2^1022
    ("--range", "0", "1", "--epsilon", "1e-17", "--bits", "2"),  # a - 1 is 0 in float64
    ("--range", "0", "1", "--epsilon", "1e-15"),
    ("--range", "0", "1e-300", "--epsilon", "1"),
])
def test_extreme_profiles_that_exist_give_correct_figures(tmp_path, args):
    out = tmp_path / "p.json"
    done = zeal("profile", *args, "--json", "-o", out)
    assert done.returncode == 0, done.stderr
    doc = strict_json(done.stdout)
    prof = P.load(str(out))  # the file written is a valid profile, the one reported
    assert doc["fingerprint"] == prof.fingerprint and doc["bits"] == prof.bits
    assert doc["n_cells"] == prof.n_cells and 2 <= prof.n_cells < 1 << 52
    # E_enc is the smallest binade holding 2C: exactly (Fractions, here) for the grid; the
    # paper's float64 figure may be one off at tiny epsilon, where float64 rounds a - 1
    from fractions import Fraction
    two_c = 2 * Fraction(prof.continuous.c)
    exact = prof.continuous.e_enc()
    assert Fraction(2) ** (exact - 1) < two_c <= Fraction(2) ** exact
    assert exact <= prof.exponent <= 1022 and abs(doc["e_enc"] - exact) <= 1
    assert 1 <= doc["privacy_ratio"] <= 2.718281828459045 ** prof.epsilon * (1 + 1e-12)
    assert 0 < doc["gamma_min"] <= 64


def test_perturb_and_aggregate_near_the_top_of_float64(tmp_path):
    """Perturb works under a profile near 1.8e308; aggregate either estimates (a finite mean
    inside the range) or says in one line why it cannot (its error bound overflows)."""
    prof = tmp_path / "top.json"
    assert zeal("profile", "--range", "1.7e308", "1.79e308", "--epsilon", "20",
                "-o", prof).returncode == 0
    done = zeal("perturb", "--profile", prof, "--seed", "1", stdin=b"1.75e308\n1.71e308\n")
    assert done.returncode == 0, done.stderr
    reports = done.stdout
    assert len(reports.splitlines()) == 2
    agg = zeal("aggregate", "--profile", prof, "--json", stdin=reports)
    if agg.returncode == 0:
        doc = strict_json(agg.stdout)
        assert 1.7e308 - 1e307 <= doc["mean_calibrated"] <= 1.79e308 + 1e307
    else:
        assert_one_line_error(agg, "overflows float64")


# ---- broken files -----------------------------------------------------------------------------
BAD_PROFILES = {
    "nested": b"[" * 100000 + b"]" * 100000,
    "nested_small": b"{\"a\":" + b"[" * 240 + b"]" * 240 + b"}",   # within the 502-byte cap
    "digits": b"{\"n_cells\": " + b"9" * 5000 + b"}",
    "digits_small": b"{\"n_cells\": " + b"9" * 450 + b"}",
    "empty": b"",
    "latin1": b"{\"format\": \"zeal-profile/1\", \"unit\": \"\xb0C\"}",
    "not_utf8": b"\xff\xfe{}",
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    paths = {}
    for name, data in BAD_PROFILES.items():
        paths[name] = folder / (name + ".json")
        paths[name].write_bytes(data)
    paths["directory"] = folder
    return paths


@pytest.mark.parametrize("command", [
    ("perturb",), ("aggregate",),
    ("collect", "--port", "loop://", "--db", "DB", "--duration", "0.3"),
    ("flash", "--port", "/dev/ttyACM0", "--dry-run"),
])
@pytest.mark.parametrize("which", sorted(BAD_PROFILES) + ["directory"])
def test_every_profile_reader_refuses_broken_files_in_one_line(tmp_path, bad_files, command,
                                                                which):
    args = [str(tmp_path / "z.db") if a == "DB" else a for a in command]
    done = zeal(*args, "--profile", bad_files[which], stdin=b"1\n")
    assert_one_line_error(done, "profile")


@pytest.mark.parametrize("command", ["perturb", "aggregate"])
def test_input_that_is_not_utf8_is_one_line_naming_the_line(tmp_path, prof_file, command):
    first = zeal("perturb", "--profile", prof_file, "--seed", "1", stdin=b"30\n").stdout
    line1 = b"30\n" if command == "perturb" else first
    data = line1 + b"\xff\xfe\x00garbage\n"
    assert_one_line_error(zeal(command, "--profile", prof_file, stdin=data),
                          "line 2: not UTF-8 text")
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    assert_one_line_error(zeal(command, "--profile", prof_file, "--input", path),
                          "line 2: not UTF-8 text")


@pytest.mark.parametrize("command", ["perturb", "aggregate"])
def test_input_directory_and_output_directory(tmp_path, prof_file, command):
    assert_one_line_error(zeal(command, "--profile", prof_file, "--input", tmp_path),
                          "cannot read %s" % tmp_path)
    if command == "perturb":
        assert_one_line_error(zeal(command, "--profile", prof_file, "-o", tmp_path,
                                   stdin=b"30\n"), "cannot write %s" % tmp_path)


def test_empty_input(tmp_path, prof_file):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    done = zeal("perturb", "--profile", prof_file, "--input", empty)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert_one_line_error(zeal("aggregate", "--profile", prof_file, "--input", empty),
                          "no reports")


@pytest.mark.parametrize("data, fragment", [
    (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    (b"[" * 100000 + b"]" * 100000, "longer than"),
    (b"{\"batch\": " + b"9" * 5000 + b"}", "not valid JSON"),
    (b"{\"sensor\": \"\xff\"}", "not UTF-8"),
    (b"", "not valid JSON"),
])
def test_flash_config_files_that_are_broken(tmp_path, prof_file, data, fragment):
    conf = tmp_path / "c.json"
    conf.write_bytes(data)
    assert_one_line_error(zeal("flash", "--port", "/dev/ttyACM0", "--dry-run", "--profile",
                               prof_file, "--config", conf), fragment)


# ---- -o -, --output, --format ------------------------------------------------------------------
def test_profile_to_stdout(tmp_path):
    done = zeal("profile", "--range", "23.5", "83.9", "--epsilon", "1", "-o", "-")
    assert done.returncode == 0, done.stderr
    prof = P.loads(done.stdout)  # stdout is the profile file, nothing else
    assert (prof.lo, prof.hi) == HUMIDITY
    assert b"fingerprint" in done.stderr  # the figures went to stderr
    same = tmp_path / "p.json"
    assert zeal("profile", "--range", "23.5", "83.9", "--epsilon", "1",
                "-o", same).returncode == 0
    assert same.read_bytes() == done.stdout
    assert_one_line_error(zeal("profile", "--range", "0", "1", "--epsilon", "1", "-o", "-",
                               "--json"), "-o -")


def test_perturb_format_and_output_file(tmp_path, prof_file):
    readings = b"30\n40\n50\n"
    outs = {}
    for form in ("bits", "low", "float"):
        done = zeal("perturb", "--profile", prof_file, "--seed", "7", "--format", form,
                    stdin=readings)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        outs[form] = done.stdout
    assert len(set(outs.values())) == 3
    # -o FILE and -o - hold what stdout holds
    path = tmp_path / "r.txt"
    done = zeal("perturb", "--profile", prof_file, "--seed", "7", "--format", "low", "-o", path,
                stdin=readings)
    assert done.returncode == 0 and done.stdout == b"" and path.read_bytes() == outs["low"]
    done = zeal("perturb", "--profile", prof_file, "--seed", "7", "--output", "-",
                stdin=readings)
    assert done.returncode == 0 and done.stdout == outs["bits"]
    # the old --output FORMAT: the same reports, and one note on stderr
    for form in ("bits", "low", "float"):
        done = zeal("perturb", "--profile", prof_file, "--seed", "7", "--output", form,
                    stdin=readings)
        assert done.returncode == 0 and done.stdout == outs[form]
        note = done.stderr.decode().strip().splitlines()
        assert len(note) == 1 and "--format %s" % form in note[0] and "old" in note[0]
        assert not (tmp_path / form).exists()
    assert_one_line_error(zeal("perturb", "--profile", prof_file, "--format", "low",
                               "--output", "float", stdin=readings), "disagree")


def test_profile_stdout_feeds_perturb(tmp_path):
    """`zeal profile ... -o - > file` is a profile file (the pipe a user writes)."""
    done = zeal("profile", "--range", "0", "100", "--epsilon", "1", "--bits", "6", "-o", "-")
    path = tmp_path / "p.json"
    path.write_bytes(done.stdout)
    rep = zeal("perturb", "--profile", path, "--seed", "3", stdin=b"50\n")
    assert rep.returncode == 0 and len(rep.stdout.splitlines()) == 1


# ---- conformance ----------------------------------------------------------------------------
def test_conformance_unknown_suite_is_an_error_listing_the_suites():
    from zeal.board.conformance import available_suites

    line = assert_one_line_error(zeal("conformance", "--target", "cpython", "--suite", "nope"),
                                 "unknown suite 'nope'")
    for suite in available_suites():
        assert suite in line


def test_conformance_json():
    done = zeal("conformance", "--target", "cpython", "--suite", "generator", "--json")
    assert done.returncode == 0, done.stderr
    doc = strict_json(done.stdout)
    assert doc["failures"] == [] and doc["board_port"] is None
    assert [(r["target"], r["suite"]) for r in doc["table"]] == [("cpython", "generator")]
    cases = len(json.load(open(os.path.join(os.path.dirname(HOST), "shared_spec", "vectors",
                                            "generator.json")))["cases"])
    row = doc["table"][0]
    assert row["passed"] + row["failed"] + row["not_applicable"] == cases
    assert b"no board" in done.stderr  # the note is not part of the result


# ---- ports: auto, one message for a missing one ----------------------------------------------
class _Port:
    def __init__(self, device, vid=None, pid=None, description=""):
        self.device, self.vid, self.pid, self.description = device, vid, pid, description
        self.manufacturer = self.product = self.serial_number = None


@pytest.fixture
def boards(monkeypatch):
    """Set the serial ports `zeal devices` sees: boards(["/dev/ttyACM0", ...])."""
    import serial.tools.list_ports

    def attach(devices, others=("/dev/ttyS0",)):
        ports = [_Port(d, 0x2E8A, 0x0005, "Board in FS mode") for d in devices]
        ports += [_Port(d) for d in others]
        monkeypatch.setattr(serial.tools.list_ports, "comports", lambda: list(ports))
    return attach


AUTO_COMMANDS = [
    ["stop", "--port", "auto", "--wait", "0.3"],
    ["flash", "--port", "auto", "--profile", "PROF", "--dry-run"],
    ["collect", "--port", "auto", "--db", "DB", "--duration", "0.3"],
    ["conformance", "--port", "auto", "--target", "board", "--suite", "generator"],
]


@pytest.mark.parametrize("argv", AUTO_COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("found", [[], ["/dev/ttyACM0", "/dev/ttyACM1"]],
                         ids=["none", "two"])
def test_port_auto_needs_exactly_one_board(tmp_path, prof_file, boards, capsys, argv, found):
    boards(found)
    argv = [{"PROF": str(prof_file), "DB": str(tmp_path / "z.db")}.get(a, a) for a in argv]
    assert zeal_main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("zeal: --port auto: ")
    if found:
        assert "2 boards found (/dev/ttyACM0, /dev/ttyACM1)" in err
    else:
        assert "no MicroPython board found (other serial ports: /dev/ttyS0)" in err
    assert not (tmp_path / "z.db").exists()


def test_port_auto_uses_the_one_board(tmp_path, prof_file, boards, capsys):
    boards(["loop://"])  # a board whose line echoes: stop gets no answer from it
    assert zeal_main(["stop", "--port", "auto", "--wait", "0.3"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("zeal: --port auto: loop:// (")
    assert err[1].startswith("zeal: no answer from loop:// within 0.3 s")
    assert zeal_main(["flash", "--port", "auto", "--profile", str(prof_file), "--dry-run",
                      "--json"]) == 0
    out, err = capsys.readouterr()
    assert strict_json(out)["port"] == "loop://" and err.startswith("zeal: --port auto: loop://")
    assert zeal_main(["collect", "--port", "auto", "--db", str(tmp_path / "z.db"),
                      "--duration", "0.3", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = strict_json(out)
    assert doc["reports"] == 0 and doc["never_opened"] == [] and doc["exit_status"] == 0


@pytest.mark.parametrize("argv", [
    ["stop", "--port", "MISSING", "--wait", "0.3"],
    ["flash", "--port", "MISSING", "--profile", "PROF", "--no-compile"],
    ["conformance", "--port", "MISSING", "--target", "board", "--suite", "generator"],
    ["collect", "--port", "MISSING", "--db", "DB", "--duration", "0.3"],
], ids=lambda a: a[0])
def test_one_message_for_a_missing_port(tmp_path, prof_file, capsys, argv):
    port = str(tmp_path / "ttyNOPE")
    argv = [{"PROF": str(prof_file), "DB": str(tmp_path / "z.db"), "MISSING": port}.get(a, a)
            for a in argv]
    code = zeal_main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith("zeal: " + missing_port(port)), first
    if argv[0] == "collect":  # waited for, then named in the summary
        assert first.endswith("; waiting for it (tried every 1 s)")
        assert "error: %s was absent for the whole run" % port in out
    else:
        assert err.count("\n") == 1 and out == ""


# ---- --json: results on stdout, nothing else ---------------------------------------------------
def test_collect_json_summary(tmp_path, capsys):
    assert zeal_main(["collect", "--port", "loop://", "--db", str(tmp_path / "z.db"),
                      "--duration", "0.3", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = strict_json(out)
    for key in ("reports", "frames", "devices", "elapsed_s", "reports_per_s", "ended",
                "rejected_frames", "lost_frames", "bytes_read", "never_opened", "exit_status"):
        assert key in doc
    assert doc["ended"] == "duration reached" and doc["elapsed_s"] >= 0.3
    assert "{" not in err


def test_stop_json_with_a_board_at_its_repl(capsys):
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
        port = os.ttyname(slave)
        assert zeal_main(["stop", "--port", port, "--wait", "20", "--json"]) == 0
    finally:
        t.join(5)
        os.close(master)
        os.close(slave)
    out, err = capsys.readouterr()
    doc = strict_json(out)
    assert doc == {"port": port, "state": "repl", "status_codes": [],
                   "message": "%s: the board is at its REPL (it was not streaming)" % port}
    assert err == ""


def test_flash_dry_run_json_is_the_plan(prof_file, capsys):
    assert zeal_main(["flash", "--port", "/dev/ttyZEAL-missing", "--profile", str(prof_file),
                      "--sensor", "callable:drv.read", "--dry-run", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = strict_json(out)
    assert err == "" and doc["port"] == "/dev/ttyZEAL-missing" and doc["port_exists"] is False
    steps = D.plan_flash("/dev/ttyZEAL-missing", str(prof_file), sensor="callable:drv.read")
    work = [s for s in steps if s.kind != "note"]
    assert [s["kind"] for s in doc["steps"]] == [s.kind for s in work]
    assert doc["steps"][-1]["argv"][-1] == "reset" and doc["steps"][-1]["argv"][:2] == \
        work[-1].argv[:2]
    assert doc["notes"] == [s.label for s in steps if s.kind == "note"]
    assert {f["board"] for f in doc["files"]} >= {"main.py", "zeal_profile.json",
                                                   "zeal_config.json"}
    config = [s for s in doc["steps"] if s.get("board_file") == "zeal_config.json"][0]
    assert json.loads(config["text"])["sensor"] == {"kind": "callable", "module": "drv",
                                                    "function": "read"}


# ---- help -----------------------------------------------------------------------------------
def _options():
    parser = build_parser()
    sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0]
    for name, sp in sub.choices.items():
        for action in sp._actions:
            if not isinstance(action, argparse._HelpAction):
                yield name, action


def test_every_option_has_help_with_its_default():
    seen = 0
    for name, action in _options():
        seen += 1
        where = "%s %s" % (name, "/".join(action.option_strings) or action.dest)
        assert action.help, where + " has no help"
        default = action.default
        if default in (None, False, [], argparse.SUPPRESS):
            continue
        # a real default: the help names it (argparse fills in %(default)s)
        assert "default" in action.help, where + " does not say its default"
        text = action.help % dict(vars(action), prog="zeal")
        assert str(default if not isinstance(default, float) else "%g" % default) in text, \
            (where, text)
    assert seen > 40


@pytest.mark.parametrize("name", ["collect", "flash", "stop", "conformance", "devices",
                                  "profile", "aggregate", "events", "analyze", "demo"])
def test_every_command_that_prints_results_has_json(name):
    assert any(a.option_strings == ["--json"] for n, a in _options() if n == name), name
