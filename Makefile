# The verbs a newcomer needs. Every target creates the virtual environment if it is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-long lint bench bench-locomo bench-latency clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[onnx,local,aws,dev]'
	touch $(STAMP)

venv: $(STAMP)

## Start the local server on the embedded backend (SQLite in ./.rearview, offline MiniLM embedder).
run: $(STAMP)
	$(BIN)/rearview serve

## Run the whole test suite.
test: $(STAMP)
	$(BIN)/pytest -q

## The long profile (property tests with many more examples).
test-long: $(STAMP)
	REARVIEW_LONG_TESTS=1 $(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check layers tests bench functions infra
	$(BIN)/mypy

bench-locomo: $(STAMP)
	$(BIN)/python bench/locomo.py --data ../shared/benchmarks/locomo

bench-latency: $(STAMP)
	$(BIN)/python bench/recall_latency.py

bench: bench-locomo bench-latency

clean:
	rm -rf $(VENV) .rearview .pytest_cache .mypy_cache .ruff_cache
