"""The README's board quick start ("A board, start to finish") end to end, on a board: the
emulated one (MicroPython's QEMU port for a Cortex-M3 with firmware/boards/qemu,
tests/board_plugin.py) unless --port names a physical one.

For each profile kind (grid, table, multi, shuffle), as a user types it: `zeal profile`,
`zeal flash` with a replay file of Aarhus readings, `zeal collect --until-stopped`, `zeal
analyze` (and for the grid `zeal export`), and the estimate checked against the true mean of
the readings replayed (the mean of the readings clamped to the profile's range, which is
what the mechanism estimates). Each flash after the first is a reflash: the firmware is
already there, only what changed is copied. `zeal stop` stops a board that is streaming (and answers for one at its REPL).

The estimate check allows 1.5 times the 99% Bernstein interval's half-width (grid, table,
multi: about 5 standard deviations; the interval alone would fail about one run in a
thousand), and for shuffle 4 times the root of the MSE bound per coordinate: a wrong
decoding or a biased mechanism misses by far more.

The emulated board's own features (littlefs, boot.py and main.py at boot, machine.reset()
rebooting with the files kept, Ctrl-C stopping running code, os.urandom, unique_id) are
checked first, through mpremote as a user reaches a board, and a second emulated board
started without a filesystem (as the stock QEMU port is) is refused in one line.
"""
import csv
import json
import os
import re
import struct
import subprocess
import sys
import time
from fractions import Fraction

import pytest

from board_plugin import wait_streaming
from zeal.analysis import datasets
from zeal.demo.attributes import RANGES

N = 2000  # readings replayed per kind
# The emulated board drops what it sends while no program has its port open (as a UART with
# nobody listening): the board waits start_delay_ms after its reset, and `zeal collect`
# attaches within that time.
CONFIG = {"period_ms": 0, "start_delay_ms": 3000}
ENV = dict(os.environ, PYTHONUNBUFFERED="1")


def zeal(*args, cwd, timeout=300, check=True):
    done = subprocess.run([sys.executable, "-m", "zeal", *map(str, args)], cwd=str(cwd),
                          capture_output=True, text=True, timeout=timeout, env=ENV,
                          stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, "zeal %s: %s%s" % (" ".join(map(str, args)),
                                                        done.stdout[-2000:], done.stderr[-2000:])
    return done


def mpremote(port, *args, timeout=60):
    done = subprocess.run([sys.executable, "-m", "mpremote", "connect", port, *args],
                          capture_output=True, text=True, timeout=timeout, env=ENV,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, "mpremote %s: %s%s" % (" ".join(args), done.stdout,
                                                        done.stderr)
    return done.stdout


def bits64(text):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(text)))[0]


def column(name):
    return datasets.aarhus(name, N)


def true_mean(readings, lo, hi):
    return float(datasets.clamped_mean(readings, lo, hi))


def within(estimate, ci, truth, what):
    half = (ci[1] - ci[0]) / 2
    assert abs(estimate - truth) <= 1.5 * half, (
        "%s: estimate %.4f, true mean %.4f, 99%% interval [%.4f, %.4f]"
        % (what, estimate, truth, ci[0], ci[1]))


def flash_collect_analyze(board, tmp_path, profile_args, replay_lines, profile="p.json",
                          config=CONFIG):
    """flash, collect --until-stopped, analyze --json: (the collect summary, the analysis)."""
    zeal("profile", *profile_args, "-o", profile, cwd=tmp_path)
    (tmp_path / "readings.txt").write_text("".join(line + "\n" for line in replay_lines))
    (tmp_path / "config.json").write_text(json.dumps(config))
    done = zeal("flash", "--port", board, "--profile", profile, "--sensor", "replay",
                "--replay-file", "readings.txt", "--config", "config.json", cwd=tmp_path)
    # the generator's native SHA-256, compiled for the architecture the probe reported
    assert "compile zealfw/sha256_viper.py for the board's architecture" in done.stderr
    # (the port's build names its Cortex-M3 armv7em; the native emitter's code is the same)
    assert re.search(r"\n      for armv7e?m\n", done.stderr), done.stderr
    t0 = time.monotonic()
    done = zeal("collect", "--port", board, "--db", "telemetry.db", "--profile", profile,
                "--until-stopped", "--duration", 240, "--json", cwd=tmp_path)
    took = time.monotonic() - t0
    summary = json.loads(done.stdout)
    assert "every device sent STOPPED" in summary["ended"], (summary, done.stderr)
    print("%s: %d reports collected in %.1f s (the board's start delay of %.1f s included)"
          % (profile_args[0], N, took, config["start_delay_ms"] / 1000))
    analysis = json.loads(zeal("analyze", "--db", "telemetry.db", "--json",
                               cwd=tmp_path).stdout)
    return summary, analysis


