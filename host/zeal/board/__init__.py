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
- `flash_mqtt`, `flash_config`, `flash_replay`: what `zeal flash` writes to the board, checked
  as the board checks it: the MQTT output (`mqtt_output`, `redacted`), the device config
  (`build_config`, `parse_sensor`) and what it needs of the board (`board_needs`), a replay
  file (`check_replay_file`);
- `flash_plan`: the steps of `zeal flash`, checked but not run (`plan_flash`, `Step`,
  `mpremote_argv`);
- `flash`: `zeal flash` (`flash`, `cmd_flash`), which runs the plan;
- `conformance_cases`: what the suite checkers share about a vector case (`word_source`,
  `readings`, `settled`, `outputs_differ`, `file_request`, ...); the suite checkers
  `conformance_tables`, `conformance_shuffle`, `conformance_multi`;
- `conformance_suites`: the vectors, each suite's checker, the requests and the verdict
  (`available_suites`, `load_vectors`, `check`);
- `conformance_host`, `conformance_channel`, `conformance_board`: the implementations the
  vectors run through (`HostImpl`; `ProcessImpl` on the runner's line protocol; `BoardImpl`);
- `conformance`: the shared vectors through every implementation (`run`, `plan`,
  `open_target`; targets cpython, micropython, firmware-cpython, board).

Nothing is re-exported here: each command's module is its API (`flash` and `conformance` keep
the names they always had importable, wherever those are now defined).
"""
