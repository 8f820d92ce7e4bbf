"""Tests of ribsax.rl's flax networks."""

import jax
import jax.numpy as jnp

from ribsax.rl import MLP, DeterministicPolicy, GaussianPolicy, QNetwork


def test_shapes_and_ranges():
    key = jax.random.key(0)
    obs = jax.random.normal(key, (5, 7)) * 10
    act = jnp.zeros((5, 2))
    mlp = MLP((4, 3))
    assert mlp.apply(mlp.init(key, obs), obs).shape == (5, 3)
    pi = DeterministicPolicy((8, 8), 2)
    a = pi.apply(pi.init(key, obs), obs)
    assert a.shape == (5, 2) and float(jnp.max(jnp.abs(a))) <= 1.0
    g = GaussianPolicy((8,), 2, min_std=0.01)
    loc, scale = g.apply(g.init(key, obs), obs)
    assert loc.shape == scale.shape == (5, 2) and float(jnp.min(scale)) >= 0.01
    q = QNetwork((8, 8), n_critics=3)
    params = q.init(key, obs, act)
    out = q.apply(params, obs, act)
    assert out.shape == (5, 3)
    assert len(params["params"]) == 3  # independent critics
    assert not jnp.allclose(out[:, 0], out[:, 1])


def test_input_size_from_data():
    # obs ⊕ skill: the same module works with a longer input.
    pi = DeterministicPolicy((8,), 2)
    params = pi.init(jax.random.key(0), jnp.zeros((1, 7 + 5)))
    assert pi.apply(params, jnp.ones((3, 12))).shape == (3, 2)
    assert params["params"]["MLP_0"]["Dense_0"]["kernel"].shape == (12, 8)
