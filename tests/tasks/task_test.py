"""Tests for the Task container, NumpyEvaluator and jacobian_via_vjp."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.tasks import NumpyEvaluator, Task, jacobian_via_vjp, sphere


def _noisy_fn(solutions, key):
    """A stochastic, non-differentiable toy task: objective = sum + noise."""
    noise = jax.random.normal(key, (solutions.shape[0],), dtype=solutions.dtype)
    return (jnp.sum(solutions, axis=1) + noise, solutions[:, :1], {"noise": noise})


def _noisy_task():
    return Task(
        name="noisy",
        solution_dim=3,
        measure_dim=1,
        measure_ranges=[(0, 1)],
        qd_score_offset=-5,
        evaluate_fn=_noisy_fn,
    )


def test_task_normalises_metadata():
    task = _noisy_task()
    assert task.measure_ranges == ((0.0, 1.0),)
    assert isinstance(task.qd_score_offset, float) and task.qd_score_offset == -5.0
    assert not task.has_jacobian
    assert "noisy" in repr(task) and "solution_dim=3" in repr(task)
    hash(task)  # Usable as a static argument.


def test_task_measure_ranges_length_checked():
    with pytest.raises(ValueError, match="measure_ranges has 2 entries"):
        Task(
            name="bad",
            solution_dim=3,
            measure_dim=1,
            measure_ranges=[(0, 1)] * 2,
            qd_score_offset=0,
            evaluate_fn=_noisy_fn,
        )


def test_non_differentiable_task_has_no_jacobian():
    task = _noisy_task()
    with pytest.raises(NotImplementedError, match="not differentiable"):
        task.evaluate_with_jacobian(jnp.zeros((2, 3)))
    with pytest.raises(NotImplementedError, match="not differentiable"):
        task.numpy_evaluator(seed=0).with_jacobian(np.zeros((2, 3)))


def test_default_key_is_fixed():
    task = _noisy_task()
    a = task.evaluate(jnp.zeros((4, 3)))
    b = task.evaluate(jnp.zeros((4, 3)), jax.random.key(0))
    np.testing.assert_array_equal(a[0], b[0])


def test_initial_solutions_default_zeros_and_dtype():
    task = _noisy_task()
    x = task.initial_solutions(4, dtype=np.float32)
    assert x.shape == (4, 3) and x.dtype == jnp.float32
    np.testing.assert_array_equal(x, 0.0)
    assert task.initial_solutions(2).dtype == jnp.float64  # x64 is on in tests.


def test_numpy_evaluator_returns_numpy_and_splits_key():
    task = _noisy_task()
    evaluator = task.numpy_evaluator(seed=42)
    assert isinstance(evaluator, NumpyEvaluator) and evaluator.task is task
    x = np.ones((4, 3))
    obj1, meas1, extras1 = evaluator(x)
    obj2, _, _ = evaluator(x)
    assert isinstance(obj1, np.ndarray) and isinstance(meas1, np.ndarray)
    assert isinstance(extras1["noise"], np.ndarray)
    assert obj1.dtype == np.float64 and obj1.shape == (4,)
    assert not np.allclose(obj1, obj2)  # Fresh key per call.
    # Same seed, same sequence.
    again = NumpyEvaluator(task, seed=42)
    np.testing.assert_array_equal(again(x)[0], obj1)
    np.testing.assert_array_equal(again(x)[0], obj2)
    # A JAX key (typed or raw) seeds it too.
    NumpyEvaluator(task, seed=jax.random.key(1))(x)
    NumpyEvaluator(task, seed=jax.random.PRNGKey(1))(x)


def test_numpy_evaluator_dtypes():
    task = sphere(solution_dim=4)
    objective, measures, jacobian, _ = task.numpy_evaluator(seed=0).with_jacobian(
        np.zeros((2, 4), dtype=np.float32)
    )
    assert objective.dtype == measures.dtype == jacobian.dtype == np.float32
    assert jacobian.shape == (2, 3, 4)
    # Integers become the default float dtype; an explicit dtype wins.
    assert task.numpy_evaluator()(np.zeros((2, 4), dtype=int))[0].dtype == np.float64
    forced = task.numpy_evaluator(dtype=np.float32)(np.zeros((2, 4)))
    assert forced[0].dtype == np.float32


def test_numpy_evaluator_shape_error_matches_pyribs():
    evaluator = sphere(solution_dim=4).numpy_evaluator()
    with pytest.raises(
        ValueError,
        match=r"Expected solution to be an array with "
        r"shape \(batch_size, 4\) \(i.e. shape \(batch_size, "
        r"solution_dim\)\) but it had shape \(2, 5\).",
    ):
        evaluator(np.zeros((2, 5)))


def test_traced_evaluation_shape_error():
    with pytest.raises(ValueError, match="Expected solution to be an array"):
        jax.jit(sphere(solution_dim=4).evaluate)(jnp.zeros((2, 5)))


def test_jacobian_via_vjp_matches_jacrev():
    def fn(solutions, key):
        del key
        return (
            jnp.sin(solutions).sum(1) * solutions[:, 0],
            jnp.stack([solutions[:, 1] ** 3, jnp.prod(solutions, 1)], 1),
            {"tag": solutions[:, 0]},
        )

    x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 4)))
    objective, measures, jacobian, extras = jacobian_via_vjp(fn, x, jax.random.key(0))

    def single(v):
        o, m, _ = fn(v[None], None)
        return jnp.concatenate([o, m[0]])

    expected = jax.vmap(jax.jacrev(single))(x)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-12)
    np.testing.assert_allclose(objective, fn(x, None)[0])
    np.testing.assert_array_equal(extras["tag"], x[:, 0])


def test_differentiable_task_uses_autodiff():
    def fn(solutions, key):
        del key
        return jnp.sum(solutions**2, 1), solutions[:, :2] * 3.0, {}

    task = Task(
        name="quad",
        solution_dim=3,
        measure_dim=2,
        measure_ranges=[(0, 1), (0, 1)],
        qd_score_offset=0,
        evaluate_fn=fn,
        differentiable=True,
    )
    x = jnp.asarray([[1.0, 2.0, 3.0]])
    _, _, jacobian, _ = task.evaluate_with_jacobian(x)
    np.testing.assert_allclose(jacobian[0], [[2, 4, 6], [3, 0, 0], [0, 3, 0]])


def test_fused_usage_inside_scan_and_vmap():
    """A task traces inside lax.scan and vmap (the fused-loop pattern)."""
    task = sphere(solution_dim=6)

    def step(x, key):
        objective, _, jacobian, _ = task.evaluate_with_jacobian(x, key)
        return x + 0.1 * jacobian[:, 0], objective.max()

    @jax.jit
    def run(x0, keys):
        return jax.lax.scan(step, x0, keys)

    keys = jax.random.split(jax.random.key(0), 20)
    _, best = run(jnp.zeros((3, 6)), keys)
    assert np.all(np.diff(np.asarray(best)) > 0)  # Gradient ascent improves.
    seeds = jax.vmap(lambda x: task.evaluate(x)[0])(jnp.zeros((2, 3, 6)))
    assert seeds.shape == (2, 3)


def test_x64_disabled_rejects_float64():
    script = textwrap.dedent("""
        import numpy as np
        from ribsax.tasks import sphere
        ev = sphere(solution_dim=4).numpy_evaluator(seed=0)
        obj, meas, _ = ev(np.zeros((2, 4), dtype=np.float32))
        assert obj.dtype == np.float32, obj.dtype
        assert ev(np.zeros((2, 4), dtype=int))[0].dtype == np.float32
        try:
            ev(np.zeros((2, 4)))
        except ValueError as e:
            print("ERR", e)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert "ERR solution dtype=float64 requires JAX 64-bit mode" in out.stdout


def test_jitted_functions_are_cached_and_shared():
    task = sphere(solution_dim=4)
    assert task.jit_evaluate is task.jit_evaluate
    assert task.jit_evaluate_with_jacobian is task.jit_evaluate_with_jacobian
    a, b = task.numpy_evaluator(seed=0), task.numpy_evaluator(seed=1)
    assert a._evaluate is b._evaluate is task.jit_evaluate
    x = jnp.ones((2, 4))
    np.testing.assert_array_equal(task.jit_evaluate(x)[0], task.evaluate(x)[0])
