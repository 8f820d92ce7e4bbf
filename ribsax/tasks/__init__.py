"""JAX-native quality-diversity tasks.

A :class:`Task` wraps a batched, jittable evaluation function
``evaluate(solutions, key) -> (objective, measures, extras)`` together with its
metadata (solution and measure dimensions, measure ranges for the archive, QD-score
offset) and, for DQD, its Jacobian.

Using a task in pyribs-style code (NumPy in, NumPy out, jit-compiled)::

    from ribsax.archives import GridArchive
    from ribsax.tasks import sphere

    task = sphere(solution_dim=100)
    archive = GridArchive(solution_dim=task.solution_dim, dims=(100, 100),
                          ranges=task.measure_ranges,
                          qd_score_offset=task.qd_score_offset)
    evaluate = task.numpy_evaluator(seed=0)
    ...
    objective, measures, _ = evaluate(scheduler.ask())
    scheduler.tell(objective, measures)

Using it inside JAX (a fused loop, ``vmap`` over seeds): call ``task.evaluate(solutions,
key)`` or ``task.evaluate_with_jacobian(solutions, key)`` on JAX arrays; both are pure
and traceable.

Brax locomotion tasks (neural policies, feet-contact and final-position measures)
live in :mod:`ribsax.tasks.brax`, which imports brax only when it is imported.
"""

from ribsax.tasks._arm import arm, qdax_arm
from ribsax.tasks._es_gradient import centered_ranks, es_jacobian, es_jacobian_fn
from ribsax.tasks._gradient_sources import (
    JacobianSource,
    exact_jacobian,
    exact_jacobian_fn,
    jacobian_via_jvp,
    with_jacobian,
    zero_jacobian_fn,
)
from ribsax.tasks._hypervolume import (
    checkered,
    continuous_islands,
    empty_circle,
    non_continuous_islands,
    square,
)
from ribsax.tasks._jacobian import jacobian_via_vjp
from ribsax.tasks._numpy_evaluator import NumpyEvaluator
from ribsax.tasks._projection import linear_projection, rastrigin_projection, sphere
from ribsax.tasks._rastrigin import rastrigin
from ribsax.tasks._task import EXTRA_EVALUATIONS, Task

__all__ = [
    "Task",
    "EXTRA_EVALUATIONS",
    "NumpyEvaluator",
    "jacobian_via_vjp",
    "jacobian_via_jvp",
    "exact_jacobian",
    "exact_jacobian_fn",
    "es_jacobian",
    "es_jacobian_fn",
    "centered_ranks",
    "JacobianSource",
    "with_jacobian",
    "zero_jacobian_fn",
    "sphere",
    "rastrigin",
    "rastrigin_projection",
    "linear_projection",
    "arm",
    "qdax_arm",
    "square",
    "checkered",
    "empty_circle",
    "non_continuous_islands",
    "continuous_islands",
]
