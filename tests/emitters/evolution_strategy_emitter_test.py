"""Tests for EvolutionStrategyEmitter, with differential checks against pyribs."""

import numpy as np
import pytest
import ribs.emitters

from ribsax.archives import GridArchive
from ribsax.emitters import EvolutionStrategyEmitter
from ribsax.emitters.opt import (
    EvolutionStrategyBase,
    LMMAEvolutionStrategy,
    OpenAIEvolutionStrategy,
    SeparableCMAEvolutionStrategy,
)
from ribsax.emitters.rankers import ImprovementRanker, TwoStageImprovementRanker
from tests.emitters.emitter_helpers import (
    assert_same_error,
    emitter_pair,
    fill,
    grid_pair,
)

DIM = 4


def _both(kwargs, solution_dim=DIM):
    return emitter_pair("EvolutionStrategyEmitter", kwargs, solution_dim=solution_dim)


def _emitter(archive=None, **kwargs):
    if archive is None:
        _, archive = grid_pair(solution_dim=DIM)
    kwargs.setdefault("x0", np.zeros(DIM))
    kwargs.setdefault("sigma0", 0.1)
    return EvolutionStrategyEmitter(archive, **kwargs)


def _info(batch, status, value=None):
    status = np.broadcast_to(np.asarray(status, np.int32), (batch,)).copy()
    value = np.arange(batch, dtype=float) if value is None else value
    return {"status": status, "value": np.asarray(value, dtype=float)}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"x0": np.zeros(DIM + 1), "sigma0": 1.0},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "selection_rule": "foo"},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "restart_rule": "foo"},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "restart_rule": 0},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "es": "foo"},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "es": 3},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "es": lambda **kwargs: 3},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "ranker": "foo"},
        {"x0": np.zeros(DIM), "sigma0": 1.0, "ranker": lambda seed: 3},
        {
            "x0": np.zeros(DIM),
            "sigma0": 1.0,
            "bounds": [(0, 1)] * DIM,
            "upper_bounds": np.ones(DIM),
        },
    ],
    ids=[
        "x0_shape",
        "selection",
        "restart",
        "restart_zero",
        "es_name",
        "es_type",
        "es_callable",
        "ranker_name",
        "ranker_callable",
        "bounds",
    ],
)
def test_validation_errors_match_ribs(kwargs):
    assert_same_error(*_both(kwargs))


@pytest.mark.parametrize("solution_dim", [10, 100])
def test_default_batch_size_is_python_int_like_ribs(solution_dim):
    make_ribs, make = _both({"x0": np.zeros(solution_dim), "sigma0": 1.0}, solution_dim)
    emitter = make()
    assert emitter.batch_size == make_ribs().batch_size == 4 + int(3 * np.log(solution_dim))
    assert type(emitter.batch_size) is int


def test_properties():
    emitter = _emitter(x0=np.ones(DIM), batch_size=6)
    np.testing.assert_array_equal(emitter.x0, np.ones(DIM))
    assert emitter.x0.dtype == np.float64
    assert emitter.batch_size == 6
    assert emitter.restarts == 0 and emitter.itrs == 0
    np.testing.assert_array_equal(emitter.mean, np.ones(DIM))
    assert emitter.sigma == pytest.approx(0.1)
    assert isinstance(emitter.ranker, TwoStageImprovementRanker)


def test_ask_is_read_only_and_seeded():
    first, second = _emitter(seed=3), _emitter(seed=3)
    solutions = first.ask()
    assert solutions.shape == (first.batch_size, DIM)
    assert not solutions.flags.writeable
    np.testing.assert_array_equal(solutions, second.ask())
    seq = _emitter(seed=np.random.SeedSequence(3)).ask()
    np.testing.assert_array_equal(seq, solutions)
    assert not np.array_equal(_emitter(seed=4).ask(), solutions)


