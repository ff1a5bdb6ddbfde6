#!/usr/bin/env bash
# Set-up, build and the whole test suite through CTest, then the host-side suites again built with
# AddressSanitizer and UndefinedBehaviorSanitizer. Usage: bash scripts/test.sh
# KVPATCH_SKIP_SANITIZE=1 leaves out the second pass (it adds a build of ~9 minutes on 2 cores);
# KVPATCH_CASE_SHARE=N makes it run one in N of the seeded suites' cases and compile-check inputs (default 4; 1 for all).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh" "$root/build"
bash "$root/scripts/fetch-ruff.sh"  # for the lint.python test
bash "$root/scripts/fetch-pre-commit.sh"  # for the patcher.hook.framework test
# For lint.shell and lint.cpp, shellcheck and clang-tidy; Debian's Python test suite for
# patcher.compile_checks.cpython, in case CMake finds Debian's python3 (other interpreters carry their own)
debian_python=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
bash "$root/scripts/install-debian-deps.sh" shellcheck clang-tidy ${debian_python:+"libpython$debian_python-testsuite"}
# Every generated case here, whatever KVPATCH_CASE_SHARE says (it sets the sanitized pass's share, below).
(cd "$root/build" && env -u KVPATCH_CASE_SHARE ctest --output-on-failure -j "$(nproc)")

if [[ "${KVPATCH_SKIP_SANITIZE:-0}" == 1 ]]; then
  echo "kvpatch tests: sanitizer pass skipped (KVPATCH_SKIP_SANITIZE=1)"
  exit 0
fi
# Host C and C++ only: the patcher, and where nvcc is found kvverify's host side and the kernels' CPU
# reference and plan code (CUDA device code is never instrumented). Left out here: the lint tests (run
# above), the GPU tests (a GPU under ASan is not what they check) and the install tests (pip_wheel builds
# its own tree; layout links an uninstrumented C program against the instrumented kernel library, which
# ASan refuses, and both ran above). A sanitizer report exits 86, so that a test expecting kvpatch's exit 1 (findings) cannot
# mistake one for it; leaks count. protect_shadow_gap=0 lets the CUDA runtime map its memory under ASan.
# KVPATCH_CASE_SHARE=4: the seeded mutation and metamorphic suites run one case in four here (every case ran
# above, for behaviour; each sanitized kvpatch run costs ~5 times as much, and these suites were 79% of this
# pass), and the compile checks one seed and one standard-library file in four (45% of this pass's test time
# before). KVPATCH_CASE_SHARE=N sets another share; 1 runs them all.
KVPATCH_CMAKE_ARGS="-DKVPATCH_SANITIZE=address,undefined" bash "$root/scripts/setup.sh" "$root/build-sanitize"
cd "$root/build-sanitize"
ASAN_OPTIONS=exitcode=86:detect_leaks=1:check_initialization_order=1:protect_shadow_gap=0 \
  LSAN_OPTIONS="suppressions=$root/tests/lsan-suppressions.txt" \
  UBSAN_OPTIONS=exitcode=86:print_stacktrace=1 \
  KVPATCH_CASE_SHARE=${KVPATCH_CASE_SHARE:-4} \
  ctest --output-on-failure -j "$(nproc)" -LE gpu -E '^(lint|install)\.'
