#!/usr/bin/env bash
# The main job: set up ./.venv if needed, then train PPO until it balances the inverted pendulum.
# Extra arguments go to `python -m roboppo.quickstart` (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${ROBOPPO_VENV:-.venv}/bin/python" -m roboppo.quickstart "$@"
