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


# ---- zeal profile --mechanism: worst_variance, table profiles ------------------------------------
def _exact(text):
    from fractions import Fraction
    return Fraction(text)


def _segment_max(var_at, segments):
    """max over segments b and f in [0, 1] of var_at(b, f), exactly, where var_at(b, .) is a
    quadratic in f on each segment: fitted through f = 0, 1/2, 1, then maximised at the ends
    and at its vertex. Every segment is examined (no shortcut)."""
    from fractions import Fraction
    best = None
    for b in range(segments):
        v0, vh, v1 = var_at(b, Fraction(0)), var_at(b, Fraction(1, 2)), var_at(b, Fraction(1))
        a2 = 2 * v0 + 2 * v1 - 4 * vh          # v(f) = a2 f^2 + a1 f + v0
        a1 = v1 - v0 - a2
        cands = [v0, v1]
        if a2 != 0 and 0 < -a1 / (2 * a2) < 1:
            f = -a1 / (2 * a2)
            cands.append(a2 * f * f + a1 * f + v0)
        best = max([best] + cands if best is not None else cands)
    return best


def grid_worst_from_file(doc):
    """The window grid's worst variance from the profile file alone (the spec's law: window
    of Nc cells at jL with mass q = T/2^64, the other No = N - Nc cells share 1 - q; the
    calibrated estimate lo + gain (j - c0) inverts E[j | jL] = s jL + c0)."""
    from fractions import Fraction
    import struct
    lo = Fraction(struct.unpack(">d", bytes.fromhex(doc["lo"][2:]))[0])
    hi = Fraction(struct.unpack(">d", bytes.fromhex(doc["hi"][2:]))[0])
    n, nc, q = doc["n_cells"], doc["n_window"], Fraction(doc["threshold"], 1 << 64)
    no = n - nc

    def row(jl):
        return [q / nc if jl <= j < jl + nc else (1 - q) / no for j in range(n)]

    def mean(p):
        return sum(j * pj for j, pj in enumerate(p))
    c0 = mean(row(0))
    s = mean(row(1)) - c0
    gain = (hi - lo) / (s * no)
    est = [lo + gain * (j - c0) for j in range(n)]

    def var_at(b, f):
        p = [(1 - f) * a + f * c for a, c in zip(row(b), row(b + 1))]
        x = lo + (b + f) * (hi - lo) / no
        assert sum(pj * e for pj, e in zip(p, est)) == x          # unbiased (a check)
        return sum(pj * (e - x) ** 2 for pj, e in zip(p, est))
    return _segment_max(var_at, no)


def table_from_file(doc):
    """(lo, hi, R, weights rows, g values) parsed from a zeal-table/1 file by this test."""
    from fractions import Fraction
    import re
    import struct
    lo = Fraction(struct.unpack(">d", bytes.fromhex(doc["lo"][2:]))[0])
    hi = Fraction(struct.unpack(">d", bytes.fromhex(doc["hi"][2:]))[0])
    r, n = doc["anchors"], doc["cells"]
    flat = [int(doc["weights"][i:i + 8], 16) for i in range(0, len(doc["weights"]), 8)]
    rows = [flat[k * n:(k + 1) * n] for k in range(r + 1)]
    a = [int(t) for t in re.findall(r"[+-]\d+", doc["values"])]
    assert len(a) == n and len(rows) == r + 1
    g = [lo + (hi - lo) * Fraction(v, doc["value_den"]) for v in a]
    return lo, hi, r, rows, g


def table_worst_from_file(doc):
    from fractions import Fraction
    lo, hi, r, rows, g = table_from_file(doc)
    probs = [[Fraction(w, sum(row)) for w in row] for row in rows]

    def var_at(b, f):
        p = [(1 - f) * u + f * v for u, v in zip(probs[b], probs[b + 1])]
        x = lo + (b + f) * (hi - lo) / r
        assert sum(pj * e for pj, e in zip(p, g)) == x            # unbiased (a check)
        return sum(pj * (e - x) ** 2 for pj, e in zip(p, g))
    return _segment_max(var_at, r)


def table_ratio_from_file(doc):
    from fractions import Fraction
    _, _, _, rows, _ = table_from_file(doc)
    worst = Fraction(1)
    for j in range(len(rows[0])):
        col = [Fraction(row[j], sum(row)) for row in rows]
        if max(col):
            worst = max(worst, max(col) / min(col))
    return worst


@pytest.mark.parametrize("rng, eps, bits", [(("0", "10"), "1", "3"), (("23.5", "83.9"), "2", "4"),
                                            (("-1", "1"), "0.5", "2")])
