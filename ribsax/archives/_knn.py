"""k-nearest-neighbour kernels over the first ``n`` rows of a stored point set.

Used by the unstructured archives (:class:`~ribsax.archives.ProximityArchive`),
whose entries occupy rows ``0 .. n-1`` of a growing store. pyribs rebuilds a
scipy KD-tree after every insertion and queries it on the host; here the search
runs inside one jitted kernel, in two steps:

1. **Candidates.** The stored rows are visited in blocks of at most ``BLOCK`` rows
   (only the blocks that hold valid rows: the loop runs ``ceil(n / BLOCK)`` times, so
   the cost follows the archive's size, not its capacity). Each block gives squared
   distances to every query (elementwise per column for low-dimensional points, the
   matmul form ``|q|^2 + |s|^2 - 2 q.s`` above that), its ``k`` smallest are merged
   into a running top-``k`` with ``lax.top_k``.
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

__all__ = ["BLOCK", "knn", "pairwise_sq_dist"]

#: Largest number of stored rows compared with the queries at once.
BLOCK = 4096
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
    sq = (jnp.sum(queries * queries, axis=1)[:, None]
          + jnp.sum(points * points, axis=1)[None, :] - 2.0 * dot)
    return jnp.maximum(sq, 0.0)


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
        rows = jax.lax.dynamic_slice(points, (start, jnp.zeros((), start.dtype)),
                                     (block, d)).astype(dtype)
        idx = start + offsets
        sq = pairwise_sq_dist(queries, rows)
        sq = jnp.where((idx >= first) & (idx < n), sq, jnp.inf)
        neg, pos = jax.lax.top_k(-sq, k)
        merged_sq = jnp.concatenate([best_sq, -neg], axis=1)
        merged_idx = jnp.concatenate([best_idx, idx[pos]], axis=1)
        neg, pos = jax.lax.top_k(-merged_sq, k)
        return -neg, jnp.take_along_axis(merged_idx, pos, axis=1)

    init = (jnp.full((n_queries, k), jnp.inf, dtype),
            jnp.full((n_queries, k), -1, jnp.int32))
    n_blocks = (n + block - 1) // block
    best_sq, best_idx = jax.lax.fori_loop(0, n_blocks, body, init)

    valid = best_idx >= 0
    cand = points[jnp.maximum(best_idx, 0)].astype(dtype)  # (Q, k, d)
    exact = jnp.sqrt(jnp.sum((queries[:, None, :] - cand) ** 2, axis=-1))
    exact = jnp.where(valid, exact, jnp.inf)
    # Sort by (exact distance, row); invalid slots (inf, big row) go last.
    big = jnp.iinfo(jnp.int32).max
    order = jnp.lexsort((jnp.where(valid, best_idx, big), exact), axis=-1)
    dist = jnp.take_along_axis(exact, order, axis=1)
    idx = jnp.take_along_axis(best_idx, order, axis=1)
    return dist, idx
