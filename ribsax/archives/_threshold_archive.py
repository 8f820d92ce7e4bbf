"""Shared shell for cell archives with MAP-Elites / CMA-MAE thresholds.

GridArchive, CVTArchive and CategoricalArchive differ only in how a measure vector is
mapped to a cell; everything else (add, add_single, retrieve, data, sample_elites,
stats, best_elite, iteration, pickling) lives here and runs on the kernels in
:mod:`ribsax.archives._kernels`.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import (
    parse_all_dtypes,
    validate_batch,
    validate_single,
)
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_stats import ArchiveStats
from ribsax.archives._array_store import ArrayStore, keys_mismatch_error
from ribsax.archives._input_staging import InputStaging
from ribsax.archives._store_readers import StoreReadersMixin, fill_sentinel_values
from ribsax.archives._kernels import (
    best_insertion,
    EliteStats,
    given_index,
    flat_threshold_add,
    indexed,
    store_from_leaves,
    store_leaves,
    threshold_add,
    unpack_add_result,
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


class LoopArchiveSpec(NamedTuple):
    """Static (hashable) configuration of :func:`loop_add`."""

    index_fn: Callable
    neg_inf: bool
    field_names: tuple


class LoopArchiveState(NamedTuple):
    """Everything :func:`loop_add` reads and writes, as one pytree.

    Attributes:
        store: The :class:`~ribsax.archives._kernels.StoreState`.
        stats: :class:`~ribsax.archives._kernels.EliteStats`.
        index_args: Device arguments of the cell-index function.
        learning_rate: CMA-MAE learning rate.
        threshold_min: Minimum threshold.
        qd_score_offset: Offset of the QD score.
        has_best: bool, whether ``best_*`` hold an elite.
        best_index: int32 cell of the best elite.
        best_fields: name -> value of the best elite (incl. its threshold).
    """

    store: Any
    stats: Any
    index_args: tuple
    learning_rate: Any
    threshold_min: Any
    qd_score_offset: Any
    has_best: Any
    best_index: Any
    best_fields: dict


class _InsertPlan(NamedTuple):
    """Per-archive constants of ``ThresholdArchive._insert`` (computed once)."""

    data_keys: tuple  # The fields add() receives, in the usual order.
    fields: frozenset  # Every field of the store.
    kernel_fields: tuple  # (name, dtype) of the device fields sent to the kernel.
    row_fields: frozenset  # Kernel fields passed as RowSplits when misaligned.
    all_fields: tuple  # (name, dtype) of every field, in order.
    neg_inf: bool  # Whether threshold_min is -inf.
    with_rows: bool  # Whether the kernel returns cells and written rows (host fields).


class _AddCall(NamedTuple):
    """An add-kernel call prepared for batches of one size (see
    ``ThresholdArchive._insert``).

    Each call copies the batch's ``staged`` fields into their buffers and hands its
    ``passed`` fields to :meth:`InputStaging.put`. The kernel depends on the form
    ``put`` returns for them (arrays, or ``RowSplit``/``ShiftedRows``); its
    arguments after the store's are ``leaf_order`` with each passed field's name
    replaced by its leaves. Without passed fields, both are fixed.
    """

    index_fn: Callable
    index_args: tuple  # The index arguments it was made with (the same object).
    staged: tuple  # (name, host view of a staged device array) per staged field.
    passed: tuple  # (name, dtype) of the fields put stages or passes on each call.
    fields: dict  # name -> staged device array, or the name itself if passed.
    leaf_order: tuple  # Arguments after the store's, a passed field by its name.
    kernels: dict  # Type of each passed value (in order) -> kernel.


def loop_add(spec: LoopArchiveSpec, state: LoopArchiveState, data: dict):
    """Pure batch ``add`` for the fused loop (same rules as ``archive.add``).

    Args:
        spec: Static configuration from ``archive._loop_spec()``.
        state: Current :class:`LoopArchiveState`.
        data: name -> [batch, ...] traced arrays (``solution``, ``objective``,
            ``measures`` and every extra field of the archive).

    Returns:
        ``(state, add_info)`` with ``add_info = {"status", "value"}``.
    """
    fields = {name: data[name] for name in spec.field_names}
    indices = spec.index_fn(fields["measures"], *state.index_args)
    store, stats, out = threshold_add(
        state.store, state.stats, indices, fields, state.learning_rate,
        state.threshold_min, spec.neg_inf, False)

    # Monotone best elite, as the shell's _update_best.
    objective = fields["objective"].astype(state.best_fields["objective"].dtype)
    pos, any_insertable, win_max = best_insertion(out["status"], objective, indices,
                                                  out["cell_winner"])
    better = any_insertable & (~state.has_best
                               | (win_max > state.best_fields["objective"]))
    candidate = {name: (out["new_threshold"][pos] if name == "threshold"
                        else fields[name][pos]).astype(arr.dtype)
                 for name, arr in state.best_fields.items()}
    best_fields = jax.tree.map(lambda new, old: jnp.where(better, new, old),
                               candidate, state.best_fields)
    new_state = state._replace(
        store=store, stats=stats, has_best=state.has_best | better,
        best_index=jnp.where(better, indices[pos], state.best_index),
        best_fields=best_fields)
    return new_state, {"status": out["status"], "value": out["value"]}


def loop_view(state: LoopArchiveState):
    """The :class:`~ribsax.emitters._emitter_base.ArchiveView` emitters read."""
    # pylint: disable-next = import-outside-toplevel
    from ribsax.emitters._emitter_base import ArchiveView
    store = state.store
    return ArchiveView(store.stamp, store.n_occupied, store.fields["solution"])


def loop_stats(state: LoopArchiveState) -> dict:
    """Traced archive statistics (pyribs' ``stats``) of a loop state.

    Returns:
        Dict of scalars: ``num_elites``, ``coverage``, ``qd_score``,
        ``norm_qd_score``, ``obj_max`` and ``obj_mean`` (NaN while empty).
    """
    n = state.store.n_occupied
    cells = state.store.stamp.shape[0]
    dtype = state.stats.objective_sum.dtype
    nf = n.astype(dtype)
    total = state.stats.objective_sum
    qd_score = total - nf * state.qd_score_offset.astype(dtype)
    nan = jnp.asarray(jnp.nan, dtype)
    return {
        "num_elites": n,
        "coverage": nf / cells,
        "qd_score": qd_score,
        "norm_qd_score": qd_score / cells,
        "obj_max": jnp.where(state.has_best,
                             state.best_fields["objective"].astype(dtype), nan),
        "obj_mean": jnp.where(n > 0, total / jnp.maximum(nf, 1), nan),
    }


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

    #: Most :class:`_AddCall` kept at once (one per batch size and threshold rule).
    _max_add_calls = 4

    def __init__(self, *, solution_dim, measure_dim, cells, learning_rate, threshold_min,
                 qd_score_offset, seed, solution_dtype, objective_dtype, measures_dtype,
                 dtype, extra_fields, default_measures_dtype=None):
        ArchiveBase.__init__(self, solution_dim=solution_dim, objective_dim=(),
                             measure_dim=measure_dim)
        self._rng = np.random.default_rng(seed)
        extra_fields = extra_fields or {}
        if self._reserved_fields & extra_fields.keys():
            raise ValueError(
                "The following names are not allowed in "
                f"extra_fields: {self._reserved_fields}"
            )
        solution_dtype, objective_dtype, measures_dtype = parse_all_dtypes(
            dtype, solution_dtype, objective_dtype, measures_dtype,
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
        # Device copy of the scalars the kernel reads (one buffer, sent once).
        self._kernel_scalars = jax.numpy.asarray(
            np.array([self._learning_rate, self._threshold_min], dtype=objective_dtype))
        self._reset_stats()

    # ------------------------------------------------------------ internals
    def _reset_stats(self):
        # Running sum of the elites' objectives, kept on the host (the add kernel
        # returns its change); ``_device_stats`` holds an EliteStats installed by the
        # fused loop until it is first read.
        self._objective_sum = self._objective_dtype.type(0)
        self._device_stats = None
        # The best elite: ``_best_objective`` is its objective (for stats and the
        # monotone update); the dict itself is ``_best_elite``, or, when
        # ``_best_cell`` is set, the current entry of that cell, read on first use
        # (see _update_best).
        self._best_elite = None
        self._best_objective = None
        self._best_cell = None
        self._stats_cache = None

    def _host_objective_sum(self):
        """The objective sum as a NumPy scalar (reads a pending device value once)."""
        if self._device_stats is not None:
            self._objective_sum = np.asarray(
                jax.device_get(self._device_stats.objective_sum),
                dtype=self._objective_dtype)[()]
            self._device_stats = None
        return self._objective_sum

    def _index_spec(self):
        """``(index_fn, index_args)`` for the kernel, or None for host indexing."""
        return None

    @property
    def _neg_inf_threshold(self) -> bool:
        return bool(self._threshold_min == -np.inf)

    # ------------------------------------------------------------ properties
    @property
    def store(self) -> ArrayStore:
        """The archive's :class:`ArrayStore` (its ``state`` is the device pytree that
        kernels such as emitters and the fused loop read)."""
        return self._store

    @property
    def field_list(self):
        return self._store.field_list_with_index

    @property
    def dtypes(self):
        return self._store.dtypes_with_index

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
    def empty(self) -> bool:
        return len(self._store) == 0

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self):
        return iter(self._store)

    @property
    def best_elite(self):
        """Best elite ever inserted (dict of all fields incl. threshold and index).

        As in pyribs, it is updated only when an insertion beats the current best
        objective, so in non-elitist (CMA-MAE) archives it may since have been
        replaced; ``threshold`` is its cell's threshold right after it was inserted.
        None when the archive is empty.
        """
        if self._best_cell is not None:
            self._best_elite = self._read_best(self._best_cell)
            self._best_cell = None
        return self._best_elite

    def _read_best(self, cell):
        """The best-elite dict of the entry stored in ``cell``."""
        # pylint: disable-next = protected-access
        row = self._store._gather(np.array([cell], dtype=np.int32),
                                  self._store.field_list)
        return self._best_dict({name: values[0] for name, values in row.items()}, cell)

    def _best_dict(self, values, cell):
        """A best-elite dict: ``values[name]`` of every field cast to its dtype (a
        NumPy scalar or array of its own), plus ``index``."""
        best = {name: np.array(values[name], dtype=dtype)[()]
                for name, dtype in self._insert_plan().all_fields}
        best["index"] = np.int32(cell)
        return best

    @property
    def stats(self) -> ArchiveStats:
        if self._stats_cache is None:
            self._stats_cache = self._compute_stats()
        return self._stats_cache

    def _compute_stats(self) -> ArchiveStats:
        dtype = self._objective_dtype
        n = len(self)
        if n == 0:
            zero = np.asarray(0.0, dtype=dtype)
            return ArchiveStats(num_elites=0, coverage=zero.copy(), qd_score=zero.copy(),
                                norm_qd_score=zero.copy(), obj_max=None, obj_mean=None)
        objective_sum = self._host_objective_sum()
        obj_max = self._best_objective
        qd_score = objective_sum - np.asarray(n, dtype=dtype) * self._qd_score_offset
        return ArchiveStats(
            num_elites=int(n),
            coverage=np.asarray(n / self.cells, dtype=dtype),
            qd_score=qd_score,
            norm_qd_score=np.asarray(qd_score / self.cells, dtype=dtype),
            obj_max=obj_max,
            obj_mean=np.asarray(objective_sum / n, dtype=dtype),
        )

    # ------------------------------------------------------------ insertion
    def index_of(self, measures):
        """Cell index of each measure vector (int32[batch])."""
        raise NotImplementedError

    def _insert(self, data: dict, single_rule: bool):
        """Runs the add kernel on validated data; returns (status, value) arrays.

        A batch with the archive's usual fields takes the call prepared for its
        size (:meth:`_prepared_call`): its small fields are copied into staging
        buffers, its large ones go through :meth:`InputStaging.put
        <ribsax.archives._input_staging.InputStaging.put>`, and the kernel's other
        arguments were fixed beforehand. Against staging and flattening every
        argument on each call, this measured 155-160 -> 135-141 us per ``add`` in
        float64 and 130-136 -> 113-118 us in float32 at batch 540, and 590-595 ->
        571-578 us in float32 at batch 10,000 (GridArchive 100x100, 100-D solutions,
        on the 2-core CPU, in one process against the previous code). Archives that
        compute cells on the host, and batches with other fields, take the general
        route.
        """
        store = self._store
        plan = self._insert_plan()
        batch = len(data["objective"])
        call = self._prepared_call(batch, single_rule)
        if call is not None and tuple(data) == plan.data_keys:
            kernel, args_leaves = self._call_arguments(call, data, single_rule)
        else:
            spec = self._index_spec()
            if spec is None:
                index_fn, index_args = given_index, (self.index_of(data["measures"]),)
            else:
                index_fn, index_args = spec
            if tuple(data) != plan.data_keys and set(data) | {"threshold"} != plan.fields:
                return self._insert_mismatched(data, index_fn, index_args)
            device_data = self._input_staging().put(
                data, plan.kernel_fields, plan.row_fields, self._gather_rows(batch))
            kernel, args_leaves = self._flat_kernel(index_fn, index_args, device_data,
                                                    single_rule)

        state = store.state
        *new_leaves, packed = kernel(*store_leaves(state), *args_leaves)
        new_state = store_from_leaves(new_leaves, state.fields.layout)
        result = unpack_add_result(np.asarray(packed), batch,
                                   self._objective_dtype, plan.with_rows)
        wrote = result.best_pos >= 0
        # pylint: disable-next = protected-access
        store._set_state(new_state, result.n_occupied, wrote=wrote)
        if not result.all_finite:  # Nothing was written; raise pyribs' error.
            validate_batch(self, data)
            raise ValueError("objective and measures must be finite")
        if wrote:
            self._objective_sum = self._host_objective_sum() + result.objective_delta
            self._stats_cache = None
            if plan.with_rows:
                inserted = result.inserted != 0
                cells = result.index[inserted]
                for name, arr in store.host_fields.items():
                    arr[cells] = data[name][inserted]
            self._update_best(data, result)
        return result.status, result.value

    def _gather_rows(self, batch: int) -> bool:
        """``gather_rows`` of :meth:`InputStaging.put` for a batch of ``batch`` rows:
        reading never-aligned rows in place by gathering them into every cell pays
        once the batch is half the capacity (see ``_field_table._scatter_rows``)."""
        return 2 * batch >= self._store.capacity

    def _input_staging(self) -> InputStaging:
        """The archive's :class:`InputStaging` (created on first use)."""
        staging = self.__dict__.get("_staging")
        if staging is None:
            staging = self._staging = InputStaging.for_array(self._store.state.stamp)
        return staging

    def _kernel_arguments(self, index_args, device_data) -> tuple:
        """The add kernel's arguments after the store's, as a pytree:
        ``(index_args, data, scalars)``, ``data`` holding None for ``measures`` when
        they are not sent."""
        return (index_args, {"measures": None, **device_data}, self._kernel_scalars)

    def _flat_kernel(self, index_fn, index_args, device_data, single_rule):
        """``(kernel, args_leaves)``: the add kernel for these arguments (see
        :func:`~ribsax.archives._kernels.flat_threshold_add`) and its arguments after
        the store's."""
        args_leaves, args_treedef = jax.tree.flatten(
            self._kernel_arguments(index_args, device_data))
        kernels = self.__dict__.get("_kernels")
        if kernels is None:
            kernels = self._kernels = {}
        key = (args_treedef, index_fn, single_rule)
        kernel = kernels.get(key)
        if kernel is None:
            plan = self._insert_plan()
            kernel = kernels[key] = flat_threshold_add(
                self._store.state.fields.layout, args_treedef, index_fn=index_fn,
                threshold_min_is_neg_inf=plan.neg_inf, single_rule=single_rule,
                with_rows=plan.with_rows)
        return kernel, args_leaves

    def _prepared_call(self, batch: int, single_rule: bool) -> "_AddCall | None":
        """The :class:`_AddCall` for batches of ``batch`` rows, prepared on first
        use, or None for archives whose cells are computed on the host."""
        spec = self._index_spec()
        if spec is None:
            return None
        calls = self.__dict__.get("_add_calls")
        if calls is None:
            calls = self._add_calls = {}
        key = (batch, single_rule)
        call = calls.get(key)
        if call is not None and call.index_args is spec[1]:
            return call
        calls.pop(key, None)  # Made with index arguments since replaced.
        if len(calls) >= self._max_add_calls:
            del calls[next(iter(calls))]  # The oldest one.
        calls[key] = call = self._prepare_call(spec, batch)
        return call

    def _prepare_call(self, spec, batch) -> _AddCall:
        """A new :class:`_AddCall` (see :meth:`_prepared_call`)."""
        plan = self._insert_plan()
        desc = self._store.field_desc
        buffers = self._input_staging().staged_buffers(
            [(name, dtype, desc[name][0]) for name, dtype in plan.kernel_fields], batch)
        staged, passed, fields = [], [], {}
        for (name, dtype), buffer in zip(plan.kernel_fields, buffers):
            if buffer is None:
                passed.append((name, dtype))
                fields[name] = name  # A string is a leaf to jax.tree.
            else:
                staged.append((name, buffer.host_view))
                fields[name] = buffer.device_array
        index_fn, index_args = spec
        leaf_order = tuple(jax.tree.leaves(self._kernel_arguments(index_args, fields)))
        return _AddCall(index_fn=index_fn, index_args=index_args, staged=tuple(staged),
                        passed=tuple(passed), fields=fields, leaf_order=leaf_order,
                        kernels={})

    def _call_arguments(self, call: _AddCall, data: dict, single_rule: bool):
        """``(kernel, args_leaves)`` of a prepared call for ``data``."""
        for name, host_view in call.staged:
            np.copyto(host_view, data[name], casting="unsafe")
        if call.passed:
            passed = self._input_staging().put(data, call.passed,
                                               self._insert_plan().row_fields,
                                               self._gather_rows(len(data["objective"])))
            key = tuple(type(passed[name]) for name, _ in call.passed)
        else:
            passed, key = {}, ()
        kernel = call.kernels.get(key)
        if kernel is None:
            kernel, args_leaves = self._flat_kernel(
                call.index_fn, call.index_args, {**call.fields, **passed}, single_rule)
            call.kernels[key] = kernel
            return kernel, args_leaves
        if not passed:
            return kernel, call.leaf_order
        args_leaves = []
        for leaf in call.leaf_order:
            if type(leaf) is str:  # pylint: disable = unidiomatic-typecheck
                value = passed[leaf]
                if isinstance(value, tuple):  # A RowSplit or ShiftedRows.
                    args_leaves.extend(value)
                else:
                    args_leaves.append(value)
            else:
                args_leaves.append(leaf)
        return kernel, args_leaves

    def _insert_plan(self) -> "_InsertPlan":
        """The archive's :class:`_InsertPlan` (built on first use)."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            store = self._store
            dtypes = store.dtypes
            plan = self._plan = _InsertPlan(
                data_keys=tuple(n for n in store.field_list if n != "threshold"),
                fields=frozenset(store.field_list),
                kernel_fields=tuple((n, dtypes[n]) for n in store.device_field_names
                                    if n != "threshold"),
                # The kernel reads objective and measures and only writes the rest;
                # a RowSplit pays off for fields with a block of their own.
                row_fields=frozenset(
                    n for n in store.device_field_names
                    if n not in ("threshold", "objective", "measures")
                    and store.state.fields.has_own_block(n)),
                all_fields=tuple(dtypes.items()),
                neg_inf=self._neg_inf_threshold,
                with_rows=bool(store.host_fields))
        return plan

    def _update_best(self, data, result):
        """Monotone best-elite update from the batch just inserted (host side).

        The kernel picks the candidate row (:func:`~ribsax.archives._kernels.
        best_insertion`: the highest inserted objective; among equal objectives the
        lowest cell, then the first in the batch); it replaces the best elite when its
        objective is strictly higher.

        With ``threshold_min = -inf`` (plain MAP-Elites thresholds) a cell's entry is
        only ever replaced by a higher objective, and any such replacement of the best
        elite's cell makes a new best elite, so the best elite is always the current
        entry of its cell: only the cell is recorded here and the dict is read from
        the store when :attr:`best_elite` is first asked for. Otherwise (CMA-MAE
        thresholds can let a lower objective replace it) the row is copied now.
        """
        pos = result.best_pos
        objective = data["objective"][pos]
        if self._best_objective is not None and not objective > self._best_objective:
            return
        plan = self._insert_plan()
        if plan.neg_inf:
            self._best_objective = np.array(objective, dtype=self._objective_dtype)[()]
            self._best_cell = result.best_cell
            self._best_elite = None
            return
        values = {name: data[name][pos] for name in data}
        values["threshold"] = result.best_threshold
        best = self._best_elite = self._best_dict(values, result.best_cell)
        self._best_objective = best["objective"]
        self._best_cell = None

    def _insert_mismatched(self, data, index_fn, index_args):
        """pyribs only rejects missing/extra fields when something is inserted."""
        if index_fn is given_index:  # Cells already computed on the host.
            indices = np.asarray(index_args[0])
        else:
            indices = np.asarray(indexed(data["measures"], index_args, index_fn=index_fn))
        occupied, cur = self._store.retrieve(indices, ["threshold", "objective"])
        thr = np.where(occupied, cur["threshold"], self._threshold_min)
        objective = data["objective"]
        can_insert = objective > thr
        if can_insert.any():
            keys = dict.fromkeys([*data.keys(), "threshold"]).keys()
            raise keys_mismatch_error(keys, self._store.field_desc.keys())
        is_new = can_insert & ~occupied
        status = np.where(is_new, 2, np.where(can_insert, 1, 0)).astype(np.int32)
        base = 0.0 if self._neg_inf_threshold else self._threshold_min
        value = objective - np.where(is_new, base, thr).astype(objective.dtype)
        return status, value.astype(self._objective_dtype)

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
        data = None
        if not fields:
            data = self._checked_arrays(solution, objective, measures)
        if data is None:
            data = validate_batch(self, {"solution": solution, "objective": objective,
                                         "measures": measures, **fields})
        status, value = self._insert(data, single_rule=False)
        return {"status": status, "value": value}

    def _checked_arrays(self, solution, objective, measures):
        """Fast path of :func:`~ribsax._utils.validate_batch` for the common case.

        When the three inputs are already NumPy arrays of the archive's float dtypes
        with valid shapes, ``validate_batch`` would return them unchanged (or raise for
        non-finite objectives or measures, which the add kernel detects instead: it
        then writes nothing and :meth:`_insert` raises the same error); this checks
        exactly that with fewer operations. Archives with extra fields always take
        the full validation.

        Returns:
            The data dict, or None when the full validation must run (it then
            converts the inputs or raises pyribs' error).
        """
        fast = self.__dict__.get("_fast_check")
        if fast is None:
            desc = self._store.field_desc
            if set(desc) != {"solution", "objective", "measures", "threshold"}:
                fast = (None,)  # Extra fields: always the full validation.
            else:
                fast = tuple((desc[name][0], desc[name][1])
                             if desc[name][1].kind == "f" else None
                             for name in ("solution", "objective", "measures"))
            self._fast_check = fast
        if None in fast:
            return None
        (sol_shape, sol_dtype), (_, obj_dtype), (meas_shape, meas_dtype) = fast
        # pylint: disable = unidiomatic-typecheck
        if not (type(solution) is np.ndarray and type(objective) is np.ndarray
                and type(measures) is np.ndarray):
            return None
        if (solution.dtype != sol_dtype or objective.dtype != obj_dtype
                or measures.dtype != meas_dtype):
            return None
        batch = solution.shape[0] if solution.ndim else -1
        if (solution.shape[1:] != sol_shape or objective.shape != (batch,)
                or measures.shape != (batch, *meas_shape) or solution.ndim == 0):
            return None
        return {"solution": solution, "objective": objective, "measures": measures}

    def add_single(self, solution, objective, measures, **fields):
        """Inserts one solution with pyribs' sequential rule.

        The cell threshold ``t`` (0 for an empty cell when ``threshold_min`` is -inf,
        else ``threshold_min``) becomes ``t (1 - lr) + objective lr`` on insertion.

        Returns:
            ``{"status": np.int32, "value": scalar}``.

        Raises:
            ValueError: Bad shapes or non-finite values.
        """
        data = validate_single(self, {"solution": solution, "objective": objective,
                                      "measures": measures, **fields})
        batch = {name: np.expand_dims(arr, 0) for name, arr in data.items()}
        status, value = self._insert(batch, single_rule=True)
        return {"status": np.int32(status[0]), "value": value[0]}

    # ------------------------------------------------------------ fused loop
    # The seam used by the fused ``lax.scan`` loop (ribsax.schedulers._fused_loop):
    # ``_loop_spec`` (static) + ``_loop_state`` (pytree) + ``loop_add`` (pure) +
    # ``loop_view`` (what emitters read) + ``_loop_install`` (write back).
    def _loop_spec(self):
        """Static configuration of :func:`loop_add`, or raises if the archive cannot
        run inside the fused loop.

        Raises:
            ValueError: The cells are computed on the host, or a field lives on the
                host (non-numeric dtype).
        """
        spec = self._index_spec()
        if spec is None or spec[0] is given_index or self._store.host_fields:
            raise ValueError(
                f"{type(self).__name__} cannot run in the fused loop: its cells or "
                "fields are computed on the host; use the ask/tell loop instead")
        names = tuple(n for n in self._store.device_field_names if n != "threshold")
        return LoopArchiveSpec(index_fn=spec[0],
                               neg_inf=self._neg_inf_threshold,
                               field_names=names)

    def _loop_state(self):
        """The archive's device state as a :class:`LoopArchiveState` pytree."""
        spec = self._index_spec()
        store = self._store
        fields = store.state.fields
        best = self.best_elite
        specs = {n: fields.field_spec(n) for n in fields}
        if best is None:
            best_fields = {n: jax.numpy.zeros(shape, dtype)
                           for n, (shape, dtype) in specs.items()}
            best_index = jax.numpy.zeros((), jax.numpy.int32)
        else:
            best_fields = {n: jax.numpy.asarray(np.asarray(best[n], dtype=dtype))
                           for n, (_, dtype) in specs.items()}
            best_index = jax.numpy.asarray(best["index"], jax.numpy.int32)
        return LoopArchiveState(
            store=store.state,
            stats=EliteStats(jax.numpy.asarray(self._host_objective_sum())),
            index_args=tuple(spec[1]),
            learning_rate=jax.numpy.asarray(self._learning_rate),
            threshold_min=jax.numpy.asarray(self._threshold_min),
            qd_score_offset=jax.numpy.asarray(self._qd_score_offset),
            has_best=jax.numpy.asarray(best is not None),
            best_index=best_index, best_fields=best_fields,
        )

    def _loop_install(self, state) -> None:
        """Installs a :class:`LoopArchiveState` produced by the loop."""
        current = self.best_elite  # Read from the store before replacing it.
        self._store._set_state(state.store, None, wrote=True)  # pylint: disable=protected-access
        self._device_stats = state.stats
        self._stats_cache = None
        if bool(state.has_best):
            best = self._best_dict(jax.device_get(state.best_fields), state.best_index)
            if (current is None
                    or best["objective"] > current["objective"]
                    or best["index"] != current["index"]):
                self._best_elite = best
                self._best_objective = best["objective"]

    def clear(self) -> None:
        """Removes all elites and resets the stats."""
        self._store.clear()
        self._reset_stats()

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_plan", None)
        state.pop("_staging", None)
        state.pop("_kernels", None)
        state.pop("_add_calls", None)
        state["_objective_sum"] = self._host_objective_sum()
        state["_device_stats"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

