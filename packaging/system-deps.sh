#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the viewer and its tests need, when missing.
# Qt's offscreen and xcb platforms need the X/GL libraries; xvfb gives the tests
# and screenshots a virtual display, openbox the window frames a desktop has.
set -euo pipefail

packages=(
  xvfb xauth                       # virtual display: real-window checks, screenshots
  openbox x11-utils                # a window manager (title bars, borders) on it; xprop sees it start
  libgl1 libegl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0
  libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-xfixes0
  fonts-dejavu-core                # readable labels in screenshots
  binutils                         # objdump (the package's glibc-floor check), strip (packaging_strip.py)
  desktop-file-utils               # desktop-file-validate: the tests check the menu entry the app writes
  openssl                          # tests: the certificate of a TLS test server
  pigz                             # the package archive gzipped on every core (packaging/build.sh)
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "system-deps: not a Debian-like system; install the equivalents of: ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "system-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "system-deps: need root to install: ${missing[*]} (run: apt-get install ${missing[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
