"""The functional core: ribsax's step functions and kernels as plain functions.

Every object in ribsax is a shell around a state pytree and pure, jittable kernels.
This module gives a JAX user the scheduler's ask and tell as pure functions over a
static configuration and a state pytree, in the optax / evosax manner, so a whole QD
run can be jitted, embedded in a larger program or ``jax.vmap``-ed over seeds or
hyperparameters held in the states (emitter sigmas, the archive's
``learning_rate``, ...):

.. code-block:: python

    import jax, jax.numpy as jnp
    from ribsax import functional as F

    config, state = F.init(scheduler)          # any traceable scheduler

    def run(state):
        for _ in range(100):
            state, solutions = F.ask(config, state)
            objective, measures = my_evaluate(solutions)   # JAX code
            state, add_info = F.tell(config, state, objective, measures)
        return state

    # Two CMA-MAE runs that differ only in the archive learning rate, in one call:
    states = F.stack([F.init(make_scheduler(lr))[1] for lr in (0.01, 0.1)])
    states = jax.jit(jax.vmap(run))(states)
    F.install(scheduler, config, F.unstack(states, 0), iterations=100)

``init`` reads the configuration and the current state of a scheduler built with
the usual objects; ``install`` writes a state back, after which the objects behave
exactly as after the same ask/tell calls. :func:`ask` and :func:`tell` are
:func:`~ribsax.schedulers._steps.ask_step` and
:func:`~ribsax.schedulers._steps.tell_step`, the step functions that
``Scheduler.ask``/``tell`` and the fused loop of ``Scheduler.run`` run. Schedulers
whose static configuration is equal (classes, shapes, batch sizes, ranker kinds, ...)
share one ``config``; values such as ``sigma`` or ``learning_rate`` live in the
state.

Contents:

* the step functions: :func:`init`, :func:`ask`, :func:`tell`, :func:`install`,
  :class:`State`;
* the fused loop: :class:`LoopPlan`, :func:`loop_carry`, :func:`scan_iterations`,
  :func:`install_carry`, :func:`iteration_keys`, :func:`as_evaluation_functions`,
  :data:`METRIC_NAMES` (a ``jax.lax.scan`` over ask -> evaluate -> tell);
* the archive core: :func:`archive_add` (pyribs' batch insertion with CMA-MAE
  thresholds, the objective sum and the monotone best elite over an
  :class:`ArchiveState`; ``GridArchive.add`` and the fused loop run it),
  :func:`archive_stats`, :func:`archive_view`, and the kernels it is made of,
  :func:`threshold_add`, :func:`grid_index`, :func:`sample_occupied`
  (:func:`loop_add`, :func:`loop_view` and :func:`loop_stats` are the fused loop's
  names for the same functions);
* pytree helpers: :func:`stack`, :func:`unstack`.

Emitter kernels are reached through the emitters' public protocol
(``emitter.kernel``, an :class:`ribsax.emitters.EmitterKernel`, and
``emitter.kernel_state``), optimizer kernels through ``emitter.opt.kernels``.
"""

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ribsax.archives._kernels import (
    ArchiveSpec,
    ArchiveState,
    archive_add,
    archive_stats,
    archive_view,
    grid_index,
    sample_occupied,
    threshold_add,
)
from ribsax.archives._threshold_archive import loop_add, loop_stats, loop_view
from ribsax.emitters._fusion import stack_states as stack
from ribsax.emitters._fusion import unstack_state as unstack
from ribsax.schedulers._carry import carry_off_mesh, carry_on_mesh, install_carry, loop_carry
from ribsax.schedulers._evaluation import as_evaluation_functions, batch_data
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._scan import METRIC_NAMES, iteration_keys, scan_iterations
from ribsax.schedulers._steps import ask_step, tell_step

__all__ = [
    "State",
    "init",
    "ask",
    "tell",
    "install",
    "LoopPlan",
    "loop_carry",
    "scan_iterations",
    "install_carry",
    "iteration_keys",
    "as_evaluation_functions",
    "METRIC_NAMES",
    "ArchiveSpec",
    "ArchiveState",
    "archive_add",
    "archive_stats",
    "archive_view",
    "loop_add",
    "loop_view",
    "loop_stats",
    "threshold_add",
    "grid_index",
    "sample_occupied",
    "stack",
    "unstack",
]


