"""k_means_centroids: CVT centroids by Lloyd's k-means, computed in JAX."""

from __future__ import annotations

import math
import numbers
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._scatter import scatter_add
from ribsax._utils import seed_to_key
from ribsax.archives._nearest import blocked_nearest

__all__ = ["k_means_centroids", "check_points_shape"]

#: Keyword arguments of :func:`sklearn.cluster.k_means` that are understood.
_KNOWN_KWARGS = {
    "sample_weight",
    "init",
    "n_init",
    "max_iter",
    "verbose",
    "tol",
    "random_state",
    "copy_x",
    "algorithm",
    "return_n_iter",
}
#: Samples assigned per step of the E-step (bounds the working memory).
_ASSIGN_CHUNK = 8192


def check_points_shape(array, array_name, dim, batch_name):
    """Checks that ``array`` has shape ``(n, dim)``, with pyribs' message.

    Args:
        array: NumPy array.
        array_name: Name in the message (``samples``, ``centroids``).
        dim: Expected second dimension (the measure dimensionality).
        batch_name: Name of the first dimension in the message.

    Raises:
        ValueError: The shape is not ``(n, dim)``.
    """
    if array.ndim != 2 or array.shape[1] != dim:
        raise ValueError(
            f"Expected {array_name} to be an array with shape "
            f"({batch_name}, {dim}) (i.e. shape "
            f"({batch_name}, measure_dim)) but it had shape "
            f"{array.shape}."
        )


