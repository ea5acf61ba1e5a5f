"""The activation functions roboppo knows, in one table: their ``ppo.yml`` names, modules and parameters.

``policy_kwargs: {activation_fn: silu}`` in ``ppo.yml`` names a row; the fast paths
(:mod:`roboppo.ppo.fast_paths`) compute exactly these modules, each by the NumPy and JAX op of the
same name, reading its parameter from the module attribute the row gives.
"""

from __future__ import annotations

from torch import nn

#: ``ppo.yml`` name -> (the torch module, the attribute holding its parameter, if any)
ACTIVATIONS: dict[str, tuple[type[nn.Module], str | None]] = {
    "tanh": (nn.Tanh, None),
    "relu": (nn.ReLU, None),
    "elu": (nn.ELU, "alpha"),
    "leaky_relu": (nn.LeakyReLU, "negative_slope"),
    "silu": (nn.SiLU, None),
    "sigmoid": (nn.Sigmoid, None),
    "identity": (nn.Identity, None),
}
#: each module's ``ppo.yml`` name
ACTIVATION_NAMES: dict[type[nn.Module], str] = {module: name for name, (module, _) in ACTIVATIONS.items()}
