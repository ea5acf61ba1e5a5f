#!/usr/bin/env bash
# GPU check for the Brax path: bench/brax_ant.py with the Brax notebook's settings (2048 envs,
# unroll 5, batch 1024, 32 minibatches, 4 epochs) on the GPU, both systems side by side.
# Installs nothing: it expects torch with CUDA, jax with its CUDA plugin, brax and gym to be
# importable (from the machine, or from wheels unpacked on PYTHONPATH beforehand).
# Usage: bash bench/gpu_check.sh [TIMESTEPS] [OUT]   (default 10M steps per system: ~6 min on an A100-class GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
timesteps="${1:-10000000}"
out="${2:-bench/results/brax_ant_gpu.md}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD:$PWD/bench"
python3 -c "import torch, jax; assert torch.cuda.is_available(), 'torch sees no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0)); print('jax', jax.__version__, jax.devices())"
timeout 470 python3 bench/brax_ant.py --preset gpu --timesteps "$timesteps" --eval-envs 256 --out "$out"
