PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Numba's on-disk cache is invalidated only when a kernel's own file changes, not when a
# kernel it calls (in another module) does. Keying the cache directory by the whole
# package's source makes every edit recompile, so tests and benchmarks never run stale code.
KERNEL_CACHE := .numba-cache
SOURCE_HASH := $(shell cat $$(find streamlearn -name '*.py' | LC_ALL=C sort) | sha256sum | cut -c1-16)
export NUMBA_CACHE_DIR := $(CURDIR)/$(KERNEL_CACHE)/$(SOURCE_HASH)

.PHONY: demo test lint bench clean prune-kernel-cache

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench,dev]"
	@touch $(STAMP)

demo: $(STAMP) prune-kernel-cache
	$(VENV)/bin/streamlearn demo

test: $(STAMP) prune-kernel-cache
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: export STREAMLEARN_DATA ?= $(abspath ../shared/data)
bench: $(STAMP) prune-kernel-cache
	$(PY) bench/run_all.py

# keep only the cache of the current source
prune-kernel-cache:
	@mkdir -p $(KERNEL_CACHE) && find $(KERNEL_CACHE) -mindepth 1 -maxdepth 1 ! -name $(SOURCE_HASH) -exec rm -rf {} +

clean:
	rm -rf $(VENV) $(KERNEL_CACHE) build *.egg-info .pytest_cache .ruff_cache .hypothesis
