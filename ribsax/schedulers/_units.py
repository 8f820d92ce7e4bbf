"""Emitter units: the emitters that one kernel call runs.

A unit is a fusion group of the scheduler (its members' states stacked, one
``vmap``-ed kernel) or one ungrouped emitter. :func:`emitter_units` lists a
scheduler's units; :func:`stack_units` and :func:`unstack_units` give every unit
state a leading member axis and take it away again; :func:`ask_unit` and
:func:`active_members` run a unit's kernels, keeping the states of members that a
bandit did not select.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._tracing import update_members
from ribsax.emitters._fusion import _mask_select, trial_axis_active

__all__ = ["emitter_units", "ask_unit", "active_members", "member_mask",
           "stack_units", "unstack_units"]


class _Unit(NamedTuple):
    """Emitters run by one kernel: a fusion group, or one ungrouped emitter."""

    cls: type
    config: Any
    indices: tuple
    group: Any
    emitter: Any


def emitter_units(scheduler):
    """The scheduler's fusion groups plus its ungrouped emitters, as units."""
    # pylint: disable = protected-access
    scheduler._refresh_groups()
    emitters = list(scheduler._emitters)
    units = []
    for group in scheduler._groups:
        indices = tuple(_index_of(emitters, e) for e in group.emitters)
        units.append(_Unit(group.cls, group.config, indices, group, group.emitters[0]))
    grouped = {i for unit in units for i in unit.indices}
    for i, emitter in enumerate(emitters):
        if i not in grouped:
            units.append(_Unit(type(emitter), emitter.fusion_config, (i,), None,
                               emitter))
    return units


def _index_of(items, obj) -> int:
    for i, item in enumerate(items):
        if item is obj:
            return i
    raise ValueError("fusion group member not found among the scheduler's emitters")


def ask_unit(unit, states, view, dqd, active=None, draws=None):
    """Ask of every member of ``unit``; members where ``active`` (bool[members])
    is False keep their state (see :func:`active_members`). ``draws``: the unit's
    :func:`~ribsax.schedulers._emitter_steps.emitters_draws` (no ``active``
    then), or None."""
    # pylint: disable = protected-access
    if dqd:
        return unit.cls._ask_dqd_kernel_stacked(unit.config, states, view)
    if draws is not None:
        return unit.cls._ask_kernel_stacked(unit.config, states, view, None, draws)
    if active is not None and not trial_axis_active():
        return active_members(
            lambda st: unit.cls._ask_kernel_stacked(unit.config, st, view), active,
            states, one_by_one=unit.cls._loop_members_one_by_one)
    new, solutions = unit.cls._ask_kernel_stacked(unit.config, states, view, active)
    if active is not None:
        new = _mask_select(active, new, states)
    return new, solutions


def active_members(kernel, active, states, inputs=None, one_by_one=False):
    """``kernel`` (a stacked-members kernel: ``kernel(states[, inputs]) -> (states,
    out)``) run for a unit whose members are active where ``active``
    (bool[members]) is set: inactive members keep their state, and their part of
    ``out`` is zeros.

    A bandit scheduler's pool has several times more emitters than it runs, and
    its active emitters tend to gather in few units. By default, a real
    ``lax.cond`` skips the units with no active member and otherwise runs every
    member, keeping the active members' new states. With ``one_by_one`` (emitters
    with much work per member, see ``EmitterBase._loop_members_one_by_one``), a
    loop runs the kernel on the active members only, one after another, updating
    their slots of the stacked states in place; only the state leaves that the
    kernel computes are carried through the loop. (Under ``run_trials``' vmap
    predicates and trip counts would be batched, so callers keep the plain
    vmap-and-select form there.)
    """
    if one_by_one:
        return update_members(kernel, active, states, inputs, keep_axis=True)

    def run(args):
        st, inp = args
        new, out = kernel(st) if inp is None else kernel(st, inp)
        return _mask_select(active, new, st), out

    out_shape = jax.eval_shape(run, (states, inputs))[1]
    return jax.lax.cond(
        jnp.any(active), run,
        lambda args: (args[0], jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype),
                                            out_shape)),
        (states, inputs))


def member_mask(active, unit):
    return None if active is None else active[np.asarray(unit.indices)]


def stack_units(plan, states):
    """Unit states with a leading member axis (ungrouped emitters get one)."""
    return [st if unit.group is not None else jax.tree.map(lambda x: x[None], st)
            for unit, st in zip(plan.units, states)]


def unstack_units(plan, states, stacked, before):
    """Inverse of :func:`stack_units`: ``before`` is what :func:`stack_units` was given
    and ``stacked`` what it returned.

    A leaf that a kernel returned unchanged comes back as the very array of
    ``before``, so that conditionals and loops around the step (see
    :func:`~ribsax.schedulers._steps._computed_once`) see it passed through and
    do not copy it.
    """
    out = []
    for unit, st, expanded, old in zip(plan.units, states, stacked, before):
        if unit.group is not None:
            out.append(st)
        else:
            out.append(jax.tree.map(lambda x, e, o: o if x is e else x[0],
                                    st, expanded, old))
    return out
