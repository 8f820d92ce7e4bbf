"""ArchiveBase: the abstract interface every ribsax archive implements."""

from __future__ import annotations

from abc import ABC

import numpy as np

from ribsax.runtime import apply_defaults

__all__ = ["ArchiveBase"]


def _not_implemented(name):
    return NotImplementedError(f"`{name}` has not been implemented in this archive")


class ArchiveBase(ABC):
    """Base class for archives, with pyribs' interface.

    Concrete archives override the properties and methods below; the defaults raise
    :class:`NotImplementedError`.

    Args:
        solution_dim: Int or tuple; the shape of one solution.
        objective_dim: ``()`` for single-objective archives (the only kind so far).
        measure_dim: Dimensionality of the measure space.
    """

    def __init__(self, *, solution_dim, objective_dim, measure_dim):
        apply_defaults()
        if isinstance(solution_dim, (list, tuple)):
            self._solution_dim = tuple(int(s) for s in solution_dim)
        else:
            self._solution_dim = (
                int(solution_dim) if isinstance(solution_dim, (int, np.integer)) else solution_dim
            )
        self._objective_dim = objective_dim
        self._measure_dim = int(measure_dim)

    @property
    def solution_dim(self):
        """Shape of one solution (int, or tuple for multi-dimensional solutions)."""
        return self._solution_dim

    @property
    def objective_dim(self):
        """``()`` for single-objective archives."""
        return self._objective_dim

    @property
    def measure_dim(self) -> int:
        """Dimensionality of the measure space."""
        return self._measure_dim

    @property
    def field_list(self):
        """Names of the stored fields, ``index`` last."""
        raise _not_implemented("field_list")

    @property
    def dtypes(self):
        """``{field: dtype}``, including ``"index": np.int32``."""
        raise _not_implemented("dtypes")

    @property
    def stats(self):
        """:class:`ArchiveStats` of the archive."""
        raise _not_implemented("stats")

    @property
    def empty(self):
        """Whether the archive holds no elite."""
        raise _not_implemented("empty")

    def __len__(self):
        raise _not_implemented("__len__")

    def __iter__(self):
        raise _not_implemented("__iter__")

    def add(self, solution, objective, measures, **fields):
        """Inserts a batch of solutions; returns an add-info dict."""
        raise _not_implemented("add")

    def add_single(self, solution, objective, measures, **fields):
        """Inserts one solution; returns an add-info dict of scalars."""
        raise _not_implemented("add_single")

    def clear(self):
        """Removes every elite."""
        raise _not_implemented("clear")

    def retrieve(self, measures):
        """Returns ``(occupied, data)`` for the cells of a batch of measures."""
        raise _not_implemented("retrieve")

    def retrieve_single(self, measures):
        """Single-measure version of :meth:`retrieve`."""
        raise _not_implemented("retrieve_single")

    def data(self, fields=None, return_type=None):
        """Returns the archive's contents."""
        raise _not_implemented("data")

    def sample_elites(self, n, replace=True):
        """Samples ``n`` elites uniformly."""
        raise _not_implemented("sample_elites")
