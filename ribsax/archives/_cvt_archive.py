"""CVTArchive: a centroidal Voronoi tessellation of the measure space."""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np

from ribsax._utils import parse_all_dtypes
from ribsax.archives._array_store import committed
from ribsax.archives._bounds import MeasureBoundsMixin
from ribsax.archives._k_means import check_points_shape, k_means_centroids
from ribsax.archives._kernels import indexed
from ribsax.archives._nearest import (
    brute_nearest,
    bucket_nearest,
    build_bucket_grid,
    cosine_nearest,
    make_blocks,
    minkowski_nearest,
    wide_float_dtype,
)
from ribsax.archives._threshold_archive import ThresholdArchive

__all__ = ["CVTArchive"]

_NEAREST_NEIGHBORS = ("scipy_kd_tree", "brute_force", "sklearn_nn")
_EUCLIDEAN_METRICS = ("euclidean", "l2", "sqeuclidean")


def _deprecation_checks(cells, custom_centroids, centroid_method, use_kd_tree, ckdtree_kwargs):
    """Raises pyribs' errors for constructor arguments removed in pyribs 0.9.0."""
    if cells is not None:
        raise ValueError(
            "`cells` is deprecated in pyribs 0.9.0. Please pass in `centroids` instead."
        )
    if custom_centroids is not None:
        raise ValueError(
            "`custom_centroids` is deprecated in pyribs 0.9.0. Please pass in `centroids` instead."
        )
    if centroid_method is not None:
        raise ValueError(
            "`centroid_method` is deprecated in pyribs 0.9.0. "
            "Please generate centroids and pass them in instead."
        )
    if use_kd_tree is not None:
        raise ValueError(
            "`use_kd_tree` is deprecated in pyribs 0.9.0. Please use `nearest_neighbors` instead."
        )
    if ckdtree_kwargs is not None:
        raise ValueError(
            "`ckdtree_kwargs` is deprecated in pyribs 0.9.0. Please use `kdtree_kwargs` instead."
        )


def _check_kdtree_query_kwargs(kwargs):
    """Rejects KD-tree query options that would change which centroid is returned."""
    allowed = {"k", "eps", "p", "distance_upper_bound", "workers"}
    for name in kwargs:
        if name not in allowed:
            raise TypeError(f"query() got an unexpected keyword argument '{name}'")
    if "k" in kwargs and np.ravel(kwargs["k"]).tolist() != [1]:
        raise ValueError(
            f"ribsax's CVTArchive only supports k=1 in kdtree_query_kwargs (got k={kwargs['k']!r})."
        )
    _check_minkowski_p(kwargs.get("p", 2))
    if np.isfinite(kwargs.get("distance_upper_bound", np.inf)):
        raise ValueError(
            "ribsax's CVTArchive does not support a finite "
            "distance_upper_bound in kdtree_query_kwargs."
        )


def _check_minkowski_p(p):
    """scipy's error for a p outside [1, inf]."""
    if not p >= 1:
        raise ValueError("Only p-norms with 1<=p<=infinity permitted")


#: sklearn metric names of Minkowski distances, with their fixed p.
_MINKOWSKI_METRICS = {
    "manhattan": 1,
    "cityblock": 1,
    "l1": 1,
    "chebyshev": np.inf,
    "infinity": np.inf,
}


def _sklearn_metric(kwargs):
    """The distance for the NearestNeighbors options in ``kwargs``: "euclidean",
    "cosine", or the ``p`` (a float) of another Minkowski distance.

    Raises:
        TypeError: Unknown NearestNeighbors argument.
        ValueError: A metric other than Minkowski or cosine.
    """
    try:
        from sklearn.neighbors import NearestNeighbors
    except ImportError:  # scikit-learn is optional in ribsax.
        pass
    else:
        NearestNeighbors(**kwargs)  # TypeError on unknown arguments, as in pyribs.
    metric = kwargs.get("metric", "minkowski")
    p = kwargs.get("p", 2)
    params = kwargs.get("metric_params") or {}
    if isinstance(metric, str) and not set(params) - {"p"}:
        p = params.get("p", p)
        if metric in _EUCLIDEAN_METRICS or (metric == "minkowski" and p == 2):
            return "euclidean"
        if metric == "cosine" and not params:
            return "cosine"
        if metric == "minkowski":
            _check_minkowski_p(p)
            return float(p)
        if metric in _MINKOWSKI_METRICS and not params:
            return float(_MINKOWSKI_METRICS[metric])
    raise ValueError(
        "ribsax's CVTArchive supports sklearn_nn only with Minkowski distances "
        "(metric 'minkowski' with any p >= 1, 'euclidean', 'l2', 'manhattan', "
        "'cityblock', 'l1', 'chebyshev', 'infinity') or metric 'cosine'; got "
        f"metric={metric!r}, p={p!r}, metric_params={kwargs.get('metric_params')!r}."
    )


