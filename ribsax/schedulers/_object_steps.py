"""The ask/tell loop on the step functions of the fused loop.

:meth:`Scheduler.ask <ribsax.schedulers.Scheduler.ask>` and :meth:`tell
<ribsax.schedulers.Scheduler.tell>` (and the :class:`BanditScheduler
<ribsax.schedulers.BanditScheduler>`'s) run
:func:`~ribsax.schedulers._emitter_steps.emitters_ask` and
:func:`~ribsax.schedulers._emitter_steps.emitters_tell`, the emitter halves of
:func:`~ribsax.schedulers._steps.ask_step` and
:func:`~ribsax.schedulers._steps.tell_step`, jitted once per configuration
(:func:`compiled_steps`), on the unit states gathered from the emitter objects and
installed back into them after each call. The archive add is done by the archive
objects (their validation and pyribs' messages, ``add_mode="single"``), and the
bandit's selection and credit run on the host with the same rules
(:func:`~ribsax.schedulers._bandit_rule.bandit_selection`,
:func:`~ribsax.schedulers._bandit_rule.bandit_credit`).

The DQD phase (``ask_dqd``/``tell_dqd``) runs the same way on the DQD kernels of
the step functions (``emitters_ask``/``emitters_tell`` with ``dqd=True``).

A call takes the documented Python path (each emitter's own ``ask``/``tell``,
fusion groups through :class:`~ribsax.emitters._fusion.EmitterGroup`) when the
configuration cannot be traced (:func:`object_plan` returns None: an emitter
without kernels, host-side sampling or pending ``initial_solutions``, an archive
without a device store, an emitter whose :meth:`JaxEmitter.kernel_ready
<ribsax.emitters.JaxEmitter.kernel_ready>` is False for the phase), or when a
tell needs host work or must raise pyribs' errors (an emitter's
:meth:`JaxEmitter.kernel_tell_ready
<ribsax.emitters.JaxEmitter.kernel_tell_ready>` is False, e.g. an ES whose
restart may be due on an empty archive; a batch or Jacobian that ``tell_dqd``
would reject).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from functools import partial
from typing import Any, NamedTuple

import jax
import numpy as np

from ribsax.archives._array_store import ensure_committed
from ribsax.emitters._dqd_common import validate_dqd_batch
from ribsax.emitters._emitter_base import archive_device_view
from ribsax.emitters._fusion import blas_single_thread
from ribsax.emitters._placement import on_mesh
from ribsax.schedulers._bandit_rule import active_row_count, active_rows, spread_rows
from ribsax.schedulers._emitter_steps import (
    draws_ahead,
    emitters_ask,
    emitters_draws,
    emitters_prepare,
    emitters_tell,
)
from ribsax.schedulers._evaluation import batch_data
from ribsax.schedulers._loop_plan import LoopPlan
from ribsax.schedulers._units import (
    emitter_ready,
    unit_kernel,
    unit_reads_archive,
    unit_tells,
    unit_uses_lapack,
)

__all__ = ["StepFunctions", "compiled_steps", "object_plan", "traced_ask", "traced_tell"]

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 32


class StepFunctions(NamedTuple):
    """Jitted emitter steps of one configuration.

    Attributes:
        ask: ``(view, states, active, draws) -> (states, solutions)``; with a
            bandit's ``active`` emitters, ``solutions`` holds their rows first
            (:func:`~ribsax.schedulers._bandit_rule.active_rows`).
        tell: ``(view, nonempty, states, active, data, add_info) -> states``;
            with ``active``, ``data`` and ``add_info`` hold the active emitters'
            rows in the same order, padded to the same length.
        draws: ``states -> draws``, the random numbers of the next ``ask`` on
            ``states``
            (:func:`~ribsax.schedulers._emitter_steps.emitters_draws`).
        ask_dqd: ``(view, states) -> (states, solutions)``, the DQD phase's ask
            (``plan.dqd_layout``'s rows).
        tell_dqd: ``(view, nonempty, states, data, add_info, jacobian) -> states``.
    """

    ask: Any
    tell: Any
    draws: Any
    ask_dqd: Any
    tell_dqd: Any


def _ask_without_dqd(plan, view, states, active, draws):
    states = emitters_prepare(plan, states, active, False)
    states, solutions = emitters_ask(plan, view, states, active, False, draws)
    if active is not None:
        # Only the active emitters' rows go back to the host.
        solutions = solutions[active_rows(plan, active)]
    return states, solutions


def _tell_without_jacobian(plan, view, nonempty, states, active, data, add_info):
    if active is not None:
        # The active emitters' rows, spread over the whole pool's batch.
        rows, total = active_rows(plan, active), plan.layout.total
        data = {name: spread_rows(rows, arr, total) for name, arr in data.items()}
        add_info = {name: spread_rows(rows, arr, total) for name, arr in add_info.items()}
    return emitters_tell(plan, view, nonempty, states, active, data, add_info, None, False)


def _ask_dqd(plan, view, states):
    return emitters_ask(plan, view, states, None, True)


def _tell_dqd(plan, view, nonempty, states, data, add_info, jacobian):
    return emitters_tell(plan, view, nonempty, states, None, data, add_info, jacobian, True)


def compiled_steps(plan: LoopPlan) -> StepFunctions:
    """The jitted :class:`StepFunctions` of ``plan``'s configuration (shared by every
    scheduler of equal :attr:`LoopPlan.signature`)."""
    entry = _CACHE.get(plan.signature)
    if entry is None:
        # The unit states are donated: the objects install the returned states,
        # and XLA updates the unchanged fields in place instead of copying them.
        entry = StepFunctions(
            ask=jax.jit(partial(_ask_without_dqd, plan), donate_argnums=(1,)),
            tell=jax.jit(partial(_tell_without_jacobian, plan), donate_argnums=(2,)),
            draws=jax.jit(partial(emitters_draws, plan)),
            ask_dqd=jax.jit(partial(_ask_dqd, plan), donate_argnums=(1,)),
            tell_dqd=jax.jit(partial(_tell_dqd, plan), donate_argnums=(2,)),
        )
        _CACHE[plan.signature] = entry
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(plan.signature)
    return entry


def emitter_archive(scheduler):
    """The archive the scheduler's emitters read: the scheduler's archive, or the
    one other archive all of them share (in Density Descent and Discount Model
    Search the emitters sample from the result archive); None if they differ."""
    emitters = list(scheduler._emitters)
    archive = getattr(emitters[0], "archive", None) if emitters else None
    if archive is None or any(getattr(e, "archive", None) is not archive for e in emitters):
        return None
    return archive


def object_plan(scheduler, dqd=False):
    """The :class:`LoopPlan` (``archives=False``) of ``scheduler`` for its next
    ``ask`` (``ask_dqd`` when ``dqd``), or None when it cannot be traced right now.

    The plan is cached on the scheduler until its fusion groups change.
    """
    archive = emitter_archive(scheduler)
    if archive is None or archive_device_view(archive) is None:
        return None
    for emitter in scheduler._emitters:
        if getattr(emitter, "archive", None) is not archive or not emitter_ready(
            emitter, "ask_dqd" if dqd else "ask"
        ):
            return None
    scheduler._refresh_groups()
    groups = tuple(scheduler._groups)
    cached = getattr(scheduler, "_object_plan", None)
    if (
        cached is not None
        and len(cached[0]) == len(groups)
        and all(a is b for a, b in zip(cached[0], groups))
    ):
        return cached[1]
    try:
        plan = LoopPlan(scheduler, None, archives=False)
    except ValueError:
        plan = None
    scheduler._object_plan = (groups, plan)
    return plan


def _unit_states(plan, view):
    """The unit states, committed to the archive's device: states created outside
    jit are uncommitted, and jit compiles a committed and an uncommitted argument
    separately. When a kernel spreads its state over a device mesh, they are
    laid out over that mesh instead (:attr:`LoopPlan.mesh`)."""
    states = [plan.unit_state(u) for u in plan.units]
    mesh = plan.mesh
    if mesh is not None:
        return on_mesh(states, mesh)
    return ensure_committed(states, view.device)


def _uses_lapack(plan) -> bool:
    return any(unit_uses_lapack(u) for u in plan.units)


def _draws_made_ahead(scheduler, plan, states):
    """The draws made ahead by the previous :func:`traced_ask` when they are still
    those of ``states`` (same plan, every state leaf the very array they were made
    from), else None. They are taken either way."""
    pending = getattr(scheduler, "_pending_draws", None)
    scheduler._pending_draws = None
    if pending is None or pending[0] is not plan:
        return None
    leaves = jax.tree.leaves(states)
    if len(leaves) != len(pending[1]) or any(a is not b for a, b in zip(leaves, pending[1])):
        return None
    return pending[2]


def traced_ask(scheduler, active=None, dqd=False):
    """Runs the scheduler's ``ask`` (``ask_dqd`` when ``dqd``) through the
    jitted emitter ask step.

    **Draws made ahead.** When every emitter that asks can (variation emitters
    with Gaussian or iso+line noise, see :meth:`EmitterKernel.draws
    <ribsax.emitters.EmitterKernel.draws>`) and no
    bandit selects the emitters, the random numbers of the next ask are computed
    right after this one, as a separate computation that runs while the caller
    evaluates the batch (XLA:CPU runs one computation at a time, so it overlaps
    the caller's work, not the archive add); the next ask uses them if the
    emitters' states are still the arrays they were drawn from, and draws again
    otherwise (after a fused run, a direct ``emitter.ask()``, a new state,
    unpickling). They are the numbers the ask kernels would draw themselves, so
    the solutions are the same either way.

    Args:
        scheduler: The scheduler.
        active: None, or bool[emitters] (a bandit's active emitters, already
            selected).
        dqd: Whether this is the DQD phase's ``ask_dqd`` (no bandit, no draws
            made ahead).

    Returns:
        ``(plan, solutions)`` with the whole batch of the plan's layout (all
        emitters' rows, a device array; with ``active``, the active emitters'
        rows first, padded to
        :func:`~ribsax.schedulers._bandit_rule.active_row_count` rows;
        ``plan.dqd_layout``'s rows when ``dqd``), or None when the configuration
        cannot be traced (nothing was done).
    """
    plan = object_plan(scheduler, dqd)
    if plan is None or (dqd and plan.dqd_layout is None):
        return None
    view = archive_device_view(emitter_archive(scheduler))
    states = _unit_states(plan, view)
    steps = compiled_steps(plan)
    if dqd:
        states, solutions = steps.ask_dqd(on_mesh(view, plan.mesh), states)
        plan.install_unit_states(scheduler, states)
        return plan, solutions
    mask = None if active is None else np.asarray(active, bool)
    draws = None
    if active is None and draws_ahead(plan):
        draws = _draws_made_ahead(scheduler, plan, states)
        if draws is None:
            draws = steps.draws(states)
    if not any(unit_reads_archive(u) for u in plan.units):
        view = None  # The compiled ask then does not depend on the archive's shape.
    view = on_mesh(view, plan.mesh)
    if _uses_lapack(plan):
        with blas_single_thread():
            states, solutions = jax.block_until_ready(steps.ask(view, states, mask, draws))
    else:
        states, solutions = steps.ask(view, states, mask, draws)
    if draws is not None:
        scheduler._pending_draws = (plan, jax.tree.leaves(states), steps.draws(states))
    plan.install_unit_states(scheduler, states)
    for u, unit in enumerate(plan.units):
        kernel = unit_kernel(unit)
        if kernel is None or not kernel.has_ask_warnings or not plan.layout.active[u]:
            continue
        slots = [slot for slot, i in enumerate(unit.indices) if active is None or active[i]]
        if slots:
            members = slots if unit.group is not None else None
            for message in kernel.ask_warnings(states[u].inner, members):
                warnings.warn(message, stacklevel=4)
    return plan, solutions


def _padded_rows(plan, active, arr):
    """``arr`` (the rows of a bandit's ``active`` emitters) padded with zero rows
    to the length of :func:`~ribsax.schedulers._bandit_rule.active_rows`; ``arr``
    itself without a bandit (``active`` None)."""
    if active is None:
        return arr
    count = active_row_count(plan)

    def pad(leaf):
        if len(leaf) == count:
            return leaf
        padded = np.zeros((count,) + leaf.shape[1:], leaf.dtype)
        padded[: len(leaf)] = leaf
        return padded

    return pad(arr) if isinstance(arr, np.ndarray) else jax.tree.map(pad, arr)


def traced_tell(scheduler, plan, data, add_info, active=None, jacobian=None) -> bool:
    """Runs the emitters' part of the scheduler's ``tell`` (``tell_dqd`` when
    ``jacobian`` is given) through the jitted emitter tell step, after the archive
    add.

    Args:
        scheduler: The scheduler.
        plan: The plan of the matching :func:`traced_ask`.
        data: The validated batch (``solution``, ``objective``, ``measures``,
            extra fields), rows of the active emitters.
        add_info: The archive's add_info for the batch.
        active: None or the bool[emitters] of the matching ask.
        jacobian: The Jacobian of the batch (``tell_dqd``), or None.

    Returns:
        False when some emitter must be told through the Python path (nothing was
        done), True otherwise.
    """
    emitters = scheduler._emitters
    if jacobian is not None:
        return _traced_tell_dqd(scheduler, plan, data, add_info, jacobian)
    layout = plan.layout
    units = [
        (u, unit)
        for u, unit in enumerate(plan.units)
        if layout.active[u] and unit_tells(unit, False)
    ]
    told = []
    for _, unit in units:
        members = [emitters[i] for i in unit.indices if active is None or active[i]]
        if not all(e.kernel_tell_ready(data, add_info) for e in members):
            return False
        told.extend(members)
    if not told:
        return True  # Emitters without tell kernels ignore feedback.

    archive = emitter_archive(scheduler)
    device_data, device_info = _device_batch(plan, archive, data, add_info, active)
    mask = None if active is None else np.asarray(active, bool)
    view = archive_device_view(archive)
    states = compiled_steps(plan).tell(
        on_mesh(view, plan.mesh),
        np.asarray(not archive.empty),
        _unit_states(plan, view),
        mask,
        device_data,
        device_info,
    )
    plan.install_unit_states(scheduler, states)
    return True


def _device_batch(plan, archive, data, add_info, active=None):
    """The tell step's ``data`` and ``add_info`` arguments: NumPy arrays in the
    archive's dtypes (:func:`~ribsax.schedulers._evaluation.batch_data`),
    statuses as int32 (rows padded for a bandit's ``active``)."""
    device_data = {
        name: _padded_rows(plan, active, arr)
        for name, arr in batch_data(
            np, archive.dtypes, data["solution"], data.get("objective"), data.get("measures"), data
        ).items()
    }
    device_info = {
        name: _padded_rows(plan, active, np.asarray(arr)) for name, arr in add_info.items()
    }
    device_info["status"] = device_info["status"].astype(np.int32)
    return device_data, device_info


def _traced_tell_dqd(scheduler, plan, data, add_info, jacobian) -> bool:
    """:func:`traced_tell` of ``tell_dqd``: the batch is validated as the
    emitters' own ``tell_dqd`` validate their slices (any error: the Python path,
    which raises it), then the DQD units' tell kernels store the (normalised)
    Jacobians."""
    archive = emitter_archive(scheduler)
    try:
        _, _, jacobian = validate_dqd_batch(archive, data, add_info, jacobian)
    except ValueError:
        return False
    device_data, device_info = _device_batch(plan, archive, data, add_info)
    view = archive_device_view(archive)
    states = compiled_steps(plan).tell_dqd(
        on_mesh(view, plan.mesh),
        np.asarray(not archive.empty),
        _unit_states(plan, view),
        device_data,
        device_info,
        np.asarray(jacobian, archive.dtypes["solution"]),
    )
    plan.install_unit_states(scheduler, states)
    return True
