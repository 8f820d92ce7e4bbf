"""Seeding helpers: which PRNG implementation the keys derived from seeds use."""

import jax
import numpy as np
import pytest

from ribsax._utils import KERNEL_PRNG_IMPL, host_copy, kernel_key, seed_to_key
from ribsax.archives import GridArchive
from ribsax.emitters import (
    EvolutionStrategyEmitter,
    GaussianEmitter,
    GradientArborescenceEmitter,
    GradientOperatorEmitter,
    IsoLineEmitter,
)


def _impl(key) -> str:
    return str(jax.random.key_impl(key))


def test_seed_to_key_uses_jax_default_and_same_words_under_any_impl():
    seed = np.random.SeedSequence(7)
    default = seed_to_key(seed)
    assert _impl(default) == _impl(jax.random.key(0))
    philox = seed_to_key(seed, "philox4x32")
    assert _impl(philox) == "philox4x32"
    np.testing.assert_array_equal(jax.random.key_data(default), jax.random.key_data(philox))
    np.testing.assert_array_equal(
        jax.random.key_data(seed_to_key(7)), jax.random.key_data(kernel_key(7))
    )


def test_seed_to_key_rejects_other_seeds():
    with pytest.raises(ValueError, match="seed must be None, an int"):
        seed_to_key(1.5)


def test_kernel_key_is_philox_and_reproducible():
    assert _impl(kernel_key(3)) == _impl(jax.random.key(0, impl=KERNEL_PRNG_IMPL))
    # The same draws as JAX's own Philox 4x32 from the same seed words.
    np.testing.assert_array_equal(
        jax.random.normal(kernel_key(3), (4,)),
        jax.random.normal(seed_to_key(3, "philox4x32"), (4,)),
    )
    a = jax.random.normal(kernel_key(3), (4,))
    b = jax.random.normal(kernel_key(3), (4,))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, jax.random.normal(kernel_key(4), (4,)))


@pytest.mark.parametrize(
    "make",
    [
        lambda a: GaussianEmitter(a, sigma=0.1, x0=np.zeros(3), seed=1),
        lambda a: IsoLineEmitter(a, x0=np.zeros(3), seed=1),
        lambda a: EvolutionStrategyEmitter(a, x0=np.zeros(3), sigma0=0.1, seed=1),
        lambda a: GradientArborescenceEmitter(a, x0=np.zeros(3), sigma0=0.1, lr=0.1, seed=1),
        lambda a: GradientOperatorEmitter(a, sigma=0.1, sigma_g=0.1, x0=np.zeros(3), seed=1),
    ],
    ids=[
        "gaussian",
        "iso_line",
        "evolution_strategy",
        "gradient_arborescence",
        "gradient_operator",
    ],
)
def test_emitter_states_hold_kernel_keys(make):
    archive = GridArchive(solution_dim=3, dims=[4, 4], ranges=[(-1, 1)] * 2)
    emitter = make(archive)
    keys = [
        leaf
        for leaf in jax.tree.leaves(emitter.state)
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
    ]
    assert keys, "the emitter's state holds no PRNG key"
    assert {_impl(k) for k in keys} == {_impl(kernel_key(0))}


@pytest.mark.parametrize(
    "value,dtype",
    [
        (np.arange(270 * 3 * 100, dtype=np.float64).reshape(270, 3, 100)[:, ::2], None),
        (np.arange(7, dtype=np.int64), np.float32),
        (np.float64(2.5), None),
        (np.zeros((0, 3)), None),
        ([[True, False]], None),
    ],
)
def test_host_copy_is_a_private_copy(value, dtype):
    out = host_copy(value, dtype)
    expected = np.array(value, dtype=dtype)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)
    assert out.flags["C_CONTIGUOUS"]
    if isinstance(value, np.ndarray) and value.size:
        assert not np.shares_memory(out, value)
        value.flat[0] += 1
        np.testing.assert_array_equal(out, expected)
