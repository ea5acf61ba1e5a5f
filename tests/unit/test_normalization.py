"""RunningMeanStd and the normalizing features extractor."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from roboppo.common.normalization import NormalizedFlattenExtractor, RunningMeanStd


def test_running_statistics_match_numpy_over_uneven_batches(rng: np.random.Generator) -> None:
    data = rng.normal(loc=[3.0, -100.0, 0.0], scale=[0.1, 25.0, 4.0], size=(1000, 3))
    rms = RunningMeanStd((3,))
    for chunk in np.split(data, [1, 7, 300, 301, 650]):
        rms.update(chunk)
    assert rms.count.item() == 1000
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(rms.var.numpy(), data.var(axis=0), rtol=1e-10)


def test_update_accepts_time_major_batches(rng: np.random.Generator) -> None:
    data = rng.normal(size=(16, 4, 5))  # [T, B, obs_dim]
    rms = RunningMeanStd((5,))
    rms.update(data)
    np.testing.assert_allclose(rms.mean.numpy(), data.reshape(-1, 5).mean(axis=0), rtol=1e-10)


def test_extractor_normalizes_and_clips(rng: np.random.Generator) -> None:
    space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    extractor = NormalizedFlattenExtractor(space, clip=3.0)
    data = rng.normal(loc=[10.0, -5.0], scale=[2.0, 0.5], size=(5000, 2))
    extractor.update(data)
    out = extractor(th.as_tensor(data, dtype=th.float32))
    assert out.dtype == th.float32
    np.testing.assert_allclose(out.mean(0).numpy(), [0.0, 0.0], atol=0.02)
    far = extractor(th.tensor([[1e6, -1e6]]))
    assert far.tolist() == [[3.0, -3.0]]


def test_statistics_are_buffers_in_the_state_dict() -> None:
    extractor = NormalizedFlattenExtractor(spaces.Box(-1, 1, (3,), np.float32))
    extractor.update(np.ones((4, 3)))
    state = extractor.state_dict()
    assert {"obs_rms.mean", "obs_rms.var", "obs_rms.count"} <= set(state)
    assert state["obs_rms.count"].item() == 4
    assert not any(p.requires_grad for p in extractor.parameters())


def test_multi_dimensional_box_is_normalized_per_element_then_flattened(rng: np.random.Generator) -> None:
    extractor = NormalizedFlattenExtractor(spaces.Box(-np.inf, np.inf, (3, 2), np.float32))
    data = rng.normal(loc=np.arange(6).reshape(3, 2) * 10.0, scale=2.0, size=(4000, 3, 2))
    extractor.update(data)
    assert extractor.obs_rms.mean.shape == (3, 2) and extractor.features_dim == 6
    out = extractor(th.as_tensor(data, dtype=th.float32))
    assert out.shape == (4000, 6)
    np.testing.assert_allclose(out.mean(0).numpy(), np.zeros(6), atol=0.05)
    np.testing.assert_allclose(out.std(0).numpy(), np.ones(6), atol=0.05)


def test_discrete_observations_are_flattened_without_statistics() -> None:
    extractor = NormalizedFlattenExtractor(spaces.Discrete(5))
    extractor.update(np.eye(5)[[0, 1, 1]])  # one-hot, as SB3 preprocesses them
    assert extractor.features_dim == 5 and extractor.obs_rms.count.item() == 0
    one_hot = th.eye(5)[[2, 4]]
    th.testing.assert_close(extractor(one_hot), one_hot)


def test_dict_observation_space_points_to_multi_input_policy() -> None:
    space = spaces.Dict({"a": spaces.Box(0, 1, (2,), np.float32)})
    with pytest.raises(ValueError, match="MultiInputPolicy"):
        NormalizedFlattenExtractor(space)
