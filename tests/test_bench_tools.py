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
