# pyburn's developer commands. Needs GNU make, python3 (3.11+), node (20+) and npm; everything
# else is installed here, into .venv/, node_modules/ and build/. Each setup step leaves a stamp
# file and reruns only when its inputs change, so a second `make test` starts testing at once.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

# What the Pyodide run executes: the device-parametrized suites that must pass on `flex` with
# no numpy (they read their references from build/conformance-golden.json, which the desktop
# run writes, so the desktop run goes first).
PYODIDE_TESTS := tests/conformance tests/backends/test_flex.py tests/data/test_datasets.py \
	tests/data/test_loader.py tests/store

# Everything that goes into the pyburn wheel: files, and folders so that a deleted file counts
# too (compiled caches excluded: they change on every run).
WHEEL_INPUTS := pyproject.toml README.md \
	$(shell find pyburn -not -path '*/__pycache__*' 2>/dev/null)

DEV_STAMP := $(VENV)/.installed-dev
NUMPY_STAMP := $(VENV)/.installed-numpy
NPM_STAMP := node_modules/.installed
PYTEST_WHEELS_STAMP := build/pyodide-wheels/.downloaded
WHEEL_STAMP := build/dist/.built
PYODIDE_INPUTS := $(NPM_STAMP) $(PYTEST_WHEELS_STAMP) $(WHEEL_STAMP)

RUFF := $(BIN)/ruff check .
PYTEST := $(BIN)/pytest -q
PYODIDE := node tests/pyodide/run.mjs $(PYODIDE_TESTS)

.PHONY: help test demo lint test-desktop test-pyodide bench bench-pyodide wheel clean
.DELETE_ON_ERROR:

help:
	@echo "make demo          run examples/tensor_tour.py (sets up .venv with numpy)"
	@echo "make test          ruff, the desktop test suite, then the suite inside Pyodide"
	@echo "make lint          ruff only"
	@echo "make test-desktop  pytest on this Python only"
	@echo "make test-pyodide  the Pyodide run only (after a desktop run wrote the golden file)"
	@echo "make bench         pyburn bench: pyburn next to numpy, PyTorch and plain Python"
	@echo "make bench-pyodide the flex matmul benchmark inside Pyodide (BENCH=... for others)"
	@echo "make wheel         build build/dist/pyburn-*.whl"
	@echo "make clean         remove .venv, node_modules and build"

test: $(DEV_STAMP) $(PYODIDE_INPUTS)
	$(RUFF)
	$(PYTEST)
	$(PYODIDE)

demo: $(NUMPY_STAMP)
	$(BIN)/python examples/tensor_tour.py

lint: $(DEV_STAMP)
	$(RUFF)

test-desktop: $(DEV_STAMP)
	$(PYTEST)

test-pyodide: $(PYODIDE_INPUTS)
	$(PYODIDE)

# BENCH names what to run (families or benchmarks, see `pyburn bench --list`) and options.
bench: $(DEV_STAMP)
	$(BIN)/pyburn bench $(BENCH)

bench-pyodide: $(NPM_STAMP) $(WHEEL_STAMP)
	node tests/pyodide/bench.mjs $(BENCH)

wheel: $(WHEEL_STAMP)

clean:
	rm -rf $(VENV) node_modules build

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]'
	touch $@

$(NUMPY_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[numpy]'
	touch $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# pytest and its pure-Python dependencies, resolved for Pyodide's Python (3.14), not this one.
$(PYTEST_WHEELS_STAMP): | $(BIN)/python
	rm -rf $(@D)
	$(PIP) download --python-version 3.14 --only-binary=:all: --platform any -d $(@D) pytest
	touch $@

$(WHEEL_STAMP): $(WHEEL_INPUTS) | $(BIN)/python
	rm -rf $(@D)
	$(PIP) wheel --no-deps -w $(@D) .
	touch $@
