"""Tests for BayesianOptimizationEmitter and its Gaussian process, differential
against pyribs (and scikit-learn, which pyribs' surrogate is)."""

import pickle
import sys
import warnings

import numpy as np
import pytest
import ribs.archives
import ribs.emitters
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Matern

from ribsax.archives import CVTArchive, GridArchive
from ribsax.emitters import BayesianOptimizationEmitter
from ribsax.emitters import _bayesian_opt_emitter as bo_module
from ribsax.emitters._gaussian_process import fit_gp, gp_predict
from tests.emitters.emitter_helpers import assert_same_error, grid_pair

SOLUTION_DIM = 3
BOUNDS = [(-1.0, 1.0)] * SOLUTION_DIM


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, SOLUTION_DIM))
    return x, -np.sum(x**2, axis=1), x[:, :2]


def _targets(x):
    return np.stack([np.sum(x**2, 1), x[:, 0], np.sin(3 * x[:, 1])], axis=1)


# ---------------------------------------------------------------- Gaussian process
@pytest.mark.parametrize("n", [1, 6, 11])
def test_gp_prediction_with_fixed_length_scale_matches_sklearn(n):
    rng = np.random.default_rng(n)
    x, query = rng.uniform(-2, 2, (n, 3)), rng.uniform(-2, 2, (40, 3))
    expected = GaussianProcessRegressor(
        kernel=Matern(length_scale=0.7), normalize_y=True, n_targets=3, optimizer=None
    ).fit(x, _targets(x))
    mean, std = gp_predict(fit_gp(x, _targets(x), np.float64, length_scale=0.7), query)
    want_mean, want_std = expected.predict(query, return_std=True)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(std, want_std, rtol=1e-10, atol=1e-12)


