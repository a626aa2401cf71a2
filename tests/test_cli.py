"""The `zeal` command line: contract keys, reproducibility and one-line errors."""
import json
import os
import subprocess
import sys

import pytest

from conftest import HOST

ENV = dict(os.environ, PYTHONPATH=HOST + os.pathsep + os.environ.get("PYTHONPATH", ""))


def zeal(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "zeal.cli", *args], input=stdin,
                          capture_output=True, text=True, env=ENV, timeout=120)


@pytest.fixture(scope="module")
def prof_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("p") / "hum.json"
    done = zeal("profile", "--range", "23.5", "83.9", "--epsilon", "1", "-o", str(path),
                "--json")
    assert done.returncode == 0, done.stderr
    return path


def test_profile_json_contract(prof_file):
    done = zeal("profile", "--range", "23.5", "83.9", "--epsilon", "1", "--bits", "8", "--json")
    doc = json.loads(done.stdout)
    for key in ("lo", "hi", "epsilon", "exponent", "bits", "abar", "gamma_min",
                "transmission_ratio", "e_enc", "e_vul", "n_cells", "privacy_ratio",
                "fingerprint"):
        assert key in doc
    assert doc["bits"] == 8 and doc["e_enc"] == 8 and doc["privacy_ratio"] <= 2.718281828459046
    by_e = json.loads(zeal("profile", "--range", "23.5", "83.9", "--epsilon", "1",
                           "--exponent", str(doc["exponent"]), "--json").stdout)
    assert by_e["fingerprint"] == doc["fingerprint"]


def test_perturb_then_aggregate_all_spellings(prof_file):
    readings = "\n".join(["35.58", "50", "", "83.9", "24.5"] * 40) + "\n"
    outs = {}
    for form in ("bits", "low", "float"):
        done = zeal("perturb", "--profile", str(prof_file), "--seed", "ab", "--format", form,
                    stdin=readings)
        assert done.returncode == 0, done.stderr
        outs[form] = done.stdout
        assert len(done.stdout.splitlines()) == 160
    aggs = [json.loads(zeal("aggregate", "--profile", str(prof_file), "--json",
                            stdin=outs[f]).stdout) for f in outs]
    assert aggs[0] == aggs[1] == aggs[2]            # same seed, same reports, any spelling
    assert aggs[0]["n"] == 160 and aggs[0]["ci99"][0] < aggs[0]["ci99"][1]
    other = zeal("perturb", "--profile", str(prof_file), "--seed", "ac", stdin=readings)
    assert other.stdout != outs["bits"]


@pytest.mark.parametrize("args, stdin, fragment", [
    (("profile", "--range", "5", "5", "--epsilon", "1"), None, "range is empty"),
    (("profile", "--range", "0", "1", "--epsilon", "0"), None, "epsilon"),
    (("profile", "--range", "23.5", "83.9", "--epsilon", "1", "--bits", "60"), None,
     "out of range"),
    (("profile", "--range", "23.5", "83.9", "--epsilon", "1", "--exponent", "3"), None,
     "out of range"),
    (("perturb", "--profile", "/nonexistent/p.json"), "1\n", "cannot read profile"),
    (("perturb", "--profile", "PROF"), "1\nabc\n", "line 2: not a number"),
    (("perturb", "--profile", "PROF"), "nan\n", "line 1: reading is NaN"),
    (("perturb", "--profile", "PROF", "--seed", "xyz"), "1\n", "seed"),
    (("aggregate", "--profile", "PROF"), "438ffffffffffff5\n", "line 1"),
    (("aggregate", "--profile", "PROF"), "", "no reports"),
])
def test_user_mistakes_are_one_line_errors(prof_file, args, stdin, fragment):
    args = [str(prof_file) if a == "PROF" else a for a in args]
    done = zeal(*args, stdin=stdin)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zeal: ") and fragment in lines[0]


def test_skip_invalid_counts_instead_of_stopping(prof_file):
    done = zeal("perturb", "--profile", str(prof_file), "--skip-invalid",
                stdin="1\nnan\ninf\nfoo\n40\n500\n")
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 3
    assert "skipped 3" in done.stderr and "clamped 2" in done.stderr


@pytest.mark.parametrize("command", ["profile", "perturb", "aggregate", "demo", "conformance",
                                     "stop", "collect", "analyze", "export", "events", "flash",
                                     "devices"])
def test_every_command_has_help(command):
    done = zeal(command, "--help")
    assert done.returncode == 0 and "usage: zeal " + command in done.stdout


