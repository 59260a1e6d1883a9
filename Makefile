# The two commands of the README: `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-runtime lock run dev test lint migrate bootstrap worker webhooks beat bench

# Development: the runtime set plus the test and lint tools, every file checked
# against the hashes in requirements-dev.txt.
$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

# A deployment: only what the service runs (requirements.txt), hash-checked.
install-runtime:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements.txt

# Recompile both locks from requirements.in and requirements-dev.in (after adding a
# dependency there), through the package index pip is configured with. Pins already
# in the locks are kept unless an .in file asks otherwise.
PIP_COMPILE := $(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links
lock: install
	$(PIP_COMPILE) --output-file=requirements.txt requirements.in
	$(PIP_COMPILE) --output-file=requirements-dev.txt requirements-dev.in

migrate: install
	$(PY) manage.py migrate --noinput

bootstrap: migrate
	@mkdir -p var
	$(PY) manage.py bootstrap_sandbox --json > var/sandbox.json
	@echo "Sandbox users and ids (also in var/sandbox.json):"
	@$(PY) -m json.tool var/sandbox.json

run: bootstrap
	@echo
	@echo "Open next:"
	@echo "  http://$(HOST):$(PORT)/v1/docs    the API reference (Swagger UI; try it out with a token)"
	@echo "  http://$(HOST):$(PORT)/admin/     the back office: sign in as the sandbox operator"
	@echo "                                    (operator.email and operator.password above)"
	@echo "  README.md, Walk-through           from sign-in to a settled payment, with curl"
	@echo
	$(PY) manage.py runserver $(HOST):$(PORT)

# A development run against PostgreSQL and Redis in one command (scripts/dev.py):
# migrates, bootstraps the sandbox, then runs web, a Celery worker, a webhooks
# worker and beat with their output prefixed; Ctrl-C stops them all. DATABASE_URL and REDIS_URL default
# to a local `bankapi` database and Redis database 0.
dev: install
	$(PY) scripts/dev.py --host $(HOST) --port $(PORT)

# The suite chooses a development run (tests/settings.py sets BANKAPI_ENV=development):
# with DATABASE_URL set it would otherwise be a deployment and need real secrets.
test: install
	@echo "make test: BANKAPI_ENV=development, chosen by the test suite (generated secrets, whatever DATABASE_URL says)"
	$(PY) -m pytest

# mypy loads the Django settings: a development run, whatever DATABASE_URL says.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	BANKAPI_ENV=development $(VENV)/bin/mypy

worker: install
	$(VENV)/bin/celery -A config worker --loglevel=INFO

# Webhook deliveries have a queue of their own, read by this worker only.
webhooks: install
	$(VENV)/bin/celery -A config worker -Q $${CELERY_WEBHOOKS_QUEUE:-webhooks} --loglevel=INFO -n webhooks@%h

# Beat's schedule file goes to the var folder, not the project's.
beat: install
	$(VENV)/bin/celery -A config beat --loglevel=INFO --schedule=$${BANKAPI_VAR_DIR:-var}/celerybeat-schedule

# The payments bench (bench/README.md): needs wrk, pgbench and a PostgreSQL
# database it may wipe, in BENCH_DATABASE_URL (or DATABASE_URL).
# `make bench BASELINE=<commit>` runs it on that commit too and prints both.
bench: install
	bench/payments $(if $(BASELINE),--baseline $(BASELINE)) $(BENCH_ARGS)
