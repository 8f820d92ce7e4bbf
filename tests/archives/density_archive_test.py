"""DensityArchive: differential tests against ribs.archives.DensityArchive."""

import numpy as np
import pytest
from ribs.archives import DensityArchive as RibsDensityArchive

from ribsax.archives import DensityArchive, GridArchive
from ribsax.emitters import EvolutionStrategyEmitter
from ribsax.schedulers import Scheduler
from tests.compile_counter import count_compilations


def both(**kwargs):
    kwargs = {"measure_dim": 2, "buffer_size": 30, "bandwidth": 0.7, "seed": 5, **kwargs}
    return DensityArchive(**kwargs), RibsDensityArchive(**kwargs)


@pytest.mark.parametrize(
    "method,kwargs", [("kde", {}), ("kde_sklearn", {"sklearn_kwargs": {"kernel": "gaussian"}})]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_densities_and_reservoir_match_ribs(method, kwargs, dtype):
    """Densities before each update and the buffer (filling, then reservoir sampling
    with pyribs' draws and quirks) over many batches."""
    ours, theirs = both(density_method=method, dtype=dtype, **kwargs)
    rng = np.random.default_rng(0)
    for size in (0, 7, 20, 13, 40, 40, 40):
        measures = rng.uniform(-2, 2, size=(size, 2))
        info = ours.add(None, None, measures)
        ref = theirs.add(None, None, measures)
        np.testing.assert_array_equal(info["status"], ref["status"])
        assert info["status"].dtype == ref["status"].dtype
        np.testing.assert_allclose(
            info["density"], ref["density"], rtol=1e-5 if dtype == np.float32 else 1e-12
        )
        assert info["density"].dtype == ref["density"].dtype
        np.testing.assert_array_equal(ours.buffer, theirs.buffer)
    assert len(ours.buffer) == 30
    query = rng.uniform(-2, 2, size=(5, 2))
    np.testing.assert_allclose(
        ours.compute_density(query), theirs.compute_density(query), rtol=1e-5
    )


def test_interface_matches_ribs():
    ours, theirs = both()
    assert ours.empty is theirs.empty is False
    assert ours.solution_dim == theirs.solution_dim == 0
    with pytest.raises(ValueError):
        ours.buffer[:] = 0
    for archive in (ours, theirs):
        with pytest.raises(NotImplementedError):
            len(archive)
        with pytest.raises(NotImplementedError):
            _ = archive.stats
    for bad in (np.zeros((2, 3)), np.array([[np.nan, 0.0]])):
        errors = []
        for archive in (ours, theirs):
            with pytest.raises(ValueError) as err:
                archive.add(None, None, bad)
            errors.append(str(err.value))
        assert errors[0] == errors[1]


def test_unknown_and_unimplemented_methods():
    errors = []
    for cls in (DensityArchive, RibsDensityArchive):
        with pytest.raises(ValueError) as err:
            cls(measure_dim=2, density_method="histogram")
        errors.append(str(err.value))
    assert errors[0] == errors[1] == "Unknown density_method 'histogram'"


# DDS-CNF. pyribs' flow needs torch and zuko (not installed here), and its weights and
# mini-batches come from torch's generator, so these tests check the flow's
# behaviour: a normalised density that learns the buffer, fitted at pyribs' moments.

CNF_SMALL = {"hidden_features": (16, 16), "steps": 6}


def cnf_archive(**kwargs):
    kwargs = {
        "measure_dim": 2,
        "buffer_size": 400,
        "density_method": "cnf",
        "cnf_kwargs": CNF_SMALL,
        "cnf_min_buffer_size": 64,
        "seed": 3,
        **kwargs,
    }
    return DensityArchive(**kwargs)


def test_cnf_is_untrained_until_the_buffer_holds_min_buffer_size():
    archive = cnf_archive(cnf_min_buffer_size=70)
    rng = np.random.default_rng(0)
    first = archive.add(None, None, rng.normal(size=(40, 2)))
    np.testing.assert_array_equal(first["density"], np.zeros(40))
    np.testing.assert_array_equal(archive.compute_density(rng.normal(size=(40, 2))), np.zeros(40))
    # 40 + 40 rows: the flow is fitted at the end of this add, not before it.
    second = archive.add(None, None, rng.normal(size=(40, 2)))
    np.testing.assert_array_equal(second["density"], np.zeros(40))
    assert np.all(archive.compute_density(rng.normal(size=(40, 2))) != 0)
    np.testing.assert_array_equal(second["status"], np.full(40, 2, np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cnf_learns_a_normalised_log_density_of_the_buffer(dtype):
    archive = cnf_archive(dtype=dtype, cnf_lr=1e-2)
    rng = np.random.default_rng(1)
    center, scale = np.array([1.0, -1.0]), 0.4
    for _ in range(30):
        archive.add(None, None, rng.normal(center, scale, size=(40, 2)))
    grid = np.linspace(-4, 4, 161)
    points = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    log_density = archive.compute_density(points)
    assert log_density.dtype == dtype
    # A change of variables to a standard normal: the density integrates to one.
    integral = np.exp(log_density).sum() * (grid[1] - grid[0]) ** 2
    assert integral == pytest.approx(1.0, abs=0.02)
    # And it has learned where the buffer is: its log likelihood of fresh points from
    # the buffer's distribution is near the true one (that of the normal itself).
    fresh = rng.normal(center, scale, size=(500, 2))
    true_mean = -np.log(2 * np.pi * scale**2) - 1.0
    learned_mean = archive.compute_density(fresh).mean()
    assert learned_mean == pytest.approx(true_mean, abs=0.35)
    assert learned_mean > archive.compute_density(-fresh).mean() + 5


def test_cnf_is_deterministic_under_its_seed():
    rng = np.random.default_rng(2)
    batches = [rng.uniform(-1, 1, size=(40, 2)) for _ in range(3)]
    query = rng.uniform(-1, 1, size=(40, 2))
    results = []
    for seed in (3, 3, 4):
        archive = cnf_archive(seed=seed)
        for batch in batches:
            archive.add(None, None, batch)
        results.append(archive.compute_density(query))
    assert results[0].shape == (40,)
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.allclose(results[0], results[2])


def test_cnf_adds_compile_once():
    rng = np.random.default_rng(3)
    archive = cnf_archive(seed=7)
    for _ in range(3):
        archive.add(None, None, rng.normal(size=(40, 2)))
    with count_compilations() as compiled:
        for size in (40, 40, 40, 40):
            archive.add(None, None, rng.normal(size=(size, 2)))
    assert compiled.count == 0


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (
            {"cnf_kwargs": {"features": 3}},
            ValueError,
            "`features` cannot be provided in cnf_kwargs; it is set automatically from "
            "measure_dim.",
        ),
        ({"cnf_kwargs": {"atol": 1e-5}}, TypeError, r"unsupported keys \['atol'\]"),
        ({"cnf_kwargs": {"exact": False}}, ValueError, r"cnf_kwargs\['exact'\]"),
        ({"cnf_kwargs": {"steps": 0}}, ValueError, r"cnf_kwargs\['steps'\]"),
        ({"cnf_kwargs": {"hidden_features": (8, 0)}}, ValueError, "hidden_features"),
        ({"cnf_lr": 0.0}, ValueError, "cnf_lr"),
        ({"cnf_batch_size": 0}, ValueError, "cnf_batch_size"),
        ({"cnf_device": "nonexistent"}, ValueError, "device"),
    ],
)
def test_cnf_options_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        cnf_archive(**kwargs)


def test_cnf_drives_density_descent_in_a_scheduler():
    """DDS-CNF end to end: emitters rank by low log density of the flow; the result
    archive keeps the elites."""
    archive = cnf_archive()
    result = GridArchive(solution_dim=4, dims=[10, 10], ranges=[(-2, 2), (-2, 2)])
    emitters = [
        EvolutionStrategyEmitter(
            result, x0=np.zeros(4), sigma0=0.5, ranker="density", batch_size=20, seed=s
        )
        for s in range(2)
    ]
    scheduler = Scheduler(archive, emitters, result_archive=result)
    for _ in range(3):
        solutions = scheduler.ask()
        scheduler.tell(-np.sum(solutions**2, axis=1), solutions[:, :2])
    assert archive._cnf.fitted
    assert len(archive.buffer) == 120
    assert 0 < len(result) <= 100
