#!/usr/bin/env bash
# The test suite: set up ./.venv if needed, then run the default tier (everything but `slow`).
# Extra arguments go to pytest (e.g. `-m slow`, `tests/unit`, `-k normalizer`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${ROBOPPO_VENV:-.venv}/bin/python" -m pytest "$@"