def _run_rule(make, tells, status, value=None):
    emitter = make()
    restarts = []
    for _ in range(tells):
        solutions = emitter.ask()
        batch = len(solutions)
        emitter.tell(
            solutions, -np.sum(solutions**2, axis=1), solutions[:, :2], _info(batch, status, value)
        )
        restarts.append(emitter.restarts)
    return restarts, emitter


@pytest.mark.parametrize(
    "rule,status,selection",
    [
        (3, 1, "filter"),
        (2, 1, "mu"),
        ("no_improvement", 0, "filter"),
        ("no_improvement", 1, "filter"),
        ("basic", 0, "mu"),
    ],
)
def test_restart_rules_match_ribs(rule, status, selection):
    ribs_archive, archive = grid_pair(solution_dim=DIM)
    fill(ribs_archive)
    fill(archive)
    kwargs = {
        "x0": np.zeros(DIM),
        "sigma0": 0.1,
        "restart_rule": rule,
        "selection_rule": selection,
        "ranker": "2imp",
        "batch_size": 6,
    }
    expected, _ = _run_rule(
        lambda: ribs.emitters.EvolutionStrategyEmitter(ribs_archive, **kwargs), 6, status
    )
    ours, emitter = _run_rule(lambda: EvolutionStrategyEmitter(archive, **kwargs), 6, status)
    assert ours == expected
    assert emitter.itrs == 6


def test_flat_fitness_restarts_like_ribs():
    ribs_archive, archive = grid_pair(solution_dim=DIM)
    fill(ribs_archive)
    fill(archive)
    kwargs = {
        "x0": np.zeros(DIM),
        "sigma0": 0.1,
        "restart_rule": "basic",
        "ranker": "imp",
        "selection_rule": "mu",
        "batch_size": 6,
    }
    flat = np.zeros(6)
    expected, _ = _run_rule(
        lambda: ribs.emitters.EvolutionStrategyEmitter(ribs_archive, **kwargs), 3, 1, flat
    )
    ours, _ = _run_rule(lambda: EvolutionStrategyEmitter(archive, **kwargs), 3, 1, flat)
    assert ours == expected == [1, 2, 3]


def test_restart_moves_mean_to_an_elite():
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive)
    _, emitter = _run_rule(lambda: _emitter(archive, restart_rule=1, batch_size=6), 1, 1)
    assert emitter.restarts == 1
    elites = archive.data("solution")
    assert np.any(np.all(elites == emitter.mean, axis=1))
    assert emitter.sigma == pytest.approx(0.1)


def test_restart_with_empty_archive_raises_index_error_like_ribs():
    def run(cls, archive):
        emitter = cls(archive, x0=np.zeros(DIM), sigma0=0.1, batch_size=6)
        solutions = emitter.ask()
        emitter.tell(solutions, np.zeros(6), solutions[:, :2], _info(6, 0))

    ribs_archive, archive = grid_pair(solution_dim=DIM)
    assert_same_error(
        lambda: run(ribs.emitters.EvolutionStrategyEmitter, ribs_archive),
        lambda: run(EvolutionStrategyEmitter, archive),
    )


@pytest.mark.parametrize(
    "objective,measures,info",
    [
        (None, np.zeros((6, 2)), _info(6, 1)),
        (np.zeros(5), np.zeros((6, 2)), _info(6, 1)),
        (np.zeros(6), np.zeros((6, 3)), _info(6, 1)),
        (np.zeros(6), np.zeros((6, 2)), {"status": np.zeros(5), "value": np.zeros(6)}),
    ],
    ids=["none_objective", "objective_length", "measures_shape", "status_length"],
)
def test_tell_validation_matches_ribs(objective, measures, info):
    def run(cls, archive):
        emitter = cls(archive, x0=np.zeros(DIM), sigma0=0.1, batch_size=6)
        emitter.tell(emitter.ask(), objective, measures, dict(info))

    ribs_archive, archive = grid_pair(solution_dim=DIM)
    assert_same_error(
        lambda: run(ribs.emitters.EvolutionStrategyEmitter, ribs_archive),
        lambda: run(EvolutionStrategyEmitter, archive),
    )


