"""pyribs' sphere and the rastrigin projection against direct NumPy re-derivations.

The NumPy functions below restate pyribs' ``examples/sphere.py`` and QDax's
``rastrigin_proj_scoring_function``
independently of ribsax's code.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.tasks import linear_projection, rastrigin_projection, sphere
from ribsax.tasks._projection import worst_cost_per_dim

BOUND = 5.12
SHIFT = 5.12 * 0.4


def numpy_fold(x):
    folded = x.copy()
    derivative = np.ones_like(x)
    out = (x < -BOUND) | (x > BOUND)
    folded[out] = BOUND / x[out]
    derivative[out] = -BOUND / x[out] ** 2
    return folded, derivative


def numpy_pyribs_sphere(x):
    """pyribs examples/sphere.py: objective, pyribs' objective gradient, measures,
    measure gradients."""
    dim = x.shape[1]
    worst = (-BOUND - SHIFT) ** 2 * dim
    raw = np.sum((x - SHIFT) ** 2, axis=1)
    objective = (raw - worst) / (0.0 - worst) * 100
    objective_grad = -2 * (x - SHIFT)
    folded, derivative = numpy_fold(x)
    measures = np.stack([folded[:, : dim // 2].sum(1), folded[:, dim // 2 :].sum(1)], 1)
    mask0 = np.concatenate([np.ones(dim // 2), np.zeros(dim - dim // 2)])
    measure_grads = np.stack([derivative * mask0, derivative * (1 - mask0)], 1)
    return objective, objective_grad, measures, measure_grads


def _points(dim, batch=6, seed=0):
    x = np.random.default_rng(seed).normal(0, 5, (batch, dim))
    x[0] = 0.0  # pyribs' x0.
    x[1] = SHIFT  # The optimum.
    x[2] = -BOUND  # The normalisation's worst point.
    return x


@pytest.mark.parametrize("dim", [100, 7])
def test_sphere_matches_pyribs_formula(dim):
    task = sphere(solution_dim=dim)
    x = _points(dim)
    objective, measures, jacobian, extras = jax.jit(task.evaluate_with_jacobian)(jnp.asarray(x))
    exp_obj, exp_obj_grad, exp_meas, exp_meas_grad = numpy_pyribs_sphere(x)
    np.testing.assert_allclose(objective, exp_obj, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(measures, exp_meas, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jacobian[:, 1:], exp_meas_grad, rtol=1e-12)
    # Default: the exact gradient of the normalised objective.
    worst = (-BOUND - SHIFT) ** 2 * dim
    np.testing.assert_allclose(jacobian[:, 0], exp_obj_grad * 100 / worst, rtol=1e-12)
    assert extras == {}
    assert objective[1] == pytest.approx(100.0)
    assert objective[2] == pytest.approx(0.0, abs=1e-9)


def test_sphere_pyribs_objective_grad():
    task = sphere(solution_dim=10, pyribs_objective_grad=True)
    x = _points(10)
    _, _, jacobian, _ = task.evaluate_with_jacobian(jnp.asarray(x))
    np.testing.assert_allclose(jacobian[:, 0], numpy_pyribs_sphere(x)[1], rtol=1e-12)


def test_sphere_metadata_matches_pyribs_example():
    task = sphere()
    assert task.solution_dim == 100 and task.measure_dim == 2
    # pyribs: ranges [(-dim/2 * 5.12, dim/2 * 5.12)] * 2, default qd_score_offset.
    assert task.measure_ranges == ((-256.0, 256.0), (-256.0, 256.0))
    assert task.qd_score_offset == 0.0
    assert task.objective_range == (0.0, 100.0)
    assert task.name == "sphere"
    np.testing.assert_array_equal(task.initial_solutions(3), np.zeros((3, 100)))
    odd = sphere(solution_dim=7)
    assert odd.measure_ranges == ((-3 * BOUND, 3 * BOUND), (-4 * BOUND, 4 * BOUND))


def numpy_rastrigin_projection(x, reduction, normalize):
    dim = x.shape[1]
    z = x - SHIFT
    cost = 10 * dim + np.sum(z**2 - 10 * np.cos(2 * np.pi * z), axis=1)
    folded, _ = numpy_fold(x)
    first, second = folded[:, : dim // 2], folded[:, dim // 2 :]
    if reduction == "sum":
        measures = np.stack([first.sum(1), second.sum(1)], 1)
    else:
        measures = np.stack([first.mean(1), second.mean(1)], 1)
    if normalize:
        grid = np.linspace(-BOUND, BOUND, 1_000_001) - SHIFT
        worst = np.max(grid**2 - 10 * np.cos(2 * np.pi * grid) + 10) * dim
        return (cost - worst) / -worst * 100, measures
    return -cost, measures


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("normalize", [True, False])
def test_rastrigin_projection_formula(reduction, normalize):
    task = rastrigin_projection(solution_dim=9, measure_reduction=reduction, normalize=normalize)
    x = _points(9, seed=1)
    objective, measures, _ = task.evaluate(jnp.asarray(x))
    exp_obj, exp_meas = numpy_rastrigin_projection(x, reduction, normalize)
    np.testing.assert_allclose(objective, exp_obj, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(measures, exp_meas, rtol=1e-12, atol=1e-12)
    if normalize:
        assert objective[1] == pytest.approx(100.0)
        assert task.qd_score_offset == 0.0
    else:
        assert objective[1] == pytest.approx(0.0, abs=1e-9)
        assert task.qd_score_offset == pytest.approx(-worst_cost_per_dim("rastrigin") * 9)


def test_rastrigin_projection_default_is_1000d():
    task = rastrigin_projection()
    assert task.solution_dim == 1000
    assert task.measure_ranges == ((-2560.0, 2560.0), (-2560.0, 2560.0))
    x = jnp.full((2, 1000), SHIFT)
    objective, _, jacobian, _ = task.evaluate_with_jacobian(x)
    np.testing.assert_allclose(objective, 100.0)
    np.testing.assert_allclose(jacobian[:, 0], 0.0, atol=1e-9)


def test_worst_cost_is_the_box_maximum():
    grid = np.linspace(-BOUND, BOUND, 2_000_001)
    z = grid - SHIFT
    brute = np.max(z**2 - 10 * np.cos(2 * np.pi * z) + 10)
    assert worst_cost_per_dim("rastrigin") == pytest.approx(brute, rel=1e-9)
    assert worst_cost_per_dim("rastrigin") >= brute
    assert worst_cost_per_dim("sphere") == (BOUND + SHIFT) ** 2


def test_linear_projection_sphere_equals_sphere():
    x = jnp.asarray(_points(10, seed=2))
    a = linear_projection("sphere", 10).evaluate_with_jacobian(x)
    b = sphere(10).evaluate_with_jacobian(x)
    for u, v in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"objective": "plateau"}, "objective must be"),
        ({"measure_reduction": "max"}, "measure_reduction must be"),
        ({"solution_dim": 1}, "at least 2"),
    ],
)
def test_linear_projection_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        linear_projection(**kwargs)
