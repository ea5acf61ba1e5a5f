"""roboppo-zoo collect-demos and gail, run in-process into temporary folders."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import yaml

from roboppo import PPO
from roboppo.cli import main
from roboppo.gail import collect_demonstrations, load_demonstrations, save_demonstrations
from roboppo.gail.horizon import with_indicator
from roboppo.gail.trainer import GAILTrainer

ENV = "RoboInvertedPendulum-v0"


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("model") / "policy.zip"
    PPO("MlpPolicy", ENV, n_steps=64, batch_size=64, seed=0).learn(128).save(path)
    return path


def test_collect_demos_writes_episodes_and_reports_the_return(
    policy_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "demos.npz"
    code = main(["collect-demos", "--model", str(policy_file), "--env", ENV, "--episodes", "3", "--out", str(out)])
    assert code == 0
    demos = load_demonstrations(out, ENV)
    assert len(demos.trajectories) == 3 and demos.source == "roboppo"
    printed = capsys.readouterr().out
    assert f"return {demos.episode_returns.mean():.1f}" in printed and str(out) in printed


def test_gail_writes_a_run_folder(
    policy_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    demos = tmp_path / "demos.npz"
    main(["collect-demos", "--model", str(policy_file), "--env", ENV, "--episodes", "4", "--out", str(demos)])
    runs = tmp_path / "runs"
    argv = ["gail", "--env", ENV, "--demos", str(demos), "--n-timesteps", "1024", "--log-folder", str(runs)]
    assert main([*argv, "--eval-episodes", "2", "--no-progress-bar"]) == 0
    (run_dir,) = runs.iterdir()
    names = {p.name for p in run_dir.iterdir()}
    assert {"generator.zip", "reward_net.pt", "config.yml", "progress.csv"} <= names
    assert any(name.startswith("events.out.tfevents") for name in names)
    header = (run_dir / "progress.csv").read_text().splitlines()[0]
    assert "disc/disc_loss" in header and "gen/rollout/ep_rew_mean" in header
    generator, reward_net = GAILTrainer.load(run_dir)
    assert generator.num_timesteps >= 1024
    states = with_indicator(np.zeros((1, 4)))  # the discriminator reads the absorbing indicator too
    assert np.isfinite(reward_net.predict(states, np.zeros((1, 1)), states, np.zeros(1))).all()
    out = capsys.readouterr().out
    assert "final evaluation:" in out and "fraction reached" in out


class LinearExpert:
    """A deterministic controller with clearly non-zero actions, for BC to copy."""

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        obs = np.asarray(obs, np.float32)
        return np.clip(2.0 * obs[..., 1:2] + 1.0 + 0.5 * obs[..., 3:4], -3, 3), None


@pytest.fixture(scope="module")
def demos_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("demos") / "demos.npz"
    episodes = collect_demonstrations(LinearExpert(), ENV, n_episodes=6)  # type: ignore[arg-type]
    save_demonstrations(out, episodes, ENV)
    return out


def test_bc_clones_the_experts_actions(
    demos_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["bc", "--env", ENV, "--demos", str(demos_file), "--n-demos", "4", "--batches", "1500"]
    assert main([*argv, "--log-folder", str(tmp_path), "--eval-episodes", "2", "--no-progress-bar"]) == 0
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.startswith(f"bc_{ENV}_seed0_") and (run_dir / "progress.csv").is_file()
    assert yaml.safe_load((run_dir / "config.yml").read_text())["n_demos"] == 4
    states = np.concatenate([t.obs for t in load_demonstrations(demos_file, ENV).trajectories])
    expert = LinearExpert().predict(states)[0]
    clone = PPO.load(run_dir / "model.zip").predict(states, deterministic=True)[0]
    untrained = PPO("MlpPolicy", ENV, seed=1).predict(states, deterministic=True)[0]
    assert np.abs(clone - expert).mean() < 0.2 * np.abs(untrained - expert).mean()
    assert "fraction reached" in capsys.readouterr().out


def test_gail_can_start_from_behaviour_cloning(
    demos_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["gail", "--env", ENV, "--demos", str(demos_file), "--n-timesteps", "512", "--init-from-bc"]
    argv += ["--bc-batches", "300", "--log-folder", str(tmp_path), "--eval-episodes", "2", "--no-progress-bar"]
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    assert yaml.safe_load((run_dir / "config.yml").read_text())["init_from_bc"] is True
    out = capsys.readouterr().out
    assert out.index("behaviour cloning first: final evaluation") < out.rindex("final evaluation")
    for command in (
        ["eval", "--run", str(run_dir), "-n", "1"],
        ["plot", str(run_dir), "--out", str(tmp_path / "g.png")],
    ):
        assert main(command) == 0, command  # a GAIL run is a run like any other
    assert "generator.zip" in capsys.readouterr().out and (tmp_path / "g.png").stat().st_size > 1000


def test_every_flag_has_help_and_help_shows_defaults() -> None:
    import argparse

    from roboppo.cli import COMMANDS, build_parser

    def command_parser(name: str) -> argparse.ArgumentParser:
        (commands,) = [a for a in build_parser(name)._actions if isinstance(a, argparse._SubParsersAction)]
        parser: argparse.ArgumentParser = commands.choices[name]
        return parser

    missing = [
        f"{name} {action.option_strings[0]}"
        for name in COMMANDS
        for action in command_parser(name)._actions
        if action.option_strings and action.dest != "help" and not action.help
    ]
    assert missing == []
    assert all(len(command_parser(name)._actions) > 1 for name in COMMANDS if name != "envs")  # each has its flags
    tune_help = command_parser("tune").format_help()
    assert "(default: 20)" in tune_help and "(default: 50000)" in tune_help  # --n-trials, --n-timesteps


def test_an_interrupted_gail_run_keeps_its_generator(
    demos_file: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from roboppo.gail import GAILTrainer

    def interrupted(self: GAILTrainer, total_timesteps: int | None = None, progress_bar: bool = False) -> None:
        raise KeyboardInterrupt  # what Ctrl-C raises inside imitation's training loop

    monkeypatch.setattr(GAILTrainer, "train", interrupted)
    argv = ["gail", "--env", ENV, "--demos", str(demos_file), "--log-folder", str(tmp_path), "--no-progress-bar"]
    assert main(argv) == 130
    (run_dir,) = tmp_path.iterdir()
    assert PPO.load(run_dir / "generator.zip").num_timesteps == 0 and (run_dir / "config.yml").is_file()
    assert "Interrupted at 0 generator steps" in capsys.readouterr().out
