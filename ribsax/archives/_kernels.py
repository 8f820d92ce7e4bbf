"""Pure, jitted archive kernels shared by every cell-based archive.

Everything here is a function of (static configuration, state pytree, inputs) with no
side effects, so the same code serves the object API (``GridArchive.add``), the fused
``lax.scan`` loop and ``jax.vmap`` over runs.

State pytrees
-------------
``StoreState``
    ``stamp`` int32[capacity]: -1 for an empty cell, otherwise the number of the
    write call that first occupied it (so the order of first occupation is the
    lexicographic order of (stamp, cell), which is pyribs' ``occupied_list`` order);
    ``n_occupied`` and ``n_writes`` int32 scalars; ``fields`` a
    :class:`~ribsax.archives._field_table.FieldTable` (mapping name ->
    array[capacity, *shape], small fields of one dtype packed in one block). Keeping
    a stamp instead of an append-only list spares the insertion kernel a sort; the
    list is rebuilt on the host when read.

``EliteStats``
    ``objective_sum`` (objective dtype).
"""
from __future__ import annotations

import functools
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._scatter import scatter_add
from ribsax.archives._field_table import FieldTable

__all__ = [
    "StoreState",
    "EliteStats",
    "init_store",
    "init_stats",
    "grid_index",
    "packed_grid_index",
    "store_write",
    "threshold_add",
    "store_add_jit",
    "given_index",
    "indexed_threshold_add",
    "flat_threshold_add",
    "store_leaves",
    "store_from_leaves",
    "best_insertion",
    "finite_rows",
    "pack_add_result",
    "unpack_add_result",
    "AddResult",
    "indexed",
    "ravel_grid_index",
    "last_occurrence_mask",
    "sample_occupied",
]


class StoreState(NamedTuple):
    """Device-resident storage of an archive (see module docstring)."""

    stamp: jax.Array
    n_occupied: jax.Array
    n_writes: jax.Array
    fields: FieldTable

    @property
    def occupied(self):
        """bool[capacity]: which cells hold an entry."""
        return self.stamp >= 0


class EliteStats(NamedTuple):
    """Incrementally maintained statistics of a cell archive.

    Only the running objective sum lives on the device; the best elite (which pyribs
    updates monotonically, from the inserted data) is tracked by the archive shell on
    the host from the batch it already holds, which keeps the insertion kernel small.
    """

    objective_sum: jax.Array


def init_store(capacity: int, field_shapes: dict, field_dtypes: dict) -> StoreState:
    """Creates an empty store.

    Args:
        capacity: Number of cells.
        field_shapes: name -> shape tuple (without the capacity axis).
        field_dtypes: name -> numpy dtype (JAX-compatible).

    Returns:
        An empty :class:`StoreState`. Field contents are zeros (never read while
        unoccupied).
    """
    fields = FieldTable.zeros(capacity, field_shapes, field_dtypes)
    return StoreState(
        stamp=jnp.full(capacity, -1, dtype=jnp.int32),
        n_occupied=jnp.zeros((), dtype=jnp.int32),
        n_writes=jnp.zeros((), dtype=jnp.int32),
        fields=fields,
    )


def init_stats(objective_dtype) -> EliteStats:
    """Creates empty :class:`EliteStats`."""
    return EliteStats(objective_sum=jnp.zeros((), dtype=objective_dtype))


