"""Data files never run code: crafted files that would run code when unpickled are refused unread.

Each file, unpickled, would write a marker file; the marker's absence proves nothing ran.
"""

from __future__ import annotations

import pathlib
import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from roboppo.common.errors import UserInputError
from roboppo.gail import DemoError, load_demonstrations
from roboppo.gail.trainer import build_reward_net, load_reward_net, save_reward_net

ENV = "RoboHopper-v0"  # 11 observation values, 3 actions


class Payload:
    """Unpickling this object runs ``exec``: it writes ``marker``."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


def test_the_payload_does_run_when_unpickled(tmp_path: pathlib.Path) -> None:
    """The tests below mean something only if the payload works."""
    pickle.loads(pickle.dumps(Payload(tmp_path / "marker")))
    assert (tmp_path / "marker").read_text() == "ran"


def test_a_malicious_pickle_of_demonstrations_is_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "demos.pkl").write_bytes(pickle.dumps([Payload(tmp_path / "marker")]))
    with pytest.raises(DemoError, match=r"demos\.pkl is a pickle: reading it runs pickle, which can execute code"):
        load_demonstrations(tmp_path / "demos.pkl", ENV)
    assert not (tmp_path / "marker").exists()


def test_an_object_array_in_demonstrations_is_refused(tmp_path: pathlib.Path) -> None:
    payload = np.array([Payload(tmp_path / "marker")], dtype=object)
    np.savez(tmp_path / "demos.npz", obs=np.zeros((2, 5, 11)), acs=np.zeros((2, 5, 3)), ep_rets=payload)
    with pytest.raises(DemoError, match=r"array 'ep_rets' of .*demos\.npz is an object array.*--allow-pickle"):
        load_demonstrations(tmp_path / "demos.npz", ENV)
    assert not (tmp_path / "marker").exists()


def test_imitation_legacy_infos_are_left_unread(tmp_path: pathlib.Path) -> None:
    """A legacy imitation file whose infos carry the payload trains on its arrays; the infos stay unread."""
    rng = np.random.default_rng(0)
    infos = np.array([Payload(tmp_path / "marker")] * 7, dtype=object)
    np.savez(
        tmp_path / "trajs.npz", obs=rng.normal(size=(9, 11)), acts=rng.uniform(-1, 1, (7, 3)), infos=infos,
        terminal=np.array([True, True]), indices=np.array([3]), rews=np.ones(7, np.float32),
    )  # fmt: skip
    demos = load_demonstrations(tmp_path / "trajs.npz", ENV)
    assert demos.source == "imitation" and demos.n_transitions == 7
    assert not (tmp_path / "marker").exists()


def test_a_malicious_reward_net_file_is_refused(tmp_path: pathlib.Path) -> None:
    th.save({"state_dict": {}, "payload": Payload(tmp_path / "marker")}, tmp_path / "reward_net.pt")
    with pytest.raises(UserInputError, match=r"reward_net\.pt holds Python objects .* can run code"):
        load_reward_net(tmp_path / "reward_net.pt")
    assert not (tmp_path / "marker").exists()


def test_the_reward_net_file_round_trips_without_pickle(tmp_path: pathlib.Path) -> None:
    """Spaces, plain keywords and a torch.nn activation are written as tensors and plain values."""
    spec = {
        "observation_space": gym.spaces.Box(-np.inf, np.inf, (11,), np.float32),
        "action_space": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        "kwargs": {"hid_sizes": (8, 8), "use_action": True, "activation": th.nn.Tanh},
        "spectral_norm": True,
    }
    net = build_reward_net(**spec)
    save_reward_net(tmp_path / "reward_net.pt", net, spec)
    saved = th.load(tmp_path / "reward_net.pt", weights_only=True)  # would raise on any pickled object
    assert saved["kwargs"]["activation"] == {"torch.nn class": "Tanh"}
    loaded = load_reward_net(tmp_path / "reward_net.pt")
    states, actions = th.ones(4, 12), th.ones(4, 3)  # 11 values and the absorbing indicator
    with th.no_grad():
        np.testing.assert_array_equal(
            loaded(states, actions, states, th.zeros(4)), net(states, actions, states, th.zeros(4))
        )
    with pytest.raises(TypeError, match=r"reward_net_kwargs\['activation'\] = .*only plain values and torch\.nn"):
        save_reward_net(tmp_path / "other.pt", net, {**spec, "kwargs": {"activation": Payload}})
