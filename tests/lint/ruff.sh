#!/usr/bin/env bash
# lint.python: the project's Python (benchmarks, test drivers) against ruff.toml. Skipped (77) when
# scripts/fetch-ruff.sh has not run; scripts/test.sh, and so CI, always runs it first.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ruff=$root/.deps/ruff/bin/ruff
if [ ! -x "$ruff" ]; then
  echo "ruff not installed: run scripts/fetch-ruff.sh" >&2
  exit 77
fi
cd "$root"
exec "$ruff" check --no-cache .
