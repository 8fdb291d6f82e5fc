# The verbs a newcomer needs. Every target creates the virtual environment if it is missing, and installs what it
# needs into it: `make run` only what running needs, the tests, lint, benchmarks and `make synth` everything.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# One virtual environment; a stamp per set of extras records what it holds (the full set includes the run set).
RUN_EXTRAS := onnx,local,mcp,llm
ALL_EXTRAS := onnx,local,aws,mcp,infra,llm,dev
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-all
# test-fast runs the contract suites on these backends only: the fakes and SQLite.
FAST_BACKENDS := memory,sqlite,rules,fake

.PHONY: venv run test test-fast test-long lint bench bench-locomo bench-chatlog bench-latency clean layer synth

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[$(RUN_EXTRAS)]'
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[$(ALL_EXTRAS)]'
	touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP)

## Start the local server on the embedded backend (SQLite in ./.rearview, offline MiniLM embedder).
run: $(RUN_STAMP)
	$(BIN)/rearview serve

## Run the whole test suite (as CI does).
test: $(STAMP)
	$(BIN)/pytest -q

## Unit tests and the contract suites on the fakes and SQLite, without the tests marked slow: under a minute.
test-fast: $(STAMP)
	$(BIN)/pytest -q tests/unit tests/contract -m "not slow" --backends $(FAST_BACKENDS)

## The whole suite with the long profile: the property, fuzz and fault tests with many more examples.
test-long: $(STAMP)
	REARVIEW_LONG_TESTS=1 $(BIN)/pytest -q

## ruff (with the complexity gate), mypy over the package, the tests and the benchmarks, and the import contracts.
lint: $(STAMP)
	$(BIN)/ruff check layers tests bench docs functions infra
	$(BIN)/ruff format --check layers tests bench docs functions infra
	$(BIN)/mypy
	$(BIN)/mypy tests bench docs
	$(BIN)/lint-imports

bench-locomo: $(STAMP)
	$(BIN)/python bench/locomo.py --data ../shared/benchmarks/locomo

## Chatlog, the second recall benchmark: written by bench/chatgen.py (seeded) into .bench/, then read like LoCoMo.
CHATLOG_DIR ?= .bench/chatlog
bench-chatlog: $(STAMP)
	$(BIN)/python bench/chatgen.py --out $(CHATLOG_DIR)
	$(BIN)/python bench/locomo.py --data $(CHATLOG_DIR)

bench-latency: $(STAMP)
	$(BIN)/python bench/recall_latency.py

bench: bench-locomo bench-chatlog bench-latency

## The Lambda layer: the rearview wheel and its `aws` and `mcp` extras, as PyPI wheels for the functions' platform
## (python3.13 on arm64; Lambda's python3.13 runtime is Amazon Linux 2023, glibc 2.34). No Docker needed.
LAYER_DIR := build/layer
LAYER_PLATFORMS ?= manylinux2014_aarch64 manylinux_2_28_aarch64
LAYER_STAMP := $(LAYER_DIR)/.built
$(LAYER_STAMP): pyproject.toml $(shell find layers/rearview -name '*.py' -o -name '*.typed' 2>/dev/null) | $(BIN)/python
	rm -rf $(LAYER_DIR) build/wheels
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir build/wheels .
	$(BIN)/pip install --quiet --no-compile --target $(LAYER_DIR)/python --implementation cp --python-version 3.13 \
		$(foreach p,$(LAYER_PLATFORMS),--platform $(p)) --only-binary=:all: \
		"$$(ls build/wheels/rearview_memory-*.whl)[aws,mcp]"
	touch $(LAYER_STAMP)

layer: $(LAYER_STAMP)

## Synthesise the CDK app (infra/) into cdk.out; no AWS credentials needed. Context: SYNTH_ARGS="-c rearview:search=domain".
## Deploy with `cd infra && npx cdk deploy`.
synth: $(STAMP) $(LAYER_STAMP)
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(BIN)/python infra/app.py $(SYNTH_ARGS)

clean:
	rm -rf $(VENV) .rearview .bench .pytest_cache .mypy_cache .ruff_cache
