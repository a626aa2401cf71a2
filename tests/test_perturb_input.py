"""`zeal perturb` reads what a user has (issue 22): a file with a header line, a CSV column
(--column, its exact text), and draws no progress bar when stderr is not a terminal."""
import os
import subprocess
import sys

from conftest import ROOT

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host"))
READINGS = ["21.5", "22", "19.25", "30", "0.125"]


def zeal(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "zeal", *map(str, args)], input=stdin,
                          capture_output=True, text=True, env=ENV, timeout=120)


def _profile(tmp_path):
    path = tmp_path / "p.json"
    done = zeal("profile", "--range", "0", "100", "--epsilon", "1", "--bits", "6", "-o", path)
    assert done.returncode == 0, done.stderr
    return path


def test_a_header_line_and_a_csv_column_give_the_plain_file_s_reports(tmp_path):
    prof = _profile(tmp_path)
    plain = zeal("perturb", "--profile", prof, "--seed", "5",
                 stdin="".join(r + "\n" for r in READINGS))
    assert plain.returncode == 0 and plain.stderr == "" and len(plain.stdout.split()) == 5
    headed = zeal("perturb", "--profile", prof, "--seed", "5",
                  stdin="temp_c\n" + "".join(r + "\n" for r in READINGS))
    assert headed.returncode == 0 and headed.stdout == plain.stdout
    assert headed.stderr.strip() == "zeal: line 1 is not a reading; taken as a header (temp_c)"
    csv = tmp_path / "r.csv"
    csv.write_text("time,temp_c\n" + "".join("%d,%s\n" % (i, r) for i, r in enumerate(READINGS)))
    col = zeal("perturb", "--profile", prof, "--seed", "5", "--input", csv, "--column", "temp_c")
    assert col.returncode == 0 and col.stdout == plain.stdout and col.stderr == ""


def test_an_invalid_first_reading_is_still_refused(tmp_path):
    prof = _profile(tmp_path)
    done = zeal("perturb", "--profile", prof, stdin="nan\n1\n")
    assert done.returncode == 1 and "line 1" in done.stderr and "Traceback" not in done.stderr
    done = zeal("perturb", "--profile", prof, "--column", "t", stdin="t\n1\n")
    assert done.returncode == 1 and "--input FILE" in done.stderr
