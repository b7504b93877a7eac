#!/usr/bin/env bash
# scripts/setup.sh - install what is missing (Debian 12) and build PageFault.
#
#   scripts/setup.sh [BUILD_DIR] [extra cmake flags...]
#
# Installs only the Debian packages that are not there yet (apt-get, as root
# or through sudo), then configures and builds with -j2. CUDA is used when
# nvcc is found (on our machines /usr/local/cuda/bin/nvcc); without it the
# GPU API answers "unavailable" and the rest builds as usual.
set -euo pipefail
cd "$(dirname "$0")/.."

# net/ (pagefault attach): libzmq, msgpack-c, libcurl, libmicrohttpd; its end-to-end
# test publishes with python3-zmq and python3-msgpack; the formats test reads CSV with pandas.
packages=(gcc make cmake pkg-config libncurses-dev libcriterion-dev tmux locales
          libzmq3-dev libmsgpack-dev libcurl4-openssl-dev libmicrohttpd-dev python3 python3-zmq python3-msgpack python3-pandas)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

build=${1:-build}
shift || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build "$build" -j2 >&2
