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
from ribsax.emitters._emitter_kernel import EmitterKernel
from ribsax.emitters._fusion import _mask_select, any_across_trials, trial_axis_active
from ribsax.emitters._jax_emitter import JaxEmitter, ask_members, draw_members

__all__ = [
    "emitter_units",
    "ask_unit",
    "prepare_unit",
    "active_members",
    "member_mask",
    "stack_units",
    "unstack_units",
    "unit_kernel",
    "unit_asks",
    "unit_draws_ahead",
    "unit_draws",
    "unit_tells",
    "unit_uses_lapack",
    "unit_reads_archive",
    "unit_restarts",
    "emitter_ready",
]


class _Unit(NamedTuple):
    """Emitters run by one kernel: a fusion group, or one ungrouped emitter."""

    cls: type
    config: Any
    indices: tuple
    group: Any
    emitter: Any


def emitter_units(scheduler):
    """The scheduler's fusion groups plus its ungrouped emitters, as units."""
    scheduler._refresh_groups()
    emitters = list(scheduler._emitters)
    units = []
    for group in scheduler._groups:
        indices = tuple(_index_of(emitters, e) for e in group.emitters)
        units.append(_Unit(group.cls, group.config, indices, group, group.emitters[0]))
    grouped = {i for unit in units for i in unit.indices}
    for i, emitter in enumerate(emitters):
        if i not in grouped:
            units.append(_Unit(type(emitter), emitter.fusion_config, (i,), None, emitter))
    return units


# ---------------------------------------------------------------------------
# What a unit or an emitter can do. The traced steps run JaxEmitters only,
# through their EmitterKernel (the unit's config); other emitters are asked and
# told through their own ask and tell.
# ---------------------------------------------------------------------------
def unit_kernel(unit):
    """The :class:`~ribsax.emitters.EmitterKernel` of a unit of
    :class:`~ribsax.emitters.JaxEmitter` members, else None."""
    return unit.config if isinstance(unit.config, EmitterKernel) else None


def unit_asks(unit, dqd) -> bool:
    """Whether the unit's members ask in this phase (``ask_dqd`` when ``dqd``:
    only DQD kernels do)."""
    kernel = unit_kernel(unit)
    return kernel is not None and (kernel.has_dqd or not dqd)


def unit_draws_ahead(unit) -> bool:
    """Whether the unit's asks can take their random numbers made ahead
    (:meth:`EmitterKernel.draws <ribsax.emitters.EmitterKernel.draws>`)."""
    kernel = unit_kernel(unit)
    return kernel is not None and kernel.has_draws


def unit_draws(unit, states):
    """The random numbers of the next ask of the unit's stacked ``states``
    (only where :func:`unit_draws_ahead`)."""
    return draw_members(unit_kernel(unit), states)


def unit_tells(unit, dqd) -> bool:
    """Whether the unit's members are told (``tell_dqd`` when ``dqd``): a kernel
    without :meth:`EmitterKernel.tell <ribsax.emitters.EmitterKernel.tell>` is
    not."""
    kernel = unit_kernel(unit)
    if kernel is None:
        return False
    return kernel.has_dqd if dqd else kernel.has_tell


def unit_uses_lapack(unit) -> bool:
    """Whether the unit's kernels call LAPACK (see
    :attr:`EmitterKernel.uses_lapack
    <ribsax.emitters.EmitterKernel.uses_lapack>`)."""
    kernel = unit_kernel(unit)
    return kernel is not None and kernel.uses_lapack


def unit_reads_archive(unit) -> bool:
    """Whether the unit's ask reads the archive's view (see
    :attr:`EmitterKernel.ask_reads_archive
    <ribsax.emitters.EmitterKernel.ask_reads_archive>`)."""
    kernel = unit_kernel(unit)
    return kernel is None or kernel.ask_reads_archive


def unit_restarts(unit, state):
    """int32 restart counts of the unit's members (``state`` as the carry holds
    it: stacked for a fusion group), or None for emitters without restarts (see
    :meth:`EmitterKernel.restarts <ribsax.emitters.EmitterKernel.restarts>`)."""
    kernel = unit_kernel(unit)
    if kernel is None or not kernel.has_restarts:
        return None
    if unit.group is None:
        return jnp.asarray(kernel.restarts(state.inner), jnp.int32)
    return jax.vmap(kernel.restarts)(state.inner).astype(jnp.int32)


