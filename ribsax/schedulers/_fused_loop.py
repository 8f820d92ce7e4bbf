"""The fused loop: ask -> evaluate -> tell compiled into one ``jax.lax.scan``.

A scheduler whose archives and emitters all have pure kernels (see the "fused loop"
protocol in :mod:`ribsax.emitters._emitter_base` and the loop seam of
:class:`~ribsax.archives._threshold_archive.ThresholdArchive`) can run many
iterations without returning to Python. :class:`LoopPlan` describes such a scheduler
statically (emitter units, batch sizes, row layout); :func:`loop_carry` collects its
state into one pytree; :func:`scan_iterations` is the pure function that runs
``iterations`` steps on a carry, so it can be jitted, lowered ahead of time, or
``jax.vmap``-ed over independent runs (:func:`ribsax.run_trials`); and
:func:`install_carry` writes a carry back into the objects, which then behave
exactly as after the equivalent Python ask/tell loop.

Per iteration, with ``k = fold_in(key, iteration)``:

1. DQD emitters only: ``ask_dqd`` kernels, ``evaluate_dqd(solutions, fold_in(k,
   1))``, archive add(s), ``tell_dqd`` kernels;
2. ``ask`` kernels (fused groups vmapped), ``evaluate(solutions, fold_in(k, 0))``,
   archive add (and result-archive add), ``tell`` kernels;
3. the result archive's statistics are recorded.
"""
from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._tracing import forwarded_leaves, update_members
from ribsax.archives._threshold_archive import loop_add, loop_stats, loop_view
from ribsax.emitters._emitter_base import _shape_tuple, archive_device_view
from ribsax.emitters._fusion import _mask_select, any_across_trials, trial_axis_active

__all__ = [
    "METRIC_NAMES",
    "BanditSpec",
    "BanditState",
    "EvaluationFunctions",
    "LoopPlan",
    "loop_carry",
    "ask_step",
    "tell_step",
    "emitters_ask",
    "emitters_prepare",
    "emitters_draws",
    "draws_ahead",
    "emitters_tell",
    "bandit_selection",
    "scan_iterations",
    "install_carry",
    "iteration_keys",
]

#: Metrics recorded after every iteration (pyribs' ``ArchiveStats`` fields).
METRIC_NAMES = ("num_elites", "coverage", "qd_score", "norm_qd_score", "obj_max",
                "obj_mean")


class EvaluationFunctions(NamedTuple):
    """The traceable evaluation functions of a fused run (hashable by identity).

    Attributes:
        evaluate: ``evaluate(solutions, key) -> (objective, measures[, extras])``.
        evaluate_dqd: ``(solutions, key) -> (objective, measures, jacobian[,
            extras])`` for DQD emitters, or None.
    """

    evaluate: Any
    evaluate_dqd: Any


def as_evaluation_functions(evaluate, jacobian=None) -> EvaluationFunctions:
    """Normalises what users pass to ``Scheduler.run``.

    Args:
        evaluate: A :class:`ribsax.tasks.Task` (its ``evaluate`` and, when it has
            one, ``evaluate_with_jacobian`` are used) or a callable
            ``(solutions, key) -> (objective, measures[, extras])``.
        jacobian: Optional callable ``(solutions, key) -> (objective, measures,
            jacobian[, extras])`` for DQD emitters (overrides the task's).

    Returns:
        :class:`EvaluationFunctions`.

    Raises:
        TypeError: ``evaluate`` is neither a task nor callable.
    """
    dqd = jacobian
    if hasattr(evaluate, "evaluate_fn") and hasattr(evaluate, "evaluate_with_jacobian"):
        if dqd is None and getattr(evaluate, "has_jacobian", False):
            dqd = evaluate.evaluate_with_jacobian
        evaluate = evaluate.evaluate
    if not callable(evaluate):
        raise TypeError("evaluate must be a ribsax.tasks.Task or a callable "
                        "(solutions, key) -> (objective, measures[, extras]), "
                        f"got {type(evaluate).__name__}")
    if dqd is not None and not callable(dqd):
        raise TypeError("jacobian must be a callable (solutions, key) -> (objective, "
                        f"measures, jacobian[, extras]), got {type(dqd).__name__}")
    return EvaluationFunctions(evaluate, dqd)


class _Unit(NamedTuple):
    """Emitters run by one kernel: a fusion group, or one ungrouped emitter."""

    cls: type
    config: Any
    indices: tuple
    group: Any
    emitter: Any


class BanditSpec(NamedTuple):
    """Static settings of a :class:`~ribsax.schedulers.BanditScheduler` in the loop.

    Attributes:
        num_active: Number of active emitters.
        reselect_all: ``reselect == "all"`` (else ``"terminated"``).
    """

    num_active: int
    reselect_all: bool


class BanditState(NamedTuple):
    """Mutable bandit state carried through the loop.

    Attributes:
        active: bool[pool] active emitters.
        success: float64[pool] solutions accepted by the archive.
        selection: float64[pool] solutions emitted.
        restarts: int[pool] restart counts seen at the last selection (-1 for
            emitters without restarts).
        zeta: UCB1 exploration weight.
        tells: int32[pool] tells received during this run (host counters).
    """

    active: Any
    success: Any
    selection: Any
    restarts: Any
    zeta: Any
    tells: Any


