"""Planar arm repertoire tasks (pyribs' tutorial and QDax's variant)."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from ribsax.tasks._task import Task, measure_shape_check, unit_uniform_init

__all__ = ["arm", "qdax_arm"]


def _arm_kernel(solutions, key, *, link_lengths, with_jacobian):
    del key
    measure_shape_check(solutions, link_lengths.shape[0])
    lengths = jnp.asarray(link_lengths, dtype=solutions.dtype)
    n = solutions.shape[1]
    mean = jnp.mean(solutions, axis=1, keepdims=True)
    centred = solutions - mean
    objective = -jnp.mean(centred * centred, axis=1)
    cum_theta = jnp.cumsum(solutions, axis=1)
    x_terms = lengths * jnp.cos(cum_theta)
    y_terms = lengths * jnp.sin(cum_theta)
    measures = jnp.stack([jnp.sum(x_terms, axis=1), jnp.sum(y_terms, axis=1)], axis=1)
    if not with_jacobian:
        return objective, measures, {}
    # Joint i moves every link j >= i: d/dtheta_i = reverse cumulative sums.
    dx = -jnp.flip(jnp.cumsum(jnp.flip(y_terms, 1), axis=1), 1)
    dy = jnp.flip(jnp.cumsum(jnp.flip(x_terms, 1), axis=1), 1)
    d_obj = -2.0 * centred / n
    return objective, measures, jnp.stack([d_obj, dx, dy], axis=1), {}


def arm(dof=12, link_lengths=None) -> Task:
    """pyribs' planar arm repertoire task (``tutorials/arm_repertoire.ipynb``).

    A solution holds the ``dof`` joint angles (radians) of a planar arm whose base is
    at the origin. The objective is ``-var(angles)`` (maximal, 0, when all joints bend
    equally) and the measures are the end-effector position
    ``(sum_j l_j cos(c_j), sum_j l_j sin(c_j))`` with ``c_j`` the cumulative angle of
    link ``j``. Measure ranges are ``[-L, L]^2`` with ``L = sum(link_lengths)``.
    Angles are searched in ``[-pi, pi]`` (the tutorial's emitter bounds), where the
    variance is at most ``pi**2``: the QD-score offset is ``-pi**2``. The Jacobian is
    analytic.

    Args:
        dof: Number of joints (the solution dimension).
        link_lengths: Array of ``dof`` positive link lengths (default: ones, as in
            the tutorial).

    Returns:
        A differentiable :class:`Task`.

    Raises:
        ValueError: ``link_lengths`` does not have ``dof`` entries.
    """
    dof = int(dof)
    link_lengths = (
        np.ones(dof) if link_lengths is None else np.asarray(link_lengths, dtype=np.float64)
    )
    if link_lengths.shape != (dof,):
        raise ValueError(f"link_lengths must have shape ({dof},), got {link_lengths.shape}")
    reach = float(np.sum(link_lengths))
    kernel = functools.partial(_arm_kernel, link_lengths=link_lengths)
    return Task(
        name="arm",
        solution_dim=dof,
        measure_dim=2,
        measure_ranges=((-reach, reach), (-reach, reach)),
        qd_score_offset=-(np.pi**2),
        evaluate_fn=functools.partial(kernel, with_jacobian=False),
        jacobian_fn=functools.partial(kernel, with_jacobian=True),
        differentiable=True,
        solution_bounds=(-np.pi, np.pi),
        objective_range=(-(np.pi**2), 0.0),
        description=arm.__doc__.split("\n\n")[0],
    )


def _qdax_arm_kernel(solutions, key, *, solution_dim):
    del key
    measure_shape_check(solutions, solution_dim)
    x = jnp.clip(solutions, 0.0, 1.0)
    objective = -jnp.std(x, axis=1)
    cum_angles = jnp.cumsum(2.0 * jnp.pi * x - jnp.pi, axis=1)
    scale = 2.0 * solution_dim
    measures = jnp.stack(
        [
            jnp.sum(jnp.cos(cum_angles), axis=1) / scale + 0.5,
            jnp.sum(jnp.sin(cum_angles), axis=1) / scale + 0.5,
        ],
        axis=1,
    )
    return objective, measures, {}


def qdax_arm(solution_dim=100) -> Task:
    """QDax's planar arm (``qdax.tasks.arm.arm``).

    Parameters in ``[0, 1]`` (clipped) map to joint angles ``2 pi p - pi``; the
    objective is ``-std(p)`` and the measures are the end-effector position scaled to
    ``[0, 1]^2`` (unit total length, base at ``(0.5, 0.5)``). QD-score offset ``-0.5``
    (the largest standard deviation in ``[0, 1]``). Gradients come from autodiff
    (undefined where all parameters are equal, since ``std`` has a square root).

    Args:
        solution_dim: Number of joints.

    Returns:
        A differentiable :class:`Task`.
    """
    solution_dim = int(solution_dim)
    return Task(
        name="qdax_arm",
        solution_dim=solution_dim,
        measure_dim=2,
        measure_ranges=((0.0, 1.0), (0.0, 1.0)),
        qd_score_offset=-0.5,
        evaluate_fn=functools.partial(_qdax_arm_kernel, solution_dim=solution_dim),
        differentiable=True,
        solution_bounds=(0.0, 1.0),
        objective_range=(-0.5, 0.0),
        init_fn=unit_uniform_init,
        description=qdax_arm.__doc__.split("\n\n")[0],
    )
