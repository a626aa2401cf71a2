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
from zeal.cli import main as zeal_main
from zeal.commands import build_parser
from zeal.mechanism.grid import profile as P
from zeal.mechanism import kinds
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
    prof = kinds.load(str(out))  # the file written is a valid profile, the one reported
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


# ---- extreme numbers: multi-attribute profiles (issue 17) ---------------------------------------
# A numeric attribute's worst variance is about (hi - lo)^2: past float64 for ranges wider
# than about 1e154, with hi - lo itself finite (2e300; 1.6e308 just under the top).
WIDE_ATTRIBUTES = [
    "b:-1e300:1e300:pm:3",                        # the command
    "b:-1e300:1e300",                             # the window grid
    "b:-8e307:8e307:duchi",                       # hi - lo = 1.6e308, still finite
    "b:1e308:1.7976931348623157e308:hm",          # the top of float64
    "b:-1.7976931348623157e308:-1e308:pm-sub:2",  # and the bottom
    "b:-1e160:1e160:three-outputs-lp",            # a designed table
    "b:-1e160:1e160:three-outputs",               # the published construction
]


def _wide_specs(spec):
    from zeal.analysis.multi_cli import parse_attribute
    from zeal.mechanism.multi.mechanism import Categorical

    return [parse_attribute("t:-40:85"), parse_attribute(spec), Categorical("s", 3)]


@pytest.mark.parametrize("spec", WIDE_ATTRIBUTES)
def test_multi_profile_with_a_range_near_float64s_limits(tmp_path, spec):
    """`zeal profile --attributes` with such a range: exit 0, the exact worst variance (null as
    a float64 where float64 cannot hold it, and as p/q), the files written load as a device
    loads them (it used to end in an OverflowError traceback)."""
    from fractions import Fraction

    from zeal.mechanism.multi import profile as MP

    args = ("profile", "--attributes", "--attribute", "t:-40:85", "--attribute", spec,
            "--categorical", "s:3", "--epsilon", "2")
    out = tmp_path / "m.json"
    done = zeal(*args, "--json", "-o", out)
    assert done.returncode == 0, done.stderr.decode()
    assert not done.stderr
    doc = strict_json(done.stdout)
    prof = MP.load(str(out))
    assert doc["fingerprint"] == prof.fingerprint
    assert prof == MP.build(_wide_specs(spec), 2.0)
    m = prof.multi()
    for j, a in enumerate(doc["attributes"]):
        want = m.worst_variance_bounds(j)[1]
        assert Fraction(a["worst_variance_rational"]) == want
        try:
            f = float(want)
        except OverflowError:
            f = None
        assert a["worst_variance"] == f
    b = doc["attributes"][1]
    assert (b["lo"], b["hi"]) == (prof.attributes[1].lo, prof.attributes[1].hi)
    if abs(float(spec.split(":")[2]) - float(spec.split(":")[1])) > 1e155:
        assert b["worst_variance"] is None
    # the text: the same figure, from the exact value ("5.79528e+600", not inf)
    text = zeal(*args)
    assert text.returncode == 0 and not text.stderr, text.stderr.decode()
    line = next(ln for ln in text.stdout.decode().splitlines() if ln.startswith("attribute b "))
    shown = Fraction(line.split("worst variance ")[1].split()[0])
    assert abs(shown / m.worst_variance_bounds(1)[1] - 1) < Fraction(1, 10 ** 5), line


def test_multi_profile_range_too_wide_for_float64_is_one_line_naming_the_attribute():
    done = zeal("profile", "--attributes", "--attribute", "t:-40:85", "--attribute",
                "b:-1e308:1e308:pm:3", "--epsilon", "2")
    assert_one_line_error(done, "attribute b: range")
    assert "too wide for float64" in done.stderr.decode()


def _wide_store(path, spec, rows):
    from zeal import wire
    from zeal.demo import attributes as multi_demo
    from zeal.collect.store import FrameRecord, Store
    from zeal.mechanism.multi import profile as MP
    from zeal.mechanism.core.words import CounterWords

    prof = MP.build(_wide_specs(spec), 2.0, k=2)
    b = prof.attributes[1]
    data = [(float(i % 120 - 40), (b.lo, b.hi, b.lo / 2 + b.hi / 2)[i % 3], i % 3)
            for i in range(rows)]
    stream = multi_demo.reference_stream(prof, data, device_id=b"dev00001",
                                         words=CounterWords(b"k" * 32), nonce=b"n" * 8)
    frames = [FrameRecord.from_batch(e) for e in wire.Decoder([prof]).feed(stream)
              if isinstance(e, wire.Batch)]
    with Store(str(path)) as st:
        st.add_profile(prof)
        st.write(frames=frames)
    return prof


