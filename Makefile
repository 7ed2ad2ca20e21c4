PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install services test lint typecheck unit demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check src tests examples bench
	$(BIN)/ruff format --check src tests examples bench

typecheck: install
	$(BIN)/mypy

# redis-server and chromium, for the Redis store's and the answer desk page's tests.
services:
	bash scripts/services.sh install

unit: install services
	$(BIN)/pytest --cov --cov-report=term

test: lint typecheck unit

demo: install
	$(BIN)/python -m roomkit.desk.demo

bench: install services
	$(BIN)/python bench/bench_human_input.py
	$(BIN)/python bench/bench_turns.py
	$(BIN)/python bench/bench_stores.py
	$(BIN)/python bench/bench_desk.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
