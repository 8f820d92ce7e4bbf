"""Tests for LMMAEvolutionStrategy (differential against pyribs)."""

import numpy as np
import pytest
import ribs.emitters.opt as ribs_opt

from ribsax.emitters.opt import LMMAEvolutionStrategy

from .es_helpers import assert_close, drive, filter_parents, mu_parents


def lm_sync(rx_es, ribs_es, solutions):
    ribs_es._solutions = np.array(solutions)
    ribs_es._solution_z = np.array(rx_es.state.solution_z)


def lm_check(it, rx, rb, sorted_values):
    label = f"iteration {it}"
    assert rx.current_gens == rb.current_gens
    assert_close(rx.mean, rb.mean, what="mean " + label)
    assert_close(rx.sigma, rb.sigma, what="sigma " + label)
    assert_close(rx.ps, rb.ps, atol=1e-10, what="ps " + label)
    assert_close(rx.m, rb.m, atol=1e-10, what="m " + label)
    assert rx.check_stop(sorted_values) == rb.check_stop(sorted_values)


@pytest.mark.parametrize("parents", [mu_parents, filter_parents], ids=["mu", "filter"])
def test_update_matches_ribs(parents):
    n = 10  # Default batch 10 <= n.
    x0 = np.linspace(-1, 1, n)
    rx = LMMAEvolutionStrategy(0.3, n, seed=1)
    rb = ribs_opt.LMMAEvolutionStrategy(0.3, n, seed=1)
    rx.reset(x0)
    rb.reset(x0)
    drive(rx, rb, lm_sync, 25, parents, check=lm_check)


def test_ask_transform_matches_ribs():
    """Same z, same vectors: pyribs' transform gives the same solutions."""
    n = 10
    rx = LMMAEvolutionStrategy(0.3, n, batch_size=6, n_vectors=4, seed=2)
    rb = ribs_opt.LMMAEvolutionStrategy(0.3, n, batch_size=6, n_vectors=4, seed=2)
    rx.reset(np.zeros(n))
    rb.reset(np.zeros(n))
    drive(rx, rb, lm_sync, 6, mu_parents, check=lm_check)
    solutions = rx.ask()
    z = np.array(rx.state.solution_z)
    expected, _ = rb._transform_and_check_sol(
        z,
        min(rb.current_gens, rb.n_vectors),
        rb.cd,
        rb.m,
        rb.mean,
        rb.sigma,
        rb.lower_bounds,
        rb.upper_bounds,
    )
    assert_close(solutions, expected, atol=1e-12)


def test_learning_rates_match_ribs():
    rx = LMMAEvolutionStrategy(1.0, 20, n_vectors=5)
    rb = ribs_opt.LMMAEvolutionStrategy(1.0, 20, n_vectors=5)
    assert rx.batch_size == rb.batch_size == 12
    assert rx.n_vectors == 5
    assert rx.csigma == pytest.approx(rb.csigma)
    assert_close(rx.cd, rb.cd)
    assert_close(rx.cc, rb.cc)


def test_batch_size_greater_than_solution_dim():
    with pytest.raises(
        ValueError,
        match=r"batch_size \(10\) is greater than "
        r"solution_dim \(5\)",
    ):
        LMMAEvolutionStrategy(1.0, 5, batch_size=10)


def test_zero_parents_only_counts_generations():
    es = LMMAEvolutionStrategy(0.5, 10, seed=0)
    es.reset(np.ones(10))
    solutions = es.ask()
    es.tell(np.arange(len(solutions)), np.zeros(len(solutions)), 0)
    assert es.current_gens == 1
    np.testing.assert_array_equal(es.mean, np.ones(10))
    np.testing.assert_array_equal(es.m, 0)
    assert es.sigma == 0.5


def test_check_stop():
    es = LMMAEvolutionStrategy(1.0, 10, seed=0)
    es.reset(np.zeros(10))
    assert not es.check_stop(np.array([2.0, 1.0]))
    assert es.check_stop(np.array([2.0, 1.0, 2.0]))
    es.state = es.state._replace(sigma=es.state.sigma * 1e-13)
    assert es.check_stop(np.array([2.0, 1.0]))


def test_bounds_resampling_keeps_z_consistent():
    es = LMMAEvolutionStrategy(1.0, 10, seed=4, lower_bounds=-1.5, upper_bounds=1.5)
    es.reset(np.zeros(10))
    samples = es.ask()
    assert np.all(np.abs(samples) <= 1.5)
    assert int(es.state.resample_rounds) > 1
    # Before any tell, x = mean + sigma z for the kept rows.
    np.testing.assert_allclose(samples, np.asarray(es.state.solution_z))
