#!/usr/bin/env bash
# Installs the pinned pre-commit framework (scripts/pre-commit-requirements.txt) from PyPI into the git-ignored
# .deps/pre-commit, for the patcher.hook.framework test, which runs .pre-commit-hooks.yaml's hooks through it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements=$root/scripts/pre-commit-requirements.txt
dest=$root/.deps/pre-commit
stamp=$dest/.complete-$(sha256sum "$requirements" | cut -c1-16)
[ -f "$stamp" ] && exit 0
rm -rf "$dest"
python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dest" -r "$requirements"
PYTHONPATH=$dest python3 -m pre_commit --version | grep -qx "pre-commit 4.7.0" ||
  { echo "fetch-pre-commit: expected pre-commit 4.7.0" >&2; exit 2; }
touch "$stamp"
