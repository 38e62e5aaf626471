#!/usr/bin/env bash
# Apply ruff's mechanical fixes to the whole tree: the safe lint fixes, then the formatter.
# Run once after a merge that lands new code, then commit the result on its own, so that the
# README's `ruff check` and `ruff format --check` pass. Fixes ruff calls unsafe are never applied:
# one of them would turn nn.ParameterDict.get into a recursion (see pyproject.toml).
# Usage: bash scripts/lint_fix.sh [RUFF]   (RUFF defaults to .venv/bin/ruff, else ruff on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
ruff=${1:-}
if [ -z "$ruff" ]; then
    if [ -x .venv/bin/ruff ]; then ruff=.venv/bin/ruff; else ruff=ruff; fi
fi
"$ruff" check --fix --quiet . || true  # what it cannot fix is reported by the check below
"$ruff" format --quiet .
"$ruff" check .
"$ruff" format --check .
