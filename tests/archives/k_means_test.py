"""Tests for ribsax.archives.k_means_centroids (oracle: ribs and scikit-learn)."""

import re

import numpy as np
import pytest
import ribs.archives
from scipy.spatial import KDTree
from sklearn.cluster import k_means

from ribsax.archives import k_means_centroids

RANGES = [(-1.0, 1.0), (-2.0, 2.0)]


def inertia(samples, centroids):
    """Sum of squared distances from each sample to its nearest centroid."""
    dist, _ = KDTree(centroids).query(samples)
    return float(np.sum(dist**2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_samples_identical_to_ribs(dtype):
    centroids, samples = k_means_centroids(
        centroids=10, ranges=RANGES, samples=300, dtype=dtype, seed=42
    )
    _, ribs_samples = ribs.archives.k_means_centroids(
        centroids=10, ranges=RANGES, samples=300, dtype=dtype, seed=42
    )
    assert samples.dtype == dtype and centroids.dtype == dtype
    assert centroids.shape == (10, 2)
    np.testing.assert_array_equal(samples, ribs_samples)


def test_same_seed_same_centroids():
    first, _ = k_means_centroids(centroids=10, ranges=RANGES, samples=300, seed=7)
    second, _ = k_means_centroids(centroids=10, ranges=RANGES, samples=300, seed=7)
    other, _ = k_means_centroids(centroids=10, ranges=RANGES, samples=300, seed=8)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


def test_random_state_overrides_seed():
    # random_state fixes the initialisation; the seed still draws the samples.
    kwargs = {"random_state": 3}
    samples = np.random.default_rng(0).uniform(-1, 1, (300, 2))
    first, _ = k_means_centroids(
        centroids=10, ranges=RANGES, samples=samples, seed=1, k_means_kwargs=kwargs
    )
    second, _ = k_means_centroids(
        centroids=10, ranges=RANGES, samples=samples, seed=2, k_means_kwargs=kwargs
    )
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("init", ["random", "k-means++"])
def test_quality_close_to_sklearn(init):
    samples = np.random.default_rng(1).uniform(-1, 1, (1000, 2))
    ours = [
        inertia(
            samples,
            k_means_centroids(
                centroids=30,
                ranges=RANGES,
                samples=samples,
                seed=seed,
                k_means_kwargs={"init": init},
            )[0],
        )
        for seed in range(2)
    ]
    theirs = [
        inertia(
            samples,
            k_means(samples, 30, n_init=1, init=init, algorithm="lloyd", random_state=seed)[0],
        )
        for seed in range(2)
    ]
    assert np.mean(ours) == pytest.approx(np.mean(theirs), rel=0.05)


def test_lloyd_iterations_match_sklearn_from_given_init():
    # With explicit initial centers Lloyd's algorithm is deterministic; a duplicated
    # center leaves an empty cluster that must be relocated as sklearn does.
    rng = np.random.default_rng(2)
    samples = rng.uniform(-1, 1, (300, 2))
    init = samples[:10].copy()
    init[1] = init[0]
    weights = rng.uniform(0.5, 2.0, 300)
    for kwargs in ({"init": init}, {"init": samples[:10], "sample_weight": weights}):
        ours, _ = k_means_centroids(
            centroids=10, ranges=RANGES, samples=samples, k_means_kwargs=kwargs
        )
        theirs = k_means(samples, 10, n_init=1, algorithm="lloyd", **kwargs)[0]
        np.testing.assert_allclose(ours, theirs, atol=1e-10)


def test_max_iter_is_honoured():
    samples = np.random.default_rng(3).uniform(-1, 1, (300, 2))
    one, _ = k_means_centroids(
        centroids=10, ranges=RANGES, samples=samples, seed=0, k_means_kwargs={"max_iter": 1}
    )
    full, _ = k_means_centroids(centroids=10, ranges=RANGES, samples=samples, seed=0)
    assert inertia(samples, full) < inertia(samples, one)


def test_n_init_keeps_best_run():
    samples = np.random.default_rng(4).uniform(-1, 1, (300, 2))
    best, _ = k_means_centroids(
        centroids=10, ranges=RANGES, samples=samples, seed=0, k_means_kwargs={"n_init": 3}
    )
    single, _ = k_means_centroids(centroids=10, ranges=RANGES, samples=samples, seed=0)
    assert inertia(samples, best) <= inertia(samples, single)


def test_custom_samples_are_returned():
    samples = np.random.default_rng(5).uniform(0, 1, (300, 2))
    centroids, out = k_means_centroids(centroids=10, ranges=RANGES, samples=samples)
    np.testing.assert_array_equal(out, samples)
    assert np.all((centroids >= 0) & (centroids <= 1))


def _ribs_error(exc_type, **kwargs):
    with pytest.raises(exc_type) as info:
        ribs.archives.k_means_centroids(**kwargs)
    return str(info.value)


def test_samples_wrong_shape():
    kwargs = {"centroids": 5, "ranges": RANGES, "samples": np.zeros((100, 3))}
    message = _ribs_error(ValueError, **kwargs)
    assert "Expected samples to be an array with shape" in message
    with pytest.raises(ValueError, match=re.escape(message)):
        k_means_centroids(**kwargs)


def test_fewer_samples_than_centroids():
    kwargs = {"centroids": 10, "ranges": RANGES, "samples": 5}
    message = _ribs_error(ValueError, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        k_means_centroids(**kwargs)


def test_unknown_kwarg():
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        k_means_centroids(centroids=2, ranges=RANGES, samples=10, k_means_kwargs={"foo": 1})


def test_invalid_init():
    with pytest.raises(ValueError, match="init should be"):
        k_means_centroids(centroids=2, ranges=RANGES, samples=10, k_means_kwargs={"init": "bogus"})
