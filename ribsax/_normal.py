"""Standard normal draws for ribsax's kernels.

:func:`standard_normal` is what the emitters, optimizers and rankers draw their
Gaussian noise with. For float64 it does not call ``jax.random.normal``, which maps
uniforms through the inverse error function: XLA evaluates that function's three
polynomial branches and a logarithm for every entry, and on CPU this makes float64
normals the largest single cost of a MAP-Elites or CMA-ES iteration. Instead, each
entry is the normal quantile of a uniform draw on a grid of 2^53 points, computed
with Wichura's rational approximations (Algorithm AS 241, ``PPND16``; relative error
below 1e-15 over the whole range): the central 85% of the mass needs only one
rational function, and only the logarithm of the tail branch is paid for every
entry. The result has the same distribution as ``jax.random.normal`` (both are the
exact quantile transform of a discrete uniform, up to rounding), but not the same
numbers. Other dtypes use ``jax.random.normal`` unchanged.

The uniform grid is symmetric: of each 64-bit word of ``jax.random.bits(key, shape,
uint64)``, bit 11 gives the sign (set: negative) and bits 12-63 the integer ``j`` of
the magnitude ``|u - 1/2| = (2j + 1) / 2^54``, so ``x`` and ``-x`` are equally likely,
no draw is 0 or 1, and the largest magnitude is about 8.3.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._utils import x64_enabled

__all__ = ["mirrored", "standard_normal"]

# Wichura (1988), Algorithm AS 241, PPND16: numerator / denominator coefficients in
# increasing powers. Central region |q| <= 0.425, in r = 0.180625 - q^2.
_CENTRAL_NUM = (
    3.3871328727963666080e0,
    1.3314166789178437745e2,
    1.9715909503065514427e3,
    1.3731693765509461125e4,
    4.5921953931549871457e4,
    6.7265770927008700853e4,
    3.3430575583588128105e4,
    2.5090809287301226727e3,
)
_CENTRAL_DEN = (
    1.0,
    4.2313330701600911252e1,
    6.8718700749205790830e2,
    5.3941960214247511077e3,
    2.1213794301586595867e4,
    3.9307895800092710610e4,
    2.8729085735721942674e4,
    5.2264952788528545610e3,
)
# Intermediate tail, r = sqrt(-log(min(u, 1 - u))) <= 5, in r - 1.6.
_NEAR_NUM = (
    1.42343711074968357734e0,
    4.63033784615654529590e0,
    5.76949722146069140550e0,
    3.64784832476320460504e0,
    1.27045825245236838258e0,
    2.41780725177450611770e-1,
    2.27238449892691845833e-2,
    7.74545014278341407640e-4,
)
_NEAR_DEN = (
    1.0,
    2.05319162663775882187e0,
    1.67638483018380384940e0,
    6.89767334985100004550e-1,
    1.48103976427480074590e-1,
    1.51986665636164571966e-2,
    5.47593808499534494600e-4,
    1.05075007164441684324e-9,
)
# Far tail, r > 5, in r - 5.
_FAR_NUM = (
    6.65790464350110377720e0,
    5.46378491116411436990e0,
    1.78482653991729133580e0,
    2.96560571828504891230e-1,
    2.65321895265761230930e-2,
    1.24266094738807843860e-3,
    2.71155556874348757815e-5,
    2.01033439929228813265e-7,
)
_FAR_DEN = (
    1.0,
    5.99832206555887937690e-1,
    1.36929880922735805310e-1,
    1.48753612908506148525e-2,
    7.86869131145613259100e-4,
    1.84631831751005468180e-5,
    1.42151175831644588870e-7,
    2.04426310338993978564e-15,
)


def _polynomial(x, coefficients):
    """Horner evaluation of sum(c_i x^i)."""
    result = jnp.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        result = result * x + c
    return result


def _rational(x, numerator, denominator):
    return _polynomial(x, numerator) / _polynomial(x, denominator)


def normal_quantile_of_offset(offset):
    """The standard normal quantile of ``1/2 + offset`` for float64 ``offset`` in
    (0, 1/2), by AS 241 (exposed for tests)."""
    central = offset * _rational(0.180625 - offset * offset, _CENTRAL_NUM, _CENTRAL_DEN)
    tail_r = jnp.sqrt(-jnp.log(0.5 - offset))
    tail = jnp.where(
        tail_r <= 5.0,
        _rational(tail_r - 1.6, _NEAR_NUM, _NEAR_DEN),
        _rational(tail_r - 5.0, _FAR_NUM, _FAR_DEN),
    )
    return jnp.where(offset <= 0.425, central, tail)


def _uniform_offsets(bits):
    """Signs and offsets ``|u - 1/2| = (2j + 1) / 2^54`` from uint64 words: bit 11
    is the sign (set: negative), bits 12-63 are ``j``."""
    sign = (bits >> np.uint64(11)) & np.uint64(1)
    # Through int64 (exact: j < 2^52): XLA:CPU converts int64 to float64 faster
    # than uint64.
    j = (bits >> np.uint64(12)).astype(jnp.int64)
    offset = (j.astype(jnp.float64) * 2.0 + 1.0) * (2.0**-54)
    return sign == 1, offset


def standard_normal(key, shape, dtype):
    """Draws standard normal samples of ``shape`` and ``dtype`` from ``key``.

    Args:
        key: A JAX PRNG key.
        shape: Output shape.
        dtype: Output dtype (floating). float64 uses the quantile transform of the
            module docstring when JAX's 64-bit mode is on; other dtypes, and
            float64 with 64-bit mode off, call ``jax.random.normal``.

    Returns:
        An array of ``shape`` and ``dtype``.
    """
    dtype = jnp.dtype(dtype)
    if dtype != jnp.float64 or not x64_enabled():
        return jax.random.normal(key, shape, dtype)
    negative, offset = _uniform_offsets(jax.random.bits(key, shape, jnp.uint64))
    magnitude = normal_quantile_of_offset(offset)
    return jnp.where(negative, -magnitude, magnitude)


def mirrored(eps, axis=0):
    """``concatenate([eps, -eps], axis)``: the perturbations of mirrored
    (antithetic) sampling, the ``+eps`` half first.

    Written as a product with ``[1, -1]`` rather than as a concatenation: when
    ``eps`` is a fresh random draw, XLA on CPU fuses the draw into the
    concatenation and the sum with the centre that follows, and that fusion
    computes a Philox draw many times over, an order of magnitude slower than the
    product (same values, bit for bit).

    Args:
        eps: Array of perturbations.
        axis: Axis along which the mirrored half follows.

    Returns:
        Array with ``eps.shape[axis]`` doubled.
    """
    eps = jnp.asarray(eps)
    axis = axis % eps.ndim
    signs = jnp.array([1, -1], eps.dtype).reshape((2,) + (1,) * (eps.ndim - axis))
    both = signs * jnp.expand_dims(eps, axis)
    return both.reshape(eps.shape[:axis] + (2 * eps.shape[axis],) + eps.shape[axis + 1 :])