# ---------------------------------------------------------------------------
# Cell index kernels.
# ---------------------------------------------------------------------------
def grid_index(measures, dims, lower_bounds, interval_size, epsilon):
    """Flattened grid cell of each measure vector, pyribs' rule.

    ``int32((dims * (m - lb) + eps) / interval)``, clipped to ``[0, dims - 1]``, then
    C-order ravel. When JAX x64 is enabled the arithmetic after the subtraction runs in
    float64, which reproduces NumPy's int32 x float32 -> float64 promotion in pyribs
    bit for bit; without x64 it runs in the measures dtype.

    Args:
        measures: [batch, measure_dim] array.
        dims: int32[measure_dim].
        lower_bounds: [measure_dim] array in the measures dtype.
        interval_size: [measure_dim] array in the measures dtype.
        epsilon: scalar in the measures dtype.

    Returns:
        int32[batch] flattened indices.
    """
    diff = measures - lower_bounds
    wide = jnp.float64 if jax.config.jax_enable_x64 else diff.dtype
    grid = (dims.astype(wide) * diff.astype(wide) + epsilon.astype(wide)) / (
        interval_size.astype(wide)
    )
    grid = grid.astype(jnp.int32)  # Truncates toward zero, like NumPy's astype.
    grid = jnp.clip(grid, 0, dims - 1)
    return ravel_grid_index(grid, dims)


def packed_grid_index(measures, dims, bounds):
    """:func:`grid_index` with its float arguments packed into one array.

    Args:
        measures: [batch, measure_dim] array.
        dims: int32[measure_dim].
        bounds: [3, measure_dim] array in the measures dtype: lower bounds, interval
            sizes, and epsilon (repeated on every column).

    Returns:
        int32[batch] flattened indices (identical to :func:`grid_index`).
    """
    return grid_index(measures, dims, bounds[0], bounds[1], bounds[2, 0])


def ravel_grid_index(grid, dims):
    """C-order ravel of int grid coordinates [batch, d] into int32[batch]."""
    # Strides from a static loop (a cumprod costs XLA three extra thunks per call);
    # the sum stays a reduction so that XLA computes the indices once instead of
    # recomputing them inside every fusion that gathers with them.
    strides = [jnp.ones((), grid.dtype)]
    for size in reversed([dims[i] for i in range(1, grid.shape[1])]):
        strides.insert(0, strides[0] * size.astype(grid.dtype))
    return jnp.sum(grid * jnp.stack(strides), axis=1, dtype=jnp.int32)


# ---------------------------------------------------------------------------
# Store writes.
# ---------------------------------------------------------------------------
def store_write(store: StoreState, indices, write_mask, data: dict,
                cell_rows=None) -> StoreState:
    """Writes ``data[i]`` to cell ``indices[i]`` wherever ``write_mask[i]``.

    The cells selected by ``write_mask`` must be unique. Cells that were empty get the
    current write number as their stamp.

    Args:
        store: Current store.
        indices: int32[batch] target cells.
        write_mask: bool[batch]; at most one True per cell.
        data: name -> [batch, *shape] arrays. Fields missing from ``data`` (or
            None) are left untouched.
        cell_rows: Optional int32[capacity], the same writes seen from the cells:
            the row written to each cell (``i`` where ``write_mask[i]`` selects it),
            ``>= batch`` for the others. When given, stamps and fields are updated
            by passes over the cells instead of gathers and scatters over the batch
            (cheaper when the batch is not much smaller than the capacity; see
            :meth:`~ribsax.archives._field_table.FieldTable.write_rows`).

    Returns:
        The updated store.
    """
    capacity = store.stamp.shape[0]
    target = jnp.where(write_mask, indices, capacity)
    fields = store.fields.write_rows(target, data, cell_rows)
    if cell_rows is not None:
        new_cell = (cell_rows < indices.shape[0]) & (store.stamp < 0)
        stamp = jnp.where(new_cell, store.n_writes, store.stamp)
    else:
        new_cell = write_mask & (store.stamp[indices] < 0)
        # Only newly occupied cells get a stamp (the others keep theirs), so the
        # scatter skips every row that replaces an elite.
        stamp = store.stamp.at[jnp.where(new_cell, indices, capacity)].set(
            store.n_writes, mode="drop")
    return StoreState(
        stamp=stamp,
        n_occupied=store.n_occupied + jnp.sum(new_cell).astype(jnp.int32),
        n_writes=store.n_writes + 1,
        fields=fields,
    )


