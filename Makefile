# The two commands of the README: `make run` and `make test`. Both create or
# update .venv and install what is missing (system packages included) first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint check bench package clean

$(STAMP): pyproject.toml packaging/system-deps.sh
	bash packaging/system-deps.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m app $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check app tests packaging
	$(BIN)/ruff format --check app tests packaging
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m app bench $(ARGS)

# The desktop executable: dist/triton-viewer/triton-viewer and a .tar.gz of that folder.
# ONEFILE=1: one self-extracting file instead (dist/triton-viewer-onefile).
ONEFILE ?= 0
package: $(STAMP)
	TRITON_VIEWER_ONEFILE=$(ONEFILE) PYTHON=$(BIN)/python bash packaging/build.sh

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
