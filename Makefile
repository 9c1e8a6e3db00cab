# The two set-up commands (see README): `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Bytecode written ahead: start-up then skips compiling (even where PYTHONDONTWRITEBYTECODE is set).
COMPILE = $(PY) -m compileall -q common remoting dledger store broker namesrv client tools dashboard

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml setup.py common/_speedups.c common/_fsync_worker.c
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

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info common/_speedups*.so common/_fsync_worker*.so
