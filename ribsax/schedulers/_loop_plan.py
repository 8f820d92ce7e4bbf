"""The static description of a scheduler that the step functions and the fused
loop are traced for.

:class:`LoopPlan` lists the scheduler's emitter units
(:mod:`~ribsax.schedulers._units`), its archives' loop specs, its bandit settings,
dtypes and the row layout of its batch (:class:`_RowLayout`: which rows each
emitter asks for, in emitter order); its :attr:`~LoopPlan.signature` keys the
compiled programs.
"""

from __future__ import annotations

import jax
import numpy as np

from ribsax.emitters._emitter_base import _shape_tuple, archive_device_view
from ribsax.emitters._placement import kernels_mesh
from ribsax.schedulers._evaluation import (
    EvaluationFunctions,
    check_jacobian,
    has_dqd_phase,
)
from ribsax.schedulers._units import (
    ask_unit,
    emitter_ready,
    emitter_units,
    unit_asks,
    unit_kernel,
)

__all__ = ["LoopPlan"]


class LoopPlan:
    """Static description of a scheduler for the step functions and the fused loop.

    Args:
        scheduler: A :class:`~ribsax.schedulers.Scheduler`.
        functions: :class:`EvaluationFunctions` of a fused run, or None for the
            step functions alone
            (:func:`~ribsax.schedulers._steps.ask_step`,
            :func:`~ribsax.schedulers._steps.tell_step`, :mod:`ribsax.functional`).
        archives: Whether the plan adds to the archives itself (``loop_add``); False
            for the ask/tell loop, whose archive objects add the batch.

    Raises:
        ValueError: An archive or emitter cannot be traced (archives computing
            cells on the host, custom emitters without kernels,
            ``add_mode="single"``, emitters reading another archive, emitters
            with a DQD phase but no DQD kernels, DQD emitters without a Jacobian
            function, DQD emitters in a BanditScheduler, or kernels spreading
            their states over different device meshes).
    """

    def __init__(self, scheduler, functions: EvaluationFunctions = None, *, archives: bool = True):
        if archives and scheduler._add_mode != "batch":
            raise ValueError(
                "The fused loop supports add_mode='batch' only; use the "
                "ask/tell loop for add_mode='single'"
            )
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
                raise ValueError(
                    f"Emitter {i} reads another archive than the "
                    "scheduler's; the fused loop cannot run it"
                )
            if not emitter_ready(emitter):
                raise ValueError(
                    f"Emitter {i} ({type(emitter).__name__}) cannot run in the fused "
                    "loop right now (no pure kernels, host-side sampling, or "
                    "initial_solutions still pending on an empty archive); use the "
                    "ask/tell loop"
                )
            if has_dqd_phase([emitter]) and not emitter.kernel.has_dqd:
                raise ValueError(
                    f"Emitter {i} ({type(emitter).__name__}) has a DQD phase "
                    "(ask_dqd) without DQD kernels; use the ask/tell loop"
                )
        self.units = emitter_units(scheduler)
        #: The device mesh that an emitter's kernel spreads its state over (e.g.
        #: ME-PBT's agents), or None: with a mesh, the step functions and the
        #: fused loop take their arguments laid out over it.
        self.mesh = kernels_mesh(unit_kernel(u) for u in self.units)
        self.num_emitters = len(emitters)
        self.bandit = scheduler._loop_bandit_spec()
        self.has_dqd = has_dqd_phase(emitters)
        if self.bandit is not None and self.has_dqd:
            raise ValueError("BanditScheduler does not support DQD emitters")
        if functions is not None:
            check_jacobian(self.has_dqd, functions.evaluate_dqd)
        specs = [s for s in (self.archive_spec, self.result_spec) if s is not None]
        extra = [
            n
            for spec in specs
            for n in spec.field_names
            if n not in ("solution", "objective", "measures")
        ]
        self.extra_fields = tuple(dict.fromkeys(extra))
        self.solution_shape = _shape_tuple(emitters[0].solution_dim)
        self.solution_dtype = np.dtype(read.dtypes["solution"])
        self.objective_dtype = np.dtype(read.dtypes["objective"])
        self.measures_dtype = np.dtype(read.dtypes["measures"])
        #: The dtypes that :func:`~ribsax.schedulers._evaluation.batch_data`
        #: converts the evaluations to in traced code.
        self.batch_dtypes = {"objective": self.objective_dtype, "measures": self.measures_dtype}

        states = [
            jax.tree.map(
                lambda x, u=u: jax.ShapeDtypeStruct(
                    (len(u.indices),) + x.shape[(u.group is not None) :], x.dtype
                ),
                self.unit_state(u),
            )
            for u in self.units
        ]
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
        """Writes unit states (as
        :func:`~ribsax.schedulers._carry.loop_carry` holds them) into the
        objects."""
        emitters = scheduler._emitters
        for unit, st in zip(self.units, states):
            if unit.group is not None:
                unit.group.stacked_state = st
            else:
                emitters[unit.indices[0]].state = st

    def _make_signature(self):
        units = tuple((u.cls, u.config, len(u.indices), u.group is not None) for u in self.units)
        return (
            units,
            self.bandit,
            self.archive_spec,
            self.result_spec,
            self.layout.signature,
            None if self.dqd_layout is None else self.dqd_layout.signature,
            self.extra_fields,
            self.solution_dtype.str,
            self.objective_dtype.str,
            self.measures_dtype.str,
            None if self.functions is None else _functions_key(self.functions),
        )

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
        raise ValueError(
            f"{name} ({type(archive).__name__}) has no fused-loop kernels; use the ask/tell loop"
        )
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
            if not unit_asks(unit, dqd):
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
            unit_rows.append(
                np.concatenate(rows).astype(np.int32) if batch else np.zeros(0, np.int32)
            )
        order = np.concatenate(unit_rows) if unit_rows else np.zeros(0, np.int32)
        perm = np.empty(self.total, dtype=np.int32)
        perm[order] = np.arange(self.total, dtype=np.int32)
        self.perm = None if np.array_equal(perm, np.arange(self.total)) else perm
        self.unit_rows = unit_rows
        self.row_emitter = np.repeat(np.arange(plan.num_emitters), sizes).astype(np.int32)
        self.sizes = np.asarray(sizes, np.int32)
        self.signature = (
            tuple(self.member_batch),
            self.total,
            None if self.perm is None else self.perm.tobytes(),
        )


_BATCH_CACHE = {}


def _member_batch(unit, state, view_shape, dqd) -> int:
    """Batch size of one member's ask (traced once per kernel and shapes)."""
    leaves, treedef = jax.tree.flatten((state, view_shape))
    key = (
        unit.cls,
        unit.config,
        dqd,
        treedef,
        tuple((tuple(x.shape), str(x.dtype)) for x in leaves),
    )
    batch = _BATCH_CACHE.get(key)
    if batch is None:
        out = jax.eval_shape(lambda s, v: ask_unit(unit, s, v, dqd)[1], state, view_shape)
        batch = _BATCH_CACHE[key] = int(out.shape[1])
    return batch


def _view_shapes(plan):
    """Abstract :class:`ArchiveView` of the scheduler's archive."""
    view = archive_device_view(plan.units[0].emitter.archive)
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), view)
