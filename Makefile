PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
# Numba's on-disk cache is invalidated only when a kernel's own file changes, not when a
# kernel it calls (in another module) does. Keying the cache directory by the whole
# package's source makes every edit recompile, so tests and benchmarks never run stale code.
KERNEL_CACHE := .numba-cache
SOURCE_HASH := $(shell cat $$(find streamlearn -name '*.py' | LC_ALL=C sort) | sha256sum | cut -c1-16)
export NUMBA_CACHE_DIR := $(CURDIR)/$(KERNEL_CACHE)/$(SOURCE_HASH)

.PHONY: demo test test-oldest-sklearn lint bench clean prune-kernel-cache

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,dev]"
	@touch $(STAMP)

# the peers the benchmarks measure against (LightGBM, XGBoost, Vowpal Wabbit, EBM, ...)
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,bench,dev]"
	@touch $(BENCH_STAMP)

demo: $(STAMP) prune-kernel-cache
	$(VENV)/bin/streamlearn demo

# one pytest worker per core (at most 4), each test file on one worker: the suite is almost
# all numba compiling, and a file's tests mostly share their kernels
test: $(STAMP) prune-kernel-cache
	$(PY) -m pytest -q --numprocesses=auto --maxprocesses=4 --dist=loadfile

# scikit-learn's estimator checks on the oldest scikit-learn that pyproject.toml allows
OLDEST_SKLEARN := $(shell sed -n 's/.*"scikit-learn>=\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)
OLDEST_VENV := .venv-sklearn-$(OLDEST_SKLEARN)
test-oldest-sklearn: prune-kernel-cache
	@test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip install --quiet -e ".[test]" "scikit-learn==$(OLDEST_SKLEARN)"
	$(OLDEST_VENV)/bin/python -m pytest -q tests/test_common.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: export STREAMLEARN_DATA ?= $(abspath ../shared/data)
bench: $(BENCH_STAMP) prune-kernel-cache
	$(PY) bench/run_all.py

# keep only the cache of the current source
prune-kernel-cache:
	@mkdir -p $(KERNEL_CACHE) && find $(KERNEL_CACHE) -mindepth 1 -maxdepth 1 ! -name $(SOURCE_HASH) -exec rm -rf {} +

clean:
	rm -rf $(VENV) .venv-sklearn-* $(KERNEL_CACHE) build *.egg-info .pytest_cache .ruff_cache .hypothesis
