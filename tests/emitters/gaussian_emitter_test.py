"""Tests for GaussianEmitter, with differential checks against pyribs."""

import pickle

import numpy as np
import pytest
import ribs.emitters

from ribsax.archives import GridArchive
from ribsax.emitters import GaussianEmitter
from tests.emitters.emitter_helpers import assert_same_error, fill, grid_pair


def _both(kwargs, solution_dim=3):
    ribs_archive, archive = grid_pair(solution_dim=solution_dim)
    return (
        lambda: ribs.emitters.GaussianEmitter(ribs_archive, **kwargs),
        lambda: GaussianEmitter(archive, **kwargs),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma": 1.0},
        {"sigma": 1.0, "x0": np.zeros(3), "initial_solutions": np.zeros((2, 3))},
        {"sigma": 1.0, "x0": np.zeros(4)},
        {"sigma": 1.0, "initial_solutions": np.zeros((2, 4))},
        {"sigma": 1.0, "initial_solutions": np.zeros(3)},
        {"sigma": 1.0, "x0": np.zeros(3), "bounds": [(0, 1)] * 3, "lower_bounds": np.zeros(3)},
    ],
    ids=["neither", "both", "x0_shape", "init_shape", "init_1d", "bounds"],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


def test_properties_match_ribs():
    make_ribs, make = _both({"sigma": [0.1, 0.2, 0.3], "x0": [1, 2, 3], "batch_size": 7})
    expected, emitter = make_ribs(), make()
    np.testing.assert_array_equal(emitter.sigma, expected.sigma)
    assert emitter.sigma.dtype == expected.sigma.dtype
    np.testing.assert_array_equal(emitter.x0, expected.x0)
    assert emitter.x0.dtype == expected.x0.dtype
    assert emitter.initial_solutions is None
    assert emitter.batch_size == expected.batch_size == 7


def test_initial_solutions_returned_clipped_while_empty():
    init = np.array([[-2.0, 0.5, 3.0], [0.0, 0.0, 0.0]])
    kwargs = {"sigma": 1.0, "initial_solutions": init, "bounds": [(-1, 1)] * 3}
    make_ribs, make = _both(kwargs)
    expected, emitter = make_ribs(), make()
    np.testing.assert_array_equal(emitter.ask(), expected.ask())
    np.testing.assert_array_equal(emitter.initial_solutions, init)
    assert emitter.x0 is None


def test_x0_while_empty_and_zero_sigma_gives_x0():
    _, archive = grid_pair()
    emitter = GaussianEmitter(archive, sigma=0.0, x0=[0.1, 0.2, 0.3], batch_size=4)
    np.testing.assert_array_equal(emitter.ask(), np.tile([0.1, 0.2, 0.3], (4, 1)))


def test_zero_sigma_returns_archive_elites():
    _, archive = grid_pair()
    fill(archive, 30)
    emitter = GaussianEmitter(archive, sigma=0.0, x0=np.zeros(3), batch_size=50, seed=1)
    solutions = emitter.ask()
    elites = archive.data("solution")
    assert solutions.shape == (50, 3)
    # Every solution is one of the elites, and several distinct elites are used.
    matches = np.all(solutions[:, None, :] == elites[None], axis=2)
    assert np.all(matches.any(axis=1))
    assert len(np.unique(solutions, axis=0)) > 5


def test_per_dimension_zero_sigma():
    _, archive = grid_pair()
    emitter = GaussianEmitter(archive, sigma=[0.0, 1.0, 0.0], x0=np.ones(3), batch_size=100, seed=2)
    solutions = emitter.ask()
    np.testing.assert_array_equal(solutions[:, [0, 2]], 1.0)
    assert solutions[:, 1].std() > 0.5


def test_noise_scale():
    _, archive = grid_pair()
    emitter = GaussianEmitter(archive, sigma=0.5, x0=np.zeros(3), batch_size=4000, seed=3)
    solutions = emitter.ask()
    assert abs(solutions.std() - 0.5) < 0.02
    assert abs(solutions.mean()) < 0.02


def test_clipping_to_bounds():
    _, archive = grid_pair()
    fill(archive, 30)
    emitter = GaussianEmitter(
        archive,
        sigma=5.0,
        x0=np.zeros(3),
        batch_size=200,
        bounds=[(-0.5, 0.5), None, (0, None)],
        seed=4,
    )
    solutions = emitter.ask()
    assert solutions[:, 0].min() == -0.5 and solutions[:, 0].max() == 0.5
    assert solutions[:, 2].min() == 0.0
    assert solutions[:, 1].min() < -0.5


