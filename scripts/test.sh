#!/usr/bin/env bash
# The test suite: set up ./.venv if needed, check lint and types, then run the default tier (all but `slow`).
# Extra arguments go to pytest (e.g. `-m slow`, `tests/unit`, `-k normalizer`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${ROBOPPO_VENV:-.venv}"
if [ "$#" -eq 0 ]; then  # the full check: lint, format and types first, then every default test
    "$venv/bin/ruff" check .
    "$venv/bin/ruff" format --check .
    "$venv/bin/mypy"
fi
exec "$venv/bin/python" -m pytest "$@"
