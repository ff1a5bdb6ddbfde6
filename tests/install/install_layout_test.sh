#!/usr/bin/env bash
# `cmake --install` as a user runs it: into a fresh prefix, then the installed tools used from
# outside the checkout. Checks that the installed kvpatch reads the installed rules (not the source
# tree it was built from), also after the prefix is moved; that it reports as the build tree's
# binary does and works as a git pre-commit hook; and, with the kernels built, that the C ABI
# library, its header and its Python module are installed, the library's dependencies resolve, and
# C and C++ programs outside the project build against it through find_package(kvpatch) (and the C
# one through pkg-config).
# Usage: install_layout_test.sh BUILD_DIR SOURCE_DIR WITH_CUDA(ON|OFF) [BINDIR DATADIR LIBDIR INCLUDEDIR]
# (the last four as GNUInstallDirs configured them; bin share lib include by default)
set -euo pipefail
build=$1 source=$2 with_cuda=$3
bindir=${4:-bin} datadir=${5:-share} libdir=${6:-lib} includedir=${7:-include}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset KVPATCH_RULES_DIR

cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log" 2>&1 \
  || { cat "$scratch/install.log" >&2; fail "cmake --install exited $?"; }

expect_file() { [[ -f "$scratch/prefix/$1" ]] || fail "not installed: $1"; }
expect_file "$bindir/kvpatch"
for rule in "$source"/rules/*.yaml; do expect_file "$datadir/kvpatch/rules/$(basename "$rule")"; done
if [[ $with_cuda == ON ]]; then
  expect_file "$bindir/kvverify"
  expect_file "$libdir/kvpatch/libkvpatch_mla_capi.so"
  expect_file "$libdir/kvpatch/kvpatch_mla.py"
  expect_file "$libdir/kvpatch/kvpatch_mla_flashinfer.py"
  expect_file "$includedir/kvpatch/mla_capi.h"
  expect_file "$includedir/kvpatch/mla_decode_launch.h"
  expect_file "$libdir/cmake/kvpatch/kvpatchConfig.cmake"
  expect_file "$libdir/pkgconfig/kvpatch-mla.pc"
fi

# Moved after installing: the rules are found relative to the binary, not at the install prefix.
mv "$scratch/prefix" "$scratch/moved"
prefix=$scratch/moved
cp -r "$source/fixtures/gen-b-unpatched" "$scratch/example"
cd "$scratch"

# The installed binary reports exactly what the build tree's does (both exit 1: sites missing).
set +e
"$build/patcher/kvpatch" check --root "$scratch" example >"$scratch/built.txt" 2>&1
built_rc=$?
"$prefix/$bindir/kvpatch" check --root "$scratch" example >"$scratch/installed.txt" 2>&1
installed_rc=$?
set -e
[[ $built_rc == 1 && $installed_rc == 1 ]] || fail "check exit codes: build tree $built_rc, installed $installed_rc (want 1, 1)"
diff -u "$scratch/built.txt" "$scratch/installed.txt" || fail "installed kvpatch reports differently"
grep -q "missing" "$scratch/installed.txt" || fail "installed kvpatch found no missing site"

# The installed binary as a git hook: install-hook names it (not the build tree's), and a commit
# of the unpatched example is refused, then allowed once kvpatch's own fix is staged. git runs with
# HOME and the GIT_* variables isolated from the user's setup.
if command -v git >/dev/null; then
  export HOME=$scratch/home XDG_CONFIG_HOME=$scratch/home/.config GIT_CONFIG_NOSYSTEM=1
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
  mkdir -p "$HOME" && git init -q "$scratch/repo"
  cp "$scratch/example/flashinfer_mla_backend.py" "$scratch/repo/"
  (
    cd "$scratch/repo"
    git config user.email test@example.invalid && git config user.name test
    "$prefix/$bindir/kvpatch" install-hook >/dev/null
    grep -qF "$prefix/$bindir/kvpatch" .git/hooks/pre-commit || fail "the hook does not name the installed binary"
    git add flashinfer_mla_backend.py
    if git commit -qm unpatched >/dev/null 2>&1; then fail "the installed hook let the unpatched backend in"; fi
    "$prefix/$bindir/kvpatch" apply flashinfer_mla_backend.py >/dev/null
    git add flashinfer_mla_backend.py
    git commit -qm patched >/dev/null 2>&1 || fail "the installed hook refused the patched backend"
  ) || exit 1
fi

# It reads the installed rules: a broken installed rule file is an error naming that file...
rule=$prefix/$datadir/kvpatch/rules/flashinfer-mla-plan-kv-dtype.yaml
printf 'id: [unclosed\n' >>"$rule"
set +e
"$prefix/$bindir/kvpatch" check example >/dev/null 2>"$scratch/broken.txt"
broken_rc=$?
set -e
[[ $broken_rc == 2 ]] || fail "broken installed rule: exit $broken_rc (want 2)"
grep -qF "$rule" "$scratch/broken.txt" || { cat "$scratch/broken.txt" >&2; fail "error does not name $rule"; }
# ...and $KVPATCH_RULES_DIR still overrides it.
set +e
KVPATCH_RULES_DIR=$source/rules "$prefix/$bindir/kvpatch" check example >/dev/null 2>&1
override_rc=$?
set -e
[[ $override_rc == 1 ]] || fail "KVPATCH_RULES_DIR override: exit $override_rc (want 1)"

if [[ $with_cuda == ON ]]; then
  library=$prefix/$libdir/kvpatch/libkvpatch_mla_capi.so
  # ldd's output is captured before grep reads it: with pipefail, `ldd | grep -q` fails whenever grep
  # stops reading first and ldd then dies of SIGPIPE (it did, once in CI).
  deps=$(ldd "$library")
  if grep -q "not found" <<<"$deps"; then
    echo "$deps" >&2
    fail "installed library has unresolved dependencies"
  fi
  found=$(python3 "$source/tests/install/installed_modules_check.py" "$prefix/$libdir/kvpatch")
  [[ $found == "$library" ]] || fail "kvpatch_mla.find_library() gave '$found', want $library"

  # A C program outside the project finds the installed library as a CMake package and through
  # pkg-config, from the moved prefix, and its host-side checks pass against it.
  cmake -S "$source/tests/install/consumer" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
        -DKVPATCH_SOURCE_DIR="$source" >"$scratch/consumer.log" 2>&1 \
    && cmake --build "$scratch/consumer" >>"$scratch/consumer.log" 2>&1 \
    || { cat "$scratch/consumer.log" >&2; fail "find_package(kvpatch) consumer did not build"; }
  "$scratch/consumer/consumer" >/dev/null || fail "the find_package(kvpatch) consumer's checks failed"
  grep -qF "$library" <<<"$(ldd "$scratch/consumer/consumer")" || fail "the consumer does not load $library"
  "$scratch/consumer/cpp_consumer" >/dev/null || fail "the C++ launch API consumer's checks failed"
  grep -qF "$library" <<<"$(ldd "$scratch/consumer/cpp_consumer")" || fail "the C++ consumer does not load $library"
  if command -v pkg-config >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --cflags --libs kvpatch-mla) \
      || fail "pkg-config does not know kvpatch-mla"
    # shellcheck disable=SC2086  # the flags are words
    cc -std=c11 -o "$scratch/pc-consumer" "$source/tests/kernels/capi_header_test.c" $flags \
      || fail "pkg-config's flags do not build the C program"
    "$scratch/pc-consumer" >/dev/null || fail "the pkg-config consumer's checks failed"
  fi
fi
echo "install layout: ok (prefix moved after install; kernels: $with_cuda)"
