# Environment for kforge's scripts; source it (`source scripts/env.sh`), it prints nothing.
# Puts the CUDA toolkit and the repository's Python venv on PATH and keeps the compiler cache
# inside the repository (.cache/ is git-ignored) unless CCACHE_DIR is already set.
# Safe under `set -euo pipefail`.

KFORGE_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KFORGE_REPO

case ":${PATH}:" in
  *":${KFORGE_REPO}/.venv/bin:"*) ;;
  *) PATH="${KFORGE_REPO}/.venv/bin:${PATH}" ;;
esac
case ":${PATH}:" in
  *":/usr/local/cuda/bin:"*) ;;
  *) PATH="${PATH}:/usr/local/cuda/bin" ;;
esac
export PATH

export CCACHE_DIR="${CCACHE_DIR:-${KFORGE_REPO}/.cache/ccache}"
# Paths under the repository are hashed relative to it, so clones share cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-${KFORGE_REPO}}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
