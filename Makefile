# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet -c requirements/lock.txt
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-deps

.PHONY: demo test install clean train-demo eval

$(STAMP): pyproject.toml requirements/lock.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the CPU wheel of torch; a plain `torch` would pull a multi-GB CUDA build
	$(BIN)/pip install --quiet torch==2.13.0
	$(PIP) -e '.[dev]'
	touch $(STAMP)

# what only the tests need: Debian packages (GStreamer, nginx-rtmp, chromium) and the GStreamer backend
$(TEST_STAMP): $(STAMP) scripts/system-deps.sh
	bash scripts/system-deps.sh
	$(PIP) -e '.[dev,gstreamer]'
	touch $(TEST_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/avatarstream render --out out/demo.mp4 --report out/demo-report.json --trace out/demo-trace.json

test: $(TEST_STAMP)
	$(BIN)/pytest -q

# retrain the shipped demo weights (about an hour on 2 CPU cores; CUDA when present)
train-demo: $(TEST_STAMP)
	nice -n 10 $(BIN)/python -m avatarstream.training --out src/avatarstream/assets/demo --work out/train-demo

eval: $(TEST_STAMP)
	$(BIN)/avatarstream eval --threads 1 --out out/eval

clean:
	rm -rf $(VENV) out .pytest_cache
