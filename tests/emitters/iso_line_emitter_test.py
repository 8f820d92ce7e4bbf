"""Tests for IsoLineEmitter, with differential checks against pyribs."""

import numpy as np
import pytest
import ribs.emitters

from ribsax.archives import GridArchive
from ribsax.emitters import IsoLineEmitter
from tests.emitters.emitter_helpers import assert_same_error, fill, grid_pair


def _both(kwargs, solution_dim=3):
    ribs_archive, archive = grid_pair(solution_dim=solution_dim)
    return (
        lambda: ribs.emitters.IsoLineEmitter(ribs_archive, **kwargs),
        lambda: IsoLineEmitter(archive, **kwargs),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"x0": np.zeros(3), "initial_solutions": np.zeros((2, 3))},
        {"x0": np.zeros(2)},
        {"initial_solutions": np.zeros((2, 2))},
        {"x0": np.zeros(3), "bounds": [(0, 1)] * 4},
    ],
    ids=["neither", "both", "x0_shape", "init_shape", "bounds_length"],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


def test_defaults_and_properties_match_ribs():
    make_ribs, make = _both({"x0": np.zeros(3)})
    expected, emitter = make_ribs(), make()
    assert emitter.iso_sigma == expected.iso_sigma == np.float64(0.01)
    assert emitter.line_sigma == expected.line_sigma == np.float64(0.2)
    assert emitter.iso_sigma.dtype == expected.iso_sigma.dtype
    assert emitter.batch_size == expected.batch_size == 64
    np.testing.assert_array_equal(emitter.x0, expected.x0)


def test_initial_solutions_while_empty():
    init = np.array([[5.0, 0, 0]])
    make_ribs, make = _both({"initial_solutions": init, "upper_bounds": np.ones(3)})
    np.testing.assert_array_equal(make().ask(), make_ribs().ask())


def test_empty_archive_with_x0_has_no_line_term():
    _, archive = grid_pair()
    emitter = IsoLineEmitter(archive, iso_sigma=0.0, line_sigma=1.0, x0=[1, 2, 3], batch_size=5)
    np.testing.assert_array_equal(emitter.ask(), np.tile([1.0, 2, 3], (5, 1)))


def test_zero_iso_gives_points_on_lines_between_elites():
    _, archive = grid_pair()
    fill(archive, 40)
    elites = archive.data("solution")
    emitter = IsoLineEmitter(
        archive, iso_sigma=0.0, line_sigma=0.5, x0=np.zeros(3), batch_size=30, seed=3
    )
    solutions = emitter.ask()
    # Each solution lies on a line through two elites: x = a + t (b - a).
    for sol in solutions:
        found = False
        for a in elites:
            diff = elites - a
            cross = np.cross(diff, sol - a)
            if np.any(
                np.all(np.abs(cross) < 1e-9, axis=1) & np.any(np.abs(diff) > 0, axis=1)
            ) or np.allclose(sol, a):
                found = True
                break
        assert found


def test_zero_sigmas_return_elites():
    _, archive = grid_pair()
    fill(archive, 20)
    emitter = IsoLineEmitter(
        archive, iso_sigma=0.0, line_sigma=0.0, x0=np.zeros(3), batch_size=25, seed=0
    )
    solutions = emitter.ask()
    elites = archive.data("solution")
    assert np.all(np.all(solutions[:, None] == elites[None], axis=2).any(axis=1))


def test_clipping():
    _, archive = grid_pair()
    fill(archive, 20)
    emitter = IsoLineEmitter(
        archive,
        iso_sigma=3.0,
        x0=np.zeros(3),
        batch_size=100,
        lower_bounds=np.full(3, -0.1),
        upper_bounds=np.full(3, 0.1),
        seed=1,
    )
    solutions = emitter.ask()
    assert solutions.min() == -0.1 and solutions.max() == 0.1


def test_negative_line_sigma_raises_like_ribs():
    make_ribs, make = _both({"x0": np.zeros(3), "line_sigma": -1.0})
    assert_same_error(lambda: make_ribs().ask(), lambda: make().ask())


def test_multidimensional_solutions():
    archive = GridArchive(solution_dim=(2, 2), dims=[5, 5], ranges=[(-1, 1)] * 2)
    fill(archive, 10)
    emitter = IsoLineEmitter(archive, x0=np.zeros((2, 2)), batch_size=7, seed=0)
    assert emitter.ask().shape == (7, 2, 2)


def test_shapes_match_ribs():
    ribs_archive, archive = grid_pair()
    fill(ribs_archive)
    fill(archive)
    expected = ribs.emitters.IsoLineEmitter(ribs_archive, x0=np.zeros(3), batch_size=11).ask()
    ours = IsoLineEmitter(archive, x0=np.zeros(3), batch_size=11).ask()
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
