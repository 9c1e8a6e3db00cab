# The two set-up commands (see README): `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Bytecode written ahead: start-up then skips compiling (even where PYTHONDONTWRITEBYTECODE is set).
COMPILE = $(PY) -m compileall -q common remoting dledger store broker namesrv client tools dashboard embedded connectors

.PHONY: run test test-pure lint bench clean

$(STAMP): pyproject.toml setup.py $(wildcard common/*.c)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(COMPILE)
	touch $(STAMP)

run: $(STAMP)
	$(COMPILE)
	$(PY) -m tools.run_local

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The layers with a compiled twin, again on the pure-Python twins (CI runs it after `make test`),
# so the pure twin can never rot.
test-pure: $(STAMP)
	ROCKETMQ_PY_PURE=1 $(PY) -m pytest -q tests/store tests/remoting tests/dledger $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info common/_speedups*.so common/_fsync_worker*.so common/_stats_counters*.so