def test_bounds_by_resampling():
    emitter = _emitter(sigma0=0.3, bounds=[(-0.5, 0.5)] * DIM, batch_size=100)
    solutions = emitter.ask()
    assert solutions.min() >= -0.5 and solutions.max() <= 0.5
    # Resampling, not clipping: no mass piles up on the bounds.
    assert np.mean(np.abs(solutions) == 0.5) < 0.01


@pytest.mark.parametrize(
    "es,es_kwargs,cls",
    [
        ("sep_cma_es", None, SeparableCMAEvolutionStrategy),
        ("SeparableCMAEvolutionStrategy", None, SeparableCMAEvolutionStrategy),
        ("lm_ma_es", {"n_vectors": 3}, LMMAEvolutionStrategy),
        ("openai_es", {"lr": 0.01}, OpenAIEvolutionStrategy),
        (LMMAEvolutionStrategy, None, LMMAEvolutionStrategy),
    ],
)
def test_other_evolution_strategies(es, es_kwargs, cls):
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive)
    emitter = _emitter(archive, es=es, es_kwargs=es_kwargs, selection_rule="mu", batch_size=4)
    assert isinstance(emitter.opt, cls)
    for _ in range(3):
        solutions = emitter.ask()
        emitter.tell(
            solutions,
            -np.sum(solutions**2, axis=1),
            solutions[:, :2],
            archive.add(solutions, -np.sum(solutions**2, axis=1), solutions[:, :2]),
        )
    assert emitter.itrs == 3
    assert np.all(np.isfinite(emitter.mean))


class _NumpyES(EvolutionStrategyBase):
    """Minimal (1, lambda)-ES in NumPy, to exercise the object path."""

    def __init__(
        self,
        sigma0,
        solution_dim,
        batch_size=None,
        seed=None,
        dtype=np.float64,
        lower_bounds=-np.inf,
        upper_bounds=np.inf,
    ):
        super().__init__(sigma0, solution_dim, batch_size, seed, dtype, lower_bounds, upper_bounds)
        self.batch_size = batch_size or 5
        self.sigma0, self.dim = sigma0, solution_dim
        self.rng = np.random.default_rng(seed)
        self.resets = 0

    def reset(self, x0):
        self.mean = np.array(x0)
        self.resets += 1

    def check_stop(self, ranking_values):
        return False

    def ask(self, batch_size=None):
        self.last = self.mean + self.sigma0 * self.rng.normal(size=(self.batch_size, self.dim))
        return self.last

    def tell(self, ranking_indices, ranking_values, num_parents):
        self.mean = self.last[ranking_indices[0]]


class _ReverseImprovement(ImprovementRanker):
    def rank(self, emitter, archive, data, add_info):
        return np.argsort(add_info["value"]), add_info["value"]


def test_custom_es_and_ranker_use_object_path():
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive)
    emitter = _emitter(archive, es=_NumpyES, ranker=_ReverseImprovement, restart_rule=2)
    assert emitter.fusion_key is None
    for _ in range(4):
        solutions = emitter.ask()
        value = np.arange(5.0)
        emitter.tell(solutions, np.zeros(5), solutions[:, :2], _info(5, 1, value))
        # The reversed ranker picks the lowest value, i.e. solution 0.
        np.testing.assert_array_equal(
            emitter.opt.mean, solutions[0]
        ) if emitter.restarts == 0 else None
    assert emitter.restarts == 2
    assert emitter.opt.resets == 3


