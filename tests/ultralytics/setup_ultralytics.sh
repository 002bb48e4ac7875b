#!/usr/bin/env bash
# Creates the Ultralytics reference venv (Ultralytics 8.4 with torch, ~6 GB):
#   bash tests/ultralytics/setup_ultralytics.sh VENV
# `make ultralytics` runs it through tests/venv_cache.sh, which keeps the venv per machine
# outside the clone (keyed by this script and requirements.txt) and prints its python; the
# tests find it at $ULTRALYTICS_PYTHON (`make test` sets it).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
VENV=$1
REQ=tests/ultralytics/requirements.txt
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# torch first, alone: the releases on this machine's disk, before anything can ask for another.
"$VENV/bin/python" -m pip install --quiet "$(grep '^torch==' "$REQ")" "$(grep '^torchvision==' "$REQ")"
"$VENV/bin/python" -m pip install --quiet -r "$REQ"
# Ultralytics writes a settings file where it runs: a folder of the venv's, never the user's.
YOLO_CONFIG_DIR="$VENV/ultralytics-config" "$VENV/bin/python" -c \
    "import ultralytics, torch; print('Ultralytics venv: ultralytics', ultralytics.__version__, 'torch', torch.__version__)"
