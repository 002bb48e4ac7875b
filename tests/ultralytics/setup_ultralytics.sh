#!/usr/bin/env bash
# Builds (once per machine) the Ultralytics reference venv and prints its python:
#   bash tests/ultralytics/setup_ultralytics.sh          (`make ultralytics`)
# The venv lives outside the clone, keyed by the hash of requirements.txt:
#   ${TRITON_VIEWER_CACHE:-~/.cache/triton-viewer}/venvs/ultralytics-<sha256[:16]>
# so every clone and worktree on the machine shares one (it is ~6 GB) and a change of the
# pinned versions builds a new one. The tests find it the same way (tests/ultralytics/venv.py),
# or at $ULTRALYTICS_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
REQ=tests/ultralytics/requirements.txt
SHA=$(sha256sum "$REQ" | cut -c1-16)
CACHE=${TRITON_VIEWER_CACHE:-$HOME/.cache/triton-viewer}
VENV="$CACHE/venvs/ultralytics-$SHA"
if [ ! -f "$VENV/.installed" ]; then
    mkdir -p "$CACHE/venvs"
    test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # torch first, alone: the release on disk, before anything can ask for another one.
    "$VENV/bin/python" -m pip install --quiet "$(grep '^torch==' "$REQ")" "$(grep '^torchvision==' "$REQ")"
    "$VENV/bin/python" -m pip install --quiet -r "$REQ"
    # Ultralytics writes a settings file where it runs: the cache's, never the user's config.
    YOLO_CONFIG_DIR="$CACHE/ultralytics-config" "$VENV/bin/python" -c "import ultralytics, torch; print('ultralytics venv:', ultralytics.__version__, 'torch', torch.__version__)" >&2
    touch "$VENV/.installed"
fi
echo "$VENV/bin/python"
