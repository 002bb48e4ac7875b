#!/usr/bin/env bash
# Creates (or updates) the MLServer venv the protocol tests start MLServer from:
#   bash tests/mlserver/setup_mlserver.sh [VENV]     (default: .venv-mlserver; `make mlserver`)
# The tests find it at $MLSERVER_PYTHON, else at .venv-mlserver/bin/python.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
VENV=${1:-.venv-mlserver}
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r tests/mlserver/requirements.txt
"$VENV/bin/python" -c "import mlserver; print('MLServer venv: mlserver', mlserver.__version__)"
