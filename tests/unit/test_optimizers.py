"""Optimizers built, saved and loaded without importing torch._dynamo, and torch's wrappers left as they were."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from torch.optim import Optimizer

_CACHE = "__dynamo_disable"


def _fresh_process(code: str) -> dict:
    """Run ``code`` in a new interpreter (this one may have imported torch._dynamo already); its printed JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_whole_short_run_never_imports_dynamo(tmp_path: object) -> None:
    """Building PPO, a rollout and its update, saving and loading: torch._dynamo stays unimported, where
    a plain torch Adam in the same process imports it (so the check can fail)."""
    if not hasattr(Optimizer.add_param_group, "__wrapped__"):
        pytest.skip("this torch does not wrap Optimizer.add_param_group in _disable_dynamo")
    seen = _fresh_process(
        f"""
        import json, sys
        import torch as th
        from roboppo import PPO
        model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_steps=64, batch_size=64, n_epochs=1, seed=0)
        model.learn(64 * model.n_envs)
        model.save({str(tmp_path)!r} + "/model")
        loaded = PPO.load({str(tmp_path)!r} + "/model")
        after_run = "torch._dynamo" in sys.modules
        th.optim.Adam([th.zeros(1, requires_grad=True)])
        print(json.dumps({{"after_run": after_run, "after_adam": "torch._dynamo" in sys.modules,
                          "steps": loaded.num_timesteps}}))
        """
    )
    assert seen == {"after_run": False, "after_adam": True, "steps": seen["steps"]} and seen["steps"] >= 64


def test_the_block_leaves_the_wrappers_as_torch_wrote_them() -> None:
    """In a fresh process, where torch._dynamo is not imported and the block does patch the wrappers
    (in this one an earlier test may have imported it, and a call inside the block then fills a cache)."""
    seen = _fresh_process(
        f"""
        import json, sys
        import torch as th
        from torch.optim import Optimizer
        from roboppo.common.optimizers import WRAPPED_METHODS, without_dynamo_import
        methods = [getattr(getattr(Optimizer, name), "__wrapped__", None) for name in WRAPPED_METHODS]
        before = [getattr(method, {_CACHE!r}, None) for method in methods]
        parameter = th.zeros(2, requires_grad=True)
        with without_dynamo_import():
            optimizer = th.optim.Adam([parameter], lr=0.1)
            state = optimizer.state_dict()
        after = [getattr(method, {_CACHE!r}, None) for method in methods]
        print(json.dumps({{"same": after == before, "dynamo": "torch._dynamo" in sys.modules,
                          "lr": state["param_groups"][0]["lr"], "params": state["param_groups"][0]["params"]}}))
        """
    )
    assert seen == {"same": True, "dynamo": False, "lr": 0.1, "params": [0]}
