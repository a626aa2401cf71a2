"""The firmware's heap on 32 bits (issue 19, items 5 and 6): the main loop on the emulated
Cortex-M3 (31-bit small ints, float32), one profile of each kind, measured by
tools/bench_heap.py's board harness on a board of its own.

Goals: at most 256 bytes allocated per wire report; the grid's loop within 32 KiB of free
heap, every kind's within 48. The generator's SHA-256 runs as native code compiled for the
board (zealfw/sha256_viper.py, as zeal flash compiles it): MicroPython's hashlib allocates a
hash object and a digest for every four words (192 bytes on this board), which made a
multi-attribute report (about nine words) cost 532 bytes; measured now: 66 (grid), 26-95
(tables), 100 (multi), 2-3 (shuffle).

Without a MicroPython source (ZEAL_MICROPYTHON_SRC) or the ARM toolchain and QEMU these skip
in one line, and fail under CI=true (tests/board_plugin.py).
"""
import argparse
import os
import sys

import pytest

from board_plugin import _firmware, _strict
from conftest import tools_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {  # profile: (reading kind, free heap goal KiB, allocation bound B/report)
    "hum-e1-m4": ("f32", 32, 256),       # grid, bounds 23.5..83.9 (a 51-bit divisor: limbs)
    "adc-e1-m8": ("raw", 32, 256),       # grid, raw ADC counts (a 61-bit divisor: limbs)
    "t-optimal-4bit": ("f32", 48, 256),  # table, row sums near 2^32 (limbs)
    "s-d4-t3": ("f32", 48, 256),         # shuffle, three messages a tick
    "multi-d4": ("f32", 48, 256),        # multi: about nine generator words a report
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    path, why, skippable = _firmware()
    if path is None:
        if skippable and not _strict():
            pytest.skip(why)
        pytest.fail(why)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    B = tools_module("bench_heap")
    vectors = {c["id"]: c for c in B.C.load_vectors("profiles")["cases"] if "profile" in c}
    compiled = str(tmp_path_factory.mktemp("mpy"))
    B.compile_firmware(compiled, B.C.FIRMWARE)
    args = argparse.Namespace(profile=list(CASES), kind=None, no_board=False, no_bisect=False,
                              no_speed=True, case_kinds={p: [c[0]] for p, c in CASES.items()},
                              fit_at={p: c[1] for p, c in CASES.items()})
    got, why = B.board_rows(args, vectors, compiled)  # one board, every case from a reset
    assert got, why
    return {r[0]: r for r in got}


@pytest.mark.parametrize("pid", sorted(CASES))
def test_the_loop_allocates_little_on_32_bits(rows, pid):
    _, kind, per, tick, live, heap, rate, need = rows[pid]
    assert per is not None, heap  # the run's last words
    assert per <= CASES[pid][2], (pid, kind, per)


@pytest.mark.parametrize("pid", sorted(CASES))
def test_the_loop_fits_its_heap_goal_on_32_bits(rows, pid):
    # one run with exactly the goal's free heap (bench_heap searches the smallest)
    need = rows[pid][7]
    assert need is not None and need <= CASES[pid][1], (pid, need)
