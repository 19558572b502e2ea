# Streamdesk: `make run` to see it work, `make test` to prove it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The optional LangGraph and OpenTelemetry extras are installed for the tests;
# `make install EXTRAS=dev` skips them.
EXTRAS ?= dev,langgraph,otel

.PHONY: help run test lint bench bench-console bench-actions bench-outbox bench-runtime bench-webhooks bench-tracing bench-partitions bench-idle bench-flow bench-timers bench-waits bench-fanout bench-replay clean install

help:
	@echo "make run       the console, the workers and a Valkey server: http://127.0.0.1:8000/"
	@echo "make test      the whole suite (TEST_PROCS=4 processes; PYTEST_ARGS=... to pick)"
	@echo "make install   the virtualenv in .venv (make run and make test do it too)"
	@echo "make lint      ruff and mypy"
	@echo "make bench     the engine's benchmarks into docs/benchmarks.md; bench-console,"
	@echo "               bench-actions, bench-outbox, bench-runtime, bench-webhooks,"
	@echo "               bench-tracing, bench-partitions, bench-idle, bench-flow, bench-timers,"
	@echo "               bench-waits, bench-fanout, bench-replay"
	@echo "make clean     stop the embedded Valkey server and remove the local data in .streamdesk/"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)
	@echo "Installed in $(VENV). Next: make run (the console at http://127.0.0.1:$(PORT)/), then make test."

# Development and demo mode, explicitly: DEBUG on (a SECRET_KEY is generated into .streamdesk/),
# the demo agents, example apps, demo webhook source and demo producer. Unset, both are off.
# `make run PORT=8123` picks the console's port; ACCESS_LOG=1 logs every HTTP request.
PORT ?= 8000
run: export DEBUG ?= 1
run: export STREAMDESK_DEMO ?= 1
run: $(STAMP)
	$(PY) manage.py migrate --no-input -v0
	$(PY) manage.py up --port $(PORT)

# The suite runs in TEST_PROCS processes (pytest-xdist), each with a server (or db number) and
# a test database of its own (tests/support/xdist.py); the tests marked serial count the whole
# server's commands or clients, so they run after the rest, alone. Exit code 5 is "no test
# selected" (PYTEST_ARGS picked tests of one kind only).
TEST_PROCS ?= 4
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_PROCS) --dist worksteal -m "not serial" $(PYTEST_ARGS) || test $$? -eq 5
	$(PY) -m pytest -m serial $(PYTEST_ARGS) || test $$? -eq 5

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

bench-timers: $(STAMP)
	$(PY) -m bench.timers

bench-flow: $(STAMP)
	$(PY) -m bench.flow

bench-waits: $(STAMP)
	$(PY) -m bench.waits

bench-fanout: $(STAMP)
	$(PY) -m bench.fanout

bench-replay: $(STAMP)
	$(PY) -m bench.replay

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
