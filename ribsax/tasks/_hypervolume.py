"""Mouret's hypervolume-style toy functions (``qdax.tasks.hypervolume_functions``).

J.-B. Mouret, "Hypervolume-based benchmark functions for quality diversity
algorithms" (GECCO 2023 companion). Every function is defined on ``[0, 1]^n`` and
returns an ``n``-dimensional measure, so ``measure_dim == solution_dim`` (2 by
default, the paper's setting).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from ribsax.tasks._task import Task, measure_shape_check, unit_uniform_init

__all__ = [
    "square",
    "checkered",
    "empty_circle",
    "non_continuous_islands",
    "continuous_islands",
]


def _square(p):
    return 1.0 - jnp.prod(p, axis=1), jnp.sin(5.0 * p)


def _checkered(p):
    return jnp.prod(jnp.sin(50.0 * p), axis=1), jnp.sin(5.0 * p)


def _empty_circle(p):
    distance = jnp.sqrt(jnp.sum((p - 0.5) ** 2, axis=1))
    objective = jnp.exp(-((distance - 0.5) ** 2) / (2.0 * 0.3**2))
    return objective, jnp.sin(40.0 * p)


def _non_continuous_islands(p):
    return jnp.prod(p, axis=1), jnp.round(10.0 * p) / 10.0


def _continuous_islands(p):
    coeff = 20.0
    return jnp.prod(p, axis=1), p - jnp.sin(coeff * jnp.pi * p) / (coeff * jnp.pi)


def _kernel(solutions, key, *, fn, solution_dim):
    del key
    measure_shape_check(solutions, solution_dim)
    objective, measures = fn(solutions)
    return objective, measures, {}


def _make(name, fn, solution_dim, measure_range, objective_range, doc):
    solution_dim = int(solution_dim)
    if solution_dim < 1:
        raise ValueError(f"solution_dim must be positive, got {solution_dim}")
    return Task(
        name=name,
        solution_dim=solution_dim,
        measure_dim=solution_dim,
        measure_ranges=(measure_range,) * solution_dim,
        qd_score_offset=objective_range[0],
        evaluate_fn=functools.partial(_kernel, fn=fn, solution_dim=solution_dim),
        differentiable=True,
        solution_bounds=(0.0, 1.0),
        objective_range=objective_range,
        init_fn=unit_uniform_init,
        description=doc.split("\n\n")[0],
    )


def square(solution_dim=2) -> Task:
    """Square: objective ``1 - prod(p)``, measures ``sin(5 p)``.

    Measure range ``[-1, 1]`` per dimension (``sin(5 p)`` reaches -1 inside
    ``[0, 1]``; QDax's docstring says ``[0, 1]``, which is wrong); objective in
    ``[0, 1]``, QD-score offset 0.

    Args:
        solution_dim: ``n``, also the number of measures.

    Returns:
        A differentiable :class:`Task` on ``[0, 1]^n``.
    """
    return _make("square", _square, solution_dim, (-1.0, 1.0), (0.0, 1.0), square.__doc__)


def checkered(solution_dim=2) -> Task:
    """Checkered: objective ``prod(sin(50 p))``, measures ``sin(5 p)``.

    Measure range ``[-1, 1]``; objective in ``[-1, 1]``, QD-score offset -1.

    Args:
        solution_dim: ``n``, also the number of measures.

    Returns:
        A differentiable :class:`Task` on ``[0, 1]^n``.
    """
    return _make("checkered", _checkered, solution_dim, (-1.0, 1.0), (-1.0, 1.0), checkered.__doc__)


def empty_circle(solution_dim=2) -> Task:
    """Empty circle: Gaussian ring objective, measures ``sin(40 p)``.

    Objective ``exp(-(r - 0.5)**2 / (2 * 0.3**2))`` with ``r = ||p - 0.5||``
    (largest on the circle of radius 0.5 around the centre), in ``(0, 1]``; measure
    range ``[-1, 1]``; QD-score offset 0.

    Args:
        solution_dim: ``n``, also the number of measures.

    Returns:
        A :class:`Task` on ``[0, 1]^n`` (differentiable except at the centre).
    """
    return _make(
        "empty_circle", _empty_circle, solution_dim, (-1.0, 1.0), (0.0, 1.0), empty_circle.__doc__
    )


def non_continuous_islands(solution_dim=2) -> Task:
    """Non-continuous islands: objective ``prod(p)``, measures ``round(10 p) / 10``.

    The measures take 11 discrete values per dimension in ``[0, 1]`` (their
    gradient is zero almost everywhere); objective in ``[0, 1]``, offset 0.

    Args:
        solution_dim: ``n``, also the number of measures.

    Returns:
        A :class:`Task` on ``[0, 1]^n``.
    """
    return _make(
        "non_continuous_islands",
        _non_continuous_islands,
        solution_dim,
        (0.0, 1.0),
        (0.0, 1.0),
        non_continuous_islands.__doc__,
    )


def continuous_islands(solution_dim=2) -> Task:
    """Continuous islands: objective ``prod(p)``, measures ``p - sin(20 pi p)/(20 pi)``.

    The measure map is monotone but flat at every multiple of 0.1, which crowds
    solutions into islands; range ``[0, 1]``, objective in ``[0, 1]``, offset 0.

    Args:
        solution_dim: ``n``, also the number of measures.

    Returns:
        A differentiable :class:`Task` on ``[0, 1]^n``.
    """
    return _make(
        "continuous_islands",
        _continuous_islands,
        solution_dim,
        (0.0, 1.0),
        (0.0, 1.0),
        continuous_islands.__doc__,
    )
