"""Tests for ribsax.archives.CVTArchive, differential against ribs.archives.CVTArchive."""

import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import CVTArchive
from ribsax.archives._nearest import blocked_nearest, cosine_nearest, make_blocks

RANGES = [(-1.0, 1.0), (-2.0, 2.0)]
NUM_CENTROIDS = 40
SOLUTION_DIM = 3
NEAREST = ["scipy_kd_tree", "brute_force", "sklearn_nn"]


def make_centroids(num=NUM_CENTROIDS, ranges=RANGES, seed=0):
    lower, upper = np.array(ranges).T
    return np.random.default_rng(seed).uniform(lower, upper, (num, len(ranges)))


def brute_nearest_np(measures, centroids):
    """Lowest-index nearest centroid, with float64 distances."""
    diff = measures[:, None, :].astype(np.float64) - centroids[None].astype(np.float64)
    return np.argmin(np.sum(diff**2, axis=2), axis=1)


def measures_batch(rng, batch, ranges=RANGES, dtype=np.float64):
    """Points inside the ranges, just outside, and far outside."""
    lower, upper = np.array(ranges).T
    extent = upper - lower
    inside = rng.uniform(lower, upper, (batch, len(ranges)))
    near = rng.uniform(lower - 0.5 * extent, upper + 0.5 * extent, (batch, len(ranges)))
    far = rng.uniform(lower - 20 * extent, upper + 20 * extent, (batch // 4 + 1, len(ranges)))
    return np.concatenate([inside, near, far]).astype(dtype)


def both(**kwargs):
    """The same archive in ribsax and ribs."""
    return CVTArchive(**kwargs), ribs.archives.CVTArchive(**kwargs)


def ribs_error(exc_type, **kwargs):
    with pytest.raises(exc_type) as info:
        ribs.archives.CVTArchive(**kwargs)
    return str(info.value)


# ---------------------------------------------------------------------------
# Constructor.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["cells", "custom_centroids", "centroid_method", "use_kd_tree", "ckdtree_kwargs"]
)
def test_deprecated_kwargs(name):
    kwargs = {
        "solution_dim": 2,
        "centroids": make_centroids(),
        "ranges": RANGES,
        name: 1 if name != "ckdtree_kwargs" else {},
    }
    message = ribs_error(ValueError, **kwargs)
    assert "deprecated in pyribs 0.9.0" in message
    with pytest.raises(ValueError, match=re.escape(message)):
        CVTArchive(**kwargs)


def test_samples_property_raises():
    archive = CVTArchive(solution_dim=2, centroids=make_centroids(), ranges=RANGES)
    with pytest.raises(
        ValueError, match=re.escape("CVTArchive.samples is deprecated in pyribs 0.9.0")
    ):
        _ = archive.samples


def test_unknown_nearest_neighbors():
    kwargs = {
        "solution_dim": 2,
        "centroids": make_centroids(),
        "ranges": RANGES,
        "nearest_neighbors": "foo",
    }
    message = ribs_error(ValueError, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        CVTArchive(**kwargs)


def test_centroids_wrong_shape():
    kwargs = {"solution_dim": 2, "centroids": np.zeros((1, 3)), "ranges": RANGES}
    message = ribs_error(ValueError, **kwargs)
    assert message == (
        "Expected centroids to be an array with shape (num_centroids, 2) "
        "(i.e. shape (num_centroids, measure_dim)) but it had shape "
        "(1, 3)."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        CVTArchive(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold_min": -1.0},
        {"learning_rate": 0.5},
    ],
)
def test_cma_mae_settings_errors(kwargs):
    kwargs = {"solution_dim": 2, "centroids": make_centroids(), "ranges": RANGES, **kwargs}
    message = ribs_error(ValueError, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        CVTArchive(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"nearest_neighbors": "sklearn_nn", "sklearn_nn_kwargs": {"metric": "hamming"}},
            "metric='hamming'",
        ),
        ({"kdtree_query_kwargs": {"distance_upper_bound": 0.5}}, "distance_upper_bound"),
        ({"kdtree_query_kwargs": {"k": 2}}, "k=1"),
        ({"kdtree_kwargs": {"boxsize": 2.0}}, "boxsize"),
    ],
)
def test_unsupported_distance_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        CVTArchive(solution_dim=2, centroids=make_centroids(), ranges=RANGES, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kdtree_query_kwargs": {"p": 1}},
        {"kdtree_query_kwargs": {"p": 3}},
        {"kdtree_query_kwargs": {"p": np.inf}},
        {"nearest_neighbors": "sklearn_nn", "sklearn_nn_kwargs": {"p": 1}},
        {"nearest_neighbors": "sklearn_nn", "sklearn_nn_kwargs": {"metric": "manhattan"}},
        {"nearest_neighbors": "sklearn_nn", "sklearn_nn_kwargs": {"metric": "chebyshev"}},
    ],
)
@pytest.mark.parametrize("measure_dim", [2, 5])
def test_minkowski_distances_match_ribs(kwargs, measure_dim):
    ranges = [(-1.0, 1.0)] * measure_dim
    centroids = make_centroids(80, ranges, seed=measure_dim)
    ours, theirs = both(solution_dim=2, centroids=centroids, ranges=ranges, **kwargs)
    measures = measures_batch(np.random.default_rng(5), 300, ranges=ranges)
    indices = ours.index_of(measures)
    np.testing.assert_array_equal(indices, theirs.index_of(measures))
    # The distance is really used: some points differ from the Euclidean nearest.
    assert np.any(indices != brute_nearest_np(measures, centroids))
    # add places solutions in the same cells as pyribs.
    objective = np.arange(len(measures), dtype=np.float64)
    solution = np.zeros((len(measures), 2))
    ours.add(solution, objective, measures)
    theirs.add(solution, objective, measures)
    np.testing.assert_array_equal(np.sort(ours.data("index")), np.sort(theirs.data("index")))


