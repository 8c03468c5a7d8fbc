# Two commands on a fresh machine: `make run` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

# The suite runs against the real services (PostgreSQL, Redis) as CI does; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/assay
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?=

.PHONY: install run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The demo's search service listens on loopback, which targets may reach only when allowed
# (docs/deployment.md, "Target addresses").
run: export ASSAY_TARGET_ALLOW_PRIVATE ?= true
run: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py migrate --noinput
	DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py demo_load
	DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py runstack --host $(HOST) --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(VENV)/bin/lint-imports

test: install lint
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(VENV)/bin/pytest $(PYTEST_ARGS)

bench: install
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m benchmarks

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
