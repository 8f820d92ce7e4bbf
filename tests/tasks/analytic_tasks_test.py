"""Properties shared by every analytic task in ribsax.tasks.

Each task is checked for output shapes and dtypes (float32 and float64), determinism
(eager, jitted and repeated calls agree), its documented measure ranges, objective
range and QD-score offset on samples from its search region, and the correctness of
its Jacobian (directional finite differences; analytic Jacobians also against
autodiff).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax import tasks
from ribsax.tasks import jacobian_via_vjp

FACTORIES = {
    "sphere": functools.partial(tasks.sphere, solution_dim=10),
    "sphere_odd": functools.partial(tasks.sphere, solution_dim=7),
    "rastrigin_projection": functools.partial(tasks.rastrigin_projection, solution_dim=12),
    "rastrigin_projection_mean": functools.partial(
        tasks.rastrigin_projection, solution_dim=9, measure_reduction="mean", normalize=False
    ),
    "rastrigin": functools.partial(tasks.rastrigin, solution_dim=6),
    "arm": functools.partial(tasks.arm, dof=8),
    "arm_lengths": functools.partial(tasks.arm, dof=3, link_lengths=[0.5, 1.0, 2.0]),
    "qdax_arm": functools.partial(tasks.qdax_arm, solution_dim=8),
    "square": tasks.square,
    "checkered": functools.partial(tasks.checkered, solution_dim=3),
    "empty_circle": tasks.empty_circle,
    "non_continuous_islands": tasks.non_continuous_islands,
    "continuous_islands": tasks.continuous_islands,
}
BATCH = 5


@functools.cache
def _task(name):
    return FACTORIES[name]()


@functools.cache
def _jit(name):
    """Jitted (evaluate, evaluate_with_jacobian) of a task, compiled once per shape."""
    task = _task(name)
    return jax.jit(task.evaluate), jax.jit(task.evaluate_with_jacobian)


def _in_region(task, batch, seed=0):
    """Samples from the task's search region (the box for the projection tasks)."""
    rng = np.random.default_rng(seed)
    low, high = task.solution_bounds or (-5.12, 5.12)
    return rng.uniform(low, high, size=(batch, task.solution_dim))


@pytest.fixture(params=sorted(FACTORIES), name="name")
def fixture_name(request):
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shapes_and_dtypes(name, dtype):
    task = _task(name)
    evaluate, evaluate_jac = _jit(name)
    x = jnp.asarray(_in_region(task, BATCH), dtype=dtype)
    objective, measures, extras = evaluate(x, jax.random.key(0))
    assert objective.shape == (BATCH,)
    assert measures.shape == (BATCH, task.measure_dim)
    assert objective.dtype == dtype and measures.dtype == dtype
    assert isinstance(extras, dict)
    obj2, meas2, jacobian, _ = evaluate_jac(x, jax.random.key(0))
    assert jacobian.shape == (BATCH, 1 + task.measure_dim, task.solution_dim)
    assert jacobian.dtype == dtype
    np.testing.assert_allclose(obj2, objective, rtol=1e-6)
    np.testing.assert_allclose(meas2, measures, rtol=1e-6, atol=1e-6)


def test_float32_close_to_float64(name):
    task = _task(name)
    evaluate, _ = _jit(name)
    x = _in_region(task, BATCH, seed=3)
    obj64, meas64, _ = evaluate(jnp.asarray(x, jnp.float64), jax.random.key(0))
    obj32, meas32, _ = evaluate(jnp.asarray(x, jnp.float32), jax.random.key(0))
    scale = max(1.0, float(np.max(np.abs(obj64))))
    np.testing.assert_allclose(obj32, obj64, atol=1e-4 * scale)
    # Rounded measures (non_continuous_islands) may flip at a 0.05 boundary only if
    # a sample lies within float32 eps of it, which these seeds do not.
    np.testing.assert_allclose(
        meas32, meas64, atol=1e-3 * max(1.0, max(abs(lo) for lo, _ in task.measure_ranges))
    )