#: :func:`threshold_add` updates stamps and wide fields with passes over the cells
#: (see :func:`store_write`) when the capacity is at most this many times the batch.
CELL_PASS_RATIO = 4


def last_occurrence_mask(indices, capacity):
    """bool[batch]: True at the last occurrence of each index (last write wins)."""
    batch = indices.shape[0]
    pos = jnp.arange(batch, dtype=jnp.int32)
    last = jnp.full(capacity, -1, dtype=jnp.int32).at[indices].max(pos, mode="drop")
    return last[indices] == pos


@partial(jax.jit, donate_argnums=(0,))
def store_add_jit(store: StoreState, indices, data: dict) -> StoreState:
    """``ArrayStore.add`` semantics: duplicate indices -> the last write wins."""
    keep = last_occurrence_mask(indices, store.stamp.shape[0])
    return store_write(store, indices, keep, data)


# ---------------------------------------------------------------------------
# Threshold (MAP-Elites / CMA-MAE) batch insertion.
# ---------------------------------------------------------------------------
def threshold_add(store: StoreState, stats: EliteStats, indices, data: dict,
                  learning_rate, threshold_min, threshold_min_is_neg_inf: bool,
                  single_rule: bool = False, row_finite=None):
    """Batch insertion with pyribs' GridArchive semantics, in one pass.

    Statuses and values are judged against the store as it was before the call. Per
    cell, the insertable solution with the highest objective wins (first in batch on
    ties). Thresholds: the winner's objective when ``threshold_min`` is -inf, otherwise
    the batch CMA-MAE rule ``(1-lr)^k t + mean(f) (1 - (1-lr)^k)`` over the k
    insertable solutions of the cell.

    Args:
        store: Current store (fields include ``objective`` and ``threshold``).
        stats: Current :class:`EliteStats`.
        indices: int32[batch] cells.
        data: name -> [batch, ...] device fields except ``threshold``.
        learning_rate: Scalar archive learning rate.
        threshold_min: Scalar minimum threshold.
        threshold_min_is_neg_inf: Static; selects the plain MAP-Elites threshold.
        single_rule: Static; use pyribs' ``add_single`` threshold update
            ``t (1 - lr) + f lr`` (t = 0 for new cells when threshold_min is -inf)
            instead of the batch rule. Only meaningful for a batch of one.
        row_finite: Optional bool[batch], False at rows with a non-finite objective
            or measure. When any row is False nothing is written (``out`` then also
            has ``all_finite`` False; statuses and values are meaningless). The
            check rides on the per-cell maximum below: such rows send +inf to an
            extra cell, which spares the kernel a reduction over the batch.

    Returns:
        ``(store, stats, out)`` where ``out`` has ``status`` int32[batch], ``value``
        [batch], ``inserted`` bool[batch] (the per-cell winners actually written),
        ``cell_winner`` int32[capacity] (the row written to each cell, ``batch`` for
        cells not written), ``new_threshold`` [batch] (the threshold each
        insertable solution's cell receives) and, with ``row_finite``,
        ``all_finite`` (bool scalar).
    """
    capacity = store.stamp.shape[0]
    batch = indices.shape[0]
    objective = data["objective"]
    obj_dtype = store.fields["objective"].dtype
    objective = objective.astype(obj_dtype)
    threshold_min = jnp.asarray(threshold_min, obj_dtype)

    occupied = store.stamp[indices] >= 0
    cur_threshold = jnp.where(occupied, store.fields["threshold"][indices], threshold_min)
    can_insert = objective > cur_threshold
    is_new = can_insert & ~occupied
    status = jnp.where(is_new, 2, jnp.where(can_insert & occupied, 1, 0)).astype(jnp.int32)
    new_cell_base = jnp.zeros((), obj_dtype) if threshold_min_is_neg_inf else threshold_min
    value = objective - jnp.where(is_new, new_cell_base, cur_threshold)

    # Per-cell winner: highest objective among insertable, first in batch on ties.
    pos = jnp.arange(batch, dtype=jnp.int32)
    neg_inf = jnp.asarray(-jnp.inf, obj_dtype)
    masked = jnp.where(can_insert, objective, neg_inf)
    if row_finite is None:
        cell_max = jnp.full(capacity, neg_inf, obj_dtype).at[indices].max(masked)
        all_finite = None
    else:
        # Non-finite rows put +inf in cell ``capacity``, read back as the flag.
        cell_max = jnp.full(capacity + 1, neg_inf, obj_dtype).at[
            jnp.where(row_finite, indices, capacity)].max(
                jnp.where(row_finite, masked, jnp.inf))
        all_finite = cell_max[capacity] != jnp.inf
    candidate = can_insert & (objective == cell_max[indices])
    first = jnp.full(capacity, batch, jnp.int32).at[indices].min(
        jnp.where(candidate, pos, batch)
    )
    winner = candidate & (first[indices] == pos)
    cell_rows = None
    if capacity <= CELL_PASS_RATIO * batch:
        cell_rows = first if all_finite is None else jnp.where(all_finite, first, batch)
    if all_finite is not None:
        winner &= all_finite

    # New thresholds.
    if single_rule:
        lr = jnp.asarray(learning_rate, obj_dtype)
        base = jnp.where(is_new, new_cell_base, cur_threshold)
        new_threshold = base * (1 - lr) + objective * lr
    elif threshold_min_is_neg_inf:
        new_threshold = objective
    else:
        # pyribs raises a float32 ratio to int64 counts, which NumPy promotes to
        # float64; under x64 we do the same and cast once, matching it bit for bit.
        wide = jnp.float64 if jax.config.jax_enable_x64 else obj_dtype
        lr = jnp.asarray(learning_rate, obj_dtype)
        counts = jnp.zeros(capacity, jnp.int32).at[indices].add(can_insert.astype(jnp.int32))
        # Float sums over repeated cells: scatter_add keeps them repeatable on GPUs.
        sums = scatter_add(jnp.zeros(capacity, obj_dtype), indices,
                           jnp.where(can_insert, objective, 0))
        k = counts[indices].astype(wide)
        ratio = (1 - lr).astype(wide) ** k
        mean = sums[indices].astype(wide) / jnp.maximum(k, 1)
        new_threshold = (ratio * cur_threshold.astype(wide) + mean * (1 - ratio)).astype(
            obj_dtype
        )

    write = dict(data)
    write["objective"] = objective
    write["threshold"] = new_threshold
    if threshold_min_is_neg_inf:
        # Every threshold equals its cell's objective here (both rules set it to the
        # inserted objective when the learning rate is 1), so the threshold already
        # read stands for the replaced objective. Reading the objective field too
        # made XLA copy the whole field (twice) to order that read before its write.
        prev_objective = jnp.where(occupied, cur_threshold, 0)
    else:
        prev_objective = jnp.where(occupied, store.fields["objective"][indices], 0)
    new_store = store_write(store, indices, winner, write, cell_rows)

    # Stats: incremental objective sum.
    delta = jnp.sum(jnp.where(winner, objective - prev_objective, 0))
    new_stats = EliteStats(objective_sum=stats.objective_sum + delta.astype(obj_dtype))
    out = {"status": status, "value": value, "inserted": winner, "cell_winner": first,
           "new_threshold": new_threshold}
    if all_finite is not None:
        out["all_finite"] = all_finite
    return new_store, new_stats, out


