#!/usr/bin/env bash
# Builds the desktop executable: `make package` (after the Makefile has created .venv).
#   dist/triton-viewer/triton-viewer                    the program (one folder, run it in place)
#   dist/triton-viewer-<version>-linux-<arch>.tar.gz    that folder, for distribution
# Options (environment): TRITON_VIEWER_ONEFILE=1 (one file dist/triton-viewer-onefile instead),
# TRITON_VIEWER_EMBED_SERVER=0 (no tritonserver inside), TRITON_VIEWER_NO_ARCHIVE=1 (skip the .tar.gz),
# DIST=folder (default dist), PYTHON=interpreter (default .venv/bin/python),
# GLIBC_FLOOR=x.y (default 2.35: the build fails when any file in the package needs a newer glibc).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-.venv/bin/python}
DIST=${DIST:-dist}
WORK=${WORK:-build/pyinstaller}
NAME=triton-viewer
# The oldest glibc the package must run on: what the bundled tritonserver's own libraries need
# (Ubuntu 22.04, Debian 12, Fedora 36 and newer).
GLIBC_FLOOR=${GLIBC_FLOOR:-2.35}
start=$(date +%s)

# The `package` extra of pyproject.toml (pyinstaller>=6.10,<7). Skipped when already there:
# reinstalling the editable app under other running processes (tests) would break their imports.
if "$PYTHON" -c 'import sys, PyInstaller as p; v = tuple(int(x) for x in p.__version__.split(".")[:2]); sys.exit(not (6, 10) <= v < (7,))' 2>/dev/null; then
  echo "package: PyInstaller $("$PYTHON" -m PyInstaller --version) already installed" >&2
else
  echo "package: installing .[package] into $(dirname "$(dirname "$PYTHON")")" >&2
  "$PYTHON" -m pip install --quiet -e '.[package]'
fi

echo "package: PyInstaller -> $DIST/" >&2
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$DIST" --workpath "$WORK" packaging/triton-viewer.spec

version=$("$PYTHON" -c 'import app; print(app.__version__)')
arch=$(uname -m)
if [ "${TRITON_VIEWER_ONEFILE:-0}" = "1" ]; then
  built="$DIST/$NAME-onefile"
else
  built="$DIST/$NAME"
  # Every ELF file's highest GLIBC symbol version: fail above the floor (before archiving).
  "$PYTHON" packaging/check_bundle.py "$built" --glibc-floor "$GLIBC_FLOOR"
  if [ "${TRITON_VIEWER_NO_ARCHIVE:-0}" != "1" ]; then
    archive="$DIST/$NAME-$version-linux-$arch.tar.gz"
    echo "package: archiving -> $archive" >&2
    tar -C "$DIST" -czf "$archive" "$NAME"
  fi
fi

end=$(date +%s)
echo "package: built $built ($(du -sh "$built" | cut -f1))"
[ -n "${archive:-}" ] && echo "package: archive $archive ($(du -sh "$archive" | cut -f1))"
echo "package: build time $((end - start)) s"
