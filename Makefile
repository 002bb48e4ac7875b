# The two commands of the README: `make run` and `make test`. Both create or
# update .venv and install what is missing (system packages included) first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint check bench package clean reference mlserver ultralytics docs

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

# MediaPipe in a venv of its own: the reference the pipeline tests compare face_mesh and
# person_pose with (tests/integration/test_pipelines_vs_mediapipe.py).
REF_VENV  := .venv-mediapipe
REF_STAMP := $(REF_VENV)/.installed
$(REF_STAMP): tests/reference/requirements.txt tests/reference/setup_mediapipe.sh
	PYTHON=$(PYTHON) bash tests/reference/setup_mediapipe.sh $(REF_VENV)
	touch $(REF_STAMP)

reference: $(REF_STAMP)

# MLServer in a venv of its own: the KServe v2 server that is not Triton, which the protocol
# tests start on loopback (tests/integration/test_mlserver.py, tests/mlserver/).
MLS_VENV  := .venv-mlserver
MLS_STAMP := $(MLS_VENV)/.installed
$(MLS_STAMP): tests/mlserver/requirements.txt tests/mlserver/setup_mlserver.sh
	PYTHON=$(PYTHON) bash tests/mlserver/setup_mlserver.sh $(MLS_VENV)
	touch $(MLS_STAMP)

mlserver: $(MLS_STAMP)

# Ultralytics (with torch, ~6 GB) in a venv of its own, the reference for its exports'
# decoding (tests/integration/test_ultralytics_reference.py). Built once per machine OUTSIDE
# the clone, in ~/.cache/triton-viewer/venvs/ultralytics-<hash of its requirements>, and shared
# by every clone; the script does nothing when that venv is complete.
ultralytics:
	PYTHON=$(PYTHON) bash tests/ultralytics/setup_ultralytics.sh

test: lint reference mlserver ultralytics docs
	MEDIAPIPE_PYTHON=$${MEDIAPIPE_PYTHON:-$(CURDIR)/$(REF_VENV)/bin/python} \
	MLSERVER_PYTHON=$${MLSERVER_PYTHON:-$(CURDIR)/$(MLS_VENV)/bin/python} $(BIN)/python -m pytest

# The documentation site (docs/, mkdocs.yml) into site/: --strict fails on a broken link or
# anchor and on a page missing from the nav. `python -m`: this checkout's app/ comes first on
# sys.path (the command-line reference is generated from its parsers). The banner Material
# prints about its end of life is not a warning of this site.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/python -m app bench $(ARGS)

# The desktop executable: dist/triton-viewer/triton-viewer and a .tar.gz of that folder.
# ONEFILE=1: one self-extracting file instead (dist/triton-viewer-onefile).
ONEFILE ?= 0
package: $(STAMP)
	TRITON_VIEWER_ONEFILE=$(ONEFILE) PYTHON=$(BIN)/python bash packaging/build.sh

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
