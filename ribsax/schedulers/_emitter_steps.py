"""The emitters' halves of the step functions.

:func:`emitters_prepare`, :func:`emitters_ask` and :func:`emitters_tell` run every
emitter unit's ``ask`` and ``tell`` kernels (``ask_dqd``/``tell_dqd`` in the DQD
phase) over the scheduler's whole batch in emitter order, fusion groups
``vmap``-ed; :func:`emitters_draws` makes an ask's random numbers ahead of it.
The step functions of :mod:`~ribsax.schedulers._steps` call them around the
archive add, and the ask/tell loop (:mod:`~ribsax.schedulers._object_steps`) calls
them alone, its archive objects adding the batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.emitters._emitter_kernel import feedback_from_batch
from ribsax.emitters._fusion import _mask_select, trial_axis_active
from ribsax.emitters._jax_emitter import evaluations_members, tell_members
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._units import (
    active_members,
    ask_unit,
    member_mask,
    prepare_unit,
    stack_units,
    unit_draws,
    unit_draws_ahead,
    unit_kernel,
    unit_tells,
    unstack_units,
)

__all__ = [
    "emitters_prepare",
    "draws_ahead",
    "emitters_draws",
    "emitters_ask",
    "emitters_tell",
    "emitter_evaluations",
]


def emitters_prepare(plan, states, active, dqd):
    """Every unit's :func:`~ribsax.schedulers._units.prepare_unit` (kernels'
    :meth:`~ribsax.emitters.EmitterKernel.prepare`, e.g. CMA-ES' lazy
    eigendecomposition), the part of the ask that :func:`emitters_ask` expects
    done (nothing in the DQD phase). Arguments as in :func:`emitters_ask`;
    returns the unit states."""
    if dqd:
        return states
    layout = plan.layout
    before, stacked = states, stack_units(plan, states)
    states = list(stacked)
    for u, unit in enumerate(plan.units):
        if layout.active[u]:
            states[u] = prepare_unit(unit, states[u], member_mask(active, unit))
    return unstack_units(plan, states, stacked, before)


def draws_ahead(plan) -> bool:
    """Whether every unit of ``plan`` that asks can make its ask draws ahead of
    the ask (:func:`emitters_draws`).

    Only then do the ask/tell loop's asks take draws made ahead: handing some
    units their draws changes how XLA compiles the rest of the ask step, and the
    other units' results (a CMA-ES' eigendecomposition of a nearly isotropic
    covariance, for one) would then differ from the fused loop's by rounding.
    """
    asking = [unit for u, unit in enumerate(plan.units) if plan.layout.active[u]]
    return bool(asking) and all(unit_draws_ahead(unit) for unit in asking)


def emitters_draws(plan, states):
    """The random numbers the next (non-DQD) :func:`emitters_ask` on ``states``
    draws, per unit (None for the units that draw inside their ask kernel), for
    ``emitters_ask(..., draws=...)``. They depend on the states' keys alone, so
    the ask/tell loop makes them while the caller evaluates the previous batch.
    """
    stacked = stack_units(plan, states)
    return [
        unit_draws(unit, st) if plan.layout.active[u] and unit_draws_ahead(unit) else None
        for u, (unit, st) in enumerate(zip(plan.units, stacked))
    ]


def emitters_ask(plan, view, states, active, dqd, draws=None):
    """The emitters' half of the ask step after :func:`emitters_prepare`: every
    unit's ``ask`` (``ask_dqd``) kernel, fusion groups vmapped.

    Args:
        plan: :class:`LoopPlan`.
        view: :class:`~ribsax.emitters._emitter_base.ArchiveView` of the archive.
        states: Unit states (as
            :func:`~ribsax.schedulers._carry.loop_carry` holds them).
        active: None, or bool[emitters]: emitters whose asks count (the others
            keep their states; their rows are still produced).
        dqd: Whether this is the DQD phase.
        draws: None (the kernels draw), or :func:`emitters_draws` of ``states``
            (not with ``active`` or ``dqd``).

    Returns:
        ``(states, solutions)`` with ``solutions`` the whole batch in emitter order
        (``plan.layout`` / ``plan.dqd_layout``).
    """
    layout = plan.dqd_layout if dqd else plan.layout
    before, stacked = states, stack_units(plan, states)
    states = list(stacked)
    pieces = []
    for u, unit in enumerate(plan.units):
        if not layout.active[u]:
            continue
        states[u], sols = ask_unit(
            unit,
            states[u],
            view,
            dqd,
            member_mask(active, unit),
            None if draws is None else draws[u],
        )
        pieces.append(sols.reshape((-1,) + sols.shape[2:]))
    solutions = jnp.concatenate(pieces, axis=0).astype(plan.solution_dtype)
    if layout.perm is not None:
        solutions = solutions[layout.perm]
    return unstack_units(plan, states, stacked, before), solutions


def emitters_tell(plan, view, nonempty, states, active, data, add_info, jacobian, dqd):
    """The emitters' half of the tell step: each unit's ``tell`` (``tell_dqd``)
    kernel on its rows (:class:`~ribsax.emitters.EmitterFeedback`).

    Args:
        plan: :class:`LoopPlan`.
        view: Archive view after the add.
        nonempty: bool scalar, whether the archive holds an elite after the add
            (ES restarts need one).
        states: Unit states.
        active: None or bool[emitters] (inactive emitters keep their states).
        data: name -> [batch, ...] arrays (or pytrees of them: the task's
            extras) of the whole batch in emitter order.
        add_info: The archive's ``status`` and ``value`` for the batch, and
            optionally ``valid`` (bool[batch], False for non-finite rows).
        jacobian: [batch, 1 + measure_dim, *solution_dim] (DQD phase) or None.
        dqd: Whether this is the DQD phase.

    Returns:
        The new unit states.
    """
    layout = plan.dqd_layout if dqd else plan.layout
    before, stacked = states, stack_units(plan, states)
    states = list(stacked)
    whole = whole_batch(layout, data, add_info, active)
    for u, unit in enumerate(plan.units):
        if not layout.active[u] or not unit_tells(unit, dqd):
            continue
        members, batch = len(unit.indices), layout.member_batch[u]
        rows = layout.unit_rows[u]

        def split(tree, rows=rows, members=members, batch=batch):
            return jax.tree.map(
                lambda arr: arr[rows].reshape((members, batch) + arr.shape[1:]), tree
            )

        unit_data = split(data)
        unit_info = split(add_info)
        unit_jacobian = split(jacobian) if dqd else None
        kernel = unit_kernel(unit)
        inputs = jax.vmap(lambda d, i, j: feedback_from_batch(d, i)._replace(jacobian=j))(
            unit_data, unit_info, unit_jacobian
        )
        # Each member's rows of the whole batch (EmitterFeedback.batch["own"]).
        own = layout.row_emitter[None, :] == np.asarray(unit.indices)[:, None]
        inputs = inputs._replace(batch={"own": jnp.asarray(own)})

        def tell(st, inp, kernel=kernel):
            return tell_members(kernel, st, inp, whole, view, dqd=dqd)

        one_by_one = kernel.members_one_by_one
        mask = member_mask(active, unit)
        if mask is not None and not dqd and not trial_axis_active():
            states[u], _ = active_members(tell, mask, states[u], inputs, one_by_one=one_by_one)
            continue
        new, _ = tell(states[u], inputs)
        states[u] = new if mask is None else _mask_select(mask, new, states[u])
    return unstack_units(plan, states, stacked, before)


def whole_batch(layout, data, add_info, active) -> dict:
    """The whole batch as every emitter that reads it receives it (the
    ``batch`` of :class:`ribsax.emitters.EmitterFeedback`): ``solution``,
    ``objective``, ``measures``, ``status``, ``valid`` (False for non-finite rows
    and for the rows of a bandit's inactive emitters) and the task's ``extras``,
    in the scheduler's row order (each member's ``own`` rows are added by
    :func:`emitters_tell`). What no emitter reads is dropped by the
    compiler."""
    core = ("solution", "objective", "measures")
    status = add_info["status"]
    valid = add_info.get("valid")
    if valid is None:
        valid = jnp.ones(status.shape, bool)
    if active is not None:
        valid = valid & active[layout.row_emitter]
    return {
        **{name: data[name] for name in core},
        "status": status,
        "valid": valid,
        "extras": {k: v for k, v in data.items() if k not in core},
    }


def emitter_evaluations(plan: LoopPlan, states):
    """int32 scalar: the evaluations the emitters of ``states`` (unit states)
    report having made themselves (see
    :meth:`ribsax.emitters.EmitterKernel.evaluations`)."""
    total = jnp.zeros((), jnp.int32)
    for unit, st in zip(plan.units, stack_units(plan, states)):
        kernel = unit_kernel(unit)
        if kernel is not None:
            total += jnp.sum(evaluations_members(kernel, st))
    return total
