"""Tests of ribsax.rl.TanhNormal."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from ribsax.rl import TanhNormal


def test_log_prob_matches_change_of_variables():
    loc, scale = 0.4, 0.7
    dist = TanhNormal(jnp.array([loc]), jnp.array([scale]))
    a = np.linspace(-0.99, 0.99, 41)
    # Numerical density: derivative of the CDF P(tanh(u) <= a) = Phi(atanh(a)).
    h = 1e-5
    cdf = lambda x: stats.norm.cdf(np.arctanh(x), loc, scale)  # noqa: E731
    numeric = (cdf(a + h) - cdf(a - h)) / (2 * h)
    ours = np.exp(np.asarray(dist.log_prob(jnp.asarray(a)[:, None])))
    np.testing.assert_allclose(ours, numeric, rtol=1e-4)


def test_density_integrates_to_one_and_sums_dims():
    dist = TanhNormal(jnp.array([-0.3, 1.2]), jnp.array([0.5, 0.3]))
    grid = jnp.linspace(-1 + 1e-7, 1 - 1e-7, 20001)
    for d in range(2):
        one = TanhNormal(dist.loc[d : d + 1], dist.scale[d : d + 1])
        dens = jnp.exp(one.log_prob(grid[:, None]))
        assert abs(float(jnp.trapezoid(dens, grid)) - 1.0) < 1e-3
    x = jnp.array([[0.1, -0.5]])
    total = dist.log_prob(x)
    parts = sum(
        TanhNormal(dist.loc[d : d + 1], dist.scale[d : d + 1]).log_prob(x[:, d : d + 1])
        for d in range(2)
    )
    np.testing.assert_allclose(total, parts, rtol=1e-6)


def test_sample_log_prob_entropy_mode():
    dist = TanhNormal(jnp.zeros((1000, 3)), jnp.full((1000, 3), 0.5))
    key = jax.random.key(0)
    a, logp = dist.sample_and_log_prob(key)
    assert a.shape == (1000, 3) and logp.shape == (1000,)
    assert float(jnp.max(jnp.abs(a))) < 1.0
    np.testing.assert_allclose(logp, dist.log_prob(a), rtol=1e-3, atol=1e-3)
    # Unbiased estimate of E[-log p]: same mean as -log p over the draws.
    ent = dist.entropy(key)
    assert ent.shape == (1000,)
    np.testing.assert_allclose(jnp.mean(ent), jnp.mean(-logp), rtol=0.05)
    np.testing.assert_array_equal(dist.mode(), jnp.tanh(dist.loc))
    np.testing.assert_array_equal(dist.sample(key), a)  # same key, same draw