def _emitter_units(scheduler):
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


class LoopPlan:
    """Static description of a scheduler for the step functions and the fused loop.

    Args:
        scheduler: A :class:`~ribsax.schedulers.Scheduler`.
        functions: :class:`EvaluationFunctions` of a fused run, or None for the
            step functions alone (:func:`ask_step`, :func:`tell_step`,
            :mod:`ribsax.functional`).
        archives: Whether the plan adds to the archives itself (``loop_add``); False
            for the ask/tell loop, whose archive objects add the batch.

    Raises:
        ValueError: An archive or emitter cannot be traced (archives computing
            cells on the host, custom emitters without kernels,
            ``add_mode="single"``, emitters reading another archive, DQD emitters
            without a Jacobian function, or DQD emitters in a BanditScheduler).
    """

    def __init__(self, scheduler, functions: EvaluationFunctions = None, *,
                 archives: bool = True):
        # pylint: disable = protected-access
        if archives and scheduler._add_mode != "batch":
            raise ValueError("The fused loop supports add_mode='batch' only; use the "
                             "ask/tell loop for add_mode='single'")
        self.functions = functions
        archive = scheduler.archive
        result = scheduler._result_archive
        self.archive_spec = self.result_spec = None
        if archives:
            self.archive_spec = _archive_spec(archive, "archive")
            if result is not None:
                self.result_spec = _archive_spec(result, "result_archive")
        emitters = list(scheduler._emitters)
        # Object mode (no archives traced) runs emitters that all read one other
        # archive too, e.g. the result archive in Density Descent Search.
        read = archive if archives or not emitters else emitters[0].archive
        for i, emitter in enumerate(emitters):
            if emitter.archive is not read:
                raise ValueError(f"Emitter {i} reads another archive than the "
                                 "scheduler's; the fused loop cannot run it")
            if not emitter._loop_ready():
                raise ValueError(
                    f"Emitter {i} ({type(emitter).__name__}) cannot run in the fused "
                    "loop right now (no pure kernels, host-side sampling, or "
                    "initial_solutions still pending on an empty archive); use the "
                    "ask/tell loop")
        self.units = _emitter_units(scheduler)
        self.num_emitters = len(emitters)
        self.bandit = scheduler._loop_bandit_spec()
        self.has_dqd = any(u.cls._ask_dqd_kernel is not None for u in self.units)
        if self.bandit is not None and self.has_dqd:
            raise ValueError("BanditScheduler does not support DQD emitters")
        if (self.has_dqd and functions is not None
                and functions.evaluate_dqd is None):
            raise ValueError("The scheduler has DQD emitters: pass a Task with a "
                             "Jacobian or jacobian=(solutions, key) -> (objective, "
                             "measures, jacobian[, extras])")
        specs = [s for s in (self.archive_spec, self.result_spec) if s is not None]
        extra = [n for spec in specs for n in spec.field_names
                 if n not in ("solution", "objective", "measures")]
        self.extra_fields = tuple(dict.fromkeys(extra))
        self.solution_shape = _shape_tuple(emitters[0].solution_dim)
        self.solution_dtype = np.dtype(read.dtypes["solution"])
        self.objective_dtype = np.dtype(read.dtypes["objective"])
        self.measures_dtype = np.dtype(read.dtypes["measures"])

        states = [jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((len(u.indices),) + x.shape[
                (u.group is not None):], x.dtype), self.unit_state(u))
            for u in self.units]
        self.layout = _RowLayout(self, states, dqd=False)
        self.dqd_layout = _RowLayout(self, states, dqd=True) if self.has_dqd else None
        self._signature = self._make_signature()

    # -------------------------------------------------------------- state
    @staticmethod
    def unit_state(unit):
        """State of ``unit`` as the objects hold it now: the stacked state of a
        fusion group, the state of an ungrouped emitter."""
        if unit.group is not None:
            return unit.group.stacked_state
        return unit.emitter.state

    def install_unit_states(self, scheduler, states) -> None:
        """Writes unit states (from :func:`loop_carry` form) into the objects."""
        # pylint: disable = protected-access
        emitters = scheduler._emitters
        for unit, st in zip(self.units, states):
            if unit.group is not None:
                unit.group._set_stacked(st)
            else:
                emitters[unit.indices[0]].state = st

    def _make_signature(self):
        units = tuple((u.cls, u.config, len(u.indices), u.group is not None)
                      for u in self.units)
        return (units, self.bandit, self.archive_spec, self.result_spec,
                self.layout.signature,
                None if self.dqd_layout is None else self.dqd_layout.signature,
                self.extra_fields, self.solution_dtype.str, self.objective_dtype.str,
                self.measures_dtype.str,
                None if self.functions is None else _functions_key(self.functions))

    @property
    def signature(self):
        """Hashable description of everything static in the traced steps."""
        return self._signature

    def __hash__(self):
        return hash(self._signature)

    def __eq__(self, other):
        return isinstance(other, LoopPlan) and self._signature == other._signature


def _function_key(fn):
    """Identity of a function for caching: bound methods by (instance id, function)
    so that ``task.evaluate`` fetched twice is the same function."""
    if fn is None:
        return None
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        return ("bound", id(owner), getattr(fn, "__func__", fn))
    return ("fn", id(fn))


def _functions_key(functions):
    return tuple(_function_key(f) for f in functions)


