# Developer entry points for keras_seq.
#
#   make venv                      create .venv and install the project with its dev extras
#   make check                     the fast tier: lint, format check, every test not marked `large`
#                                  (TensorFlow), the backend-agnostic ones under JAX and PyTorch
#   make test                      what make check and every `large` test (the docs build and
#                                  the browser tests included) run, one pytest run per backend
#   make test-under-load           the same with a busy loop on every core
#   make app ARGS="--port 7871"    start the Gradio builder app (options go to `keras-seq ui`)
#   make canvas                    rebuild the graph canvas's script from its source (Node, npm)
#   make docs                      build the documentation site into site/ (warnings are errors)
#
# Every target that needs the project depends on the install stamp, so a fresh clone with only
# Python 3.11 and make can run `make test` directly.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ARGS ?=
# Test processes (pytest-xdist); each file's tests stay in one process (`--dist loadfile`), so
# module fixtures are built once. The files go out in the order tests/conftest.py gives them
# (longest first), not xdist's default of the most tests first.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30
# The browser tests drive Debian's Chromium through Playwright (no browser download).
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help venv browser app docs check test test-large test-under-load lint format bench clean
.PHONY: distclean bench-app bench-graph durations canvas js-test canvas-fresh

help: ## Show this help.
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever pyproject.toml changes (dependencies, extras, entry points).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

venv: $(STAMP) ## Create .venv and install the project with the dev extras.

browser: ## Install Debian's Chromium for the browser tests if it is missing.
	@[ -x $(CHROMIUM) ] || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@[ -x $(CHROMIUM) ] && echo "browser: $$($(CHROMIUM) --version 2>/dev/null)"

# The Build tab's canvas is Svelte Flow, built by vite into one script that the package ships
# (builder_ui/app/canvas/static/graph_canvas.js, committed: `make app` and a wheel need no Node).
# `npm ci` installs exactly what package-lock.json holds, again only when the lockfile changes.
CANVAS := builder_ui/app/canvas/frontend
NODE_MODULES := $(CANVAS)/node_modules/.package-lock.json

$(NODE_MODULES): $(CANVAS)/package-lock.json
	npm ci --prefix $(CANVAS) --no-audit --no-fund
	touch $@

canvas: $(NODE_MODULES) ## Rebuild the graph canvas's script from builder_ui/app/canvas/frontend.
	npm run --prefix $(CANVAS) build

js-test: $(NODE_MODULES) ## The canvas's JavaScript unit tests (node --test).
	npm test --prefix $(CANVAS)

# The committed script is what its source builds: built again into a scratch folder, compared.
canvas-fresh: $(NODE_MODULES)
	@out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
		(cd $(CANVAS) && npx vite build --logLevel error --outDir "$$out" >/dev/null); \
		cmp -s "$$out/graph_canvas.js" $(CANVAS)/../static/graph_canvas.js || \
		{ echo "builder_ui/app/canvas/static/graph_canvas.js is not what its source builds: run make canvas"; exit 1; }
	@echo "canvas-fresh: the committed canvas script matches its source"

app: $(STAMP) ## Start the builder app; pass options with ARGS="--port 7871".
	$(BIN)/keras-seq ui $(ARGS)

# The site is read from the source (griffe, no Keras import) and fetches nothing; --strict
# makes a broken link, reference or docstring an error.
docs: $(STAMP) ## Build the documentation site into site/ (warnings are errors).
	$(BIN)/mkdocs build --strict --site-dir site

# The fast tier: what you run while working and before you stop. Every test not marked `large`
# (tests/conftest.py fails a test that should be): on TensorFlow, and the backend-agnostic ones
# under JAX and PyTorch.
check: lint js-test ## Lint, format check, the canvas's JS tests and the fast tests (not `large`) on the three backends.
	KERAS_BACKEND=tensorflow $(PYTEST) -m "not large"
	KERAS_BACKEND=jax $(PYTEST) -m "backend_agnostic and not large"
	KERAS_BACKEND=torch $(PYTEST) -m "backend_agnostic and not large"

# The large tier: learning tests, fresh interpreters, exports, Ray clusters and the browser tests.
test-large: $(STAMP) browser ## The `large` tests alone, on the three backends.
	KERAS_BACKEND=tensorflow KERAS_SEQ_CHROMIUM=$(CHROMIUM) $(PYTEST) -m large
	KERAS_BACKEND=jax $(PYTEST) -m "backend_agnostic and large"
	KERAS_BACKEND=torch $(PYTEST) -m "backend_agnostic and large"

# Everything, as CI runs it: what make check and make test-large run together, one pytest run
# per backend (one start-up and collection each, and the quick files fill the workers' last
# gaps once the large ones are handed out). The docs build (`mkdocs build --strict`) is a large
# test: tests/docs/test_site.py builds the site once and reads the pages it promises. Started
# in the background (`make test &`), the suite inherits SIGINT ignored; tests/conftest.py
# takes it back, so the Ctrl-C tests see what a terminal gives.
test: lint js-test canvas-fresh browser ## Lint, the canvas's JS tests, every test on TensorFlow, the backend-agnostic ones on JAX and PyTorch: CI.
	KERAS_BACKEND=tensorflow KERAS_SEQ_CHROMIUM=$(CHROMIUM) $(PYTEST)
	KERAS_BACKEND=jax $(PYTEST) -m backend_agnostic
	KERAS_BACKEND=torch $(PYTEST) -m backend_agnostic

# Each test's time, per backend, into tests/durations.json: the order in which the files are
# handed to the workers (tests/conftest.py). Rerun after adding or changing long tests.
durations: $(STAMP) browser ## Measure the large tests' files' times into tests/durations.json (their order).
	KERAS_SEQ_RECORD_DURATIONS=1 KERAS_BACKEND=tensorflow KERAS_SEQ_CHROMIUM=$(CHROMIUM) $(PYTEST) -m large
	KERAS_SEQ_RECORD_DURATIONS=1 KERAS_BACKEND=jax $(PYTEST) -m "backend_agnostic and large"
	KERAS_SEQ_RECORD_DURATIONS=1 KERAS_BACKEND=torch $(PYTEST) -m "backend_agnostic and large"

# No test may depend on the machine's speed: the same suite with every core kept busy.
test-under-load: $(STAMP) browser ## make test with a busy loop on every core.
	@pids=""; for _ in $$(seq "$$(nproc)"); do (while :; do :; done) & pids="$$pids $$!"; done; \
		trap 'kill $$pids 2>/dev/null' EXIT; $(MAKE) --no-print-directory test

lint: $(STAMP) ## Run ruff lint and the format check.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP) ## Format the code and apply safe lint fixes.
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP) ## Run the recurrent-layer benchmark.
	$(BIN)/python benchmarks/recurrent.py $(ARGS)

bench-app: $(STAMP) browser ## Time the app's clicks and its 1,000-run Compare tab in Chromium.
	KERAS_SEQ_CHROMIUM=$(CHROMIUM) $(BIN)/python benchmarks/app_views.py $(ARGS)

bench-graph: $(STAMP) ## Time graph_report, the canvas's shape check, on a 30-block graph.
	$(BIN)/python benchmarks/graph_shapes.py $(ARGS)

clean: ## Remove build artefacts and caches (keeps .venv).
	rm -rf build dist site .pytest_cache .ruff_cache
	find . -path ./$(VENV) -prune -o -name '*.egg-info' -type d -prune -exec rm -rf {} +
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean ## Also remove the virtual environment.
	rm -rf $(VENV)
