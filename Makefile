# Engram — the entry points. `make run` and `make test` work on a fresh clone.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-unit lint format bench install browser clean-var

$(STAMP): requirements/base.txt requirements/local.txt requirements/production.txt sdk/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements/local.txt
	# the Python SDK (sdk/python), editable, with its LangGraph store: the agents' tests import it
	$(BIN)/python -m pip install --quiet -e './sdk/python[langgraph]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py runstack

# Chromium for the browser tests: the only apt package, installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian chromium for the browser tests…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: test-unit browser
	$(BIN)/python -m pytest

# pure modules only: no database, no Redis, no Django settings (tests/unit/conftest.py)
test-unit: $(STAMP)
	env -u DJANGO_SETTINGS_MODULE $(BIN)/python -m pytest -q -p no:django -p no:cacheprovider \
		-W ignore::pytest.PytestConfigWarning --confcutdir=tests/unit tests/unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	cd sdk/python && ../../$(BIN)/mypy --strict src   # its own config (sdk/python/pyproject.toml)
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Benchmarks print figures (docs/benchmarks.md records them); they use the dev database under var/.
bench: $(STAMP)
	$(BIN)/python manage.py migrate --verbosity 0
	$(BIN)/python manage.py bench_retrieval --via-http --path ../shared/data/locomo10.json
	$(BIN)/python manage.py bench_load --writers 1 --readers 1 --seconds 60
	$(BIN)/python manage.py bench_extraction
	$(BIN)/python manage.py bench_mood
	$(BIN)/python manage.py bench_ingest
	$(BIN)/python manage.py bench_latency
	$(BIN)/python manage.py bench_retrieval --dataset locomo --path ../shared/data/locomo10.json
	$(BIN)/python manage.py simulate_year

clean-var:
	$(BIN)/python -m config.embedded stop || true
	rm -rf var
