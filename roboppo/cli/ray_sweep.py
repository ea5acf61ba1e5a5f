"""``--ray-address``: a benchmark's (env, seed) runs, or ``tune``'s workers, as Ray tasks.

Each task runs the same function a local ``--jobs`` worker runs (:func:`roboppo.cli.benchmark.run_roboppo`),
declaring ``--ray-cpus`` CPUs and ``--ray-gpus`` GPUs. Run folders and kept rows land under ``--out``
as in a local benchmark: on a cluster, ``--out`` must be storage every node shares (the driver also
writes each row it receives, so the table is complete on the driver's side either way). A task
whose worker dies is retried by Ray; the retry finds the run's last checkpoint and continues it
exactly, as a re-run of the same command does, so no step or evaluation is counted twice.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
from collections.abc import Callable, Iterable
from typing import Any

from roboppo.common.errors import UserInputError

RETRIES = 3  # times Ray runs a task again after its worker died


def connect(address: str) -> Any:
    """``ray`` connected to ``address``: ``auto``, ``ray://host:port``, ``host:port``, or ``local`` (start one)."""
    try:
        import ray
    except ImportError as error:
        raise UserInputError("--ray-address needs Ray: pip install 'roboppo[ray]' (or pip install ray)") from error
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, log_to_driver=False, logging_level=logging.WARNING)
        resources = ray.cluster_resources()
        print(f"Ray at {address}: {resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs", flush=True)
    return ray


def run_task(runner: Callable[..., Any], args: argparse.Namespace, env_id: str, seed: int) -> Any:
    """One run on a Ray worker, its training output kept out of the driver's terminal."""
    with contextlib.redirect_stdout(io.StringIO()):
        return runner(args, env_id, seed)


def sweep(
    args: argparse.Namespace,
    runner: Callable[..., Any],
    runs: Iterable[tuple[str, int]],
    finished: Callable[[Any], None],
) -> None:
    """``runner`` for every (env, seed) in ``runs`` as Ray tasks; ``finished(row)`` in the driver as each ends.

    Ctrl-C cancels the tasks still running or queued (their runs continue from their checkpoints
    when the same command is run again) and says which runs finished.
    """
    from tqdm import tqdm

    ray = connect(args.ray_address)
    worker_args = argparse.Namespace(**{**vars(args), "out": args.out.resolve()})  # workers may start elsewhere
    task = ray.remote(num_cpus=args.ray_cpus, num_gpus=args.ray_gpus, max_retries=RETRIES)(run_task)
    pending = {task.remote(runner, worker_args, env_id, seed): (env_id, seed) for env_id, seed in runs}
    done: list[tuple[str, int]] = []
    with tqdm(total=len(pending), desc="runs", unit="run", disable=None) as bar:
        try:
            while pending:
                (ready,), _ = ray.wait(list(pending), num_returns=1)
                done.append(pending.pop(ready))
                finished(ray.get(ready))
                bar.update()
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            names = ", ".join(f"{env_id} seed {seed}" for env_id, seed in done) or "none"
            print(f"\ncancelled {len(pending)} runs; finished: {names}", flush=True)
            raise


def tune_worker(tune: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """One ``roboppo-zoo tune`` worker on a Ray worker (its trials in the shared study), output kept there."""
    with contextlib.redirect_stdout(io.StringIO()):
        return tune(args)


def tune_workers(
    args: argparse.Namespace, tune: Callable[[argparse.Namespace], int], worker_args: argparse.Namespace
) -> None:
    """``--ray-workers`` tuning workers as Ray tasks, each running ``tune(worker_args)`` against the one storage.

    A worker that dies is started again by Ray; the trial it was running stops beating, and the next
    worker to ask for a trial fails it and runs its parameters again (Optuna's heartbeat retry).
    Ctrl-C cancels the workers.
    """
    from tqdm import tqdm

    ray = connect(args.ray_address)
    task = ray.remote(num_cpus=args.ray_cpus, num_gpus=args.ray_gpus, max_retries=RETRIES)(tune_worker)
    pending = [task.remote(tune, worker_args) for _ in range(args.ray_workers)]
    failures = []
    with tqdm(total=len(pending), desc="tuning workers", unit="worker", disable=None) as bar:
        try:
            while pending:
                (ready,), pending = ray.wait(pending, num_returns=1)
                try:
                    ray.get(ready)
                except ray.exceptions.RayTaskError as error:  # the others go on; the study keeps its trials
                    failures.append(error)
                    print(f"a tuning worker stopped with an error: {error.cause!r}", flush=True)
                bar.update()
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            print(f"\ncancelled {len(pending)} tuning workers", flush=True)
            raise
    if failures:
        raise failures[0].cause
