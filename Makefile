# bspcrawl: `make demo` runs the demo crawl, `make test` runs every test.
# Both create the virtualenv .venv and install bspcrawl (with the mpich wheel) first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# bspcrawl's modules compiled to bytecode, as a wheel's install does (an editable install
# under PYTHONDONTWRITEBYTECODE=1 would compile them again in every process: ~0.13 s of
# CPU at each rank's start); stale files are only ignored by Python, never used.
COMPILED := $(VENV)/.compiled-stamp
SOURCES := $(shell find bspcrawl -name '*.py')
# Whole MPI test runs are killed after this many seconds (MPICH's mpiexec reads it).
export MPIEXEC_TIMEOUT ?= 900

.PHONY: install demo test lint clean

install: $(COMPILED)

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

$(COMPILED): $(STAMP) $(SOURCES)
	$(PY) -m compileall -q bspcrawl
	touch $(COMPILED)

demo: $(COMPILED)
	$(VENV)/bin/bspcrawl demo

lint: $(COMPILED)
	$(VENV)/bin/ruff check bspcrawl tests scripts

test: lint
	$(PY) -m pytest -q -p no:cacheprovider tests --ignore=tests/mpi
	$(VENV)/bin/mpiexec -n 2 $(PY) -m mpi4py -m pytest -q -p no:cacheprovider --with-mpi tests/mpi
	$(VENV)/bin/mpiexec -n 4 $(PY) -m mpi4py -m pytest -q -p no:cacheprovider --with-mpi tests/mpi

clean:
	rm -rf $(VENV) demo-out *.egg-info