def test_gp_fit_matches_sklearn_optimizer():
    rng = np.random.default_rng(3)
    x, query = rng.uniform(-2, 2, (12, 3)), rng.uniform(-2, 2, (40, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = GaussianProcessRegressor(kernel=Matern(), normalize_y=True, n_targets=3).fit(
            x, _targets(x)
        )
    state = fit_gp(x, _targets(x), np.float64)
    np.testing.assert_allclose(float(state.length_scale), expected.kernel_.length_scale, rtol=1e-8)
    mean, std = gp_predict(state, query)
    want_mean, want_std = expected.predict(query, return_std=True)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(std, want_std, rtol=1e-7, atol=1e-9)


def test_gp_interpolates_training_points():
    x = np.linspace(-1, 1, 5)[:, None]
    y = np.stack([x[:, 0] ** 2, np.cos(x[:, 0])], axis=1)
    mean, std = gp_predict(fit_gp(x, y, np.float64), x)
    np.testing.assert_allclose(mean, y, atol=1e-6)
    assert np.all(std < 1e-3)


# ---------------------------------------------------------------- construction
def _both(kwargs, archive_kwargs=None):
    ribs_archive, archive = grid_pair(solution_dim=SOLUTION_DIM, **(archive_kwargs or {}))
    return (
        lambda: ribs.emitters.BayesianOptimizationEmitter(ribs_archive, **kwargs),
        lambda: BayesianOptimizationEmitter(archive, **kwargs),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_initial_samples": 4},
        {"bounds": [(-1, np.inf)] * 3, "num_initial_samples": 4},
        {"lower_bounds": [-1, -1, -1], "upper_bounds": [1, np.nan, 1], "num_initial_samples": 4},
        {"bounds": BOUNDS},
        {"bounds": BOUNDS, "num_initial_samples": 4, "initial_solutions": np.zeros((2, 3))},
        {"bounds": BOUNDS, "initial_solutions": np.zeros((2, 4))},
        {"bounds": BOUNDS, "initial_solutions": np.zeros(3)},
        {"bounds": BOUNDS, "num_initial_samples": 4, "upscale_schedule": [10, 10]},
        {"bounds": BOUNDS, "num_initial_samples": 4, "upscale_schedule": [[10, 10, 10]]},
        {
            "bounds": BOUNDS,
            "num_initial_samples": 4,
            "upscale_schedule": [[10, 10], [20, 20], [20, 15]],
        },
        {"bounds": BOUNDS, "num_initial_samples": 4, "upscale_schedule": [[5, 5], [10, 10]]},
        {"bounds": [(-1, 1)] * 2, "num_initial_samples": 4},
    ],
    ids=[
        "no_bounds",
        "inf_bounds",
        "nan_upper",
        "no_initial",
        "both_initial",
        "initial_shape",
        "initial_1d",
        "schedule_1d",
        "schedule_columns",
        "schedule_decreasing",
        "schedule_first_row",
        "bounds_length",
    ],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


def test_learning_rate_with_schedule_matches_ribs():
    assert_same_error(
        *_both(
            {"bounds": BOUNDS, "num_initial_samples": 4, "upscale_schedule": [[10, 10], [20, 20]]},
            {"learning_rate": 0.5, "threshold_min": 0.0},
        )
    )


def test_non_grid_archive_matches_ribs():
    centroids = np.array([[0.0, 0.0], [0.5, 0.5], [-0.5, 0.5]])
    kwargs = {"bounds": BOUNDS, "num_initial_samples": 4}
    assert_same_error(
        lambda: ribs.emitters.BayesianOptimizationEmitter(
            ribs.archives.CVTArchive(solution_dim=3, centroids=centroids, ranges=[(-1, 1)] * 2),
            **kwargs,
        ),
        lambda: BayesianOptimizationEmitter(
            CVTArchive(solution_dim=3, centroids=centroids, ranges=[(-1, 1)] * 2), **kwargs
        ),
    )


def test_missing_pymoo_raises_ribs_error(monkeypatch):
    for name in ("pymoo.algorithms.soo.nonconvex.pattern", "pymoo.optimize"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(bo_module, "_PYMOO", {})
    assert_same_error(*_both({"bounds": BOUNDS, "num_initial_samples": 4}))


def test_properties_match_ribs():
    kwargs = {
        "bounds": BOUNDS,
        "num_initial_samples": 5,
        "min_obj": -3.0,
        "upscale_schedule": [[10, 10], [20, 20]],
        "batch_size": 2,
        "search_nrestarts": 4,
        "seed": 11,
    }
    make_ribs, make = _both(kwargs)
    expected, emitter = make_ribs(), make()
    for name in (
        "batch_size",
        "cell_prob_cutoff",
        "num_evals",
        "measure_dim",
        "num_sobol_samples",
        "dtype",
        "upscale_trigger_threshold",
        "min_obj",
        "solution_dim",
    ):
        assert getattr(emitter, name) == getattr(expected, name), name
    np.testing.assert_array_equal(emitter.upscale_schedule, expected.upscale_schedule)
    # Same Sobol sequence (scrambled, same seed).
    np.testing.assert_array_equal(emitter.initial_solutions, expected.initial_solutions)
    np.testing.assert_array_equal(emitter.ask(), expected.ask())
    np.testing.assert_array_equal(emitter.lower_bounds, expected.lower_bounds)


def test_seed_sequence_seeds_the_sobol_points():
    def initial(seed):
        _, archive = grid_pair(solution_dim=SOLUTION_DIM)
        return BayesianOptimizationEmitter(
            archive, bounds=BOUNDS, num_initial_samples=4, seed=seed
        ).initial_solutions

    np.testing.assert_array_equal(
        initial(np.random.SeedSequence(5)), initial(np.random.SeedSequence(5))
    )
    assert not np.array_equal(
        initial(np.random.SeedSequence(5)), initial(np.random.SeedSequence(6))
    )


def test_initial_solutions_are_clipped_and_archive_is_settable():
    init = np.array([[2.0, 0.0, -3.0]])
    make_ribs, make = _both({"bounds": BOUNDS, "initial_solutions": init})
    expected, emitter = make_ribs(), make()
    np.testing.assert_array_equal(emitter.ask(), expected.ask())
    _, other = grid_pair(solution_dim=SOLUTION_DIM, dims=(3, 3))
    emitter.archive = other
    assert emitter.archive is other


# ---------------------------------------------------------------- acquisition
def _told_pair(entropy_ejie, n=10, seed=5, **kwargs):
    """pyribs' and ribsax's emitters after one tell of the same ``n`` solutions on
    archives that hold them."""
    ribs_archive, archive = grid_pair(solution_dim=SOLUTION_DIM, dims=(3, 3))
    x, objective, measures = _data(n, seed)
    pair = []
    for arch, module in ((ribs_archive, ribs.emitters), (archive, None)):
        cls = (
            module.BayesianOptimizationEmitter
            if module is not None
            else BayesianOptimizationEmitter
        )
        emitter = cls(
            arch,
            bounds=BOUNDS,
            initial_solutions=x,
            seed=seed,
            entropy_ejie=entropy_ejie,
            min_obj=-3.0,
            **kwargs,
        )
        info = arch.add(x, objective, measures)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            emitter.tell(x, objective, measures, info)
        pair.append(emitter)
    return pair


@pytest.mark.parametrize("entropy_ejie", [False, True], ids=["ejie", "entropy"])
def test_ejie_values_match_ribs(entropy_ejie):
    expected, emitter = _told_pair(entropy_ejie)
    assert emitter.num_evals == expected.num_evals == 10
    assert emitter.cell_prob_cutoff == expected.cell_prob_cutoff
    samples = np.random.default_rng(0).uniform(-1, 1, (200, SOLUTION_DIM))
    want_ejie, want_probs = expected._get_ejie_values(samples)
    ejie, probs = emitter._ejie(samples, emitter._acquisition_context())
    np.testing.assert_allclose(probs, want_probs, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ejie, want_ejie, rtol=1e-6, atol=1e-9)
    assert np.count_nonzero(ejie) > 0


def test_proposals_match_ribs():
    """pyribs' proposals are not reproducible (pymoo 0.6.2's pattern search orders
    its moves with an unseeded generator), so the proposals are compared by their
    EJIE under pyribs' own acquisition, from the same starting points."""
    expected, emitter = _told_pair(True, batch_size=2, search_nrestarts=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = expected.ask()
        got = emitter.ask()
    assert got.shape == want.shape == (2, SOLUTION_DIM)
    assert np.all(got >= -1) and np.all(got <= 1)
    want_ejie = expected._get_ejie_values(want)[0].sum(axis=1)
    got_ejie = expected._get_ejie_values(got)[0].sum(axis=1)
    np.testing.assert_allclose(got_ejie, want_ejie, rtol=1e-2)
    assert got_ejie[0] >= got_ejie[1]
    assert (emitter._misspec, emitter._overspec) == (expected._misspec, expected._overspec)


def test_proposals_are_reproducible_and_survive_pickling():
    emitter = _told_pair(False, search_nrestarts=1)[1]
    copy = pickle.loads(pickle.dumps(emitter))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(copy.ask(), emitter.ask())


def test_ask_without_positive_ejie_raises_clear_error():
    """pyribs' cutoff formula breaks (TypeError from rounding a complex number)
    when the over-specification count outgrows the evaluations; ribsax raises a
    RuntimeError instead. A 2x1 archive whose GP fits a tiny length scale on 4
    points gets there: both cells' probabilities fall below the 0.5 cutoff."""
    archive = GridArchive(solution_dim=2, dims=[2, 1], ranges=[(-1, 1)] * 2)
    emitter = BayesianOptimizationEmitter(
        archive, bounds=[(-1, 1)] * 2, num_initial_samples=4, search_nrestarts=1, seed=1
    )
    x = emitter.ask()
    objective = 2 - np.sum(x**2, axis=1)
    emitter.tell(x, objective, x, archive.add(x, objective, x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="cell probability cutoff is undefined"):
            emitter.ask()
    assert 2 * emitter._overspec > emitter.num_evals + emitter._misspec


def test_tell_validates_like_ribs():
    expected, emitter = _told_pair(False)
    x, objective, measures = _data(2)
    info = {"status": np.zeros(2, int), "value": np.zeros(2)}
    assert_same_error(
        lambda: expected.tell(x, objective[:1], measures, info),
        lambda: emitter.tell(x, objective[:1], measures, info),
    )
    assert_same_error(
        lambda: expected.tell(x, objective, measures[:, :1], info),
        lambda: emitter.tell(x, objective, measures[:, :1], info),
    )
