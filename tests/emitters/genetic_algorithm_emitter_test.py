"""Tests for GeneticAlgorithmEmitter, with differential checks against pyribs."""

import numpy as np
import pytest
import ribs.emitters

from ribsax.archives import GridArchive
from ribsax.emitters import GeneticAlgorithmEmitter
from ribsax.emitters.operators import GaussianOperator, IsoLineOperator
from tests.emitters.emitter_helpers import assert_same_error, fill, grid_pair


def _both(kwargs, solution_dim=3):
    ribs_archive, archive = grid_pair(solution_dim=solution_dim)
    return (
        lambda: ribs.emitters.GeneticAlgorithmEmitter(ribs_archive, **kwargs),
        lambda: GeneticAlgorithmEmitter(archive, **kwargs),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"operator": "gaussian", "operator_kwargs": {"sigma": 0.1}},
        {
            "operator": "gaussian",
            "operator_kwargs": {"sigma": 0.1},
            "x0": np.zeros(3),
            "initial_solutions": np.zeros((1, 3)),
        },
        {"operator": "gaussian", "operator_kwargs": {"sigma": 0.1}, "x0": np.zeros(5)},
        {"operator": "foo", "x0": np.zeros(3)},
        {"operator": 3, "x0": np.zeros(3)},
        {"operator": "gaussian", "x0": np.zeros(3)},
    ],
    ids=["neither", "both", "x0_shape", "unknown_op", "not_str", "missing_kwargs"],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


@pytest.mark.parametrize(
    "operator,kwargs,cls",
    [
        ("gaussian", {"sigma": 0.1}, GaussianOperator),
        ("isoline", {"iso_sigma": 0.1, "line_sigma": 0.2}, IsoLineOperator),
    ],
)
def test_operator_and_shapes(operator, kwargs, cls):
    make_ribs, make = _both(
        {"operator": operator, "operator_kwargs": kwargs, "x0": np.zeros(3), "batch_size": 8}
    )
    expected, emitter = make_ribs(), make()
    assert isinstance(emitter.operator, cls)
    assert emitter.batch_size == expected.batch_size == 8
    np.testing.assert_array_equal(emitter.x0, expected.x0)
    assert emitter.ask().shape == expected.ask().shape == (8, 3)
    fill(emitter.archive)
    fill(expected.archive)
    assert emitter.ask().shape == expected.ask().shape == (8, 3)


def test_initial_solutions_clipped_like_ribs():
    kwargs = {
        "operator": "gaussian",
        "operator_kwargs": {"sigma": 0.1},
        "initial_solutions": [[3.0, -3.0, 0.0]],
        "bounds": [(-1, 1)] * 3,
    }
    make_ribs, make = _both(kwargs)
    np.testing.assert_array_equal(make().ask(), make_ribs().ask())


def test_zero_sigma_gaussian_returns_elites():
    _, archive = grid_pair()
    fill(archive, 15)
    emitter = GeneticAlgorithmEmitter(
        archive,
        operator="gaussian",
        operator_kwargs={"sigma": 0.0},
        x0=np.zeros(3),
        batch_size=20,
        seed=0,
    )
    solutions = emitter.ask()
    elites = archive.data("solution")
    assert np.all(np.all(solutions[:, None] == elites[None], axis=2).any(axis=1))


def test_isoline_uses_two_parents_and_clips():
    _, archive = grid_pair()
    fill(archive, 15)
    emitter = GeneticAlgorithmEmitter(
        archive,
        operator="isoline",
        operator_kwargs={"iso_sigma": 0.0, "line_sigma": 10.0},
        x0=np.zeros(3),
        bounds=[(-0.2, 0.2)] * 3,
        batch_size=50,
        seed=0,
    )
    solutions = emitter.ask()
    assert solutions.min() == -0.2 and solutions.max() == 0.2


def test_multidimensional_isoline_keeps_shape():
    archive = GridArchive(solution_dim=(2, 3), dims=[4, 4], ranges=[(-1, 1)] * 2)
    fill(archive, 10)
    emitter = GeneticAlgorithmEmitter(
        archive,
        operator="isoline",
        operator_kwargs={"iso_sigma": 0.1, "line_sigma": 0.1},
        x0=np.zeros((2, 3)),
        lower_bounds=np.zeros((2, 3)),
        batch_size=4,
    )
    solutions = emitter.ask()
    assert solutions.shape == (4, 2, 3)
    assert solutions.min() >= 0


def test_seed_reproducible():
    _, archive = grid_pair()
    fill(archive)
    make = lambda: GeneticAlgorithmEmitter(  # noqa: E731
        archive, operator="gaussian", operator_kwargs={"sigma": 0.3}, x0=np.zeros(3), seed=11
    )
    np.testing.assert_array_equal(make().ask(), make().ask())