def test_kernel_path_matches_object_path():
    """The fused-capable tell kernel reproduces pyribs' object-level tell."""

    class _SameImprovement(TwoStageImprovementRanker):
        def rank(self, emitter, archive, data, add_info):
            return TwoStageImprovementRanker.rank(self, emitter, archive, data, add_info)

    _, archive = grid_pair(solution_dim=DIM)
    fill(archive)
    kernel = _emitter(archive, seed=1, batch_size=8)
    objects = _emitter(archive, seed=1, batch_size=8, ranker=_SameImprovement)
    assert kernel.fusion_key is not None and objects.fusion_key is None
    rng = np.random.default_rng(0)
    for _ in range(4):
        a, b = kernel.ask(), objects.ask()
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        info = _info(8, rng.integers(0, 3, 8), rng.normal(size=8))
        kernel.tell(a, np.zeros(8), a[:, :2], dict(info))
        objects.tell(b, np.zeros(8), b[:, :2], dict(info))
    np.testing.assert_allclose(kernel.mean, objects.opt.mean, rtol=1e-10)
    assert kernel.sigma == pytest.approx(objects.opt.sigma, rel=1e-10)


def test_random_direction_ranker_gets_new_direction_on_restart():
    _, archive = grid_pair(solution_dim=DIM)
    fill(archive)
    emitter = _emitter(archive, ranker="2rd", restart_rule=1, batch_size=6)
    before = emitter.ranker.target_measure_dir.copy()
    solutions = emitter.ask()
    emitter.tell(solutions, np.zeros(6), solutions[:, :2], _info(6, 1))
    assert emitter.restarts == 1
    assert not np.array_equal(before, emitter.ranker.target_measure_dir)


def test_multidimensional_archive_solution_rejected_like_ribs():
    archive = GridArchive(solution_dim=DIM, dims=[5, 5], ranges=[(-1, 1)] * 2)
    with pytest.raises(ValueError, match="Expected x0"):
        EvolutionStrategyEmitter(archive, x0=np.zeros((2, 2)), sigma0=1.0)


def test_prepare_decomposes_only_members_that_are_due():
    """The kernel's lazy eigendecomposition is its ``prepare``; the schedulers'
    prepare step runs it (its passes) on the due members of a fused group only,
    and the others keep their state."""
    import jax
    import jax.numpy as jnp

    from ribsax.schedulers._units import _Unit, prepare_unit

    archive = GridArchive(solution_dim=DIM, dims=[4, 4], ranges=[(-1, 1)] * 2)
    emitters = [_emitter(archive, seed=s) for s in range(2)]
    kernel = emitters[0].kernel
    assert kernel.has_prepare and len(kernel.prepare_passes()) == 2
    rng = np.random.default_rng(0)
    a = rng.normal(size=(DIM, DIM))
    # Not exactly symmetric: the decomposition symmetrises it (and keeps it).
    cov_np = a @ a.T + np.eye(DIM) + 1e-3 * rng.random((DIM, DIM))

    def with_cov(emitter, current_eval):
        state = emitter.state
        opt = state.inner.opt._replace(
            cov=jnp.asarray(cov_np), current_eval=jnp.asarray(current_eval, jnp.int32)
        )
        return state._replace(inner=state.inner._replace(opt=opt))

    due, not_due = with_cov(emitters[0], 500), with_cov(emitters[1], 0)
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), due, not_due)
    np.testing.assert_array_equal(jax.vmap(kernel.prepare_due)(stacked.inner), [True, False])
    unit = _Unit(type(emitters[0]), kernel, (0, 1), object(), emitters[0])
    prepared = jax.jit(lambda st: prepare_unit(unit, st))(stacked).inner.opt
    expected = kernel.prepare(due.inner).opt
    for name in ("cov", "eigenbasis", "eigenvalues", "invsqrt", "updated_eval"):
        np.testing.assert_allclose(
            np.asarray(getattr(prepared, name))[0], np.asarray(getattr(expected, name)), atol=1e-12
        )
    assert int(prepared.updated_eval[0]) == 500
    assert int(prepared.updated_eval[1]) == 0
    np.testing.assert_array_equal(prepared.cov[0], np.maximum(cov_np, cov_np.T))
    np.testing.assert_array_equal(prepared.cov[1], cov_np)
    np.testing.assert_array_equal(prepared.eigenvalues[1], np.ones(DIM))
