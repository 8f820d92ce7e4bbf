"""Tests for cqd_score.

``ribs.archives.cqd_score`` only reads ``archive.data(...)`` and
``archive.measure_dim``, so both functions are called on the *same* ribsax archive and
their results compared. The final sums follow pyribs' order, but XLA may fuse a
multiply and an add into one FMA inside the kernel, so scores are compared to a
relative 1e-12 (1e-5 where pyribs itself computes distances in float32).
"""

import dataclasses

import numpy as np
import pytest
import ribs.archives

from ribsax.archives import (
    CQDScoreResult,
    GridArchive,
    ProximityArchive,
    SlidingBoundariesArchive,
    _cqd_score,
    cqd_score,
)


def _grid(dtype=np.float64, measure_dim=2, n=200, seed=0):
    dims = [8, 8] if measure_dim == 2 else [2] * measure_dim
    archive = GridArchive(solution_dim=2, dims=dims, ranges=[(-1, 1)] * measure_dim, dtype=dtype)
    rng = np.random.default_rng(seed)
    archive.add(
        rng.normal(size=(n, 2)), rng.normal(size=n), rng.uniform(-1, 1, size=(n, measure_dim))
    )
    return archive


def _kwargs(archive, iterations=3, n_targets=20, seed=1, **kwargs):
    rng = np.random.default_rng(seed)
    kwargs.setdefault("penalties", 4)
    kwargs.setdefault("obj_min", -3.0)
    kwargs.setdefault("obj_max", 3.0)
    kwargs.setdefault("dist_max", 2 * np.sqrt(archive.measure_dim))
    return {
        "iterations": iterations,
        "target_points": rng.uniform(-1, 1, size=(iterations, n_targets, archive.measure_dim)),
        **kwargs,
    }


def _assert_same_result(ours, theirs, rtol=1e-12):
    assert isinstance(ours, CQDScoreResult)
    np.testing.assert_allclose(ours.scores, theirs.scores, rtol=rtol)
    assert ours.scores.dtype == theirs.scores.dtype == np.float64
    np.testing.assert_allclose(ours.mean, theirs.mean, rtol=rtol)
    assert type(ours.mean) is type(theirs.mean)
    assert ours.iterations == theirs.iterations
    np.testing.assert_array_equal(ours.target_points, theirs.target_points)
    np.testing.assert_array_equal(ours.penalties, theirs.penalties)
    assert ours.penalties.dtype == theirs.penalties.dtype
    for name in ["obj_min", "obj_max", "dist_max", "dist_ord"]:
        assert getattr(ours, name) == getattr(theirs, name)


