"""roboppo-zoo train / eval / record / plot, in-process into temporary folders with tiny budgets."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import time

import imageio.v2 as imageio
import numpy as np
import pytest
import yaml

from roboppo import PPO
from roboppo.cli import main
from tests.conftest import train_until_interrupted

ENV = "RoboInvertedPendulum-v0"
TINY = ["--n-timesteps", "1024", "--eval-freq", "256", "--save-freq", "512", "--eval-episodes", "2"]
TINY += ["-p", "n_steps=64", "-p", "policy_kwargs.net_arch=[16]", "--no-progress-bar"]


def train(folder: pathlib.Path, *extra: str) -> pathlib.Path:
    assert main(["train", "--env", ENV, "--log-folder", str(folder), *TINY, *extra]) == 0
    (run_dir,) = folder.iterdir()
    return run_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return train(tmp_path_factory.mktemp("runs"), "--seed", "3")


def test_train_writes_a_complete_run_folder(run_dir: pathlib.Path) -> None:
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yml", "command.txt", "model.zip", "model.state.npz", "best_model.zip", "evaluations.npz"} <= names
    assert "progress.csv" in names
    assert any(name.startswith("events.out.tfevents") for name in names)
    config = yaml.safe_load((run_dir / "config.yml").read_text())
    assert config["env"] == ENV and config["seed"] == 3 and config["n_timesteps"] == 1024
    assert config["overrides"] == {"n_steps": 64, "policy_kwargs": {"net_arch": [16]}}
    model = PPO.load(run_dir / "model.zip")
    assert model.n_steps == 64 and model.num_timesteps == 1024
    # at the first rollout boundary past each 512 steps, with what a resume needs to continue exactly
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "ppo_512_steps.state.npz",
        "ppo_512_steps.zip",
    ]
    assert list(np.load(run_dir / "evaluations.npz")["timesteps"]) == [256, 512, 768, 1024]


def test_train_uses_the_settings_of_the_python_line(run_dir: pathlib.Path) -> None:
    """`roboppo-zoo train --env ID` and `PPO("MlpPolicy", ID)` resolve the same entry (here plus two -p overrides)."""
    cli, line = PPO.load(run_dir / "model.zip"), PPO("MlpPolicy", ENV)
    keys = ["n_envs", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "vf_coef", "reward_scale"]
    assert [getattr(cli, key) for key in keys] == [getattr(line, key) for key in keys]
    assert cli.lr_schedule(0.5) == line.lr_schedule(0.5) and cli.clip_range(0.5) == line.clip_range(0.5)
    assert cli.hyperparams_source == line.hyperparams_source + "; overridden: n_steps, policy_kwargs"
    assert cli.hyperparams["n_steps"] == 64 and line.hyperparams["n_steps"] == 32  # the override; the entry's
    assert cli.hyperparams["policy_kwargs"] == {"net_arch": [16]}


def test_config_holds_every_ppo_and_policy_keyword_the_run_trained_with(run_dir: pathlib.Path) -> None:
    settings = yaml.safe_load((run_dir / "config.yml").read_text())["hyperparams"]
    model = PPO.load(run_dir / "model.zip")
    for key in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm"):
        assert settings[key] == getattr(model, key), key
    assert {"target_kl", "normalize_advantage", "clip_range_vf", "stats_window_size", "use_sde"} <= set(settings)
    assert settings["reward_scale"] == model.reward_scale and settings["train_backend"] == model.train_backend
    policy = settings["policy_kwargs"]
    assert policy["net_arch"] == [16] and policy["activation_fn"] in ("tanh", "relu", "silu", "elu")
    assert policy["normalize_obs"] is True and policy["log_std_init"] == model.policy.log_std_init
    assert isinstance(settings["learning_rate"], (float, dict))  # a number, or the entry's schedule mapping


def test_config_records_which_sampler_and_update_trained_the_model(run_dir: pathlib.Path) -> None:
    paths = yaml.safe_load((run_dir / "config.yml").read_text())["paths"]
    model = PPO.load(run_dir / "model.zip")
    ran = {part: ", ".join(names) for part, names in model.paths_run.items()}
    assert {part: paths[part] for part in ran} == ran
    assert paths["sampler"] == "numpy" and paths["update"] == ("torch" if model.train_backend == "torch" else "jax")


def test_resume_continues_the_step_count_and_the_history(tmp_path: pathlib.Path) -> None:
    run = train(tmp_path)
    (run / "model.zip").unlink()  # as if interrupted after the last checkpoint (512 steps)
    config = yaml.safe_load((run / "config.yml").read_text())
    config["n_timesteps"] = 1536
    (run / "config.yml").write_text(yaml.safe_dump(config))
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    assert PPO.load(run / "model.zip").num_timesteps == 1536
    assert list(np.load(run / "evaluations.npz")["timesteps"]) == [256, 512, 768, 1024, 1280, 1536]
    assert (run / "progress-from-512.csv").is_file() and (run / "progress.csv").is_file()


def test_eval_prints_mean_and_std(run_dir: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["eval", "--run", str(run_dir), "--episodes", "3"]) == 0
    assert "± " in capsys.readouterr().out
    assert main(["enjoy", "--run", str(run_dir), "-n", "2", "--load-best", "--no-render"]) == 0
    assert "best_model.zip" in capsys.readouterr().out
    assert main(["eval", "--run", str(run_dir), "-n", "1", "--load-checkpoint", "512"]) == 0
    assert "ppo_512_steps.zip" in capsys.readouterr().out
    assert main(["eval", "--run", str(run_dir), "--load-checkpoint", "500"]) == 2
    assert "no checkpoint at 500 steps; saved: ['ppo_512_steps.zip']" in capsys.readouterr().err


def test_enjoy_finds_runs_the_rl_zoo3_way_and_writes_a_video_without_a_display(
    run_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    argv = ["enjoy", "-f", str(run_dir.parent), "--env", ENV, "--exp-id", "0", "-n", "1"]
    assert main(argv) == 0
    video = run_dir / "videos" / "enjoy.mp4"
    assert video.is_file() and sum(1 for _ in imageio.get_reader(video)) > 1
    assert "no display" in capsys.readouterr().out
    assert main([*argv[:3], "--env", "RoboHopper-v0"]) == 2
    assert "holds no run of RoboHopper-v0" in capsys.readouterr().err


def test_envs_lists_every_id_with_what_it_equals_its_spaces_and_extra(capsys: pytest.CaptureFixture) -> None:
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"RoboHopper-v0\s+MuJoCo\s+Hopper-v5 \(float32 obs\)\s+11\s+3 in \[-1, 1\]\s+3,800\s+core", out)
    assert re.search(r"RoboAnt-v0\s+Brax\s+Brax ant\s+27\s+8 in \[-1, 1\]\s+-\s+brax", out)
    assert re.search(r"roboppo/Humanoid-v5\s+MuJoCo\s+Humanoid-v5\s+348\s+17 in \[-0.4, 0.4\]\s+-\s+core", out)
    for name in ("Ant", "HalfCheetah", "Hopper", "HumanoidStandup", "Pusher", "Reacher", "Swimmer", "Walker2d"):
        assert re.search(rf"roboppo/{name}-v5\s+MuJoCo\s+{name}-v5\s", out), name
    for task, dims in (
        ("Go1JoystickFlat", "48/123"),
        ("Go1JoystickRough", "48/123"),
        ("BerkeleyHumanoidJoystickFlat", "52/114"),
    ):
        task = f"{task}Terrain-v1"
        assert re.search(rf"roboppo/{task}\s+MuJoCo\s+MuJoCoPlayground/{task}\s+{dims}\s+12 in \[-1, 1\]\s+robots", out)
    assert re.search(r"floor_friction\s+U\(0.4, 1\)", out) and "pushes=True" in out


def test_record_writes_a_playable_video(run_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "video.mp4"
    assert main(["record", "--run", str(run_dir), "--out", str(out), "--max-steps", "40"]) == 0
    reader = imageio.get_reader(out)
    frames = reader.count_frames()
    first = reader.get_data(0)
    assert 2 <= frames <= 41  # the reset frame plus one per step until the pole fell or 40 steps
    assert first.ndim == 3 and first.shape[2] == 3 and first.std() > 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["video.mp4"]


def test_record_writes_a_looping_gif_with_delays_browsers_play(run_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from PIL import Image

    out = tmp_path / "video.gif"
    assert main(["record", "--run", str(run_dir), "--out", str(out), "--max-steps", "40", "--fps", "125"]) == 0
    with Image.open(out) as gif:
        assert gif.info["loop"] == 0  # loops forever
        assert gif.info["duration"] == 30  # every 4th of the 125 fps frames: 32 ms, written as 3 cs
        frames = gif.n_frames
    with imageio.get_reader(tmp_path / "video.gif") as reader:
        assert reader.get_data(0).std() > 1.0
    mp4 = tmp_path / "video.mp4"
    assert main(["record", "--run", str(run_dir), "--out", str(mp4), "--max-steps", "40", "--fps", "125"]) == 0
    assert frames == -(-imageio.get_reader(mp4).count_frames() // 4)  # the same episode, every 4th frame


def test_plot_writes_a_png(run_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "curves.png"
    assert main(["plot", str(run_dir), str(run_dir), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_thread_options_reach_the_run(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roboppo_envs.mujoco import MujocoVectorEnv

    built: list[int] = []
    original = MujocoVectorEnv.__init__

    def spy(self: MujocoVectorEnv, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        built.append(self.num_threads)

    monkeypatch.setattr(MujocoVectorEnv, "__init__", spy)
    run = train(tmp_path, "--n-envs", "2", "--env-threads", "1", "--torch-threads", "1")
    config = yaml.safe_load((run / "config.yml").read_text())
    assert (config["env_threads"], config["torch_threads"]) == (1, 1)
    assert built[0] == 1  # the training batch; the evaluation env has one copy anyway


def test_benchmark_writes_tables_with_intervals_and_plots(tmp_path: pathlib.Path) -> None:
    hparams = tmp_path / "candidate.yml"
    hparams.write_text(f"{ENV}:\n  n_envs: 2\n  n_steps: 64\n  batch_size: 64\n")
    argv = ["benchmark", "--envs", ENV, "--seeds", "2", "--first-seed", "7", "--jobs", "2", "--n-timesteps", "512"]
    argv += ["--hparams", str(hparams)]
    assert main([*argv, "--eval-freq", "256", "--eval-episodes", "2", "--out", str(tmp_path / "out")]) == 0
    tmp_path = tmp_path / "out"
    text = (tmp_path / "benchmark.md").read_text()
    summary = text.split("\n\n")[0].splitlines()
    assert summary[0].startswith("| env | system | seeds") and "IQM [95% CI]" in summary[0]
    rows = {line.split("|")[2].strip(): line for line in summary[2:]}
    assert set(rows) == {"roboppo", "sb3 + rl-zoo3"} and all("| 2 | 512 |" in line for line in rows.values())
    assert all(re.search(r"\| [\d,.-]+ \[[\d,.-]+, [\d,.-]+\] \|", line) for line in rows.values())
    per_seed = text.split("Every seed")[1].splitlines()
    seeds = [line for line in per_seed if line.startswith(f"| {ENV} | roboppo | ")]
    assert [line.split("|")[3].strip() for line in seeds] == ["7", "8"]
    assert all("not reached" in line for line in seeds)  # 512 steps do not balance the pole for 950 steps
    stock = [line.split("|") for line in per_seed if line.startswith(f"| {ENV} | sb3 + rl-zoo3 | ")]
    assert [cells[5].strip().endswith(" of 50") for cells in stock] == [True, True]  # stock runs count falls too
    for name in (f"{ENV}.png", f"{ENV}_profile.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in (tmp_path / "runs" / ENV).iterdir()) == ["seed7", "seed8"]
    runs = sorted((tmp_path / "runs" / ENV).glob("seed*/*"))
    config = yaml.safe_load((runs[0] / "config.yml").read_text())
    assert config["hparams_file"] == str(hparams) and config["n_envs"] == 2
    assert main([*argv, "--eval-episodes", "2", "--out", str(tmp_path), "--no-sb3"]) == 0  # finished runs reused
    assert sorted((tmp_path / "runs" / ENV).glob("seed*/*")) == runs
    assert [line.split("|")[4] for line in (tmp_path / "benchmark.md").read_text().splitlines()[2:3]] == [" 512 "]
    table = (tmp_path / "benchmark.md").read_text()
    assert sorted(p.name for p in (tmp_path / "rows" / ENV).iterdir()) == [
        f"seed{s}.{x}" for s in (7, 8) for x in ("json", "npz")
    ]
    shutil.rmtree(tmp_path / "runs")  # a fresh checkout: the run folders were not committed, the kept rows were
    assert main([*argv, "--eval-episodes", "2", "--out", str(tmp_path), "--no-sb3"]) == 0
    assert not (tmp_path / "runs" / ENV).exists()  # nothing trained again
    assert (tmp_path / "benchmark.md").read_text().split("Every seed")[1] == table.split("Every seed")[1]


def test_a_benchmark_refuses_a_folder_whose_runs_used_other_settings(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its kept rows and finished runs would otherwise stand for settings they never trained with."""
    argv = ["benchmark", "--envs", ENV, "--seeds", "1", "--jobs", "1", "--no-sb3", "--n-timesteps", "256"]
    argv += ["--eval-freq", "256", "--eval-episodes", "2", "--final-episodes", "2", "--out", str(tmp_path)]
    assert main(argv) == 0
    record = tmp_path / f"{ENV}_settings.json"
    assert json.loads(record.read_text())["n_steps"] == PPO("MlpPolicy", ENV).n_steps
    table = (tmp_path / "benchmark.md").read_text()
    changed = tmp_path / "changed.yml"
    changed.write_text(f"{ENV}:\n  n_steps: 64\n  batch_size: 64\n")
    capsys.readouterr()
    assert main([*argv, "--hparams", str(changed)]) == 2
    err = capsys.readouterr().err
    assert "n_steps" in err and record.name in err and "--out" in err, err
    assert (tmp_path / "benchmark.md").read_text() == table  # nothing trained or rewritten
    assert main(argv) == 0  # the same settings again: the kept row is reused


