"""SB3's ``EvalCallback`` with an atomic, resumable ``evaluations.npz``."""

from __future__ import annotations

import contextlib
import pathlib
import zipfile
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.callbacks import EvalCallback as SB3EvalCallback

from roboppo.common.errors import UserInputError
from roboppo.common.files import atomic_target


class EvaluationHistoryError(UserInputError, ValueError):
    """An ``evaluations.npz`` that cannot be read."""


class EvalCallback(SB3EvalCallback):
    """SB3's ``EvalCallback``, same arguments and behaviour, except that ``evaluations.npz`` is
    written through :func:`~roboppo.common.files.atomic_target` (a kill mid-write leaves the
    previous file intact), an earlier history can be continued (:meth:`continue_history`), and
    roboppo's PPO is evaluated (and its best model saved) as the pair of weights and observation
    statistics that was trained (:meth:`roboppo.ppo.PPO.trained_pair`), the pair a saved model holds.
    """

    def _on_step(self) -> bool:
        evaluating = self.eval_freq > 0 and self.n_calls % self.eval_freq == 0
        trained_pair = getattr(self.model, "trained_pair", None)
        with trained_pair() if evaluating and trained_pair is not None else contextlib.nullcontext():
            return self._evaluate()

    def _on_training_end(self) -> None:
        self.evaluate_final()

    def evaluate_final(self) -> None:
        """Evaluate the model where training stopped, unless the last periodic evaluation was at that step.

        So every run ends evaluated, whatever its length (shorter than one period, between two, or
        stopped by Ctrl-C): ``evaluations.npz`` ends with the final model's evaluation and
        ``best_model.zip`` exists. A run without an eval env set up does nothing here.
        """
        if self.evaluations_timesteps[-1:] == [self.num_timesteps] or self.eval_freq <= 0:
            return
        period = self.eval_freq
        self.eval_freq = 1  # the next _on_step evaluates
        try:
            self._on_step()
        finally:
            self.eval_freq = period

    def _evaluate(self) -> bool:
        if self.log_path is None:
            return super()._on_step()
        final_path = self.log_path
        with atomic_target(pathlib.Path(final_path + ".npz")) as partial:
            self.log_path = str(partial)  # ends in .npz, so np.savez writes exactly there
            try:
                return super()._on_step()
            finally:
                self.log_path = final_path

    def continue_history(self, history: dict[str, np.ndarray], up_to_steps: int) -> tuple[int, bool]:
        """Take over the evaluations made up to ``up_to_steps`` env steps.

        ``best_mean_reward`` becomes the best of the kept evaluations, so ``best_model.zip`` is only
        replaced by an evaluation that beats them. Returns how many later evaluations were dropped
        and whether the best evaluation was among them (then the saved best model is from a step
        the run no longer has).
        """
        keep = np.asarray(history["timesteps"]) <= up_to_steps
        means = np.asarray(history["results"]).mean(axis=1) if len(keep) else np.zeros(0)
        best_dropped = bool((~keep).any() and (not keep.any() or means[~keep].max() > means[keep].max()))
        self.evaluations_timesteps = [int(t) for t in np.asarray(history["timesteps"])[keep]]
        self.evaluations_results = [list(r) for r in np.asarray(history["results"])[keep]]
        self.evaluations_length = [list(n) for n in np.asarray(history["ep_lengths"])[keep]]
        if self.evaluations_results:
            self.best_mean_reward = float(np.max(np.mean(self.evaluations_results, axis=1)))
        return int(np.count_nonzero(~keep)), best_dropped


def read_evaluations(path: pathlib.Path) -> dict[str, Any]:
    """The arrays of an ``evaluations.npz``; :class:`EvaluationHistoryError` naming the file when it is damaged."""
    try:
        with np.load(path, allow_pickle=False) as history:
            arrays = {key: history[key] for key in ("timesteps", "results", "ep_lengths")}
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, EOFError) as error:
        raise EvaluationHistoryError(
            f"{path} is damaged ({type(error).__name__}: {error}). Delete it to continue without the evaluation "
            "history (the models and checkpoints are intact), or restore it from a copy."
        ) from error
    return arrays


class RandomizationLogger(BaseCallback):
    """Logs what domain randomization drew, at the end of each rollout: each option's mean and spread over the
    copies (``randomization/<option>_mean``, ``_std``), beside the training scalars (TensorBoard, progress.csv)."""

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        env = self.model.get_env()
        try:
            drawn = env.get_attr("randomization") if env is not None else []
        except AttributeError:  # an env without the kit (Brax, a user's)
            drawn = []
        if not drawn or not drawn[0]:
            return
        for key in drawn[0]:
            values = np.stack([np.asarray(copy[key], dtype=np.float64) for copy in drawn])
            self.logger.record(f"randomization/{key}_mean", float(values.mean()))
            self.logger.record(f"randomization/{key}_std", float(values.std()))