def _archive_spec(archive, name):
    spec_fn = getattr(archive, "_loop_spec", None)
    if spec_fn is None:
        raise ValueError(f"{name} ({type(archive).__name__}) has no fused-loop "
                         "kernels; use the ask/tell loop")
    return spec_fn()


class _RowLayout:
    """Where each unit's solutions sit in the scheduler's batch (emitter order).

    Units return ``[members, batch, ...]`` blocks; the scheduler's batch is the
    concatenation of the emitters' batches in emitter order. ``perm`` maps batch rows
    to rows of the unit-order concatenation (None when both orders agree) and
    ``unit_rows[u]`` lists unit ``u``'s rows of the batch.
    """

    def __init__(self, plan, states, dqd):
        view_shape = None
        sizes = [0] * plan.num_emitters
        self.active = []
        self.member_batch = []
        for unit, state in zip(plan.units, states):
            kernel = unit.cls._ask_dqd_kernel if dqd else unit.cls._ask_kernel  # pylint: disable=protected-access
            if kernel is None:
                self.active.append(False)
                self.member_batch.append(0)
                continue
            if view_shape is None:
                view_shape = _view_shapes(plan)
            batch = _member_batch(unit, state, view_shape, dqd)
            self.active.append(True)
            self.member_batch.append(batch)
            for idx in unit.indices:
                sizes[idx] = batch
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.total = int(offsets[-1])
        unit_rows = []
        for unit, batch in zip(plan.units, self.member_batch):
            rows = [np.arange(offsets[i], offsets[i] + batch) for i in unit.indices]
            unit_rows.append(np.concatenate(rows).astype(np.int32) if batch
                             else np.zeros(0, np.int32))
        order = np.concatenate(unit_rows) if unit_rows else np.zeros(0, np.int32)
        perm = np.empty(self.total, dtype=np.int32)
        perm[order] = np.arange(self.total, dtype=np.int32)
        self.perm = None if np.array_equal(perm, np.arange(self.total)) else perm
        self.unit_rows = unit_rows
        self.row_emitter = np.repeat(np.arange(plan.num_emitters),
                                     sizes).astype(np.int32)
        self.sizes = np.asarray(sizes, np.int32)
        self.signature = (tuple(self.member_batch), self.total,
                          None if self.perm is None else self.perm.tobytes())


_BATCH_CACHE = {}


def _member_batch(unit, state, view_shape, dqd) -> int:
    """Batch size of one member's ask (traced once per kernel and shapes)."""
    leaves, treedef = jax.tree.flatten((state, view_shape))
    key = (unit.cls, unit.config, dqd, treedef,
           tuple((tuple(x.shape), str(x.dtype)) for x in leaves))
    batch = _BATCH_CACHE.get(key)
    if batch is None:
        out = jax.eval_shape(lambda s, v: _ask_unit(unit, s, v, dqd)[1], state,
                             view_shape)
        batch = _BATCH_CACHE[key] = int(out.shape[1])
    return batch


def _view_shapes(plan):
    """Abstract :class:`ArchiveView` of the scheduler's archive."""
    view = archive_device_view(plan.units[0].emitter.archive)
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), view)


def _ask_unit(unit, states, view, dqd, active=None, draws=None):
    """Ask of every member of ``unit``; members where ``active`` (bool[members])
    is False keep their state (see :func:`_active_members`). ``draws``: the unit's
    :func:`emitters_draws` (no ``active`` then), or None."""
    # pylint: disable = protected-access
    if dqd:
        return unit.cls._ask_dqd_kernel_stacked(unit.config, states, view)
    if draws is not None:
        return unit.cls._ask_kernel_stacked(unit.config, states, view, None, draws)
    if active is not None and not trial_axis_active():
        return _active_members(
            lambda st: unit.cls._ask_kernel_stacked(unit.config, st, view), active,
            states, one_by_one=unit.cls._loop_members_one_by_one)
    new, solutions = unit.cls._ask_kernel_stacked(unit.config, states, view, active)
    if active is not None:
        new = _mask_select(active, new, states)
    return new, solutions


def _active_members(kernel, active, states, inputs=None, one_by_one=False):
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


# ---------------------------------------------------------------------------
# Carry.
# ---------------------------------------------------------------------------
def loop_carry(scheduler, plan: LoopPlan):
    """The scheduler's whole mutable state as one pytree.

    Returns:
        ``(archive_state, result_state_or_None, [unit states], bandit_or_None)``.
    """
    # pylint: disable = protected-access
    result = scheduler._result_archive
    return (scheduler.archive._loop_state(),
            None if result is None else result._loop_state(),
            [plan.unit_state(u) for u in plan.units],
            scheduler._loop_bandit_state())


def install_carry(scheduler, plan: LoopPlan, carry, iterations: int) -> None:
    """Writes ``carry`` back into the scheduler, its archives and emitters.

    Args:
        scheduler: The scheduler ``plan`` was built from.
        plan: The :class:`LoopPlan`.
        carry: Final carry of :func:`scan_iterations` (or of the step functions).
        iterations: Number of iterations run (for the emitters' host counters).
    """
    # pylint: disable = protected-access
    archive_state, result_state, unit_states, bandit = carry
    if archive_state is not None:
        scheduler.archive._loop_install(archive_state)
    if result_state is not None:
        scheduler._result_archive._loop_install(result_state)
    plan.install_unit_states(scheduler, unit_states)
    emitters = list(scheduler._emitters)
    tells = ([iterations] * len(emitters) if bandit is None
             else [int(t) for t in np.asarray(bandit.tells)])
    for emitter, count in zip(emitters, tells):
        if count:
            emitter._loop_after(count)
    if bandit is not None:
        scheduler._loop_bandit_install(bandit)
    scheduler._last_called = "tell"