def test_settings_that_spell_out_sb3_defaults_are_the_same_settings(tmp_path: pathlib.Path) -> None:
    """A search file that leaves out ``ent_coef`` trains what the entry that writes ``ent_coef: 0.0`` trains."""
    from roboppo.cli.benchmark import SettingsMismatchError, check_settings

    args = argparse.Namespace(out=tmp_path, hparams=None)
    check_settings(args, ENV)  # records the entry's settings
    record = tmp_path / f"{ENV}_settings.json"
    written = json.loads(record.read_text())
    defaults = {"ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5}
    assert {key: written[key] for key in defaults} == defaults  # the entry writes them out
    record.write_text(json.dumps({key: value for key, value in written.items() if key not in defaults}))
    check_settings(args, ENV)  # a record that leaves them out: the same settings
    record.write_text(json.dumps({**written, "ent_coef": 0.01}))
    with pytest.raises(SettingsMismatchError, match="ent_coef"):
        check_settings(args, ENV)


def test_an_interrupted_benchmark_stops_instead_of_moving_to_the_next_seed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import roboppo.cli.train as zoo_train

    started: list[int] = []

    def interrupted_train(args: argparse.Namespace) -> int:
        started.append(args.seed)
        return zoo_train.INTERRUPTED  # what train returns after Ctrl-C, with model.zip saved

    monkeypatch.setattr(zoo_train, "train", interrupted_train)
    argv = ["benchmark", "--envs", ENV, "--seeds", "3", "--jobs", "1", "--no-sb3", "--out", str(tmp_path)]
    assert main(argv) == zoo_train.INTERRUPTED
    assert started == [0]
    assert "interrupted: benchmark stopped" in capsys.readouterr().err
    assert not (tmp_path / "benchmark.md").exists()


def test_a_benchmark_writes_each_finished_run_and_counts_early_ends(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 0 finishes and is in benchmark.md before seed 1 is interrupted; its 20 final episodes all fell."""
    import roboppo.cli.train as zoo_train

    real_train = zoo_train.train

    def second_seed_interrupted(args: argparse.Namespace) -> int:
        return real_train(args) if args.seed == 0 else zoo_train.INTERRUPTED

    monkeypatch.setattr(zoo_train, "train", second_seed_interrupted)
    argv = ["benchmark", "--envs", ENV, "--seeds", "2", "--jobs", "1", "--no-sb3", "--n-timesteps", "256"]
    argv += ["--eval-freq", "256", "--eval-episodes", "2", "--final-episodes", "20", "--out", str(tmp_path)]
    assert main(argv) == zoo_train.INTERRUPTED
    text = (tmp_path / "benchmark.md").read_text()
    seeds = [line for line in text.split("Every seed")[1].splitlines() if line.startswith(f"| {ENV} | roboppo | ")]
    assert len(seeds) == 1 and seeds[0].split("|")[3].strip() == "0"
    assert seeds[0].split("|")[5].strip() == "20 of 20"  # 256 steps of training: every episode ends in a fall
    assert "mean of 20 deterministic episodes" in text


def test_benchmark_workers_end_when_the_benchmark_is_killed(tmp_path: pathlib.Path) -> None:
    """A worker whose benchmark died (SIGKILL, or SIGTERM to the parent alone) stops instead of training on."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import concurrent.futures, multiprocessing, os, time\n"
        "from roboppo.cli.benchmark import exit_with_parent\n"
        "if __name__ == '__main__':\n"
        "    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn'),\n"
        "        initializer=exit_with_parent, initargs=(os.getpid(), 0.1))\n"
        "    pool.submit(time.sleep, 0).result()\n"
        "    print(*pool._processes, flush=True)\n"
        "    pool.submit(time.sleep, 60)\n"
        "    os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    (worker,) = (int(pid) for pid in done.stdout.split())
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and pathlib.Path(f"/proc/{worker}").exists():
        state = pathlib.Path(f"/proc/{worker}/stat").read_text().split(") ")[-1][:1]
        if state == "Z":  # exited, not yet reaped by init
            break
        time.sleep(0.2)
    else:
        assert not pathlib.Path(f"/proc/{worker}").exists(), "the worker outlived its benchmark by 20 s"


def test_a_run_shorter_than_one_evaluation_reports_its_final_one(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["train", "--env", ENV, "--log-folder", str(tmp_path), "--n-timesteps", "256", "--eval-freq", "100000"]
    assert main([*argv, "-p", "n_steps=64", "--no-progress-bar"]) == 0
    out = capsys.readouterr().out
    final = re.search(r"final evaluation: (-?[\d.]+) ± [\d.]+ over 10 deterministic episodes", out)
    assert final is not None and "-inf" not in out
    assert f"best evaluation:  {final.group(1)} (best_model.zip)" in out
    assert "steps/s)" in out and "roboppo-zoo export --run" in out and "roboppo-zoo enjoy --run" in out


def test_rl_zoo3_flags_reach_the_run(tmp_path: pathlib.Path) -> None:
    argv = ["train", "--env", ENV, "-f", str(tmp_path / "logs"), "-n", "128", "--eval-freq", "off"]
    argv += ["-params", "n_steps:64", "gamma:0.95", "--env-kwargs", "reset_noise_scale:0.2"]
    argv += ["--tensorboard-log", str(tmp_path / "tb"), "--no-progress-bar"]
    assert main(argv) == 0
    (run,) = (tmp_path / "logs").iterdir()
    config = yaml.safe_load((run / "config.yml").read_text())
    assert config["overrides"] == {"n_steps": 64, "gamma": 0.95} and config["n_timesteps"] == 128
    assert config["env_kwargs"] == {"reset_noise_scale": 0.2}
    assert config["hyperparams"]["gamma"] == 0.95 and PPO.load(run / "model.zip").gamma == 0.95
    assert list((tmp_path / "tb" / run.name).glob("events.out.tfevents*"))
    assert main([*argv[:3], "-params", "gamma=0.9"]) == 2  # rl-zoo3 writes key:value


def test_version(capsys: pytest.CaptureFixture) -> None:
    import roboppo

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"roboppo-zoo {roboppo.__version__}"


def test_export_writes_a_file_that_acts_like_the_run_model(run_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    import torch as th

    out = tmp_path / "pendulum.pt"
    assert main(["export", "--run", str(run_dir), "--format", "torchscript", "--out", str(out)]) == 0
    observations = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    with th.no_grad():
        actions = th.jit.load(str(out))(th.as_tensor(observations)).numpy()
    expected, _ = PPO.load(run_dir / "model.zip").predict(observations, deterministic=True)
    np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-5)


def test_the_console_script_exits_with_every_file_complete(tmp_path: pathlib.Path) -> None:
    """``entry_point`` freezes the garbage collector before exiting: nothing the run wrote may be cut short."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    script = "import sys; from roboppo.cli import entry_point; sys.argv[0] = 'roboppo-zoo'; entry_point()"
    command = [sys.executable, "-c", script, "train", "--env", ENV, "--log-folder", str(tmp_path), *TINY]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = tmp_path.iterdir()
    rows = (run_dir / "progress.csv").read_text().strip().splitlines()
    header = rows[0].split(",")
    assert int(float(rows[-1].split(",")[header.index("time/total_timesteps")])) == 1024
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert events.Scalars("eval/mean_reward")[-1].step == 1024
    assert PPO.load(run_dir / "model.zip").num_timesteps == 1024


def test_a_benchmark_continues_an_unfinished_run_from_its_checkpoint_to_the_same_model(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["benchmark", "--envs", ENV, "--seeds", "1", "--jobs", "1", "--no-sb3", "--n-timesteps", "1024"]
    argv += ["--eval-freq", "512", "--eval-episodes", "2", "--final-episodes", "2"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 0
    (run,) = (tmp_path / "cut" / "runs" / ENV / "seed0").iterdir()
    for path in [run / "model.zip", run / "model.state.npz", *(run / "checkpoints").glob("ppo_[57]*_steps.*")]:
        path.unlink()  # as if killed after the checkpoint at 256 steps (every budget // 4)
    shutil.rmtree(tmp_path / "cut" / "rows")  # a killed run has kept no row
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["ppo_256_steps.state.npz", "ppo_256_steps.zip"]
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 0
    (whole,) = (tmp_path / "whole" / "runs" / ENV / "seed0").iterdir()
    first, second = PPO.load(whole / "model.zip"), PPO.load(run / "model.zip")
    for x, y in zip(first.policy.state_dict().values(), second.policy.state_dict().values(), strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_a_benchmark_of_an_env_without_a_reward_threshold_says_so() -> None:
    from roboppo.cli.benchmark import ROBOPPO, Row, report

    text = report([Row("roboppo/Walker2d-v5", ROBOPPO, 0, 1000, 5.0, 1234.5, None, 50, 2)])
    assert "targets: roboppo/Walker2d-v5 none (no reward threshold)" in text
    assert "| roboppo/Walker2d-v5 | roboppo | 0 | 1,234.5 | 2 of 50 | - | - | 5 s |" in text


@pytest.mark.parametrize(("budget", "evaluated_at"), [(128, [128]), (256, [256]), (384, [256, 384])])
def test_every_run_ends_evaluated(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], budget: int, evaluated_at: list[int]
) -> None:
    """Shorter than, equal to, longer than one evaluation period: the final model's evaluation is recorded once."""
    argv = ["train", "--env", ENV, "--log-folder", str(tmp_path), "--n-timesteps", str(budget), "--eval-freq", "256"]
    argv += ["--eval-episodes", "2", "-p", "n_steps=64", "--n-envs", "2", "--save-freq", "off", "--no-progress-bar"]
    assert main(argv) == 0
    (run,) = tmp_path.iterdir()
    with np.load(run / "evaluations.npz") as history:
        assert history["timesteps"].tolist() == evaluated_at
        final = history["results"][-1]
    assert (run / "best_model.zip").is_file()
    out = capsys.readouterr().out
    assert f"final evaluation: {final.mean():.1f} ± {final.std():.1f} over 2" in out
    listed = re.search(r"run folder: +\S+ +\((.*)\)", out)
    assert (
        listed is not None and listed.group(1) == "model.zip, best_model.zip, evaluations.npz, config.yml, progress.csv"
    )


def test_an_interrupted_run_ends_evaluated(tmp_path: pathlib.Path) -> None:
    """Ctrl-C between two evaluations: the model where it stopped is evaluated and recorded."""
    flags = ["--env", ENV, "--n-timesteps", "1000000", "--eval-freq", "100000", "--eval-episodes", "2"]
    output = train_until_interrupted(tmp_path, *flags, "--no-progress-bar")
    (run,) = tmp_path.iterdir()
    steps = PPO.load(run / "model.zip").num_timesteps
    with np.load(run / "evaluations.npz") as history:
        assert history["timesteps"].tolist() == [steps] and steps < 100_000
    assert (run / "best_model.zip").is_file() and "best_model.zip" in output


def test_a_benchmark_keeps_an_unfinished_run_it_cannot_continue(tmp_path: pathlib.Path) -> None:
    """No training state to continue from exactly: the run is set aside (not deleted) and the seed trains again."""
    argv = ["benchmark", "--envs", ENV, "--seeds", "1", "--jobs", "1", "--no-sb3", "--n-timesteps", "512"]
    argv += ["--eval-freq", "256", "--eval-episodes", "2", "--final-episodes", "2", "--out", str(tmp_path)]
    assert main(argv) == 0
    (run,) = (tmp_path / "runs" / ENV / "seed0").iterdir()
    for path in [run / "model.zip", *run.rglob("*.state.npz")]:
        path.unlink()  # as if killed before its first checkpoint with a training state
    shutil.rmtree(tmp_path / "rows")
    left = sorted(p.relative_to(run) for p in run.rglob("*"))
    assert main(argv) == 0
    kept = tmp_path / "runs" / ENV / "seed0" / "unfinished" / run.name
    assert sorted(p.relative_to(kept) for p in kept.rglob("*")) == left
    (again,) = [p for p in (tmp_path / "runs" / ENV / "seed0").iterdir() if p.name != "unfinished"]
    assert PPO.load(again / "model.zip").num_timesteps == 512