def given_index(measures, indices):
    """Index function for archives that compute cells on the host (categorical)."""
    del measures
    return indices


def best_insertion(status, objective, indices, cell_winner):
    """Row of the batch that pyribs' monotone best-elite update would consider.

    Among insertable rows (``status > 0``), the highest objective; among equal
    objectives the lowest cell, then the first in the batch (pyribs takes the argmax
    over the per-cell winners sorted by cell). That row is the winner of its cell, so
    it is read from ``cell_winner`` instead of searched for.

    Args:
        status: int32[batch] add statuses.
        objective: [batch] objectives.
        indices: int32[batch] cells.
        cell_winner: int32[capacity] row written to each cell (``out["cell_winner"]``
            of :func:`threshold_add`).

    Returns:
        ``(pos, any_insertable, win_max)``: int32 row (0 when nothing is insertable),
        bool, and the highest insertable objective (-inf when none).
    """
    insertable = status > 0
    neg_inf = jnp.asarray(-jnp.inf, objective.dtype)
    if status.shape[0] == 0:
        return jnp.zeros((), jnp.int32), jnp.zeros((), bool), neg_inf
    win_max = jnp.max(jnp.where(insertable, objective, neg_inf))
    # An insertable objective beats a threshold >= -inf, so it is > -inf.
    any_insertable = win_max > neg_inf
    big = jnp.iinfo(jnp.int32).max
    best_cell = jnp.min(jnp.where(insertable & (objective == win_max), indices, big))
    pos = cell_winner[jnp.where(any_insertable, best_cell, 0)]
    pos = jnp.where(any_insertable, pos, 0).astype(jnp.int32)
    return pos, any_insertable, win_max