def iteration_keys(key, start, iterations: int):
    """``fold_in(key, i)`` for ``i`` in ``[start, start + iterations)``."""
    return _iteration_keys(key, jnp.asarray(start, jnp.uint32), iterations)


@partial(jax.jit, static_argnums=(2,))
def _iteration_keys(key, start, iterations):
    steps = start + jnp.arange(iterations, dtype=jnp.uint32)
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(steps)


# ---------------------------------------------------------------------------
# The step.
# ---------------------------------------------------------------------------
def _unpack_evaluation(out, with_jacobian, name):
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name} must return a tuple, got {type(out).__name__}")
    n = 3 if with_jacobian else 2
    if len(out) not in (n, n + 1):
        expected = ("(objective, measures, jacobian[, extras])" if with_jacobian
                    else "(objective, measures[, extras])")
        raise TypeError(f"{name} must return {expected}, got {len(out)} values")
    extras = out[n] if len(out) > n else None
    return tuple(out[:n]), (extras or {})


def _evaluate_batch(plan, solutions, key, dqd):
    fn = plan.functions.evaluate_dqd if dqd else plan.functions.evaluate
    name = "jacobian" if dqd else "evaluate"
    values, extras = _unpack_evaluation(fn(solutions, key), dqd, name)
    batch = solutions.shape[0]
    objective = jnp.asarray(values[0]).astype(plan.objective_dtype).reshape(batch)
    measures = jnp.asarray(values[1]).astype(plan.measures_dtype)
    data = {"solution": solutions, "objective": objective, "measures": measures}
    for field in plan.extra_fields:
        if field not in extras:
            raise ValueError(f"The archive has the extra field {field!r}, but "
                             f"{name} returned no extras[{field!r}]")
        data[field] = jnp.asarray(extras[field])
    # The task's other extras reach the emitters' tells (nothing reads them
    # otherwise, and the compiler drops what no emitter reads).
    for field, value in extras.items():
        if field not in data:
            data[field] = jax.tree.map(jnp.asarray, value)
    jacobian = jnp.asarray(values[2]) if dqd else None
    return data, jacobian


def finite_rows(objective, measures, jacobian=None):
    """bool[batch]: rows whose objective, measures (and Jacobian) are all finite."""
    finite = jnp.isfinite(objective) & jnp.all(
        jnp.isfinite(measures.reshape(measures.shape[0], -1)), axis=1)
    if jacobian is not None:
        finite &= jnp.all(jnp.isfinite(jacobian.reshape(jacobian.shape[0], -1)),
                          axis=1)
    return finite


def _without_non_finite(data, jacobian, finite):
    """The batch with its non-finite rows neutralised: objective ``-inf`` (which
    no archive accepts), zero measures and Jacobian (valid cell indices)."""
    data = dict(data)
    data["objective"] = jnp.where(finite, data["objective"], -jnp.inf).astype(
        data["objective"].dtype)
    measures = data["measures"]
    data["measures"] = jnp.where(
        finite.reshape((-1,) + (1,) * (measures.ndim - 1)), measures,
        jnp.zeros_like(measures))
    if jacobian is not None:
        jacobian = jnp.where(finite.reshape((-1,) + (1,) * (jacobian.ndim - 1)),
                             jacobian, jnp.zeros_like(jacobian))
    return data, jacobian


def bandit_selection(xp, spec: BanditSpec, active, success, selection, zeta,
                     restarts_now, restarts_seen, descending_order):
    """pyribs' BanditScheduler selection: reselection, then UCB1 (one rule for the
    host and the traced loop).

    Written against the array namespace ``xp`` (``numpy`` in
    :meth:`BanditScheduler.ask <ribsax.schedulers.BanditScheduler.ask>`,
    ``jax.numpy`` in :func:`ask_step`).

    Args:
        xp: ``numpy`` or ``jax.numpy``.
        spec: :class:`BanditSpec`.
        active: bool[pool] active emitters before the selection.
        success: float[pool] accepted solutions so far.
        selection: float[pool] emitted solutions so far.
        zeta: UCB1 exploration weight.
        restarts_now: int[pool] current restart counts (-1: no restarts).
        restarts_seen: int[pool] counts seen at the last selection.
        descending_order: ``ucb -> indices`` ordering the UCB1 scores from the
            highest; ties are the caller's choice (pyribs: ``np.argsort`` of an
            object array, reversed).

    Returns:
        ``(active, restarts_seen)`` after the selection.
    """
    pool = active.shape[0]
    if spec.reselect_all:
        reselect = active
    else:
        reselect = (restarts_now > restarts_seen) | (restarts_now < 0)
        restarts_seen = restarts_now

    # First call: activate the first inactive emitters until num_active are active;
    # the emitters scanned on the way are not reselected.
    num_needed = spec.num_active - xp.sum(active.astype(xp.int32))
    inactive_rank = xp.cumsum((~active).astype(xp.int32))
    hit = (~active) & (inactive_rank == num_needed)
    stop = xp.where(num_needed > 0, xp.argmax(hit), -1)
    prefix = xp.arange(pool) <= stop
    reselect = reselect & ~prefix
    active = (active | prefix) & ~reselect

    safe = xp.where(selection == 0, 1.0, selection)
    ucb = xp.where(selection == 0, xp.inf,
                   success / safe + zeta * xp.sqrt(xp.log(xp.sum(success)) / safe))
    order = descending_order(ucb)
    inactive_in_order = ~active[order]
    rank = xp.cumsum(inactive_in_order.astype(xp.int32))
    room = spec.num_active - xp.sum(active.astype(xp.int32))
    take = inactive_in_order & (rank <= room)
    newly = take[xp.argsort(order)]
    active = xp.where(xp.any(reselect), active | newly, active)
    return active, restarts_seen


