"""Nearest-centroid kernels behind :class:`ribsax.archives.CVTArchive`.

pyribs finds the cell of a measure vector with a scipy KD-tree (or brute force, or
scikit-learn) on the host. ribsax computes it inside the jitted add kernel, with
formulations chosen for speed on the pinned JAX CPU backend (where a naive
broadcast-then-argmin over all centroids is very slow):

* **Bucket grid** (low-dimensional measures, the common case). At construction, a
  uniform grid of buckets is laid over the measure ranges plus a margin, and for each
  bucket the host lists every centroid that can be the nearest one to *some* point of
  the bucket: centroid ``c`` is kept iff ``mindist(c, box) <= min_c' maxdist(c', box)``
  (a conservative, exact test; boxes are slightly enlarged to absorb rounding). A query
  then costs a few arithmetic operations to find its bucket and an exact squared
  distance to each of the bucket's ``K`` candidates (``K`` is about 15-20 for 2-D CVTs).
  Points outside the grid (far outside the ranges) are compacted and resolved exactly by
  the blocked brute force below, chunk by chunk, over only the centroids whose Voronoi
  cells reach outside the grid, so their cost is proportional to their number.
* **Blocked brute force** (high-dimensional measures and the fallback above). Centroids
  are split into blocks; the minimum exact squared distance per block is a fused
  elementwise-plus-min reduction, then the exact argmin runs inside the winning block.
  This avoids the slow variadic argmin over all centroids.
* **Cosine** (``sklearn_nn`` with ``metric="cosine"``): the same two-level search on the
  cosine similarity of unit vectors.
* **Minkowski** (``p != 2``, e.g. ``kdtree_query_kwargs={"p": 1}``): the same two-level
  search on ``sum |m - c|^p`` (``max |m - c|`` for ``p = inf``), which orders centroids
  as the Minkowski distance does.

Every search uses exact squared distances in the widest float dtype JAX allows
(float64 under x64), so the result equals the true nearest centroid; among exactly
equidistant centroids the lowest index wins.

All kernels are module-level pure functions ``index_fn(measures, *index_args) ->
int32[batch]`` so archives with equal shapes share compiled code.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "wide_float_dtype",
    "make_blocks",
    "build_bucket_grid",
    "blocked_nearest",
    "bucket_nearest",
    "brute_nearest",
    "cosine_nearest",
    "minkowski_nearest",
]

#: Highest measure dimensionality for which a bucket grid is attempted.
BUCKET_MAX_DIM = 4
#: Number of out-of-grid points resolved per brute-force step.
FALLBACK_CHUNK = 64
#: Largest number of candidates per bucket before the bucket grid is rejected.
MAX_CANDIDATES = 256
#: Largest number of buckets (bounds the construction time).
MAX_BUCKETS = 1 << 21
#: Largest number of (bucket, candidate) entries in a table.
MAX_TABLE_ENTRIES = 1 << 25
#: Up to this dimensionality, block minima use exact elementwise distances.
_ELEMENTWISE_MAX_DIM = 16
#: Matrix products in the searches use full float32 (or float64) arithmetic: on GPUs,
#: JAX's default precision multiplies float32 in TF32 (10-bit mantissas), which
#: misplaces points whose nearest centroids are closer than ~1e-3 relative.
_EXACT = jax.lax.Precision.HIGHEST
#: Margin of the bucket grid outside the ranges, as a fraction of each range.
_MARGIN_FRACTION = 0.25
#: Boxes are enlarged by this fraction of a bucket width on each side.
_BOX_SLACK = 1e-3
#: Number of nearest centroids (of the box centre) used to bound the box's radius.
_BOUND_NEIGHBORS = 8
#: Buckets processed per host step while building the table.
_BUILD_CHUNK = 16384


def wide_float_dtype():
    """float64 when JAX x64 is enabled, else float32 (the dtype of all distances)."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


