#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds everything in
# build/ (Ninja, ccache). Used by the test command and the demo.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
# shellcheck source=scripts/env.sh
source "$REPO/scripts/env.sh"

echo "build: configuring build/"
cmake -S "$REPO" -B "$REPO/build" -G Ninja \
  -DKFORGE_BUILD_ENGINE=ON -DKFORGE_GPU_SIDE_ONLY=OFF \
  -DPython3_EXECUTABLE="$REPO/.venv/bin/python" --log-level=WARNING >/dev/null
echo "build: building"
ninja -C "$REPO/build" --quiet