def _traced_descending_order(ucb):
    """Descending UCB1 order with ties to the later emitter, as NumPy's insertion
    sort (``np.argsort`` of up to 16 emitters) gives them."""
    return jnp.argsort(ucb, stable=True)[::-1]


def _bandit_select(plan, bandit: BanditState, states):
    """:func:`bandit_selection` on the loop's bandit state (restart counts read from
    the emitter states)."""
    restarts = jnp.full(plan.num_emitters, -1, jnp.int32)
    for unit, st in zip(plan.units, states):
        count = getattr(st, "restarts", None)
        if count is not None:
            restarts = restarts.at[np.asarray(unit.indices)].set(
                count.astype(jnp.int32))
    active, seen = bandit_selection(
        jnp, plan.bandit, bandit.active, bandit.success, bandit.selection,
        bandit.zeta, restarts, bandit.restarts, _traced_descending_order)
    return bandit._replace(active=active, restarts=seen)


def _member_mask(active, unit):
    return None if active is None else active[np.asarray(unit.indices)]


def _stacked(plan, states):
    """Unit states with a leading member axis (ungrouped emitters get one)."""
    return [st if unit.group is not None else jax.tree.map(lambda x: x[None], st)
            for unit, st in zip(plan.units, states)]


def _unstacked(plan, states, stacked, before):
    """Inverse of :func:`_stacked`: ``before`` is what :func:`_stacked` was given
    and ``stacked`` what it returned.

    A leaf that a kernel returned unchanged comes back as the very array of
    ``before``, so that conditionals and loops around the step (see
    :func:`_computed_once`) see it passed through and do not copy it.
    """
    out = []
    for unit, st, expanded, old in zip(plan.units, states, stacked, before):
        if unit.group is not None:
            out.append(st)
        else:
            out.append(jax.tree.map(lambda x, e, o: o if x is e else x[0],
                                    st, expanded, old))
    return out


def emitters_prepare(plan, states, active, dqd):
    """Every fusion group's ``_prepare_kernel_stacked`` (CMA-ES' lazy
    eigendecomposition), the part of the ask that :func:`emitters_ask` expects
    done (nothing in the DQD phase). Arguments as in :func:`emitters_ask`;
    returns the unit states."""
    if dqd:
        return states
    layout = plan.layout
    before, stacked = states, _stacked(plan, states)
    states = list(stacked)
    for u, unit in enumerate(plan.units):
        if layout.active[u]:
            # pylint: disable-next = protected-access
            states[u] = unit.cls._prepare_kernel_stacked(
                unit.config, states[u], _member_mask(active, unit))
    return _unstacked(plan, states, stacked, before)


def draws_ahead(plan) -> bool:
    """Whether every unit of ``plan`` that asks can make its ask draws ahead of
    the ask (:func:`emitters_draws`).

    Only then do the ask/tell loop's asks take draws made ahead: handing some
    units their draws changes how XLA compiles the rest of the ask step, and the
    other units' results (a CMA-ES' eigendecomposition of a nearly isotropic
    covariance, for one) would then differ from the fused loop's by rounding.
    """
    asking = [unit for u, unit in enumerate(plan.units) if plan.layout.active[u]]
    # pylint: disable-next = protected-access
    return bool(asking) and all(unit.cls._draws_ahead(unit.config) for unit in asking)


def emitters_draws(plan, states):
    """The random numbers the next (non-DQD) :func:`emitters_ask` on ``states``
    draws, per unit (None for the units that draw inside their ask kernel), for
    ``emitters_ask(..., draws=...)``. They depend on the states' keys alone, so
    the ask/tell loop makes them while the caller evaluates the previous batch.
    """
    stacked = _stacked(plan, states)
    # pylint: disable-next = protected-access
    return [unit.cls._ask_draws_stacked(unit.config, st)
            if plan.layout.active[u] and unit.cls._draws_ahead(unit.config) else None
            for u, (unit, st) in enumerate(zip(plan.units, stacked))]