class State(NamedTuple):
    """State of a functional run (a pytree).

    Attributes:
        carry: The scheduler's state (archives, emitters, bandit), as
            :func:`loop_carry` gathers it.
        solutions: The solutions of the last :func:`ask` (``[batch,
            *solution_dim]``), which :func:`tell` adds to the archives.
        dqd_solutions: The same for ``ask(..., dqd=True)`` (None without DQD
            emitters).
    """

    carry: Any
    solutions: Any
    dqd_solutions: Any


def init(scheduler):
    """The static configuration and the current state of ``scheduler``.

    Args:
        scheduler: A :class:`~ribsax.schedulers.Scheduler` or
            :class:`~ribsax.schedulers.BanditScheduler` whose archives compute
            cells on the device and whose emitters have pure kernels (all built-in
            ones), with ``add_mode="batch"``.

    When an emitter's kernel spreads its state over a device mesh (a
    :class:`~ribsax.emitters.PBTMEEmitter` with ``mesh``), the state is laid out
    over that mesh, as :func:`ask` and :func:`tell` need it: the sharded leaves
    (the agents) stay sharded, every other leaf is replicated over the mesh's
    devices; :func:`install` puts the archives' states back on the default device.

    Returns:
        ``(config, state)``: a hashable :class:`LoopPlan` (pass it as a static
        argument) and a :class:`State`.

    Raises:
        ValueError: Something in the scheduler cannot be traced (the message says
            what).
    """
    config = LoopPlan(scheduler)

    def empty(layout):
        return jnp.zeros((layout.total,) + tuple(config.solution_shape), config.solution_dtype)

    dqd = None if config.dqd_layout is None else empty(config.dqd_layout)
    # An emitter with agents sharded over a device mesh (ME-PBT's ``mesh``): the
    # whole state is laid out over that mesh, the agents' leaves staying sharded.
    carry = carry_on_mesh(config, loop_carry(scheduler, config))
    return config, State(carry, empty(config.layout), dqd)


@partial(jax.jit, static_argnums=(0,), static_argnames=("dqd",))
def ask(config, state: State, *, dqd: bool = False):
    """Asks every emitter for solutions (``ask_dqd`` when ``dqd``).

    A bandit scheduler's whole pool asks; the rows of inactive emitters are kept
    out of the archives by :func:`tell`.

    Args:
        config: From :func:`init`.
        state: A :class:`State`.
        dqd: Whether this is the DQD phase (``ask_dqd``).

    Returns:
        ``(state, solutions)`` with all emitters' solutions in emitter order.
    """
    carry, solutions = ask_step(config, state.carry, dqd)
    if dqd:
        return state._replace(carry=carry, dqd_solutions=solutions), solutions
    return state._replace(carry=carry, solutions=solutions), solutions


@partial(jax.jit, static_argnums=(0,), static_argnames=("dqd",))
def tell(
    config, state: State, objective, measures, jacobian=None, fields=None, *, dqd: bool = False
):
    """Adds the evaluated solutions of the last :func:`ask` and updates the
    emitters (``tell_dqd`` when ``dqd``).

    Args:
        config: From :func:`init`.
        state: The :class:`State` returned by :func:`ask`.
        objective: ``[batch]`` objectives.
        measures: ``[batch, measure_dim]`` measures.
        jacobian: ``[batch, 1 + measure_dim, *solution_dim]`` (DQD phase only).
        fields: Dict of the archives' extra fields and of the evaluation's
            other extras (``[batch, ...]`` arrays or pytrees of them, e.g. an RL
            task's transitions, which reach the emitters' tells), if any.
        dqd: Whether this is the DQD phase (``tell_dqd``).

    Returns:
        ``(state, add_info)`` with the archive's ``status`` and ``value`` per
        solution.
    """
    solutions = state.dqd_solutions if dqd else state.solutions
    data = batch_data(jnp, config.batch_dtypes, solutions, objective, measures, fields)
    carry, add_info = tell_step(
        config, state.carry, data, None if jacobian is None else jnp.asarray(jacobian), dqd
    )
    return state._replace(carry=carry), add_info


def install(scheduler, config, state: State, iterations: int | None = None) -> None:
    """Writes ``state`` back into the scheduler, its archives and emitters.

    Args:
        scheduler: The scheduler :func:`init` read (or one of equal
            configuration).
        config: From :func:`init`.
        state: The final :class:`State`.
        iterations: Number of ask/tell iterations run since :func:`init`
            (optional and not needed: the emitters keep their counters, e.g.
            ``itrs``, in their states).
    """
    del iterations
    install_carry(scheduler, config, carry_off_mesh(config, state.carry))