@pytest.mark.parametrize("p", [0.5, 0])
def test_minkowski_p_below_one_raises_like_scipy(p):
    with pytest.raises(ValueError, match=r"Only p-norms with 1<=p<=infinity permitted"):
        CVTArchive(
            solution_dim=2, centroids=make_centroids(), ranges=RANGES, kdtree_query_kwargs={"p": p}
        )


def test_unknown_sklearn_kwarg_raises_type_error():
    with pytest.raises(TypeError):
        CVTArchive(
            solution_dim=2,
            centroids=make_centroids(),
            ranges=RANGES,
            nearest_neighbors="sklearn_nn",
            sklearn_nn_kwargs={"foo": 1},
        )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_properties_match_ribs(dtype):
    ours, theirs = both(
        solution_dim=SOLUTION_DIM,
        centroids=make_centroids(),
        ranges=RANGES,
        learning_rate=0.1,
        threshold_min=-1.0,
        qd_score_offset=-2.0,
        dtype=dtype,
    )
    assert ours.cells == theirs.cells == NUM_CENTROIDS
    assert ours.measure_dim == 2 and ours.solution_dim == SOLUTION_DIM
    for name in ["centroids", "lower_bounds", "upper_bounds", "interval_size"]:
        ours_value, theirs_value = getattr(ours, name), getattr(theirs, name)
        assert ours_value.dtype == theirs_value.dtype == dtype, name
        np.testing.assert_array_equal(ours_value, theirs_value)
    assert ours.dtypes == theirs.dtypes
    assert ours.field_list == theirs.field_list
    assert ours.learning_rate == theirs.learning_rate
    assert ours.threshold_min == theirs.threshold_min
    assert ours.qd_score_offset == theirs.qd_score_offset
    assert ours.empty and len(ours) == 0 and ours.best_elite is None


