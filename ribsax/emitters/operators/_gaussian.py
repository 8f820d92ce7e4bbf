"""GaussianOperator: adds Gaussian noise to parents."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ribsax._utils import kernel_key
from ribsax.emitters.operators._kernels import apply_variation, gaussian_variation
from ribsax.emitters.operators._operator_base import OperatorBase

__all__ = ["GaussianOperator"]


class GaussianOperator(OperatorBase):
    """Adds isotropic (or per-dimension) Gaussian noise to each parent.

    Takes one parent per solution (``parent_type == 1``). The noise comes from a JAX
    PRNG key derived from ``seed``; the pure kernel is :attr:`kernel`
    (:func:`~ribsax.emitters.operators._kernels.gaussian_variation`).

    Unlike pyribs, which only supports ``(batch, dim)`` parents, parents of any shape
    ``(batch, *solution_shape)`` are accepted.

    Args:
        sigma: Standard deviation of the noise (scalar or broadcastable array).
        seed: None, an int or a :class:`numpy.random.SeedSequence`.
    """

    #: Pure kernel ``kernel(key, parents, sigma)``.
    kernel = staticmethod(gaussian_variation)

    def __init__(self, sigma, seed=None) -> None:
        self._sigma = sigma
        self._key = kernel_key(seed)

    @property
    def parent_type(self) -> int:
        """1: one parent per solution, ``(batch, *solution_shape)``."""
        return 1

    @property
    def sigma(self):
        """Standard deviation of the noise (as passed in)."""
        return self._sigma

    @property
    def params(self) -> tuple:
        """Parameters passed to :attr:`kernel` after ``(key, parents)``."""
        return (np.asarray(self._sigma),)

    def ask(self, parents):
        """Returns ``parents + N(0, sigma)``.

        Args:
            parents: ``(batch, *solution_shape)`` array.

        Returns:
            NumPy array of the same shape and dtype.
        """
        parents = jnp.asarray(np.asarray(parents))
        self._key, out = apply_variation(gaussian_variation, self._key, parents, self.params)
        return np.array(out)
