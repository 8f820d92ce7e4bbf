"""GeneticAlgorithmEmitter: MAP-Elites with a pluggable variation operator."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np

from ribsax.emitters._variation_emitter import VariationEmitter, VariationKernel
from ribsax.emitters.operators import _get_op

__all__ = ["GeneticAlgorithmEmitter", "GeneticAlgorithmKernel"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GeneticAlgorithmKernel(VariationKernel):
    """The :class:`~ribsax.emitters.VariationKernel` of
    :class:`GeneticAlgorithmEmitter`: any variation ``operator(key, parents,
    *params)`` (an operator's :attr:`kernel`) of ``parent_type`` 1 or 2
    (``init_args``: the operator's ``params``; ``x0``, ``lower_bounds``,
    ``upper_bounds``)."""


class GeneticAlgorithmEmitter(VariationEmitter):
    """Emits solutions by applying an operator to elites sampled from the archive.

    The operator is named by ``operator`` (``"gaussian"`` for
    :class:`~ribsax.emitters.operators.GaussianOperator`, ``"isoline"`` for
    :class:`~ribsax.emitters.operators.IsoLineOperator`) and built with
    ``operator_kwargs`` plus ``seed``. Operators of ``parent_type`` 1 receive
    ``batch_size`` parents, those of type 2 receive ``2 * batch_size`` parents as a
    ``(2, batch_size, *solution_dim)`` array. Results are clipped to the bounds.
    While the archive is empty, ``initial_solutions`` (clipped) are returned if given;
    otherwise every parent is ``x0``.

    The operator's pure kernel runs inside this emitter's jitted ``ask`` (a
    :class:`GeneticAlgorithmKernel` run by :class:`~ribsax.emitters.JaxEmitter`)
    with the emitter's PRNG key. Unlike pyribs, multi-dimensional solutions keep their shape
    through the operator (pyribs flattens them for the isoline operator).

    Args:
        archive: Archive to sample parents from.
        operator: Operator name.
        operator_kwargs: Keyword arguments of the operator (e.g. ``{"sigma": 0.1}``).
        x0: Parent used while the archive is empty.
        initial_solutions: ``(n, *solution_dim)`` solutions returned while the
            archive is empty.
        bounds: None, or per-dimension ``(lower, upper)`` pairs (1D solutions).
        lower_bounds: Alternative to ``bounds``: array of the solution shape.
        upper_bounds: Alternative to ``bounds``: array of the solution shape.
        batch_size: Number of solutions per :meth:`ask`.
        seed: None, an int or a :class:`numpy.random.SeedSequence`.

    Raises:
        ValueError: Invalid x0/initial_solutions, bounds, or operator name.
    """

    def __init__(
        self,
        archive,
        *,
        operator,
        operator_kwargs=None,
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
        self._check_x0(x0, initial_solutions)
        operator_class = _get_op(operator)
        self._operator = operator_class(
            **(operator_kwargs if operator_kwargs is not None else {}), seed=seed
        )
        if self._operator.parent_type not in (1, 2):
            raise ValueError(f"Unknown operator `parent_type` {self._operator.parent_type}")
        dtype = archive.dtypes["solution"]
        params = tuple(np.asarray(p, dtype=dtype) for p in self._operator.params)
        self._setup(
            partial(
                GeneticAlgorithmKernel,
                operator=type(self._operator).kernel,
                parent_type=int(self._operator.parent_type),
            ),
            params,
        )

    @property
    def operator(self):
        """The variation operator instance."""
        return self._operator
