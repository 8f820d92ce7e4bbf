"""QDax's rastrigin and Mouret's hypervolume functions against NumPy formulas."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import tasks


def test_rastrigin_formula_and_offset():
    task = tasks.rastrigin(solution_dim=5)
    p = np.random.default_rng(0).uniform(0, 1, (6, 5))
    p[0] = 0.5  # Optimum.
    x = 10 * p - 5
    exp = -(10 * 5 + np.sum(x**2 - 10 * np.cos(2 * np.pi * x), axis=1))
    objective, measures, _ = task.evaluate(jnp.asarray(p))
    np.testing.assert_allclose(objective, exp, rtol=1e-12)
    np.testing.assert_array_equal(measures, p[:, :2])
    assert objective[0] == 0.0
    grid = np.linspace(-5, 5, 2_000_001)
    brute = np.max(grid**2 - 10 * np.cos(2 * np.pi * grid) + 10) * 5
    assert task.qd_score_offset == pytest.approx(-brute, rel=1e-9)
    assert task.solution_bounds == (0.0, 1.0)
    init = np.asarray(task.initial_solutions(50, jax.random.key(3)))
    assert init.shape == (50, 5) and init.min() >= 0 and init.max() <= 1
    assert init.std() > 0.1


def test_rastrigin_needs_two_dims():
    with pytest.raises(ValueError, match="at least 2"):
        tasks.rastrigin(solution_dim=1)


def _gaussian(r):
    return np.exp(-((r - 0.5) ** 2) / (2 * 0.3**2))


HYPERVOLUME = {
    "square": lambda p: (1 - np.prod(p, 1), np.sin(5 * p)),
    "checkered": lambda p: (np.prod(np.sin(50 * p), 1), np.sin(5 * p)),
    "empty_circle": lambda p: (_gaussian(np.linalg.norm(p - 0.5, axis=1)), np.sin(40 * p)),
    "non_continuous_islands": lambda p: (np.prod(p, 1), np.round(10 * p) / 10),
    "continuous_islands": lambda p: (np.prod(p, 1), p - np.sin(20 * np.pi * p) / (20 * np.pi)),
}


@pytest.mark.parametrize("name", sorted(HYPERVOLUME))
@pytest.mark.parametrize("dim", [2, 3])
def test_hypervolume_formulas(name, dim):
    task = getattr(tasks, name)(solution_dim=dim)
    assert task.measure_dim == dim == task.solution_dim
    p = np.random.default_rng(dim).uniform(0, 1, (9, dim))
    objective, measures, _ = task.evaluate(jnp.asarray(p))
    exp_obj, exp_meas = HYPERVOLUME[name](p)
    np.testing.assert_allclose(objective, exp_obj, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(measures, exp_meas, rtol=1e-12, atol=1e-15)


def test_hypervolume_dim_error():
    with pytest.raises(ValueError, match="positive"):
        tasks.square(solution_dim=0)
