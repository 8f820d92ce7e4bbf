"""Variation operators used by :class:`ribsax.emitters.GeneticAlgorithmEmitter`.

.. autosummary::

    ribsax.emitters.operators.GaussianOperator
    ribsax.emitters.operators.IsoLineOperator
    ribsax.emitters.operators.OperatorBase

The pure kernels behind them are in :mod:`ribsax.emitters.operators._kernels`
(``gaussian_variation``, ``iso_line_variation``).
"""

from ribsax.emitters.operators._gaussian import GaussianOperator
from ribsax.emitters.operators._iso_line import IsoLineOperator

# The pure kernels are re-exported for direct use (see the module docstring);
# __all__ lists the operator classes, as pyribs' module does.
from ribsax.emitters.operators._kernels import gaussian_variation, iso_line_variation  # noqa: F401
from ribsax.emitters.operators._operator_base import OperatorBase

__all__ = [
    "OperatorBase",
    "GaussianOperator",
    "IsoLineOperator",
]

_NAME_TO_OP_MAP = {
    "gaussian": GaussianOperator,
    "isoline": IsoLineOperator,
}


def _get_op(operator):
    """Maps an operator name to its class.

    Args:
        operator: ``"gaussian"`` or ``"isoline"``.

    Returns:
        The operator class.

    Raises:
        ValueError: Unknown name, or ``operator`` is not a string.
    """
    if isinstance(operator, str):
        if operator in _NAME_TO_OP_MAP:
            return _NAME_TO_OP_MAP[operator]
        raise ValueError(f"`{operator}` is not the full or abbreviated name of a valid operator")
    raise ValueError(f"`{operator}` is not a string")