def test_demo_json_runs_virtual_boards_end_to_end(tmp_path):
    db = tmp_path / "demo.db"
    done = zeal("demo", "--json", "--count", "400", "--devices", "2", "--db", str(db))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    overall = doc["overall"]  # the layout of zeal analyze --json, plus the demo's figures
    for key in ("n", "mean_calibrated", "ci99", "avg_star", "bits", "wire_bits_per_report",
                "rejected_frames", "gaps", "true_mean"):
        assert key in overall
    assert overall["n"] == 400 and overall["bits"] == 4 and len(doc["devices"]) == 2
    assert overall["rejected_frames"] == 0 and overall["gaps"] == 0
    assert "profiles" in doc and "demo" in doc
    from fractions import Fraction
    from zeal.analysis.datasets import aarhus
    assert overall["true_mean"] == float(sum(Fraction(float(t)) for t in aarhus("humidity", 400))
                                         / 400)
    again = zeal("demo", "--db", str(db))                 # never overwrites a database
    assert again.returncode == 1 and "exists" in again.stderr


def test_conformance_table_on_cpython():
    done = zeal("conformance", "--target", "cpython", "--suite", "generator")
    assert done.returncode == 0, done.stderr
    assert "cpython      generator        3       0       0" in done.stdout


def test_conformance_board_needs_a_port():
    done = zeal("conformance", "--target", "board", "--suite", "generator")
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1].startswith("zeal: ")


def test_stop_writes_the_stop_line(tmp_path):
    # loop:// only echoes the line back: no STOPPED status comes, so stop says so in one line
    done = zeal("stop", "--port", "loop://", "--wait", "0.5")
    assert done.returncode == 1 and "no answer" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    bad = zeal("stop", "--port", str(tmp_path / "no-such-port"))
    assert bad.returncode == 1 and bad.stderr.startswith("zeal: no port ")


@pytest.mark.parametrize("args, fragment", [
    (("collect", "--port", "/nonexistent/ttyACM9", "--db", "DB", "--duration", "1"), "ttyACM9"),
    (("collect", "--port", "loop://", "--db", "DB", "--profile", "/nonexistent/p.json",
      "--duration", "1"), "cannot read profile"),
    (("analyze", "--db", "/nonexistent/zeal.db"), "zeal.db"),
    (("export", "--db", "/nonexistent/zeal.db"), "zeal.db"),
    (("flash", "--port", "/nonexistent/ttyACM9", "--profile", "/nonexistent/p.json"),
     "cannot read profile"),
])
def test_collector_side_mistakes_are_one_line_errors(tmp_path, args, fragment):
    args = [str(tmp_path / "z.db") if a == "DB" else a for a in args]
    done = zeal(*args)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zeal: ") and fragment in lines[0], lines


def test_busy_database_is_a_one_line_error(tmp_path):
    import sqlite3
    db = tmp_path / "busy.db"
    from zeal.collect.store import Store
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = zeal("collect", "--port", "loop://", "--db", str(db), "--duration", "1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "busy" in lines[0], lines


def test_negative_numbers_in_any_spelling_are_values():
    done = zeal("profile", "--range", "-1e3", "-1.5e2", "--epsilon", "1", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["lo"], doc["hi"]) == (-1000.0, -150.0)


def test_extreme_exponents_are_handled_at_once(prof_file):
    """1e99999999 would be a 100-million-digit integer if converted naively."""
    done = zeal("perturb", "--profile", str(prof_file), "--seed", "1", "--skip-invalid",
                stdin="1e99999999\n-1e99999999\n1e-999999\n0\n")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3
    assert "clamped 3" in done.stderr and "skipped 1" in done.stderr


@pytest.mark.parametrize("typed", ["0.1", "0.05", "2.2", "1/3", "1"])
def test_profile_epsilon_is_held_for_the_number_as_typed(tmp_path, typed):
    import struct
    from fractions import Fraction

    out = tmp_path / "p.json"
    done = zeal("profile", "--range", "23.5", "83.9", "--epsilon", typed, "--bits", "8",
                "-o", str(out))
    assert done.returncode == 0, done.stderr
    pattern = int(json.loads(out.read_text())["epsilon"], 16)  # the float64 the file holds
    stored = Fraction(struct.unpack("<d", struct.pack("<Q", pattern))[0])
    exact = Fraction(typed)
    # never above what was typed, and the nearest float64 at or below it (one ulp at most)
    assert stored <= exact < stored + Fraction(2) ** -52 * stored * 2


def test_aggregate_on_a_range_past_float64_bounds_is_valid_json(tmp_path):
    # (hi - lo)^2 overflows float64: the Bernstein interval is unbounded, shown as null
    prof = tmp_path / "wide.json"
    assert zeal("profile", "--range", "-1e200", "1e200", "--epsilon", "1", "--bits", "8",
                "-o", str(prof)).returncode == 0
    reps = zeal("perturb", "--profile", str(prof), "--seed", "1", stdin="0\n1e199\n")
    assert reps.returncode == 0, reps.stderr
    done = zeal("aggregate", "--profile", str(prof), "--json", stdin=reps.stdout)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["n"] == 2 and doc["ci99"] == [None, None]


def test_a_negative_calibration_fraction_is_a_value_not_an_option(tmp_path):
    out = tmp_path / "t.json"
    done = zeal("profile", "--range", "-20", "85", "--epsilon", "1", "--cal-gain",
                "-220000/7519049", "--cal-offset", "752467/1721", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["cal_gain"] == "-220000/7519049"