def test_profile_json_worst_variance_of_the_grid_is_exact(tmp_path, rng, eps, bits):
    path = tmp_path / "g.json"
    done = zeal("profile", "--range", *rng, "--epsilon", eps, "--bits", bits, "-o", str(path),
                "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    want = grid_worst_from_file(json.loads(path.read_text()))
    assert _exact(doc["worst_variance_exact"]) == want
    assert doc["worst_variance"] == float(want)
    assert doc["kind"] == doc["mechanism"] == "grid"
    assert doc["variance_unit"] == "(reading unit)^2"
    for key in ("abar", "gamma_min", "n_window", "threshold", "privacy_ratio_exact"):
        assert key in doc                                           # every old key stays


@pytest.mark.parametrize("mechanism, bits, cells", [
    ("duchi", None, 2), ("pm", "3", 8), ("hm", "3", 8), ("pm-sub", "2", 4),
    ("three-outputs", None, 3), ("optimal", "2", 4), ("n-output-lp", "2", 4),
    ("three-outputs-lp", None, 3)])
def test_profile_json_of_a_table_is_exact_and_the_file_loads(tmp_path, mechanism, bits, cells):
    from zeal.mechanism.grid import profile as P
    from zeal.mechanism import kinds
    from zeal.mechanism.grid.profile import exp_lower_bound
    path = tmp_path / "t.json"
    args = ["profile", "--range", "-1", "1", "--epsilon", "2", "--mechanism", mechanism,
            "-o", str(path), "--json"] + (["--bits", bits] if bits else [])
    done = zeal(*args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    file_doc = json.loads(path.read_text())
    assert file_doc["format"] == doc["format"] == "zeal-table/1"
    assert doc["mechanism"] == mechanism and doc["kind"] == "table"
    assert doc["cells"] == file_doc["cells"] == cells
    assert doc["anchors"] == file_doc["anchors"] and doc["bits"] == file_doc["bits"]
    assert doc["fingerprint"] == file_doc["fingerprint"] == kinds.load(str(path)).fingerprint
    want = table_worst_from_file(file_doc)
    assert _exact(doc["worst_variance_exact"]) == want and doc["worst_variance"] == float(want)
    ratio = table_ratio_from_file(file_doc)
    bound = exp_lower_bound(_exact(doc["epsilon_stored"]))
    assert _exact(doc["privacy_ratio_exact"]) == ratio <= bound
    assert _exact(doc["exp_epsilon_bound_exact"]) == bound
    designed = mechanism in ("optimal", "n-output-lp", "three-outputs-lp")
    assert ("designed in" in done.stderr) == designed               # progress while it solves


def test_table_profile_round_trip_through_the_cli(tmp_path):
    """profile -> perturb (seeded) -> aggregate: the mean is exactly lo + (hi - lo) sum a /
    (n Q) from the file and the reports; the 99% Bernstein interval holds the true mean
    (seeded, so deterministic; were it random the miss rate would be <= 1%)."""
    from fractions import Fraction
    path = tmp_path / "t.json"
    assert zeal("profile", "--range", "0", "10", "--epsilon", "2", "--mechanism", "pm",
                "--bits", "3", "-o", str(path)).returncode == 0
    readings = [i % 11 for i in range(3000)]
    text = "\n".join(map(str, readings)) + "\n"
    done = zeal("perturb", "--profile", str(path), "--seed", "c0ffee", stdin=text)
    assert done.returncode == 0, done.stderr
    cells = [int(v) for v in done.stdout.split()]
    assert len(cells) == 3000 and set(cells) <= set(range(8))
    again = zeal("perturb", "--profile", str(path), "--seed", "c0ffee", "--format", "low",
                 stdin=text)
    assert again.stdout == done.stdout
    agg = zeal("aggregate", "--profile", str(path), "--json", stdin=done.stdout)
    assert agg.returncode == 0, agg.stderr
    doc = json.loads(agg.stdout)
    lo, hi, _, _, g = table_from_file(json.loads(path.read_text()))
    want = sum(g[j] for j in cells) / len(cells)
    assert doc["mean_calibrated"] == float(want) and doc["n"] == 3000
    assert doc["avg_star"] is None and doc["avg_star_naive_float64"] is None
    true = Fraction(sum(readings), len(readings))
    assert doc["ci99"][0] < true < doc["ci99"][1]
    text_out = zeal("aggregate", "--profile", str(path), stdin=done.stdout).stdout
    assert "estimate of the mean" in text_out and "AVG*" not in text_out  # plain by default
    text_out = zeal("aggregate", "--profile", str(path), "--paper", stdin=done.stdout).stdout
    assert "paper: AVG* n/a" in text_out


def test_profile_text_labels_variances_with_units():
    done = zeal("profile", "--range", "0", "10", "--epsilon", "1", "--mechanism", "pm",
                "--bits", "3")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("worst_variance "))
    assert line.endswith("(reading unit)^2")


def test_data_objective_reports_the_data_mean_variance(tmp_path):
    from fractions import Fraction
    data = tmp_path / "d.csv"
    data.write_text("t,x\n" + "".join("%d,%s\n" % (i, 0.1 * (i % 7)) for i in range(50)))
    path = tmp_path / "t.json"
    done = zeal("profile", "--range", "0", "1", "--epsilon", "1", "--mechanism", "optimal",
                "--bits", "2", "--data", str(data), "--column", "x", "-o", str(path), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["objective"] == "data" and doc["data_readings"] == 50
    lo, hi, r, rows, g = table_from_file(json.loads(path.read_text()))
    probs = [[Fraction(w, sum(row)) for w in row] for row in rows]
    total = Fraction(0)
    for i in range(50):
        x = Fraction(str(0.1 * (i % 7)))
        pos = (x - lo) * r / (hi - lo)
        b = min(int(pos), r - 1)
        f = pos - b
        p = [(1 - f) * u + f * v for u, v in zip(probs[b], probs[b + 1])]
        total += sum(pj * (e - x) ** 2 for pj, e in zip(p, g))
    assert _exact(doc["data_mean_variance_exact"]) == total / 50


@pytest.mark.parametrize("args, stdin, fragment", [
    (("--mechanism", "pm", "--bits", "7"), None, "takes --bits 1 to 6"),
    (("--mechanism", "optimal", "--exponent", "3"), None, "--exponent is the window grid's"),
    (("--mechanism", "optimal", "--objective", "data"), None, "needs --data FILE"),
    (("--mechanism", "pm", "--data", "DATA"), None, "apply to the designed mechanisms"),
    (("--data", "DATA"), None, "not the window grid"),
    (("--mechanism", "optimal", "--column", "x"), None, "--column needs --data"),
    (("--mechanism", "optimal", "--data", "/nonexistent/d.txt"), None, "cannot read"),
    (("--mechanism", "optimal", "--data", "BAD"), None, "not a finite decimal"),
    (("--mechanism", "optimal", "--objective", "worst", "--data", "DATA"), None,
     "--data goes with --objective data"),
    (("--mechanism", "magic"), None, "invalid choice"),
])
def test_profile_mechanism_mistakes_are_one_line_errors(tmp_path, args, stdin, fragment):
    (tmp_path / "d.txt").write_text("0.5\n0.25\n")
    (tmp_path / "bad.txt").write_text("0.5\nlots\n")
    args = [str(tmp_path / "d.txt") if a == "DATA" else str(tmp_path / "bad.txt") if a == "BAD"
            else a for a in args]
    done = zeal("profile", "--range", "0", "1", "--epsilon", "1", *args, stdin=stdin)
    assert done.returncode != 0
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("usage")
             and not x.startswith("       ")]
    assert len(lines) == 1 and fragment in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_table_reports_mistakes_are_one_line_errors(tmp_path):
    path = tmp_path / "t.json"
    assert zeal("profile", "--range", "0", "1", "--epsilon", "1", "--mechanism", "duchi",
                "-o", str(path)).returncode == 0
    for args, stdin, fragment in [
            (("perturb", "--format", "float"), "0.5\n", "use --format low"),
            (("perturb", "--format", "bits"), "0.5\n", "use --format low"),
            (("aggregate",), "0\n2\n", "line 2: cell 2 is outside the table's 2 cells"),
            (("aggregate",), "0\nabc\n", "line 2: not a report of a table profile")]:
        done = zeal(args[0], "--profile", str(path), *args[1:], stdin=stdin)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1 and fragment in lines[0], done.stderr


def test_without_scipy_the_designer_says_what_to_install(monkeypatch, capsys):
    from zeal import cli
    for mod in ("scipy", "scipy.optimize", "scipy.sparse"):
        monkeypatch.setitem(sys.modules, mod, None)          # import fails as if absent
    rc = cli.main(["profile", "--range", "0", "1", "--epsilon", "1", "--mechanism", "optimal"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    assert err[0].startswith("zeal: ") and "pip install 'zeal-mcu[design]'" in err[0]
    # the mechanisms that need no LP still build
    assert cli.main(["profile", "--range", "0", "1", "--epsilon", "1", "--mechanism", "pm",
                     "--json"]) == 0


def test_cli_mechanism_list_is_the_table_module_s():
    from zeal.commands import profile as profile_command
    from zeal.mechanism.table import profile as table_profile
    assert profile_command.TABLE_MECHANISMS == table_profile.MECHANISMS
