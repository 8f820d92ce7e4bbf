"""GaussianEmitter: MAP-Elites' Gaussian mutation of archive elites."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ribsax.emitters._variation_emitter import VariationEmitter, VariationKernel
from ribsax.emitters.operators._kernels import gaussian_variation

__all__ = ["GaussianEmitter", "GaussianKernel"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GaussianKernel(VariationKernel):
    """The :class:`~ribsax.emitters.VariationKernel` of :class:`GaussianEmitter`:
    each solution is a uniformly sampled elite plus ``N(0, sigma)`` noise, clipped
    to the bounds (``init_args``: ``params=(sigma,)``, ``sigma`` a scalar or an
    array of the solution shape; ``x0``, ``lower_bounds``, ``upper_bounds``).

    Attributes:
        batch_size: Solutions per ask.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
    """

    operator: Callable = gaussian_variation
    parent_type: int = 1


class GaussianEmitter(VariationEmitter):
    """Emits solutions by adding Gaussian noise to elites of the archive.

    While the archive is empty, :meth:`ask` returns ``initial_solutions`` (clipped to
    the bounds) if they were given, and otherwise perturbs ``x0``. Once the archive
    has elites, each solution is a uniformly sampled elite plus ``N(0, sigma)``
    noise. Solutions are clipped to the bounds.

    Differences from pyribs: the noise and the parent sampling come from this
    emitter's JAX PRNG key (derived from ``seed``); parents are sampled on the device
    from the archive's store instead of through ``archive.sample_elites``, so the
    archive's own generator is not consumed. The emitter runs a
    :class:`GaussianKernel` (it is a :class:`~ribsax.emitters.JaxEmitter`): the
    whole ``ask`` is one jitted kernel, and a scheduler fuses GaussianEmitters of
    equal configuration into one.

    Args:
        archive: Archive to sample parents from (its solution dtype is used).
        sigma: Standard deviation of the noise: a scalar or an array of the solution
            shape (diagonal Gaussian).
        x0: Centre of the distribution while the archive is empty.
        initial_solutions: ``(n, *solution_dim)`` solutions returned while the
            archive is empty.
        bounds: None, or per-dimension ``(lower, upper)`` pairs (1D solutions).
        lower_bounds: Alternative to ``bounds``: array of the solution shape.
        upper_bounds: Alternative to ``bounds``: array of the solution shape.
        batch_size: Number of solutions per :meth:`ask`.
        seed: None, an int or a :class:`numpy.random.SeedSequence`.

    Raises:
        ValueError: Neither or both of ``x0`` and ``initial_solutions`` are given,
            either has the wrong shape, or the bounds are invalid.
    """

    def __init__(
        self,
        archive,
        *,
        sigma,
        x0=None,
        initial_solutions=None,
        bounds=None,
        lower_bounds=None,
        upper_bounds=None,
        batch_size=64,
        seed=None,
    ):
        VariationEmitter.__init__(
            self,
            archive,
            x0=x0,
            initial_solutions=initial_solutions,
            bounds=bounds,
            lower_bounds=lower_bounds,
            upper_bounds=upper_bounds,
            batch_size=batch_size,
            seed=seed,
        )
        self._sigma = np.array(sigma, dtype=archive.dtypes["solution"])
        self._check_x0(x0, initial_solutions)
        self._setup(GaussianKernel, (self._sigma,))

    @property
    def sigma(self):
        """Standard deviation of the (diagonal) Gaussian noise."""
        return self._sigma
