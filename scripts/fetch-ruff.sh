#!/usr/bin/env bash
# Installs the pinned ruff (Python linter) from PyPI into the git-ignored .deps/ruff, for the
# lint.python test. Pinned because each ruff release may enable more rules by default.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=0.17.6
dest=$root/.deps/ruff
stamp=$dest/.complete-$version
[ -f "$stamp" ] && exit 0
rm -rf "$dest"
python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dest" "ruff==$version"
"$dest/bin/ruff" --version | grep -qx "ruff $version" || { echo "fetch-ruff: expected ruff $version" >&2; exit 2; }
touch "$stamp"
