"""The device side: the firmware on a board, found, compiled, flashed, stopped and checked.

Modules, in import order (each imports only those above it, and zeal.errors, zeal.mechanism
and zeal.wire below this package):
- `firmware`: where the firmware and the MicroPython tools are on this machine
  (`find_firmware`, `locate_micropython`, `locate_mpy_cross`), compiling the device code to
  .mpy (`compile_tree`), `ConformanceError`;
- `probe`: the board-side probe before a flash (`PROBE_CODE`, `probe_problems`,
  `run_probe`) and mpremote's failures as one line (`mpremote_error`);
- `stop`: `zeal stop` (`stop_board`, `check_port`);
- `devices`: `zeal devices` (`list_devices`); `--port auto` (`resolve_port`) and the one
  missing-port check (`check_present`);
- `flash`: `zeal flash` (`plan_flash`, `flash`, `build_config`, `parse_sensor`,
  `check_replay_file`);
- `conformance_cases`: what the suite checkers share about a vector case (`word_source`,
  `readings`, `settled`, `outputs_differ`, `file_request`, ...);
- `conformance`: the shared vectors through every implementation (`run`, `plan`,
  `open_target`; targets cpython, micropython, firmware-cpython, board); its suite checkers
  `conformance_tables`, `conformance_shuffle`, `conformance_multi`.

Nothing is re-exported: each command's module is its API.
"""