def emitters_ask(plan, view, states, active, dqd, draws=None):
    """The emitters' half of the ask step after :func:`emitters_prepare`: every
    unit's ``ask`` (``ask_dqd``) kernel, fusion groups vmapped.

    Args:
        plan: :class:`LoopPlan`.
        view: :class:`~ribsax.emitters._emitter_base.ArchiveView` of the archive.
        states: Unit states (as :func:`loop_carry` holds them).
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
    before, stacked = states, _stacked(plan, states)
    states = list(stacked)
    pieces = []
    for u, unit in enumerate(plan.units):
        if not layout.active[u]:
            continue
        states[u], sols = _ask_unit(unit, states[u], view, dqd,
                                    _member_mask(active, unit),
                                    None if draws is None else draws[u])
        pieces.append(sols.reshape((-1,) + sols.shape[2:]))
    solutions = jnp.concatenate(pieces, axis=0).astype(plan.solution_dtype)
    if layout.perm is not None:
        solutions = solutions[layout.perm]
    return _unstacked(plan, states, stacked, before), solutions


def emitters_tell(plan, view, nonempty, states, active, data, add_info, jacobian,
                  dqd):
    """The emitters' half of the tell step: each unit's tell inputs
    (``_loop_tell_inputs``) and ``tell`` (``tell_dqd``) kernel.

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
    # pylint: disable = protected-access
    layout = plan.dqd_layout if dqd else plan.layout
    before, stacked = states, _stacked(plan, states)
    states = list(stacked)
    for u, unit in enumerate(plan.units):
        tell = unit.cls._tell_dqd_kernel if dqd else unit.cls._tell_kernel
        if not layout.active[u] or tell is None:
            continue
        members, batch = len(unit.indices), layout.member_batch[u]
        rows = layout.unit_rows[u]

        def split(tree, rows=rows, members=members, batch=batch):
            return jax.tree.map(
                lambda arr: arr[rows].reshape((members, batch) + arr.shape[1:]), tree)

        unit_data = split(data)
        unit_info = split(add_info)
        if dqd:
            inputs = jax.vmap(
                lambda d, j, i, c=unit.cls, cfg=unit.config:
                    c._loop_tell_dqd_inputs(cfg, d, j, i, nonempty))(
                unit_data, split(jacobian), unit_info)
            new, _ = unit.cls._tell_dqd_kernel_stacked(unit.config, states[u],
                                                       inputs, view)
        else:
            inputs = jax.vmap(
                lambda d, i, c=unit.cls, cfg=unit.config:
                    c._loop_tell_inputs(cfg, d, i, nonempty))(unit_data, unit_info)
            mask = _member_mask(active, unit)
            if mask is not None and not trial_axis_active():
                states[u], _ = _active_members(
                    lambda st, inp, c=unit.cls, cfg=unit.config:
                        c._tell_kernel_stacked(cfg, st, inp, view),
                    mask, states[u], inputs,
                    one_by_one=unit.cls._loop_members_one_by_one)
                continue
            new, _ = unit.cls._tell_kernel_stacked(unit.config, states[u], inputs,
                                                   view)
        mask = _member_mask(active, unit)
        states[u] = new if mask is None else _mask_select(mask, new, states[u])
    return _unstacked(plan, states, stacked, before)


def ask_step(plan, carry, dqd=False):
    """One ask (``ask_dqd`` when ``dqd``) of the whole scheduler (pure).

    A bandit scheduler first selects its active emitters (:func:`bandit_selection`);
    the units without an active member are skipped (their rows are zeros, kept out
    of the archive by :func:`tell_step`), and only the active ones keep their new
    state.

    Args:
        plan: :class:`LoopPlan` (static).
        carry: From :func:`loop_carry`.
        dqd: Whether to run the DQD emitters' ``ask_dqd`` kernels.

    Returns:
        ``(carry, solutions)``: the whole batch in emitter order (``[batch,
        *solution_dim]``, ``plan.layout.total`` rows; ``plan.dqd_layout`` when
        ``dqd``).
    """
    archive, result, states, bandit = carry
    active = None
    if bandit is not None:
        bandit = _bandit_select(plan, bandit, states)
        active = bandit.active
    view = loop_view(archive)
    states = emitters_prepare(plan, states, active, dqd)
    states, solutions = _computed_once(
        lambda st: emitters_ask(plan, view, st, active, dqd), states,
        archive.store.n_occupied >= 0)
    return (archive, result, states, bandit), solutions


def _computed_once(fn, operand, always_true):
    """``fn(operand)`` with its outputs materialised once.

    XLA:CPU fuses chains of cheap elementwise operations into each of their
    consumers and recomputes them there: the emitters' Gaussian draws (random bits
    and the erf-inverse polynomial), consumed by the evaluation, the Jacobian and
    the archive writes, would be computed again in each consumer. The outputs of a
    conditional are buffers, so ``fn`` runs as the taken branch of one whose
    predicate, ``always_true``, holds at run time but is not known to the
    compiler (``lax.optimization_barrier`` is removed before fusion on CPU). The
    other branch, never taken, returns zeros, except for the leaves that ``fn``
    passes through unchanged, which it returns too, so that the conditional does
    not output (and copy) them. Under
    ``run_trials``' vmap the predicate is or-ed over the trials, so the conditional
    stays one (a batched predicate would run both branches and select).
    """
    forwarded, out_shape = forwarded_leaves(fn, operand)
    out_leaves, treedef = jax.tree.flatten(out_shape)

    def skipped(op):
        # The leaves that ``fn`` returns unchanged are returned here too, so the
        # conditional does not output (and copy) them.
        ins = jax.tree.leaves(op)
        return treedef.unflatten([
            jnp.zeros(s.shape, s.dtype) if i is None else ins[i]
            for i, s in zip(forwarded, out_leaves)])

    return jax.lax.cond(any_across_trials(always_true), fn, skipped, operand)


