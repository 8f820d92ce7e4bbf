"""Linear-projection benchmarks: pyribs' sphere and the DQD rastrigin projection.

These are the benchmarks of Fontaine et al. (CMA-ME, 2020) and Fontaine & Nikolaidis
(DQD, 2021) as used in pyribs' ``examples/sphere.py`` and QDax's
``rastrigin_proj_scoring_function``:

* the objective is a sphere or rastrigin function shifted so that its optimum is at
  ``x_i = 5.12 * 0.4 = 2.048``;
* every coordinate is *folded* into ``[-5.12, 5.12]`` (a value ``x`` outside the
  interval becomes ``5.12 / x``), and the two measures are the sums (pyribs) or means
  (QDax) of the folded first and second halves of the solution (the first half has
  ``solution_dim // 2`` coordinates).
"""

from __future__ import annotations

import dataclasses
import functools

import jax.numpy as jnp
import numpy as np

from ribsax.tasks._task import Task, measure_shape_check

__all__ = ["sphere", "rastrigin_projection", "linear_projection"]

BOUND = 5.12
SHIFT = 5.12 * 0.4


def _fold(solutions):
    """Folds each coordinate into [-5.12, 5.12]; returns values and derivatives."""
    outside = (solutions < -BOUND) | (solutions > BOUND)
    # The safe denominator keeps the unused branch finite so that autodiff through
    # this function (jacobian_via_vjp) never produces 0 * inf = NaN.
    safe = jnp.where(outside, solutions, 1.0)
    folded = jnp.where(outside, BOUND / safe, solutions)
    derivative = jnp.where(outside, -BOUND / (safe * safe), 1.0)
    return folded, derivative


def _raw_objective(kind, solutions):
    """Unnormalised cost (0 at the optimum) and its gradient."""
    z = solutions - SHIFT
    if kind == "sphere":
        return jnp.sum(z * z, axis=1), 2.0 * z
    two_pi_z = 2.0 * jnp.pi * z
    raw = 10.0 * solutions.shape[1] + jnp.sum(z * z - 10.0 * jnp.cos(two_pi_z), axis=1)
    return raw, 2.0 * z + 20.0 * jnp.pi * jnp.sin(two_pi_z)


def worst_cost_per_dim(kind: str) -> float:
    """Largest per-coordinate cost over ``[-5.12, 5.12]``.

    For the sphere this is pyribs' ``(-5.12 - 2.048) ** 2``. For rastrigin the maximum
    is interior (near ``x = -4.45``), so it is located on a dense grid and polished
    with Newton steps on the derivative.
    """
    if kind == "sphere":
        return (-BOUND - SHIFT) ** 2
    grid = np.linspace(-BOUND, BOUND, 200_001)

    def cost(x):
        z = x - SHIFT
        return z * z - 10.0 * np.cos(2 * np.pi * z) + 10.0

    x = grid[np.argmax(cost(grid))]
    for _ in range(20):
        z = x - SHIFT
        d1 = 2 * z + 20 * np.pi * np.sin(2 * np.pi * z)
        d2 = 2 + 40 * np.pi**2 * np.cos(2 * np.pi * z)
        x = float(np.clip(x - d1 / d2, -BOUND, BOUND))
    return float(max(cost(x), cost(grid).max()))


def _projection_kernel(
    solutions,
    key,
    *,
    kind,
    solution_dim,
    measure_reduction,
    normalize,
    worst,
    pyribs_objective_grad,
    with_jacobian,
):
    del key  # Deterministic.
    measure_shape_check(solutions, solution_dim)
    raw, raw_grad = _raw_objective(kind, solutions)
    if normalize:
        objective = (raw - worst) / (0.0 - worst) * 100.0
        objective_grad = raw_grad * (-100.0 / worst)
    else:
        objective = -raw
        objective_grad = -raw_grad
    if pyribs_objective_grad:
        objective_grad = -raw_grad

    folded, derivative = _fold(solutions)
    half = solution_dim // 2
    first = jnp.sum(folded[:, :half], axis=1)
    second = jnp.sum(folded[:, half:], axis=1)
    if measure_reduction == "mean":
        first = first / half
        second = second / (solution_dim - half)
    measures = jnp.stack([first, second], axis=1)
    if not with_jacobian:
        return objective, measures, {}

    in_first = (jnp.arange(solution_dim) < half).astype(solutions.dtype)
    d_first = derivative * in_first
    d_second = derivative * (1.0 - in_first)
    if measure_reduction == "mean":
        d_first = d_first / half
        d_second = d_second / (solution_dim - half)
    jacobian = jnp.stack([objective_grad, d_first, d_second], axis=1)
    return objective, measures, jacobian, {}


