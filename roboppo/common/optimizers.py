"""Building, saving and loading torch optimizers without importing ``torch._dynamo`` (about a second).

torch wraps ``Optimizer.add_param_group``, ``state_dict`` and ``load_state_dict`` in its private
``_disable_dynamo``, which imports ``torch._dynamo`` (sympy, the FX tracer: about a second on a
laptop core, most of a short run's start-up) at the first call, only to keep ``torch.compile``
from tracing into them. Until ``torch._dynamo`` is imported nothing can be tracing, so the plain
method is the same call. :func:`without_dynamo_import` makes it so for a block: each wrapper's
cache of its disabled function (the attribute ``__dynamo_disable`` of the wrapped method) points
at the plain method, and is removed afterwards, so later calls behave exactly as torch wrote them.
Where ``torch._dynamo`` is already imported, or a torch version wraps these methods otherwise,
the block runs unchanged.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from torch.optim import Optimizer

#: the ``Optimizer`` methods torch wraps in ``_disable_dynamo`` that roboppo calls before any training
WRAPPED_METHODS = ("add_param_group", "state_dict", "load_state_dict")
#: where ``_disable_dynamo``'s wrapper caches the disabled function, on the wrapped function
_CACHE = "__dynamo_disable"


@contextlib.contextmanager
def without_dynamo_import() -> Iterator[None]:
    """Run the block with :data:`WRAPPED_METHODS` called plainly while ``torch._dynamo`` is not imported."""
    if "torch._dynamo" in sys.modules:
        yield
        return
    methods = [getattr(getattr(Optimizer, name), "__wrapped__", None) for name in WRAPPED_METHODS]
    patched = [method for method in methods if method is not None and not hasattr(method, _CACHE)]
    for method in patched:
        setattr(method, _CACHE, method)
    try:
        yield
    finally:
        for method in patched:
            if getattr(method, _CACHE, None) is method:
                delattr(method, _CACHE)
