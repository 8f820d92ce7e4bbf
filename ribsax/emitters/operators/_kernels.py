"""Pure variation kernels shared by the operators and the MAP-Elites emitters."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["gaussian_variation", "iso_line_variation", "noise_dtype"]


def noise_dtype(dtype):
    """Float dtype in which noise for solutions of ``dtype`` is drawn."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        return dtype
    return jnp.zeros(()).dtype  # Default float (float64 under x64).


def gaussian_variation(key, parents, sigma):
    """``parents + N(0, sigma)``, noise drawn with the shape of ``parents``.

    Args:
        key: PRNG key.
        parents: ``(batch, *solution_shape)`` array.
        sigma: Scalar or array broadcastable to ``solution_shape``.

    Returns:
        Array with the shape and dtype of ``parents``.
    """
    dtype = noise_dtype(parents.dtype)
    noise = jax.random.normal(key, parents.shape, dtype) * jnp.asarray(sigma, dtype)
    return parents + noise.astype(parents.dtype)


def iso_line_variation(key, parents, iso_sigma, line_sigma):
    """Iso+line variation (Vassiliades & Mouret 2018).

    ``p0 + N(0, iso_sigma) + N(0, line_sigma) * (p1 - p0)``, where the isotropic noise
    has one entry per solution entry and the line noise one entry per solution. The
    isotropic noise is drawn before the line noise, as in pyribs.

    Args:
        key: PRNG key.
        parents: ``(2, batch, *solution_shape)`` array: first and second parents.
        iso_sigma: Scale of the isotropic noise.
        line_sigma: Scale of the noise along the line between parents.

    Returns:
        ``(batch, *solution_shape)`` array in the dtype of ``parents``.
    """
    elites, others = parents[0], parents[1]
    dtype = noise_dtype(parents.dtype)
    k_iso, k_line = jax.random.split(key)
    iso = jax.random.normal(k_iso, elites.shape, dtype) * jnp.asarray(iso_sigma, dtype)
    line_shape = (elites.shape[0],) + (1,) * (elites.ndim - 1)
    line = jax.random.normal(k_line, line_shape, dtype) * jnp.asarray(line_sigma, dtype)
    out_dtype = parents.dtype
    return elites + iso.astype(out_dtype) + line.astype(out_dtype) * (others - elites)


@partial(jax.jit, static_argnums=(0,))
def apply_variation(kernel, key, parents, params):
    """Jitted ``kernel(key, parents, *params)`` that also advances the key.

    Returns:
        ``(next_key, solutions)``.
    """
    key, sub = jax.random.split(key)
    return key, kernel(sub, parents, *params)
