"""Shared shell for cell archives with MAP-Elites / CMA-MAE thresholds.

GridArchive, CVTArchive and CategoricalArchive differ only in how a measure vector is
mapped to a cell; everything else (add, add_single, retrieve, data, sample_elites,
stats, best_elite, iteration, pickling) lives here and runs on the kernels in
:mod:`ribsax.archives._kernels`.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

from ribsax._utils import (
    parse_all_dtypes,
    validate_batch,
    validate_single,
)
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_stats import ArchiveStats, summary_stats
from ribsax.archives._array_store import ArrayStore, committed, keys_mismatch_error
from ribsax.archives._kernels import (
    ArchiveSpec,
    ArchiveState,
    EliteStats,
    archive_add,
    archive_stats,
    archive_view,
    given_index,
)
from ribsax.archives._store_readers import (
    StoreReadersMixin,
    check_reserved_fields,
    fill_sentinel_values,
)

__all__ = [
    "ThresholdArchive",
    "validate_cma_mae_settings",
    "fill_sentinel_values",
    "LoopArchiveSpec",
    "LoopArchiveState",
    "loop_add",
    "loop_view",
    "loop_stats",
]

#: The fused loop's names for the archive core (the same objects).
LoopArchiveSpec = ArchiveSpec
LoopArchiveState = ArchiveState
loop_stats = archive_stats
loop_view = archive_view


def loop_add(spec: ArchiveSpec, state: ArchiveState, data: dict):
    """:func:`~ribsax.archives._kernels.archive_add` as the fused loop calls it."""
    return archive_add(spec, state, data)


@partial(jax.jit, static_argnums=(0,), static_argnames=("single_rule",), donate_argnums=(1,))
def _add_kernel(spec, mutable, constants, data, indices, single_rule):
    """:func:`archive_add` for the archive objects: ``mutable`` (store, stats and
    best elite: the parts an insertion writes) is donated, so the store is updated
    in place; ``constants`` are the index arguments and CMA-MAE scalars."""
    state = _assemble(mutable, constants)
    state, add_info = archive_add(spec, state, data, indices, single_rule=single_rule)
    return _mutable_part(state), add_info


@partial(jax.jit, static_argnums=(0,))
def _judge_kernel(spec, state, data, indices):
    """Statuses and values :func:`archive_add` would give, without the new state."""
    _, add_info = archive_add(spec, state, data, indices)
    return add_info["status"], add_info["value"]


def _assemble(mutable, constants) -> ArchiveState:
    store, stats, has_best, best_index, best_fields = mutable
    index_args, learning_rate, threshold_min, qd_score_offset = constants
    return ArchiveState(
        store,
        stats,
        index_args,
        learning_rate,
        threshold_min,
        qd_score_offset,
        has_best,
        best_index,
        best_fields,
    )


def _mutable_part(state: ArchiveState) -> tuple:
    return (state.store, state.stats, state.has_best, state.best_index, state.best_fields)


def validate_cma_mae_settings(learning_rate, threshold_min, dtype):
    """Checks and normalises CMA-MAE settings as pyribs does.

    Args:
        learning_rate: None (means 1.0) or a float.
        threshold_min: Float, -inf by default.
        dtype: Threshold dtype.

    Returns:
        ``(learning_rate, threshold_min)`` as 0-d arrays of ``dtype``.

    Raises:
        ValueError: ``threshold_min`` set without ``learning_rate``, or
            ``threshold_min`` is -inf while ``learning_rate`` is not 1.
    """
    if threshold_min != -np.inf and learning_rate is None:
        raise ValueError(
            "threshold_min was set without setting learning_rate. Please note that "
            "threshold_min is only used in CMA-MAE; it is not intended to be used for "
            "only filtering archive solutions. To run CMA-MAE, please also set "
            "learning_rate."
        )
    if learning_rate is None:
        learning_rate = 1.0
    if threshold_min == -np.inf and learning_rate != 1.0:
        raise ValueError("threshold_min can only be -np.inf if learning_rate is 1.0")
    return np.asarray(learning_rate, dtype=dtype), np.asarray(threshold_min, dtype=dtype)


class ThresholdArchive(StoreReadersMixin, ArchiveBase):
    """Base for archives with one elite per cell and CMA-MAE thresholds.

    Subclasses set the cell mapping by implementing :meth:`index_of` and
    :meth:`_index_spec`, which returns ``(index_fn, index_args)`` for the jitted add
    kernel (``index_fn(measures, *index_args) -> int32[batch]``), or ``None`` when the
    cell must be computed on the host (then :meth:`index_of` is used).
    """

    _reserved_fields = {"solution", "objective", "measures", "threshold", "index"}

    def __init__(
        self,
        *,
        solution_dim,
        measure_dim,
        cells,
        learning_rate,
        threshold_min,
        qd_score_offset,
        seed,
        solution_dtype,
        objective_dtype,
        measures_dtype,
        dtype,
        extra_fields,
        default_measures_dtype=None,
    ):
        ArchiveBase.__init__(
            self, solution_dim=solution_dim, objective_dim=(), measure_dim=measure_dim
        )
        self._rng = np.random.default_rng(seed)
        extra_fields = extra_fields or {}
        check_reserved_fields(self._reserved_fields, extra_fields)
        solution_dtype, objective_dtype, measures_dtype = parse_all_dtypes(
            dtype,
            solution_dtype,
            objective_dtype,
            measures_dtype,
            default_measures_dtype,
        )
        self._store = ArrayStore(
            field_desc={
                "solution": (self.solution_dim, solution_dtype),
                "objective": ((), objective_dtype),
                "measures": (self.measure_dim, measures_dtype),
                "threshold": ((), objective_dtype),
                **extra_fields,
            },
            capacity=int(cells),
        )
        self._objective_dtype = np.dtype(objective_dtype)
        self._learning_rate, self._threshold_min = validate_cma_mae_settings(
            learning_rate, threshold_min, objective_dtype
        )
        self._qd_score_offset = np.asarray(qd_score_offset, dtype=objective_dtype)
        self._scalars = committed((self._learning_rate, self._threshold_min, self._qd_score_offset))
        self._reset_stats()

    # ------------------------------------------------------------ internals
    def _reset_stats(self):
        """Empties the stats and the best elite (device state ``_elites``: the
        objective sum, whether there is a best elite, its cell and its fields)."""
        store = self._store
        # NumPy zeros: committed() puts them on the device without compiling.
        best_fields = {
            n: np.zeros(shape, dtype)
            for n, (shape, dtype) in store.field_desc.items()
            if n in store.device_field_names
        }
        self._elites = committed(
            (
                EliteStats(np.zeros((), self._objective_dtype)),
                np.zeros((), bool),
                np.zeros((), np.int32),
                best_fields,
            )
        )
        # Host copies read on demand: the stats, and the best elite (a dict, or
        # False while none is known; None when not read since the last add).
        self._stats_cache = None
        self._best_cache = None
        # Host-side fields of the best elite (archives with non-numeric fields).
        self._best_host = {}

    def _index_spec(self):
        """``(index_fn, index_args)`` for the kernel, or None for host indexing."""
        return None

    @property
    def _neg_inf_threshold(self) -> bool:
        return bool(self._threshold_min == -np.inf)

    def _archive_spec(self) -> ArchiveSpec:
        """The archive's :class:`~ribsax.archives._kernels.ArchiveSpec`."""
        spec = self._index_spec()
        store = self._store
        return ArchiveSpec(
            index_fn=given_index if spec is None else spec[0],
            neg_inf=self._neg_inf_threshold,
            field_names=tuple(n for n in store.device_field_names if n != "threshold"),
            with_rows=bool(store.host_fields),
        )

    def _constants(self) -> tuple:
        """The parts of the state an insertion only reads: the index arguments
        and the CMA-MAE scalars."""
        spec = self._index_spec()
        return (() if spec is None else tuple(spec[1]), *self._scalars)

    def _state(self) -> ArchiveState:
        """The archive's whole device state as an
        :class:`~ribsax.archives._kernels.ArchiveState`."""
        return _assemble((self._store.state, *self._elites), self._constants())

    def _install(self, state: ArchiveState, wrote: bool = True) -> None:
        """Makes ``state`` (from :func:`archive_add` or the fused loop) the
        archive's state; ``wrote`` tells whether an elite was written (which ends
        iterations over the archive, as in pyribs)."""
        self._set_mutable(_mutable_part(state), wrote)

    def _set_mutable(self, mutable: tuple, wrote: bool) -> None:
        """Installs the written parts of the state (see :func:`_mutable_part`)."""
        store_state, *elites = mutable
        self._store._set_state(store_state, None, wrote=wrote)
        self._elites = tuple(elites)
        self._stats_cache = None
        self._best_cache = None

    # ------------------------------------------------------------ properties
    @property
    def cells(self):
        """Number of cells in the archive."""
        return self._store.capacity

    @property
    def learning_rate(self):
        """CMA-MAE archive learning rate (0-d array)."""
        return self._learning_rate

    @property
    def threshold_min(self):
        """Initial cell threshold (0-d array)."""
        return self._threshold_min

    @property
    def qd_score_offset(self):
        """Subtracted from every objective when computing the QD score (0-d array)."""
        return self._qd_score_offset

    @property
    def best_elite(self):
        """Best elite ever inserted (dict of all fields incl. threshold and index).

        As in pyribs, it is updated only when an insertion beats the current best
        objective, so in non-elitist (CMA-MAE) archives it may since have been
        replaced; ``threshold`` is its cell's threshold right after it was inserted.
        None when the archive is empty.
        """
        if self._best_cache is None:
            _, has_best, best_index, best_fields = jax.device_get(self._elites)
            self._best_cache = self._best_dict(best_fields, best_index) if has_best else False
        return self._best_cache or None

    def _best_dict(self, values, cell):
        """A best-elite dict: ``values[name]`` of every field cast to its dtype (a
        NumPy scalar or array of its own), plus ``index``."""
        values = {**values, **self._best_host}
        best = {
            name: np.array(values[name], dtype=dtype)[()]
            for name, dtype in self._store.dtypes.items()
        }
        best["index"] = np.int32(cell)
        return best

    @property
    def stats(self) -> ArchiveStats:
        if self._stats_cache is None:
            self._stats_cache = self._compute_stats()
        return self._stats_cache

    def _compute_stats(self) -> ArchiveStats:
        dtype = self._objective_dtype
        # One transfer for the count, the objective sum and the best elite.
        n, elites = jax.device_get((self._store.state.n_occupied, self._elites))
        n = int(n)
        if self._best_cache is None:
            _, has_best, best_index, best_fields = elites
            self._best_cache = self._best_dict(best_fields, best_index) if has_best else False
        return summary_stats(
            n,
            self.cells,
            elites[0].objective_sum,
            self._qd_score_offset,
            self.best_elite["objective"] if n else None,
            dtype,
        )

    # ------------------------------------------------------------ insertion
    def index_of(self, measures):
        """Cell index of each measure vector (int32[batch])."""
        raise NotImplementedError

    def _insert(self, data: dict, single_rule: bool):
        """Validated data -> one call of the archive core; returns (status, value).

        The story of an insertion: cells (on the device, or :meth:`index_of` for
        archives indexed on the host), then :func:`~ribsax.archives._kernels.
        archive_add` (winners, thresholds, statuses, values, store, stats, best
        elite) with the store donated, then the host-side fields (if any) of the
        rows written. The batch goes to the kernel as NumPy arrays: the jitted
        call copies them to the device itself, which costs less than copying each
        one beforehand.
        """
        store = self._store
        if data.keys() | {"threshold"} != store.field_desc.keys():
            return self._insert_mismatched(data)
        spec = self._archive_spec()
        indices = None
        if spec.index_fn is given_index:
            indices = np.asarray(self.index_of(data["measures"]), np.int32)
        dtypes = store.dtypes
        device_data = {
            name: np.asarray(data[name], dtype=dtypes[name]) for name in spec.field_names
        }
        mutable, add_info = _add_kernel(
            spec,
            (store.state, *self._elites),
            self._constants(),
            device_data,
            indices,
            single_rule=single_rule,
        )
        add_info = jax.device_get(add_info)
        self._set_mutable(mutable, wrote=bool(add_info["status"].any()))
        if spec.with_rows:
            inserted = add_info["inserted"]
            cells = add_info["index"][inserted]
            for name, arr in store.host_fields.items():
                arr[cells] = data[name][inserted]
            if add_info["new_best"]:
                cell = int(add_info["best_index"])
                self._best_host = {
                    name: np.array(arr[cell], dtype=arr.dtype)
                    for name, arr in store.host_fields.items()
                }
        return add_info["status"], add_info["value"]

    def _insert_mismatched(self, data):
        """A batch whose fields differ from the archive's: as in pyribs, an error
        only if something would be inserted; otherwise the statuses and values.
        The archive core judges the batch (missing fields as zeros) without
        keeping its result."""
        spec = self._archive_spec()
        batch = len(data["objective"])
        device_data = {}
        for name in spec.field_names:
            shape, dtype = self._store.field_desc[name]
            device_data[name] = (
                np.asarray(data[name], dtype=dtype)
                if name in data
                else np.zeros((batch, *shape), dtype)
            )
        indices = None
        if spec.index_fn is given_index:
            indices = np.asarray(self.index_of(data["measures"]), np.int32)
        status, value = jax.device_get(_judge_kernel(spec, self._state(), device_data, indices))
        if status.any():
            keys = dict.fromkeys([*data.keys(), "threshold"]).keys()
            raise keys_mismatch_error(keys, self._store.field_desc.keys())
        return status, value

    def add(self, solution, objective, measures, **fields):
        """Inserts a batch of solutions (pyribs' batch semantics).

        Statuses and values are computed against the archive as it was before the
        call: two solutions reaching the same empty cell both get status 2. Per cell,
        the insertable solution with the highest objective is stored (first in batch
        on ties). See :class:`ribsax.archives.GridArchive` for the threshold rules.

        Args:
            solution: (batch_size, :attr:`solution_dim`) solutions.
            objective: (batch_size,) objectives.
            measures: (batch_size, :attr:`measure_dim`) measures.
            fields: Extra fields, each with batch_size first.

        Returns:
            ``{"status": int32[batch], "value": objective dtype[batch]}``.

        Raises:
            ValueError: Bad shapes, non-finite objective or measures, or (when
                something would be inserted) missing or unknown fields.
        """
        data = validate_batch(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        status, value = self._insert(data, single_rule=False)
        return {"status": status, "value": value}

    def add_single(self, solution, objective, measures, **fields):
        """Inserts one solution with pyribs' sequential rule.

        The cell threshold ``t`` (0 for an empty cell when ``threshold_min`` is -inf,
        else ``threshold_min``) becomes ``t (1 - lr) + objective lr`` on insertion.

        Returns:
            ``{"status": np.int32, "value": scalar}``.

        Raises:
            ValueError: Bad shapes or non-finite values.
        """
        data = validate_single(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        batch = {name: np.expand_dims(arr, 0) for name, arr in data.items()}
        status, value = self._insert(batch, single_rule=True)
        return {"status": np.int32(status[0]), "value": value[0]}

    # ------------------------------------------------------------ fused loop
    # The seam used by the fused ``lax.scan`` loop (ribsax.schedulers._steps):
    # ``_loop_spec`` (static) + ``_loop_state`` (pytree) + ``loop_add`` (pure) +
    # ``loop_view`` (what emitters read) + ``_loop_install`` (write back).
    def _loop_spec(self) -> ArchiveSpec:
        """The :class:`~ribsax.archives._kernels.ArchiveSpec` of the archive, or
        raises if the archive cannot run inside the fused loop.

        Raises:
            ValueError: The cells are computed on the host, or a field lives on the
                host (non-numeric dtype).
        """
        spec = self._archive_spec()
        if spec.index_fn is given_index or spec.with_rows:
            raise ValueError(
                f"{type(self).__name__} cannot run in the fused loop: its cells or "
                "fields are computed on the host; use the ask/tell loop instead"
            )
        return spec

    def _loop_state(self) -> ArchiveState:
        """The archive's device state (see :meth:`_state`)."""
        return self._state()

    def _loop_install(self, state: ArchiveState) -> None:
        """Installs an :class:`~ribsax.archives._kernels.ArchiveState` produced by
        the loop."""
        self._install(state)

    def clear(self) -> None:
        """Removes all elites and resets the stats."""
        self._store.clear()
        self._reset_stats()

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_elites"] = jax.device_get(self._elites)
        state["_scalars"] = jax.device_get(self._scalars)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._elites = committed(self._elites)
        self._scalars = committed(self._scalars)
