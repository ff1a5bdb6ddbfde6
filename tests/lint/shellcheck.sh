#!/usr/bin/env bash
# lint.shell: every shell script in the tree (set-up, CI, GPU-machine drivers) against shellcheck at
# severity warning, the level at which it reports likely bugs (unquoted expansions, word splitting)
# rather than style. Skipped (77) when shellcheck is not installed; scripts/test.sh, and so CI,
# installs it first.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if ! command -v shellcheck >/dev/null; then
  echo "shellcheck not installed: apt-get install shellcheck (scripts/test.sh does)" >&2
  exit 77
fi
cd "$root"
# Tracked scripts when this is a git checkout (a source tarball has no index), else every *.sh.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t scripts < <(git ls-files '*.sh' .ci/run)
else
  mapfile -t scripts < <(find . -name '*.sh' -not -path './.deps/*' -not -path './build*' -not -path './.cache/*'; echo .ci/run)
fi
[[ ${#scripts[@]} -gt 0 ]] || { echo "lint.shell: no scripts found under $root" >&2; exit 1; }
echo "shellcheck -S warning over ${#scripts[@]} scripts"
exec shellcheck -S warning "${scripts[@]}"
