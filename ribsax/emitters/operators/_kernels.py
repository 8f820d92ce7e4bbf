"""Pure variation kernels shared by the operators and the MAP-Elites emitters."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ribsax._normal import standard_normal

__all__ = ["gaussian_variation", "iso_line_variation", "noise_dtype", "variation_parts"]


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
    draws = gaussian_draws(key, parents.shape, noise_dtype(parents.dtype))
    return gaussian_apply(draws, parents, sigma)


def gaussian_draws(key, parents_shape, dtype):
    """The random part of :func:`gaussian_variation`: standard normal noise of
    ``parents_shape`` in ``dtype`` (a function of ``key`` alone)."""
    return standard_normal(key, parents_shape, dtype)


def gaussian_apply(draws, parents, sigma):
    """The deterministic part of :func:`gaussian_variation`: ``parents + draws *
    sigma``."""
    noise = draws * jnp.asarray(sigma, draws.dtype)
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
    draws = iso_line_draws(key, parents.shape, noise_dtype(parents.dtype))
    return iso_line_apply(draws, parents, iso_sigma, line_sigma)


def iso_line_draws(key, parents_shape, dtype):
    """The random part of :func:`iso_line_variation`: ``(iso, line)`` standard
    normal noise, ``iso`` of one parent set's shape and ``line`` with one entry
    per solution (a function of ``key`` alone)."""
    elites_shape = tuple(parents_shape[1:])
    k_iso, k_line = jax.random.split(key)
    iso = standard_normal(k_iso, elites_shape, dtype)
    line_shape = (elites_shape[0],) + (1,) * (len(elites_shape) - 1)
    return iso, standard_normal(k_line, line_shape, dtype)


def iso_line_apply(draws, parents, iso_sigma, line_sigma):
    """The deterministic part of :func:`iso_line_variation`."""
    iso, line = draws
    elites, others = parents[0], parents[1]
    iso = iso * jnp.asarray(iso_sigma, iso.dtype)
    line = line * jnp.asarray(line_sigma, line.dtype)
    out_dtype = parents.dtype
    return elites + iso.astype(out_dtype) + line.astype(out_dtype) * (others - elites)


#: ``kernel -> (draws, apply)`` of the variation kernels split into their random
#: part (``draws(key, parents_shape, dtype)``) and the rest (``apply(draws,
#: parents, *params)``), ``kernel(key, parents, *params) == apply(draws(key,
#: parents.shape, noise_dtype(parents.dtype)), parents, *params)``.
_PARTS = {
    gaussian_variation: (gaussian_draws, gaussian_apply),
    iso_line_variation: (iso_line_draws, iso_line_apply),
}


def variation_parts(kernel):
    """``(draws, apply)`` of a variation kernel whose random draws can be made
    apart from the rest (see ``_PARTS``), or ``(None, None)``."""
    return _PARTS.get(kernel, (None, None))


@partial(jax.jit, static_argnums=(0,))
def apply_variation(kernel, key, parents, params):
    """Jitted ``kernel(key, parents, *params)`` that also advances the key.

    Returns:
        ``(next_key, solutions)``.
    """
    key, sub = jax.random.split(key)
    return key, kernel(sub, parents, *params)
