"""Tests for the gradient sources: exact (autodiff) and ES-estimated Jacobians."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.archives import GridArchive
from ribsax.emitters import GradientArborescenceEmitter
from ribsax.schedulers import Scheduler
from ribsax.tasks import (
    EXTRA_EVALUATIONS,
    JacobianSource,
    arm,
    centered_ranks,
    es_jacobian,
    es_jacobian_fn,
    exact_jacobian,
    exact_jacobian_fn,
    jacobian_via_jvp,
    sphere,
    with_jacobian,
)


def _points(n, dim, seed=1):
    return jax.random.uniform(jax.random.key(seed), (n, dim), minval=-4.0, maxval=4.0)


@pytest.mark.parametrize("mode", ["auto", "rev", "fwd"])
def test_exact_jacobian_matches_analytic(mode):
    task = sphere(6)
    x = _points(5, 6) * 2  # Some coordinates fold (|x| > 5.12).
    objective, measures, jacobian, _ = exact_jacobian(task.evaluate, x, jax.random.key(0), mode)
    ref_obj, ref_meas, ref_jac, _ = task.evaluate_with_jacobian(x)
    assert jacobian.shape == (5, 3, 6)
    np.testing.assert_allclose(objective, ref_obj, rtol=1e-12)
    np.testing.assert_allclose(measures, ref_meas, rtol=1e-12)
    np.testing.assert_allclose(jacobian, ref_jac, rtol=1e-10, atol=1e-12)


def test_auto_mode_picks_forward_for_narrow_inputs():
    task = arm(2)  # 2 joints, 2 measures: solution_dim < 1 + measure_dim.
    x = _points(4, 2)
    calls = []

    def counting(sols, key):
        calls.append(sols)
        return task.evaluate(sols, key)

    _, _, auto, _ = exact_jacobian(counting, x, jax.random.key(0))
    _, _, fwd, _ = jacobian_via_jvp(task.evaluate, x, jax.random.key(0))
    np.testing.assert_allclose(auto, fwd, rtol=1e-12)
    _, _, rev, _ = exact_jacobian(task.evaluate, x, jax.random.key(0), "rev")
    np.testing.assert_allclose(auto, rev, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="mode must be"):
        exact_jacobian(task.evaluate, x, jax.random.key(0), "foo")


def test_centered_ranks():
    ranks = centered_ranks(jnp.array([[3.0, 10.0], [1.0, 20.0], [2.0, 0.0]]), axis=0)
    np.testing.assert_allclose(ranks, [[0.5, 0.0], [-0.5, 0.5], [0.0, -0.5]])


def _cosines(a, b):
    return np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_es_estimate_correlates_with_exact_gradient():
    """10-D sphere, 200 mirrored samples (100 pairs). For a locally linear function
    the mirrored estimate is g + noise with expected cosine about
    sqrt(pairs / (pairs + dim)) = sqrt(100 / 110) = 0.95, slightly lowered by the
    rank transform (correlation ~0.98 for Gaussian projections). Every row
    (objective and both measures) of 32 points must average above 0.85 and no
    single cosine may drop below 0.7."""
    task = sphere(10)
    x = _points(32, 10)
    _, _, exact, _ = task.evaluate_with_jacobian(x)
    source = jax.jit(es_jacobian_fn(task.evaluate, sample_batch_size=200))
    objective, measures, estimate, _ = source(x, jax.random.key(3))
    assert estimate.shape == (32, 3, 10)
    cos = _cosines(np.asarray(exact), np.asarray(estimate))
    assert np.all(cos.mean(axis=0) > 0.85)
    assert cos.min() > 0.7
    ref_obj, ref_meas, _ = task.evaluate(x)
    np.testing.assert_allclose(objective, ref_obj)
    np.testing.assert_allclose(measures, ref_meas)


@pytest.mark.parametrize("mirror,rank_norm", [(False, True), (True, False)])
def test_es_variants_also_estimate_the_gradient(mirror, rank_norm):
    task = sphere(5)
    x = _points(16, 5)
    _, _, exact, _ = task.evaluate_with_jacobian(x)
    _, _, estimate, _ = es_jacobian(
        task.evaluate,
        x,
        jax.random.key(0),
        sample_batch_size=300,
        mirror=mirror,
        rank_norm=rank_norm,
    )
    assert _cosines(np.asarray(exact), np.asarray(estimate)).mean() > 0.8


def test_es_is_deterministic_by_key_and_returns_samples():
    task = sphere(4)
    x = _points(3, 4)
    run = jax.jit(
        lambda k: es_jacobian(
            task.evaluate, x, k, sample_batch_size=8, sample_sigma=0.1, return_samples=True
        )
    )
    a, b, c = run(jax.random.key(0)), run(jax.random.key(0)), run(jax.random.key(1))
    np.testing.assert_array_equal(a[2], b[2])
    assert not np.array_equal(a[2], c[2])
    np.testing.assert_array_equal(a[3][EXTRA_EVALUATIONS], [8, 8, 8])
    samples = a[3]["es_samples"]
    assert samples["solution"].shape == (3, 8, 4)
    assert samples["objective"].shape == (3, 8)
    assert samples["measures"].shape == (3, 8, 2)
    # Mirrored: sample i and i + 4 are symmetric around the point.
    np.testing.assert_allclose(
        samples["solution"][:, :4] + samples["solution"][:, 4:],
        np.broadcast_to(2 * np.asarray(x)[:, None], (3, 4, 4)),
        rtol=1e-12,
    )
    obj, meas, _ = task.evaluate(samples["solution"].reshape(-1, 4))
    np.testing.assert_allclose(samples["objective"].ravel(), obj)
    np.testing.assert_allclose(samples["measures"].reshape(-1, 2), meas)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"sample_batch_size": 7}, "even"),
        ({"sample_batch_size": 1, "mirror": False}, "at least 2"),
        ({"sample_sigma": 0.0}, "positive"),
    ],
)
def test_es_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        es_jacobian_fn(sphere(4).evaluate, **kwargs)


def test_with_jacobian_hook():
    task = sphere(4)

    def constant_source(solutions, key):
        del key
        objective, measures, extras = task.evaluate(solutions)
        return objective, measures, jnp.ones((len(solutions), 3, 4)), extras

    assert isinstance(constant_source, JacobianSource)
    hooked = with_jacobian(task, constant_source)
    _, _, jacobian, _ = hooked.evaluate_with_jacobian(jnp.zeros((2, 4)))
    np.testing.assert_array_equal(jacobian, np.ones((2, 3, 4)))
    assert task.jacobian_fn is not constant_source  # The original is unchanged.
    exact = with_jacobian(task, exact_jacobian_fn(task.evaluate))
    np.testing.assert_allclose(
        exact.evaluate_with_jacobian(_points(2, 4))[2],
        task.evaluate_with_jacobian(_points(2, 4))[2],
        rtol=1e-10,
        atol=1e-12,
    )
    with pytest.raises(TypeError, match="callable"):
        with_jacobian(task, 3)


@pytest.mark.parametrize("fused", [True, False])
def test_runs_count_the_es_samples_as_evaluations(fused):
    task = sphere(4)
    task = with_jacobian(task, es_jacobian_fn(task.evaluate, sample_batch_size=6))
    archive = GridArchive(solution_dim=4, dims=(5, 5), ranges=task.measure_ranges)
    emitter = GradientArborescenceEmitter(
        archive, x0=np.zeros(4), sigma0=0.5, lr=0.5, batch_size=3, seed=0
    )
    result = Scheduler(archive, [emitter]).run(task, 3, seed=0, fused=fused)
    # Each iteration: the solution point, its 6 ES samples (not inserted), 3 branches.
    assert list(result.metrics["evaluations"]) == [10, 20, 30]
    assert archive.stats.num_elites <= 3 * 4
