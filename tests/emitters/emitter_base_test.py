"""Tests for EmitterBase (bounds handling, default ask/tell) against pyribs."""

import numpy as np
import pytest
import ribs.emitters

from ribsax.emitters import EmitterBase
from ribsax.emitters._emitter_base import validate_add_info
from tests.emitters.emitter_helpers import assert_same_error, grid_pair


def _pair(solution_dim=3, **kwargs):
    ribs_archive, archive = grid_pair(solution_dim=solution_dim)
    return (
        lambda: ribs.emitters.EmitterBase(ribs_archive, solution_dim=solution_dim, **kwargs),
        lambda: EmitterBase(archive, solution_dim=solution_dim, **kwargs),
    )


@pytest.mark.parametrize("solution_dim", [(), 4, (5,), (3, 3)])
def test_default_ask_and_ask_dqd_shapes(solution_dim):
    ribs_make, make = _pair(solution_dim, bounds=None, lower_bounds=None, upper_bounds=None)
    expected, emitter = ribs_make(), make()
    for name in ("ask", "ask_dqd"):
        ours = getattr(emitter, name)()
        theirs = getattr(expected, name)()
        assert ours.shape == theirs.shape
        assert ours.dtype == theirs.dtype


def test_default_tell_is_noop():
    _, make = _pair(bounds=None, lower_bounds=None, upper_bounds=None)
    emitter = make()
    assert emitter.tell(np.zeros((1, 3)), np.zeros(1), np.zeros((1, 2)), {}) is None
    assert (
        emitter.tell_dqd(np.zeros((1, 3)), np.zeros(1), np.zeros((1, 2)), np.zeros((1, 3, 3)), {})
        is None
    )


def test_no_bounds_are_infinite():
    _, make = _pair(bounds=None, lower_bounds=None, upper_bounds=None)
    emitter = make()
    assert np.all(emitter.lower_bounds == -np.inf)
    assert np.all(emitter.upper_bounds == np.inf)
    assert emitter.lower_bounds.dtype == np.float64


def test_bounds_list_matches_ribs():
    bounds = [(-1, 1), None, (None, 3)]
    ribs_make, make = _pair(bounds=bounds, lower_bounds=None, upper_bounds=None)
    expected, emitter = ribs_make(), make()
    np.testing.assert_array_equal(emitter.lower_bounds, expected.lower_bounds)
    np.testing.assert_array_equal(emitter.upper_bounds, expected.upper_bounds)
    np.testing.assert_array_equal(emitter.lower_bounds, [-1, -np.inf, -np.inf])
    np.testing.assert_array_equal(emitter.upper_bounds, [1, np.inf, 3])


def test_lower_upper_bounds_multidim():
    _, make = _pair((2, 2), bounds=None, lower_bounds=-np.ones((2, 2)), upper_bounds=None)
    emitter = make()
    np.testing.assert_array_equal(emitter.lower_bounds, -np.ones((2, 2)))
    np.testing.assert_array_equal(emitter.upper_bounds, np.full((2, 2), np.inf))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bounds": [(0, 1)] * 3, "lower_bounds": np.zeros(3), "upper_bounds": None},
        {"bounds": [(0, 1)] * 3, "lower_bounds": None, "upper_bounds": np.ones(3)},
        {"bounds": [(0, 1)] * 2, "lower_bounds": None, "upper_bounds": None},
        {"bounds": [(0, 1), (0, 1), (0, 1, 2)], "lower_bounds": None, "upper_bounds": None},
        {"bounds": None, "lower_bounds": np.zeros(2), "upper_bounds": None},
        {"bounds": None, "lower_bounds": None, "upper_bounds": np.zeros(4)},
    ],
    ids=["both_lower", "both_upper", "length", "entry", "lower_shape", "upper_shape"],
)
def test_bounds_errors_match_ribs(kwargs):
    ribs_make, make = _pair(**kwargs)
    assert_same_error(ribs_make, make)


def test_validate_add_info_checks():
    info = validate_add_info({"status": [1, 0], "value": [0.5, 0.0], "x": [1, 2]}, 2)
    assert info["status"].dtype.kind == "i"
    with pytest.raises(ValueError, match="Expected status to be a 1D array"):
        validate_add_info({"status": np.zeros((2, 1))}, 2)
    with pytest.raises(ValueError, match="status does not match the batch dimension"):
        validate_add_info({"status": np.zeros(3)}, 2)
    with pytest.raises(ValueError, match="value does not match the batch dimension"):
        validate_add_info({"value": np.zeros(3)}, 2)
    with pytest.raises(ValueError, match="x does not match the batch dimension"):
        validate_add_info({"x": np.zeros(3)}, 2)


def _direct_loop_emitters():
    """Built-in emitters with kernels, each on a fresh archive of its own (name ->
    factory)."""
    from ribsax import emitters
    from ribsax.archives import GridArchive

    def archive():
        return GridArchive(solution_dim=6, dims=(8, 8), ranges=[(-3, 3)] * 2, seed=0)

    x0 = np.zeros(6)
    return {
        "GaussianEmitter": lambda: emitters.GaussianEmitter(
            archive(), sigma=0.5, x0=x0, batch_size=8, seed=1
        ),
        "IsoLineEmitter": lambda: emitters.IsoLineEmitter(archive(), x0=x0, batch_size=8, seed=1),
        "GeneticAlgorithmEmitter": lambda: emitters.GeneticAlgorithmEmitter(
            archive(),
            x0=x0,
            batch_size=8,
            seed=1,
            operator="gaussian",
            operator_kwargs={"sigma": 0.1},
        ),
        "EvolutionStrategyEmitter": lambda: emitters.EvolutionStrategyEmitter(
            archive(), x0=x0, sigma0=0.5, batch_size=8, seed=1
        ),
        "GradientArborescenceEmitter": lambda: emitters.GradientArborescenceEmitter(
            archive(), x0=x0, sigma0=0.5, lr=1.0, batch_size=8, seed=1
        ),
        "GradientOperatorEmitter": lambda: emitters.GradientOperatorEmitter(
            archive(), sigma=0.5, sigma_g=0.5, x0=x0, batch_size=8, seed=1
        ),
    }


@pytest.mark.parametrize("name", list(_direct_loop_emitters()))
def test_emitter_kernels_compile_once_without_a_scheduler(name):
    """An emitter driven directly (ask, archive add, tell) compiles its kernels in
    the first iteration only: its first state, made outside jit, is handed to the
    kernels committed, as their outputs are."""
    from ribsax.examples.sphere import sphere, sphere_jacobian
    from tests.compile_counter import count_compilations

    emitter = _direct_loop_emitters()[name]()
    archive = emitter.archive
    dqd = name in ("GradientArborescenceEmitter", "GradientOperatorEmitter")

    def iteration():
        if dqd:
            solutions = emitter.ask_dqd()
            objective, measures, jacobian = sphere_jacobian(solutions)
            add_info = archive.add(solutions, objective, measures)
            emitter.tell_dqd(solutions, objective, measures, jacobian, add_info)
        solutions = emitter.ask()
        objective, measures = sphere(solutions)[:2]
        add_info = archive.add(solutions, objective, measures)
        emitter.tell(solutions, objective, measures, add_info)

    with count_compilations() as first:
        iteration()
    with count_compilations() as later:
        for _ in range(5):
            iteration()
    assert first.count > 0
    assert later.count == 0, f"compiled after the first iteration: {later.names}"
    assert archive.stats.num_elites > 0
