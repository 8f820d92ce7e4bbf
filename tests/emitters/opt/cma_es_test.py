"""Tests for CMAEvolutionStrategy (differential against pyribs' CMA-ES)."""

import jax.numpy as jnp
import numpy as np
import pytest
import ribs.emitters.opt as ribs_opt

from ribsax.emitters.opt import CMAEvolutionStrategy
from ribsax.emitters.opt._cma_es import CMAESConfig
from ribsax.emitters.opt._evolution_strategy_base import MAX_RESAMPLE_ROUNDS

from .es_helpers import assert_close, drive, filter_parents, mu_parents


def cma_sync(rx_es, ribs_es, solutions):
    """What pyribs' ask does besides sampling: the lazy eigen update."""
    del rx_es
    ribs_es.cov.update_eigensystem(ribs_es.current_eval, ribs_es.lazy_gap_evals)
    ribs_es._solutions = np.array(solutions)


def cma_check(it, rx, rb, sorted_values):
    label = f"iteration {it}"
    assert rx.current_eval == rb.current_eval
    assert rx.cov.updated_eval == rb.cov.updated_eval, label
    assert_close(rx.mean, rb.mean, what="mean " + label)
    assert_close(rx.sigma, rb.sigma, what="sigma " + label)
    assert_close(rx.pc, rb.pc, what="pc " + label)
    assert_close(rx.ps, rb.ps, atol=1e-10, what="ps " + label)
    assert_close(rx.cov.cov, rb.cov.cov, what="cov " + label)
    assert_close(rx.cov.invsqrt, rb.cov.invsqrt, atol=1e-10, what="invsqrt " + label)
    assert_close(
        np.sort(rx.cov.eigenvalues), np.sort(rb.cov.eigenvalues), what="eigenvalues " + label
    )
    assert rx.check_stop(sorted_values) == rb.check_stop(sorted_values)


@pytest.mark.parametrize("solution_dim,expected", [(10, 10), (100, 17), (1000, 24)])
def test_default_batch_size(solution_dim, expected):
    es = CMAEvolutionStrategy(1.0, solution_dim)
    assert es.batch_size == expected
    assert isinstance(es.batch_size, int)


@pytest.mark.parametrize("solution_dim,batch_size", [(5, None), (20, None), (10, 30)])
def test_lazy_gap_evals_matches_ribs(solution_dim, batch_size):
    es = CMAEvolutionStrategy(1.0, solution_dim, batch_size=batch_size)
    ref = ribs_opt.CMAEvolutionStrategy(1.0, solution_dim, batch_size=batch_size)
    assert es.lazy_gap_evals == pytest.approx(ref.lazy_gap_evals, rel=1e-14)


@pytest.mark.parametrize("parents", [mu_parents, filter_parents], ids=["mu", "filter"])
def test_update_matches_ribs(parents):
    n = 5
    x0 = np.linspace(-1, 1, n)
    rx = CMAEvolutionStrategy(0.3, n, seed=1)
    rb = ribs_opt.CMAEvolutionStrategy(0.3, n, seed=1)
    rx.reset(x0)
    rb.reset(x0)
    # 40 rounds of 8 evaluations cross the lazy-eigendecomposition gap many times.
    drive(rx, rb, cma_sync, 40, parents, check=cma_check)
    assert rx.cov.updated_eval > 0


def test_update_matches_ribs_explicit_batch_and_sigma():
    n = 5
    rx = CMAEvolutionStrategy(1.5, n, batch_size=12, seed=3)
    rb = ribs_opt.CMAEvolutionStrategy(1.5, n, batch_size=12, seed=3)
    rx.reset(np.zeros(n))
    rb.reset(np.zeros(n))
    drive(rx, rb, cma_sync, 12, filter_parents, seed=4, check=cma_check)


def test_zero_parents_only_counts_evals():
    es = CMAEvolutionStrategy(0.5, 5, seed=0)
    es.reset(np.ones(5))
    before = es.state
    solutions = es.ask()
    es.tell(np.arange(len(solutions)), np.zeros(len(solutions)), 0)
    assert es.current_eval == len(solutions)
    assert_close(es.mean, before.mean, rtol=0, atol=0)
    assert es.sigma == before.sigma
    assert_close(es.cov.cov, np.eye(5), rtol=0, atol=0)
    assert_close(es.pc, 0, rtol=0, atol=0)


def test_ask_statistics_follow_mean_sigma_and_cov():
    n = 5
    mean = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    a = np.random.default_rng(0).normal(size=(n, n))
    cov = a @ a.T / n + 0.1 * np.eye(n)
    sigma = 0.5
    es = CMAEvolutionStrategy(sigma, n, seed=2)
    es.reset(mean)
    # A covariance with evaluations past the lazy gap: the next ask decomposes it.
    es.state = es.state._replace(cov=jnp.asarray(cov), current_eval=jnp.asarray(1000, jnp.int32))
    samples = es.ask(batch_size=40_000)
    assert samples.shape == (40_000, n)
    assert es.cov.updated_eval == 1000
    assert_close(np.mean(samples, axis=0), mean, rtol=0, atol=0.03)
    assert_close(np.cov(samples.T), sigma**2 * cov, rtol=0, atol=0.03)


