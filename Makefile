# Two commands on a fresh machine: `make run` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

# The suite runs against the real services (PostgreSQL, Redis) as CI does; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/assay
TEST_REDIS_URL ?= redis://127.0.0.1:6379/14
PYTEST_ARGS ?=
# Two pytest-xdist workers: much of the suite waits on servers, Celery workers and the browser. Each has
# its own test database, Redis database (TEST_REDIS_URL's and the next: 14 and 15) and loopback ports
# (tests/support/parallel.py). `make test PYTEST_XDIST=` runs it in one process.
PYTEST_XDIST ?= -n 2 --dist worksteal

.PHONY: install chromium services node-tools run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# (setuptools' notice on every editable install, about folders named like the package: here they are it)
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e '.[server,dev]'
	# A test oracle (tests/assay/test_overlap.py) whose metadata pins numpy<2: installed without its
	# dependencies, which the line above already gave it (numpy, tqdm), so numpy stays at 2 (pyproject.toml).
	$(PY) -m pip install --quiet --no-deps 'rbo==0.1.3'
	touch $(STAMP)

# The demo's search service listens on loopback, which targets may reach only when allowed
# (docs/deployment.md, "Target addresses").
run: export ASSAY_TARGET_ALLOW_PRIVATE ?= true
# Quiet: runstack ends with the address and the logins (README, "Configuration" for what shows more).
run: install
	@DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py migrate --noinput --verbosity 0
	@DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py demo_load --no-logins
	@DJANGO_DEBUG=$${DJANGO_DEBUG:-true} $(PY) manage.py runstack --host $(HOST) --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(VENV)/bin/lint-imports

# The browser tests drive Debian's Chromium (Playwright cannot download browsers here): installed with
# apt-get when it is missing, as root or through sudo.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Chromium is missing: installing it with apt-get (the browser tests drive it)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq || true; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    || { echo "could not install Chromium: run 'apt-get install chromium' as root, then make test"; exit 1; }; \
	}

# PostgreSQL and Redis where the suite expects them: started when installed here and down.
services:
	@scripts/services-up "$(TEST_DATABASE_URL)" "$(TEST_REDIS_URL)"

# The Node tools some tests run, one folder each under tests/node/ (its package.json and package-lock.json,
# versions pinned): installed exactly as locked (`npm ci`), again only when a lock file changes.
NODE_TOOLS := $(patsubst %/package.json,%,$(wildcard tests/node/*/package.json))

node-tools: $(NODE_TOOLS:%=%/node_modules/.package-lock.json)

tests/node/%/node_modules/.package-lock.json: tests/node/%/package-lock.json tests/node/%/package.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 20 or newer (the suite runs tests/node/ tools)"; exit 1; }
	npm ci --prefix tests/node/$* --no-audit --no-fund --loglevel=error
	@touch $@

# A fresh machine needs nothing else: the services, Chromium, the Node tools, the venv are set up by their
# targets.
test: install chromium services node-tools lint
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(VENV)/bin/pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

# Every section of docs/benchmarks.md in one run; `make bench SECTIONS="harness runs"` re-runs those only.
SECTIONS ?=
bench: install
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m benchmarks $(SECTIONS)

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
