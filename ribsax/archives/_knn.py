"""k-nearest-neighbour kernels over the first ``n`` rows of a stored point set.

Used by the unstructured archives (:class:`~ribsax.archives.ProximityArchive`),
whose entries occupy rows ``0 .. n-1`` of a growing store. pyribs rebuilds a
scipy KD-tree after every insertion and queries it on the host; here the search
runs inside one jitted kernel, in two steps:

1. **Candidates.** The stored rows are visited in blocks of at most ``BLOCK`` rows
   (only the blocks that hold valid rows: the loop runs ``ceil(n / BLOCK)`` times, so
   the cost follows the archive's size, not its capacity). Each block gives squared
   distances to every query (elementwise per column for low-dimensional points, the
   matmul form ``|q|^2 + |s|^2 - 2 q.s`` above that). The block's ``k`` smallest are
   found in two levels: the block is cut into groups of ``GROUP`` rows, and the ``k``
   nearest rows lie in the ``k`` groups with the smallest minima (a group holding one
   of them has its minimum at most the ``k``-th distance, and every group whose
   minimum is that small holds one of them), so only those ``k * GROUP`` distances
   are searched. They are merged into a running top-``k``.
   Selection uses ``k`` rounds of minimum extraction (:func:`smallest_k`) rather than
   ``lax.top_k`` or a sort, which on the pinned JAX's CPU backend were measured
   25x slower for a (540, 4096) block.
2. **Exact distances.** The ``k`` candidates' distances are recomputed exactly from
   the coordinates, so the returned distances do not carry the cancellation error of
   the matmul form.

Distances are computed in the widest float dtype JAX allows (float64 under x64).
Rows at or beyond ``n`` are never returned: their slots hold ``inf`` distances and
index ``-1``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["BLOCK", "GROUP", "knn", "pairwise_sq_dist", "smallest_k", "smallest_k_by_id"]

#: Largest number of stored rows compared with the queries at once.
BLOCK = 4096
#: Rows per group in the two-level selection.
GROUP = 16
#: Up to this dimensionality, squared distances are summed column by column (exact).
_ELEMENTWISE_MAX_DIM = 16
_EXACT = jax.lax.Precision.HIGHEST


def pairwise_sq_dist(queries, points):
    """Squared Euclidean distances, ``(Q, d)`` x ``(P, d)`` -> ``(Q, P)``.

    Exact column sums for ``d <= 16``; the matmul form (clamped at 0) above.
    """
    d = queries.shape[1]
    if d <= _ELEMENTWISE_MAX_DIM:
        total = jnp.zeros((queries.shape[0], points.shape[0]), queries.dtype)
        for j in range(d):
            total = total + (queries[:, None, j] - points[None, :, j]) ** 2
        return total
    dot = jnp.matmul(queries, points.T, precision=_EXACT)
    sq = (
        jnp.sum(queries * queries, axis=1)[:, None]
        + jnp.sum(points * points, axis=1)[None, :]
        - 2.0 * dot
    )
    return jnp.maximum(sq, 0.0)


def smallest_k(values, k: int):
    """The ``k`` smallest entries of each row, ascending, and their columns.

    ``k`` rounds of (row minimum, lowest column holding it, mask it out): only
    elementwise operations and plain reductions, which XLA's CPU backend vectorises.

    Args:
        values: ``(Q, m)`` array, ``k <= m``.
        k: Static number of entries.

    Returns:
        ``(smallest, columns)``: ``(Q, k)`` values and int32 columns (the lower
        column first among equal values). Once a row's finite values are used up,
        the remaining slots hold ``inf`` with arbitrary columns.
    """
    m = values.shape[1]
    column = jnp.arange(m, dtype=jnp.int32)
    smallest, columns = [], []
    for _ in range(k):
        low = jnp.min(values, axis=1)
        col = jnp.min(jnp.where(values == low[:, None], column, m), axis=1)
        values = jnp.where(column[None, :] == col[:, None], jnp.inf, values)
        smallest.append(low)
        columns.append(col)
    return jnp.stack(smallest, axis=1), jnp.stack(columns, axis=1)


def smallest_k_by_id(values, ids, k: int):
    """The ``k`` smallest entries of each row, ascending, and their ``ids``.

    As :func:`smallest_k`, but among equal values the lower id comes first (ids are
    unique within a row wherever the value is finite).

    Args:
        values: ``(Q, m)`` array, ``k <= m``.
        ids: ``(Q, m)`` int32 array.
        k: Static number of entries.

    Returns:
        ``(smallest, ids)``, both ``(Q, k)``. Once a row's finite values are used up,
        the remaining slots hold ``inf`` with arbitrary ids.
    """
    big = jnp.iinfo(jnp.int32).max
    smallest, chosen = [], []
    for _ in range(k):
        low = jnp.min(values, axis=1)
        pick = jnp.min(jnp.where(values == low[:, None], ids, big), axis=1)
        values = jnp.where(ids == pick[:, None], jnp.inf, values)
        smallest.append(low)
        chosen.append(pick)
    return jnp.stack(smallest, axis=1), jnp.stack(chosen, axis=1)


def _block_smallest_k(sq, k: int):
    """:func:`smallest_k` of a ``(Q, block)`` array through groups of ``GROUP``, the
    lower column first among equal values."""
    n_queries, block = sq.shape
    n_groups = -(-block // GROUP)
    if n_groups <= k:  # Few groups: search everything.
        return smallest_k(sq, k)
    pad = n_groups * GROUP - block
    if pad:
        sq = jnp.pad(sq, ((0, 0), (0, pad)), constant_values=jnp.inf)
    groups = sq.reshape(n_queries, n_groups, GROUP)
    group_min, chosen = smallest_k(jnp.min(groups, axis=2), k)  # (Q, k) groups
    cand = jnp.take_along_axis(groups, chosen[:, :, None], axis=1)
    # Groups picked after the finite minima ran out may repeat: drop them.
    cand = jnp.where(jnp.isfinite(group_min)[:, :, None], cand, jnp.inf).reshape(
        n_queries, k * GROUP
    )
    # The chosen groups come by minimum, not by position: select by column.
    column = (chosen[:, :, None] * GROUP + jnp.arange(GROUP, dtype=jnp.int32)).reshape(
        n_queries, k * GROUP
    )
    return smallest_k_by_id(cand, column, k)


def knn(queries, points, n, k: int):
    """The ``k`` nearest of ``points[:n]`` to each query, nearest first.

    Args:
        queries: ``(Q, d)`` array.
        points: ``(capacity, d)`` array; only the first ``n`` rows are searched.
        n: int32 scalar (traced), ``0 <= n <= capacity``.
        k: Static number of neighbours, ``1 <= k <= capacity``.

    Returns:
        ``(dist, idx)``: ``(Q, k)`` exact Euclidean distances (wide float), sorted
        ascending, and int32 row indices. Slots beyond ``min(n, k)`` hold ``inf`` and
        ``-1``. Among equal distances the lower row comes first.
    """
    capacity, d = points.shape
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    queries = queries.astype(dtype)
    block = min(capacity, BLOCK)
    n_queries = queries.shape[0]
    offsets = jnp.arange(block, dtype=jnp.int32)

    def body(b, carry):
        best_sq, best_idx = carry
        first = (b * block).astype(jnp.int32)
        # The last block may start earlier to stay inside the array; rows already
        # visited (below ``first``) and rows at or beyond ``n`` are masked out.
        start = jnp.minimum(first, jnp.int32(capacity - block))
        rows = jax.lax.dynamic_slice(
            points, (start, jnp.zeros((), start.dtype)), (block, d)
        ).astype(dtype)
        idx = start + offsets
        # Masked rows are moved to infinity, so their distances are inf (masking
        # the (Q, block) distances instead was measured 4x slower on CPU).
        rows = jnp.where(((idx >= first) & (idx < n))[:, None], rows, jnp.inf)
        sq = pairwise_sq_dist(queries, rows)
        if d > _ELEMENTWISE_MAX_DIM:  # The matmul form gives inf - inf = nan there.
            sq = jnp.where(jnp.isnan(sq), jnp.inf, sq)
        block_sq, pos = _block_smallest_k(sq, k)
        merged_sq = jnp.concatenate([best_sq, block_sq], axis=1)
        merged_idx = jnp.concatenate([best_idx, idx[pos]], axis=1)
        return smallest_k_by_id(merged_sq, merged_idx, k)

    init = (jnp.full((n_queries, k), jnp.inf, dtype), jnp.full((n_queries, k), -1, jnp.int32))
    n_blocks = (n + block - 1) // block
    best_sq, best_idx = jax.lax.fori_loop(0, n_blocks, body, init)

    valid = jnp.isfinite(best_sq)
    best_idx = jnp.where(valid, best_idx, -1)
    cand = points[jnp.maximum(best_idx, 0)].astype(dtype)  # (Q, k, d)
    exact = jnp.sqrt(jnp.sum((queries[:, None, :] - cand) ** 2, axis=-1))
    exact = jnp.where(valid, exact, jnp.inf)
    # Re-sort by exact distance, lower rows first among equal distances; invalid
    # slots (inf) stay last.
    dist, idx = smallest_k_by_id(exact, best_idx, k)
    idx = jnp.where(jnp.isfinite(dist), idx, -1)
    return dist, idx
