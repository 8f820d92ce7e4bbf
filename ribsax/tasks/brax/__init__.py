"""Brax QD locomotion tasks with neural-network policies (needs ``brax``).

QDax's task suite on the installed brax: feet-contact tasks (``ant_uni``,
``halfcheetah_uni``, ``hopper_uni``, ``walker2d_uni``, ``humanoid_uni``) and
final-position tasks (``ant_omni``, ``humanoid_omni``). Solutions are flat
parameter vectors of an :class:`MLPPolicy`; a batch is evaluated by ``vmap``-ped
``lax.scan`` rollouts, so the whole evaluation is one jittable function::

    from ribsax.tasks import brax as brax_tasks

    task = brax_tasks.create("walker2d_uni", episode_length=100)
    solutions = task.initial_solutions(64, jax.random.key(0))
    objective, measures, extras = jax.jit(task.evaluate)(solutions, key)

    # or, from pyribs-style code with NumPy arrays:
    evaluate = task.numpy_evaluator(seed=0)
    objective, measures, _ = evaluate(scheduler.ask())

Importing this package imports brax (several seconds); ``ribsax.tasks`` itself does
not.
"""

from ribsax.tasks.brax._brax_task import BraxTask, create
from ribsax.tasks.brax._locomotion import (
    REWARD_OFFSETS,
    TASK_NAMES,
    TASKS,
    LocomotionSpec,
    resolve_links,
)
from ribsax.tasks.brax._policy import MLPPolicy
from ribsax.tasks.brax._rollout import Rollout, Transition, rollout

__all__ = [
    "create",
    "BraxTask",
    "MLPPolicy",
    "rollout",
    "Rollout",
    "Transition",
    "TASK_NAMES",
    "TASKS",
    "REWARD_OFFSETS",
    "LocomotionSpec",
    "resolve_links",
]