def test_ask_is_read_only_and_deterministic_per_seed():
    a = CMAEvolutionStrategy(1.0, 5, seed=42)
    b = CMAEvolutionStrategy(1.0, 5, seed=42)
    c = CMAEvolutionStrategy(1.0, 5, seed=43)
    for es in (a, b, c):
        es.reset(np.zeros(5))
    sa, sb, sc = a.ask(), b.ask(), c.ask()
    assert not sa.flags.writeable
    with pytest.raises(ValueError):
        sa[0, 0] = 1.0
    np.testing.assert_array_equal(sa, sb)
    assert not np.allclose(sa, sc)


def test_bounds_resampling_gives_truncated_normal():
    # Mean at the lower bound: accepted rows follow a half-normal distribution.
    es = CMAEvolutionStrategy(
        1.0, 5, seed=5, lower_bounds=[0.0] + [-np.inf] * 4, upper_bounds=np.inf
    )
    es.reset(np.zeros(5))
    samples = es.ask(batch_size=20_000)
    assert np.all(samples[:, 0] >= 0)
    assert es.state.resample_rounds > 1
    assert np.mean(samples[:, 0]) == pytest.approx(np.sqrt(2 / np.pi), abs=0.02)
    # The unbounded coordinate keeps its normal distribution.
    assert np.mean(samples[:, 1]) == pytest.approx(0.0, abs=0.03)
    assert np.std(samples[:, 1]) == pytest.approx(1.0, abs=0.03)


def test_bounds_warning_and_cap():
    es = CMAEvolutionStrategy(1.0, 5, seed=0, lower_bounds=10.0, upper_bounds=11.0)
    es.reset(np.zeros(5))
    with pytest.warns(
        UserWarning, match="During bounds handling, this ES resampled at least 100 times"
    ):
        samples = es.ask()
    assert int(es.state.resample_rounds) == MAX_RESAMPLE_ROUNDS
    assert np.all((samples >= 10.0) & (samples <= 11.0))


def test_bounds_are_kept_as_arrays():
    es = CMAEvolutionStrategy(1.0, 3, lower_bounds=-1.0, upper_bounds=[1.0, 2.0, 3.0])
    assert es.lower_bounds.shape == ()
    assert es.lower_bounds.dtype == np.float64
    np.testing.assert_array_equal(es.upper_bounds, [1.0, 2.0, 3.0])


def test_check_stop_flat_fitness():
    es = CMAEvolutionStrategy(1.0, 5, seed=0)
    es.reset(np.zeros(5))
    assert es.check_stop(np.array([2.0, 1.0, 2.0]))
    assert not es.check_stop(np.array([2.0, 1.0, 1.0]))
    assert not es.check_stop(np.array([5.0]))
    assert es.check_stop(np.array([[2.0, 1.0], [0.0, 0.0], [2.0, 1.0 + 1e-13]]))
    assert not es.check_stop(np.array([[2.0, 1.0], [2.0, 0.0]]))


def test_check_stop_small_area():
    es = CMAEvolutionStrategy(1.0, 5, seed=0)
    es.reset(np.zeros(5))
    values = np.array([3.0, 2.0, 1.0])
    assert not es.check_stop(values)
    es.state = es.state._replace(sigma=jnp.asarray(1e-12))
    assert es.check_stop(values)


def test_check_stop_condition_number_matches_ribs():
    n = 5
    cov = np.diag([1e15, 1.0, 1.0, 1.0, 1.0])
    es = CMAEvolutionStrategy(1.0, n, seed=0)
    ref = ribs_opt.CMAEvolutionStrategy(1.0, n, seed=0)
    es.reset(np.zeros(n))
    ref.reset(np.zeros(n))
    values = np.array([3.0, 2.0, 1.0])
    es.state = es.state._replace(cov=jnp.asarray(cov), current_eval=jnp.asarray(100, jnp.int32))
    ref.cov.cov = cov.copy()
    ref.current_eval = 100
    es.ask()
    ref.ask()
    assert es.cov.condition_number == pytest.approx(ref.cov.condition_number)
    assert es.check_stop(values) and ref.check_stop(values)


def test_reset_restarts_but_continues_random_stream():
    es = CMAEvolutionStrategy(0.7, 5, seed=9)
    es.reset(np.zeros(5))
    first = es.ask()
    objective = -np.sum(first**2, axis=1)
    es.tell(np.flip(np.argsort(objective)), objective, 4)
    es.reset(np.full(5, 3.0))
    np.testing.assert_array_equal(es.mean, np.full(5, 3.0))
    assert es.sigma == 0.7
    assert es.current_eval == 0
    assert es.cov.updated_eval == 0
    np.testing.assert_array_equal(es.cov.cov, np.eye(5))
    np.testing.assert_array_equal(es.ps, np.zeros(5))
    again = es.ask()
    assert not np.allclose(again - 3.0, first)


def test_properties_before_reset():
    es = CMAEvolutionStrategy(1.0, 3)
    assert es.mean is None and es.cov is None and es.current_eval is None
    with pytest.raises(RuntimeError):
        es.ask()


def test_float32_dtype():
    es = CMAEvolutionStrategy(1.0, 5, seed=0, dtype=np.float32)
    es.reset(np.zeros(5))
    solutions = es.ask()
    assert solutions.dtype == np.float32
    objective = -np.sum(solutions**2, axis=1)
    es.tell(np.flip(np.argsort(objective)), objective, 4)
    assert es.mean.dtype == np.float32 and es.cov.cov.dtype == np.float32


def test_config_is_hashable_and_static():
    a = CMAESConfig.create(5)
    b = CMAESConfig.create(5, batch_size=8)
    assert a == b and hash(a) == hash(b)
    assert CMAEvolutionStrategy(1.0, 5).config == a
