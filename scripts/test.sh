#!/usr/bin/env bash
# Set-up, build and the whole test suite through CTest. Usage: bash scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh" "$root/build"
bash "$root/scripts/fetch-ruff.sh"  # for the lint.python test
bash "$root/scripts/install-debian-deps.sh" shellcheck  # for the lint.shell test
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