def test_deterministic_and_jit_consistent(name):
    task = _task(name)
    evaluate, _ = _jit(name)
    x = jnp.asarray(_in_region(task, BATCH, seed=1))
    eager = task.evaluate(x, jax.random.key(1))
    jitted = evaluate(x, jax.random.key(2))
    again = task.evaluate(x, jax.random.key(1))
    for a, b, c in zip(eager[:2], jitted[:2], again[:2]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_rows_are_independent(name):
    task = _task(name)
    evaluate, _ = _jit(name)
    x = jnp.asarray(_in_region(task, BATCH, seed=2))
    objective, measures, _ = evaluate(x, jax.random.key(0))
    obj_one, meas_one, _ = evaluate(x[2:3], jax.random.key(0))
    np.testing.assert_allclose(obj_one[0], objective[2], rtol=1e-12)
    np.testing.assert_allclose(meas_one[0], measures[2], rtol=1e-12)


def test_measure_and_objective_ranges(name):
    task = _task(name)
    evaluate, _ = _jit(name)
    x = jnp.asarray(_in_region(task, 400, seed=4))
    objective, measures, _ = evaluate(x, jax.random.key(0))
    low = np.array([lo for lo, _ in task.measure_ranges])
    high = np.array([hi for _, hi in task.measure_ranges])
    assert np.all(np.asarray(measures) >= low - 1e-9)
    assert np.all(np.asarray(measures) <= high + 1e-9)
    obj_lo, obj_hi = task.objective_range
    assert np.all(np.asarray(objective) >= obj_lo - 1e-9)
    assert np.all(np.asarray(objective) <= obj_hi + 1e-9)
    # The offset is a lower bound of the objective: QD-score terms are >= 0.
    assert np.all(np.asarray(objective) - task.qd_score_offset >= -1e-9)
    # The samples actually spread over the measure space (not a degenerate task).
    assert np.all(np.ptp(np.asarray(measures), axis=0) > 0.05 * (high - low))


def test_unbounded_tasks_keep_measures_in_range():
    """Projection tasks fold far-away coordinates, so measures never leave ranges."""
    for name in ["sphere", "sphere_odd", "rastrigin_projection", "rastrigin_projection_mean"]:
        task = _task(name)
        evaluate, _ = _jit(name)
        rng = np.random.default_rng(5)
        x = jnp.asarray(rng.normal(0, 20, (400, task.solution_dim)))
        _, measures, _ = evaluate(x, jax.random.key(0))
        for j, (lo, hi) in enumerate(task.measure_ranges):
            assert np.all((measures[:, j] >= lo) & (measures[:, j] <= hi)), name


def test_jacobian_matches_finite_differences(name):
    task = _task(name)
    evaluate, evaluate_jac = _jit(name)
    x = jnp.asarray(_in_region(task, BATCH, seed=6))
    if task.solution_bounds is not None:  # Stay inside the box (clipped tasks).
        low, high = task.solution_bounds
        x = jnp.clip(x, low + 0.01, high - 0.01)
    _, _, jacobian, _ = evaluate_jac(x, jax.random.key(0))
    rng = np.random.default_rng(7)
    h = 1e-6
    for _ in range(3):
        v = jnp.asarray(rng.normal(size=x.shape))
        v = v / jnp.linalg.norm(v, axis=1, keepdims=True)
        obj_p, meas_p, _ = evaluate(x + h * v, jax.random.key(0))
        obj_m, meas_m, _ = evaluate(x - h * v, jax.random.key(0))
        fd = jnp.concatenate([(obj_p - obj_m)[:, None], meas_p - meas_m], 1) / (2 * h)
        analytic = jnp.einsum("bod,bd->bo", jacobian, v)
        np.testing.assert_allclose(
            np.asarray(analytic),
            np.asarray(fd),
            rtol=1e-5,
            atol=1e-5 * max(1.0, float(jnp.max(jnp.abs(fd)))),
        )


@pytest.mark.parametrize(
    "name", [name for name in sorted(FACTORIES) if FACTORIES[name]().jacobian_fn is not None]
)
def test_analytic_jacobian_equals_autodiff(name):
    task = _task(name)
    _, evaluate_jac = _jit(name)
    x = jnp.asarray(np.random.default_rng(8).normal(0, 4, (BATCH, task.solution_dim)))
    *_, analytic, _ = evaluate_jac(x, jax.random.key(0))
    *_, auto, _ = jax.jit(functools.partial(jacobian_via_vjp, task.evaluate_fn))(
        x, jax.random.key(0)
    )
    np.testing.assert_allclose(np.asarray(analytic), np.asarray(auto), rtol=1e-10, atol=1e-10)
