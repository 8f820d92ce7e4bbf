"""A bucket grid over low-dimensional points, for exact k-nearest-neighbour queries.

:class:`~ribsax.archives.ProximityArchive` asks for the ``k`` nearest stored measures
of every solution of every batch, while its entries keep being appended (and, with
local competition, replaced). The brute force of :func:`ribsax.archives._knn.knn`
costs ``O(batch * n)``; this index makes a query cost ``O(batch * k)`` for measure
spaces of up to :data:`MAX_DIM` dimensions, with exactly the same results.

Layout. Space is cut into cubic cells of side ``width`` starting at ``origin``; cell
``c`` (a vector of integers) maps to bucket ``sum_j (c_j mod G) * G**j`` of a table
of ``G**d`` buckets of ``M`` slots, each slot holding a stored row (or -1). The
table wraps around like a torus, so points anywhere in space have a bucket (distant
cells can share one, which only adds candidates); ``G >= 3`` keeps the ``3**d``
cells around any cell in distinct buckets. ``fill`` is each bucket's next free slot
and ``slot`` each row's flat table position, so an entry that moves (a replacement
under local competition) leaves its old slot empty.

Query. The candidates of a query are the rows in the buckets of the ``3**d`` cells
around its own cell; their ``k`` smallest distances come from rounds of minimum
extraction (lower row first among equal distances, as in
:func:`~ribsax.archives._knn.knn`). Any point outside those cells is at least
``bound`` away, ``bound`` being the distance from the query to the border of the
``3**d`` block, so the answer is exact when the ``min(n, k)``-th candidate distance
is below ``bound`` (with a small margin against rounding in the cell coordinates).
The other queries (far from the stored points, or in a sparse region) are answered
by the brute force, in chunks of :data:`FALLBACK_CHUNK` queries (the whole batch at
once when more than a quarter of it misses), so the result is always exact. The grid
helps where the entries are spread evenly at the scale of the queries' ``k``-th
distances; where the archive mixes a dense clump with sparse regions (novelty search
appends a whole first batch, tightly clustered, then entries about a threshold
apart), the width that fits the clump is too fine for the rest and most queries
take the brute force.

Maintenance. :func:`insert` puts written rows into the table in one kernel and
reports an overflow (a bucket with more than ``M`` rows); the owner then rebuilds
the index from the stored points with :func:`layout` and :func:`build` (the cell
width is chosen from the points' bounding box so that a cell holds about
``occupancy`` points, and halved while some bucket would overflow). ``G`` and ``M``
are static (they fix the table's shape), so rebuilding with a new width compiles
nothing new.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ribsax.archives._knn import knn, smallest_k_by_id
from ribsax.archives._nearest import wide_float_dtype

__all__ = [
    "BucketIndex",
    "MAX_DIM",
    "FALLBACK_CHUNK",
    "occupancy",
    "table_shape",
    "layout",
    "max_count",
    "build",
    "insert",
    "query",
]

#: Highest measure dimensionality served by the index (``3**d`` buckets per query).
MAX_DIM = 3
#: Queries answered together by the brute force when the grid cannot vouch for them.
FALLBACK_CHUNK = 32
#: Cell coordinates are clipped to this magnitude before the integer cast.
_COORD_LIMIT = 2**30
#: Relative margin (of the cell width) kept between the k-th distance and the bound.
_MARGIN = 1e-6


class BucketIndex(NamedTuple):
    """State of the index (a pytree of device arrays).

    Attributes:
        table: int32[G**d, M] rows stored in each bucket, -1 for a free slot.
        fill: int32[G**d] next free slot of each bucket (empty slots left by moved
            rows are not reused until a rebuild).
        slot: int32[capacity] flat table position of each row, -1 if not indexed.
        origin: (d,) wide float, corner of cell 0.
        width: 0-d wide float, side of a cell.
    """

    table: jax.Array
    fill: jax.Array
    slot: jax.Array
    origin: jax.Array
    width: jax.Array


def occupancy(k: int) -> float:
    """Target number of points per cell for ``k`` neighbours."""
    return max(1.0, k / 2)


def table_shape(capacity: int, k: int, dim: int):
    """Static ``(G, M)`` for a store of ``capacity`` rows and ``k`` neighbours.

    The grid gets about ``capacity / occupancy(k)`` buckets; ``M`` leaves room for
    the fluctuations of the occupancy and for insertions between rebuilds.
    """
    occ = occupancy(k)
    g = int(np.ceil((capacity / occ) ** (1.0 / dim)))
    m = int(4 * np.ceil((2.5 * occ + 8) / 4))
    return max(3, g), m


def _cells(points, origin, width):
    """Integer cell coordinates of ``points`` (clipped, int32)."""
    c = jnp.floor((points.astype(origin.dtype) - origin) / width)
    return jnp.clip(c, -_COORD_LIMIT, _COORD_LIMIT).astype(jnp.int32)


def _bucket(cells, g: int):
    """Bucket number of integer cells (last axis: dimensions)."""
    bucket = jnp.zeros(cells.shape[:-1], jnp.int32)
    for j in reversed(range(cells.shape[-1])):
        bucket = bucket * g + jnp.mod(cells[..., j], g)
    return bucket


@partial(jax.jit, static_argnames=("occupancy",))
def layout(points, n, *, occupancy: float):
    """Origin and cell width for ``points[:n]`` (``n >= 1``).

    The width makes the bounding box hold about ``n / occupancy`` cells (extents
    below a thousandth of the largest one count as that, so that points on a line
    or at one spot still get a usable width).

    Returns:
        ``(origin, width)`` in the wide float dtype.
    """
    wide = wide_float_dtype()
    valid = (jnp.arange(points.shape[0]) < n)[:, None]
    pts = points.astype(wide)
    low = jnp.min(jnp.where(valid, pts, jnp.inf), axis=0)
    high = jnp.max(jnp.where(valid, pts, -jnp.inf), axis=0)
    extent = high - low
    floor = jnp.maximum(jnp.max(extent) * 1e-3, jnp.finfo(wide).tiny ** 0.25)
    extent = jnp.maximum(extent, floor)
    dim = points.shape[1]
    cells = jnp.maximum(n.astype(wide) / occupancy, 1.0)
    width = (jnp.prod(extent) / cells) ** (1.0 / dim)
    return low, width


@partial(jax.jit, static_argnames=("g",))
def max_count(points, n, origin, width, *, g: int):
    """Largest number of the first ``n`` points falling into one bucket."""
    bucket = _bucket(_cells(points, origin, width), g)
    n_buckets = g ** points.shape[1]
    bucket = jnp.where(jnp.arange(points.shape[0]) < n, bucket, n_buckets)
    counts = jnp.zeros(n_buckets, jnp.int32).at[bucket].add(1, mode="drop")
    return jnp.max(counts)


@partial(jax.jit, static_argnames=("g", "m"))
def build(points, n, origin, width, *, g: int, m: int) -> BucketIndex:
    """The index of ``points[:n]`` (every bucket must hold at most ``m`` of them)."""
    capacity, dim = points.shape
    n_buckets = g**dim
    rows = jnp.arange(capacity, dtype=jnp.int32)
    bucket = jnp.where(rows < n, _bucket(_cells(points, origin, width), g), n_buckets)
    order = jnp.argsort(bucket, stable=True).astype(jnp.int32)
    sorted_bucket = bucket[order]
    counts = jnp.zeros(n_buckets, jnp.int32).at[bucket].add(1, mode="drop")
    start = jnp.cumsum(counts) - counts
    rank = rows - start[jnp.minimum(sorted_bucket, n_buckets - 1)]
    ok = sorted_bucket < n_buckets
    pos = jnp.where(ok, sorted_bucket * m + rank, n_buckets * m)
    table = jnp.full(n_buckets * m, -1, jnp.int32).at[pos].set(order, mode="drop")
    slot = (
        jnp.full(capacity, -1, jnp.int32).at[jnp.where(ok, order, capacity)].set(pos, mode="drop")
    )
    return BucketIndex(
        table=table.reshape(n_buckets, m), fill=counts, slot=slot, origin=origin, width=width
    )


def insert(index: BucketIndex, measures, rows, write, moved):
    """Puts written rows into the index (traceable; called inside the write kernel).

    Args:
        index: Current index.
        measures: ``(batch, d)`` measures of the written rows.
        rows: int32[batch] rows written (unique where ``write``).
        write: bool[batch].
        moved: bool[batch], the rows that were already indexed (replacements).

    Returns:
        ``(index, overflow)``: the updated index and a bool scalar, True when some
        bucket ran out of slots (the index is then incomplete and must be rebuilt).
    """
    n_buckets, m = index.table.shape
    dim = measures.shape[1]
    g = round(n_buckets ** (1.0 / dim))
    bucket = _bucket(_cells(measures, index.origin, index.width), g)
    table = index.table.reshape(-1)
    size = table.shape[0]
    old = index.slot[rows]
    same = write & moved & (old >= 0) & (old // m == bucket)
    append = write & ~same
    # Moved rows leave their old slot empty.
    table = table.at[jnp.where(append & moved & (old >= 0), old, size)].set(-1, mode="drop")
    # Slot = bucket fill + number of earlier appended rows of the batch in the bucket.
    earlier = jnp.tril(jnp.ones((rows.shape[0],) * 2, bool), -1)
    rank = jnp.sum(
        earlier & append[None, :] & (bucket[None, :] == bucket[:, None]), axis=1, dtype=jnp.int32
    )
    new = index.fill[bucket] + rank
    fits = append & (new < m)
    pos = bucket * m + new
    table = table.at[jnp.where(fits, pos, size)].set(rows, mode="drop")
    fill = index.fill.at[jnp.where(append, bucket, n_buckets)].add(1, mode="drop")
    capacity = index.slot.shape[0]
    slot = index.slot.at[jnp.where(fits, rows, capacity)].set(pos, mode="drop")
    overflow = jnp.any(append & (new >= m))
    return index._replace(table=table.reshape(n_buckets, m), fill=fill, slot=slot), overflow


def query(index: BucketIndex, queries, points, n, k: int):
    """The ``k`` nearest of ``points[:n]`` to each query; same contract as
    :func:`ribsax.archives._knn.knn` (traceable).

    Args:
        index: Index of ``points[:n]``.
        queries: ``(Q, d)``.
        points: ``(capacity, d)`` stored points.
        n: int32 scalar, number of stored rows.
        k: Static number of neighbours.

    Returns:
        ``(dist, idx)``: ``(Q, k)`` Euclidean distances (wide float), ascending, and
        int32 rows (lower row first among equal distances); slots beyond
        ``min(n, k)`` hold ``inf`` and -1.
    """
    n_buckets, m = index.table.shape
    n_queries, dim = queries.shape
    g = round(n_buckets ** (1.0 / dim))
    wide = index.origin.dtype
    queries = jnp.asarray(queries).astype(wide)
    points = jnp.asarray(points)
    cells = _cells(queries, index.origin, index.width)
    offsets = jnp.asarray(list(itertools.product((-1, 0, 1), repeat=dim)), jnp.int32)
    buckets = _bucket(cells[:, None, :] + offsets[None], g)  # (Q, 3**d)
    cand = index.table[buckets].reshape(n_queries, -1)  # (Q, 3**d * M)
    if cand.shape[1] < k:
        cand = jnp.pad(cand, ((0, 0), (0, k - cand.shape[1])), constant_values=-1)
    valid = cand >= 0
    rows = points[jnp.maximum(cand, 0)].astype(wide)  # (Q, C, d)
    sq = jnp.zeros(cand.shape, wide)
    for j in range(dim):
        sq = sq + (queries[:, None, j] - rows[:, :, j]) ** 2
    sq = jnp.where(valid, sq, jnp.inf)
    best_sq, best_idx = smallest_k_by_id(sq, jnp.where(valid, cand, -1), k)
    dist = jnp.sqrt(best_sq)

    # Exact when the min(n, k)-th distance is below the distance to the block's border.
    low = (cells - 1).astype(wide) * index.width + index.origin
    high = (cells + 2).astype(wide) * index.width + index.origin
    bound = jnp.min(jnp.minimum(queries - low, high - queries), axis=1)
    k_eff = jnp.clip(jnp.minimum(n, k), 1, k)
    kth = jnp.take_along_axis(dist, jnp.broadcast_to(k_eff - 1, (n_queries, 1)), axis=1)[:, 0]
    exact = (n == 0) | (kth < bound - _MARGIN * index.width)

    # The others: brute force, FALLBACK_CHUNK queries at a time.
    chunk = min(FALLBACK_CHUNK, n_queries)
    missing = ~exact
    order = jnp.nonzero(missing, size=n_queries, fill_value=n_queries)[0]
    order = jnp.concatenate([order, jnp.full(chunk, n_queries, order.dtype)])
    n_chunks = (jnp.sum(missing) + chunk - 1) // chunk

    def body(i, carry):
        dist, idx = carry
        sel = jax.lax.dynamic_slice(order, (i * chunk,), (chunk,))
        d, j = knn(queries[jnp.minimum(sel, n_queries - 1)], points, n, k)
        return (
            dist.at[sel].set(d.astype(dist.dtype), mode="drop"),
            idx.at[sel].set(j, mode="drop"),
        )

    def chunked(carry):
        return jax.lax.fori_loop(0, n_chunks, body, carry)

    def everything(carry):
        del carry
        d, j = knn(queries, points, n, k)
        return d.astype(dist.dtype), j

    # When many queries miss, one brute force over the whole batch is cheaper.
    dist, idx = jax.lax.cond(
        4 * jnp.sum(missing) > n_queries, everything, chunked, (dist, best_idx)
    )
    idx = jnp.where(jnp.isfinite(dist), idx, -1)
    return dist, idx
