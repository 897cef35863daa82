# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet -c requirements/lock.txt
STAMP := $(VENV)/.installed
FLEET_STAMP := $(VENV)/.fleet-deps
AGENTS_STAMP := $(VENV)/.agents-deps
TEST_STAMP := $(VENV)/.test-deps

.PHONY: demo test lint install clean train-demo eval fleet agents dist fuzz

# torch is installed first, pinned. Where pip finds torch 2.13.0's CPU wheel on local disk (this project's
# development machines) that is what it takes; from PyPI, Linux x86_64 gets the CUDA build (~3 GB), which also
# runs on a CPU. A CPU-only machine elsewhere: make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH ?= torch==2.13.0
TORCH_INDEX ?=

$(STAMP): pyproject.toml requirements/lock.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(PIP) -e '.[dev]'
	touch $(STAMP)

# the fleet extra (Ray Serve): `make fleet` runs it, and `make lint` type-checks fleet/ against it
$(FLEET_STAMP): $(STAMP)
	$(PIP) -e '.[dev,fleet]'
	touch $(FLEET_STAMP)

# the voice-agent frameworks (Pipecat, LiveKit Agents): `make agents` installs them, `make lint` type-checks integrations/ against them
$(AGENTS_STAMP): $(STAMP)
	$(PIP) -e '.[dev,pipecat,livekit]'
	touch $(AGENTS_STAMP)

# what only the tests need: Debian packages (GStreamer, nginx-rtmp, chromium, espeak-ng; apt-get, as root or via sudo),
# the GStreamer backend, and the test-only model family that plugs in by entry point (tests/plugins/colourbars)
$(TEST_STAMP): $(FLEET_STAMP) $(AGENTS_STAMP) scripts/system-deps.sh tests/plugins/colourbars/pyproject.toml
	bash scripts/system-deps.sh
	$(PIP) -e '.[dev,gstreamer,fleet,pipecat,livekit]'
	$(PIP) --no-deps -e tests/plugins/colourbars
	touch $(TEST_STAMP)

# coverage-guided fuzzing (atheris) of every parser of untrusted bytes, then schemathesis's stateful runs of the API, for
# FUZZ_SECONDS in all (docs/fuzzing.md); not part of `make test`. Findings: out/fuzz/findings/, figures: out/fuzz/report.json
FUZZ_STAMP := $(VENV)/.fuzz-deps
FUZZ_SECONDS ?= 900
FUZZ_TARGETS ?= all
$(FUZZ_STAMP): $(STAMP)
	$(PIP) -e '.[dev,fuzz]'
	touch $(FUZZ_STAMP)

fuzz: $(FUZZ_STAMP)
	PYTHONPATH=tests $(BIN)/python -m fuzz --seconds $(FUZZ_SECONDS) --targets $(FUZZ_TARGETS) --out out/fuzz

install: $(STAMP)
	@echo "avatarstream is installed in $(VENV): run 'source $(VENV)/bin/activate' to put it on your PATH"

# Pipecat and LiveKit Agents in the same environment, with the lock file's pins (docs/agents.md)
agents: $(AGENTS_STAMP)
	@echo "the voice-agent extras are installed in $(VENV): 'source $(VENV)/bin/activate', then see docs/agents.md"

# a wheel for another environment: pip install 'dist/avatarstream-VERSION-py3-none-any.whl[pipecat]'
dist: $(STAMP)
	rm -rf build dist
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .
	@ls dist/*.whl

# a local fleet of two session slots on Ray Serve (docs/fleet.md); Ctrl-C stops it
fleet: $(FLEET_STAMP)
	$(BIN)/avatarstream fleet --replicas 2 --model demo

demo: $(STAMP)
	$(BIN)/avatarstream render --out out/demo.mp4 --report out/demo-report.json --trace out/demo-trace.json
	@echo "avatarstream is installed in $(VENV): run 'source $(VENV)/bin/activate' to type 'avatarstream ...' (and 'pip install' into it)"

test: $(TEST_STAMP)
	$(BIN)/pytest -q

# ruff (lint + format check) and mypy (strict for pipeline/, runtime/, publish/); settings in pyproject.toml
lint: $(FLEET_STAMP) $(AGENTS_STAMP)
	$(BIN)/ruff check src tests scripts examples
	$(BIN)/ruff format --check src tests scripts examples
	$(BIN)/mypy

# retrain the shipped demo weights (about an hour on 2 CPU cores; CUDA when present)
train-demo: $(TEST_STAMP)
	nice -n 10 $(BIN)/python -m avatarstream.training --out src/avatarstream/assets/demo --work out/train-demo

eval: $(TEST_STAMP)
	$(BIN)/avatarstream eval --threads 1 --out out/eval

clean:
	rm -rf $(VENV) out build dist .pytest_cache .mypy_cache .ruff_cache
