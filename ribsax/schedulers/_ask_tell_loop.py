"""The ask/tell loop driven from Python: ask -> evaluate -> tell per iteration.

:func:`ask_tell_iteration` is the one driver of an iteration through the
scheduler's ``ask_dqd``/``tell_dqd`` and ``ask``/``tell``;
:meth:`Scheduler.run(..., fused=False) <ribsax.schedulers.Scheduler.run>`
(:func:`python_loop`) and the experiments' ask/tell loop both run it, with the
evaluation keys of :func:`~ribsax.schedulers._scan.phase_key`, as the fused loop
derives them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.archives._archive_stats import stats_metrics
from ribsax.emitters._jax_emitter import JaxEmitter
from ribsax.schedulers._evaluation import (
    check_jacobian,
    extra_evaluations,
    has_dqd_phase,
    unpack_evaluation,
)
from ribsax.schedulers._scan import METRIC_NAMES, phase_key

__all__ = ["Told", "ask_tell_iteration", "emitters_spent", "python_loop"]


class Told(NamedTuple):
    """What one phase of an ask/tell iteration told the scheduler.

    Attributes:
        status: The result archive's add statuses of the batch
            (:attr:`~ribsax.schedulers.Scheduler.result_add_info`).
        objective: ``[batch]`` objectives.
        measures: ``[batch, measure_dim]`` measures.
    """

    status: Any
    objective: Any
    measures: Any


def ask_tell_iteration(scheduler, evaluate, key, evaluate_dqd=None, dqd_key=None):
    """Runs one iteration of the ask/tell loop: with ``evaluate_dqd``, ``ask_dqd``
    -> ``evaluate_dqd`` -> ``tell_dqd`` first; then ``ask`` -> ``evaluate`` ->
    ``tell``.

    Args:
        scheduler: The scheduler.
        evaluate: ``(solutions, key) -> ((objective, measures), fields,
            extras)``, with ``fields`` the dict of the archives' extra fields and
            ``extras`` the dict of the evaluation's other extras, both passed to
            ``tell`` (the extras for the emitters only).
        key: The ask phase's evaluation key (``phase_key(iteration_key,
            False)``).
        evaluate_dqd: None (no DQD phase), or ``(solutions, key) -> ((objective,
            measures, jacobian), fields, extras)``.
        dqd_key: The DQD phase's evaluation key (``phase_key(iteration_key,
            True)``), with ``evaluate_dqd``.

    Returns:
        ``(told, evaluations)``: the list of :class:`Told`, one per phase run (the
        DQD phase first), and the iteration's evaluations (the solutions
        evaluated, those the evaluation functions report in their
        ``extra_evaluations`` extra and those the emitters report having
        evaluated themselves).
    """
    spent = emitters_spent(scheduler)
    told = []
    by_evaluation = 0  # What the evaluation functions report beyond the rows.
    if evaluate_dqd is not None:
        solutions = scheduler.ask_dqd()
        (objective, measures, jacobian), fields, extras = evaluate_dqd(solutions, dqd_key)
        by_evaluation += int(extra_evaluations(np, extras or {}))
        scheduler.tell_dqd(objective, measures, jacobian, extras=extras or None, **fields)
        told.append(Told(scheduler.result_add_info["status"], objective, measures))
    solutions = scheduler.ask()
    (objective, measures), fields, extras = evaluate(solutions, key)
    by_evaluation += int(extra_evaluations(np, extras or {}))
    scheduler.tell(objective, measures, extras=extras or None, **fields)
    told.append(Told(scheduler.result_add_info["status"], objective, measures))
    evaluations = (
        sum(len(phase.objective) for phase in told)
        + by_evaluation
        + emitters_spent(scheduler)
        - spent
    )
    return told, evaluations


def _extra_field_names(archive):
    skip = {"solution", "objective", "measures", "threshold", "index"}
    return [name for name in archive.field_list if name not in skip]


def emitters_spent(scheduler) -> int:
    """Evaluations the scheduler's emitters report having made themselves
    (:attr:`ribsax.emitters.JaxEmitter.evaluations`)."""
    return sum(int(e.evaluations) for e in scheduler._emitters if isinstance(e, JaxEmitter))


def python_loop(scheduler, functions, keys, insertions=False):
    """The iterations of a fused run through ``ask``/``tell`` (a jitted
    evaluation per call).

    Args:
        scheduler: The scheduler.
        functions: Its :class:`~ribsax.schedulers._evaluation.EvaluationFunctions`.
        keys: The iterations' keys (:func:`~ribsax.schedulers._scan.iteration_keys`).
        insertions: Also return the ``status``, ``objective`` and ``measures`` of
            each iteration's solutions.

    Returns:
        The metrics dict, as :func:`~ribsax.schedulers._loop_runner.run_chunks`
        returns it.

    Raises:
        ValueError: The scheduler has DQD emitters and ``functions`` no Jacobian.
    """
    dqd = has_dqd_phase(scheduler._emitters)
    check_jacobian(dqd, functions.evaluate_dqd)
    names = _extra_field_names(scheduler.archive)

    def evaluation(fn, with_jacobian, name):
        fn = jax.jit(fn)

        def run(solutions, key):
            values, extras = unpack_evaluation(fn(jnp.asarray(solutions), key), with_jacobian, name)
            return (
                tuple(np.asarray(v) for v in values),
                {field: np.asarray(extras[field]) for field in names},
                {k: v for k, v in extras.items() if k not in names},
            )

        return run

    evaluate = evaluation(functions.evaluate, False, "evaluate")
    evaluate_dqd = evaluation(functions.evaluate_dqd, True, "jacobian") if dqd else None
    history = {
        name: [] for name in (*METRIC_NAMES, "evaluations", "non_finite", "first_non_finite")
    }
    told_rows = {"status": [], "objective": [], "measures": []}

    for key in keys:
        told, evaluations = ask_tell_iteration(
            scheduler,
            evaluate,
            phase_key(key, False),
            evaluate_dqd,
            phase_key(key, True) if dqd else None,
        )
        stats = stats_metrics(scheduler.result_archive.stats)
        for name in METRIC_NAMES:
            history[name].append(stats[name])
        # tell raises pyribs' errors on non-finite rows: none got this far.
        history["non_finite"].append(0)
        history["first_non_finite"].append(-1)
        history["evaluations"].append(evaluations)
        if insertions:
            for name, rows in told_rows.items():
                rows.append(np.concatenate([np.asarray(getattr(t, name)) for t in told]))
    if insertions:
        # A bandit's batch changes with its active emitters: pad with status 0.
        rows = max(len(status) for status in told_rows["status"])
        for name, arrays in told_rows.items():
            history[name] = np.stack(
                [np.pad(arr, [(0, rows - len(arr))] + [(0, 0)] * (arr.ndim - 1)) for arr in arrays]
            )
    return history