def linear_projection(
    objective="sphere",
    solution_dim=1000,
    *,
    measure_reduction="sum",
    normalize=True,
    pyribs_objective_grad=False,
) -> Task:
    """The linear-projection DQD benchmark with a sphere or rastrigin objective.

    Objective (with ``z = x - 2.048``; ``n = solution_dim``):

    * ``"sphere"``: cost ``sum(z**2)``;
    * ``"rastrigin"``: cost ``10 n + sum(z**2 - 10 cos(2 pi z))``.

    With ``normalize=True`` (pyribs' convention) the objective is
    ``(cost - worst) / (0 - worst) * 100`` where ``worst`` is the largest cost over
    ``[-5.12, 5.12]^n`` (for the sphere, pyribs' ``(-5.12 - 2.048)**2 * n``; for
    rastrigin, the numerically located interior maximum, so the objective stays in
    ``[0, 100]`` on the whole box); outside the box it can be negative. With
    ``normalize=False`` the objective is ``-cost`` (QDax's convention, whose
    ``rastrigin_proj_scoring_function`` is ``linear_projection("rastrigin",
    measure_reduction="mean", normalize=False)``).

    Measures: sums (``"sum"``, pyribs) or means (``"mean"``, QDax) of the folded first
    and second halves (see the module docstring). Ranges: ``+-5.12 * len(half)`` for
    sums, ``+-5.12`` for means.

    The Jacobian is analytic. pyribs' ``examples/sphere.py`` returns
    ``-2 (x - 2.048)``, the gradient of the *unnormalised* ``-cost``, as the objective
    gradient of its normalised objective; ``pyribs_objective_grad=True`` reproduces
    that (it matters for emitters that do not normalise gradients, e.g.
    OG-MAP-Elites). By default the exact gradient of the returned objective is used.

    Args:
        objective: ``"sphere"`` or ``"rastrigin"``.
        solution_dim: Number of parameters (at least 2).
        measure_reduction: ``"sum"`` or ``"mean"``.
        normalize: Normalise the objective to ``[0, 100]`` over the box.
        pyribs_objective_grad: Use pyribs' (unnormalised) objective gradient.

    Returns:
        A differentiable :class:`Task` with ``measure_dim=2``.

    Raises:
        ValueError: Unknown ``objective`` or ``measure_reduction``, or
            ``solution_dim < 2``.
    """
    if objective not in ("sphere", "rastrigin"):
        raise ValueError(f"objective must be 'sphere' or 'rastrigin', got {objective!r}")
    if measure_reduction not in ("sum", "mean"):
        raise ValueError(f"measure_reduction must be 'sum' or 'mean', got {measure_reduction!r}")
    solution_dim = int(solution_dim)
    if solution_dim < 2:
        raise ValueError(f"solution_dim must be at least 2, got {solution_dim}")
    worst = worst_cost_per_dim(objective) * solution_dim
    half = solution_dim // 2
    if measure_reduction == "sum":
        ranges = (
            (-BOUND * half, BOUND * half),
            (-BOUND * (solution_dim - half), BOUND * (solution_dim - half)),
        )
    else:
        ranges = ((-BOUND, BOUND), (-BOUND, BOUND))
    kernel = functools.partial(
        _projection_kernel,
        kind=objective,
        solution_dim=solution_dim,
        measure_reduction=measure_reduction,
        normalize=normalize,
        worst=worst,
        pyribs_objective_grad=pyribs_objective_grad,
    )
    if normalize:
        offset, obj_range = 0.0, (0.0, 100.0)
    else:
        offset, obj_range = -worst, (-worst, 0.0)
    return Task(
        name=f"{objective}_projection",
        solution_dim=solution_dim,
        measure_dim=2,
        measure_ranges=ranges,
        qd_score_offset=offset,
        evaluate_fn=functools.partial(kernel, with_jacobian=False),
        jacobian_fn=functools.partial(kernel, with_jacobian=True),
        differentiable=True,
        solution_bounds=None,
        objective_range=obj_range,
        description=linear_projection.__doc__.split("\n\n")[0],
    )


def sphere(solution_dim=100, *, pyribs_objective_grad=False) -> Task:
    """pyribs' sphere benchmark (``examples/sphere.py``; Fontaine et al. 2020).

    Shifted sphere ``sum((x - 2.048)**2)`` normalised to ``[0, 100]`` with
    ``worst = (-5.12 - 2.048)**2 * solution_dim`` (100 at the optimum), measures = sums
    of the folded halves, archive ``ranges`` ``[(-5.12 * n/2, 5.12 * n/2)] * 2`` as in
    pyribs (for an odd ``solution_dim`` each half gets its own exact range). Search is
    unbounded and starts from ``x0 = zeros``; QD-score offset 0 (pyribs' default).
    Same as ``linear_projection("sphere", solution_dim)``.

    Args:
        solution_dim: Number of parameters (pyribs' ``dim``, default 100).
        pyribs_objective_grad: See :func:`linear_projection`.

    Returns:
        A differentiable :class:`Task`.
    """
    task = linear_projection("sphere", solution_dim, pyribs_objective_grad=pyribs_objective_grad)
    return dataclasses.replace(task, name="sphere", description=sphere.__doc__.split("\n\n")[0])


def rastrigin_projection(solution_dim=1000, *, measure_reduction="sum", normalize=True) -> Task:
    """The rastrigin linear-projection DQD benchmark (Fontaine & Nikolaidis 2021).

    ``linear_projection("rastrigin", solution_dim, ...)``, 1000-D by default as in
    the DQD paper. See :func:`linear_projection` for the formula.

    Args:
        solution_dim: Number of parameters.
        measure_reduction: ``"sum"`` (pyribs) or ``"mean"`` (QDax).
        normalize: Normalise the objective to ``[0, 100]``.

    Returns:
        A differentiable :class:`Task`.
    """
    return linear_projection(
        "rastrigin", solution_dim, measure_reduction=measure_reduction, normalize=normalize
    )
