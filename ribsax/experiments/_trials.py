"""Replications of one config as vmapped trials (:func:`ribsax.run_trials`),
written as run directories that ``ribsax plot`` reads like :class:`Experiment`'s."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import jax

from ribsax.distributed import shard_task
from ribsax.experiments._components import (build_scheduler, build_task,
                                            jacobian_samples)
from ribsax.experiments._experiment import _stats_row, evaluations_per_iteration
from ribsax.experiments._run_directory import RunDirectory
from ribsax.functional import LoopPlan, as_evaluation_functions
from ribsax.schedulers import run_trials

__all__ = ["run_config_trials"]


def _fusable(scheduler, task) -> bool:
    """Whether the fused loop can run ``scheduler`` on ``task``."""
    try:
        LoopPlan(scheduler, as_evaluation_functions(task))
    except (ValueError, TypeError):
        return False
    return True


def run_config_trials(configs, logdirs, *, vectorize=True):
    """Runs configs that differ only in their seed as trials of
    :func:`ribsax.run_trials`, and writes one run directory per config.

    Each trial equals the fused (and the ask/tell) run of its config: the same
    scheduler from the same seed, the same evaluation keys, up to floating-point
    reassociation by the compiler. Each run directory receives ``config.yaml``,
    ``run.json``, ``run.log``, ``metrics.csv`` / ``metrics.json`` (rows every
    ``logging.metrics_every`` iterations and at the end), the final archive
    snapshot (and heatmap) and ``plots/metrics.png``; no checkpoints and no
    archive history. Since the trials run together, the ``elapsed_s`` of every
    run is the wall time of the whole call (compilation excluded), interpolated
    linearly over the iterations.

    Args:
        configs: Loaded configs (:func:`~ribsax.experiments.load_config`), equal
            but for ``seed``.
        logdirs: One new run directory per config.
        vectorize: One ``jax.vmap``-ed call for all trials (default); trials whose
            static configuration depends on the seed (CVT archives) then run one
            after the other through :func:`ribsax.run_trials` instead, as with
            False.

    Returns:
        The metrics rows (lists of dicts) of each config, or None when the configs
        cannot run as trials (a Python ``evaluator``, or a component that the
        fused loop cannot run), in which case nothing is written. With
        ``shard: true`` the trials evaluate their batches over ``jax.devices()``
        (:func:`ribsax.distributed.shard_task`).
    """
    from omegaconf import OmegaConf  # pylint: disable=import-outside-toplevel
    first = configs[0]
    if first.evaluator is not None:
        return None
    if first.dtype.value == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    task = build_task(first)
    if first.shard:
        task = shard_task(task)
    probe = build_scheduler(first, task)
    if not _fusable(probe, task):
        return None
    per_iteration = evaluations_per_iteration(probe, jacobian_samples(first))
    budget = first.budget
    iterations = (int(budget.iterations) if budget.iterations is not None
                  else math.ceil(budget.evaluations / per_iteration))
    by_seed = {int(cfg.seed): cfg for cfg in configs}
    seeds = [int(cfg.seed) for cfg in configs]
    metrics_every = int(first.logging.metrics_every)

    def make_scheduler(seed):
        return build_scheduler(by_seed[seed], task)

    try:
        result = run_trials(make_scheduler, task, iterations, seeds,
                            metrics_every=metrics_every, vectorize=vectorize)
    except ValueError as err:
        if not vectorize or "another configuration" not in str(err):
            raise
        vectorize = False
        result = run_trials(make_scheduler, task, iterations, seeds,
                            metrics_every=metrics_every, vectorize=False)

    all_rows = []
    for trial, (cfg, logdir) in enumerate(zip(configs, logdirs)):
        cfg = copy.deepcopy(cfg)
        OmegaConf.update(cfg, "logdir", str(logdir))
        directory = RunDirectory(Path(logdir))
        try:
            directory.write_config(OmegaConf.to_yaml(cfg), int(cfg.seed))
            directory.logger.info(
                "trial %d of %d (seed %d) of run_trials (%s), %d iterations",
                trial + 1, len(configs), int(cfg.seed),
                "vmapped" if vectorize else "one after the other", iterations)
            table = result.metrics[result.metrics["trial"] == trial]
            rows = [_stats_row(row["iteration"], row["iteration"] * per_iteration,
                               row,
                               result.run_time * row["iteration"] / iterations)
                    for row in table.to_dict(orient="records")]
            directory.write_metrics(rows)
            archive = result.schedulers[trial].result_archive
            directory.write_snapshot(archive, iterations, cfg.logging.heatmaps)
            if cfg.logging.plots:
                directory.write_metric_plots(rows)
            last = rows[-1]
            directory.logger.info(
                "done: %d iterations, %d evaluations, qd_score %.6g, coverage %.4f "
                "(all trials: %.2f s running, %.2f s compiling)", iterations,
                last["evaluations"], last["qd_score"], last["coverage"],
                result.run_time, result.compile_time)
        finally:
            directory.close()
        all_rows.append(rows)
    return all_rows
