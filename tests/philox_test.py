"""ribsax's Philox 4x32: bit for bit JAX's "philox4x32", in every jax.random use."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ribsax._philox import PHILOX4X32

DRAWS = {
    "normal": lambda k: jax.random.normal(k, (54, 10)),
    "normal_float32": lambda k: jax.random.normal(k, (5, 3), jnp.float32),
    "uniform": lambda k: jax.random.uniform(k, (33,)),
    "randint": lambda k: jax.random.randint(k, (540,), 0, 3000),
    "bits8": lambda k: jax.random.bits(k, (7,), jnp.uint8),
    "bits16": lambda k: jax.random.bits(k, (2, 3), jnp.uint16),
    "bits32": lambda k: jax.random.bits(k, (9,), jnp.uint32),
    "split": lambda k: jax.random.key_data(jax.random.split(k, (3, 2))),
    "fold_in": lambda k: jax.random.key_data(jax.random.fold_in(k, 17)),
    "vmap": lambda k: jax.vmap(lambda kk: jax.random.normal(kk, (3, 4)))(jax.random.split(k, 5)),
    "permutation": lambda k: jax.random.permutation(k, 10),
    "empty": lambda k: jax.random.normal(k, (0, 3)),
}


@pytest.mark.parametrize("draw", list(DRAWS), ids=list(DRAWS))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_draws_equal_jax_philox(draw, jit):
    fn = jax.jit(DRAWS[draw]) if jit else DRAWS[draw]
    words = np.array([123456789, 987654321], np.uint32)
    ours = fn(jax.random.wrap_key_data(words, impl=PHILOX4X32))
    theirs = fn(jax.random.wrap_key_data(words, impl="philox4x32"))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 1])
def test_seeding_equals_jax_philox(seed):
    np.testing.assert_array_equal(
        jax.random.key_data(jax.random.key(seed, impl=PHILOX4X32)),
        jax.random.key_data(jax.random.key(seed, impl="philox4x32")),
    )


def test_non_integer_seed_is_an_error():
    with pytest.raises(TypeError, match="must be an integer"):
        jax.random.key(jnp.float32(1.0), impl=PHILOX4X32)


def test_draws_equal_jax_philox_with_x64_off():
    # The 32-bit formulation of the high product word (JAX's 64-bit mode off) gives
    # the same bits as JAX's philox4x32 too.
    words = np.array([5, 4294967295], np.uint32)
    with jax.enable_x64(False):
        for draw in ("uniform", "randint", "split", "fold_in", "bits32"):
            ours = jax.jit(DRAWS[draw])(jax.random.wrap_key_data(words, impl=PHILOX4X32))
            theirs = jax.jit(DRAWS[draw])(jax.random.wrap_key_data(words, impl="philox4x32"))
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
