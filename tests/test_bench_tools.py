"""Smoke tests of tools/bench_virtual_fleet.py (no timing is asserted: benchmarks print
ratios, tests check that the tool runs and counts).

- a bad argument is one `zeal: ...` line and a non-zero exit, never a traceback;
- one tiny run (a flat-out baseline board of 16 readings, then one step of 2 virtual MQTT
  boards x 8 readings: the real firmware under the unix port -> a throw-away Mosquitto ->
  `zeal collect --mqtt` -> SQLite) accounts for every report the boards made, and reports the
  ratios once a step held.
"""
import json
import os
import subprocess
import sys

import pytest

from mqtt_broker import need_mosquitto

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "bench_virtual_fleet.py")


def run_tool(*args, timeout=120):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("args", [
    ("--start", "4", "--max", "2"),
    ("--start", "0"),
    ("--period-ms", "0"),
    ("--batch", "256"),
    ("--seconds", "0.1"),          # 1 reading: less than a batch
    ("--baseline-readings", "3"),
])
def test_bad_arguments_are_one_line(args):
    done = run_tool(*args)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zeal: "), done.stderr
    assert done.stdout == ""


def test_tiny_run_accounts_for_every_report():
    need_mosquitto()
    boards, readings, baseline = 2, 8, 16
    done = run_tool("--start", str(boards), "--max", str(boards), "--period-ms", "100",
                    "--batch", "8", "--seconds", str(readings / 10), "--lag-max", "10",
                    "--baseline-readings", str(baseline), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["readings_per_board"] == readings
    (step,) = doc["steps"]
    assert step["boards"] == boards
    assert step["reports_made"] == boards * readings
    assert step["reports_stored"] == boards * readings
    assert step["reports_lost"] == 0 and step["boards_without_stopped"] == 0
    assert step["frames_dropped_by_boards"] == 0 and step["sequence_gaps"] == 0
    assert step["offered_reports_per_s"] == boards * 10
    assert doc["baseline"]["reports_per_s"] > 0
    # a lag margin of 10 x the run: the step holds, so the result and its ratios are there
    assert doc["held_boards"] == boards
    assert doc["ratio_held_to_one_flat_out_board"] > 0
    ratio = doc["ratio_board_cpu_per_report_to_flat_out"]
    assert ratio is None or ratio > 0  # None: the baseline's CPU under the clock's 10 ms tick
    assert doc["stopped"].startswith("reached --max")


OVERLOAD = os.path.join(ROOT, "tools", "bench_collect_overload.py")


def test_overload_bench_tiny_run():
    """tools/bench_collect_overload.py at its smallest (2 ptys, 1 s of input): it runs, every
    frame read is stored, and the collector's load figures are in its JSON."""
    done = subprocess.run([sys.executable, OVERLOAD, "--ports", "2", "--seconds", "1",
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    for run in (doc["baseline"], doc["main"]):
        assert run["frames_stored"] >= run["frames_committed_at_end_of_input"] > 0
        assert run["lost_frames"] == 0
        assert run["commits"] > 0 and run["commit_latency_p99_s"] > 0
        assert run["peak_memory_bytes"] > 0
    assert doc["main"]["ports"] == 2 and doc["ratios"]["reports_per_s"] > 0


def test_overload_bench_bad_argument_is_one_line():
    done = subprocess.run([sys.executable, OVERLOAD, "--ports", "0"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("zeal: ")


SCALE = os.path.join(ROOT, "tools", "bench_scale.py")
SCALE_ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "host") + os.pathsep
                 + os.environ.get("PYTHONPATH", ""))


def test_scale_bench_store_and_tiny_run(tmp_path):
    """tools/bench_scale.py: --make-store builds, through the collector's stream and writer,
    a store that `zeal analyze --db` reads as n reports from 2 devices (nothing rejected or
    lost); the benchmark at one tiny size runs every step, checks its baseline against zeal's
    decoder, and prints the table."""
    db, n = tmp_path / "scale.db", 3000
    done = subprocess.run([sys.executable, SCALE, "--make-store", str(db), "--reports", str(n),
                           "--devices", "2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "zeal.cli", "analyze", "--db", str(db),
                           "--json"], capture_output=True, text=True, env=SCALE_ENV,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    overall = doc["overall"]
    assert overall["n"] == n and overall["devices"] == 2
    assert overall["frames"] == -(-n // 64)
    assert overall["rejected_frames"] == 0 and overall["gaps"] == 0
    # 47 frames round-robin: device 0 has 24 (the last one of 56 reports), device 1 has 23
    assert sorted(d["n"] for d in doc["devices"]) == [23 * 64, 23 * 64 + 56]

    out = tmp_path / "scale.json"
    done = subprocess.run([sys.executable, SCALE, "--sizes", "2e3", "--devices-list", "1",
                           "--cache", str(tmp_path / "cache"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for step in ("baseline", "analyze --db", "export parquet", "compress", "analyze archive"):
        assert step in done.stdout
    assert "failed" not in done.stdout
    assert "x baseline" in done.stdout and "peak RSS (MB)" in done.stdout
    assert "zeal --version" in done.stdout and "import numpy" in done.stdout
    doc = json.loads(out.read_text())
    (run,) = doc["runs"]
    assert run["reports"] == 2000 and run["devices"] == 1
    assert run["baseline_checked_against_decoder"]
    for step, s in run["steps"].items():
        assert not s["error"], (step, s["error"])
        assert s["seconds"] > 0 and s["peak_rss_mb"] > 0 and s["ratio_to_baseline"] > 0
    assert doc["startup"]["ratio_zeal_version_to_numpy_import"] > 0
