#!/usr/bin/env bash
# Creates (or updates) the MediaPipe reference venv the pipeline tests run MediaPipe in:
#   bash tests/reference/setup_mediapipe.sh [VENV]     (default: .venv-mediapipe; `make reference`)
# The tests find it at $MEDIAPIPE_PYTHON, else at .venv-mediapipe/bin/python.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
VENV=${1:-.venv-mediapipe}
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r tests/reference/requirements.txt
# Photos of whole bodies for the pose comparison: the `ultralytics` wheel's two sample photos
# (assets/bus.jpg: people standing in a street; zidane.jpg). Only its files are used, none of
# its code: no dependencies installed (it would pull torch).
"$VENV/bin/python" -m pip install --quiet --no-deps "ultralytics==8.3.40"
"$VENV/bin/python" -c "import mediapipe; print('reference venv: mediapipe', mediapipe.__version__)"
