"""QDax's standard rastrigin benchmark (parameters in [0, 1], measures = 2 genes)."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from ribsax.tasks._task import Task, measure_shape_check, unit_uniform_init

__all__ = ["rastrigin"]


def _rastrigin_kernel(solutions, key, *, solution_dim):
    del key
    measure_shape_check(solutions, solution_dim)
    x = solutions * 10.0 - 5.0
    cost = 10.0 * solution_dim + jnp.sum(x * x - 10.0 * jnp.cos(2.0 * jnp.pi * x), axis=1)
    return -cost, solutions[:, :2], {}


def _max_cost_per_dim() -> float:
    """max of ``x**2 - 10 cos(2 pi x) + 10`` over ``[-5, 5]`` (grid + Newton)."""
    grid = np.linspace(-5.0, 5.0, 200_001)

    def cost(x):
        return x * x - 10.0 * np.cos(2 * np.pi * x) + 10.0

    x = grid[np.argmax(cost(grid))]
    for _ in range(20):
        d1 = 2 * x + 20 * np.pi * np.sin(2 * np.pi * x)
        d2 = 2 + 40 * np.pi**2 * np.cos(2 * np.pi * x)
        x = float(np.clip(x - d1 / d2, -5.0, 5.0))
    return float(max(cost(x), cost(grid).max()))


def rastrigin(solution_dim=100) -> Task:
    """QDax's rastrigin task (``qdax.tasks.standard_functions.rastrigin``).

    Parameters ``p`` live in ``[0, 1]^n`` and are scaled to ``x = 10 p - 5``; the
    objective is ``-(10 n + sum(x**2 - 10 cos(2 pi x)))`` (0 at ``p = 0.5``) and the
    measures are the first two parameters ``(p_0, p_1)``, range ``[0, 1]^2``. The
    QD-score offset is the exact minimum of the objective over the box,
    ``-n * max_x (x**2 - 10 cos(2 pi x) + 10)`` (about ``-40.35 n``). The initial
    population is uniform in ``[0, 1]``. Gradients come from autodiff.

    Args:
        solution_dim: Number of parameters (at least 2).

    Returns:
        A differentiable :class:`Task`.

    Raises:
        ValueError: ``solution_dim < 2``.
    """
    solution_dim = int(solution_dim)
    if solution_dim < 2:
        raise ValueError(f"solution_dim must be at least 2, got {solution_dim}")
    worst = _max_cost_per_dim() * solution_dim
    return Task(
        name="rastrigin",
        solution_dim=solution_dim,
        measure_dim=2,
        measure_ranges=((0.0, 1.0), (0.0, 1.0)),
        qd_score_offset=-worst,
        evaluate_fn=functools.partial(_rastrigin_kernel, solution_dim=solution_dim),
        differentiable=True,
        solution_bounds=(0.0, 1.0),
        objective_range=(-worst, 0.0),
        init_fn=unit_uniform_init,
        description=rastrigin.__doc__.split("\n\n")[0],
    )
