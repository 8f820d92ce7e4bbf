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
    ``order`` int32[capacity]: its first ``n_occupied`` entries are the occupied
    cells, each once, appended as they are first occupied (within one write call in
    batch order, not pyribs' cell order), which lets kernels sample occupied cells
    with one gather; ``n_occupied`` and ``n_writes`` int32 scalars; ``fields`` a dict
    name -> array[capacity, *shape]. pyribs' ``occupied_list`` is rebuilt from the
    stamps on the host when read (keeping it in that order would cost the insertion
    kernel a sort).

``EliteStats``
    ``objective_sum`` (objective dtype).

``ArchiveState``
    Everything a cell archive's insertion reads and writes: the store, the stats,
    the cell-index arguments, the CMA-MAE scalars and the monotone best elite.
    :func:`archive_add` is the one insertion rule behind ``GridArchive.add`` (and
    ``add_single``, CVT and categorical archives) and the fused loop.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._scatter import scatter_add
from ribsax.archives._archive_stats import stats_values

__all__ = [
    "ArchiveView",
    "StoreState",
    "EliteStats",
    "ArchiveSpec",
    "ArchiveState",
    "init_store",
    "init_stats",
    "grid_index",
    "packed_grid_index",
    "store_write",
    "threshold_add",
    "archive_add",
    "archive_stats",
    "archive_view",
    "store_view",
    "store_add_jit",
    "given_index",
    "best_insertion",
    "indexed",
    "ravel_grid_index",
    "last_occurrence_mask",
    "sample_occupied",
]


class StoreState(NamedTuple):
    """Device-resident storage of an archive (see module docstring)."""

    stamp: jax.Array
    order: jax.Array
    n_occupied: jax.Array
    n_writes: jax.Array
    fields: dict

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


class ArchiveView(tuple):
    """``(order, n_occupied, solution, objective, measures)`` device arrays of an
    archive's store.

    The read-only slice of an archive that emitter kernels read: the elites'
    solutions to sample parents from on the device (see :func:`sample_occupied`),
    and their objectives and measures (None where a view was built without them).
    """

    __slots__ = ()

    def __new__(cls, order, n_occupied, solution, objective=None, measures=None):
        return tuple.__new__(cls, (order, n_occupied, solution, objective, measures))

    @property
    def order(self):
        """``int32[cells]``: the first ``n_occupied`` entries are the occupied
        cells."""
        return self[0]

    @property
    def n_occupied(self):
        """int32 scalar, number of elites."""
        return self[1]

    @property
    def solution(self):
        """``[cells, *solution_dim]`` stored solutions (rows of empty cells are
        meaningless)."""
        return self[2]

    @property
    def objective(self):
        """``[cells]`` objectives of the stored elites (rows of empty cells are
        meaningless), or None."""
        return self[3]

    @property
    def measures(self):
        """``[cells, measure_dim]`` measures of the stored elites (rows of empty
        cells are meaningless), or None."""
        return self[4]

    @property
    def device(self):
        """The device the store's arrays live on."""
        return next(iter(self.order.devices()))


jax.tree_util.register_pytree_node(
    ArchiveView, lambda v: (tuple(v), None), lambda _, c: ArchiveView(*c)
)


def init_store(capacity: int, field_shapes: dict, field_dtypes: dict) -> StoreState:
    """Creates an empty store.

    Args:
        capacity: Number of cells.
        field_shapes: name -> shape tuple (without the capacity axis).
        field_dtypes: name -> numpy dtype (JAX-compatible).

    Returns:
        An empty :class:`StoreState` of NumPy arrays (``committed`` puts it on a
        device without compiling anything). Field contents are zeros (never read
        while unoccupied).
    """
    fields = {
        name: np.zeros((capacity, *field_shapes[name]), field_dtypes[name]) for name in field_shapes
    }
    return StoreState(
        stamp=np.full(capacity, -1, dtype=np.int32),
        order=np.zeros(capacity, dtype=np.int32),
        n_occupied=np.zeros((), dtype=np.int32),
        n_writes=np.zeros((), dtype=np.int32),
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
def store_write(store: StoreState, indices, write_mask, data: dict) -> StoreState:
    """Writes ``data[i]`` to cell ``indices[i]`` wherever ``write_mask[i]``.

    The cells selected by ``write_mask`` must be unique. Cells that were empty get the
    current write number as their stamp.

    Args:
        store: Current store.
        indices: int32[batch] target cells.
        write_mask: bool[batch]; at most one True per cell.
        data: name -> [batch, *shape] arrays. Fields missing from ``data`` (or
            None) are left untouched.

    Returns:
        The updated store.
    """
    capacity = store.stamp.shape[0]
    target = jnp.where(write_mask, indices, capacity)
    fields = dict(store.fields)
    for name, rows in data.items():
        if rows is None or name not in fields:
            continue
        block = fields[name]
        fields[name] = block.at[target].set(rows.astype(block.dtype), mode="drop")
    new_cell = write_mask & (store.stamp[indices] < 0)
    # Only newly occupied cells get a stamp (the others keep theirs) and are
    # appended to the order, in batch order.
    stamp = store.stamp.at[jnp.where(new_cell, indices, capacity)].set(store.n_writes, mode="drop")
    new_count = jnp.cumsum(new_cell.astype(jnp.int32))
    slot = jnp.where(new_cell, store.n_occupied + new_count - 1, capacity)
    order = store.order.at[slot].set(indices.astype(jnp.int32), mode="drop")
    return StoreState(
        stamp=stamp,
        order=order,
        n_occupied=store.n_occupied + jnp.sum(new_cell).astype(jnp.int32),
        n_writes=store.n_writes + 1,
        fields=fields,
    )


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
def threshold_add(
    store: StoreState,
    stats: EliteStats,
    indices,
    data: dict,
    learning_rate,
    threshold_min,
    threshold_min_is_neg_inf: bool,
    single_rule: bool = False,
):
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

    Returns:
        ``(store, stats, out)`` where ``out`` has ``status`` int32[batch], ``value``
        [batch], ``inserted`` bool[batch] (the per-cell winners actually written),
        ``cell_winner`` int32[capacity] (the row written to each cell, ``batch`` for
        cells not written) and ``new_threshold`` [batch] (the threshold each
        insertable solution's cell receives).
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
    cell_max = jnp.full(capacity, neg_inf, obj_dtype).at[indices].max(masked)
    candidate = can_insert & (objective == cell_max[indices])
    first = jnp.full(capacity, batch, jnp.int32).at[indices].min(jnp.where(candidate, pos, batch))
    winner = candidate & (first[indices] == pos)

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
        sums = scatter_add(
            jnp.zeros(capacity, obj_dtype), indices, jnp.where(can_insert, objective, 0)
        )
        k = counts[indices].astype(wide)
        ratio = (1 - lr).astype(wide) ** k
        mean = sums[indices].astype(wide) / jnp.maximum(k, 1)
        new_threshold = (ratio * cur_threshold.astype(wide) + mean * (1 - ratio)).astype(obj_dtype)

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
    new_store = store_write(store, indices, winner, write)

    # Stats: incremental objective sum.
    delta = jnp.sum(jnp.where(winner, objective - prev_objective, 0))
    new_stats = EliteStats(objective_sum=stats.objective_sum + delta.astype(obj_dtype))
    out = {
        "status": status,
        "value": value,
        "inserted": winner,
        "cell_winner": first,
        "new_threshold": new_threshold,
    }
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


class ArchiveSpec(NamedTuple):
    """Static (hashable) configuration of :func:`archive_add`.

    Attributes:
        index_fn: ``index_fn(measures, *index_args) -> int32[batch]`` cells, or
            :func:`given_index` when the caller computes the cells.
        neg_inf: Whether ``threshold_min`` is -inf (plain MAP-Elites thresholds).
        field_names: The device fields a batch carries (``solution``,
            ``objective``, ``measures`` and extra fields), in store order.
        with_rows: Whether ``add_info`` also reports each row's cell and whether it
            was written (for archives with host-side fields).
    """

    index_fn: Callable
    neg_inf: bool
    field_names: tuple
    with_rows: bool = False


class ArchiveState(NamedTuple):
    """Everything :func:`archive_add` reads and writes, as one pytree.

    Attributes:
        store: The :class:`StoreState`.
        stats: :class:`EliteStats`.
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


def archive_add(
    spec: ArchiveSpec, state: ArchiveState, data: dict, indices=None, *, single_rule: bool = False
):
    """pyribs' insertion into a cell archive, as a pure function.

    Cell index, per-cell winner, thresholds, statuses and values
    (:func:`threshold_add`), the objective sum, and pyribs' monotone best elite: the
    best elite is replaced when the batch's best insertable objective is strictly
    higher (:func:`best_insertion` picks the row); its ``threshold`` is the one its
    cell received.

    Args:
        spec: Static :class:`ArchiveSpec`.
        state: Current :class:`ArchiveState`.
        data: name -> [batch, ...] arrays of every name in ``spec.field_names``
            (validated by the caller: finite objectives and measures).
        indices: int32[batch] cells when ``spec.index_fn`` is :func:`given_index`.
        single_rule: Static; pyribs' ``add_single`` threshold update (batch of one).

    Returns:
        ``(state, add_info)``; ``add_info`` has ``status`` int32[batch] and ``value``
        [batch], plus, with ``spec.with_rows``, ``index`` int32[batch],
        ``inserted`` bool[batch], ``new_best`` (whether the best elite was
        replaced) and ``best_index`` (its cell).
    """
    fields = {name: data[name] for name in spec.field_names}
    if fields["objective"].shape[0] == 0:  # Nothing to insert.
        add_info = {
            "status": jnp.zeros(0, jnp.int32),
            "value": fields["objective"].astype(state.best_fields["objective"].dtype),
        }
        if spec.with_rows:
            add_info.update(
                index=jnp.zeros(0, jnp.int32),
                inserted=jnp.zeros(0, bool),
                new_best=jnp.zeros((), bool),
                best_index=state.best_index,
            )
        return state, add_info
    if indices is None:
        indices = spec.index_fn(fields["measures"], *state.index_args)
    store, stats, out = threshold_add(
        state.store,
        state.stats,
        indices,
        fields,
        state.learning_rate,
        state.threshold_min,
        spec.neg_inf,
        single_rule,
    )

    objective = fields["objective"].astype(state.best_fields["objective"].dtype)
    pos, any_insertable, win_max = best_insertion(
        out["status"], objective, indices, out["cell_winner"]
    )
    better = any_insertable & (~state.has_best | (win_max > state.best_fields["objective"]))
    candidate = {
        name: (out["new_threshold"][pos] if name == "threshold" else fields[name][pos]).astype(
            arr.dtype
        )
        for name, arr in state.best_fields.items()
    }
    best_fields = jax.tree.map(
        lambda new, old: jnp.where(better, new, old), candidate, state.best_fields
    )
    new_state = state._replace(
        store=store,
        stats=stats,
        has_best=state.has_best | better,
        best_index=jnp.where(better, indices[pos], state.best_index),
        best_fields=best_fields,
    )
    add_info = {"status": out["status"], "value": out["value"]}
    if spec.with_rows:
        add_info["index"] = indices
        add_info["inserted"] = out["inserted"]
        add_info["new_best"] = better
        add_info["best_index"] = new_state.best_index
    return new_state, add_info


def archive_stats(state: ArchiveState) -> dict:
    """pyribs' archive statistics of an :class:`ArchiveState`, as device scalars.

    :func:`~ribsax.archives._archive_stats.stats_values` in ``jax.numpy``: the same
    arithmetic as the archive objects' ``stats``, with NaN for ``obj_max`` and
    ``obj_mean`` while the archive is empty (where ``ArchiveStats`` has None).

    Returns:
        Dict of scalars: ``num_elites`` (int32), ``coverage``, ``qd_score``,
        ``norm_qd_score``, ``obj_max`` and ``obj_mean`` (NaN while empty).
    """
    dtype = state.stats.objective_sum.dtype
    return stats_values(
        state.store.n_occupied,
        state.store.stamp.shape[0],
        state.stats.objective_sum,
        state.qd_score_offset,
        state.best_fields["objective"],
        dtype=dtype,
        xp=jnp,
    )


@partial(jax.jit, static_argnames=("index_fn",))
def indexed(measures, index_args, *, index_fn):
    """Jitted ``index_fn(measures, *index_args)`` for ``index_of``."""
    return index_fn(measures, *index_args)


def store_view(store: StoreState) -> ArchiveView:
    """The :class:`ArchiveView` of a :class:`StoreState` with a ``solution``
    field."""
    return ArchiveView(
        store.order,
        store.n_occupied,
        store.fields["solution"],
        store.fields.get("objective"),
        store.fields.get("measures"),
    )


def archive_view(state: ArchiveState) -> ArchiveView:
    """The :class:`ArchiveView` of an :class:`ArchiveState`."""
    return store_view(state.store)


def sample_occupied(key, store: StoreState, n: int):
    """Uniformly samples ``n`` occupied cells with replacement, on device.

    The device-side counterpart of ``sample_elites`` for kernels (emitters, the fused
    loop). The archive must be non-empty; with an empty store the result is arbitrary.

    Args:
        key: PRNG key.
        store: A :class:`StoreState` or :class:`ArchiveView`.
        n: Static number of samples.

    Returns:
        int32[n] cell indices.
    """
    ranks = jax.random.randint(key, (n,), 0, jnp.maximum(store.n_occupied, 1))
    return store.order[ranks]
