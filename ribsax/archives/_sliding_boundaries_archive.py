"""SlidingBoundariesArchive: a grid whose boundaries follow the measure distribution."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import (
    parse_all_dtypes,
    validate_batch,
    validate_single,
)
from ribsax.archives._archive_base import ArchiveBase
from ribsax.archives._archive_stats import ArchiveStats, summary_stats
from ribsax.archives._array_store import ArrayStore
from ribsax.archives._bounds import GridIndexMixin, MeasureBoundsMixin, read_only
from ribsax.archives._store_readers import StoreReadersMixin, check_reserved_fields

__all__ = ["SlidingBoundariesArchive"]


# ---------------------------------------------------------------------------
# Pure host kernels.
# ---------------------------------------------------------------------------
def sequential_map_elites(cells, objective, occupied, elite_objective):
    """Outcome of inserting items one after another with the basic MAP-Elites rule.

    Item ``i`` goes to cell ``cells[i]``; it is inserted if the cell is empty or
    ``objective[i]`` is strictly greater than the cell's current objective, where the
    current objective accounts for the items before ``i``. The result is identical to
    a Python loop over the items, computed with a stable sort and one segmented prefix
    maximum (on ranks, so it is exact).

    Args:
        cells: int[m] target cell of each item, in insertion order.
        objective: [m] objectives.
        occupied: bool[cells] occupancy before the first item.
        elite_objective: [cells] objectives of the current elites (read only where
            occupied).

    Returns:
        Dict with ``status`` (int32[m]: 2 new cell, 1 improved, 0 not added),
        ``cur`` ([m] the cell's objective just before the item, 0 for an empty cell),
        ``inserted`` (bool[m]), ``winners`` (int[k] items that end up stored, one per
        touched cell) and ``new_order`` (int[j] cells that became occupied, in the
        order they were first filled).
    """
    m = len(cells)
    dtype = objective.dtype
    if m == 0:
        empty = np.zeros(0, dtype=np.int64)
        return {
            "status": np.zeros(0, np.int32),
            "cur": np.zeros(0, dtype),
            "inserted": np.zeros(0, bool),
            "winners": empty,
            "new_order": empty,
        }
    order = np.argsort(cells, kind="stable")
    sorted_cells = cells[order]
    sorted_obj = objective[order]
    start = np.ones(m, dtype=bool)
    start[1:] = sorted_cells[1:] != sorted_cells[:-1]
    group = np.cumsum(start) - 1
    group_cells = sorted_cells[start]
    group_occupied = occupied[group_cells]

    # Ranks turn the segmented running maximum into an integer accumulate.
    uniq, inverse = np.unique(
        np.concatenate([sorted_obj, elite_objective[group_cells[group_occupied]]]),
        return_inverse=True,
    )
    stride = len(uniq) + 1
    item_rank = inverse[:m] + 1
    init_rank = np.zeros(len(group_cells), dtype=np.int64)
    init_rank[group_occupied] = inverse[m:] + 1
    base = group * stride
    inclusive = np.maximum.accumulate(base + item_rank)
    previous = np.empty(m, dtype=np.int64)
    previous[0] = -1
    previous[1:] = inclusive[:-1]
    # Keys of earlier groups are below ``base``, so they never leak into a group.
    prev_rank = np.maximum(previous, base + init_rank[group]) - base  # 0: empty cell.

    has_prev = prev_rank > 0
    inserted_sorted = ~has_prev | (item_rank > prev_rank)
    status_sorted = np.where(inserted_sorted, np.where(has_prev, 1, 2), 0)
    cur_sorted = np.where(has_prev, uniq[np.maximum(prev_rank - 1, 0)], np.zeros((), dtype)).astype(
        dtype
    )

    # The last inserted item of each group is the one left in the cell.
    ins = np.flatnonzero(inserted_sorted)
    last = np.ones(len(ins), dtype=bool)
    last[:-1] = group[ins][1:] != group[ins][:-1]
    winners = order[ins[last]]

    # New cells are occupied in the order of their first (status 2) item.
    first_items = order[np.flatnonzero(start)[~group_occupied]]
    new_order = group_cells[~group_occupied][np.argsort(first_items, kind="stable")]

    status = np.empty(m, dtype=np.int32)
    status[order] = status_sorted
    cur = np.empty(m, dtype=dtype)
    cur[order] = cur_sorted
    inserted = np.empty(m, dtype=bool)
    inserted[order] = inserted_sorted
    return {
        "status": status,
        "cur": cur,
        "inserted": inserted,
        "winners": winners,
        "new_order": new_order,
    }


def sliding_index(measures, boundaries, dims, lower_bounds, upper_bounds, epsilon):
    """pyribs' sliding-boundaries cell rule on a batch (NumPy).

    ``m = clip(m + eps, lower_bounds, upper_bounds - eps)``, then per dimension
    ``max(0, searchsorted(boundaries[i][:dims[i]], m_i) - 1)``, then C-order ravel.

    Returns:
        int32[batch].
    """
    measures = np.clip(measures + epsilon, lower_bounds, upper_bounds - epsilon)
    columns = [
        np.maximum(0, np.searchsorted(boundary[:dim], col) - 1)
        for boundary, dim, col in zip(boundaries, dims, measures.T)
    ]
    if not columns or len(measures) == 0:
        return np.zeros(len(measures), dtype=np.int32)
    return np.ravel_multi_index(columns, dims).astype(np.int32)


def with_occupation_order(state, occupied_list, n_occupied, fields):
    """Store state whose occupied cells are ``occupied_list[:n_occupied]``, in order.

    The store keeps, per cell, a stamp ordering first occupations (-1 when empty);
    giving each listed cell its position as stamp reproduces the exact order in which
    the cells were first filled, which batched store writes cannot express. The
    store's ``order`` becomes the list itself.

    Args:
        state: Current :class:`~ribsax.archives._kernels.StoreState`.
        occupied_list: int[capacity] cells in order of first occupation.
        n_occupied: Number of valid entries in ``occupied_list``.
        fields: New device fields.

    Returns:
        The new state.
    """
    stamp = np.full(state.stamp.shape[0], -1, dtype=np.int32)
    stamp[occupied_list[:n_occupied]] = np.arange(n_occupied, dtype=np.int32)
    order = np.zeros(state.order.shape[0], dtype=np.int32)
    order[:n_occupied] = occupied_list[:n_occupied]
    return state._replace(
        stamp=jnp.asarray(stamp),
        order=jnp.asarray(order),
        n_occupied=jnp.asarray(n_occupied, dtype=jnp.int32),
        n_writes=jnp.asarray(n_occupied, dtype=jnp.int32),
        fields=fields,
    )


@partial(jax.jit, donate_argnums=(0,))
def _write_rows(fields, cells, rows):
    """Scatters ``rows`` into ``fields`` at ``cells`` (out-of-range cells dropped)."""
    return {
        name: block.at[cells].set(rows[name].astype(block.dtype), mode="drop")
        if name in rows
        else block
        for name, block in fields.items()
    }


class SlidingBoundariesArchive(StoreReadersMixin, MeasureBoundsMixin, GridIndexMixin, ArchiveBase):
    """A grid archive whose boundaries slide to follow the distribution of measures.

    Behaves like :class:`ribs.archives.SlidingBoundariesArchive` (Fontaine 2019): each
    measure dimension has ``dims[i]`` cells whose boundaries start evenly spaced over
    ``ranges``. Every solution passed to :meth:`add_single` (and to :meth:`add`, which
    inserts the batch one solution after another, so results depend on the batch
    order) is pushed into a FIFO buffer of the last ``buffer_capacity`` solutions.
    Every ``remap_frequency``-th solution triggers a remap: boundary ``j`` of dimension
    ``i`` becomes ``sorted_measures_i[int(j * buffer_size / dims[i])]`` and the last
    boundary the largest buffered measure; the archive is cleared and the previous
    elites, then the buffered solutions, are re-inserted; the add info of the last
    buffered solution (the one that triggered the remap) is returned for it.

    Insertion uses the basic MAP-Elites rule: a solution enters its cell if the cell is
    empty (status 2, value = objective) or its objective is strictly greater than the
    elite's (status 1, value = improvement); otherwise status 0 and value = objective -
    elite objective.

    pyribs quirk kept on purpose: ``lower_bounds`` / ``upper_bounds`` /
    ``interval_size`` are only updated after the re-insertion, so during a remap
    :meth:`index_of` still clips measures to the previous bounds.

    Implementation: this archive is inherently sequential, so the insertion logic runs
    on the host with NumPy, vectorised between remaps (a segmented running maximum gives
    exactly the sequential outcome) on a host working copy of the elites. The elites
    are also kept in an :class:`ArrayStore` on the JAX device (which serves ``data``,
    ``retrieve``, iteration and sampling like in the other archives); it is updated
    once per :meth:`add` call with one jitted scatter of the changed cells.

    Differences from pyribs 0.12 (deliberate): an empty batch returns empty
    ``status``/``value`` arrays (pyribs returns ``{}``); a remap with a single buffered
    solution (``remap_frequency=1`` or ``buffer_capacity=1``) works instead of raising
    from ``np.concatenate``; and missing or unknown extra fields are rejected before
    anything is buffered (pyribs raises at the first actual insertion, after buffering).

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        dims: Number of cells along each measure dimension.
        ranges: ``(low, high)`` per measure dimension; the initial boundaries.
        epsilon: Added to measures before locating their cell.
        qd_score_offset: Subtracted from each objective in the QD score.
        seed: Seed for :meth:`sample_elites`.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32).
        objective_dtype: dtype of objectives.
        measures_dtype: dtype of measures.
        dtype: Sets the three dtypes at once.
        extra_fields: ``{name: (shape, dtype)}`` of additional per-elite data.
        remap_frequency: Remap after every this many solutions.
        buffer_capacity: Number of recent solutions kept for remapping.

    Raises:
        ValueError: ``dims`` and ``ranges`` differ in length, reserved extra field
            names, or conflicting dtype arguments.
    """

    _reserved_fields = {"solution", "objective", "measures", "index"}

    def __init__(
        self,
        *,
        solution_dim,
        dims,
        ranges,
        epsilon=1e-6,
        qd_score_offset=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
        remap_frequency=100,
        buffer_capacity=1000,
    ):
        self._rng = np.random.default_rng(seed)
        self._dims = np.array(dims)
        ArchiveBase.__init__(
            self, solution_dim=solution_dim, objective_dim=(), measure_dim=len(self._dims)
        )
        extra_fields = extra_fields or {}
        check_reserved_fields(self._reserved_fields, extra_fields)
        solution_dtype, objective_dtype, measures_dtype = parse_all_dtypes(
            dtype, solution_dtype, objective_dtype, measures_dtype
        )
        self._store = ArrayStore(
            field_desc={
                "solution": (self.solution_dim, solution_dtype),
                "objective": ((), objective_dtype),
                "measures": (self.measure_dim, measures_dtype),
                **extra_fields,
            },
            capacity=int(np.prod(self._dims)),
        )
        if len(self._dims) != len(ranges):
            raise ValueError(
                f"dims (length {len(self._dims)}) and ranges "
                f"(length {len(ranges)}) must be the same length"
            )
        ranges = list(zip(*ranges))
        mdtype = np.dtype(measures_dtype)
        self._objective_dtype = np.dtype(objective_dtype)
        self._lower_bounds = np.array(ranges[0], dtype=mdtype)
        self._upper_bounds = np.array(ranges[1], dtype=mdtype)
        self._interval_size = self._upper_bounds - self._lower_bounds
        self._epsilon = np.array(epsilon, dtype=mdtype)
        self._qd_score_offset = np.asarray(qd_score_offset, dtype=self._objective_dtype)
        self._remap_frequency = remap_frequency
        self._buffer_capacity = buffer_capacity

        # One row per dimension, padded with NaN beyond dims[i] + 1 entries.
        self._boundaries = np.full((self.measure_dim, np.max(self._dims) + 1), np.nan, dtype=mdtype)
        for i, (dim, low, high) in enumerate(
            zip(self._dims, self._lower_bounds, self._upper_bounds)
        ):
            self._boundaries[i, : dim + 1] = np.linspace(low, high, dim + 1)

        # FIFO buffer of the last buffer_capacity solutions, as a ring.
        desc = self._store.field_desc
        self._buffer = {
            name: np.empty((buffer_capacity, *shape), dtype=fdtype)
            for name, (shape, fdtype) in desc.items()
        }
        self._buffer_start = 0
        self._buffer_size = 0
        self._total_num_sol = 0

        # Host working copy of the store (the device ArrayStore is synced after each
        # add). Host-only fields (e.g. object dtype) are the store's own arrays.
        cells = self._store.capacity
        self._occupied = np.zeros(cells, dtype=bool)
        self._occupied_list = np.zeros(cells, dtype=np.int32)
        self._n_occupied = 0
        self._fields = self._new_host_fields()
        self._dirty = np.zeros(cells, dtype=bool)
        self._remapped = False
        self._reset_stats()

    # ------------------------------------------------------------ internals
    def _new_host_fields(self):
        desc = self._store.field_desc
        fields = {}
        for name, (shape, fdtype) in desc.items():
            if name in self._store.host_fields:
                fields[name] = self._store.host_fields[name]
            else:
                fields[name] = np.zeros((self._store.capacity, *shape), dtype=fdtype)
        return fields

    def _reset_stats(self):
        self._objective_sum = np.asarray(0.0, dtype=self._objective_dtype)
        self._best_elite = None

    def _clear_host(self):
        self._occupied[:] = False
        self._n_occupied = 0
        self._reset_stats()

    def _check_keys(self, data):
        """pyribs' ArrayStore error for missing or unknown fields (same wording)."""
        expected = self._store.field_desc.keys()
        if data.keys() != expected:
            raise ValueError(
                f"`data` has keys {data.keys()} but should have the same keys as this "
                f"ArrayStore, i.e., {expected}. This error may occur if the archive "
                "has extra_fields but the fields were not passed to archive.add() or "
                "scheduler.tell(). This can also occur if the archive and "
                "result_archive have different extra_fields."
            )

    def _push_buffer(self, rows):
        """Appends rows (dict of [m, ...] arrays) to the FIFO ring buffer."""
        cap = self._buffer_capacity
        m = len(rows["objective"])
        if m == 0 or cap <= 0:
            return
        if m >= cap:
            for name, arr in self._buffer.items():
                arr[:] = rows[name][m - cap :]
            self._buffer_start, self._buffer_size = 0, cap
            return
        pos = (self._buffer_start + self._buffer_size + np.arange(m)) % cap
        for name, arr in self._buffer.items():
            arr[pos] = rows[name]
        size = self._buffer_size + m
        if size > cap:
            self._buffer_start = (self._buffer_start + size - cap) % cap
            size = cap
        self._buffer_size = size

    def _buffer_positions(self):
        """Ring positions of the buffered rows, oldest first."""
        return (self._buffer_start + np.arange(self._buffer_size)) % self._buffer_capacity

    def _insert_rows(self, objective, measures, take):
        """Inserts rows one after another (basic MAP-Elites rule) on the host state.

        Args:
            objective: [m] objectives in insertion order.
            measures: [m, measure_dim] measures.
            take: ``take(name, items)`` returns field ``name`` of the given rows; only
                the rows that are stored get copied.

        Returns:
            ``(status int32[m], value [m])``.
        """
        cells = sliding_index(
            measures,
            self._boundaries,
            self._dims,
            self._lower_bounds,
            self._upper_bounds,
            self._epsilon,
        )
        out = sequential_map_elites(cells, objective, self._occupied, self._fields["objective"])
        value = objective - out["cur"]
        inserted = out["inserted"]
        if inserted.any():
            # Objective sum, accumulated in insertion order exactly like pyribs'
            # ``(sum + objective) - current`` per insertion.
            terms = np.empty(2 * int(inserted.sum()) + 1, dtype=self._objective_dtype)
            terms[0] = self._objective_sum
            terms[1::2] = objective[inserted]
            terms[2::2] = -out["cur"][inserted]
            self._objective_sum = np.add.accumulate(terms)[-1]

            # Monotone best elite: the first inserted item with the largest objective.
            ins_obj = np.where(inserted, objective, -np.inf)
            best = int(np.argmax(ins_obj))
            if self._best_elite is None or objective[best] > self._best_elite["objective"]:
                self._best_elite = {
                    name: np.array(take(name, best), dtype=fdtype)[()]
                    for name, fdtype in self._store.dtypes.items()
                }
                self._best_elite["index"] = np.int32(cells[best])

            winners = out["winners"]
            win_cells = cells[winners]
            for name, arr in self._fields.items():
                arr[win_cells] = take(name, winners)
            new = out["new_order"]
            self._occupied[new] = True
            self._occupied_list[self._n_occupied : self._n_occupied + len(new)] = new
            self._n_occupied += len(new)
            self._dirty[win_cells] = True
        return out["status"], value

    def _remap(self):
        """Moves the boundaries to the buffer's quantiles and re-inserts everything.

        Returns:
            ``(status, value)`` of the last buffered solution.
        """
        size = self._buffer_size
        ring = self._buffer_positions()
        buffer = self._buffer
        sorted_measures = np.sort(buffer["measures"][ring].astype(np.float64), axis=0)
        for i, dim in enumerate(self._dims):
            dim = int(dim)
            self._boundaries[i, :dim] = sorted_measures[(np.arange(dim) * size) // dim, i]
            self._boundaries[i, dim] = sorted_measures[-1, i]

        # Re-insert the current elites (in occupation order), then the buffer.
        elites = self._occupied_list[: self._n_occupied].copy()
        n_elites = len(elites)
        fields = self._fields

        def take(name, items):
            single = np.ndim(items) == 0
            items = np.atleast_1d(items)
            out = np.empty(items.shape + fields[name].shape[1:], fields[name].dtype)
            from_elites = items < n_elites
            out[from_elites] = fields[name][elites[items[from_elites]]]
            out[~from_elites] = buffer[name][ring[items[~from_elites] - n_elites]]
            return out[0] if single else out

        objective = np.concatenate([fields["objective"][elites], buffer["objective"][ring]])
        measures = np.concatenate([fields["measures"][elites], buffer["measures"][ring]])
        self._clear_host()
        self._dirty[:] = False
        status, value = self._insert_rows(objective, measures, take)
        self._remapped = True
        return status[-1:], value[-1:]

    def _update_bounds(self):
        self._lower_bounds = self._boundaries[:, 0].copy()
        self._upper_bounds = np.array(
            [bound[dim] for bound, dim in zip(self._boundaries, self._dims)],
            dtype=self._boundaries.dtype,
        )
        self._interval_size = self._upper_bounds - self._lower_bounds

    def _add_rows(self, rows):
        """Sequential insertion of validated rows, remapping where due."""
        n = len(rows["objective"])
        status = np.zeros(n, dtype=np.int32)
        value = np.zeros(n, dtype=self._objective_dtype)
        self._remapped = False
        self._dirty[:] = False
        pos = 0
        while pos < n:
            until_remap = self._remap_frequency - self._total_num_sol % self._remap_frequency
            end = min(n, pos + until_remap - 1)
            if end > pos:
                chunk = {name: arr[pos:end] for name, arr in rows.items()}
                self._push_buffer(chunk)
                self._total_num_sol += end - pos
                status[pos:end], value[pos:end] = self._insert_rows(
                    chunk["objective"],
                    chunk["measures"],
                    lambda name, items, chunk=chunk: chunk[name][items],
                )
            if end < n:
                self._push_buffer({name: arr[end : end + 1] for name, arr in rows.items()})
                self._total_num_sol += 1
                status[end : end + 1], value[end : end + 1] = self._remap()
                self._update_bounds()
            pos = end + 1
        self._sync_store()
        return status, value

    def _sync_store(self):
        """Writes the changed cells of the host copy into the device ArrayStore."""
        store = self._store
        if self._remapped:
            self._dirty[:] = False
            self._dirty[self._occupied_list[: self._n_occupied]] = True
        cells = np.flatnonzero(self._dirty)
        if len(cells) == 0 and not self._remapped:
            return
        capacity = store.capacity
        bucket = max(8, 1 << (len(cells) - 1).bit_length())
        padded = np.full(bucket, capacity, dtype=np.int32)
        padded[: len(cells)] = cells
        gather = np.minimum(padded, capacity - 1)
        state = store.state
        rows = {name: self._fields[name][gather] for name in state.fields}
        fields = _write_rows(state.fields, jnp.asarray(padded), rows)
        new_state = with_occupation_order(state, self._occupied_list, self._n_occupied, fields)
        store._set_state(new_state, self._n_occupied, wrote=True)
        self._dirty[:] = False
        self._remapped = False

    # ------------------------------------------------------------ properties
    @property
    def empty(self) -> bool:
        return self._n_occupied == 0

    def __len__(self) -> int:
        return self._n_occupied

    def __iter__(self):
        return iter(self._store)

    @property
    def stats(self) -> ArchiveStats:
        dtype = self._objective_dtype
        n = self._n_occupied
        if self._best_elite is None or n == 0:
            return summary_stats(0, self.cells, 0.0, self._qd_score_offset, None, dtype)
        qd_score = self._objective_sum - np.asarray(n, dtype=dtype) * self._qd_score_offset
        return ArchiveStats(
            num_elites=int(n),
            coverage=np.asarray(n / self.cells, dtype=dtype),
            # Divide in float64 as pyribs does (its cell count is an np.int64).
            norm_qd_score=np.asarray(np.float64(qd_score) / self.cells, dtype=dtype),
            qd_score=qd_score,
            obj_max=self._best_elite["objective"],
            obj_mean=np.asarray(self._objective_sum / n, dtype=dtype),
        )

    @property
    def best_elite(self):
        """Best elite ever inserted since the last clear or remap (None if empty).

        A dict with every field and ``index``, as the cell held it right after the
        insertion.
        """
        if self._best_elite is None:
            return None
        return {
            name: np.copy(val) if isinstance(val, np.ndarray) else val
            for name, val in self._best_elite.items()
        }

    @property
    def dims(self):
        """Number of cells per measure dimension (``np.array(dims)``)."""
        return self._dims

    @property
    def cells(self):
        """Total number of cells."""
        return self._store.capacity

    lower_bounds = read_only(
        "_lower_bounds", "Lower bound of each dimension (the first boundary after a remap)."
    )
    upper_bounds = read_only(
        "_upper_bounds", "Upper bound of each dimension (the last boundary after a remap)."
    )

    @property
    def epsilon(self):
        """Epsilon added to measures in :meth:`index_of` (0-d array)."""
        return self._epsilon

    @property
    def qd_score_offset(self):
        """Subtracted from every objective when computing the QD score (0-d array)."""
        return self._qd_score_offset

    @property
    def remap_frequency(self):
        """Number of solutions between remaps."""
        return self._remap_frequency

    @property
    def buffer_capacity(self):
        """Maximum number of solutions in the buffer."""
        return self._buffer_capacity

    @property
    def boundaries(self):
        """List with, per dimension ``i``, the ``dims[i] + 1`` cell boundaries.

        ``boundaries[i][j]`` and ``boundaries[i][j + 1]`` are the lower and upper
        bounds of cell ``j`` along dimension ``i``.
        """
        return [bound[: dim + 1] for bound, dim in zip(self._boundaries, self._dims)]

    # ------------------------------------------------------------ indexing
    def index_of(self, measures):
        """Flat cell index of each measure vector under the current boundaries.

        Measures are clipped to ``[lower_bounds, upper_bounds - epsilon]`` after
        adding ``epsilon``, located by binary search along each dimension's
        boundaries, and flattened in C order.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.

        Returns:
            int32[batch_size].

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        measures = self._checked_measures(measures)
        return sliding_index(
            measures,
            self._boundaries,
            self._dims,
            self._lower_bounds,
            self._upper_bounds,
            self._epsilon,
        )

    # ------------------------------------------------------------ insertion
    def add(self, solution, objective, measures, **fields):
        """Inserts a batch, one solution after another in batch order.

        Equivalent to calling :meth:`add_single` on each solution, so (unlike other
        archives) the result depends on the order of the batch.

        Args:
            solution: (batch_size, :attr:`solution_dim`) solutions.
            objective: (batch_size,) objectives.
            measures: (batch_size, :attr:`measure_dim`) measures.
            fields: Extra fields, each with batch_size first.

        Returns:
            ``{"status": int32[batch], "value": objective dtype[batch]}``.

        Raises:
            ValueError: Bad shapes, non-finite values, or missing/unknown fields.
        """
        data = validate_batch(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        self._check_keys(data)
        status, value = self._add_rows(data)
        return {"status": status, "value": value}

    def add_single(self, solution, objective, measures, **fields):
        """Inserts one solution; remaps after every :attr:`remap_frequency` solutions.

        Returns:
            ``{"status": np.int32, "value": scalar}`` as in
            :meth:`ribsax.archives.GridArchive.add`.

        Raises:
            ValueError: Bad shapes, non-finite values, or missing/unknown fields.
        """
        data = validate_single(
            self, {"solution": solution, "objective": objective, "measures": measures, **fields}
        )
        self._check_keys(data)
        status, value = self._add_rows({name: np.expand_dims(arr, 0) for name, arr in data.items()})
        return {"status": np.int32(status[0]), "value": value[0]}

    def clear(self) -> None:
        """Removes all elites and resets the stats (the buffer is kept)."""
        self._store.clear()
        self._clear_host()

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        state = self.__dict__.copy()
        # Device fields are rebuilt from the store on unpickling.
        state["_fields"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        device = jax.device_get(self._store.state.fields)
        self._fields = self._new_host_fields()
        for name, arr in device.items():
            self._fields[name] = np.array(arr)