class CVTArchive(MeasureBoundsMixin, ThresholdArchive):
    """An archive whose cells are the Voronoi cells of a set of centroids.

    Behaves like :class:`ribs.archives.CVTArchive` (same arguments, defaults,
    statuses, values, stats and errors): a measure vector belongs to the cell of its
    nearest centroid (measures outside ``ranges`` are not clipped). Storage lives on the
    JAX device and ``add`` is one jitted kernel that also finds the cells.

    Centroids: an int generates that many with :func:`k_means_centroids` (from
    ``samples`` uniform points in ``ranges``, ``seed`` and ``k_means_kwargs``); note that
    ribsax's k-means does not reproduce scikit-learn's centroids bit for bit (see
    :func:`k_means_centroids`). An array gives the centroids directly, and a str or
    Path is read with :func:`numpy.load`.

    Nearest-centroid search: whichever ``nearest_neighbors`` is chosen
    (``"scipy_kd_tree"``, ``"brute_force"`` or ``"sklearn_nn"``), the result is the
    exact nearest centroid (lowest index among equidistant ones), i.e. what pyribs
    returns apart from ties. It is computed on the device: for up to 4 measure
    dimensions through a bucket grid precomputed at construction (a few distance
    evaluations per point; points far outside the ranges fall back to an exact blocked
    search), otherwise by an exact blocked brute force. ``kdtree_kwargs``
    (except a periodic ``boxsize``), ``kdtree_query_kwargs`` (``eps``, ``workers``;
    ``k=1``) and ``chunk_size`` are accepted for compatibility and do not
    change the result (a KD-tree query with ``eps > 0`` may return an approximate
    neighbour in pyribs; ribsax returns the exact one, which satisfies the same bound).
    A Minkowski ``p`` other than 2 (``kdtree_query_kwargs={"p": 1}``, or
    ``sklearn_nn_kwargs`` with ``metric="minkowski"`` and ``p``, ``"manhattan"``,
    ``"chebyshev"`` ...) selects an exact blocked brute force under that distance.
    ``sklearn_nn_kwargs`` may also select ``metric="cosine"`` (largest cosine
    similarity); other metrics raise a ValueError.

    Args:
        solution_dim: Int or tuple, the shape of one solution.
        centroids: Number of centroids to generate, a ``(num_centroids,
            measure_dim)`` array, or a path to a ``.npy`` file holding one.
        ranges: ``(low, high)`` per measure dimension.
        learning_rate: CMA-MAE archive learning rate (None means 1.0).
        threshold_min: Initial threshold of every cell (CMA-MAE).
        qd_score_offset: Subtracted from each objective in the QD score.
        seed: Seed for :meth:`sample_elites` and for k-means.
        solution_dtype: dtype of solutions (default: float64 under JAX x64, else
            float32).
        objective_dtype: dtype of objectives and thresholds.
        measures_dtype: dtype of measures and centroids.
        dtype: Sets the three dtypes at once.
        extra_fields: ``{name: (shape, dtype)}`` of additional per-elite data.
        samples: Passed to :func:`k_means_centroids` when ``centroids`` is an int.
        k_means_kwargs: Passed to :func:`k_means_centroids` when ``centroids`` is an
            int.
        nearest_neighbors: ``"scipy_kd_tree"``, ``"brute_force"`` or
            ``"sklearn_nn"``.
        kdtree_kwargs: Options of :class:`scipy.spatial.KDTree` (see above).
        kdtree_query_kwargs: Options of :meth:`scipy.spatial.KDTree.query` (see above).
        chunk_size: Accepted for compatibility (ribsax bounds memory on its own).
        sklearn_nn_kwargs: Options of :class:`sklearn.neighbors.NearestNeighbors`.
        cells: Deprecated in pyribs 0.9.0; raises if given.
        custom_centroids: Deprecated in pyribs 0.9.0; raises if given.
        centroid_method: Deprecated in pyribs 0.9.0; raises if given.
        use_kd_tree: Deprecated in pyribs 0.9.0; raises if given.
        ckdtree_kwargs: Deprecated in pyribs 0.9.0; raises if given.

    Raises:
        ValueError: A deprecated argument was given, ``centroids`` has the wrong shape,
            ``nearest_neighbors`` is unknown, an unsupported nearest-neighbour option
            was requested, invalid CMA-MAE settings, reserved extra field names, or
            conflicting dtype arguments.
    """

    def __init__(
        self,
        *,
        solution_dim,
        centroids,
        ranges,
        learning_rate=None,
        threshold_min=-np.inf,
        qd_score_offset=0.0,
        seed=None,
        solution_dtype=None,
        objective_dtype=None,
        measures_dtype=None,
        dtype=None,
        extra_fields=None,
        samples=100_000,
        k_means_kwargs=None,
        nearest_neighbors="scipy_kd_tree",
        kdtree_kwargs=None,
        kdtree_query_kwargs=None,
        chunk_size=None,
        sklearn_nn_kwargs=None,
        cells=None,
        custom_centroids=None,
        centroid_method=None,
        use_kd_tree=None,
        ckdtree_kwargs=None,
    ):
        _deprecation_checks(cells, custom_centroids, centroid_method, use_kd_tree, ckdtree_kwargs)
        if nearest_neighbors not in _NEAREST_NEIGHBORS:
            raise ValueError(f"Unknown value `{nearest_neighbors}` for nearest_neighbors.")
        kdtree_kwargs = dict(kdtree_kwargs or {})
        if nearest_neighbors == "scipy_kd_tree":
            if kdtree_kwargs.get("boxsize") is not None:
                raise ValueError(
                    "ribsax's CVTArchive does not support a periodic `boxsize` in kdtree_kwargs."
                )
            query_kwargs = dict(kdtree_query_kwargs or {})
            _check_kdtree_query_kwargs(query_kwargs)
            metric = float(query_kwargs.get("p", 2))
        elif nearest_neighbors == "sklearn_nn":
            metric = _sklearn_metric(dict(sklearn_nn_kwargs or {}))
        else:
            metric = "euclidean"

        measure_dim = len(ranges)
        mdtype = parse_all_dtypes(dtype, solution_dtype, objective_dtype, measures_dtype)[2]
        if isinstance(centroids, numbers.Integral):
            centroids, _ = k_means_centroids(
                centroids=centroids,
                ranges=ranges,
                samples=samples,
                dtype=mdtype,
                seed=seed,
                k_means_kwargs=k_means_kwargs,
            )
        elif isinstance(centroids, (str, Path)):
            centroids = np.load(centroids).astype(mdtype)
        else:
            centroids = np.array(centroids, dtype=mdtype, copy=True)
        check_points_shape(centroids, "centroids", measure_dim, "num_centroids")

        ThresholdArchive.__init__(
            self,
            solution_dim=solution_dim,
            measure_dim=measure_dim,
            cells=len(centroids),
            learning_rate=learning_rate,
            threshold_min=threshold_min,
            qd_score_offset=qd_score_offset,
            seed=seed,
            solution_dtype=solution_dtype,
            objective_dtype=objective_dtype,
            measures_dtype=measures_dtype,
            dtype=dtype,
            extra_fields=extra_fields,
        )
        self._centroids = centroids
        bounds = list(zip(*ranges, strict=True))
        self._lower_bounds = np.array(bounds[0], dtype=mdtype)
        self._upper_bounds = np.array(bounds[1], dtype=mdtype)
        self._interval_size = self._upper_bounds - self._lower_bounds
        self._nearest_neighbors = nearest_neighbors
        self._chunk_size = chunk_size
        self._build_index(metric, kdtree_kwargs)

    def _build_index(self, metric, kdtree_kwargs):
        """Chooses the nearest-centroid kernel and precomputes its arguments."""
        wide = wide_float_dtype()
        centroids = self._centroids.astype(np.float64)
        if metric == 2.0:
            metric = "euclidean"
        if not isinstance(metric, str):
            self._index_kind = "minkowski"
            self._index_fn = minkowski_nearest
            args = (make_blocks(centroids, wide), np.asarray(metric, dtype=wide))
        elif metric == "cosine":
            norms = np.linalg.norm(centroids, axis=1, keepdims=True)
            unit = centroids / np.where(norms > 0, norms, 1)
            self._index_kind = "cosine"
            self._index_fn, args = cosine_nearest, (make_blocks(unit, wide),)
        else:
            kdtree_kwargs = {k: v for k, v in kdtree_kwargs.items() if k != "boxsize"}
            from scipy.spatial import KDTree

            tree = KDTree(centroids, **kdtree_kwargs)
            args = build_bucket_grid(
                centroids, self._lower_bounds, self._upper_bounds, wide, tree=tree
            )
            if args is not None:
                self._index_kind = "bucket_grid"
                self._index_fn = bucket_nearest
            else:
                self._index_kind = "brute_force"
                self._index_fn, args = brute_nearest, (make_blocks(centroids, wide),)
        self._index_args = committed(tuple(args))

    def _index_spec(self):
        return self._index_fn, self._index_args

    # ------------------------------------------------------------ properties
    @property
    def centroids(self):
        """(num_centroids, measure_dim) array of the centroids (measures dtype)."""
        return self._centroids

    @property
    def samples(self):
        """Removed in pyribs 0.9.0.

        Raises:
            ValueError: Always.
        """
        raise ValueError("CVTArchive.samples is deprecated in pyribs 0.9.0")

    # ------------------------------------------------------------ indexing
    def index_of(self, measures):
        """Index of the nearest centroid of each measure vector.

        ``archive.centroids[archive.index_of(m)[i]]`` is the centroid closest to
        ``m[i]``.

        Args:
            measures: (batch_size, :attr:`measure_dim`) array.

        Returns:
            int32[batch_size].

        Raises:
            ValueError: Wrong shape or non-finite values.
        """
        measures = self._checked_measures(measures)
        return np.asarray(indexed(measures, self._index_args, index_fn=self._index_fn))