# ---------------------------------------------------------------------------
# Kernels.
# ---------------------------------------------------------------------------
def _pad_blocks(centers):
    """``(k, d)`` centers -> ``(n_blocks, block, d)`` padded with center 0."""
    k, d = centers.shape
    block = max(1, int(math.ceil(math.sqrt(k))))
    n_blocks = -(-k // block)
    pad = n_blocks * block - k
    padded = jnp.concatenate([centers, jnp.broadcast_to(centers[0], (pad, d))])
    return padded.reshape(n_blocks, block, d)


def _assign(x, centers):
    """Nearest center of each sample and its squared distance."""
    blocks = _pad_blocks(centers)
    n, d = x.shape
    if n > _ASSIGN_CHUNK:
        n_chunks = -(-n // _ASSIGN_CHUNK)
        padded = jnp.concatenate([x, jnp.zeros((n_chunks * _ASSIGN_CHUNK - n, d), x.dtype)])
        labels = jax.lax.map(
            partial(blocked_nearest, blocks=blocks), padded.reshape(n_chunks, _ASSIGN_CHUNK, d)
        )
        labels = labels.reshape(-1)[:n]
    else:
        labels = blocked_nearest(x, blocks)
    dist = jnp.sum((x - centers[labels]) ** 2, axis=1)
    return labels, dist


def _update(x, w, labels, dist, old_centers):
    """M-step with sklearn's relocation of empty clusters to far-away samples."""
    k = old_centers.shape[0]
    sums = scatter_add(jnp.zeros((k, x.shape[1]), x.dtype), labels, w[:, None] * x)
    weights = scatter_add(jnp.zeros(k, w.dtype), labels, w)
    empty = weights == 0

    def relocate(args):
        sums, weights = args
        # The samples farthest from their centers become the empty clusters' centers
        # (the farthest goes to the lowest-index empty cluster) and leave their old
        # clusters.
        n_empty = jnp.sum(empty)
        empty_ids = jnp.argsort(~empty, stable=True)  # Empty clusters first, in order.
        far = jnp.argsort(-dist, stable=True)
        slots = jnp.arange(k)
        if k > x.shape[0]:
            far = jnp.concatenate([far, jnp.zeros(k - x.shape[0], far.dtype)])
        donor = far[:k]
        active = slots < n_empty
        donor_x = w[donor, None] * x[donor]
        moved_from = jnp.where(active, labels[donor], k)
        moved_to = jnp.where(active, empty_ids, k)
        sums = scatter_add(sums, moved_from, -donor_x)
        weights = scatter_add(weights, moved_from, -w[donor])
        sums = sums.at[moved_to].set(donor_x, mode="drop")
        weights = weights.at[moved_to].set(w[donor], mode="drop")
        return sums, weights

    sums, weights = jax.lax.cond(jnp.any(empty), relocate, lambda a: a, (sums, weights))
    safe = jnp.where(weights > 0, weights, 1)
    return jnp.where((weights > 0)[:, None], sums / safe[:, None], old_centers)


@partial(jax.jit, static_argnames=("max_iter",))
def lloyd(x, w, centers, tol, *, max_iter):
    """Lloyd's k-means iterations with sklearn's stopping rule.

    Stops when the labels no longer change (strict convergence) or when the total
    squared center shift is at most ``tol`` (an absolute tolerance), or after
    ``max_iter`` iterations.

    Args:
        x: ``(n, d)`` samples.
        w: ``(n,)`` sample weights.
        centers: ``(k, d)`` initial centers.
        tol: Absolute tolerance on the squared center shift.
        max_iter: Maximum number of iterations.

    Returns:
        ``(centers, inertia, n_iter)``; the inertia is the weighted sum of squared
        distances to the returned centers.
    """
    n = x.shape[0]

    def cond(state):
        i, _, _, done = state
        return (i < max_iter) & ~done

    def body(state):
        i, centers, labels_old, _ = state
        labels, dist = _assign(x, centers)
        new_centers = _update(x, w, labels, dist, centers)
        strict = jnp.all(labels == labels_old)
        shift = jnp.sum((new_centers - centers) ** 2)
        return i + 1, new_centers, labels, strict | (shift <= tol)

    state = (jnp.zeros((), jnp.int32), centers, jnp.full(n, -1, jnp.int32), jnp.zeros((), bool))
    n_iter, centers, _, _ = jax.lax.while_loop(cond, body, state)
    _, dist = _assign(x, centers)
    return centers, jnp.sum(w * dist), n_iter


@partial(jax.jit, static_argnames=("weighted",))
def _random_init(key, x, w, k_array, *, weighted):
    """k distinct samples, drawn with probability proportional to their weight."""
    k = k_array.shape[0]
    if weighted:
        idx = jax.random.choice(key, x.shape[0], (k,), replace=False, p=w / jnp.sum(w))
    else:
        idx = jax.random.permutation(key, x.shape[0])[:k]
    return x[idx]


@jax.jit
def _kmeans_plusplus(key, x, w, k_array):
    """Greedy k-means++ (as in sklearn: 2 + log(k) local trials per center)."""
    k = k_array.shape[0]
    n = x.shape[0]
    trials = 2 + int(np.log(k))
    key, sub = jax.random.split(key)
    first = jax.random.choice(sub, n, p=w / jnp.sum(w))
    centers = jnp.zeros((k, x.shape[1]), x.dtype).at[0].set(x[first])
    closest = jnp.sum((x - x[first]) ** 2, axis=1)

    def step(c, state):
        key, centers, closest = state
        key, sub = jax.random.split(key)
        cum = jnp.cumsum(w * closest)
        picks = jnp.searchsorted(cum, jax.random.uniform(sub, (trials,), x.dtype) * cum[-1])
        picks = jnp.clip(picks, 0, n - 1)
        cand_dist = jnp.sum((x[None, :, :] - x[picks][:, None, :]) ** 2, axis=2)
        cand_dist = jnp.minimum(closest[None, :], cand_dist)
        best = jnp.argmin(jnp.matmul(cand_dist, w, precision=jax.lax.Precision.HIGHEST))
        return key, centers.at[c].set(x[picks[best]]), cand_dist[best]

    _, centers, _ = jax.lax.fori_loop(1, k, step, (key, centers, closest))
    return centers


# ---------------------------------------------------------------------------
# Public function.
# ---------------------------------------------------------------------------
def _parse_kwargs(kwargs, n_clusters, seed):
    """Validates the sklearn-style k-means kwargs; returns a normalized dict."""
    unknown = [name for name in kwargs if name not in _KNOWN_KWARGS]
    if unknown:
        raise TypeError(f"got an unexpected keyword argument '{unknown[0]}'")
    init = kwargs.get("init", "random")
    if isinstance(init, str):
        if init not in ("random", "k-means++"):
            raise ValueError(
                f"init should be 'k-means++', 'random' or an array of shape "
                f"(n_clusters, n_features), got {init!r}."
            )
    elif callable(init):
        raise ValueError("ribsax's k_means_centroids does not support a callable init.")
    n_init = kwargs.get("n_init", 1)
    if n_init == "auto":
        n_init = 10 if isinstance(init, str) and init == "random" else 1
    if not isinstance(init, str):
        n_init = 1
    if not isinstance(n_init, numbers.Integral) or n_init < 1:
        raise ValueError(f"n_init should be > 0, got {n_init} instead.")
    max_iter = kwargs.get("max_iter", 300)
    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter should be > 0, got {max_iter} instead.")
    tol = kwargs.get("tol", 1e-4)
    if tol < 0:
        raise ValueError(f"tol should be >= 0, got {tol} instead.")
    algorithm = kwargs.get("algorithm", "lloyd")
    if algorithm not in ("lloyd", "elkan"):
        raise ValueError(f"algorithm should be 'lloyd' or 'elkan', got {algorithm!r} instead.")
    random_state = kwargs.get("random_state", seed)
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(np.iinfo(np.int32).max))
    elif isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(np.iinfo(np.int32).max))
    return {
        "init": init,
        "n_init": int(n_init),
        "max_iter": int(max_iter),
        "tol": tol,
        "random_state": random_state,
        "sample_weight": kwargs.get("sample_weight"),
    }


