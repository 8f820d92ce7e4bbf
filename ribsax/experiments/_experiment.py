"""Experiment: runs a config into a run directory, with checkpoints and resume."""

from __future__ import annotations

import copy
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pandas as pd

from ribsax._checkpointer import Checkpointer, UnreadableCheckpointError
from ribsax.archives._archive_stats import stats_metrics
from ribsax.distributed import shard_task
from ribsax.experiments._components import (
    build_evaluator,
    build_scheduler,
    build_task,
    jacobian_samples,
)
from ribsax.experiments._config import ConfigError, is_rl_config, load_config, to_container
from ribsax.experiments._run_directory import METRIC_COLUMNS, RunDirectory, default_run_name
from ribsax.functional import LoopPlan, as_evaluation_functions
from ribsax.schedulers._ask_tell_loop import ask_tell_iteration
from ribsax.schedulers._evaluation import has_dqd_phase
from ribsax.schedulers._scan import phase_key

__all__ = ["Experiment"]


def _stats_row(iteration, evaluations, metrics, elapsed_s) -> dict:
    """A metrics record: ``metrics`` maps the archive statistics to their values
    as a fused run records them (a row of ``RunResult.metrics``, or
    :func:`~ribsax.archives._archive_stats.stats_metrics` of an archive's
    ``stats``: NaN ``obj_max`` and ``obj_mean`` while the archive is empty)."""
    return {
        "iteration": int(iteration),
        "evaluations": int(evaluations),
        "qd_score": float(metrics["qd_score"]),
        "norm_qd_score": float(metrics["norm_qd_score"]),
        "coverage": float(metrics["coverage"]),
        "obj_max": float(metrics["obj_max"]),
        "obj_mean": float(metrics["obj_mean"]),
        "num_elites": int(metrics["num_elites"]),
        "elapsed_s": float(elapsed_s),
    }


def _crossed(period, before, after) -> bool:
    """Whether a multiple of ``period`` (None: never) lies in ``(before, after]``."""
    return bool(period) and after // period > before // period


def _uses_dqd(scheduler) -> bool:
    """Whether an emitter of ``scheduler`` has a DQD phase (``ask_dqd``)."""
    emitters = getattr(scheduler, "emitters", None)
    if emitters is None:  # BanditScheduler
        emitters = scheduler.emitter_pool
    return has_dqd_phase(emitters)


def fused_can_start(scheduler, task) -> bool:
    """False while the archive is empty and emitters with fused kernels cannot run
    them yet (``initial_solutions`` still to be returned, which happens on the
    host): a fused run then runs that iteration through ask/tell first. Configs
    that the fused loop cannot run at all still fail in :meth:`Scheduler.run
    <ribsax.schedulers.Scheduler.run>`."""
    emitters = getattr(scheduler, "emitters", None)
    if emitters is None:  # BanditScheduler
        emitters = scheduler.emitter_pool
    if not scheduler.archive.empty or any(
        getattr(emitter, "fusion_key", None) is None for emitter in emitters
    ):
        return True
    try:
        LoopPlan(scheduler, as_evaluation_functions(task))
    except ValueError:
        return False
    return True


def evaluate_task(task, solutions, key):
    """``((objective, measures), fields, extras)`` of ``solutions`` through the
    jitted ``task``, as :func:`ask_tell_iteration` takes them (the task's extras go
    to the emitters)."""
    # NumPy solutions go to the jitted task as they are (no staging copy).
    objective, measures, extras = task.jit_evaluate(solutions, key)
    return jax.device_get((objective, measures)), {}, extras


def evaluate_task_dqd(task, solutions, key):
    """``((objective, measures, jacobian), fields, extras)`` of the DQD phase's
    ``solutions`` through the jitted ``task``."""
    objective, measures, jacobian, extras = task.jit_evaluate_with_jacobian(solutions, key)
    return jax.device_get((objective, measures, jacobian)), {}, extras


