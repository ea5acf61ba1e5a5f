"""JAX <-> PyTorch through DLPack: no copy when both sides live on the same device."""

from __future__ import annotations

import jax
import numpy as np
import torch as th


def jax_to_torch(array: jax.Array, device: th.device | None = None) -> th.Tensor:
    """View a JAX array as a torch tensor (zero-copy on the same device), then move it to ``device`` if needed."""
    tensor = th.from_dlpack(array)
    if device is not None and tensor.device != th.device(device):
        tensor = tensor.to(device)
    return tensor


def torch_to_jax(tensor: th.Tensor, device: jax.Device | None = None) -> jax.Array:
    """View a torch tensor as a JAX array (zero-copy on the same device), then move it to ``device`` if needed."""
    array = jax.dlpack.from_dlpack(tensor.detach().contiguous())
    if device is not None and device not in array.devices():
        array = jax.device_put(array, device)
    return array


def shares_memory(tensor: th.Tensor, array: jax.Array) -> bool:
    """True when ``tensor`` and ``array`` are views of the same buffer (no copy was made)."""
    return bool(tensor.data_ptr() == array.unsafe_buffer_pointer())


def as_numpy(array: jax.Array) -> np.ndarray:
    """A host NumPy view (a copy only when the array lives on an accelerator)."""
    return np.asarray(array)
