#!/usr/bin/env bash
# Builds the desktop executable: `make package` (after the Makefile has created .venv).
#   dist/triton-viewer/triton-viewer                    the program (one folder, run it in place)
#   dist/triton-viewer-<version>-linux-<arch>.tar.gz    that folder, for distribution
# Options (environment): TRITON_VIEWER_ONEFILE=1 (one file dist/triton-viewer-onefile instead),
# TRITON_VIEWER_EMBED_SERVER=0 (no tritonserver inside), TRITON_VIEWER_NO_ARCHIVE=1 (skip the .tar.gz),
# DIST=folder (default dist), PYTHON=interpreter (default .venv/bin/python),
# GLIBC_FLOOR=x.y (default 2.35: the build fails when any file in the package needs a newer glibc),
# PACKAGE_CACHE=folder (default $TRITON_VIEWER_CACHE/package, ~/.cache/triton-viewer/package; 0: always build).
#
# The build cache: a build is a few CPU-minutes (PyInstaller's analysis, then gzip over 650 MB),
# and the test suite builds the package on every clean clone. A build's archive is kept per
# machine under the key of everything it is made of (packaging/build_key.py: the sources, the
# environment's installed distributions, the Python, the options); the same key again unpacks
# that archive instead of building (its bundle checked again, as a build checks it). Any change
# to a source file or a dependency is a new key, so a new build. The newest two are kept.
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

version=$("$PYTHON" -c 'import app; print(app.__version__)')
arch=$(uname -m)
CACHE_ROOT=${PACKAGE_CACHE:-${TRITON_VIEWER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/triton-viewer}/package}
cached=""
if [ "$CACHE_ROOT" != "0" ] && [ "${TRITON_VIEWER_ONEFILE:-0}" != "1" ] && [ "${TRITON_VIEWER_NO_ARCHIVE:-0}" != "1" ]; then
  key=$("$PYTHON" packaging/build_key.py)
  cached="$CACHE_ROOT/$key"
fi
archive="$DIST/$NAME-$version-linux-$arch.tar.gz"
if [ -n "$cached" ] && [ -f "$cached/archive.tar.gz" ]; then
  echo "package: the build $key is in the cache ($cached): unpacked instead of built" >&2
  mkdir -p "$DIST"
  rm -rf "${DIST:?}/$NAME"
  tar -C "$DIST" -xzf "$cached/archive.tar.gz"
  cp "$cached/archive.tar.gz" "$archive.part" && mv "$archive.part" "$archive"
  "$PYTHON" packaging/check_bundle.py "$DIST/$NAME" --glibc-floor "$GLIBC_FLOOR"
  end=$(date +%s)
  echo "package: reused $DIST/$NAME ($(du -sh "$DIST/$NAME" | cut -f1)), the cached build $key"
  echo "package: archive $archive ($(du -sh "$archive" | cut -f1))"
  echo "package: build time $((end - start)) s (from the cache)"
  exit 0
fi

echo "package: PyInstaller -> $DIST/" >&2
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$DIST" --workpath "$WORK" packaging/triton-viewer.spec

if [ "${TRITON_VIEWER_ONEFILE:-0}" = "1" ]; then
  built="$DIST/$NAME-onefile"
else
  built="$DIST/$NAME"
  # Every ELF file's highest GLIBC symbol version: fail above the floor (before archiving).
  "$PYTHON" packaging/check_bundle.py "$built" --glibc-floor "$GLIBC_FLOOR"
  if [ "${TRITON_VIEWER_NO_ARCHIVE:-0}" != "1" ]; then
    echo "package: archiving -> $archive" >&2
    # pigz: the same gzip, on every core (gzip alone is a minute of one core here).
    if command -v pigz >/dev/null 2>&1; then
      tar -C "$DIST" -cf - "$NAME" | pigz -6 > "$archive"
    else
      tar -C "$DIST" -czf "$archive" "$NAME"
    fi
    if [ -n "$cached" ]; then  # kept for the next build of the same key; the newest two stay
      mkdir -p "$CACHE_ROOT"
      staging=$(mktemp -d "$CACHE_ROOT/.new-XXXXXX")
      cp "$archive" "$staging/archive.tar.gz"
      rm -rf "$cached" && mv "$staging" "$cached"
      ls -1dt "$CACHE_ROOT"/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
    fi
  fi
fi

end=$(date +%s)
echo "package: built $built ($(du -sh "$built" | cut -f1))"
[ -f "$archive" ] && [ "${TRITON_VIEWER_NO_ARCHIVE:-0}" != "1" ] && echo "package: archive $archive ($(du -sh "$archive" | cut -f1))"
echo "package: build time $((end - start)) s"