# ---------------------------------------------------------------------------
# Host-side preprocessing.
# ---------------------------------------------------------------------------
def make_blocks(centroids: np.ndarray, dtype) -> np.ndarray:
    """Splits centroids into ``(n_blocks, block_size, d)`` for :func:`blocked_nearest`.

    The block size is about ``sqrt(n)``. The last block is padded with copies of
    centroid 0, which can never win over the real centroid 0 (first block, lower
    index), so padded slots are never returned.

    Args:
        centroids: ``(n, d)`` array.
        dtype: dtype of the result.

    Returns:
        ``(n_blocks, block_size, d)`` NumPy array.
    """
    n, d = centroids.shape
    block = max(1, int(math.ceil(math.sqrt(n))))
    n_blocks = max(1, -(-n // block))
    padded = np.empty((n_blocks * block, d), dtype=dtype)
    padded[:n] = centroids
    padded[n:] = centroids[0] if n else 0
    return padded.reshape(n_blocks, block, d)


def _ball_neighbors(tree, n, center, radius):
    """Indices of the centroids within ``radius`` of each centre, as a padded array.

    Returns:
        int64 ``(boxes, k)`` array; slots beyond a box's neighbours hold ``n``.
    """
    k = min(32, n)
    idx = np.full((len(center), k), n, dtype=np.int64)
    todo = np.arange(len(center))
    while True:
        dist, found = tree.query(center[todo], k=k)
        found = found.reshape(len(todo), k)
        found = np.where(dist.reshape(len(todo), k) <= radius[todo, None], found, n)
        if idx.shape[1] < k:
            idx = np.concatenate([idx, np.full((len(idx), k - idx.shape[1]), n, np.int64)], axis=1)
        idx[todo] = found
        # Rows whose k-th neighbour is still inside the ball may have more.
        full = found[:, -1] < n
        if k >= n or not np.any(full):
            return idx
        todo = todo[full]
        k = min(2 * k, n)


def _bucket_candidates(tree, centroids, lo, hi):
    """Candidate lists for boxes ``[lo, hi]`` (each ``(n_boxes, d)``).

    Returns:
        ``(owner, cand)`` int64 arrays sorted by ``(owner, cand)``: centroid ``cand``
        is a candidate of box ``owner``.
    """
    n = len(centroids)
    center = 0.5 * (lo + hi)
    half_diag = 0.5 * np.linalg.norm(hi - lo, axis=1)
    k = min(_BOUND_NEIGHBORS, n)
    _, near = tree.query(center, k=k)
    near = near.reshape(len(center), k)
    pts = centroids[near]  # (boxes, k, d)
    far = np.maximum(np.abs(pts - lo[:, None]), np.abs(pts - hi[:, None]))
    # Any upper bound on min_c' maxdist(c', box) keeps the test exact (it can only
    # add candidates); a tiny relative slack absorbs rounding of the bound itself.
    bound = np.sqrt(np.min(np.sum(far * far, axis=2), axis=1))
    bound = bound * (1 + 1e-6) + 1e-300
    ball = _ball_neighbors(tree, n, center, (bound + half_diag) * (1 + 1e-9))
    valid = ball < n
    pts = np.concatenate([centroids, np.zeros((1, centroids.shape[1]))])[ball]
    nearest_pt = np.clip(pts, lo[:, None], hi[:, None])
    mindist = np.sqrt(np.sum((pts - nearest_pt) ** 2, axis=2))
    keep = valid & (mindist <= bound[:, None])
    owner = np.broadcast_to(np.arange(len(center))[:, None], ball.shape)[keep]
    cand = ball[keep]
    order = np.lexsort((cand, owner))
    return owner[order], cand[order]


def build_bucket_grid(
    centroids, lower_bounds, upper_bounds, dtype, buckets_per_cell=2.0, tree=None
):
    """Builds the bucket-grid index arguments for :func:`bucket_nearest`.

    The grid covers ``[lower - m, upper + m]`` per dimension (``m`` about a quarter of
    the range, at least one bucket), with roughly ``buckets_per_cell`` in-range buckets
    per centroid, and square-ish buckets.

    Args:
        centroids: ``(n, d)`` array (any float dtype; the test runs in float64).
        lower_bounds: ``(d,)`` lower bounds of the ranges.
        upper_bounds: ``(d,)`` upper bounds of the ranges.
        dtype: Float dtype of the returned device arrays (distances are computed in it).
        buckets_per_cell: Target number of in-range buckets per centroid.
        tree: Optional :class:`scipy.spatial.KDTree` over ``centroids``.

    Returns:
        ``(origin, inv_width, counts, strides, candidates, centroids, outer,
        outer_blocks)`` as NumPy arrays (``outer`` lists the centroids that can be
        nearest to a point outside the grid, ``outer_blocks`` holds them as
        :func:`make_blocks` does), or None when the measure space is too
        high-dimensional or the candidate lists would be too long (then use
        :func:`brute_nearest`).
    """
    centroids64 = np.asarray(centroids, dtype=np.float64)
    n, d = centroids64.shape
    if d > BUCKET_MAX_DIM or n == 0:
        return None
    lower = np.asarray(lower_bounds, dtype=np.float64)
    upper = np.asarray(upper_bounds, dtype=np.float64)
    extent = upper - lower
    if not (np.all(np.isfinite(extent)) and np.all(extent >= 0)):
        return None
    positive = extent > 0
    if np.any(positive):
        volume = np.prod(extent[positive])
        side = (volume / (buckets_per_cell * n)) ** (1.0 / np.sum(positive))
    else:
        side = 1.0
    in_range = np.where(positive, np.maximum(1, np.ceil(extent / side)), 1)
    in_range = in_range.astype(np.int64)
    width = np.where(positive, extent / in_range, side)
    margin = np.maximum(1, np.ceil(_MARGIN_FRACTION * in_range)).astype(np.int64)
    counts = in_range + 2 * margin
    n_buckets = int(np.prod(counts))
    if n_buckets > MAX_BUCKETS:
        return None
    origin = lower - margin * width

    if tree is None:
        from scipy.spatial import KDTree

        tree = KDTree(centroids64)
    owners, cands, border = [], [], []
    for start in range(0, n_buckets, _BUILD_CHUNK):
        flat = np.arange(start, min(start + _BUILD_CHUNK, n_buckets))
        cells = np.stack(np.unravel_index(flat, counts), axis=1)
        lo = origin + (cells - _BOX_SLACK) * width
        hi = origin + (cells + 1 + _BOX_SLACK) * width
        owner, cand = _bucket_candidates(tree, centroids64, lo, hi)
        owners.append(owner + start)
        cands.append(cand)
        border.append(np.any((cells == 0) | (cells == counts - 1), axis=1))
    owner = np.concatenate(owners)
    cand = np.concatenate(cands)
    border = np.concatenate(border)
    per_bucket = np.bincount(owner, minlength=n_buckets)
    k = int(per_bucket.max())
    if k > MAX_CANDIDATES or k * n_buckets > MAX_TABLE_ENTRIES:
        return None
    starts = np.concatenate([[0], np.cumsum(per_bucket)[:-1]])
    slot = np.arange(len(owner)) - starts[owner]
    table = np.empty((n_buckets, k), dtype=np.int32)
    # Pad each row with its first (lowest-index) candidate: duplicates never change
    # the argmin, and ties still resolve to the lowest index.
    table[:] = cand[starts][:, None]
    table[owner, slot] = cand
    strides = np.cumprod(np.concatenate([counts[1:], [1]])[::-1])[::-1]

    # Centroids that can be nearest to a point outside the grid: the candidates of
    # the outermost layer of buckets (a closed Voronoi cell reaching outside the grid
    # from a centroid inside it crosses that layer, by convexity), plus any centroid
    # lying outside the grid itself.
    top = origin + counts * width
    outside = np.any((centroids64 < origin) | (centroids64 > top), axis=1)
    outer = np.union1d(cand[border[owner]], np.flatnonzero(outside)).astype(np.int32)
    return (
        origin.astype(dtype),
        (1.0 / width).astype(dtype),
        counts.astype(dtype),
        strides.astype(np.int32),
        table,
        centroids64.astype(dtype),
        outer,
        make_blocks(centroids64[outer], dtype),
    )


# ---------------------------------------------------------------------------
# Device kernels.
# ---------------------------------------------------------------------------
def _sq_dist_rows(points, cands):
    """Exact ``||p - c||^2``: points ``(P, d)``, cands ``(P, K, d)`` -> ``(P, K)``."""
    d = points.shape[1]
    total = (points[:, None, 0] - cands[:, :, 0]) ** 2
    for j in range(1, d):
        total = total + (points[:, None, j] - cands[:, :, j]) ** 2
    return total


def blocked_nearest(points, blocks):
    """Exact nearest centroid by a two-level (block, then within-block) search.

    Args:
        points: ``(P, d)`` array.
        blocks: ``(n_blocks, block_size, d)`` from :func:`make_blocks`.

    Returns:
        int32[P] index of the nearest centroid (lowest index among exact ties, for
        ``d <= 16``; above that, block minima use the matmul form and near-ties
        between blocks may resolve either way).
    """
    n_blocks, block, d = blocks.shape
    points = points.astype(blocks.dtype)
    if d <= _ELEMENTWISE_MAX_DIM:
        dist = (points[:, None, None, 0] - blocks[None, :, :, 0]) ** 2
        for j in range(1, d):
            dist = dist + (points[:, None, None, j] - blocks[None, :, :, j]) ** 2
    else:
        flat = blocks.reshape(-1, d)
        dot = jnp.matmul(points, flat.T, precision=_EXACT)
        dist = (jnp.sum(flat * flat, axis=1)[None, :] - 2.0 * dot).reshape(
            points.shape[0], n_blocks, block
        )
    best_block = jnp.argmin(jnp.min(dist, axis=2), axis=1).astype(jnp.int32)
    inner = jnp.argmin(_sq_dist_rows(points, blocks[best_block]), axis=1)
    return (best_block * block + inner.astype(jnp.int32)).astype(jnp.int32)


def brute_nearest(measures, blocks):
    """Index function: exact nearest centroid by :func:`blocked_nearest`.

    Args:
        measures: ``(batch, d)``.
        blocks: ``(n_blocks, block_size, d)`` centroids.

    Returns:
        int32[batch].
    """
    return blocked_nearest(measures, blocks)


def _resolve_outside(points, outside, indices, outer, outer_blocks):
    """Recomputes ``indices`` of the ``outside`` points.

    The flagged points are compacted and processed ``FALLBACK_CHUNK`` at a time in a
    ``while_loop`` by :func:`blocked_nearest` over the ``outer`` centroids (those that
    can be nearest to a point outside the grid), so the cost is proportional to their
    number (zero iterations, and a skipped branch, when no point is flagged).
    """
    batch = points.shape[0]
    chunk = min(FALLBACK_CHUNK, batch)
    if chunk == 0:
        return indices

    def slow(indices):
        n_out = jnp.sum(outside, dtype=jnp.int32)
        order = jnp.nonzero(outside, size=batch, fill_value=0)[0].astype(jnp.int32)
        order = jnp.concatenate([order, jnp.zeros(chunk, jnp.int32)])
        offsets = jnp.arange(chunk, dtype=jnp.int32)

        def body(state):
            start, idx = state
            sel = jax.lax.dynamic_slice(order, (start,), (chunk,))
            found = outer[blocked_nearest(points[sel], outer_blocks)]
            target = jnp.where(start + offsets < n_out, sel, batch)
            return start + chunk, idx.at[target].set(found, mode="drop")

        return jax.lax.while_loop(
            lambda s: s[0] < n_out, body, (jnp.zeros((), jnp.int32), indices)
        )[1]

    return jax.lax.cond(jnp.any(outside), slow, lambda idx: idx, indices)


def bucket_nearest(
    measures, origin, inv_width, counts, strides, candidates, centroids, outer, outer_blocks
):
    """Index function: exact nearest centroid through a bucket grid.

    Args:
        measures: ``(batch, d)``.
        origin, inv_width, counts, strides, candidates, centroids, outer,
            outer_blocks: The arrays returned by :func:`build_bucket_grid`.

    Returns:
        int32[batch].
    """
    points = measures.astype(centroids.dtype)
    coord = jnp.floor((points - origin) * inv_width)
    outside = jnp.any((coord < 0) | (coord >= counts), axis=1)
    coord = jnp.clip(coord, 0, counts - 1).astype(jnp.int32)
    bucket = jnp.sum(coord * strides, axis=1)
    cands = candidates[bucket]  # (batch, K)
    pos = jnp.argmin(_sq_dist_rows(points, centroids[cands]), axis=1)
    indices = jnp.take_along_axis(cands, pos[:, None], axis=1)[:, 0]
    return _resolve_outside(points, outside, indices, outer, outer_blocks)


def cosine_nearest(measures, unit_blocks):
    """Index function: centroid of smallest cosine distance (largest cosine similarity).

    Matches :class:`sklearn.neighbors.NearestNeighbors` with ``metric="cosine"``: rows
    are scaled to unit norm (zero rows stay zero, so their similarity to everything is
    0 and the lowest index wins).

    Args:
        measures: ``(batch, d)``.
        unit_blocks: ``(n_blocks, block_size, d)`` blocks of unit-norm centroids.

    Returns:
        int32[batch].
    """
    n_blocks, block, d = unit_blocks.shape
    points = measures.astype(unit_blocks.dtype)
    norm = jnp.sqrt(jnp.sum(points * points, axis=1, keepdims=True))
    points = points / jnp.where(norm > 0, norm, 1)
    flat = unit_blocks.reshape(-1, d)
    sim = jnp.matmul(points, flat.T, precision=_EXACT).reshape(points.shape[0], n_blocks, block)
    best_block = jnp.argmax(jnp.max(sim, axis=2), axis=1).astype(jnp.int32)
    inner_sim = jnp.einsum("pkd,pd->pk", unit_blocks[best_block], points, precision=_EXACT)
    inner = jnp.argmax(inner_sim, axis=1).astype(jnp.int32)
    return (best_block * block + inner).astype(jnp.int32)


def _minkowski_rows(points, cands, p):
    """``sum_j |p_j - c_j|^p`` (``max_j`` for infinite ``p``): points ``(P, d)``,
    cands ``(P, K, d)`` -> ``(P, K)``."""
    diff = jnp.abs(points[:, None, :] - cands)
    return jnp.where(jnp.isinf(p), jnp.max(diff, axis=-1), jnp.sum(diff**p, axis=-1))


def minkowski_nearest(measures, blocks, p):
    """Index function: nearest centroid under the Minkowski ``p``-distance.

    A two-level search like :func:`blocked_nearest`: the block with the smallest
    distance, then the argmin inside it (the lowest index among exact ties). Distances
    are compared as ``sum |m - c|^p`` (or ``max |m - c|`` when ``p`` is infinite),
    which orders centroids as the ``p``-norm does without taking the root.

    Args:
        measures: ``(batch, d)``.
        blocks: ``(n_blocks, block_size, d)`` centroids from :func:`make_blocks`.
        p: 0-d array, ``1 <= p <= inf``.

    Returns:
        int32[batch].
    """
    n_blocks, block, d = blocks.shape
    points = measures.astype(blocks.dtype)
    p = p.astype(blocks.dtype)
    finite = jnp.zeros((points.shape[0], n_blocks, block), blocks.dtype)
    chebyshev = finite
    for j in range(d):  # One column at a time: no (P, n, d) intermediate.
        diff = jnp.abs(points[:, None, None, j] - blocks[None, :, :, j])
        finite = finite + diff**p
        chebyshev = jnp.maximum(chebyshev, diff)
    dist = jnp.where(jnp.isinf(p), chebyshev, finite)
    best_block = jnp.argmin(jnp.min(dist, axis=2), axis=1).astype(jnp.int32)
    inner = jnp.argmin(_minkowski_rows(points, blocks[best_block], p), axis=1)
    return (best_block * block + inner.astype(jnp.int32)).astype(jnp.int32)
