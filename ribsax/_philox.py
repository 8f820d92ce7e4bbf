"""The PRNG of ribsax's kernels: Philox 4x32-10 written without ``lax.mulhi``.

The keys that emitters, rankers and optimizers derive from their seeds
(:func:`ribsax._utils.kernel_key`) use :data:`PHILOX4X32`, a JAX PRNG implementation
(``jax.extend.random.define_prng_impl``) whose every output (keys, splits, fold-ins,
random bits, hence every ``jax.random`` draw) is bit for bit that of JAX's own
``"philox4x32"`` implementation.

What it buys: on CPU, Philox draws faster than JAX's default ``threefry2x32`` (the
Gaussian noise of the emitters and CMA-ES is most of the random work in a QD
iteration; ``benchmarks/prng_impl.py`` measures the difference end to end, see
``benchmarks/RESULTS.md``). Why not JAX's ``"philox4x32"`` itself: it computes the
high word of the 32x32-bit products with ``lax.mulhi``, which JAX 0.10's Shardy
partitioner cannot lower, so a fused loop sharded over several devices
(:func:`ribsax.distributed.shard_task`) would fail to compile. Here the high word
comes from a 64-bit multiplication when JAX's 64-bit mode is on, and otherwise is
assembled from 16-bit halves with 32-bit multiplications; every backend and
partitioner handles both.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import define_prng_impl

__all__ = ["PHILOX4X32", "philox4x32_hash"]

_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_BUMPS = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))
_ROUNDS = 10
_LOW16 = np.uint32(0xFFFF)
_SIXTEEN = np.uint32(16)


def _mul_high(multiplier: int, x):
    """High 32 bits of the 64-bit product ``multiplier * x`` (uint32 arrays): one
    64-bit multiplication when JAX's 64-bit mode is on, else four 32-bit
    multiplications of 16-bit halves (the same value either way)."""
    if jax.dtypes.canonicalize_dtype(np.uint64) == np.uint64:
        product = x.astype(np.uint64) * np.uint64(multiplier)
        return lax.shift_right_logical(product, np.uint64(32)).astype(np.uint32)
    m_hi, m_lo = np.uint32(multiplier >> 16), np.uint32(multiplier & 0xFFFF)
    x_hi, x_lo = lax.shift_right_logical(x, _SIXTEEN), x & _LOW16
    # Column sums of the 16-bit partial products; none of them overflows 32 bits.
    low = lax.shift_right_logical(m_lo * x_lo, _SIXTEEN)
    mid1 = m_hi * x_lo + low
    mid2 = m_lo * x_hi + (mid1 & _LOW16)
    return (
        m_hi * x_hi
        + lax.shift_right_logical(mid1, _SIXTEEN)
        + lax.shift_right_logical(mid2, _SIXTEEN)
    )


def philox4x32_hash(k0, k1, x0, x1, x2, x3):
    """Philox 4x32 with 10 rounds (Salmon et al., 2011) of the counter words
    ``x0..x3`` under the key words ``k0, k1`` (uint32 arrays, broadcast together).

    Returns:
        The four uint32 output words.
    """
    k0, k1, x0, x1, x2, x3 = (jnp.asarray(word, np.uint32) for word in (k0, k1, x0, x1, x2, x3))
    m0, m1 = _MULTIPLIERS
    for rnd in range(_ROUNDS):
        if rnd:
            k0 = k0 + _KEY_BUMPS[0]
            k1 = k1 + _KEY_BUMPS[1]
        lo0, hi0 = np.uint32(m0) * x0, _mul_high(m0, x0)
        lo1, hi1 = np.uint32(m1) * x2, _mul_high(m1, x2)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return x0, x1, x2, x3


def _counters(shape):
    """High and low words of the row-major position of every element of
    ``shape`` (fewer than 2**32 elements: the high words are zero)."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError("random arrays of 2**32 elements or more")
    return (jnp.zeros(shape, np.uint32), lax.iota(np.uint32, max(size, 1))[:size].reshape(shape))


def _seed(seed):
    if seed.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if not np.issubdtype(seed.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    high = lax.convert_element_type(
        lax.shift_right_logical(seed, lax.convert_element_type(32, seed.dtype)), np.uint32
    )
    low = lax.convert_element_type(seed, np.uint32)
    zero = np.uint32(0)
    out = philox4x32_hash(zero, zero, high, low, zero, zero)
    return jnp.stack([out[0], out[1]])


def _split(key, shape):
    high, low = _counters(shape)
    zeros = jnp.zeros(shape, np.uint32)
    out = philox4x32_hash(key[0], key[1], zeros, zeros, high, low)
    return jnp.stack([out[0], out[1]], axis=len(shape))


def _fold_in(key, data):
    zero = np.uint32(0)
    out = philox4x32_hash(key[0], key[1], zero, zero, zero, jnp.asarray(data, np.uint32))
    return jnp.stack([out[0], out[1]])


def _random_bits(key, bit_width, shape):
    if bit_width not in (8, 16, 32, 64):
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    high, low = _counters(shape)
    zeros = jnp.zeros(shape, np.uint32)
    out = philox4x32_hash(key[0], key[1], high, low, zeros, zeros)
    dtype = np.dtype(f"uint{bit_width}")
    if bit_width == 64:
        return lax.shift_left(out[0].astype(dtype), dtype.type(32)) | out[1].astype(dtype)
    mixed = out[0] ^ out[1] ^ out[2] ^ out[3]
    return mixed if bit_width == 32 else mixed.astype(dtype)


#: The PRNG implementation of ribsax's kernel keys (pass it as ``impl`` to
#: ``jax.random.key`` or ``jax.random.wrap_key_data``).
PHILOX4X32 = define_prng_impl(
    key_shape=(2,),
    seed=_seed,
    split=_split,
    random_bits=_random_bits,
    fold_in=_fold_in,
    name="ribsax_philox4x32",
    tag="rphx",
)
