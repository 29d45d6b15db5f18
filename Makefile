# Two commands do all the set-up: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO   ?= demo_data

.PHONY: demo test test-fast lint install bench bench-refs gallery clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install only when the project's dependencies change.
$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-app

# numba's compiled correlators, compiled into its cache after installing and again when
# a kernel module changes, so that no job, demo or test waits for the compiler
# (docs/correlators.md, "Compiled kernels and their cache")
KERNELS := $(wildcard xpcsviewer/compute/*/_*numba.py) xpcsviewer/jobs/precompile.py \
	xpcsviewer/commands/_precompile.py \
	xpcsviewer/jobs/_precompile_tasks.py
$(VENV)/.kernels: $(KERNELS) $(VENV)/.installed-app
	$(BIN)/python -m xpcsviewer.commands._precompile
	touch $@

# JAX's compilation cache filled with the default fit programs (least squares, and NUTS
# of `fit --bayes` and of the window), so that a first Bayesian fit loads them instead of
# compiling (docs/fitting.md, "The first fit after install"). XPCS_PRECOMPILE_JAX=lsq|off makes it shorter or
# skips it; `make test` does not run it.
JAX_PROGRAMS := $(wildcard xpcsviewer/fitting/*.py) xpcsviewer/jobs/precompile_jax.py \
	xpcsviewer/jobs/warmup.py xpcsviewer/jobs/fit.py xpcsviewer/backends/jax_backend.py
$(VENV)/.jax-programs: $(JAX_PROGRAMS) $(VENV)/.installed-app
	$(BIN)/python -m xpcsviewer.commands._precompile --jax
	touch $@

install: $(VENV)/.installed-app $(VENV)/.kernels $(VENV)/.jax-programs

# Reuses a complete demo set; `make demo DEMO_ARGS=--overwrite` simulates it again.
demo: $(VENV)/.installed-app $(VENV)/.kernels $(VENV)/.jax-programs
	$(BIN)/xpcsviewer demo --out $(DEMO) $(DEMO_ARGS)

# The linter (ruff, configured in pyproject.toml) runs first: a finding fails `make test`.
LINT := $(BIN)/ruff check xpcsviewer tests benchmarks scripts

lint: $(VENV)/.installed-test
	$(LINT)

# Two worker processes (pytest-xdist): CI has two cores, and most tests wait on Python, not
# on both cores; PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= 2

test: $(VENV)/.installed-test
	@$(MAKE) --no-print-directory $(VENV)/.kernels
	$(LINT)
	QT_QPA_PLATFORM=offscreen JAX_PLATFORMS=cpu $(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

test-fast: $(VENV)/.installed-test
	@$(MAKE) --no-print-directory $(VENV)/.kernels
	$(LINT)
	QT_QPA_PLATFORM=offscreen JAX_PLATFORMS=cpu $(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "not slow" $(PYTEST_ARGS)

# On demand, minutes each; tools missing from .bench-venvs/ are skipped with a message.
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/device_crossover.py
	$(BIN)/python benchmarks/saxs_reduction.py
	$(BIN)/python benchmarks/fit.py
	$(BIN)/python benchmarks/correlate.py
	$(BIN)/python benchmarks/jobs.py
	$(BIN)/python benchmarks/batch.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/gui_scale.py

# The established tools, each in its own venv (never in the app's): see
# ../shared/docs/reference-tools.md for the routes that work on Python 3.11.
REFS := .bench-venvs
bench-refs:
	test -x $(REFS)/skbeam/bin/python || ($(PYTHON) -m venv $(REFS)/skbeam && \
	  $(REFS)/skbeam/bin/pip install -q -U pip setuptools wheel && \
	  $(REFS)/skbeam/bin/pip install -q scikit-beam==0.0.27)
	test -x $(REFS)/pyfai/bin/python || ($(PYTHON) -m venv $(REFS)/pyfai && \
	  $(REFS)/pyfai/bin/pip install -q pyFAI==2026.9.0)
	test -x $(REFS)/xpcsviewer/bin/python || ($(PYTHON) -m venv $(REFS)/xpcsviewer && \
	  $(REFS)/xpcsviewer/bin/pip install -q xpcs-viewer==1.2.2)
	test -x $(REFS)/xpcscorr/bin/python || ($(PYTHON) -m venv $(REFS)/xpcscorr && \
	  $(REFS)/xpcscorr/bin/pip install -q xpcs-correlator==0.4.5)
	test -x $(REFS)/boost/bin/python || ($(PYTHON) -m venv $(REFS)/boost && \
	  $(REFS)/boost/bin/pip install -q torch==2.13.0 && \
	  $(REFS)/boost/bin/pip install -q h5py hdf5plugin matplotlib numpy psutil scikit-image tqdm nvidia-ml-py && \
	  $(REFS)/boost/bin/pip install -q --no-deps --ignore-requires-python boost-corr==0.1.7)

gallery: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen $(BIN)/python scripts/render_gallery.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .ruff_cache
