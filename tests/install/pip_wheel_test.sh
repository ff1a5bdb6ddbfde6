#!/usr/bin/env bash
# `pip install .` as a Python user runs it: builds the kvpatch-mla wheel from the source tree
# (pyproject.toml, scikit-build-core; compiles the library), installs it into a scratch folder, and
# checks from outside the checkout that the modules import, find the library beside themselves, load
# it (the C ABI version check) and that its CUDA runtime resolves. No GPU needed.
# Usage: pip_wheel_test.sh SOURCE_DIR
# With KVPATCH_PIP_NO_BUILD_ISOLATION=1 it builds with the scikit-build-core already installed (a
# machine without network); otherwise pip fetches it from PyPI.
set -euo pipefail
source=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

isolation=()
[[ ${KVPATCH_PIP_NO_BUILD_ISOLATION:-0} == 1 ]] && isolation=(--no-build-isolation)
python3 -m pip wheel --no-deps "${isolation[@]}" -w "$scratch/wheel" "$source" >"$scratch/wheel.log" 2>&1 \
  || { tail -40 "$scratch/wheel.log" >&2; fail "pip wheel exited $?"; }
wheels=("$scratch"/wheel/kvpatch_mla-*.whl)
[[ ${#wheels[@]} == 1 && -f ${wheels[0]} ]] || fail "expected one kvpatch_mla wheel, got: ${wheels[*]}"
python3 -m pip install -q --no-deps --no-index --target "$scratch/site" "${wheels[0]}" \
  || fail "pip install of ${wheels[0]##*/} exited $?"
for f in kvpatch_mla.py kvpatch_mla_flashinfer.py libkvpatch_mla_capi.so; do
  [[ -f $scratch/site/$f ]] || fail "the wheel did not install $f"
done
deps=$(ldd "$scratch/site/libkvpatch_mla_capi.so")  # captured first: `ldd | grep -q` can die of SIGPIPE
if grep -q "not found" <<<"$deps"; then
  echo "$deps" >&2
  fail "the wheel's library has unresolved dependencies"
fi

# From another directory, with the checkout out of reach: only the installed copy can be found.
cd "$scratch"
found=$(python3 "$source/tests/install/installed_modules_check.py" "$scratch/site")
[[ $found == "$scratch/site/libkvpatch_mla_capi.so" ]] || fail "find_library() gave '$found', want the wheel's copy"
echo "pip wheel: ok (${wheels[0]##*/})"
