"""Metrics of one run directory: :func:`run_summary` (``ribsax analyze``), the
QD-score AUC and the robustness of a final archive's elites."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ribsax._checkpointer import Checkpointer
from ribsax.experiments._components import build_task
from ribsax.experiments._config import is_rl_config, load_config

__all__ = [
    "qd_score_auc",
    "elite_robustness",
    "final_archive",
    "run_summary",
    "read_run_metrics",
    "SUMMARY_FILE",
]

#: File that ``ribsax analyze`` writes into each run directory (the summary as
#: JSON); ``ribsax plot`` reads the robustness from it.
SUMMARY_FILE = "summary.json"

_SNAPSHOT = re.compile(r"archive_(\d+)\.parquet")


def qd_score_auc(metrics, column="qd_score") -> float:
    """Area under the QD-score curve over evaluations (dqd-rl's "QD score AUC").

    dqd-rl sums, over generations, the QD score after the generation times the
    evaluations of a generation. Here each recorded row ``k`` of ``metrics``
    contributes its QD score times the evaluations since the previous row
    (``evaluations[k] - evaluations[k - 1]``, the first row counting from 0): with
    metrics recorded every iteration (``logging.metrics_every: 1``) this is
    dqd-rl's sum exactly, also when iterations evaluate different numbers of
    solutions; with sparser records, each QD score stands for all the evaluations
    since the previous record. The unit is QD score × evaluations, so AUCs compare
    runs of the same evaluation budget.

    Args:
        metrics: A run's metrics (``metrics.csv``, :attr:`Experiment.metrics`, a
            ``RunResult``'s ``metrics``) with ``evaluations`` and ``column``.
        column: The curve to integrate (e.g. ``"norm_qd_score"``).

    Returns:
        The area (0.0 for no rows).

    Raises:
        KeyError: ``evaluations`` or ``column`` is missing.
    """
    for name in ("evaluations", column):
        if name not in metrics:
            raise KeyError(f"qd_score_auc: the metrics have no {name!r} column")
    evaluations = np.asarray(metrics["evaluations"], dtype=np.float64)
    values = np.asarray(metrics[column], dtype=np.float64)
    widths = np.diff(evaluations, prepend=0.0)
    return float(np.sum(values * widths))


def elite_robustness(task, solutions, objective, *, episodes=10, seed=0):
    """Robustness of each elite: mean of ``episodes`` re-evaluations minus its
    archived objective (dqd-rl's per-elite robustness; their paper reports its
    mean over the final archive, "mean elite robustness").

    All elites and episodes are evaluated in one jitted call: ``task.evaluate`` is
    vmapped over the episodes, and episode ``e`` evaluates every elite with the key
    ``jax.random.fold_in(key, e)``, where ``key`` is ``jax.random.key(seed)`` (or
    ``seed`` itself when it is a PRNG key). A task with random initial states (a
    brax task created with ``deterministic=False``) thus starts each elite of
    each episode from its own state; a deterministic task gives 0 up to rounding.

    Args:
        task: A :class:`ribsax.tasks.Task`.
        solutions: ``(n, solution_dim)`` elites.
        objective: ``(n,)`` their archived objectives.
        episodes: Re-evaluations per elite (dqd-rl: 10).
        seed: Integer seed or PRNG key of the re-evaluations.

    Returns:
        ``(n,)`` float64 NumPy array, mean re-evaluated objective minus archived
        objective.

    Raises:
        ValueError: ``episodes`` is below 1, or the shapes do not match.
    """
    if int(episodes) < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    solutions = jnp.asarray(solutions)
    objective = np.asarray(objective, dtype=np.float64)
    if solutions.ndim != 2 or objective.shape != (solutions.shape[0],):
        raise ValueError(
            f"expected solutions of shape (n, solution_dim) and "
            f"objective of shape (n,), got {solutions.shape} and "
            f"{objective.shape}"
        )
    if solutions.shape[0] == 0:
        return np.empty(0, np.float64)
    key = (
        seed
        if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key)
        else jax.random.key(int(seed))
    )
    keys = jax.vmap(lambda e: jax.random.fold_in(key, e))(jnp.arange(int(episodes)))

    @jax.jit
    def objectives(solutions, keys):
        return jax.vmap(lambda k: task.evaluate(solutions, k)[0])(keys)

    returns = np.asarray(objectives(solutions, keys), np.float64)
    return returns.mean(axis=0) - objective


def _run_dir(logdir) -> Path:
    path = Path(logdir)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a directory")
    if not (path / "config.yaml").is_file():
        raise FileNotFoundError(f"{path} holds no config.yaml; is it a run directory?")
    return path


def read_run_metrics(logdir) -> pd.DataFrame:
    """The metrics of the run directory ``logdir`` (``metrics.csv``).

    Raises:
        FileNotFoundError: ``logdir`` is missing, is no run directory, or has no
            ``metrics.csv``.
        ValueError: ``metrics.csv`` has no rows yet.
    """
    path = _run_dir(logdir)
    if not (path / "metrics.csv").is_file():
        raise FileNotFoundError(
            f"{path} holds no metrics.csv (the run has not recorded any iteration)"
        )
    metrics = pd.read_csv(path / "metrics.csv")
    if metrics.empty:
        raise ValueError(
            f"{path / 'metrics.csv'} has no rows (the run has not recorded any iteration)"
        )
    return metrics


def _checkpoint_steps(directory: Path) -> list:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.is_dir() and p.name.isdigit())


def final_archive(logdir):
    """The latest archive of a run directory, as ``(iteration, data)``.

    ``data`` is the result archive's ``data(return_type="pandas")``
    (``solution_*``, ``objective``, ``measures_*``, ``index``, ...) from the
    snapshot of the highest iteration (``snapshots/archive_<iteration>.parquet``),
    or from the latest checkpoint when that one is more recent (a run stopped
    between snapshots); a checkpoint that cannot be read is passed over with a
    warning for the snapshot.

    Raises:
        FileNotFoundError: ``logdir`` is no run directory, or has neither a
            snapshot nor a readable checkpoint.
    """
    path = _run_dir(logdir)
    snapshots = sorted(
        (int(m.group(1)), p)
        for p in (path / "snapshots").glob("archive_*.parquet")
        if (m := _SNAPSHOT.fullmatch(p.name))
    )
    snapshot_iteration = snapshots[-1][0] if snapshots else -1
    steps = _checkpoint_steps(path / "checkpoints")
    if steps and steps[-1] > snapshot_iteration:
        checkpointer = Checkpointer(path / "checkpoints")
        try:
            _, objects, meta = checkpointer.restore()
            archive = objects["scheduler"].result_archive
            return int(meta["iteration"]), archive.data(return_type="pandas")
        except Exception as err:
            if not snapshots:
                raise FileNotFoundError(
                    f"{path}: no archive snapshot, and its latest checkpoint cannot "
                    f"be read ({type(err).__name__}: {err})"
                ) from err
            warnings.warn(
                f"{path}: its latest checkpoint cannot be read "
                f"({type(err).__name__}: {err}); using the snapshot of "
                f"iteration {snapshot_iteration}"
            )
        finally:
            checkpointer.close()
    if not snapshots:
        raise FileNotFoundError(
            f"{path} holds no archive snapshot (snapshots/archive_*.parquet) and no checkpoint"
        )
    return snapshot_iteration, pd.read_parquet(snapshots[-1][1])


def _robustness_task(cfg):
    """The config's task for re-evaluation: brax tasks with random initial states
    and without transitions."""
    from omegaconf import OmegaConf

    if cfg.task.get("name") == "brax":
        cfg = copy.deepcopy(cfg)
        OmegaConf.update(cfg, "task.deterministic", False, force_add=True)
        OmegaConf.update(cfg, "task.return_transitions", False, force_add=True)
    return build_task(cfg)


def run_summary(logdir, *, robustness_episodes=10, seed=0, task=None, write=False) -> dict:
    """Final metrics of the run in ``logdir``, from what the run directory holds.

    From ``metrics.csv`` (its last row, i.e. the end of the run or the last
    iteration recorded so far): ``qd_score`` (sum of ``objective -
    qd_score_offset`` over the elites, with the config's offset: the task's
    unless ``archive.qd_score_offset`` is set), ``norm_qd_score`` (the archive's
    normalised QD score, ``qd_score / cells``, as in pyribs; dqd-rl's figures
    also divide by the objective range, ``max_objective - offset``, for a value
    in [0, 1]), ``coverage``, ``obj_max`` (best performance), ``obj_mean``,
    ``num_elites``, ``iteration``, ``evaluations``, ``elapsed_s``, and
    ``qd_score_auc`` (:func:`qd_score_auc` of the whole table).

    With ``robustness_episodes`` above 0, also ``mean_robustness``: the mean over
    the elites of the latest archive (:func:`final_archive`) of
    :func:`elite_robustness`, re-evaluating each elite ``robustness_episodes``
    times with the task rebuilt from ``config.yaml``; brax tasks are rebuilt with
    ``deterministic=False``, so each re-evaluation starts from a random initial
    state (dqd-rl's protocol), other tasks as configured. NaN for an empty
    archive. ``robustness_episodes``, ``robustness_seed`` and
    ``archive_iteration`` (the iteration of that archive) come with it.

    Args:
        logdir: A run directory of ``ribsax run`` (or
            :class:`~ribsax.experiments.Experiment`, ``ribsax batch-sizes``).
        robustness_episodes: Re-evaluations per elite (dqd-rl: 10); 0 skips the
            robustness.
        seed: Seed of the re-evaluations (see :func:`elite_robustness`).
        task: Task to re-evaluate with instead of the config's (e.g. a noisy
            variant of it).
        write: Also write the summary as JSON to ``logdir/summary.json``
            (``ribsax plot`` then adds ``mean_robustness`` to its table).

    Returns:
        A dict: ``path``, ``name``, ``seed`` and the values above (plain Python
        numbers).

    Raises:
        FileNotFoundError: ``logdir`` does not exist or holds no ``config.yaml`` or
            ``metrics.csv``; or, for the robustness, neither an archive snapshot
            nor a readable checkpoint.
        ValueError: ``metrics.csv`` has no rows, ``logdir`` is an RL run, or
            ``robustness_episodes`` is negative.
    """
    path = _run_dir(logdir)
    if int(robustness_episodes) < 0:
        raise ValueError(f"robustness_episodes must be at least 0, got {robustness_episodes}")
    cfg = load_config(path / "config.yaml")
    if is_rl_config(cfg):
        raise ValueError(
            f"{path} is an RL run (its config has an rl section); "
            "its learning curves are in its run directory"
        )
    metrics = read_run_metrics(path)
    last = metrics.iloc[-1]
    summary = {
        "path": str(path),
        "name": str(cfg.name),
        "seed": int(cfg.seed),
        "iteration": int(last["iteration"]),
        "evaluations": int(last["evaluations"]),
    }
    for column in ("qd_score", "norm_qd_score", "coverage", "obj_max", "obj_mean"):
        summary[column] = float(last[column])
    summary["num_elites"] = int(last["num_elites"])
    summary["qd_score_auc"] = qd_score_auc(metrics)
    summary["elapsed_s"] = float(last["elapsed_s"])
    if int(robustness_episodes) > 0:
        iteration, data = final_archive(path)
        if cfg.dtype.value == "float64" and not jax.config.jax_enable_x64:
            jax.config.update("jax_enable_x64", True)
        if task is None:
            task = _robustness_task(cfg)
        columns = [c for c in data.columns if c.startswith("solution_")]
        columns.sort(key=lambda c: int(c.split("_")[1]))
        robustness = elite_robustness(
            task,
            data[columns].to_numpy(np.dtype(cfg.dtype.value)),
            data["objective"].to_numpy(),
            episodes=robustness_episodes,
            seed=seed,
        )
        summary["mean_robustness"] = float(np.mean(robustness)) if len(robustness) else math.nan
        summary["robustness_episodes"] = int(robustness_episodes)
        summary["robustness_seed"] = None if isinstance(seed, jax.Array) else int(seed)
        summary["archive_iteration"] = int(iteration)
    if write:
        text = (
            json.dumps(
                {
                    k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in summary.items()
                },
                indent=2,
            )
            + "\n"
        )
        tmp = path / f".{SUMMARY_FILE}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path / SUMMARY_FILE)
    return summary
