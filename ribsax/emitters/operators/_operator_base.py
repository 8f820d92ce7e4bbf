"""OperatorBase: the interface of variation operators used by emitters."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["OperatorBase"]


class OperatorBase(ABC):
    """Base class for operators that turn parent solutions into new solutions.

    Subclasses implement :meth:`ask`. The built-in operators also expose their pure
    kernel (``kernel(key, parents, *params) -> solutions``) and its parameters
    (:attr:`params`), which emitters such as
    :class:`ribsax.emitters.GeneticAlgorithmEmitter` call inside their own jitted
    kernels.
    """

    @abstractmethod
    def ask(self, parents):
        """Creates solutions from ``parents``.

        Args:
            parents: Array of parent solutions; its layout depends on the operator's
                ``parent_type``.

        Returns:
            NumPy array of new solutions.
        """
