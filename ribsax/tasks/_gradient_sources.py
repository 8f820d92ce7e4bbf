"""Gradient sources for DQD emitters: exact Jacobians and the estimator hook.

A *Jacobian source* is any callable with the signature of
:attr:`ribsax.tasks.Task.jacobian_fn`::

    source(solutions, key) -> (objective, measures, jacobian, extras)

where ``solutions`` is ``(batch, solution_dim)``, ``objective`` ``(batch,)``,
``measures`` ``(batch, measure_dim)``, ``jacobian`` ``(batch, 1 + measure_dim,
solution_dim)`` (objective gradient in row 0, measure gradients after it: the layout
of ``tell_dqd``) and ``extras`` a dict of batch-leading arrays. Sources that are pure
JAX functions can be jitted and used inside a fused loop.

Built-in sources:

* :func:`exact_jacobian_fn`: automatic differentiation of a JAX-traceable
  ``evaluate(solutions, key)`` (reverse or forward mode, picked by shape);
* :func:`~ribsax.tasks.es_jacobian_fn`: OpenAI-ES estimate for black-box tasks
  (dqd-rl);
* a task's analytic ``jacobian_fn``.

Other estimators (e.g. a TD3 critic gradient for the objective row) plug in by
implementing :class:`JacobianSource`; :func:`with_jacobian` attaches one to a task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from ribsax.tasks._jacobian import jacobian_via_vjp

__all__ = [
    "JacobianSource",
    "jacobian_via_jvp",
    "exact_jacobian",
    "exact_jacobian_fn",
    "with_jacobian",
]


@runtime_checkable
class JacobianSource(Protocol):
    """Callable protocol of gradient sources (see the module docstring).

    Implementations must return the Jacobian in ``tell_dqd``'s layout
    ``(batch, 1 + measure_dim, solution_dim)``. Estimators that evaluate extra
    solutions (e.g. ES samples) may return them in ``extras`` so that callers can
    insert them into an archive.
    """

    def __call__(
        self, solutions: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array, Any]: ...


def jacobian_via_jvp(evaluate_fn, solutions, key):
    """Jacobian of a row-independent batched evaluation function, forward mode.

    One Jacobian-vector product per solution coordinate (vmapped): the tangent
    ``e_k`` is applied to every row at once. Cheaper than
    :func:`~ribsax.tasks.jacobian_via_vjp` when ``solution_dim`` is smaller than
    ``1 + measure_dim``.

    Args:
        evaluate_fn: ``(solutions, key) -> (objective, measures, extras)``.
        solutions: ``(batch, solution_dim)`` floating array.
        key: PRNG key passed to ``evaluate_fn``.

    Returns:
        ``(objective, measures, jacobian, extras)``.
    """
    batch, dim = solutions.shape

    def outputs(sols):
        objective, measures, _ = evaluate_fn(sols, key)
        return objective, measures

    def column(e):
        tangent = jnp.broadcast_to(e, (batch, dim)).astype(solutions.dtype)
        _, (d_obj, d_meas) = jax.jvp(outputs, (solutions,), (tangent,))
        return jnp.concatenate([d_obj[:, None], d_meas], axis=1)

    columns = jax.vmap(column)(jnp.eye(dim, dtype=solutions.dtype))  # (dim, B, 1+m)
    objective, measures, extras = evaluate_fn(solutions, key)
    return objective, measures, jnp.transpose(columns, (1, 2, 0)), extras


def exact_jacobian(evaluate_fn, solutions, key, mode: str = "auto"):
    """Exact Jacobian of a JAX-traceable, row-independent ``evaluate_fn``.

    Args:
        evaluate_fn: ``(solutions, key) -> (objective, measures, extras)``.
        solutions: ``(batch, solution_dim)`` floating array.
        key: PRNG key passed to ``evaluate_fn``.
        mode: ``"rev"`` (``1 + measure_dim`` vector-Jacobian products), ``"fwd"``
            (``solution_dim`` Jacobian-vector products) or ``"auto"``: forward mode
            when ``solution_dim < 1 + measure_dim``, else reverse (decided at trace
            time from the shapes).

    Returns:
        ``(objective, measures, jacobian, extras)`` with ``jacobian`` of shape
        ``(batch, 1 + measure_dim, solution_dim)``.

    Raises:
        ValueError: Unknown ``mode``.
    """
    if mode not in ("auto", "rev", "fwd"):
        raise ValueError(f"mode must be 'auto', 'rev' or 'fwd', got {mode!r}")
    if mode == "auto":
        _, measures, _ = jax.eval_shape(evaluate_fn, solutions, key)
        mode = "fwd" if solutions.shape[1] < 1 + measures.shape[1] else "rev"
    if mode == "fwd":
        return jacobian_via_jvp(evaluate_fn, solutions, key)
    return jacobian_via_vjp(evaluate_fn, solutions, key)


def exact_jacobian_fn(evaluate_fn, mode: str = "auto") -> Callable:
    """A :class:`JacobianSource` computing exact Jacobians of ``evaluate_fn``.

    Args:
        evaluate_fn: JAX-traceable ``(solutions, key) -> (objective, measures,
            extras)``.
        mode: See :func:`exact_jacobian`.

    Returns:
        ``source(solutions, key) -> (objective, measures, jacobian, extras)``.
    """
    if mode not in ("auto", "rev", "fwd"):
        raise ValueError(f"mode must be 'auto', 'rev' or 'fwd', got {mode!r}")

    def source(solutions, key):
        return exact_jacobian(evaluate_fn, solutions, key, mode)

    return source


def zero_jacobian_fn(evaluate) -> Callable:
    """A :class:`JacobianSource` that evaluates without gradients: ``(solutions,
    key) -> (objective, measures, zeros, extras)``.

    For DQD emitters that compute their gradients themselves (e.g.
    :class:`ribsax.emitters.CMAMEGATD3Emitter`) on a task without a Jacobian: the
    schedulers' DQD phase then costs one evaluation per solution.

    Args:
        evaluate: ``evaluate(solutions, key) -> (objective, measures[, extras])``,
            or a :class:`~ribsax.tasks.Task` (its ``evaluate``).

    Returns:
        ``source(solutions, key) -> (objective, measures, jacobian, extras)``.
    """
    if not callable(evaluate) or hasattr(evaluate, "evaluate_fn"):
        evaluate = evaluate.evaluate

    def source(solutions, key):
        out = evaluate(solutions, key)
        objective, measures = jnp.asarray(out[0]), jnp.asarray(out[1])
        solutions = jnp.asarray(solutions)
        jacobian = jnp.zeros(
            (solutions.shape[0], 1 + measures.shape[1]) + solutions.shape[1:], solutions.dtype
        )
        return objective, measures, jacobian, (out[2] if len(out) > 2 else {})

    return source


def with_jacobian(task, source: JacobianSource):
    """A copy of ``task`` whose :meth:`~ribsax.tasks.Task.evaluate_with_jacobian`
    uses ``source`` (e.g. :func:`~ribsax.tasks.es_jacobian_fn` to run a DQD
    algorithm on black-box gradients).

    Args:
        task: A :class:`~ribsax.tasks.Task`.
        source: A :class:`JacobianSource`.

    Returns:
        The new task (``differentiable`` stays as it was).

    Raises:
        TypeError: ``source`` is not callable.
    """
    if not callable(source):
        raise TypeError(
            "source must be a callable (solutions, key) -> (objective, measures, jacobian, extras)"
        )
    return dataclasses.replace(task, jacobian_fn=source)
