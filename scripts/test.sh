#!/usr/bin/env bash
# Set-up, build and the whole test suite through CTest, then the patcher's suite again built with
# AddressSanitizer and UndefinedBehaviorSanitizer. Usage: bash scripts/test.sh
# KVPATCH_SKIP_SANITIZE=1 leaves out the second pass (it adds a build of ~6 minutes on 2 cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh" "$root/build"
bash "$root/scripts/fetch-ruff.sh"  # for the lint.python test
bash "$root/scripts/install-debian-deps.sh" shellcheck clang-tidy  # for lint.shell and lint.cpp
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")

if [[ "${KVPATCH_SKIP_SANITIZE:-0}" == 1 ]]; then
  echo "kvpatch tests: sanitizer pass skipped (KVPATCH_SKIP_SANITIZE=1)"
  exit 0
fi
# Host code only (CUDA is never instrumented, so it stays off here); the lint tests already ran above.
# A sanitizer report exits 86, so that a test expecting kvpatch's exit 1 (findings) cannot mistake one
# for it; leaks count.
KVPATCH_CMAKE_ARGS="-DKVPATCH_CUDA=OFF -DKVPATCH_SANITIZE=address,undefined" \
  bash "$root/scripts/setup.sh" "$root/build-sanitize"
cd "$root/build-sanitize"
ASAN_OPTIONS=exitcode=86:detect_leaks=1:check_initialization_order=1 \
  UBSAN_OPTIONS=exitcode=86:print_stacktrace=1 \
  ctest --output-on-failure -j "$(nproc)" -E '^lint\.'
