PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Everything `make test` and `make bench` need: the package with every extra and the tools.
STAMP := $(VENV)/.installed
comma := ,
# The demo installs only what it runs: the desk on SQLite, and a model's SDK when its key is set.
DEMO_EXTRAS := desk,sqlite$(if $(ANTHROPIC_API_KEY),$(comma)anthropic)$(if $(OPENAI_API_KEY),$(comma)openai)
DEMO_STAMP := $(VENV)/.installed-$(subst $(comma),-,$(DEMO_EXTRAS))
# `make demo PORT=8766 DATA_DIR=/tmp/demo`
DEMO_ARGS := $(if $(PORT),--port $(PORT)) $(if $(DATA_DIR),--data-dir $(DATA_DIR))

.PHONY: install services test checks checks-beside lint typecheck unit coverage docs docs-serve dist demo bench clean

$(BIN)/python:
	@echo "Creating a virtual environment in $(VENV)/"
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing roomkit and the development tools (pytest, ruff, mypy, playwright, ...) into $(VENV)/"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# When the development install is current, it already holds all the demo needs.
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@if [ $(STAMP) -nt pyproject.toml ]; then :; else \
		echo "Installing roomkit for the demo ($(DEMO_EXTRAS)) into $(VENV)/: once, about a minute at most"; \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(DEMO_EXTRAS)]' \
			|| exit 1; \
	fi
	@touch $(DEMO_STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check src tests examples bench
	$(BIN)/ruff format --check src tests examples bench

typecheck: install
	$(BIN)/mypy

# redis-server and chromium, for the Redis store's and the answer desk page's tests.
services:
	bash scripts/services.sh install

# Two workers (pytest-xdist), each with its own Redis and PostgreSQL servers. The suite
# starts many Python processes: with PYTHONDONTWRITEBYTECODE set in the environment, each
# would compile roomkit (and each worker the tests) afresh, so it is unset here.
PYTEST_WORKERS ?= 2
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $(PYTEST_WORKERS)
unit: install services
	$(PYTEST)

# The suite under coverage (at least 90 % of src/roomkit): about a third longer than `unit`.
coverage: install services
	$(PYTEST) --cov --cov-report=term

# ruff, mypy and the docs build side by side (each takes one core), then the suite.
checks: install
	@$(MAKE) --no-print-directory --jobs=3 --output-sync=target lint typecheck docs

# The static checks run beside the suite, at a lower priority: they take the time its tests
# spend waiting on servers, processes and the browser, rather than time of their own.
test: install
	@$(MAKE) --no-print-directory --jobs=2 --output-sync=line checks-beside unit

# MAKEFLAGS emptied: the checks keep their own three jobs, outside this make's two.
checks-beside: install
	@MAKEFLAGS= nice -n 10 $(MAKE) --no-print-directory checks

# The site, into site/: a broken link, reference or page fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# A wheel in dist/: pip install 'dist/roomkit_hitl-<version>-py3-none-any.whl[postgres]'
dist: | $(BIN)/python
	rm -rf dist
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

demo: $(DEMO_STAMP)
	@echo "Starting the demo: the answer desk and a trip-planning agent"
	$(BIN)/python -m roomkit.desk.demo $(DEMO_ARGS)

# Every benchmark writes bench/results/<bench>.json; the report renders them into
# docs/explanation/performance.md and the README's summary. `make bench BENCH_ARGS=--quick`
# for a smoke run.
BENCHES := human_input turns bodies desk mcp stores postgres quorum trail idle handoff notify frameworks temporal
bench: install services
	@for name in $(BENCHES); do \
		echo "== bench/bench_$$name.py $(BENCH_ARGS)"; \
		$(BIN)/python bench/bench_$$name.py $(BENCH_ARGS) || exit 1; \
	done
	$(BIN)/python bench/bench_notify.py --bad-receivers $(BENCH_ARGS)
	$(BIN)/python bench/bench_notify_scale.py $(or $(BENCH_ARGS),--size 10000)
	$(BIN)/python bench/report.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage site dist