def test_generated_centroids():
    kwargs = {"solution_dim": 2, "centroids": 10, "ranges": RANGES, "samples": 300, "seed": 3}
    first, second = CVTArchive(**kwargs), CVTArchive(**kwargs)
    other = CVTArchive(**{**kwargs, "seed": 4})
    assert first.centroids.shape == (10, 2) and first.cells == 10
    np.testing.assert_array_equal(first.centroids, second.centroids)
    assert not np.array_equal(first.centroids, other.centroids)
    lower, upper = np.array(RANGES).T
    assert np.all((first.centroids >= lower) & (first.centroids <= upper))


@pytest.mark.parametrize("as_path", [False, True])
def test_centroids_from_file(tmp_path, as_path):
    centroids = make_centroids()
    path = tmp_path / "centroids.npy"
    np.save(path, centroids)
    archive = CVTArchive(
        solution_dim=2, centroids=path if as_path else str(path), ranges=RANGES, dtype=np.float32
    )
    assert isinstance(path, Path)
    assert archive.centroids.dtype == np.float32
    np.testing.assert_array_equal(archive.centroids, centroids.astype(np.float32))


# ---------------------------------------------------------------------------
# index_of.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nearest_neighbors", NEAREST)
def test_index_of_matches_ribs(nearest_neighbors, dtype):
    ours, theirs = both(
        solution_dim=2,
        centroids=make_centroids(),
        ranges=RANGES,
        nearest_neighbors=nearest_neighbors,
        dtype=dtype,
    )
    measures = measures_batch(np.random.default_rng(1), 200, dtype=dtype)
    indices = ours.index_of(measures)
    assert indices.dtype == np.int32 and indices.shape == (len(measures),)
    np.testing.assert_array_equal(indices, theirs.index_of(measures))
    np.testing.assert_array_equal(indices, brute_nearest_np(measures, ours.centroids))
    assert ours.index_of_single(measures[0]) == theirs.index_of_single(measures[0])


@pytest.mark.parametrize("nearest_neighbors", NEAREST)
def test_index_of_empty_batch(nearest_neighbors):
    archive = CVTArchive(
        solution_dim=2,
        centroids=make_centroids(),
        ranges=RANGES,
        nearest_neighbors=nearest_neighbors,
    )
    indices = archive.index_of(np.zeros((0, 2)))
    assert indices.dtype == np.int32 and indices.shape == (0,)


def test_index_of_options_accepted_like_ribs():
    options = [
        {"kdtree_kwargs": {"leafsize": 3}, "kdtree_query_kwargs": {"eps": 0.0, "workers": 1}},
        {"nearest_neighbors": "brute_force", "chunk_size": 7},
        {
            "nearest_neighbors": "sklearn_nn",
            "sklearn_nn_kwargs": {"algorithm": "ball_tree", "metric": "euclidean"},
        },
    ]
    measures = measures_batch(np.random.default_rng(2), 50)
    for kwargs in options:
        ours, theirs = both(solution_dim=2, centroids=make_centroids(), ranges=RANGES, **kwargs)
        np.testing.assert_array_equal(ours.index_of(measures), theirs.index_of(measures))


def test_cosine_distance():
    kwargs = {
        "solution_dim": 2,
        "centroids": make_centroids(),
        "ranges": RANGES,
        "nearest_neighbors": "sklearn_nn",
        "sklearn_nn_kwargs": {"metric": "cosine"},
    }
    ours, theirs = both(**kwargs)
    measures = measures_batch(np.random.default_rng(3), 200)
    indices = ours.index_of(measures)
    np.testing.assert_array_equal(indices, theirs.index_of(measures))
    # Cosine differs from Euclidean on these points, so the metric is really used.
    assert np.any(indices != brute_nearest_np(measures, ours.centroids))


@pytest.mark.parametrize("dim", [1, 3, 4, 5])
def test_index_of_other_dimensions(dim):
    ranges = [(-1.0, 2.0)] * dim
    centroids = make_centroids(60, ranges, seed=dim)
    ours, theirs = both(solution_dim=2, centroids=centroids, ranges=ranges)
    # Low dimensions use the bucket grid, higher ones the blocked brute force.
    assert ours._index_kind == ("bucket_grid" if dim <= 4 else "brute_force")
    measures = measures_batch(np.random.default_rng(dim), 100, ranges=ranges)
    np.testing.assert_array_equal(ours.index_of(measures), theirs.index_of(measures))
    np.testing.assert_array_equal(ours.index_of(measures), brute_nearest_np(measures, centroids))