def finite_rows(objective, measures):
    """bool[batch]: whether a row's objective and measures are all finite.

    Non-float arrays count as finite; ``measures`` may be None.
    """
    ok = jnp.ones(objective.shape[:1], bool)
    if jnp.issubdtype(objective.dtype, jnp.inexact):
        ok = jnp.isfinite(objective)
    if measures is not None and jnp.issubdtype(measures.dtype, jnp.inexact):
        ok &= jnp.all(jnp.isfinite(measures), axis=tuple(range(1, measures.ndim)))
    return ok


@functools.lru_cache(maxsize=None)
def _carrier(dtype):
    """Dtype that carries objective values of ``dtype`` as whole int32 words.

    4- and 8-byte dtypes carry themselves (one or two words per value); narrower
    ones are widened to float32 (or int32).
    """
    dtype = np.dtype(dtype)
    if dtype.itemsize in (4, 8):
        return dtype
    return np.dtype(np.float32 if dtype.kind == "f" else np.int32)


def pack_add_result(out, indices, objective_delta, n_occupied, best_pos, any_insertable,
                    all_finite, with_rows):
    """Packs everything the host needs after an insertion into one int32 array.

    Handing one output buffer to the host instead of seven saves per-buffer dispatch
    and conversion costs on every ``add`` (bit casts are free; byte-level packing
    measured about 60 us slower on CPU). Layout: first the bit patterns, in the
    carrier dtype of :func:`_carrier` (one int32 word per value, two for 8-byte
    dtypes), of ``value[batch]``, the change of the archive's objective sum and the
    threshold given to row ``best_pos``; then the int32 words ``status[batch]``,
    with ``with_rows`` also ``index[batch]`` and ``inserted[batch]`` (0/1), and
    last ``best_pos`` (-1 when nothing was insertable, i.e. nothing was written),
    its cell, the number of occupied cells and ``all_finite`` (0/1). The floats
    come first so that the host reads them as an aligned view, and the integers need
    no conversion. Read it back with :func:`unpack_add_result`.
    """
    value = out["value"]
    batch = value.shape[0]
    carrier = _carrier(value.dtype)
    if batch:
        best_threshold = out["new_threshold"][best_pos]
        best_cell = indices[best_pos]
    else:
        best_threshold = jnp.zeros((), value.dtype)
        best_cell = jnp.zeros((), jnp.int32)
    floats = jnp.concatenate([value, objective_delta.astype(value.dtype)[None],
                              best_threshold.astype(value.dtype)[None]])
    words = jax.lax.bitcast_convert_type(floats.astype(carrier), jnp.int32).reshape(-1)
    tail = jnp.stack([jnp.where(any_insertable, best_pos, -1).astype(jnp.int32),
                      best_cell.astype(jnp.int32), n_occupied.astype(jnp.int32),
                      jnp.asarray(all_finite, jnp.int32)])
    rows = [indices.astype(jnp.int32), out["inserted"].astype(jnp.int32)] if with_rows else []
    return jnp.concatenate([words, out["status"].astype(jnp.int32), *rows, tail])


