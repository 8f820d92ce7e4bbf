"""Tests for SeparableCMAEvolutionStrategy (differential against pyribs)."""

import jax.numpy as jnp
import numpy as np
import pytest
import ribs.emitters.opt as ribs_opt

from ribsax.emitters.opt import SeparableCMAEvolutionStrategy

from .es_helpers import assert_close, drive, filter_parents, mu_parents


def sep_sync(rx_es, ribs_es, solutions):
    del rx_es
    ribs_es._solutions = np.array(solutions)


def sep_check(it, rx, rb, sorted_values):
    label = f"iteration {it}"
    assert rx.current_eval == rb.current_eval
    assert_close(rx.mean, rb.mean, what="mean " + label)
    assert_close(rx.sigma, rb.sigma, what="sigma " + label)
    assert_close(rx.pc, rb.pc, what="pc " + label)
    assert_close(rx.ps, rb.ps, atol=1e-10, what="ps " + label)
    assert_close(rx.cov.cov, rb.cov.cov, what="cov " + label)
    assert_close(rx.cov.invsqrt, rb.cov.invsqrt, what="invsqrt " + label)
    assert rx.check_stop(sorted_values) == rb.check_stop(sorted_values)


@pytest.mark.parametrize("parents", [mu_parents, filter_parents], ids=["mu", "filter"])
def test_update_matches_ribs(parents):
    n = 6
    x0 = np.linspace(-2, 0, n)
    rx = SeparableCMAEvolutionStrategy(0.4, n, seed=1)
    rb = ribs_opt.SeparableCMAEvolutionStrategy(0.4, n, seed=1)
    rx.reset(x0)
    rb.reset(x0)
    drive(rx, rb, sep_sync, 30, parents, check=sep_check)


@pytest.mark.parametrize("solution_dim,expected", [(10, 10), (100, 17), (1000, 24)])
def test_default_batch_size(solution_dim, expected):
    es = SeparableCMAEvolutionStrategy(1.0, solution_dim)
    assert es.batch_size == expected and isinstance(es.batch_size, int)


def test_ask_statistics_follow_diagonal_cov():
    mean = np.array([1.0, -1.0, 0.0])
    diag = np.array([4.0, 0.25, 1.0])
    es = SeparableCMAEvolutionStrategy(0.5, 3, seed=3)
    es.reset(mean)
    es.state = es.state._replace(cov=jnp.asarray(diag))
    samples = es.ask(batch_size=40_000)
    assert_close(samples.mean(axis=0), mean, rtol=0, atol=0.03)
    assert_close(samples.var(axis=0), 0.25 * diag, rtol=0.05, atol=0)
    assert abs(np.corrcoef(samples.T)[0, 1]) < 0.03


def test_bounds_resampling():
    es = SeparableCMAEvolutionStrategy(
        1.0, 4, seed=0, lower_bounds=-0.5, upper_bounds=[0.5, 0.5, np.inf, np.inf]
    )
    es.reset(np.zeros(4))
    samples = es.ask(batch_size=300)
    assert np.all(samples >= -0.5) and np.all(samples[:, :2] <= 0.5)
    assert int(es.state.resample_rounds) > 1


def test_check_stop_rules_match_ribs():
    n = 3
    rx = SeparableCMAEvolutionStrategy(1.0, n, seed=0)
    rb = ribs_opt.SeparableCMAEvolutionStrategy(1.0, n, seed=0)
    rx.reset(np.zeros(n))
    rb.reset(np.zeros(n))
    values = np.array([3.0, 2.0, 1.0])
    assert not rx.check_stop(values) and not rb.check_stop(values)
    # Condition number above 1e14.
    rx.state = rx.state._replace(cov=jnp.asarray([1e15, 1.0, 1.0]))
    rb.cov.cov = np.array([1e15, 1.0, 1.0])
    assert rx.check_stop(values) and rb.check_stop(values)
    # Area below 1e-11.
    rx.state = rx.state._replace(cov=jnp.ones(n), sigma=jnp.asarray(1e-12))
    rb.cov.cov, rb.sigma = np.ones(n), 1e-12
    assert rx.check_stop(values) and rb.check_stop(values)
    # Flat fitness.
    rx.state = rx.state._replace(sigma=jnp.asarray(1.0))
    assert rx.check_stop(np.array([1.0, 5.0, 1.0]))


def test_zero_parents_only_counts_evals():
    es = SeparableCMAEvolutionStrategy(0.5, 4, seed=0)
    es.reset(np.ones(4))
    solutions = es.ask()
    es.tell(np.arange(len(solutions)), np.zeros(len(solutions)), 0)
    assert es.current_eval == len(solutions)
    np.testing.assert_array_equal(es.mean, np.ones(4))
    np.testing.assert_array_equal(es.cov.cov, np.ones(4))
    assert es.sigma == 0.5