def test_result_fields_match_pyribs():
    ours = [f.name for f in dataclasses.fields(CQDScoreResult)]
    theirs = [f.name for f in dataclasses.fields(ribs.archives.CQDScoreResult)]
    assert (
        ours
        == theirs
        == [
            "iterations",
            "mean",
            "scores",
            "target_points",
            "penalties",
            "obj_min",
            "obj_max",
            "dist_max",
            "dist_ord",
        ]
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dist_ord", [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5])
def test_matches_pyribs(dtype, dist_ord):
    archive = _grid(dtype)
    kwargs = _kwargs(archive, dist_ord=dist_ord)
    _assert_same_result(cqd_score(archive, **kwargs), ribs.archives.cqd_score(archive, **kwargs))


@pytest.mark.parametrize(
    "penalties", [5, np.array([0.0, 0.3, 1.0]), [0, 1], np.array([0.5], dtype=np.float32)]
)
def test_penalties_match_pyribs(penalties):
    archive = _grid(np.float32)
    kwargs = _kwargs(archive, penalties=penalties)
    _assert_same_result(cqd_score(archive, **kwargs), ribs.archives.cqd_score(archive, **kwargs))


def test_numpy_scalar_normalisers_match_pyribs():
    archive = _grid(np.float32)
    kwargs = _kwargs(archive, obj_min=np.float32(-2), obj_max=np.float64(4), dist_max=np.float32(3))
    kwargs["target_points"] = kwargs["target_points"].astype(np.float32)
    _assert_same_result(
        cqd_score(archive, **kwargs), ribs.archives.cqd_score(archive, **kwargs), rtol=1e-5
    )


def test_high_dimensional_measures_match_pyribs():
    # Nine measure dimensions exercise NumPy's pairwise summation order.
    archive = _grid(measure_dim=9, n=100)
    kwargs = _kwargs(archive, n_targets=7)
    _assert_same_result(cqd_score(archive, **kwargs), ribs.archives.cqd_score(archive, **kwargs))


def test_works_with_sliding_boundaries_archive():
    archive = SlidingBoundariesArchive(
        solution_dim=2, dims=[5, 5], ranges=[(-1, 1), (-1, 1)], remap_frequency=20
    )
    rng = np.random.default_rng(3)
    archive.add(rng.normal(size=(70, 2)), rng.normal(size=70), rng.uniform(-1, 1, size=(70, 2)))
    kwargs = _kwargs(archive, iterations=2)
    _assert_same_result(cqd_score(archive, **kwargs), ribs.archives.cqd_score(archive, **kwargs))


def test_objective_quirk_by_hand():
    # One elite with objective 3 at the origin, one target at distance 1, penalty 1:
    # score = 3 / (4 - 2) - 1 * 1 / 2 = 1.0 (obj_min is not subtracted first).
    archive = GridArchive(solution_dim=1, dims=[2, 2], ranges=[(-1, 1), (-1, 1)])
    archive.add([[0.0]], [3.0], [[0.0, 0.0]])
    result = cqd_score(
        archive,
        iterations=1,
        target_points=[[[1.0, 0.0]]],
        penalties=[1.0],
        obj_min=2.0,
        obj_max=4.0,
        dist_max=2.0,
    )
    np.testing.assert_array_equal(result.scores, [1.0])
    assert result.mean == 1.0


def test_chunked_iterations_match(monkeypatch):
    archive = _grid()
    kwargs = _kwargs(archive, iterations=5)
    expected = ribs.archives.cqd_score(archive, **kwargs)
    # A tiny budget forces one iteration per chunk.
    monkeypatch.setattr(_cqd_score, "_CHUNK_ELEMENTS", 1)
    _assert_same_result(cqd_score(archive, **kwargs), expected)


def test_vectorised_penalties_match_sequential():
    rng = np.random.default_rng(4)
    args = (
        np.concatenate([rng.normal(size=10), [-np.inf] * 6]),
        rng.normal(size=(16, 2)),
        rng.normal(size=(3, 5, 2)),
        np.linspace(0, 1, 4),
        np.float64(2.0),
    )
    sequential = _cqd_score.cqd_target_maxima(*args, penalty_batch=1)
    vectorised = _cqd_score.cqd_target_maxima(*args, penalty_batch=None)
    np.testing.assert_allclose(sequential, vectorised, rtol=1e-12)
    assert sequential.shape == (3, 4, 5)
    # Padding rows (objective -inf) never win.
    unpadded = _cqd_score.cqd_target_maxima(args[0][:10], args[1][:10], *args[2:])
    np.testing.assert_allclose(sequential, unpadded, rtol=1e-12)
    # Direct NumPy evaluation of the definition.
    dist = np.linalg.norm(args[1][None, :10, None] - args[2][:, None], axis=3) / 2.0
    expected = np.max(
        args[0][None, None, :10, None] - args[3][None, :, None, None] * dist[:, None], axis=2
    )
    np.testing.assert_allclose(sequential, expected, rtol=1e-12)


def test_copies_inputs():
    archive = _grid()
    kwargs = _kwargs(archive, penalties=np.array([0.0, 1.0]))
    result = cqd_score(archive, **kwargs)
    assert result.target_points is not kwargs["target_points"]
    assert result.penalties is not kwargs["penalties"]


def test_zero_iterations():
    archive = _grid()
    kwargs = _kwargs(archive, iterations=0)
    with pytest.warns(RuntimeWarning):
        ours = cqd_score(archive, **kwargs)
    with pytest.warns(RuntimeWarning):
        theirs = ribs.archives.cqd_score(archive, **kwargs)
    assert ours.scores.shape == theirs.scores.shape == (0,)
    assert np.isnan(ours.mean) and np.isnan(theirs.mean)


# =====================================================================================
# Errors.
# =====================================================================================
def _assert_same_error(ours, theirs, exc=ValueError):
    with pytest.raises(exc) as ours_err:
        ours()
    with pytest.raises(exc) as theirs_err:
        theirs()
    assert str(ours_err.value) == str(theirs_err.value)
    return str(ours_err.value)


@pytest.mark.parametrize("shape", [(3, 20), (2, 20, 2), (3, 20, 3), (3, 1, 20, 2)])
def test_target_points_shape_error(shape):
    archive = _grid()
    kwargs = _kwargs(archive)
    kwargs["target_points"] = np.zeros(shape)
    msg = _assert_same_error(
        lambda: cqd_score(archive, **kwargs), lambda: ribs.archives.cqd_score(archive, **kwargs)
    )
    assert msg.startswith("Expected target_points to be a 3D array with shape (3, n, 2)")


def test_penalties_shape_error():
    archive = _grid()
    kwargs = _kwargs(archive, penalties=np.zeros((2, 2)))
    msg = _assert_same_error(
        lambda: cqd_score(archive, **kwargs), lambda: ribs.archives.cqd_score(archive, **kwargs)
    )
    assert msg.startswith("Expected penalties to be a 1D array")


@pytest.mark.parametrize("dist_ord", ["fro", "nuc"])
def test_string_norm_order_error(dist_ord):
    archive = _grid()
    kwargs = _kwargs(archive, dist_ord=dist_ord)
    _assert_same_error(
        lambda: cqd_score(archive, **kwargs), lambda: ribs.archives.cqd_score(archive, **kwargs)
    )


def test_empty_archive_error():
    archive = GridArchive(solution_dim=2, dims=[8, 8], ranges=[(-1, 1)] * 2)
    kwargs = _kwargs(archive)
    _assert_same_error(
        lambda: cqd_score(archive, **kwargs), lambda: ribs.archives.cqd_score(archive, **kwargs)
    )


@pytest.mark.parametrize("local_competition", [False, True])
def test_unstructured_archive_matches_ribs(local_competition):
    """cqd_score reads only data(), so it works on a ProximityArchive as in pyribs."""
    kwargs = {
        "solution_dim": 3,
        "measure_dim": 2,
        "k_neighbors": 3,
        "novelty_threshold": 0.1,
        "local_competition": local_competition,
    }
    ours = ProximityArchive(**kwargs)
    theirs = ribs.archives.ProximityArchive(**kwargs)
    rng = np.random.default_rng(4)
    data = (rng.normal(size=(60, 3)), rng.uniform(0, 1, 60), rng.uniform(-1, 1, size=(60, 2)))
    ours.add(*data)
    theirs.add(*data)
    targets = rng.uniform(-1, 1, size=(2, 10, 2))
    args = {
        "iterations": 2,
        "target_points": targets,
        "penalties": 3,
        "obj_min": 0.0,
        "obj_max": 1.0,
        "dist_max": 2.0,
    }
    result = cqd_score(ours, **args)
    expected = ribs.archives.cqd_score(theirs, **args)
    np.testing.assert_allclose(result.scores, expected.scores, rtol=1e-12)
    np.testing.assert_allclose(result.mean, expected.mean, rtol=1e-12)
