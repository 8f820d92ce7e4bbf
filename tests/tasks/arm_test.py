"""Planar arm tasks against direct NumPy re-derivations (pyribs tutorial, QDax)."""

import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.tasks import arm, qdax_arm


def numpy_pyribs_arm(solutions, link_lengths):
    """pyribs tutorials/arm_repertoire.ipynb: -variance and end-effector position."""
    objective = -np.var(solutions, axis=1)
    thetas = np.cumsum(solutions, axis=1)
    x_pos = link_lengths[None] * np.cos(thetas)
    y_pos = link_lengths[None] * np.sin(thetas)
    measures = np.concatenate(
        [np.sum(x_pos, axis=1, keepdims=True), np.sum(y_pos, axis=1, keepdims=True)], axis=1
    )
    return objective, measures


@pytest.mark.parametrize("link_lengths", [None, [0.3, 1.0, 2.0, 0.7, 1.5]])
def test_arm_matches_tutorial_formula(link_lengths):
    task = arm(dof=5, link_lengths=link_lengths)
    lengths = np.ones(5) if link_lengths is None else np.asarray(link_lengths)
    x = np.random.default_rng(0).uniform(-np.pi, np.pi, (7, 5))
    objective, measures, _ = task.evaluate(jnp.asarray(x))
    exp_obj, exp_meas = numpy_pyribs_arm(x, lengths)
    np.testing.assert_allclose(objective, exp_obj, rtol=1e-12)
    np.testing.assert_allclose(measures, exp_meas, rtol=1e-12, atol=1e-12)
    reach = float(lengths.sum())
    assert task.measure_ranges == ((-reach, reach), (-reach, reach))


def test_arm_known_configurations():
    task = arm(dof=4)
    x = jnp.asarray([[0.0, 0.0, 0.0, 0.0], [np.pi / 2, 0.0, 0.0, 0.0], [0.0, np.pi, 0.0, np.pi]])
    objective, measures, _ = task.evaluate(x)
    np.testing.assert_allclose(measures, [[4, 0], [0, 4], [0, 0]], atol=1e-12)
    assert objective[0] == 0.0 and objective[1] < 0.0


def test_arm_metadata():
    task = arm()
    assert task.solution_dim == 12
    assert task.solution_bounds == (-np.pi, np.pi)
    assert task.qd_score_offset == pytest.approx(-(np.pi**2))
    # Largest variance in [-pi, pi]: half the joints at each bound.
    x = jnp.asarray([[np.pi, -np.pi] * 6])
    assert float(task.evaluate(x)[0][0]) == pytest.approx(-(np.pi**2))


def test_arm_link_length_error():
    with pytest.raises(ValueError, match="link_lengths must have shape"):
        arm(dof=3, link_lengths=[1.0, 2.0])


def numpy_qdax_arm(params):
    x = np.clip(params, 0, 1)
    n = params.shape[1]
    objective = -np.std(x, axis=1)
    angles = np.cumsum(2 * np.pi * x - np.pi, axis=1)
    measures = np.stack(
        [np.cos(angles).sum(1) / (2 * n) + 0.5, np.sin(angles).sum(1) / (2 * n) + 0.5], 1
    )
    return objective, measures


def test_qdax_arm_matches_formula():
    task = qdax_arm(solution_dim=6)
    x = np.random.default_rng(1).uniform(-0.2, 1.2, (8, 6))
    objective, measures, _ = task.evaluate(jnp.asarray(x))
    exp_obj, exp_meas = numpy_qdax_arm(x)
    np.testing.assert_allclose(objective, exp_obj, rtol=1e-12)
    np.testing.assert_allclose(measures, exp_meas, rtol=1e-12)
    assert task.measure_ranges == ((0.0, 1.0), (0.0, 1.0))
