"""What the traced loops evaluate and how a batch is put together.

:class:`EvaluationFunctions` holds the traceable evaluation functions of a fused
run (:func:`as_evaluation_functions` normalises what users pass to
``Scheduler.run``); :func:`unpack_evaluation` checks what they return;
:func:`batch_data` assembles the ``data`` of a batch that the step functions,
``ribsax.functional.tell`` and the ask/tell loop's traced tell take;
:func:`finite_rows` and :func:`without_non_finite` keep non-finite rows out of the
archives. :func:`has_dqd_phase` and :func:`check_jacobian` say whether a scheduler
has a DQD phase, which needs a Jacobian.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.emitters._emitter_base import EmitterBase
from ribsax.tasks._task import EXTRA_EVALUATIONS

__all__ = [
    "extra_evaluations",
    "EvaluationFunctions",
    "as_evaluation_functions",
    "has_dqd_phase",
    "check_jacobian",
    "unpack_evaluation",
    "batch_data",
    "evaluate_batch",
    "finite_rows",
    "without_non_finite",
]

#: The fields of every batch; the others are the archives' extra fields and the
#: task's extras.
CORE_FIELDS = ("solution", "objective", "measures")


class EvaluationFunctions(NamedTuple):
    """The traceable evaluation functions of a fused run (hashable by identity).

    Attributes:
        evaluate: ``evaluate(solutions, key) -> (objective, measures[, extras])``.
        evaluate_dqd: ``(solutions, key) -> (objective, measures, jacobian[,
            extras])`` for DQD emitters, or None.
    """

    evaluate: Any
    evaluate_dqd: Any


def as_evaluation_functions(evaluate, jacobian=None) -> EvaluationFunctions:
    """Normalises what users pass to ``Scheduler.run``.

    Args:
        evaluate: A :class:`ribsax.tasks.Task` (its ``evaluate`` and, when it has
            one, ``evaluate_with_jacobian`` are used) or a callable
            ``(solutions, key) -> (objective, measures[, extras])``.
        jacobian: Optional callable ``(solutions, key) -> (objective, measures,
            jacobian[, extras])`` for DQD emitters (overrides the task's).

    Returns:
        :class:`EvaluationFunctions`.

    Raises:
        TypeError: ``evaluate`` is neither a task nor callable.
    """
    dqd = jacobian
    if hasattr(evaluate, "evaluate_fn") and hasattr(evaluate, "evaluate_with_jacobian"):
        if dqd is None and getattr(evaluate, "has_jacobian", False):
            dqd = evaluate.evaluate_with_jacobian
        evaluate = evaluate.evaluate
    if not callable(evaluate):
        raise TypeError(
            "evaluate must be a ribsax.tasks.Task or a callable "
            "(solutions, key) -> (objective, measures[, extras]), "
            f"got {type(evaluate).__name__}"
        )
    if dqd is not None and not callable(dqd):
        raise TypeError(
            "jacobian must be a callable (solutions, key) -> (objective, "
            f"measures, jacobian[, extras]), got {type(dqd).__name__}"
        )
    return EvaluationFunctions(evaluate, dqd)


def has_dqd_phase(emitters) -> bool:
    """Whether an iteration of a scheduler with ``emitters`` has a DQD phase
    (``ask_dqd`` -> evaluate with a Jacobian -> ``tell_dqd``): some emitter's class
    has its own ``ask_dqd``, as pyribs' DQD emitters do (those that run in the
    traced loops also have DQD kernels, see
    :class:`~ribsax.schedulers._loop_plan.LoopPlan`)."""
    return any(type(e).ask_dqd is not EmitterBase.ask_dqd for e in emitters)


def check_jacobian(dqd: bool, evaluate_dqd) -> None:
    """Raises ValueError when a scheduler with a DQD phase (``dqd``) has no
    Jacobian function ``evaluate_dqd`` to evaluate it with."""
    if dqd and evaluate_dqd is None:
        raise ValueError(
            "The scheduler has DQD emitters: pass a Task with a "
            "Jacobian or jacobian=(solutions, key) -> (objective, "
            "measures, jacobian[, extras])"
        )


def unpack_evaluation(out, with_jacobian, name):
    """Checks the structure of what an evaluation function returned.

    Args:
        out: The return value of ``evaluate`` (``with_jacobian`` False) or of the
            Jacobian function.
        with_jacobian: Whether ``out`` holds a Jacobian.
        name: The function's name in the error messages.

    Returns:
        ``(values, extras)``: ``(objective, measures[, jacobian])`` and the dict of
        extras (empty when there are none).

    Raises:
        TypeError: ``out`` is not a tuple of the expected length.
    """
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name} must return a tuple, got {type(out).__name__}")
    n = 3 if with_jacobian else 2
    if len(out) not in (n, n + 1):
        expected = (
            "(objective, measures, jacobian[, extras])"
            if with_jacobian
            else "(objective, measures[, extras])"
        )
        raise TypeError(f"{name} must return {expected}, got {len(out)} values")
    extras = out[n] if len(out) > n else None
    return tuple(out[:n]), (extras or {})


def _as_array(xp, dtype, value):
    return xp.asarray(value).astype(dtype, copy=False)


def _tree_as_arrays(xp, value):
    return jax.tree.map(xp.asarray, value)


def batch_data(xp, dtypes, solution, objective, measures, fields=None):
    """The ``data`` of a batch as the step functions take it (one rule for the
    traced loops, ``ribsax.functional.tell`` and the ask/tell loop's traced
    tell).

    Written against the array namespace ``xp`` (``numpy`` on the host,
    ``jax.numpy`` in traced code).

    Args:
        xp: ``numpy`` or ``jax.numpy``.
        dtypes: name -> dtype of the fields to convert (e.g. the archive's
            ``dtypes``, or only ``objective`` and ``measures``); the other fields
            become arrays (leaf by leaf for pytrees) as they are.
        solution: ``[batch, *solution_dim]`` solutions.
        objective: ``[batch]`` objectives (None: left out, as for diversity
            optimization on the host).
        measures: ``[batch, measure_dim]`` measures.
        fields: Optional dict of the archives' extra fields and the task's extras
            (arrays or pytrees of them, ``[batch, ...]`` each); None values are
            left out, and ``solution``, ``objective`` and ``measures`` come from
            the arguments above.

    Returns:
        name -> array (or pytree of arrays), with ``objective`` reshaped to
        ``[batch]``.
    """
    core = dict(zip(CORE_FIELDS, (solution, objective, measures)))
    data = {}
    for name, value in {**(fields or {}), **core}.items():
        if value is None:
            continue
        dtype = dtypes.get(name)
        data[name] = _tree_as_arrays(xp, value) if dtype is None else _as_array(xp, dtype, value)
    if "objective" in data:
        data["objective"] = data["objective"].reshape(solution.shape[0])
    return data


def evaluate_batch(plan, solutions, key, dqd):
    """Evaluates ``solutions`` with the plan's evaluation function (traced).

    Args:
        plan: :class:`~ribsax.schedulers._loop_plan.LoopPlan` of a fused run.
        solutions: ``[batch, *solution_dim]``.
        key: The evaluation key.
        dqd: Whether this is the DQD phase (the Jacobian function).

    Returns:
        ``(data, jacobian)``: the :func:`batch_data` of the batch (the archives'
        extra fields and the task's other extras, which reach the emitters'
        tells; the compiler drops what no emitter reads) and the Jacobian (None
        outside the DQD phase).

    Raises:
        ValueError: An archive has an extra field that the extras lack.
    """
    fn = plan.functions.evaluate_dqd if dqd else plan.functions.evaluate
    name = "jacobian" if dqd else "evaluate"
    values, extras = unpack_evaluation(fn(solutions, key), dqd, name)
    for field in plan.extra_fields:
        if field not in extras:
            raise ValueError(
                f"The archive has the extra field {field!r}, but "
                f"{name} returned no extras[{field!r}]"
            )
    data = batch_data(jnp, plan.batch_dtypes, solutions, values[0], values[1], extras)
    jacobian = jnp.asarray(values[2]) if dqd else None
    return data, jacobian


def extra_evaluations(xp, extras):
    """The evaluations an evaluation function reports having made besides the
    rows themselves (the sum of its ``extras["extra_evaluations"]``, e.g. an ES
    Jacobian's samples; 0 when it reports none), as an int32 scalar of ``xp``."""
    extra = extras.get(EXTRA_EVALUATIONS)
    if extra is None:
        return xp.zeros((), xp.int32)
    return xp.sum(xp.asarray(extra)).astype(xp.int32)


def finite_rows(objective, measures, jacobian=None):
    """bool[batch]: rows whose objective, measures (and Jacobian) are all finite."""
    finite = jnp.isfinite(objective) & jnp.all(
        jnp.isfinite(measures.reshape(measures.shape[0], -1)), axis=1
    )
    if jacobian is not None:
        finite &= jnp.all(jnp.isfinite(jacobian.reshape(jacobian.shape[0], -1)), axis=1)
    return finite


def without_non_finite(data, jacobian, finite):
    """The batch with its non-finite rows neutralised for the archives and for
    the emitters.

    Returns:
        ``(archive_data, emitter_data, jacobian)``. The archives get objective
        ``-inf`` on those rows, which no archive accepts, whatever cell their
        measures give (measures left as they are: masking them too before the
        cell index cost the CVT MAP-Elites loop 40% on XLA:CPU). The emitters also
        get zero measures and Jacobian rows there.
    """
    archive_data = dict(data)
    archive_data["objective"] = jnp.where(finite, data["objective"], -jnp.inf).astype(
        data["objective"].dtype
    )
    emitter_data = dict(archive_data)
    measures = data["measures"]
    emitter_data["measures"] = jnp.where(
        finite.reshape((-1,) + (1,) * (measures.ndim - 1)), measures, jnp.zeros_like(measures)
    )
    if jacobian is not None:
        jacobian = jnp.where(
            finite.reshape((-1,) + (1,) * (jacobian.ndim - 1)), jacobian, jnp.zeros_like(jacobian)
        )
    return archive_data, emitter_data, jacobian