# ---- the emulated board itself ---------------------------------------------------------------
BOOT_PY = "open('booted.txt', 'a').write('b')\n"
MAIN_PY = ("import time\n"
           "open('ran.txt', 'a').write('m')\n"
           "while True:\n"
           "    time.sleep_ms(50)\n")


def test_emulated_board_is_a_board(emulated_board, tmp_path):
    port = emulated_board.port
    out = mpremote(port, "exec", "import os, sys, machine, vfs\n"
                   "print('fs', os.statvfs('/')[0] * os.statvfs('/')[2], type(vfs.VfsLfs2))\n"
                   "print('id', machine.unique_id().hex(), len(os.urandom(32)))\n"
                   "print('path', '/lib' in sys.path, sys.platform)\n")
    assert "fs 2097152" in out and "id 5a45414c51454d55 32" in out, out
    assert "path True qemu" in out, out
    # boot.py and main.py run at a reset; the files survive it; mpremote's Ctrl-C stops the
    # running main.py (a loop of sleeps) and gets the REPL
    (tmp_path / "boot.py").write_text(BOOT_PY)
    (tmp_path / "main.py").write_text(MAIN_PY)
    mpremote(port, "fs", "cp", str(tmp_path / "boot.py"), ":boot.py", "+", "fs", "cp",
             str(tmp_path / "main.py"), ":main.py", "+", "reset")
    time.sleep(1)
    out = mpremote(port, "exec", "print('seen', open('booted.txt').read(), "
                   "open('ran.txt').read())")
    assert "seen b m" in out, out
    mpremote(port, "exec", "import os\nfor f in ('boot.py', 'main.py', 'booted.txt', "
             "'ran.txt'):\n os.remove(f)\n")


def test_a_board_without_a_filesystem_is_refused_in_one_line(emulated_board, tmp_path):
    """A second emulated board, started without a filesystem (as the stock QEMU port is):
    `zeal conformance --port` and `zeal flash` each refuse it in one line naming what it
    lacks, before copying anything."""
    from board_plugin import qemu_tool

    zeal("profile", "--range", 23.5, 83.9, "--epsilon", 1, "-o", "p.json", cwd=tmp_path)
    with qemu_tool().QemuBoard(emulated_board.firmware, filesystem=False) as bare:
        conf = zeal("conformance", "--target", "board", "--port", bare.port, "--suite",
                    "generator", cwd=tmp_path, check=False)
        flash = zeal("flash", "--port", bare.port, "--profile", "p.json", cwd=tmp_path,
                     check=False)
    for done in (conf, flash):
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.startswith("zeal:")]
        assert len(lines) == 1, done.stderr  # progress lines aside, the one error line
        assert "no filesystem is mounted (OSError 19, ENODEV)" in lines[-1], done.stderr
        assert "Zeal needs a writable filesystem" in lines[-1], done.stderr


