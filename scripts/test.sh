#!/usr/bin/env bash
# The test suite: set up ./.venv if needed, check lint and types, then run the default tier (all but `slow` and `ray`)
# on one pytest-xdist worker per core.
# Extra arguments go to pytest instead, in one process (e.g. `-m slow`, `tests/unit`, `-k normalizer`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv="${ROBOPPO_VENV:-.venv}"
if [ "$#" -eq 0 ]; then  # the full check: lint, format and types first, then every default test
    "$venv/bin/ruff" check .
    "$venv/bin/ruff" format --check .
    "$venv/bin/mypy"
    # the default tier on one pytest worker per core (at most 4: each holds torch, JAX and MuJoCo in memory)
    workers="$("$venv/bin/python" -c 'import os; print(min(4, len(os.sched_getaffinity(0))))')"
    exec "$venv/bin/python" -m pytest -n "$workers" --dist loadgroup --durations=15
fi
exec "$venv/bin/python" -m pytest "$@"
