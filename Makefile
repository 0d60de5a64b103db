# Engram — the entry points. `make run` and `make test` work on a fresh clone.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-unit lint format bench install browser clean-var lock audit

# Every package from the hashed lock (requirements/lock.txt: requirements/*.txt resolved with each file's
# sha256, `make lock`); pip refuses any file whose hash differs. pip itself is pinned in the lock too.
$(STAMP): requirements/lock.txt sdk/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements/lock.txt
	# the Python SDK (sdk/python), editable; its dependencies (httpx, langgraph) come from the lock
	$(BIN)/python -m pip install --quiet --no-deps -e ./sdk/python
	touch $(STAMP)

# after changing a pin in requirements/*.txt: resolve again, with hashes (tests/unit/core/test_lock.py checks)
lock:
	test -x $(BIN)/pip-compile || $(BIN)/python -m pip install --quiet pip-tools==7.6.2
	$(BIN)/pip-compile --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links --quiet \
		-o requirements/lock.txt requirements/local.txt

# known vulnerabilities in the locked packages (config/audit.py says when no advisory data was reachable)
audit: $(STAMP)
	$(BIN)/python -m config.audit requirements/lock.txt

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py runstack

# Chromium for the browser tests: the only apt package, installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian chromium for the browser tests…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: test-unit browser audit
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
	$(BIN)/python manage.py bench_retrieval --via-http --context stage,2000 --path ../shared/data/locomo10.json
	$(BIN)/python manage.py bench_retrieval --via-http --dataset locomo --bursts --export --conversation-ids chat --path ../shared/data/locomo10.json
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