class AddResult(NamedTuple):
    """Host views of a packed add result (see :func:`pack_add_result`)."""

    status: "np.ndarray"
    value: "np.ndarray"
    index: "np.ndarray | None"
    inserted: "np.ndarray | None"
    best_pos: int
    best_cell: int
    best_threshold: "np.generic"
    n_occupied: int
    objective_delta: "np.generic"
    all_finite: bool


def unpack_add_result(packed, batch: int, dtype, with_rows: bool) -> AddResult:
    """Reads an array made by :func:`pack_add_result`.

    Args:
        packed: Host array (``np.asarray`` of the kernel output).
        batch: Batch size.
        dtype: NumPy objective dtype.
        with_rows: As given to :func:`pack_add_result`.

    Returns:
        :class:`AddResult` with ``status`` (and, with ``with_rows``, ``index`` and
        ``inserted`` (0/1); None otherwise) int32 arrays and ``value`` of ``dtype``
        (read-only views into ``packed``, except ``value`` for objective dtypes
        narrower than 4 bytes). ``best_pos`` is -1 when nothing was inserted.
    """
    carrier = _carrier(dtype)
    n_float_words = (batch + 2) * (carrier.itemsize // 4)
    floats = packed[:n_float_words].view(carrier)
    if carrier != dtype:
        floats = floats.astype(dtype)
    ints = packed[n_float_words:]
    if with_rows:
        index, inserted = ints[batch:2 * batch], ints[2 * batch:3 * batch]
        tail = ints[3 * batch:]
    else:
        index = inserted = None
        tail = ints[batch:]
    best_pos, best_cell, n_occupied, all_finite = tail.tolist()
    return AddResult(ints[:batch], floats[:batch], index, inserted, best_pos, best_cell,
                     floats[batch + 1], n_occupied, floats[batch], all_finite != 0)


def indexed_threshold_add(store, index_args, data, scalars, *, index_fn,
                          threshold_min_is_neg_inf, single_rule=False, with_rows=False):
    """Cell index (``index_fn(measures, *index_args)``) then :func:`threshold_add`.

    This is the single pass behind ``add`` of Grid, CVT and Categorical archives,
    jitted by :func:`flat_threshold_add`. Its inputs and outputs are kept few (each
    buffer handed across the jit boundary costs a few microseconds on CPU):
    ``scalars`` packs the learning rate and the minimum threshold, the objective sum
    is kept by the caller (the kernel returns its change), and everything the host
    reads back is packed by :func:`pack_add_result`.

    Args:
        store: :class:`StoreState`.
        index_args: Tuple of device arguments of ``index_fn``.
        data: name -> [batch, ...] fields except ``threshold`` (None for fields that
            are not sent).
        scalars: [2] array in the objective dtype: learning rate, threshold_min.
        index_fn: Static cell-index function.
        threshold_min_is_neg_inf: Static, see :func:`threshold_add`.
        single_rule: Static, see :func:`threshold_add`.
        with_rows: Static; also pack each row's cell and whether it was written
            (see :func:`pack_add_result`).

    Returns:
        ``(store, packed)``; read ``packed`` with :func:`unpack_add_result`. Adding
        its ``objective_delta`` to the objective sum gives exactly what
        :func:`threshold_add` computes. When an objective or a measure is not finite,
        nothing is written and ``all_finite`` is False.
    """
    # Finiteness of objectives and measures is checked here rather than on the host
    # (cheaper inside the kernel): when anything is non-finite nothing is written,
    # and the host raises pyribs' error.
    measures = data.get("measures")
    indices = index_fn(measures, *index_args)
    obj_dtype = store.fields["objective"].dtype
    store, delta, out = threshold_add(
        store, init_stats(obj_dtype), indices, data, scalars[0], scalars[1],
        threshold_min_is_neg_inf, single_rule,
        row_finite=finite_rows(data["objective"], measures),
    )
    all_finite = out["all_finite"]
    objective = data["objective"].astype(obj_dtype)
    best_pos, any_insertable, _ = best_insertion(out["status"], objective, indices,
                                                 out["cell_winner"])
    packed = pack_add_result(out, indices, delta.objective_sum, store.n_occupied,
                             best_pos, any_insertable, all_finite, with_rows)
    return store, packed


def store_leaves(store: StoreState) -> tuple:
    """The arrays of ``store`` in order: stamp, n_occupied, n_writes, field blocks."""
    return (store.stamp, store.n_occupied, store.n_writes, *store.fields.blocks)


def store_from_leaves(leaves, layout) -> StoreState:
    """Inverse of :func:`store_leaves` for a field table of ``layout``."""
    return StoreState(leaves[0], leaves[1], leaves[2],
                      FieldTable.tree_unflatten(layout, leaves[3:]))


@functools.lru_cache(maxsize=None)
def flat_threshold_add(layout, args_treedef, *, index_fn, threshold_min_is_neg_inf,
                       single_rule=False, with_rows=False):
    """:func:`indexed_threshold_add` as a jitted function of flat arrays.

    Handing a jitted function only arrays, and rebuilding the store from its outputs
    by hand, skips the pytree work of each call (the field table's flatten and
    unflatten run Python code): about 5.5 us less per call on the 2-core CPU. The
    functions are shared by every archive of the same layout and argument structure,
    so each compiles once.

    Args:
        layout: The store's field-table layout (``store.fields.layout``).
        args_treedef: Tree structure of ``(index_args, data, scalars)``.
        index_fn, threshold_min_is_neg_inf, single_rule, with_rows: As for
            :func:`indexed_threshold_add`.

    Returns:
        A jitted ``kernel(*store_leaves(store), *args_leaves)`` returning
        ``(*store_leaves(new_store), packed)``, whose store leaves are donated.
    """
    n_store = 3 + len(layout.block_dtypes)

    def kernel(*leaves):
        store = store_from_leaves(leaves[:n_store], layout)
        index_args, data, scalars = jax.tree.unflatten(args_treedef, leaves[n_store:])
        store, packed = indexed_threshold_add(
            store, index_args, data, scalars, index_fn=index_fn,
            threshold_min_is_neg_inf=threshold_min_is_neg_inf,
            single_rule=single_rule, with_rows=with_rows)
        return (*store_leaves(store), packed)

    return jax.jit(kernel, donate_argnums=tuple(range(n_store)))


@partial(jax.jit, static_argnames=("index_fn",))
def indexed(measures, index_args, *, index_fn):
    """Jitted ``index_fn(measures, *index_args)`` for ``index_of``."""
    return index_fn(measures, *index_args)


def sample_occupied(key, store: StoreState, n: int):
    """Uniformly samples ``n`` occupied cells with replacement, on device.

    The device-side counterpart of ``sample_elites`` for kernels (emitters, the fused
    loop). The archive must be non-empty; with an empty store the result is arbitrary.

    Args:
        key: PRNG key.
        store: Store state.
        n: Static number of samples.

    Returns:
        int32[n] cell indices.
    """
    counts = jnp.cumsum((store.stamp >= 0).astype(jnp.int32))
    total = counts[-1]
    # The r-th occupied cell (0-based) is the first cell whose running count exceeds r.
    ranks = jax.random.randint(key, (n,), 0, jnp.maximum(total, 1))
    return jnp.searchsorted(counts, ranks, side="right").astype(jnp.int32)
