# One entry point for every gate. Fresh machine: `make demo`, `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# jsii (aws-cdk-lib's Node process) supports Node 22 and 24, not 20: where the machine's
# node is older than 22, the CDK CLI, jsii and dynalite run on the Node 22 that package.json
# brings from the npm registry (node-linux-<cpu>, linked as node_modules/.bin/node); on a
# machine of Node 22 or 24, on the machine's.
MACHINE_NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
ifneq ($(shell [ "$(MACHINE_NODE_MAJOR)" -ge 22 ] 2>/dev/null && echo supported),supported)
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
endif
export CDK_DISABLE_CLI_TELEMETRY := true
export NO_MKDOCS_2_WARNING := 1
# Python keeps the bytecode of what it imports (`install` compiles nothing up front); with
# PYTHONDONTWRITEBYTECODE set, every process would compile its imports again
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install compiled install-checkov browser demo test lint typecheck unit explore docs settings-table dist synth clean

CHECKOV_VENV := .venv-checkov

# What the demo needs: the project's venv and the pinned CDK CLI (checkov is for the tests).
# --no-compile: pip compiling every module of every dependency (aws-cdk-lib's hundreds of
# services among them) took most of the install; Python compiles the modules a run imports.
install: $(VENV)/.installed node_modules/.installed compiled

install-checkov: $(CHECKOV_VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	touch $@

# The simulator's hot modules compiled with mypyc (lambda_src/ddb_capacity_tools/compiled.py)
# into .venv/share/ddb-capacity/compiled: about 40 s when their source has changed, nothing
# otherwise. Where it cannot build (no C compiler), the tools run the plain modules.
compiled: $(VENV)/.installed
	@$(PY) -m ddb_capacity_tools.compiled build || true

# checkov scans the synthesized templates (tests/project/test_checkov.py); its own venv,
# see the file
$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --no-compile -r requirements-checkov.txt
	touch $@

# Headless Chromium for the report page tests (tests/tools/test_report_page.py): the
# distribution's own package, installed only where no Chromium is on PATH (apt as root, or
# through sudo).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  echo "installing Debian's chromium for the report page tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

node_modules/.installed: package.json package-lock.json
	npm ci --no-fund --no-audit --loglevel=error
	touch $@

synth: install
	rm -rf cdk.out
	npx --no-install cdk synth --quiet

demo: synth
	$(PY) -m ddb_capacity_tools.summary cdk.out
	$(PY) -m examples.preview
	$(PY) -m examples.local_tick cdk.out
	mkdir -p simulation
	@echo; echo "A one-off spike, read from CloudWatch alone (its metrics arrive minutes late): no reactive"; \
	echo "policy gets ahead of it, throttle-aware and autopilot among them; a schedule that knew the hour does:"
	$(VENV)/bin/ddb-capacity simulate --scenario spike --policy stock:70 --policy stock:60 \
		--policy throttle-aware+stock:70 --policy autopilot+stock:70 --policy scheduled \
		--policy oracle --policy bound \
		--chart simulation/spike.png --html simulation/spike.html
	@echo; echo "The same spike, the table's stream as a signal (--stream-seconds 2, no client code):"; \
	echo "the library's policies raise before the burst bucket empties; the README compares"; \
	echo "autopilot+stock:80 with stock:70, stock:50 (the cheapest stock target refusing nothing) and on-demand:"
	$(VENV)/bin/ddb-capacity simulate --scenario spike --policy stock:70 --policy stock:60 \
		--policy stock:50 --policy autopilot+stock:70 --policy autopilot+stock:80 \
		--policy on-demand --stream-seconds 2 --html simulation/spike-stream.html

PY_SOURCES := constructs_pkg lambda_src tests examples benchmarks

# ruff, and the run-time package's import layers (pyproject.toml's [tool.importlinter])
lint: install
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)
	$(VENV)/bin/lint-imports --no-cache --no-logo

# The packages, and the tests, examples and benchmarks, as strictly (pyproject.toml's
# [tool.mypy]), with no module left out. TYPECHECK_NICE: its priority (`make test` sets the
# lowest: mypy then takes the CPU the tests leave while they wait, not the tests' own)
TYPECHECK_NICE ?=
typecheck: install
	$(TYPECHECK_NICE) $(VENV)/bin/mypy constructs_pkg lambda_src/ddb_capacity_runtime lambda_src/ddb_capacity_tools \
		tests examples benchmarks

# The tests on two workers (pytest-xdist): much of the suite waits on local servers, the
# CDK CLI and Chromium. A module runs whole on one worker (tests/conftest.py); a plain
# `.venv/bin/pytest` runs them one by one.
unit: install install-checkov browser
	$(VENV)/bin/pytest -n 2

# The property tests (hypothesis) randomized at scale: each test's examples times
# HYPOTHESIS_EXPLORE_SCALE (20 unless set), new random ones every run
# (tests/support/hypothesis_profiles.py); `make test` runs them derandomized, the same
# examples every time. EXPLORE_ARGS goes to pytest (e.g. EXPLORE_ARGS=tests/scaler/test_policy.py).
# Then the hold races, 200 trials from a new seed (tests/requests/test_hold_races.py; the gate
# runs 12). Every run goes ahead; any failing fails the target.
EXPLORE_ARGS ?= tests
explore: install
	HYPOTHESIS_PROFILE=explore $(VENV)/bin/pytest -q -m hypothesis $(EXPLORE_ARGS); first=$$?; \
	HYPOTHESIS_PROFILE=explore $(VENV)/bin/pytest -q tests/requests/test_state_machine.py; \
	second=$$?; \
	seed=$$(date +%s); echo "hold races: HOLD_RACE_SEED=$$seed: (to run them again)"; \
	HOLD_RACE_TRIALS=200 HOLD_RACE_SEED=$$seed: $(VENV)/bin/pytest -q tests/requests/test_hold_races.py; \
	third=$$?; exit $$(( first || second || third ))

# The simulator's goldens (tests/simulator/goldens/), written again from this checkout's
# simulator and core: after a deliberate change of results or decisions, say in the
# CHANGELOG what moved and why (tests/simulator/test_sim_equivalence.py compares them)
goldens: install
	$(PY) -m tests.support.sim_goldens --write

# The docs site, built as the tests build it (tests/project/test_docs.py); open site/index.html
docs: install
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The scaler's settings table in docs/guides/scaler-runtime.md, written again from the settings
# contract (ddb_capacity_runtime.core.settings.SETTINGS); tests/scaler/test_settings_contract.py fails
# while the page's table is not the one the contract makes
settings-table: install
	$(PY) -m ddb_capacity_tools.settings_table

# The wheel and the source distribution in dist/, built as tests/project/test_packaging.py builds
# the ones it installs and checks, and accepted by twine (the wheel is built from the sdist)
dist: install
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

# Installs first, then the three gates side by side (mypy is CPU-bound while much of the
# test suite waits on local servers and the CDK CLI, so it runs at the lowest priority;
# checkov's venv, which only the tests need, is built while ruff and mypy run); any gate
# failing fails the target.
test:
	$(MAKE) --no-print-directory install
	$(MAKE) --no-print-directory -j3 lint typecheck unit TYPECHECK_NICE="nice -n 19"

clean:
	rm -rf cdk.out site dist $(VENV) $(CHECKOV_VENV) node_modules .pytest_cache .mypy_cache .ruff_cache
