#!/usr/bin/env bash
# A reference venv cached per machine, outside the clone, shared by every clone:
#   bash tests/venv_cache.sh NAME SETUP_SCRIPT FILE...      (prints the venv's python)
# It lives in ~/.cache/triton-viewer/venvs/NAME-HASH (TRITON_VIEWER_CACHE moves the root), HASH
# of the setup script and FILE... (its pinned requirements): a change of either builds a new
# one; the first build on a machine costs minutes (MediaPipe ~3 min, MLServer ~4 min here),
# later runs nothing. A lock, so parallel runs build it once; `.complete` only after a build
# that succeeded, so an interrupted one is built again.
set -euo pipefail
name=$1
setup=$2
shift 2
hash=$(cat "$setup" "$@" | sha256sum | cut -c1-16)
root=${TRITON_VIEWER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/triton-viewer}/venvs
venv=$root/$name-$hash
mkdir -p "$root"
exec 9>"$venv.lock"
flock 9
if [ ! -e "$venv/.complete" ]; then
  rm -rf "$venv"
  echo "venv cache: building $name in $venv (once per machine)" >&2
  PYTHON=${PYTHON:-python3} bash "$setup" "$venv" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
