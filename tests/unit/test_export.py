"""An exported policy file maps raw observations to what ``predict(..., deterministic=True)`` returns."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch as th

from roboppo import PPO
from roboppo.export import ExportError, export_policy


@pytest.fixture(scope="module")
def model() -> PPO:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=1, hyperparams="sb3", seed=0, policy_kwargs={"net_arch": [32, 32]})
    rng = np.random.default_rng(1)
    model.policy.update_obs_normalizer(rng.normal(1.5, 4.0, size=(500, 11)).astype(np.float32))
    with th.no_grad():  # weights far from the initial ones, so that the bounds and tanh matter
        for parameter in model.policy.parameters():
            parameter.add_(th.randn_like(parameter) * 0.5)
    return model


@pytest.fixture(scope="module")
def observations() -> np.ndarray:
    return np.random.default_rng(2).normal(1.5, 6.0, size=(1000, 11)).astype(np.float32)


def test_torchscript_file_matches_predict(model: PPO, observations: np.ndarray, tmp_path: pathlib.Path) -> None:
    path = export_policy(model.policy, tmp_path / "hopper.pt", "torchscript")
    loaded = th.jit.load(str(path))
    with th.no_grad():
        actions = loaded(th.as_tensor(observations)).numpy()
    expected, _ = model.predict(observations, deterministic=True)
    np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-5)
    assert (np.abs(expected) > 0.99).any(), "some actions saturate, so tanh and the bounds are exercised"


def test_onnx_file_matches_predict(
    model: PPO, observations: np.ndarray, tmp_path: pathlib.Path, capfd: pytest.CaptureFixture
) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    path = export_policy(model.policy, tmp_path / "hopper.onnx", "onnx")
    assert "torchvision" not in capfd.readouterr().err  # the exporter's notes about absent operators are quiet
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (actions,) = session.run(["action"], {"observation": observations})
    expected, _ = model.predict(observations, deterministic=True)
    np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-5)
    (one,) = session.run(["action"], {"observation": observations[:1]})  # any batch size
    np.testing.assert_allclose(one, expected[:1], rtol=0, atol=1e-5)


def test_unknown_formats_are_refused_by_name(model: PPO, tmp_path: pathlib.Path) -> None:
    with pytest.raises(ExportError, match="unknown export format 'tflite'; choose one of onnx, torchscript"):
        export_policy(model.policy, tmp_path / "x.tflite", "tflite")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_discrete_actions_export_as_predicts_choices(tmp_path: pathlib.Path) -> None:
    discrete = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, seed=0)
    path = export_policy(discrete.policy, tmp_path / "cartpole.pt", "torchscript")
    observations = np.random.default_rng(3).normal(0.0, 1.0, size=(300, 4)).astype(np.float32)
    with th.no_grad():
        actions = th.jit.load(str(path))(th.as_tensor(observations)).numpy()
    expected, _ = discrete.predict(observations, deterministic=True)
    assert np.array_equal(actions, expected) and len(np.unique(expected)) == 2


def test_onnx_on_a_torch_without_the_dynamo_exporter_names_the_version(
    model: PPO, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxscript")

    def old_export(module: th.nn.Module, args: tuple, f: str | None = None, export_params: bool = True) -> None:
        raise AssertionError("the old exporter must not run")

    monkeypatch.setattr(th.onnx, "export", old_export)
    with pytest.raises(ImportError, match=r"ONNX export needs torch 2\.5 or newer .*TorchScript"):
        export_policy(model.policy, tmp_path / "policy.onnx", "onnx")
    assert not (tmp_path / "policy.onnx").exists()