def evaluations_per_iteration(scheduler, samples_per_dqd_row: int = 0) -> int:
    """Solutions evaluated by one iteration of ``scheduler`` (``ask_dqd`` and
    ``ask``), counted on a deep copy so ``scheduler`` is untouched; each
    ``ask_dqd`` solution also costs the ``samples_per_dqd_row`` evaluations its
    Jacobian makes (an ES Jacobian's samples), and each emitter written as an
    :class:`~ribsax.emitters.EmitterKernel` the ``evaluations_per_tell`` it
    declares."""
    probe = copy.deepcopy(scheduler)
    count = 0
    if _uses_dqd(probe):
        # The ask phase follows a told DQD phase: tell it zeros (on the copy).
        solutions = probe.ask_dqd()
        n, measure_dim = len(solutions), probe.archive.measure_dim
        probe.tell_dqd(
            np.zeros(n),
            np.zeros((n, measure_dim)),
            np.zeros((n, 1 + measure_dim, *np.shape(solutions)[1:])),
        )
        count = n * (1 + samples_per_dqd_row)
    # Evaluations the emitters make themselves (ES samples), per tell; a
    # bandit tells its active emitters only.
    if hasattr(probe, "emitter_pool"):
        emitters = [e for e, a in zip(probe.emitter_pool, probe.active) if a]
    else:
        emitters = probe.emitters
    count += sum(
        int(getattr(getattr(e, "kernel", None), "evaluations_per_tell", 0)) for e in emitters
    )
    return count + len(probe.ask())


@jax.jit
def _iteration_keys(key, iteration):
    """Evaluation keys of an ask/tell iteration, ``fold_in(fold_in(key, iteration),
    0)`` and ``(..., 1)`` for the DQD phase, in one dispatch (eager ``fold_in``
    calls cost more than the rest of a small iteration)."""
    key = jax.random.fold_in(key, iteration)
    return phase_key(key, False), phase_key(key, True)


