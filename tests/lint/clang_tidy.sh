#!/usr/bin/env bash
# lint.cpp: clang-tidy (Debian) over the C++ this build compiled from patcher/, verifier/, the kernels'
# CPU reference and tests/, with the checks in the root .clang-tidy, every warning an error. Reads BUILD_DIR/compile_commands.json, so it
# covers what that build compiled (the verifier's host side only where CUDA is on). Skipped (77) when
# clang-tidy is not installed; scripts/test.sh, and so CI, installs it first.
# Usage: clang_tidy.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:?usage: clang_tidy.sh BUILD_DIR}
runner=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
if ! command -v clang-tidy >/dev/null || [[ -z "$runner" ]]; then
  echo "clang-tidy not installed: apt-get install clang-tidy (scripts/test.sh does)" >&2
  exit 77
fi
[[ -f "$build/compile_commands.json" ]] || { echo "lint.cpp: no $build/compile_commands.json" >&2; exit 1; }
# One file per job; run-clang-tidy exits non-zero when any file has a warning (all are errors here).
# Its file argument is a regular expression over the absolute paths in compile_commands.json; clang-tidy
# finds the root .clang-tidy above each file.
exec "$runner" -p "$build" -j "$(nproc)" -quiet \
  "^$root/(patcher|verifier|kernels/reference|tests)/.*\\.cpp\$"