def active_row_count(plan) -> int:
    """The largest number of rows that ``num_active`` emitters of a bandit's pool
    can ask for (the length of :func:`active_rows`)."""
    sizes = np.asarray(plan.layout.sizes)
    return int(np.sum(np.sort(sizes)[::-1][:plan.bandit.num_active]))


def active_rows(plan, active):
    """Indices of the rows of a bandit's active emitters, in pool order, padded
    with rows of inactive emitters to a fixed length: the largest number of rows
    that ``num_active`` emitters of the pool can ask for."""
    sizes = np.asarray(plan.layout.sizes, np.int32)
    count = active_row_count(plan)
    # The rows of each emitter are contiguous and in pool order, so ordering the
    # emitters (active first, stable) orders the rows: row p of the result is row
    # p - start of the emitter whose span in that order holds p. Sorting the
    # emitters instead of the rows keeps the sort small (XLA:CPU sorts slowly).
    order = jnp.argsort(~active, stable=True)
    spans = jnp.asarray(sizes)[order]
    ends = jnp.cumsum(spans)
    pos = jnp.arange(count, dtype=jnp.int32)
    k = jnp.sum(ends[None, :] <= pos[:, None], axis=1)
    first_row = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    return jnp.asarray(first_row)[order[k]] + pos - (ends[k] - spans[k])


def spread_rows(rows, arr, total):
    """``arr`` (one row per index of ``rows``, e.g. :func:`active_rows`) spread
    over a batch of ``total`` rows, zeros elsewhere."""
    return jnp.zeros((total,) + arr.shape[1:], arr.dtype).at[rows].set(arr)


def tell_step(plan, carry, data, jacobian=None, dqd=False):
    """One tell (``tell_dqd``) of the whole scheduler (pure): archive add(s),
    bandit credit, emitters' tell kernels.

    Args:
        plan: :class:`LoopPlan` (static).
        carry: The carry returned by :func:`ask_step`.
        data: name -> [batch, ...]: ``solution``, ``objective``, ``measures`` and
            the archives' extra fields, rows as :func:`ask_step` returned them.
        jacobian: [batch, 1 + measure_dim, *solution_dim] for the DQD phase.
        dqd: Whether this is the DQD phase.

    Returns:
        ``(carry, add_info)`` with the archive's ``status`` and ``value`` per row.
        Rows of a bandit's inactive emitters are kept out of the archive (status 0).
        Rows whose objective, measures (or Jacobian) are not finite are kept out
        of every archive too: status 0, value ``-inf``; the emitters see them as
        not added, with objective ``-inf`` and zero measures.
    """
    carry, add_info, _, _ = _tell_step(plan, carry, data, jacobian, dqd)
    return carry, add_info


def _tell_step(plan, carry, data, jacobian, dqd):
    """:func:`tell_step` that also returns the result archive's statuses per row
    (the archive's when there is no result archive) and which rows were finite."""
    archive, result, states, bandit = carry
    layout = plan.dqd_layout if dqd else plan.layout
    # Non-finite rows never enter an archive, and reach the emitters as rows
    # that were not added (status 0, value -inf, ``valid`` False).
    finite = finite_rows(data["objective"], data["measures"], jacobian)
    data, jacobian = _without_non_finite(data, jacobian, finite)
    active = None
    rows = None
    added = data
    if bandit is not None:
        active = bandit.active
        # The archive sees the active emitters' rows, in pool order: gathered
        # first (active_rows), then padding rows of inactive emitters, which
        # compete for nothing (-inf beats no threshold).
        rows = active_rows(plan, active)
        row_active = active[layout.row_emitter]
        added = {name: jax.tree.map(lambda v: v[rows], value)
                 for name, value in data.items()}
        added["objective"] = jnp.where(row_active[rows], added["objective"],
                                       -jnp.inf)
    archive, add_info = loop_add(plan.archive_spec, archive, added)
    result_status = add_info["status"]
    if result is not None:
        result, result_info = loop_add(plan.result_spec, result, added)
        result_status = result_info["status"]
    if rows is not None:
        add_info = {name: spread_rows(rows, value, layout.total)
                    for name, value in add_info.items()}
        result_status = spread_rows(rows, result_status, layout.total)
    if bandit is not None:
        accepted = jnp.zeros(plan.num_emitters, bandit.success.dtype).at[
            layout.row_emitter].add((add_info["status"] != 0).astype(
                bandit.success.dtype))
        weight = active.astype(bandit.success.dtype)
        bandit = bandit._replace(
            success=bandit.success + weight * accepted,
            selection=bandit.selection + weight * layout.sizes.astype(
                bandit.selection.dtype),
            tells=bandit.tells + active.astype(jnp.int32))
    add_info = dict(add_info, value=jnp.where(finite, add_info["value"], -jnp.inf
                                              ).astype(add_info["value"].dtype))
    states = emitters_tell(plan, loop_view(archive), archive.store.n_occupied > 0,
                           states, active, data, dict(add_info, valid=finite),
                           jacobian, dqd)
    return (archive, result, states, bandit), add_info, result_status, finite


