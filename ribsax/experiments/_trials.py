"""Replications of one config as vmapped trials (:func:`ribsax.run_trials`),
written as run directories that ``ribsax plot`` reads like :class:`Experiment`'s."""

from __future__ import annotations

import copy
import functools
import math
import time
from pathlib import Path

import jax

from ribsax.archives._archive_stats import stats_metrics
from ribsax.distributed import shard_task
from ribsax.experiments._components import build_scheduler, build_task, jacobian_samples
from ribsax.experiments._experiment import (
    _iteration_keys,
    _stats_row,
    _uses_dqd,
    evaluate_task,
    evaluate_task_dqd,
    evaluations_per_iteration,
    fused_can_start,
)
from ribsax.experiments._run_directory import RunDirectory
from ribsax.functional import LoopPlan, as_evaluation_functions
from ribsax.schedulers import run_trials
from ribsax.schedulers._ask_tell_loop import ask_tell_iteration

__all__ = ["run_config_trials"]


def _fusable(scheduler, task) -> bool:
    """Whether the fused loop can run ``scheduler`` on ``task``."""
    try:
        LoopPlan(scheduler, as_evaluation_functions(task))
    except (ValueError, TypeError):
        return False
    return True


def _host_start(scheduler, task, seed, iterations) -> list:
    """Runs the iterations that a fused run of :class:`Experiment` runs through
    ask/tell before its first fused chunk (while :func:`fused_can_start` is False,
    e.g. to evaluate ``initial_solutions``), with its keys. Returns one
    ``(evaluations, metrics)`` pair per iteration run."""
    evaluate = functools.partial(evaluate_task, task)
    evaluate_dqd = functools.partial(evaluate_task_dqd, task)
    base_key = jax.random.key(int(seed))
    dqd = _uses_dqd(scheduler)
    done = []
    while len(done) < iterations and not fused_can_start(scheduler, task):
        key, dqd_key = _iteration_keys(base_key, len(done) + 1)
        _, evaluations = ask_tell_iteration(
            scheduler, evaluate, key, evaluate_dqd if dqd else None, dqd_key
        )
        done.append((evaluations, stats_metrics(scheduler.result_archive.stats)))
    return done


def run_config_trials(configs, logdirs, *, vectorize=True):
    """Runs configs that differ only in their seed as trials of
    :func:`ribsax.run_trials`, and writes one run directory per config.

    Each trial equals the fused (and the ask/tell) run of its config: the same
    scheduler from the same seed, the same evaluation keys, up to floating-point
    reassociation by the compiler. Iterations that the fused run begins with
    through ask/tell (emitters that first return their ``initial_solutions``) run
    so for each trial too, before the trials' fused loop. Each run directory
    receives ``config.yaml``, ``run.json``, ``run.log``, ``metrics.csv`` /
    ``metrics.json`` (rows every
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
    from omegaconf import OmegaConf

    first = configs[0]
    if first.evaluator is not None:
        return None
    if first.dtype.value == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    task = build_task(first)
    if first.shard:
        task = shard_task(task)
    probe = build_scheduler(first, task)
    per_iteration = evaluations_per_iteration(probe, jacobian_samples(first))
    budget = first.budget
    iterations = (
        int(budget.iterations)
        if budget.iterations is not None
        else math.ceil(budget.evaluations / per_iteration)
    )
    # Iterations that each trial runs through ask/tell first, as Experiment's
    # fused loop does (the emitters' initial solutions); the trials continue
    # from there, fused.
    lead = len(_host_start(probe, task, int(first.seed), iterations))
    if lead >= iterations or not _fusable(probe, task):
        return None
    by_seed = {int(cfg.seed): cfg for cfg in configs}
    seeds = [int(cfg.seed) for cfg in configs]
    metrics_every = int(first.logging.metrics_every)
    started = {}

    def make_scheduler(seed):
        scheduler = build_scheduler(by_seed[seed], task)
        begin = time.perf_counter()
        started[seed] = (_host_start(scheduler, task, seed, lead), time.perf_counter() - begin)
        return scheduler

    # Every row (metrics_every=1): the config's period counts the iterations
    # from the first, ask/tell ones included.
    try:
        result = run_trials(
            make_scheduler, task, iterations - lead, seeds, metrics_every=1, vectorize=vectorize
        )
    except ValueError as err:
        if not vectorize or "another configuration" not in str(err):
            raise
        vectorize = False
        result = run_trials(
            make_scheduler, task, iterations - lead, seeds, metrics_every=1, vectorize=False
        )
    host_time = sum(seconds for _, seconds in started.values())

    all_rows = []
    for trial, (cfg, logdir) in enumerate(zip(configs, logdirs)):
        cfg = copy.deepcopy(cfg)
        OmegaConf.update(cfg, "logdir", str(logdir))
        directory = RunDirectory(Path(logdir))
        try:
            directory.write_config(OmegaConf.to_yaml(cfg), int(cfg.seed))
            directory.logger.info(
                "trial %d of %d (seed %d) of run_trials (%s), %d iterations",
                trial + 1,
                len(configs),
                int(cfg.seed),
                "vmapped" if vectorize else "one after the other",
                iterations,
            )
            rows, evaluations = [], 0
            for iteration, (count, metrics) in enumerate(started[int(cfg.seed)][0], start=1):
                evaluations += count
                if iteration % metrics_every == 0:
                    rows.append(
                        _stats_row(iteration, evaluations, metrics, host_time * iteration / lead)
                    )
            table = result.metrics[result.metrics["trial"] == trial]
            for row in table.to_dict(orient="records"):
                iteration = int(row["iteration"]) + lead
                if iteration % metrics_every and iteration != iterations:
                    continue
                rows.append(
                    _stats_row(
                        iteration,
                        evaluations + row["iteration"] * per_iteration,
                        row,
                        host_time + result.run_time * row["iteration"] / (iterations - lead),
                    )
                )
            directory.write_metrics(rows)
            archive = result.schedulers[trial].result_archive
            directory.write_snapshot(archive, iterations, cfg.logging.heatmaps)
            if cfg.logging.plots:
                directory.write_metric_plots(rows)
            last = rows[-1]
            directory.logger.info(
                "done: %d iterations, %d evaluations, qd_score %.6g, coverage %.4f "
                "(all trials: %.2f s running, %.2f s compiling)",
                iterations,
                last["evaluations"],
                last["qd_score"],
                last["coverage"],
                result.run_time,
                result.compile_time,
            )
        finally:
            directory.close()
        all_rows.append(rows)
    return all_rows
