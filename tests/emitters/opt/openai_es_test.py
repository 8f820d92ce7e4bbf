"""Tests for OpenAIEvolutionStrategy (differential against pyribs)."""

import numpy as np
import pytest
import ribs.emitters.opt as ribs_opt

from ribsax.emitters.opt import OpenAIEvolutionStrategy

from .es_helpers import assert_close, drive, mu_parents


def openai_sync(rx_es, ribs_es, solutions):
    ribs_es._solutions = np.array(solutions)
    ribs_es.noise = np.array(rx_es.noise)


def openai_check(it, rx, rb, sorted_values):
    label = f"iteration {it}"
    opt, ref = rx.adam_opt, rb.adam_opt
    assert_close(opt.theta, ref.theta, what="theta " + label)
    assert_close(opt.state.m, ref._m, what="m " + label)
    assert_close(opt.state.v, ref._v, what="v " + label)
    assert int(opt.state.t) == ref._t
    assert_close(rx.last_update_ratio, rb.last_update_ratio, what="ratio " + label)
    assert rx.check_stop(sorted_values) == rb.check_stop(sorted_values)


@pytest.mark.parametrize("mirror", [True, False])
def test_update_matches_ribs(mirror):
    n = 5
    kwargs = dict(mirror_sampling=mirror, lr=0.05, l2_coeff=0.01)
    rx = OpenAIEvolutionStrategy(0.2, n, seed=1, **kwargs)
    rb = ribs_opt.OpenAIEvolutionStrategy(0.2, n, seed=1, **kwargs)
    rx.reset(np.full(n, 0.5))
    rb.reset(np.full(n, 0.5))
    drive(rx, rb, openai_sync, 20, mu_parents, check=openai_check)


def test_mirror_sampling_noise_is_antithetic():
    es = OpenAIEvolutionStrategy(0.3, 4, seed=0)
    es.reset(np.ones(4))
    solutions = es.ask()
    half = es.batch_size // 2
    np.testing.assert_allclose(es.noise[:half], -es.noise[half:])
    np.testing.assert_allclose(solutions, 1.0 + 0.3 * es.noise)


@pytest.mark.parametrize("solution_dim,batch", [(5, 8), (10, 10), (100, 18)])
def test_default_batch_size_is_even(solution_dim, batch):
    es = OpenAIEvolutionStrategy(1.0, solution_dim)
    ref = ribs_opt.OpenAIEvolutionStrategy(1.0, solution_dim)
    assert es.batch_size == ref.batch_size == batch


def test_validation_errors():
    with pytest.raises(
        ValueError,
        match="Bounds are currently not supported when using mirror_sampling in OpenAI-ES",
    ):
        OpenAIEvolutionStrategy(1.0, 3, lower_bounds=-1.0)
    with pytest.raises(ValueError, match="Batch size of 1 is not supported"):
        OpenAIEvolutionStrategy(1.0, 3, batch_size=1, mirror_sampling=False)
    with pytest.raises(
        ValueError, match="If using mirror sampling, batch_size must be an even number."
    ):
        OpenAIEvolutionStrategy(1.0, 3, batch_size=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        OpenAIEvolutionStrategy(1.0, 3, foo=1)
    # An explicit odd batch is fine without mirror sampling.
    assert OpenAIEvolutionStrategy(1.0, 3, batch_size=5, mirror_sampling=False).batch_size == 5


def test_bounds_without_mirror_sampling_resample_and_keep_noise():
    es = OpenAIEvolutionStrategy(
        1.0, 3, seed=0, mirror_sampling=False, lower_bounds=-0.5, upper_bounds=0.5
    )
    es.reset(np.zeros(3))
    solutions = es.ask()
    assert np.all(np.abs(solutions) <= 0.5)
    assert int(es.state.resample_rounds) > 1
    # Every row's noise is kept (pyribs keeps only the last round's).
    np.testing.assert_allclose(solutions, es.noise)


def test_check_stop_after_tiny_update():
    es = OpenAIEvolutionStrategy(1.0, 3, seed=0, lr=1e-14)
    es.reset(np.ones(3))
    values = np.array([2.0, 1.0])
    assert not es.check_stop(values)  # Ratio is inf after a reset.
    solutions = es.ask()
    objective = -np.sum(solutions**2, axis=1)
    es.tell(np.flip(np.argsort(objective)), objective, 3)
    assert es.last_update_ratio < 1e-9
    assert es.check_stop(values)
