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

# The reference venvs, each of its own and cached per machine outside the clone (keyed by their
# pinned requirements; tests/venv_cache.sh): MediaPipe, the reference the pipeline tests compare
# face_mesh and person_pose with (tests/integration/test_pipelines_vs_mediapipe.py); MLServer,
# the KServe v2 server that is not Triton, which the protocol tests start on loopback
# (tests/integration/test_mlserver.py); Ultralytics (with torch, ~6 GB), the reference for its
# exports' decoding (tests/integration/test_ultralytics_reference.py). The first run on a
# machine builds them (about 4 minutes together; Ultralytics 1 min 42 s).
REFERENCE_PYTHON = $$(bash tests/venv_cache.sh mediapipe tests/reference/setup_mediapipe.sh tests/reference/requirements.txt)
MLSERVER_PYTHON_OF_CACHE = $$(bash tests/venv_cache.sh mlserver tests/mlserver/setup_mlserver.sh tests/mlserver/requirements.txt)
ULTRALYTICS_PYTHON_OF_CACHE = $$(bash tests/venv_cache.sh ultralytics tests/ultralytics/setup_ultralytics.sh tests/ultralytics/requirements.txt)

reference:
	@bash tests/venv_cache.sh mediapipe tests/reference/setup_mediapipe.sh tests/reference/requirements.txt

mlserver:
	@bash tests/venv_cache.sh mlserver tests/mlserver/setup_mlserver.sh tests/mlserver/requirements.txt

ultralytics:
	@bash tests/venv_cache.sh ultralytics tests/ultralytics/setup_ultralytics.sh tests/ultralytics/requirements.txt

# pytest-xdist: the tests wait on servers and subprocesses more than they compute, so three
# workers on 2 cores; a file's tests stay on one worker (--dist loadfile: module fixtures,
# servers of a file, start once), the longest files first (START_FIRST in tests/conftest.py).
WORKERS ?= 3
PYTEST_PARALLEL = -n $(WORKERS) --dist loadfile

# The full suite, what CI runs.
test: lint reference mlserver ultralytics docs
	MEDIAPIPE_PYTHON=$${MEDIAPIPE_PYTHON:-$(REFERENCE_PYTHON)} \
	MLSERVER_PYTHON=$${MLSERVER_PYTHON:-$(MLSERVER_PYTHON_OF_CACHE)} \
	ULTRALYTICS_PYTHON=$${ULTRALYTICS_PYTHON:-$(ULTRALYTICS_PYTHON_OF_CACHE)} \
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(ARGS)

# The day-to-day loop: lint, the unit tests and the quick integration tests (those not marked
# slow); no UI tests, no package build. The reference venvs as for `make test` (cached).
check: lint reference mlserver ultralytics
	MEDIAPIPE_PYTHON=$${MEDIAPIPE_PYTHON:-$(REFERENCE_PYTHON)} \
	MLSERVER_PYTHON=$${MLSERVER_PYTHON:-$(MLSERVER_PYTHON_OF_CACHE)} \
	ULTRALYTICS_PYTHON=$${ULTRALYTICS_PYTHON:-$(ULTRALYTICS_PYTHON_OF_CACHE)} \
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not slow" tests/unit tests/integration $(ARGS)

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
