# Two commands do all the set-up: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO   ?= demo_data

.PHONY: demo test test-fast install bench gallery lint clean

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

install: $(VENV)/.installed-app

demo: $(VENV)/.installed-app
	$(BIN)/xpcsviewer demo --out $(DEMO)

test: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen JAX_PLATFORMS=cpu $(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen JAX_PLATFORMS=cpu $(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/device_crossover.py

gallery: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen $(BIN)/python scripts/render_gallery.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache
