"""ribsax's standard normal draws: exact quantiles, the normal distribution, shapes,
keys and dtypes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from ribsax._normal import mirrored, normal_quantile_of_offset, standard_normal
from ribsax._utils import kernel_key


def test_quantile_matches_scipy_over_the_whole_range():
    # Offsets |u - 1/2| from the grid's smallest to its largest, dense near 1/2
    # (the far tail) and across the three branches of the approximation.
    offsets = np.unique(
        np.concatenate(
            [
                np.linspace(2.0**-54, 0.5 - 2.0**-54, 100_001),
                0.5 - np.geomspace(2.0**-54, 0.2, 100_001),
                np.geomspace(2.0**-54, 0.4, 10_001),
            ]
        )
    )
    ours = np.asarray(jax.jit(normal_quantile_of_offset)(offsets))
    reference = np.sqrt(2.0) * special.erfinv(2.0 * offsets)
    np.testing.assert_allclose(ours, reference, rtol=2e-15, atol=0)


def test_float64_draws_are_quantiles_of_the_documented_uniform_grid():
    key = kernel_key(9)
    shape = (30, 7)
    bits = np.asarray(jax.random.bits(key, shape, jnp.uint64))
    negative = (bits >> np.uint64(11)) & np.uint64(1) == 1
    offset = ((bits >> np.uint64(12)).astype(np.float64) * 2 + 1) * 2.0**-54
    expected = np.sqrt(2.0) * special.erfinv(2.0 * offset)
    expected = np.where(negative, -expected, expected)
    draws = jax.jit(lambda k: standard_normal(k, shape, jnp.float64))(key)
    np.testing.assert_allclose(np.asarray(draws), expected, rtol=2e-15, atol=0)


def test_float64_draws_are_standard_normal():
    key = kernel_key(7)
    draws = np.asarray(jax.jit(lambda k: standard_normal(k, (400_000,), jnp.float64))(key))
    assert draws.dtype == np.float64
    assert np.all(np.isfinite(draws))
    assert stats.kstest(draws, "norm").pvalue > 1e-3
    assert abs(draws.mean()) < 5 / np.sqrt(draws.size)
    assert abs(draws.var() - 1.0) < 5 * np.sqrt(2 / draws.size)
    # Both tails, beyond 3 sigma: binomial counts within 5 standard deviations.
    expected = draws.size * stats.norm.sf(3.0)
    for count in (np.sum(draws > 3.0), np.sum(draws < -3.0)):
        assert abs(count - expected) < 5 * np.sqrt(expected)
    assert np.abs(draws).max() < 8.3


def test_draws_are_reproducible_and_differ_between_keys():
    key = kernel_key(3)
    draw = jax.jit(lambda k: standard_normal(k, (4, 5), jnp.float64))
    first = np.asarray(draw(key))
    np.testing.assert_array_equal(first, np.asarray(draw(key)))
    # Outside jit the same numbers, up to the rounding of fused operations.
    np.testing.assert_allclose(
        first, np.asarray(standard_normal(key, (4, 5), jnp.float64)), rtol=2e-15, atol=1e-300
    )
    other = np.asarray(draw(kernel_key(4)))
    assert first.shape == (4, 5)
    assert not np.any(first == other)


def test_vmap_over_keys_equals_separate_draws():
    keys = jax.random.split(kernel_key(11), 3)
    batched = jax.vmap(lambda k: standard_normal(k, (6, 2), jnp.float64))(keys)
    for i in range(3):
        np.testing.assert_array_equal(
            np.asarray(batched[i]), np.asarray(standard_normal(keys[i], (6, 2), jnp.float64))
        )


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_other_dtypes_are_jax_random_normal(dtype):
    key = kernel_key(5)
    np.testing.assert_array_equal(
        np.asarray(standard_normal(key, (3, 7), dtype), np.float64),
        np.asarray(jax.random.normal(key, (3, 7), dtype), np.float64),
    )


def test_empty_shape():
    assert standard_normal(kernel_key(0), (0, 3), jnp.float64).shape == (0, 3)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mirrored_equals_concatenation_with_negation(axis, dtype):
    eps = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(dtype)
    expected = np.concatenate([eps, -eps], axis=axis)
    out = np.asarray(jax.jit(lambda e: mirrored(e, axis))(eps))
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_mirrored_of_a_fresh_draw_matches_the_draw():
    key = kernel_key(7)
    eps, out = jax.jit(lambda k: (lambda e: (e, mirrored(e)))(jax.random.normal(k, (6, 11))))(key)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([eps, -np.asarray(eps)]))