def test_negative_sigma_raises_at_ask_like_ribs():
    make_ribs, make = _both({"sigma": -1.0, "x0": np.zeros(3)})
    assert_same_error(lambda: make_ribs().ask(), lambda: make().ask())


@pytest.mark.parametrize("solution_dim", [(2, 3), (4,)])
def test_multidimensional_solutions(solution_dim):
    archive = GridArchive(solution_dim=solution_dim, dims=[5, 5], ranges=[(-1, 1)] * 2)
    emitter = GaussianEmitter(
        archive,
        sigma=0.1,
        x0=np.zeros(solution_dim),
        lower_bounds=np.full(solution_dim, -0.05),
        batch_size=6,
        seed=0,
    )
    solutions = emitter.ask()
    assert solutions.shape == (6, *solution_dim)
    assert solutions.min() >= -0.05
    fill(archive, 10)
    assert emitter.ask().shape == (6, *solution_dim)


def test_same_seed_same_solutions_and_dtype():
    _, archive = grid_pair(dtype=np.float32)
    fill(archive, 10)
    first = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(3), seed=42).ask()
    second = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(3), seed=42).ask()
    np.testing.assert_array_equal(first, second)
    assert first.dtype == np.float32
    assert first.flags.writeable


def test_seed_sequence_accepted_and_stream_advances():
    _, archive = grid_pair()
    emitter = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(3), seed=np.random.SeedSequence(5))
    assert not np.array_equal(emitter.ask(), emitter.ask())


def test_shapes_match_ribs_after_fill():
    ribs_archive, archive = grid_pair()
    fill(ribs_archive, 10)
    fill(archive, 10)
    expected = ribs.emitters.GaussianEmitter(
        ribs_archive, sigma=0.1, x0=np.zeros(3), batch_size=9
    ).ask()
    ours = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(3), batch_size=9).ask()
    assert ours.shape == expected.shape and ours.dtype == expected.dtype


def test_pickle_roundtrip_continues_stream():
    _, archive = grid_pair()
    emitter = GaussianEmitter(archive, sigma=0.1, x0=np.zeros(3), seed=9)
    emitter.ask()
    clone = pickle.loads(pickle.dumps(emitter))
    np.testing.assert_array_equal(clone.ask(), emitter.ask())


def _archive_kinds():
    from ribsax.archives import ProximityArchive, SlidingBoundariesArchive

    return {
        "grid": lambda: GridArchive(solution_dim=3, dims=(10, 10), ranges=[(-1, 1), (-1, 1)]),
        # Re-partitions every 2 additions, rebuilding its store's order.
        "sliding": lambda: SlidingBoundariesArchive(
            solution_dim=3,
            dims=(10, 10),
            ranges=[(-1, 1), (-1, 1)],
            remap_frequency=2,
            buffer_capacity=100,
        ),
        # Starts with 8 entries and grows its store.
        "proximity": lambda: ProximityArchive(
            solution_dim=3, measure_dim=2, k_neighbors=1, novelty_threshold=0.05, initial_capacity=8
        ),
    }


@pytest.mark.parametrize("kind", ["grid", "sliding", "proximity"])
def test_parents_are_drawn_uniformly_from_the_current_elites(kind):
    """With sigma = 0 the solutions are the sampled parents: across adds with
    duplicate cells and improvements, re-partitions, store growth and clear(),
    every parent is a current elite, every elite is drawn, and the counts are
    uniform."""
    from scipy import stats

    archive = _archive_kinds()[kind]()
    rng = np.random.default_rng(5)

    def add_batches(n_batches):
        for _ in range(n_batches):
            solutions = rng.uniform(-1, 1, size=(15, 3))
            # Rows 10-14 repeat the measures of rows 0-4 with other objectives,
            # so cells are hit twice in a batch and improved across batches.
            solutions[10:, :2] = solutions[:5, :2]
            archive.add(solutions, rng.uniform(-1, 1, 15), solutions[:, :2])

    emitter = GaussianEmitter(archive, sigma=0.0, x0=np.zeros(3), batch_size=3000, seed=2)
    for n_batches in (4, 3):
        add_batches(n_batches)
        elites = archive.data("solution")
        parents = emitter.ask()
        matches = np.all(parents[:, None, :] == elites[None], axis=2)
        assert np.all(matches.sum(axis=1) == 1)
        counts = matches.sum(axis=0)
        assert np.all(counts > 0)
        assert stats.chisquare(counts).pvalue > 1e-4
        archive.clear()