def k_means_centroids(
    *, centroids, ranges, samples=100_000, dtype=np.float64, seed=None, k_means_kwargs=None
):
    """Generates CVT centroids by clustering uniform samples with k-means.

    Same interface as :func:`ribs.archives.k_means_centroids`. With an integer
    ``samples``, the samples are drawn exactly as pyribs draws them
    (``np.random.default_rng(seed).uniform(lower, upper, (samples, measure_dim))``, cast
    to ``dtype``), so they are identical to pyribs'. The clustering is Lloyd's k-means
    run in one jitted JAX loop, with scikit-learn's defaults as pyribs sets them
    (``n_init=1``, ``init="random"``, ``max_iter=300``, ``tol=1e-4`` relative to the
    mean sample variance, empty clusters relocated to the farthest samples, data
    centred before clustering).

    The centroids are **not** bit-identical to pyribs': the initial centers are drawn
    with JAX's PRNG (keyed by ``random_state``, which defaults to ``seed``) instead of
    NumPy's ``RandomState``. They are of the same quality (the same k-means objective up
    to the usual run-to-run variation) and deterministic: the same seed gives the same
    centroids. Without JAX x64, float64 requests are clustered in float32 and returned
    as float64.

    Args:
        centroids: Number of centroids.
        ranges: ``(low, high)`` per measure dimension.
        samples: Number of uniform samples to cluster, or a ``(num_samples,
            measure_dim)`` array of samples.
        dtype: dtype of the returned centroids and samples.
        seed: Seed for the samples and (unless ``k_means_kwargs`` sets
            ``random_state``) the k-means initialisation. None means not fixed.
        k_means_kwargs: Overrides of the :func:`sklearn.cluster.k_means` settings:
            ``init`` (``"random"``, ``"k-means++"`` or an array), ``n_init``,
            ``max_iter``, ``tol``, ``random_state``, ``sample_weight``; ``algorithm``
            (``"lloyd"``/``"elkan"``, same result), ``verbose``, ``copy_x`` and
            ``return_n_iter`` are accepted and have no effect.

    Returns:
        ``(centroids, samples)``: ``(centroids, measure_dim)`` and ``(num_samples,
        measure_dim)`` arrays of ``dtype``.

    Raises:
        ValueError: ``samples`` is an array of the wrong shape, there are fewer
            samples than centroids, or a k-means setting is invalid.
        TypeError: An unknown k-means keyword argument.
        RuntimeError: k-means produced fewer centroids than requested.
    """
    measure_dim = len(ranges)
    bounds = list(zip(*ranges, strict=True))
    lower_bounds = np.array(bounds[0], dtype=dtype)
    upper_bounds = np.array(bounds[1], dtype=dtype)
    options = _parse_kwargs(dict(k_means_kwargs or {}), centroids, seed)

    if isinstance(samples, numbers.Integral):
        rng = np.random.default_rng(seed)
        samples = rng.uniform(lower_bounds, upper_bounds, size=(samples, measure_dim)).astype(dtype)
    else:
        samples = np.asarray(samples, dtype=dtype)
        check_points_shape(samples, "samples", measure_dim, "num_samples")

    n_samples = samples.shape[0]
    if n_samples < centroids:
        raise ValueError(f"n_samples={n_samples} should be >= n_clusters={centroids}.")

    compute = (
        np.float64 if (np.dtype(dtype) == np.float64 and jax.config.jax_enable_x64) else np.float32
    )
    x = samples.astype(np.float64)
    mean = x.mean(axis=0)
    tol = float(np.mean(np.var(x, axis=0)) * options["tol"])
    x = jnp.asarray(x - mean, dtype=compute)
    weights = options["sample_weight"]
    weights = (
        np.ones(n_samples)
        if weights is None
        else np.asarray(weights, dtype=np.float64).reshape(n_samples)
    )
    w = jnp.asarray(weights, dtype=compute)
    k_array = jnp.zeros((int(centroids), 0))

    key = seed_to_key(options["random_state"])
    init = options["init"]
    best_centers, best_inertia = None, np.inf
    for run_key in jax.random.split(key, options["n_init"]):
        if isinstance(init, str) and init == "random":
            start = _random_init(
                run_key, x, w, k_array, weighted=options["sample_weight"] is not None
            )
        elif isinstance(init, str):
            start = _kmeans_plusplus(run_key, x, w, k_array)
        else:
            start = np.asarray(init, dtype=np.float64)
            if start.shape != (centroids, measure_dim):
                raise ValueError(
                    f"The shape of the initial centers {start.shape} does not match "
                    f"the number of clusters {centroids}."
                )
            start = jnp.asarray(start - mean, dtype=compute)
        centers, inertia, _ = lloyd(x, w, start, tol, max_iter=options["max_iter"])
        inertia = float(inertia)
        if best_centers is None or inertia < best_inertia:
            best_centers, best_inertia = centers, inertia

    centroid_points = (np.asarray(best_centers, dtype=np.float64) + mean).astype(dtype)
    if centroid_points.shape[0] < centroids:
        raise RuntimeError(
            "While generating the CVT, k-means clustering found "
            f"{centroid_points.shape[0]} centroids, but this "
            f"archive needs {centroids} cells. This most "
            "likely happened because there are too few samples "
            "and/or too many cells."
        )
    return centroid_points, samples
