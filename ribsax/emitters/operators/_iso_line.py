"""IsoLineOperator: the Iso+LineDD variation of Vassiliades & Mouret (2018)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ribsax._utils import kernel_key
from ribsax.emitters.operators._kernels import apply_variation, iso_line_variation
from ribsax.emitters.operators._operator_base import OperatorBase

__all__ = ["IsoLineOperator"]


class IsoLineOperator(OperatorBase):
    """Adds isotropic noise plus noise along the line between two parents.

    Takes two parents per solution (``parent_type == 2``): ``ask`` receives a
    ``(2, batch, *solution_shape)`` array and returns
    ``p0 + N(0, iso_sigma) + N(0, line_sigma) * (p1 - p0)``.

    Args:
        iso_sigma: Scale of the isotropic noise.
        line_sigma: Scale of the line noise (one draw per solution).
        seed: None, an int or a :class:`numpy.random.SeedSequence`.
    """

    #: Pure kernel ``kernel(key, parents, iso_sigma, line_sigma)``.
    kernel = staticmethod(iso_line_variation)

    def __init__(self, iso_sigma, line_sigma, seed=None) -> None:
        self._iso_sigma = iso_sigma
        self._line_sigma = line_sigma
        self._key = kernel_key(seed)

    @property
    def parent_type(self) -> int:
        """2: two parents per solution, ``(2, batch, *solution_shape)``."""
        return 2

    @property
    def iso_sigma(self):
        """Scale of the isotropic noise."""
        return self._iso_sigma

    @property
    def line_sigma(self):
        """Scale of the line noise."""
        return self._line_sigma

    @property
    def params(self) -> tuple:
        """Parameters passed to :attr:`kernel` after ``(key, parents)``."""
        return (np.asarray(self._iso_sigma), np.asarray(self._line_sigma))

    def ask(self, parents):
        """Creates one solution per pair of parents.

        Args:
            parents: ``(2, batch, *solution_shape)`` array.

        Returns:
            ``(batch, *solution_shape)`` NumPy array.
        """
        parents = jnp.asarray(np.asarray(parents))
        self._key, out = apply_variation(iso_line_variation, self._key, parents, self.params)
        return np.array(out)