def test_index_of_clustered_and_outlying_centroids():
    # Centroids bunched in a corner plus some far outside the ranges, with duplicates
    # (ties must go to the lowest index).
    rng = np.random.default_rng(4)
    centroids = np.concatenate(
        [
            rng.uniform([-1, -2], [-0.8, -1.6], (30, 2)),
            rng.uniform([5, 5], [9, 9], (10, 2)),
        ]
    )
    centroids[5] = centroids[3]
    archive = CVTArchive(solution_dim=2, centroids=centroids, ranges=RANGES)
    measures = np.concatenate([measures_batch(rng, 200), centroids[3:6]])
    np.testing.assert_array_equal(archive.index_of(measures), brute_nearest_np(measures, centroids))
    assert archive.index_of(centroids[5][None])[0] == 3


def test_blocked_nearest_matches_numpy():
    rng = np.random.default_rng(5)
    for dim in (2, 20):
        centroids = rng.normal(size=(37, dim))
        points = rng.normal(size=(50, dim))
        found = np.asarray(blocked_nearest(points, make_blocks(centroids, np.float64)))
        np.testing.assert_array_equal(found, brute_nearest_np(points, centroids))


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_float32_matrix_product_search_is_exact(metric):
    """Above 16 dimensions, block minima come from a matrix product, which must use
    full float32 arithmetic (JAX's default on GPUs is TF32, with 10-bit mantissas).
    Every point whose nearest centroid is clearly nearer than the second (by 1e-5
    relative, far above float32 rounding and far below TF32's) gets it."""
    rng = np.random.default_rng(8)
    dim = 24
    wide_c = rng.normal(size=(4000, dim))
    wide_p = rng.normal(size=(6000, dim)).astype(np.float32).astype(np.float64)
    if metric == "cosine":
        unit = wide_c / np.linalg.norm(wide_c, axis=1, keepdims=True)
        found = cosine_nearest(wide_p.astype(np.float32), make_blocks(unit, np.float32))
        unit = unit.astype(np.float32).astype(np.float64)
        score = wide_p @ unit.T / np.linalg.norm(wide_p, axis=1, keepdims=True)
        score = -score  # Smallest is nearest; gaps are absolute (|score| <= 1).
        scale = 1.0
    else:
        found = blocked_nearest(wide_p.astype(np.float32), make_blocks(wide_c, np.float32))
        wide_c = wide_c.astype(np.float32).astype(np.float64)
        score = (
            np.sum(wide_p**2, axis=1)[:, None]
            - 2 * wide_p @ wide_c.T
            + np.sum(wide_c**2, axis=1)[None]
        )
        scale = np.min(score, axis=1)
    two = np.sort(np.partition(score, 1, axis=1)[:, :2], axis=1)
    clear = (two[:, 1] - two[:, 0]) > 1e-5 * scale
    assert clear.mean() > 0.99
    found = np.asarray(found)
    np.testing.assert_array_equal(found[clear], np.argmin(score, axis=1)[clear])


@pytest.mark.parametrize("measures", [np.zeros((3, 3)), np.zeros(2)])
def test_index_of_wrong_shape(measures):
    ours, theirs = both(solution_dim=2, centroids=make_centroids(), ranges=RANGES)
    with pytest.raises(ValueError) as info:
        theirs.index_of(measures)
    with pytest.raises(ValueError, match=re.escape(str(info.value))):
        ours.index_of(measures)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_index_of_non_finite(bad):
    ours, theirs = both(solution_dim=2, centroids=make_centroids(), ranges=RANGES)
    measures = np.array([[0.0, bad]])
    with pytest.raises(ValueError) as info:
        theirs.index_of(measures)
    with pytest.raises(ValueError, match=re.escape(str(info.value))):
        ours.index_of(measures)
    with pytest.raises(ValueError, match=re.escape(str(info.value))):
        ours.index_of(measures)


