"""Tests for MLPPolicy (flat parameter vectors for flax MLP controllers)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax.tasks.brax import MLPPolicy


def test_num_params_matches_layer_sizes():
    # dqd-rl's count for QD Walker: 22 -> 128 -> 128 -> 6 with biases.
    assert MLPPolicy(22, 6).num_params == 20_230
    assert MLPPolicy(3, 2, hidden_layer_sizes=(4,)).num_params == 3 * 4 + 4 + 4 * 2 + 2


def test_ravel_unravel_round_trip_and_layout():
    policy = MLPPolicy(3, 2, hidden_layer_sizes=(4,))
    flat = jnp.arange(policy.num_params, dtype=jnp.float64)
    params = policy.unravel(flat)
    np.testing.assert_array_equal(policy.ravel(params), flat)
    layers = params["params"]
    # Layer by layer, bias then kernel (flax's sorted keys), kernels row-major.
    assert layers["dense_0"]["kernel"].shape == (3, 4)
    assert layers["dense_1"]["kernel"].shape == (4, 2)
    assert layers["dense_0"]["bias"].dtype == jnp.float64


def test_apply_matches_manual_forward_pass():
    policy = MLPPolicy(3, 2, hidden_layer_sizes=(5, 4))
    flat = policy.init(jax.random.key(0), dtype=jnp.float64)
    flat = flat + 0.1 * jax.random.normal(jax.random.key(1), flat.shape, flat.dtype)
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(7, 3)))
    p = policy.unravel(flat)["params"]
    h = jnp.tanh(obs @ p["dense_0"]["kernel"] + p["dense_0"]["bias"])
    h = jnp.tanh(h @ p["dense_1"]["kernel"] + p["dense_1"]["bias"])
    expected = jnp.tanh(h @ p["dense_2"]["kernel"] + p["dense_2"]["bias"])
    np.testing.assert_allclose(policy.apply(flat, obs), expected, rtol=1e-12)
    np.testing.assert_allclose(policy.apply_tree(policy.unravel(flat), obs), expected, rtol=1e-12)
    assert np.all(np.abs(np.asarray(expected)) <= 1.0)


def test_activations_configurable():
    policy = MLPPolicy(2, 1, hidden_layer_sizes=(3,), activation="relu", final_activation=None)
    flat = jnp.ones(policy.num_params)
    obs = jnp.asarray([[1.0, -2.0]])
    # relu(1 - 2 + 1 (bias)) = 0 for all 3 units -> output = bias = 1.
    np.testing.assert_allclose(policy.apply(flat, obs), [[1.0]])
    custom = MLPPolicy(2, 1, hidden_layer_sizes=(3,), activation=jnp.sin)
    assert custom.apply(jnp.zeros(custom.num_params), obs).shape == (1, 1)
    with pytest.raises(ValueError, match="Unknown activation"):
        MLPPolicy(2, 1, activation="softsign")
    with pytest.raises(ValueError, match="Layer sizes must be positive"):
        MLPPolicy(2, 0)


def test_init_batch_distinct_and_dtype():
    policy = MLPPolicy(17, 6)
    batch = policy.init_batch(jax.random.key(0), 3, dtype=jnp.float32)
    assert batch.shape == (3, policy.num_params) and batch.dtype == jnp.float32
    assert not np.allclose(batch[0], batch[1])
    # LeCun-uniform kernels: |w| <= sqrt(3 / fan_in); zero biases.
    p = policy.unravel(batch[0])["params"]
    assert float(jnp.max(jnp.abs(p["dense_0"]["kernel"]))) <= np.sqrt(3 / 17) + 1e-6
    np.testing.assert_array_equal(p["dense_0"]["bias"], 0.0)
    again = policy.init_batch(jax.random.key(0), 3, dtype=jnp.float32)
    np.testing.assert_array_equal(batch, again)


def test_unravel_shape_error_and_vmap():
    policy = MLPPolicy(3, 2, hidden_layer_sizes=(4,))
    with pytest.raises(ValueError, match="flat parameter vector of shape"):
        policy.unravel(jnp.zeros(policy.num_params + 1))
    flats = jnp.stack([jnp.zeros(policy.num_params), jnp.ones(policy.num_params)])
    obs = jnp.ones((2, 3))
    actions = jax.jit(jax.vmap(policy.apply))(flats, obs)
    np.testing.assert_allclose(actions[0], 0.0)
    np.testing.assert_allclose(actions[1], np.tanh(4 * np.tanh(3 + 1) + 1))
