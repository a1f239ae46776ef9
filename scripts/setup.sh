#!/usr/bin/env bash
# Installs what building and testing kforge needs on Debian 12, and nothing that is already
# there: the Debian packages (apt-get update only when one is missing) and the Python venv at
# $REPO/.venv with torch 2.11.0 (created only when missing or lacking that torch). The CUDA 13
# toolkit at /usr/local/cuda comes with the machine and is only checked.
#
# Safe to run again and again; prints one line per step. Exports nothing: scripts that need
# the environment source scripts/env.sh.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_VERSION="2.11.0"
PY_PACKAGES=("torch==${TORCH_VERSION}" numpy pybind11)
APT_PACKAGES=(
  cmake ninja-build g++ ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev nlohmann-json3-dev libseccomp-dev libcurl4-openssl-dev
  libpq-dev postgresql-15
  libgtest-dev libgmock-dev
  python3-dev python3-venv pybind11-dev
)

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "need root (or sudo) to run: $*"
  fi
}

install_apt_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    say "debian packages: all ${#APT_PACKAGES[@]} present"
    return
  fi
  say "debian packages: installing ${missing[*]}"
  local log
  log="$(mktemp)"
  if ! as_root apt-get update -qq >"$log" 2>&1 ||
     ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
         --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "apt-get failed"
  fi
  rm -f "$log"
  say "debian packages: installed ${#missing[@]}"
}

venv_is_ready() {
  [[ -x "$REPO/.venv/bin/python" ]] && "$REPO/.venv/bin/python" - "$TORCH_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib import metadata
torch = metadata.version("torch").split("+")[0]
metadata.version("numpy")
metadata.version("pybind11")
sys.exit(0 if torch == sys.argv[1] else 1)
EOF
}

install_venv() {
  if venv_is_ready; then
    say "python venv: $REPO/.venv has torch ${TORCH_VERSION}"
    return
  fi
  # The engine embeds Debian's libpython3.11, so the venv must use Debian's python3.
  if [[ ! -x "$REPO/.venv/bin/python" ]]; then
    say "python venv: creating $REPO/.venv"
    rm -rf "$REPO/.venv"
    /usr/bin/python3 -m venv "$REPO/.venv"
  fi
  say "python venv: installing ${PY_PACKAGES[*]} (torch is a large download)"
  "$REPO/.venv/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
  venv_is_ready || die "the venv still lacks torch ${TORCH_VERSION} after pip install"
  say "python venv: ready"
}

check_cuda() {
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    say "cuda: $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" \
        "at /usr/local/cuda"
  else
    die "the CUDA 13 toolkit is expected at /usr/local/cuda (it comes with the machine)"
  fi
}

install_apt_packages
install_venv
check_cuda
