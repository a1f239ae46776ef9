#!/usr/bin/env bash
# The test command: installs what is missing (scripts/setup.sh), configures and builds
# everything in build/ (Ninja, ccache), then runs every test with CTest, two at a time.
# Arguments are passed to ctest, e.g. `scripts/test.sh -L pg` or `scripts/test.sh -R cli`.
# Tests that need PostgreSQL start their own private server; nothing needs to run beforehand.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS

bash "$REPO/scripts/build.sh"

echo "test: running tests"
cd "$REPO/build"
ctest --output-on-failure --parallel 2 "$@"
echo "test: done in $((SECONDS - start)) s"
