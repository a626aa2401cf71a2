"""`zeal run` (issue 22): flash, collect with a live estimate, Ctrl-C stops the board -- on the
emulated board (tests/board_plugin.py) unless --port names a physical one.

The replay run ends by itself (the board's STATUS STOPPED after the last reading) with every
reading stored and the estimate within 1.5 times its 99 % Bernstein half-width of the true
mean (about 5 standard deviations: a false failure about once in a million runs). The Ctrl-C
run: SIGINT while the board streams; the command sends !stop, stores what the board sent
until its STATUS STOPPED -- the board's own count of readings taken (the STATUS's ticks) is
the count stored: nothing lost -- prints the summary and the estimate, ends with `zeal:
interrupted` and exit status 130, and the board is at its REPL afterwards."""
import json
import os
import signal
import struct
import subprocess
import sys
import time

from zeal.analysis import datasets

from test_board_quickstart import ENV, true_mean, within, zeal

N = 600


def _bits64(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def _setup(tmp_path, period_ms):
    lo, hi = datasets.HUMIDITY_RANGE
    hum = datasets.aarhus("humidity", N)
    zeal("profile", "--range", lo, hi, "--epsilon", 1, "-o", "p.json", cwd=tmp_path)
    (tmp_path / "r.txt").write_text("".join(_bits64(x) + "\n" for x in hum))
    # the emulated board drops what it sends while no program has its port open: it waits
    # start_delay_ms after its reset, and the collector attaches within that time
    (tmp_path / "c.json").write_text(json.dumps({"period_ms": period_ms,
                                                 "start_delay_ms": 3000}))
    return hum, lo, hi


def _argv(board, *extra):
    return [sys.executable, "-m", "zeal", "run", "--port", board, "--profile", "p.json",
            "--replay-file", "r.txt", "--config", "c.json", "--db", "t.db", *extra]


def test_run_flashes_collects_and_ends_when_the_replay_does(board, tmp_path):
    hum, lo, hi = _setup(tmp_path, period_ms=0)
    done = subprocess.run(_argv(board, "--json", "--every", "0.5", "--unit", "%RH"),
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          env=ENV, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["reports"] == N and doc["lost_frames"] == 0, doc
    assert "every device sent STOPPED" in doc["ended"]
    overall = doc["analysis"]["overall"]
    assert overall["n"] == N
    within(overall["mean_calibrated"], overall["ci99"], true_mean(hum, lo, hi), "humidity")
    assert "flashed " in done.stderr  # the flash step ran
    live = [line for line in done.stderr.splitlines() if "99% interval [" in line]
    assert live and all(line.count("%RH") == 2 for line in live), done.stderr[-2000:]


def test_ctrl_c_stops_the_board_and_keeps_what_it_sent(board, tmp_path):
    _setup(tmp_path, period_ms=20)  # 600 readings: 12 s of streaming
    proc = subprocess.Popen(_argv(board, "--every", "0.5"), cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            stdin=subprocess.DEVNULL)
    err = []
    try:
        deadline = time.monotonic() + 200
        for line in proc.stderr:  # wait for the live line to show reports
            err.append(line)
            if "  reports " in line and "  reports 0 " not in line:
                break
            assert time.monotonic() < deadline, "".join(err)
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(err) + rest
    assert proc.returncode == 130, err[-3000:]
    assert err.rstrip().splitlines()[-1] == "zeal: interrupted" and "Traceback" not in err
    assert "zeal: stopping the board (!stop sent)" in err
    assert "every device sent STOPPED" in out and "overall" in out, out
    stored = int(out.split("stored ")[1].split()[0])
    assert 0 < stored < N, out
    events = subprocess.run([sys.executable, "-m", "zeal", "events", "--db", "t.db", "--kind",
                             "status", "--json"], cwd=str(tmp_path), capture_output=True,
                            text=True, env=ENV, check=True)
    stops = [e for e in json.loads(events.stdout) if "STOPPED" in json.dumps(e)]
    assert stops, events.stdout
    assert "ticks=%d " % stored in json.dumps(stops[-1]), (stored, stops[-1])
    after = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
    assert after["state"] == "repl", after


def test_mistakes_are_one_line_before_the_board_is_touched(tmp_path):
    env = dict(ENV, PYTHONPATH=os.pathsep.join(sys.path))
    (tmp_path / "p.json").write_text("{}")
    for argv, needle in (
            (["--port", "/dev/nonexistent-tty", "--profile", "missing.json"],
             "cannot read profile"),
            (["--port", "/dev/nonexistent-tty", "--profile", "p.json"], "profile"),
    ):
        done = subprocess.run([sys.executable, "-m", "zeal", "run", *argv], cwd=str(tmp_path),
                              capture_output=True, text=True, env=env, timeout=60)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and needle in lines[0], done.stderr
    zeal("profile", "--range", 0, 1, "--epsilon", 1, "-o", "good.json", cwd=tmp_path)
    done = subprocess.run([sys.executable, "-m", "zeal", "run", "--port", "/dev/nonexistent-tty",
                           "--profile", "good.json", "--no-flash", "--sensor", "replay"],
                          cwd=str(tmp_path), capture_output=True, text=True, env=env)
    assert done.returncode == 1 and "--sensor: with --no-flash" in done.stderr, done.stderr


def test_the_live_line_names_every_estimate_of_each_kind(tmp_path):
    """headline(): the estimate and interval of a one-reading store, each numeric attribute's
    of a multi-attribute one (categorical ones have no mean), each coordinate's mean of a
    shuffled batch -- read from the documents `zeal analyze` makes."""
    from zeal.analysis.analyze import headline
    from zeal.demo.attributes import run_multi_demo

    doc = run_multi_demo(count=200, devices=2, progress=False, boards="reference", seed=3)
    text = headline(doc)
    for a in doc["attributes"]:
        assert "%s %.4g [%.4g, %.4g]" % (a["name"], a["mean_calibrated"], *a["ci99"]) in text
    one = {"overall": {"mean_calibrated": 21.5, "ci99": [20.25, 22.75]}}
    assert headline(one, "degC") == ("estimate 21.5000 degC, 99% interval "
                                     "[20.2500, 22.7500] degC")
    shuffled = {"shuffle": [{"mean": [0.5, 12.25, None], "messages": 900}]}
    assert headline(shuffled) == "means (0.5, 12.25, -) of 900 messages"
    assert headline({"sections": [one, shuffled]}) == headline(one) + "; " + headline(shuffled)