# ---- the quick start, each profile kind --------------------------------------------------------
def test_grid(board, tmp_path):
    lo, hi = datasets.HUMIDITY_RANGE
    hum = column("humidity")
    summary, doc = flash_collect_analyze(board, tmp_path, ["--range", lo, hi, "--epsilon", 1],
                                         [bits64(x) for x in hum])
    assert summary["reports"] == N and summary["lost_frames"] == 0, summary
    overall = doc["overall"]
    assert overall["n"] == N and overall["kind"] == "grid" and overall["gaps"] == 0
    within(overall["mean_calibrated"], overall["ci99"], true_mean(hum, lo, hi), "humidity")
    # the quick start's export: one row per report, each an unbiased estimate of its reading
    zeal("export", "--db", "telemetry.db", "--format", "csv", "--unit", "%RH", "-o",
         "readings.csv", cwd=tmp_path)
    with open(tmp_path / "readings.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == N
    mean = sum(float(r["estimate"]) for r in rows) / N
    assert mean == pytest.approx(overall["mean_calibrated"], rel=1e-9, abs=1e-9)


def test_stop_a_streaming_board(board, tmp_path):
    """`zeal stop` on a board that streams (one reading every 20 ms, nobody reading): STATUS
    STOPPED, the REPL back; asked again, the board is at its REPL. The board keeps the grid
    test's firmware and profile; its config is replaced by hand, as the README's "Flashing a
    board" does it (mpremote cp, reset)."""
    (tmp_path / "config.json").write_text(json.dumps({"period_ms": 20, "start_delay_ms": 500}))
    mpremote(board, "fs", "cp", str(tmp_path / "config.json"), ":zeal_config.json", "+",
             "reset")
    assert wait_streaming(board), "the board did not stream after its reset"
    first = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
    assert first["state"] == "stopped" and 4 in first["status_codes"], first
    again = json.loads(zeal("stop", "--port", board, "--json", cwd=tmp_path).stdout)
    assert again["state"] == "repl", again
    # at the REPL: the firmware flash put there draws its words with the native SHA-256
    out = mpremote(board, "exec", "import zealfw.words as w\nprint('native', w.digest1 "
                   "is not None, w.CounterWords(bytes(32)).next())")
    from zeal.mechanism.core.words import CounterWords
    assert "native True %d" % CounterWords(bytes(32))() in out, out


def test_table(board, tmp_path):
    lo, hi = datasets.HUMIDITY_RANGE
    hum = column("humidity")
    summary, doc = flash_collect_analyze(
        board, tmp_path, ["--range", lo, hi, "--epsilon", 1, "--mechanism", "pm", "--bits", 4],
        [bits64(x) for x in hum])
    assert summary["reports"] == N and summary["lost_frames"] == 0, summary
    overall = doc["overall"]
    assert overall["n"] == N and overall["kind"] == "table" and overall["gaps"] == 0
    within(overall["mean_calibrated"], overall["ci99"], true_mean(hum, lo, hi), "humidity")


def test_multi(board, tmp_path):
    light, hum = column("light"), column("humidity")
    states = [str(i % 3 if i % 5 else 0) for i in range(N)]  # frequencies 7/15, 4/15, 4/15
    (llo, lhi), (hlo, hhi) = RANGES["light"], RANGES["humidity"]
    summary, doc = flash_collect_analyze(
        board, tmp_path,
        ["--attributes", "--attribute", "light:%r:%r" % (llo, lhi),
         "--attribute", "hum:%r:%r:hm:3" % (hlo, hhi), "--categorical", "state:3",
         "--epsilon", 1],
        ["%s,%s,%s" % (bits64(a), bits64(b), c) for a, b, c in zip(light, hum, states)])
    assert summary["reports"] == N and summary["lost_frames"] == 0, summary
    attrs = {a["name"]: a for a in doc["attributes"]}
    assert sum(a["carried"] for a in attrs.values()) == N
    within(attrs["light"]["mean_calibrated"], attrs["light"]["ci99"],
           true_mean(light, llo, lhi), "light")
    within(attrs["hum"]["mean_calibrated"], attrs["hum"]["ci99"],
           true_mean(hum, hlo, hhi), "humidity")
    for value, est in attrs["state"]["frequencies"].items():
        truth = states.count(value) / N
        within(est["estimate"], est["ci99"], truth, "state %s" % value)


def test_shuffle(board, tmp_path):
    light, hum = column("light"), column("humidity")
    ranges = [RANGES["light"], RANGES["humidity"]]
    summary, doc = flash_collect_analyze(
        board, tmp_path,
        ["--shuffle", "--n", N, "--epsilon", 2, "--delta", "1e-6", "--ranges",
         *(v for r in ranges for v in r)],
        ["%s,%s" % (bits64(a), bits64(b)) for a, b in zip(light, hum)])
    assert summary["reports"] == N and summary["lost_frames"] == 0, summary
    (shuf,) = doc["shuffle"]
    assert shuf["messages"] == N and shuf["invalid_messages"] == 0
    assert shuf["guarantee"] == "configured", shuf
    tol = 4 * shuf["mse_bound"] ** 0.5
    for c, (xs, (lo, hi)) in enumerate(zip((light, hum), ranges)):
        truth01 = (true_mean(xs, lo, hi) - lo) / (hi - lo)
        assert abs(shuf["mean01"][c] - truth01) <= tol, (c, shuf["mean01"][c], truth01, tol)