class Experiment:
    """One run of an experiment config, written into a run directory.

    Building the task, archives, emitters and scheduler happens in the constructor,
    so a config whose values a constructor rejects fails before any iteration and
    before the run directory is created. :meth:`run` then runs the iterations:

    * ``loop: ask_tell``: ``ask_dqd -> evaluate -> tell_dqd`` (DQD emitters), then
      ``ask -> evaluate -> tell``, one Python iteration at a time. Iteration ``i``
      evaluates with the key ``fold_in(fold_in(key(seed), i), phase)`` (phase 0 for
      ``ask``, 1 for ``ask_dqd``), or with the Python ``evaluator`` when one is given
      (e.g. :class:`ribsax.distributed.DaskEvaluator`);
    * ``shard: true`` (both loops): the task's batches are spread over
      ``jax.devices()`` (:func:`ribsax.distributed.shard_task`);
    * ``loop: fused``: :meth:`ribsax.schedulers.Scheduler.run` on the JAX task, in
      chunks that end at multiples of ``fused_chunk`` (default 256, the length of
      the loop's compiled scan, so no call runs idle steps) and at the end: the same
      chunks whether or not the run was resumed. Checkpoints, snapshots and the
      progress bar then fall at the first chunk end at or after each period, and
      the ``elapsed_s`` of the iterations of a chunk is interpolated linearly over
      it. While the archive is empty and an emitter still has host work before its
      first fused ask (``initial_solutions: task``, e.g. QDax's random initial
      policies), those iterations (usually the first) run through ask/tell; the
      fused chunks follow.

    Metrics are recorded every ``logging.metrics_every`` iterations (default 1) and
    at the end; reading an archive's statistics costs a device-to-host copy, which
    is noticeable next to very fast iterations. The archive history (:attr:`history`)
    comes from the statuses that the result archive's ``add`` returns, in both
    loops, so it costs no archive read.

    Checkpoints (:class:`~ribsax.experiments.Checkpointer`) hold the pickled
    scheduler (archives, emitters, optimizer and PRNG states, the fused loop's key
    and iteration count), the metrics, the archive history and the evaluation
    count; :meth:`resume` continues from the latest readable one (an unreadable
    newer one is moved aside with a warning) and ends with the archive and metrics
    (all columns but ``elapsed_s``) of an uninterrupted run.

    Args:
        config: A config from :func:`~ribsax.experiments.load_config`, or a name or
            path passed to it together with ``overrides`` and ``smoke``.
        overrides: ``key=value`` overrides (when ``config`` is not loaded yet).
        smoke: Apply the config's smoke overrides (when ``config`` is not loaded yet).
        logdir: Run directory (default: ``config.logdir``, else
            ``logs/<YYYY-mm-dd_HH-MM-SS>_<name>_seed<seed>``).
        quiet: No progress bar.
        evaluator: Optional callable ``solutions -> (objective, measures)`` on NumPy
            arrays used by the ask/tell loop instead of the task's JAX function
            (default: a :class:`ribsax.distributed.DaskEvaluator` from the config's
            ``evaluator`` section, started by :meth:`run` and closed at its end,
            when there is one). The task still gives the solution and measure
            dimensions, measure ranges and QD-score offset.

    Raises:
        ConfigError: The config is invalid (the message names the key).
        ValueError: ``evaluator`` with the fused loop or with DQD emitters.
        FileExistsError: ``logdir`` already holds a run.
    """

    def __init__(
        self,
        config,
        overrides=(),
        *,
        smoke=False,
        logdir=None,
        quiet=False,
        evaluator=None,
        _restore=False,
    ):
        from omegaconf import OmegaConf

        # A copy: the run directory is written into the config.
        cfg = (
            copy.deepcopy(config)
            if OmegaConf.is_config(config)
            else load_config(config, overrides, smoke=smoke)
        )
        if is_rl_config(cfg):
            raise ConfigError(
                f"{cfg.name} is an RL config (an rl section): run it "
                "with `ribsax run` or ribsax.experiments.run_rl_config"
            )
        self.config = cfg
        if cfg.dtype.value == "float64" and not jax.config.jax_enable_x64:
            jax.config.update("jax_enable_x64", True)
        if logdir is None:
            logdir = cfg.logdir or str(Path("logs") / default_run_name(cfg.name, cfg.seed))
        if not _restore and (Path(logdir) / "config.yaml").exists():
            raise FileExistsError(
                f"{logdir} already holds a run; continue it with "
                "--resume (Experiment.resume) or choose another "
                "logdir"
            )
        OmegaConf.update(cfg, "logdir", str(logdir))
        self._quiet = quiet
        self._evaluator = evaluator
        self.task = build_task(cfg)
        if cfg.shard:
            self.task = shard_task(self.task)
        self.scheduler = None if _restore else build_scheduler(cfg, self.task)
        self._fused = cfg.loop.value == "fused"
        if evaluator is not None and self._fused:
            raise ValueError("evaluator: a Python evaluator needs loop=ask_tell")
        self._key = jax.random.key(int(cfg.seed))
        # Run state (what a checkpoint holds besides the scheduler).
        self.iteration = 0
        self.evaluations = 0
        self._elapsed = 0.0
        self._rows = []
        self._history = []
        self._history_index = np.empty(0, np.int64)
        self.directory = RunDirectory(logdir)
        if not _restore:
            self._start_new()

    # ------------------------------------------------------------------ set-up
    def _start_new(self):
        from omegaconf import OmegaConf

        self.directory.write_config(OmegaConf.to_yaml(self.config), int(self.config.seed))
        self.directory.logger.info("new run %s", self.config.name)
        self._setup_budget()

    def _setup_budget(self):
        python_evaluator = self._evaluator is not None or self.config.evaluator is not None
        if python_evaluator and _uses_dqd(self.scheduler):
            raise ValueError(
                "evaluator: DQD emitters need the task's Jacobian; a "
                "Python evaluator supports ask/tell emitters only"
            )
        self._dqd = _uses_dqd(self.scheduler)
        budget = self.config.budget
        if budget.iterations is not None and not self._fused:
            self.evaluations_per_iteration = None
            self.total_iterations = int(budget.iterations)
        else:
            self.evaluations_per_iteration = evaluations_per_iteration(
                self.scheduler, jacobian_samples(self.config)
            )
            self.total_iterations = (
                int(budget.iterations)
                if budget.iterations is not None
                else math.ceil(budget.evaluations / self.evaluations_per_iteration)
            )

    @classmethod
    def resume(cls, logdir, *, quiet=False, evaluator=None) -> Experiment:
        """Continues the run in ``logdir`` from its latest complete checkpoint (from
        the start when there is none), with the config stored there.

        A checkpoint that cannot be read (a truncated, missing or corrupted file)
        is skipped for the newest readable one, so at most the iterations since
        that one are run again, to the same result: the skipped checkpoint is
        moved to ``checkpoints_unreadable/<iteration>/`` in ``logdir`` (kept for
        inspection; the continued run writes that iteration's checkpoint afresh),
        and an :class:`~ribsax.experiments.UnreadableCheckpointWarning` naming it
        and its error is issued and written to ``run.log``.

        Raises:
            FileNotFoundError: ``logdir`` has no ``config.yaml``.
            UnreadableCheckpointError: ``logdir`` has checkpoints but none can be
                read (nothing is moved); the message names ``logdir`` and each
                checkpoint's error.
        """
        logdir = Path(logdir)
        if not (logdir / "config.yaml").is_file():
            raise FileNotFoundError(f"{logdir} holds no config.yaml; is it a run directory?")
        cfg = load_config(logdir / "config.yaml")
        experiment = cls(cfg, logdir=logdir, quiet=quiet, evaluator=evaluator, _restore=True)
        checkpointer = Checkpointer(
            experiment.directory.checkpoint_dir,
            keep=cfg.checkpoint.keep,
            references={"task": experiment.task},
        )
        try:
            restored = checkpointer.restore_latest_readable(
                report=experiment.directory.logger.warning
            )
        except UnreadableCheckpointError as err:
            details = "; ".join(f"checkpoint {step}: {error}" for step, error in err.errors.items())
            message = (
                f"{logdir}: none of its checkpoints can be read ({details}); "
                f"move {experiment.directory.checkpoint_dir} aside to start "
                "the run over"
            )
            experiment.directory.logger.error("%s", message)
            experiment.directory.close()
            raise UnreadableCheckpointError(message, err.directory, err.errors) from None
        finally:
            checkpointer.close()
        if restored is None:
            experiment.scheduler = build_scheduler(cfg, experiment.task)
            experiment.directory.logger.info("no checkpoint; starting over")
            experiment._setup_budget()
            return experiment
        _, arrays, objects, meta = restored
        experiment.scheduler = objects["scheduler"]
        experiment.iteration = int(meta["iteration"])
        experiment.evaluations = int(meta["evaluations"])
        experiment._elapsed = float(meta["elapsed_s"])
        metrics = pd.DataFrame(arrays["metrics"], columns=list(METRIC_COLUMNS))
        integers = ("iteration", "evaluations", "num_elites")
        experiment._rows = [
            {c: (int(v) if c in integers else float(v)) for c, v in row.items()}
            for row in metrics.to_dict(orient="records")
        ]
        if int(meta.get("format", 1)) < 2:
            raise ValueError(
                f"{logdir}: its checkpoint was written by an older ribsax "
                "(history format 1) and cannot be resumed by this one"
            )
        experiment._history = [arrays["history"]] if len(arrays["history"]) else []
        experiment._setup_budget()
        experiment.directory.logger.info("resumed from iteration %d", experiment.iteration)
        return experiment

    # ------------------------------------------------------------------ state
    @property
    def metrics(self) -> pd.DataFrame:
        """One row per iteration run so far (:data:`METRIC_COLUMNS`)."""
        return pd.DataFrame(self._rows, columns=list(METRIC_COLUMNS))

    @property
    def history(self) -> pd.DataFrame:
        """Insertions into the result archive: ``iteration``, cell ``index``,
        ``status`` (1: improved the cell, 2: a new cell), ``objective`` and
        ``measures_<j>`` of every solution whose add status was above 0, in
        iteration and batch order, for the iterations that are multiples of
        ``logging.history_every`` and the last one. Statuses are judged against
        the archive before each batch (pyribs' batch semantics), so two solutions
        of one batch that reach the same cell can both appear; the archive keeps
        the better one."""
        data = self._history_array()
        measure_dim = self.scheduler.result_archive.measure_dim
        if len(self._history_index) < len(data):
            new = data[len(self._history_index) :, 3:]
            self._history_index = np.concatenate(
                [
                    self._history_index,
                    np.asarray(self.scheduler.result_archive.index_of(new), dtype=np.int64),
                ]
            )
        table = pd.DataFrame(
            {
                "iteration": data[:, 0].astype(np.int64),
                "index": self._history_index,
                "status": data[:, 1].astype(np.int64),
                "objective": data[:, 2],
            }
        )
        for j in range(measure_dim):
            table[f"measures_{j}"] = data[:, 3 + j]
        return table

    def _history_array(self) -> np.ndarray:
        """The history records as one float64 array (iteration, status, objective,
        measures), consolidated in place."""
        if len(self._history) != 1:
            width = 3 + self.scheduler.result_archive.measure_dim
            self._history = [
                np.concatenate(self._history) if self._history else np.empty((0, width))
            ]
        return self._history[0]

    def _record_insertions(self, iteration, status, objective, measures):
        """Keeps the solutions of ``iteration`` whose result-archive status is
        above 0 (all arrays on the host, one row per solution)."""
        inserted = np.asarray(status) > 0
        if inserted.any():
            count = int(inserted.sum())
            self._history.append(
                np.column_stack(
                    [
                        np.full(count, iteration, dtype=np.float64),
                        np.asarray(status)[inserted].astype(np.float64),
                        np.asarray(objective, dtype=np.float64)[inserted],
                        np.asarray(measures, dtype=np.float64).reshape(len(inserted), -1)[inserted],
                    ]
                )
            )

    def _save_checkpoint(self, checkpointer):
        start = time.perf_counter()
        metrics = np.array(
            [[row[c] for c in METRIC_COLUMNS] for row in self._rows], dtype=np.float64
        ).reshape(-1, len(METRIC_COLUMNS))
        checkpointer.save(
            self.iteration,
            arrays={"metrics": metrics, "history": self._history_array()},
            objects={"scheduler": self.scheduler},
            meta={
                "iteration": self.iteration,
                "evaluations": self.evaluations,
                "elapsed_s": self._elapsed,
                "format": 2,
            },
        )
        self.directory.logger.info(
            "checkpoint at iteration %d (%.3f s%s)",
            self.iteration,
            time.perf_counter() - start,
            ", writing in the background" if self.config.checkpoint.background else "",
        )

    # ------------------------------------------------------------------ loops
    def _evaluate(self, solutions, key):
        """``((objective, measures), fields, extras)`` of the ask phase's
        solutions (the task's extras go to the emitters)."""
        if self._evaluator is not None:
            objective, measures = self._evaluator(solutions)
            return (np.asarray(objective), np.asarray(measures)), {}, {}
        return evaluate_task(self.task, solutions, key)

    def _evaluate_dqd(self, solutions, key):
        """``((objective, measures, jacobian), fields, extras)`` of the DQD
        phase's solutions."""
        return evaluate_task_dqd(self.task, solutions, key)

    def _ask_tell_iteration(self, iteration, history) -> int:
        """Runs ask/tell iteration ``iteration``; with ``history``, records its
        insertions. Returns the number of evaluations."""
        key, dqd_key = _iteration_keys(self._key, iteration)
        told, evaluations = ask_tell_iteration(
            self.scheduler, self._evaluate, key, self._evaluate_dqd if self._dqd else None, dqd_key
        )
        if history:
            for phase in told:
                self._record_insertions(iteration, phase.status, phase.objective, phase.measures)
        return evaluations

    def _chunk_end(self, iteration) -> int:
        """End of the fused chunk that starts after ``iteration``: the next multiple
        of ``fused_chunk`` (or the end)."""
        chunk = self.config.fused_chunk
        return min((iteration // chunk + 1) * chunk, self.total_iterations)

    def _fused_chunk(self, stop, loop_start):
        start_iteration, start_elapsed = self.iteration, self._elapsed_now(loop_start)
        # The scheduler numbers its fused iterations from its first run, which
        # sets the evaluation key from the seed; ask/tell iterations that came
        # first (initial solutions) shift the numbers.
        run_count = getattr(self.scheduler, "_run_count", 0)
        shift = start_iteration - run_count
        result = self.scheduler.run(
            self.task,
            stop - start_iteration,
            metrics_every=1,
            seed=int(self.config.seed) if run_count == 0 else None,
            history=True,
            non_finite=self.config.non_finite,
        )
        every_row = self.config.logging.metrics_every
        end_elapsed = self._elapsed_now(loop_start)
        count = stop - start_iteration
        # The run's evaluations column counts from the scheduler's first run; the
        # experiment's count (checkpointed) continues from its own.
        before = int(result.metrics["evaluations"].iloc[-1]) - result.evaluations
        for row in result.metrics.to_dict(orient="records"):
            iteration = int(row["iteration"]) + shift
            if iteration % every_row and iteration != stop:
                continue
            fraction = (iteration - start_iteration) / count
            self._rows.append(
                _stats_row(
                    iteration,
                    self.evaluations + int(row["evaluations"]) - before,
                    row,
                    start_elapsed + (end_elapsed - start_elapsed) * fraction,
                )
            )
        self.iteration = stop
        self.evaluations += result.evaluations
        history = result.history.to_numpy(dtype=np.float64)
        history[:, 0] += shift
        every = self.config.logging.history_every
        keep = (history[:, 0] % every == 0) | (history[:, 0] == self.total_iterations)
        if keep.any():
            self._history.append(history[keep])

    def _elapsed_now(self, loop_start):
        return self._elapsed_before + time.perf_counter() - loop_start

    def run(self) -> pd.DataFrame:
        """Runs the remaining iterations, writing metrics, snapshots, history,
        checkpoints, figures and the log.

        Returns:
            :attr:`metrics`.
        """
        cfg = self.config
        directory = self.directory
        checkpointer = Checkpointer(
            directory.checkpoint_dir,
            keep=cfg.checkpoint.keep,
            background=cfg.checkpoint.background,
            references={"task": self.task},
        )
        own_evaluator = None
        if self._evaluator is None and cfg.evaluator is not None:
            self._evaluator = own_evaluator = build_evaluator(cfg)
            directory.logger.info("Dask dashboard: %s", own_evaluator.dashboard_link)
        progress = self._progress()
        total = self.total_iterations
        # Plain Python values: OmegaConf attribute access costs microseconds.
        logging_cfg = SimpleNamespace(**to_container(cfg)["logging"])
        self._progress_every = logging_cfg.progress_every
        every_it = cfg.checkpoint.every_iterations
        every_s = (
            cfg.checkpoint.every_minutes * 60 if cfg.checkpoint.every_minutes is not None else None
        )
        self._elapsed_before = self._elapsed
        loop_start = last_checkpoint = time.perf_counter()
        directory.logger.info(
            "iterations %d to %d (%s loop)", self.iteration + 1, total, cfg.loop.value
        )
        try:
            while self.iteration < total:
                before = self.iteration
                if self._fused and fused_can_start(self.scheduler, self.task):
                    self._fused_chunk(self._chunk_end(self.iteration), loop_start)
                else:
                    iteration = self.iteration + 1
                    self.evaluations += self._ask_tell_iteration(
                        iteration, iteration % logging_cfg.history_every == 0 or iteration == total
                    )
                    self.iteration = iteration
                    if iteration % logging_cfg.metrics_every == 0 or iteration == total:
                        self._rows.append(
                            _stats_row(
                                iteration,
                                self.evaluations,
                                stats_metrics(self.scheduler.result_archive.stats),
                                self._elapsed_now(loop_start),
                            )
                        )
                self._elapsed = self._elapsed_now(loop_start)
                itr = self.iteration
                if _crossed(logging_cfg.snapshot_every, before, itr) or itr == total:
                    directory.write_snapshot(
                        self.scheduler.result_archive, itr, logging_cfg.heatmaps
                    )
                    directory.write_metrics(self._rows)
                    last = self._rows[-1]
                    directory.logger.info(
                        "iteration %d: evaluations %d, qd_score %.6g, coverage %.4f, "
                        "obj_max %.6g, %.2f s",
                        itr,
                        last["evaluations"],
                        last["qd_score"],
                        last["coverage"],
                        last["obj_max"],
                        last["elapsed_s"],
                    )
                due = _crossed(every_it, before, itr) or (
                    every_s is not None and time.perf_counter() - last_checkpoint >= every_s
                )
                if due or itr == total:
                    directory.write_metrics(self._rows)
                    directory.write_history(self.history)
                    self._save_checkpoint(checkpointer)
                    last_checkpoint = time.perf_counter()
                if progress is not None:
                    self._update_progress(progress, itr - before)
        finally:
            checkpointer.close()
            if own_evaluator is not None:
                own_evaluator.close()
                self._evaluator = None
            if progress is not None:
                progress.close()
        if cfg.logging.plots:
            directory.write_metric_plots(self._rows)
        directory.logger.info(
            "done: %d iterations, %d evaluations, %.2f s",
            self.iteration,
            self.evaluations,
            self._elapsed,
        )
        return self.metrics

    # ------------------------------------------------------------------ progress
    def _progress(self):
        if self._quiet:
            return None
        from tqdm.auto import tqdm

        return tqdm(
            total=self.total_iterations,
            initial=self.iteration,
            desc=self.config.name,
            unit="it",
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.2,
        )

    def _update_progress(self, progress, steps):
        progress.update(steps)
        if self.iteration % self._progress_every == 0 or self.iteration == self.total_iterations:
            last = self._rows[-1]
            rate = last["evaluations"] / last["elapsed_s"] if last["elapsed_s"] else 0.0
            progress.set_postfix(
                qd_score=f"{last['qd_score']:.4g}",
                coverage=f"{last['coverage']:.2%}",
                evals_per_s=f"{rate:.3g}",
                refresh=False,
            )