# ---------------------------------------------------------------------------
# Insertion and reading, differential.
# ---------------------------------------------------------------------------
def assert_same_contents(ours, theirs, rtol):
    ours_data, theirs_data = ours.data(), theirs.data()
    assert list(ours_data) == list(theirs_data)
    for name in theirs_data:
        assert ours_data[name].dtype == theirs_data[name].dtype, name
        np.testing.assert_allclose(ours_data[name], theirs_data[name], rtol=rtol, err_msg=name)
    ours_stats, theirs_stats = ours.stats, theirs.stats
    assert ours_stats.num_elites == theirs_stats.num_elites
    for name in ["coverage", "qd_score", "norm_qd_score", "obj_max", "obj_mean"]:
        np.testing.assert_allclose(
            getattr(ours_stats, name), getattr(theirs_stats, name), rtol=rtol, err_msg=name
        )
    ours_best, theirs_best = ours.best_elite, theirs.best_elite
    assert ours_best.keys() == theirs_best.keys()
    for name in theirs_best:
        np.testing.assert_allclose(ours_best[name], theirs_best[name], rtol=rtol, err_msg=name)


CMA_SETTINGS = [{}, {"learning_rate": 0.1, "threshold_min": -1.0}]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("settings", CMA_SETTINGS, ids=["map_elites", "cma_mae"])
def test_add_matches_ribs(settings, dtype):
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    ours, theirs = both(
        solution_dim=SOLUTION_DIM,
        centroids=make_centroids(),
        ranges=RANGES,
        dtype=dtype,
        qd_score_offset=-3.0,
        **settings,
    )
    rng = np.random.default_rng(6)
    for _ in range(4):
        measures = measures_batch(rng, 12, dtype=dtype)  # Some far outside the ranges.
        batch = len(measures)
        solution = rng.normal(size=(batch, SOLUTION_DIM)).astype(dtype)
        objective = rng.normal(size=batch).astype(dtype)
        ours_info = ours.add(solution, objective, measures)
        theirs_info = theirs.add(solution, objective, measures)
        np.testing.assert_array_equal(ours_info["status"], theirs_info["status"])
        assert ours_info["status"].dtype == np.int32
        assert ours_info["value"].dtype == theirs_info["value"].dtype
        np.testing.assert_allclose(ours_info["value"], theirs_info["value"], rtol=rtol)
        assert_same_contents(ours, theirs, rtol)

    probe = measures_batch(rng, 40, dtype=dtype)
    ours_occupied, ours_found = ours.retrieve(probe)
    theirs_occupied, theirs_found = theirs.retrieve(probe)
    np.testing.assert_array_equal(ours_occupied, theirs_occupied)
    for name in theirs_found:
        np.testing.assert_allclose(ours_found[name], theirs_found[name], rtol=rtol)
    ours_single = ours.retrieve_single(probe[0])
    theirs_single = theirs.retrieve_single(probe[0])
    assert ours_single[0] == theirs_single[0]
    np.testing.assert_allclose(
        ours_single[1]["objective"], theirs_single[1]["objective"], rtol=rtol
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("settings", CMA_SETTINGS, ids=["map_elites", "cma_mae"])
def test_add_single_matches_ribs(settings, dtype):
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    ours, theirs = both(
        solution_dim=SOLUTION_DIM,
        centroids=make_centroids(),
        ranges=RANGES,
        dtype=dtype,
        **settings,
    )
    rng = np.random.default_rng(7)
    measures = measures_batch(rng, 30, dtype=dtype)
    for i in range(len(measures)):
        solution = rng.normal(size=SOLUTION_DIM).astype(dtype)
        objective = dtype(rng.normal())
        ours_info = ours.add_single(solution, objective, measures[i])
        theirs_info = theirs.add_single(solution, objective, measures[i])
        assert ours_info["status"] == theirs_info["status"]
        np.testing.assert_allclose(ours_info["value"], theirs_info["value"], rtol=rtol)
    assert_same_contents(ours, theirs, rtol)


def test_extra_fields_and_pandas_match_ribs():
    kwargs = {
        "solution_dim": SOLUTION_DIM,
        "centroids": make_centroids(),
        "ranges": RANGES,
        "extra_fields": {"age": ((), np.int32)},
    }
    ours, theirs = both(**kwargs)
    rng = np.random.default_rng(8)
    measures = measures_batch(rng, 12)
    solution = rng.normal(size=(len(measures), SOLUTION_DIM))
    objective = rng.normal(size=len(measures))
    age = np.arange(len(measures), dtype=np.int32)
    ours.add(solution, objective, measures, age=age)
    theirs.add(solution, objective, measures, age=age)
    ours_df = ours.data(return_type="pandas")
    theirs_df = theirs.data(return_type="pandas")
    assert list(ours_df.columns) == list(theirs_df.columns)
    np.testing.assert_allclose(ours_df.to_numpy(), theirs_df.to_numpy())


def test_sample_elites_matches_ribs():
    ours, theirs = both(
        solution_dim=SOLUTION_DIM, centroids=make_centroids(), ranges=RANGES, seed=11
    )
    rng = np.random.default_rng(9)
    measures = measures_batch(rng, 12)
    solution = rng.normal(size=(len(measures), SOLUTION_DIM))
    objective = rng.normal(size=len(measures))
    ours.add(solution, objective, measures)
    theirs.add(solution, objective, measures)
    ours_sample, theirs_sample = ours.sample_elites(8), theirs.sample_elites(8)
    for name in theirs_sample:
        np.testing.assert_allclose(ours_sample[name], theirs_sample[name])


def test_pickle_round_trip():
    archive = CVTArchive(
        solution_dim=SOLUTION_DIM,
        centroids=make_centroids(),
        ranges=RANGES,
        learning_rate=0.1,
        threshold_min=-1.0,
    )
    rng = np.random.default_rng(10)

    def batch():
        measures = measures_batch(rng, 12)
        return (
            rng.normal(size=(len(measures), SOLUTION_DIM)),
            rng.normal(size=len(measures)),
            measures,
        )

    archive.add(*batch())
    copy = pickle.loads(pickle.dumps(archive))
    np.testing.assert_array_equal(copy.centroids, archive.centroids)
    for name, values in archive.data().items():
        np.testing.assert_array_equal(copy.data()[name], values)
    follow_up = batch()
    np.testing.assert_array_equal(copy.add(*follow_up)["status"], archive.add(*follow_up)["status"])
    for name, values in archive.data().items():
        np.testing.assert_array_equal(copy.data()[name], values)
    probe = measures_batch(rng, 30)
    np.testing.assert_array_equal(copy.index_of(probe), archive.index_of(probe))


@pytest.mark.parametrize("nearest_neighbors", NEAREST)
def test_changing_the_callers_centroids_leaves_the_archive_alone(nearest_neighbors):
    """The archive keeps its own copy of the centroids, also when the caller's array is
    aligned so that JAX on CPU could share its memory, and x64 is on (no conversion)."""
    expected = make_centroids()
    buffer = np.empty(expected.size + 8)
    start = (-buffer.ctypes.data % 64) // 8
    centroids = buffer[start : start + expected.size].reshape(expected.shape)
    centroids[...] = expected
    ours = CVTArchive(
        solution_dim=2, centroids=centroids, ranges=RANGES, nearest_neighbors=nearest_neighbors
    )
    theirs = ribs.archives.CVTArchive(
        solution_dim=2,
        centroids=expected.copy(),
        ranges=RANGES,
        nearest_neighbors=nearest_neighbors,
    )
    centroids[...] = 0.0
    measures = measures_batch(np.random.default_rng(5), 100)
    np.testing.assert_array_equal(ours.centroids, expected)
    np.testing.assert_array_equal(ours.index_of(measures), theirs.index_of(measures))
    np.testing.assert_array_equal(ours.index_of(measures), brute_nearest_np(measures, expected))
