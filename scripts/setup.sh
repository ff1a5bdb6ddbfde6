#!/usr/bin/env bash
# One-shot, idempotent set-up: Debian packages, the tree-sitter-python grammar from PyPI, configure and build.
# Usage: bash scripts/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}

bash "$root/scripts/install-debian-deps.sh"
bash "$root/scripts/fetch-grammar.sh"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KVPATCH_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