@pytest.mark.parametrize("spec,rows", [
    ("b:-1e300:1e300:pm:3", 300),                  # every figure fits: finite, correct
    ("b:-8e307:8e307:duchi", 300),
    ("b:1e308:1.7976931348623157e308:hm", 300),
    ("b:1e308:1.7976931348623157e308:hm", 4),      # the interval's ends are past float64
])
def test_analyze_multi_reports_with_a_range_near_float64s_limits(tmp_path, spec, rows):
    """`zeal analyze` of multi reports under such a profile: exit 0, strict JSON; the mean and
    the Bernstein interval are MultiEstimator's exact mean and the half-width computed without
    overflowing on the way (V ~ (hi - lo)^2 is past float64), null only where the figure
    itself is (it used to end in an OverflowError traceback)."""
    import numpy as np

    from zeal.mechanism.multi import mechanism as multi, profile as MP
    from zeal.collect.store import Store

    db = tmp_path / "m.db"
    prof = _wide_store(db, spec, rows)
    done = zeal("analyze", "--db", db, "--json")
    assert done.returncode == 0, done.stderr.decode()
    doc = strict_json(done.stdout)
    b = doc["attributes"][1]
    with Store(str(db)) as st:
        frames = list(st.frames())
    reps = [r for f in frames for r in MP.unpack_multi(prof, f[5], f[4])]
    idx = np.array([[j for j, _ in r] for r in reps])
    val = np.array([[y for _, y in r] for r in reps])
    est = multi.MultiEstimator(prof.multi())
    mean = est.mean_exact(1, idx, val)
    assert b["n"] == rows and b["mean_calibrated"] == float(mean)
    hw = multi.bernstein_halfwidth(rows, est.var[1], est.dev[1])
    lo, hi = b["ci99"]
    if rows > 100:                      # the half-width fits in float64: a finite interval
        assert lo is not None and hi is not None
        assert lo == float(mean) - hw and hi == float(mean) + hw
        assert lo < float(mean) < hi
    else:                               # hw > 1.8e308: both ends are past float64
        assert hw == float("inf") and lo is None and hi is None
    text = zeal("analyze", "--db", db)
    assert text.returncode == 0 and not text.stderr, text.stderr.decode()
    out = text.stdout.decode()
    assert ("n/a" in out) == (rows <= 100)
    assert "inf" not in out and "nan" not in out


@pytest.mark.parametrize("mechanism", ["pm", "grid"])
def test_aggregate_of_a_wide_range_prints_no_nan_and_no_warning(tmp_path, mechanism):
    """`zeal aggregate` under a profile 2e300 wide: the normal-approximation interval of a
    table profile is a number, not [nan, nan] (the float64 sums of its outputs overflowed to
    inf - inf), and numpy's overflow warnings do not reach stderr."""
    prof = tmp_path / "wide.json"
    assert zeal("profile", "--range", "-1e300", "1e300", "--epsilon", "1", "--mechanism",
                mechanism, "-o", prof).returncode == 0
    reps = zeal("perturb", "--profile", prof, "--seed", "1",
                stdin=b"0\n1e300\n-1e300\n5e299\n")
    assert reps.returncode == 0, reps.stderr
    done = zeal("aggregate", "--profile", prof, stdin=reps.stdout)
    assert done.returncode == 0 and not done.stderr, done.stderr.decode()
    line = next(ln for ln in done.stdout.decode().splitlines() if ln.startswith("99%"))
    assert "nan" not in line, line
    clt = line.split("normal approximation [")[1].rstrip("])").split(", ")
    assert float(clt[0]) < float(clt[1]) and "inf" not in clt[1], line
    doc = strict_json(zeal("aggregate", "--profile", prof, "--json", stdin=reps.stdout).stdout)
    assert doc["ci99_clt"][0] < doc["mean_calibrated"] < doc["ci99_clt"][1]


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
    prof = kinds.loads(done.stdout)  # stdout is the profile file, nothing else
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
    # --output names a file, whatever its name (the old `--output FORMAT` shim is gone)
    path = tmp_path / "float"
    done = zeal("perturb", "--profile", prof_file, "--seed", "7", "--format", "low",
                "--output", path, stdin=readings)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert path.read_bytes() == outs["low"]


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