def emitter_evaluations(plan: LoopPlan, states):
    """int32 scalar: the evaluations the emitters of ``states`` (unit states)
    report having made themselves (see
    :meth:`ribsax.emitters.EmitterKernel.evaluations`)."""
    total = jnp.zeros((), jnp.int32)
    for unit, st in zip(plan.units, _stacked(plan, states)):
        count = getattr(unit.cls, "_evaluations_kernel", None)
        if count is not None:
            total += jnp.sum(jax.vmap(count, in_axes=(None, 0))(unit.config, st))
    return total


def scan_iterations(plan: LoopPlan, carry, keys, n_valid=None, insertions=False):
    """Runs up to ``len(keys)`` iterations on ``carry`` (pure; jit/vmap it freely).

    Args:
        plan: Static :class:`LoopPlan`.
        carry: From :func:`loop_carry`.
        keys: ``[chunk]`` PRNG keys, one per iteration (:func:`iteration_keys`).
        n_valid: Optional int32 scalar: only the first ``n_valid`` iterations run
            (a while loop); the others leave the carry untouched and cost nothing.
            This lets one compiled chunk serve any number of iterations.
        insertions: Also return, per iteration, every evaluated solution's
            ``status`` in the result archive (the archive when there is none; 0
            for skipped iterations), ``objective`` and ``measures``: the DQD
            phase's rows first, then the ask phase's.

    Returns:
        ``(carry, metrics)`` where ``metrics`` maps each name of
        :data:`METRIC_NAMES` to a ``[chunk]`` array (statistics of the result
        archive, or of the archive when there is none, after each iteration; rows
        past ``n_valid`` are meaningless); ``non_finite`` (rows of the iteration
        whose evaluation was not finite, kept out of the archives),
        ``first_non_finite`` (the first such row, DQD phase's rows first, or -1)
        and ``evaluations`` (rows evaluated plus the evaluations the emitters
        report having made themselves) to ``[chunk]`` int32 arrays; and, with
        ``insertions``, ``status``, ``objective`` and ``measures`` to ``[chunk,
        rows, ...]`` arrays.
    """

    def metrics_of(carry):
        archive, result = carry[0], carry[1]
        return loop_stats(result if result is not None else archive)

    def phase(carry, key, dqd):
        carry, solutions = ask_step(plan, carry, dqd)
        bandit = carry[3]
        layout = plan.dqd_layout if dqd else plan.layout
        if bandit is None:
            data, jacobian = _evaluate_batch(plan, solutions, key, dqd)
            evaluated = jnp.asarray(layout.total, jnp.int32)
        else:
            # Only the active emitters' rows are evaluated (as in the ask/tell
            # loop, where the caller sees only those).
            rows = active_rows(plan, bandit.active)
            data, jacobian = _evaluate_batch(plan, solutions[rows], key, dqd)
            # Spread back over the pool's rows; the solutions are the pool's own
            # (inactive rows are never added, and their emitters keep their states).
            data = {name: solutions if name == "solution" else
                    jax.tree.map(lambda v: spread_rows(rows, v, solutions.shape[0]),
                                 value)
                    for name, value in data.items()}
            evaluated = jnp.sum(jnp.where(bandit.active, layout.sizes, 0)).astype(
                jnp.int32)
        carry, _, status, finite = _tell_step(plan, carry, data, jacobian, dqd)
        return carry, {"status": status, "objective": data["objective"],
                       "measures": data["measures"], "finite": finite,
                       "evaluated": evaluated}

    def iteration(carry, key):
        told = []
        spent_before = emitter_evaluations(plan, carry[2])
        if plan.has_dqd:
            carry, dqd_told = phase(carry, jax.random.fold_in(key, 1), True)
            told.append(dqd_told)
        carry, ask_told = phase(carry, jax.random.fold_in(key, 0), False)
        told.append(ask_told)
        out = metrics_of(carry)
        finite = jnp.concatenate([t["finite"] for t in told])
        out["non_finite"] = jnp.sum(~finite).astype(jnp.int32)
        out["first_non_finite"] = jnp.where(
            jnp.all(finite), -1, jnp.argmin(finite)).astype(jnp.int32)
        out["evaluations"] = (sum(t["evaluated"] for t in told)
                              + emitter_evaluations(plan, carry[2]) - spent_before)
        if insertions:
            out = {**out, **{name: jnp.concatenate([t[name] for t in told])
                             for name in ("status", "objective", "measures")}}
        return carry, out

    if n_valid is None:
        return jax.lax.scan(iteration, carry, keys)

    # A while loop rather than a scan with a conditional around each iteration: a
    # conditional's outputs are new buffers on XLA:CPU, so the whole carry (the
    # archive's store, every emitter state) would be copied on every iteration.
    out_shape = jax.eval_shape(iteration, carry, keys[0])[1]
    outs = jax.tree.map(
        lambda s: jnp.zeros((keys.shape[0],) + s.shape, s.dtype), out_shape)

    def body(state):
        i, carry, outs = state
        carry, out = iteration(carry, keys[i])
        return i + 1, carry, jax.tree.map(lambda buf, o: buf.at[i].set(o), outs, out)

    _, carry, outs = jax.lax.while_loop(
        lambda state: state[0] < n_valid, body, (jnp.zeros((), jnp.int32), carry, outs))
    return carry, outs