def emitter_ready(emitter, phase="loop") -> bool:
    """Whether ``emitter`` can run through its pure kernels right now: in the
    fused loop (``phase="loop"``), or in the step functions of the scheduler's
    next ``ask`` (``"ask"``) or ``ask_dqd`` (``"ask_dqd"``). False sends the
    scheduler down the Python path (each emitter's own ``ask``/``tell``), or
    makes the fused loop refuse to run. Only
    :class:`~ribsax.emitters.JaxEmitter` instances with a fusion key whose
    :meth:`~ribsax.emitters.JaxEmitter.kernel_ready` holds can run there."""
    return (
        isinstance(emitter, JaxEmitter)
        and emitter.fusion_key is not None
        and emitter.kernel_ready(phase)
    )


def _index_of(items, obj) -> int:
    for i, item in enumerate(items):
        if item is obj:
            return i
    raise ValueError("fusion group member not found among the scheduler's emitters")


def ask_unit(unit, states, view, dqd, active=None, draws=None):
    """Ask of every member of ``unit`` (stacked ``states``), after
    :func:`prepare_unit`; members where ``active`` (bool[members]) is False keep
    their state (see :func:`active_members`). ``draws``: the unit's
    :func:`~ribsax.schedulers._emitter_steps.emitters_draws` (no ``active``
    then), or None."""
    kernel = unit_kernel(unit)
    if draws is not None:
        return ask_members(kernel, states, view, draws)

    def ask(st):
        return ask_members(kernel, st, view, dqd=dqd)

    one_by_one = kernel.members_one_by_one
    if active is not None and not trial_axis_active():
        return active_members(ask, active, states, one_by_one=one_by_one)
    new, solutions = ask(states)
    if active is not None:
        new = _mask_select(active, new, states)
    return new, solutions


def prepare_unit(unit, states, active=None):
    """The :meth:`EmitterKernel.prepare
    <ribsax.emitters.EmitterKernel.prepare>` of the unit's members that are due
    (and ``active``: None or bool[members]), before their ask.

    A loop visits the due members only, one after another, and updates their
    slots of the stacked ``states`` in place, one loop per pass of the kernel's
    :meth:`~ribsax.emitters.EmitterKernel.prepare_passes` (a ``vmap``-ed
    conditional would prepare every member). Under ``run_trials``' vmap a
    per-member conditional would run every trial's work, so the decision is
    taken once for all trials and the members that were not due keep their
    state.
    """
    kernel = unit_kernel(unit)
    if kernel is None or not kernel.has_prepare:
        return states
    inner = states.inner
    due = jax.vmap(kernel.prepare_due)(inner)
    if active is not None:
        due = due & active
    if trial_axis_active():

        def prepare_due(st):
            return _mask_select(due, jax.vmap(kernel.prepare)(st), st)

        inner = jax.lax.cond(any_across_trials(jnp.any(due)), prepare_due, lambda st: st, inner)
    else:
        for step in kernel.prepare_passes():
            inner, _ = update_members(
                lambda member, step=step: (step(member), ()), due, inner, keep_axis=False
            )
    return states._replace(inner=inner)


def active_members(kernel, active, states, inputs=None, one_by_one=False):
    """``kernel`` (a stacked-members kernel: ``kernel(states[, inputs]) -> (states,
    out)``) run for a unit whose members are active where ``active``
    (bool[members]) is set: inactive members keep their state, and their part of
    ``out`` is zeros.

    A bandit scheduler's pool has several times more emitters than it runs, and
    its active emitters tend to gather in few units. By default, a real
    ``lax.cond`` skips the units with no active member and otherwise runs every
    member, keeping the active members' new states. With ``one_by_one`` (emitters
    with much work per member, see :attr:`EmitterKernel.members_one_by_one
    <ribsax.emitters.EmitterKernel.members_one_by_one>`), a
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
        jnp.any(active),
        run,
        lambda args: (args[0], jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), out_shape)),
        (states, inputs),
    )


def member_mask(active, unit):
    return None if active is None else active[np.asarray(unit.indices)]


def stack_units(plan, states):
    """Unit states with a leading member axis (ungrouped emitters get one)."""
    return [
        st if unit.group is not None else jax.tree.map(lambda x: x[None], st)
        for unit, st in zip(plan.units, states)
    ]


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
            out.append(jax.tree.map(lambda x, e, o: o if x is e else x[0], st, expanded, old))
    return out
