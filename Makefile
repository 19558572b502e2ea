# Streamdesk: `make run` to see it work, `make test` to prove it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The optional LangGraph and OpenTelemetry extras are installed for the tests;
# `make install EXTRAS=dev` skips them.
EXTRAS ?= dev,langgraph,otel

.PHONY: run test test-fast lint typecheck bench bench-console bench-actions bench-outbox bench-runtime bench-webhooks bench-tracing bench-partitions bench-idle clean install

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

# Development and demo mode, explicitly: DEBUG on (a SECRET_KEY is generated into .streamdesk/),
# the demo agents, example apps, demo webhook source and demo producer. Unset, both are off.
# `make run PORT=8123` picks the console's port; ACCESS_LOG=1 logs every HTTP request.
PORT ?= 8000
run: export DEBUG ?= 1
run: export STREAMDESK_DEMO ?= 1
run: $(STAMP)
	$(PY) manage.py migrate --no-input -v0
	$(PY) manage.py up --port $(PORT)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy workers console

bench: $(STAMP)
	$(PY) -m bench.engine

bench-console: $(STAMP)
	$(PY) -m bench.console

bench-actions: $(STAMP)
	$(PY) -m bench.actions

bench-outbox: $(STAMP)
	$(PY) -m bench.outbox

bench-runtime: $(STAMP)
	$(PY) -m bench.runtime

bench-webhooks: $(STAMP)
	$(PY) -m bench.webhooks

bench-tracing: $(STAMP)
	$(PY) -m bench.tracing

bench-partitions: $(STAMP)
	$(PY) -m bench.partitions

# The peers it runs beside runworker come from the bench-peers extra; arq wants redis<6, so it
# gets a venv of its own (bench/idle/subjects.py looks there): neither changes what the code
# under test imports.
ARQ_VENV := $(VENV)/bench-arq
bench-idle: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench-peers]'
	test -x $(ARQ_VENV)/bin/python || $(PYTHON) -m venv $(ARQ_VENV)
	$(ARQ_VENV)/bin/python -m pip install --quiet 'arq>=0.28,<0.29'
	$(PY) -m bench.idle

# valkey stop needs settings, so the development mode (no SECRET_KEY of its own).
clean: export DEBUG ?= 1
clean:
	-$(PY) manage.py valkey stop
	rm -rf .streamdesk
