"""IsoLineEmitter: the Iso+LineDD variation of Vassiliades & Mouret (2018)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ribsax.emitters._variation_emitter import VariationEmitter, VariationKernel
from ribsax.emitters.operators._kernels import iso_line_variation

__all__ = ["IsoLineEmitter", "IsoLineKernel"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class IsoLineKernel(VariationKernel):
    """The :class:`~ribsax.emitters.VariationKernel` of :class:`IsoLineEmitter`:
    ``x_i + N(0, iso_sigma) + N(0, line_sigma) * (x_j - x_i)`` for elites ``x_i``,
    ``x_j`` sampled uniformly, clipped to the bounds (``init_args``:
    ``params=(iso_sigma, line_sigma)``; ``x0``, ``lower_bounds``,
    ``upper_bounds``).

    Attributes:
        batch_size: Solutions per ask.
        solution_shape: Shape of one solution.
        dtype: Solution dtype.
    """

    operator: Callable = iso_line_variation
    parent_type: int = 2


class IsoLineEmitter(VariationEmitter):
    """Emits solutions with isotropic noise plus noise along the line to another elite.

    Each solution is ``x_i + N(0, iso_sigma) + N(0, line_sigma) * (x_j - x_i)`` where
    ``x_i`` and ``x_j`` are elites sampled uniformly from the archive (one line draw
    per solution), clipped to the bounds. While the archive is empty, :meth:`ask`
    returns ``initial_solutions`` (clipped) if they were given; otherwise every parent
    is ``x0`` (so the line term vanishes).

    As for :class:`GaussianEmitter`, randomness comes from this emitter's JAX key,
    parents are sampled on the device, and ``ask`` is one jitted (fusable) kernel,
    an :class:`IsoLineKernel` run by :class:`~ribsax.emitters.JaxEmitter`.

    Args:
        archive: Archive to sample parents from.
        iso_sigma: Scale of the isotropic noise.
        line_sigma: Scale of the line noise.
        x0: Parent used while the archive is empty.
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
        iso_sigma=0.01,
        line_sigma=0.2,
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
        dtype = archive.dtypes["solution"]
        self._iso_sigma = np.array(iso_sigma, dtype=dtype)
        self._line_sigma = np.array(line_sigma, dtype=dtype)
        self._check_x0(x0, initial_solutions)
        self._setup(IsoLineKernel, (self._iso_sigma, self._line_sigma))

    @property
    def iso_sigma(self):
        """Scale of the isotropic noise."""
        return self._iso_sigma

    @property
    def line_sigma(self):
        """Scale of the line noise."""
        return self._line_sigma
