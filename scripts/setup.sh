#!/usr/bin/env bash
# Create ./.venv (or $ROBOPPO_VENV) and install roboppo into it with everything the tests need.
# Safe to re-run: it does nothing when pyproject.toml and this script are unchanged since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${ROBOPPO_VENV:-.venv}"
python="${PYTHON:-python3}"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"

stamp="$venv/.roboppo-install"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

echo "== setting up $venv (first run only; a few minutes) =="
python -m pip install --quiet --upgrade pip

# 1. PyTorch. A plain `pip install torch` on Linux pulls the multi-GB CUDA build, so on a
#    machine without an NVIDIA GPU take a CPU build: a local wheel that pip's find-links
#    already offers, else PyTorch's CPU index. ROBOPPO_TORCH overrides the choice ("torch==2.5.1").
if [ -n "${ROBOPPO_TORCH:-}" ]; then
    python -m pip install --quiet "$ROBOPPO_TORCH"
elif ! python -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1; then
        python -m pip install --quiet torch
    elif ! python -m pip install --quiet --no-index --no-deps torch 2>/dev/null; then
        python -m pip install --quiet torch --index-url https://download.pytorch.org/whl/cpu
    fi
fi

# 2. roboppo itself (editable) with the developer tools, the robot models, ONNX export, Ray and Brax/JAX (CPU build of jaxlib unless
#    JAX finds an accelerator plugin); torch is already satisfied. The `bench` extra (legacy gym,
#    for bench/brax_ant.py only) is left out: once installed, SB3 prints gym's deprecation notice.
python -m pip install --quiet -e ".[dev,robots,brax,export,ray]"

# 3. imitation (GAIL). Its 1.0.1 release pins stable-baselines3~=2.2.1 and gymnasium~=0.29,
#    which would downgrade this stack; installed without those pins it runs on SB3 2.x and
#    Gymnasium 1.x, and what it imports at run time is already here (see README, "Dependencies").
python -m pip install --quiet --no-deps "imitation==1.0.1"

echo "$want" > "$stamp"
echo "== $venv ready =="
